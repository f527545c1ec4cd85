// Package nodes holds the edge nodes of an edgeplane Service (package
// agents has the model): each tunnel server of the store registers
// itself as a node ([Registry.Register]) and renews one lease for every
// session it holds ([Registry.Renew]): liveness costs a store write per
// node per renewal, whatever the number of sessions, tunnels and
// endpoints. Sessions, and the agent tunnels and endpoints under them,
// name their node and have no lease of their own. A node whose lease
// ends is reaped ([Registry.Reap]) with its sessions, each removal
// reported as a tunnel_session_deleted event (and the tunnels' and
// endpoints' with them). A node that shuts down removes itself and its
// sessions at once ([Registry.Remove]). Every node derives the same key
// from the store's sealing key ([Registry.Key]), with which nodes
// authenticate each other on the hop between them (package hop).
//
// Nodes are the Service's own records (the internal kind [kinds.Node],
// stored under the pseudo-account "node", indexed by the end of their
// lease): the API does not show them; the sessions and endpoints it
// shows carry their node's ID. The root package builds the [Registry],
// serves it as the Host's node operations, and gives it the identity of
// tunnel sessions (whose records carry the index [SessionIndex]), which
// it removes with their node.
//
// It imports the store contract, the record machinery
// (internal/records, internal/ids, internal/seal) and the leaves agents,
// apierr, events, kinds and resource; never the root package.
package nodes
