// Package agentstate holds what agents hold online in an edgeplane
// Service (package agents and package backends have the models): the
// tunnel sessions tunnel servers open for them, the labeled tunnels
// they start in a session, the endpoints they bind in it, and the
// tunnels tunnel servers register with an authtoken. These are the
// runtime operations behind the Host's tunnel session, tunnel and
// endpoint methods ([State.OpenSession], [State.StartTunnel],
// [State.BindEndpoint], [State.RegisterTunnel] and the others), and the reads
// an edge proxy makes of them ([State.Endpoints], [State.BackendTunnels]).
//
// # Records
//
// A session record is a child of its credential; a labeled tunnel and
// an endpoint are children of their session, so that closing the
// session, reaping it, or deleting its credential removes them in the
// same atomic step. A session names the edge node that holds it
// (package internal/nodes) and has no lease of its own: it is online
// while its node's lease is. A registered tunnel is a child of its
// credential and has a lease of its own, renewed by its tunnel server
// ([State.RenewTunnel]) and reaped when it ends ([State.Reap]). An
// endpoint holds the store keys of its hostport, the keys edges hold,
// so that a hostport serves one edge or endpoint in the whole store;
// the members of an endpoint pool share theirs (# Endpoint pools).
//
// The kinds are the root package's API kinds: the root declares their
// identity and presentation and shows them through the API; their
// stored forms are this package's ([SessionForm], [TunnelForm],
// [EndpointForm]), so that the partial reads of a tunnel record that
// selecting tunnels makes sit next to the document they read.
//
// # Endpoint pools
//
// An endpoint bound with pooling enabled (the SDK's WithPoolingEnabled,
// [agents.EndpointParams].PoolingEnabled) is a member of the pool of its
// URL: every endpoint of the account bound with pooling enabled at that
// hostport. Each member stays an endpoint record of its own (its ID,
// session, credential and pooling_enabled), a child of its session as
// any endpoint; the pool is no record: it is its members, found by the
// secondary index endpoint_pool, whose value is the store key that
// names the pool's address (the hostport's key, for tcp the port's),
// so that key names the pool, not one endpoint. A member holds no
// hostport key of its own: it takes the keys when it is written (the
// store then says atomically that no edge and no endpoint without
// pooling holds the hostport; a tcp endpoint without an address gets
// its free port that way), then gives them back and enters the index
// in one update. A bind that meets a member holding the keys for that
// instant joins the pool without them. Once indexed, the member checks
// the pool: a member of another account, another hostport on its port,
// another protocol or TLS passthrough, or another traffic policy (the
// proxy applies one policy to the pool's connections; the original
// lets members differ) makes the bind refused and the record removed,
// so that two binds racing each other are both refused rather than both
// served. A bind without pooling is checked against the index before
// it is written and after (it holds the keys by then): a pool at its
// hostport refuses it. The refusals are Conflict (ERR_SERVICE_102),
// with the words of the original's ERR_NGROK_334: "the endpoint '<url>'
// is already online without pooling. Either 1. stop your existing
// endpoint first, or 2. start both endpoints with pooling enabled to
// load balance between them", and its reverse for a pool. A pool ends
// with its last member; a rebind of a member (after a reconnect) binds
// it again under its ID as any endpoint's. [State.Endpoint] and
// [State.PresentPool] fill an endpoint's Pool (its URL and members) for
// the API. An edge written on a pool's hostport (or a TCP edge on its
// port) is refused as on any hostport in use: the Service's store is
// wrapped by [GuardEdges], which checks the index before an edge's
// write and after its create. A tcp endpoint without an address skips
// the ports pools serve as it skips those endpoints hold (a pool that
// forms on its port while it binds still refuses it).
//
// # Internal endpoints
//
// An endpoint bound with the binding internal ([agents.BindingInternal])
// is an http or https endpoint whose name ends in .internal
// (api.internal, or http://api.internal:8080: any port, part of the
// name). No listener serves it: only the forward-internal action of a
// traffic policy of the same account reaches it (package proxy). Its
// name needs no reserved domain and is the account's own: its store key
// holds the account, so two accounts may each bind api.internal, and
// within the account one endpoint holds a name (a second bind is a
// conflict), unless they are bound with pooling enabled: then they form
// the account's pool of that name, indexed by the same key, with the
// rules of any pool. The credential's ACL must permit the name as for any
// domain (bind:api.internal, bind:*.svc.internal, or an ACL that
// permits everything). A public endpoint never has an internal name.
//
// # Names the server picks
//
// A public http or https endpoint that names no domain is given
// <label>.<base> when its tunnel server has a base domain
// ([agents.EndpointParams.DomainBase], the -agent-domain-base flag); the
// label is 16 lower-case base32 characters of a hash of the endpoint's
// ID, so the agent's rebinds under that ID (after a reconnect, or once
// the record was reaped) get the same name, and no agent can choose
// one. Without a base the bind is refused, saying that a domain is
// needed. The base is the service's, not an account's: no account holds
// it as a reserved domain, and these names are not checked against
// reserved domains (its wildcard DNS record and certificate are the
// operator's). The credential's ACL must permit the name
// (bind:*.<base>, or an ACL that permits everything), as a port the
// server picks needs one that permits everything. The names' store
// keys are the hostport keys edges share, so a name serves one endpoint
// in the whole store. A bind that names a domain under the base is
// refused (PermissionDenied), unless it is the endpoint's own name asked
// for again: the names are the server's to give, so no agent takes
// another's, not even through an account that reserved the base.
//
// # Credentials' ACLs
//
// An ACL that narrows applies to what agents hold already, not only to
// their next binds: when a credential's ACL changes, every tunnel and
// endpoint that an agent session of the credential holds and that the
// new ACL does not allow is removed, reported as deleted
// ([State.UnbindDisallowed]), and the tunnel server that holds the
// session, following the change feed, stops it at the agent. A tunnel
// an agent starts in the instant between the ACL's update and this
// check may stay until the agent binds again; the next update of the
// ACL removes it. A deactivated bot's credentials are refused from its
// deactivation on, and their agents' sessions are closed
// ([State.CloseSessionsOfOwner]).
//
// # Imports
//
// It is internal to the module. What it needs of the root package
// (authentication of authtokens, IP restrictions, traffic policies,
// reserved domains, the hostport keys edges share with endpoints and
// their conflicts, presentation) it reads through the [Records] the root
// gives [New]. It imports the store contract, the record machinery
// (internal/records, internal/ids), internal/nodes, the leaves agents,
// apierr, backends, credentials, domains, events, identity and
// resource, and package policy only for the target a traffic policy is
// compiled for; never the root package.
package agentstate
