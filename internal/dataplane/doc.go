// Package dataplane compiles, for the edgeplane Service, the records the
// data plane enforces into their runtime forms: the configs an edge proxy
// applies to an edge or a route (package edgeconfig's values, with their
// traffic policies compiled by the Service's engine), the combined rules
// of IP policies ([ipaccess.Set]), and the enforcers of an account's IP
// restrictions ([ipaccess.Enforcer]) with the checks of them. The kinds
// it reads are those [kinds.DataPlaneRoleOf] gives a part: edges, routes,
// IP policies and their rules, IP restrictions. It is what the Host's
// data-plane reads (HTTPSEdgeConfig, HTTPSRouteConfig, TLSEdgeConfig,
// TCPEdgeConfig, EndpointRestrictions, IPRestrictions) and the Service's
// checks of IP restrictions (the API's, an agent's session) do.
//
// # Sharing and caching
//
// A [Compiler] builds the set of each IP policy once for as long as its
// rules stay the same, and gives that one set to every config that names
// the policy. The enforcers of an account's restrictions are kept in an
// [AccessCache] until one of its IP restrictions, IP policies or rules
// is written: by the Service (its store, wrapped by [Invalidating], drops
// them before the write returns) or by another process (the root's
// follower of the change feed drops them, see [AccessKind], and a read fence
// waits for it: package internal/fence). A check that cannot read the
// restrictions fails, and the traffic with it: restrictions fail closed.
//
// # Imports
//
// The Service's kinds (their identities, stored forms and errors) are
// the root package's: the root gives [New] those a Compiler reads, as
// [Kinds]. It is internal to the module and imports the store contract,
// the record machinery (internal/records, internal/ids, internal/fence),
// the policy engine and the leaves apierr, edgeconfig, edges, ipaccess
// and kinds; never the root package.
package dataplane
