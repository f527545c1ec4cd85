// Package edgeconfig holds the runtime configuration an edge proxy
// applies to an edge, or to one route of an HTTPS edge: the data plane's
// view of the resources of package [github.com/edgeplane/edgeplane/edges].
//
// # Configs
//
// An edge proxy gets everything it applies to an edge from one Service
// call ([github.com/edgeplane/edgeplane/hosting.DataPlaneHost.HTTPSEdgeConfig],
// [github.com/edgeplane/edgeplane/hosting.DataPlaneHost.HTTPSRouteConfig],
// [github.com/edgeplane/edgeplane/hosting.DataPlaneHost.TLSEdgeConfig],
// [github.com/edgeplane/edgeplane/hosting.DataPlaneHost.TCPEdgeConfig]), as a value of this
// package: [HTTPSEdge] with its
// [Route] values, [TLSEdge] or [TCPEdge]. A config holds only the modules
// that are set and enabled, typed: durations as time.Duration, TLS
// versions as crypto/tls constants ([TLSVersion]), the OIDC cookie prefix
// resolved ([OIDC.CookiePrefix]). A module that is not set, or is
// disabled, is nil ([Route.Compression]: false).
//
// The constructors ([NewRoute], [NewHTTPSEdge], [NewTLSEdge],
// [NewIPRestriction], and [NewOIDC], [NewBackend], [NewResponseHeaders]
// for single modules) are pure: they turn stored resources into configs.
// What needs the Service (the rules of the IP policies an IP restriction
// names, the compilation of a traffic policy by the Service's policy
// engine, an edge's hostports) is given to them or filled in by the
// Service afterwards.
//
// # Running a config
//
//   - [HTTPSEdge.Route] picks a request's route: exact_path routes first,
//     then path_prefix routes from the longest match, a plain string
//     prefix of the request path. It does not allocate.
//   - [IPRestriction.Allowed] answers whether a source address may
//     connect, from the policies' rules (deny wins; with any allow rule,
//     unmatched addresses are refused); a nil IPRestriction allows every
//     valid address.
//   - [ResponseHeaders.Apply] replaces the values the upstream sent for the
//     headers it adds, after removing those it removes.
//   - A traffic policy comes compiled and ready to run: a route's for HTTP
//     ([Route.TrafficPolicy]), a TLS edge's for connections
//     ([TLSEdge.TrafficPolicy]). A policy is compiled with its edge or
//     route ID as its scope, so reloading a config keeps the rate-limit
//     counts of that edge or route, while two routes with the same
//     rate-limit config count separately.
//
// # Reloading
//
// A config is a snapshot. A proxy that caches one rebuilds it when the
// edge or route changes, and when one of the IP policies it was built
// with changes ([Route.IPPolicyIDs], [TLSEdge.IPPolicyIDs],
// [TCPEdge.IPPolicyIDs]). Treat a config as read-only once built: it may
// be shared by every connection of its edge.
package edgeconfig

// EdgeRef names an edge of an account, as the Service's host operations
// list them for an edge proxy that loads every account's edges.
type EdgeRef struct {
	// AccountID owns the edge.
	AccountID string
	// ID identifies the edge.
	ID string
}
