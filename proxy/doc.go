// Package proxy is edgeplane's edge data plane as a library: what an edge
// proxy that serves every HTTPS edge of every account in a store needs.
//
// # Status
//
// This is the first step of the package. It holds [Configs], which keeps
// the runtime config of every HTTPS edge current by following the store's
// change feed. The HTTP handler (matching a request to its edge by
// hostport, then to a route, then running the route's pipeline), TLS
// termination, metrics and the `edgeplane proxy` command come in later
// steps; until then examples/edgeproxy is the pipeline.
//
// # Following the store
//
// [New] reads the feed's revision, lists every HTTPS edge of every
// account ([edgeplane.Host.ListHTTPSEdges]) and loads each one: its config
// compiled ([edgeplane.Host.HTTPSEdgeConfig]: routes, modules, traffic
// policies) and the online tunnels of the backends its routes use
// ([edgeplane.Host.BackendTunnels]). It then follows the feed from that
// revision, as etcd's watch and Kubernetes' informers do, in one
// goroutine that reads a page of changes at a time and rebuilds only what
// they affect:
//
//   - an HTTPS edge created or updated, or one of its routes created,
//     updated or deleted: that edge is compiled again; an edge deleted is
//     removed;
//   - an IP policy, or a rule of one: the edges whose routes' traffic
//     policies read its rules ([edges.HTTPSRouteConfig.IPPolicyIDs]) are
//     compiled again;
//   - a tunnel registered, renewed or unregistered in an account, or a
//     backend changed: the tunnel lists of the backends the account's
//     edges use are read again, and the edges that use them get a new
//     snapshot with the same compiled config (no traffic policy is
//     compiled again);
//   - any other change (credentials, API keys, domains, events...) costs
//     nothing.
//
// A rebuild keeps the routes' rate-limit counts: the Service's one policy
// engine compiles each route's policy with the route ID as its scope
// ([edgeplane.Host.HTTPSRouteConfig]), so the new policy counts on where
// the old one stopped.
//
// Before reading what a page of changes names, the follower waits until
// the Service's record cache has followed the feed as far
// ([edgeplane.Host.WaitRevision]), so it never reads a cached document
// older than a change that another process made.
//
// # Readers never wait
//
// [Configs.Edge] is two atomic loads and a map probe; it never allocates
// and never waits for a compile. A rebuild publishes a new immutable
// [Edge] when it is complete, and until then readers get the previous
// one. A request that holds an Edge keeps a consistent view for its whole
// life.
//
// # Failures
//
// When the store cannot be read (the feed, a listing or an edge's config),
// the last snapshots stay published, the work stays pending and is
// retried after a backoff of [MinBackoff] doubling up to [MaxBackoff];
// [Configs.Revision] does not move past a change whose work is not done.
// When the feed no longer holds the changes after the applied revision
// (a [*store.CompactedError]), every edge is listed and compiled again in
// the background while the old snapshots are served, and edges no longer
// listed are removed. An edge whose config cannot be built from what is
// stored (its traffic policy does not compile with this Service's policy
// engine: failed precondition) is not served (fail closed) and is logged,
// until a change to it.
//
// # Limits
//
// The number of edges is not bounded here: a proxy that serves a store
// serves every HTTPS edge in it, and leaving some out would answer their
// hostnames with 404s chosen by memory rather than by configuration. Its
// memory is one compiled [edges.HTTPSEdgeConfig] per edge (at most
// [edges.MaxRoutesPerEdge] routes, each with at most one compiled traffic
// policy of at most [edges.MaxTrafficPolicyBytes] of source) and, per
// backend an edge uses, at most [edgeplane.MaxBackendTunnels] tunnels;
// plus the dependency index (one entry per edge and IP policy or backend
// its routes use). Size the process by the store's edges. While it
// rebuilds, at most [Options.Parallelism] configs are being compiled and
// at most 256 compiled configs wait to be published besides the published
// ones (so a full reload does not double the memory), a page of at most
// 256 changes is read at a time, and the pending work is a set of edges
// and backends, bounded by the store's. Adding or removing
// edges copies the map of each of 64 shards that holds one of them:
// O(edges/64) per page of changes that create or delete edges.
package proxy
