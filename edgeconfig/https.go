package edgeconfig

import (
	"sort"
	"strings"

	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/policy"
)

// Route is what an edge proxy applies to the requests a route of an HTTPS
// edge matches.
type Route struct {
	// AccountID owns the edge.
	AccountID string
	// EdgeID and RouteID identify the route.
	EdgeID, RouteID string
	// MatchType and Match say which requests the route takes.
	MatchType, Match string
	// OIDC is nil unless the OIDC module is set and enabled.
	OIDC *OIDC
	// Backend is nil unless the backend module is set and enabled.
	Backend *Backend
	// ResponseHeaders is nil unless the module is set and enabled.
	ResponseHeaders *ResponseHeaders
	// Compression is true when the compression module is set and enabled.
	Compression bool
	// TrafficPolicy is the route's traffic policy compiled for HTTP, nil
	// unless the module is set and enabled. Run it on each request with
	// [policy.Policy.Inbound] (and [policy.Policy.Outbound] on the
	// upstream's response), or wrap a handler with [policy.Policy.Handler].
	// [NewRoute] leaves it nil: compiling needs the Service's policy
	// engine, and the Service's configs fill it.
	TrafficPolicy *policy.Policy
	// IPPolicyIDs are the IP policies whose rules TrafficPolicy was
	// compiled with (named by its restrict-ips actions),
	// sorted and without repeats; empty when TrafficPolicy is nil. A proxy
	// that caches the config rebuilds it when one of them, or one of their
	// rules, changes. [NewRoute] leaves it nil, as it leaves
	// TrafficPolicy.
	IPPolicyIDs []string
}

// NewRoute returns the runtime form of a stored route.
func NewRoute(accountID string, r *edges.HTTPSRoute) *Route {
	return &Route{
		AccountID:       accountID,
		EdgeID:          r.EdgeID,
		RouteID:         r.ID,
		MatchType:       r.MatchType,
		Match:           r.Match,
		OIDC:            NewOIDC(r.OIDC),
		Backend:         NewBackend(r.Backend),
		ResponseHeaders: NewResponseHeaders(r.ResponseHeaders),
		Compression:     r.Compression != nil && r.Compression.Enabled,
	}
}

// Matches reports whether the route takes a request for path: equal to
// Match for exact_path, starting with Match for path_prefix (a plain
// string prefix: /api matches /api, /api/v1 and /apis).
func (c *Route) Matches(path string) bool {
	if c.MatchType == edges.MatchExactPath {
		return path == c.Match
	}
	return strings.HasPrefix(path, c.Match)
}

// HTTPSEdge is what an edge proxy applies to an HTTPS edge: its routes, in
// the order they are tried.
type HTTPSEdge struct {
	// AccountID owns the edge.
	AccountID string
	// EdgeID identifies the edge.
	EdgeID string
	// Hostports are the host:port addresses the edge serves, in canonical
	// form ([edges.ParseHostport]); an edge proxy routes a request to the
	// edge by the hostport it was addressed to. [NewHTTPSEdge] leaves it
	// nil; the Service's configs fill it.
	Hostports []string
	// Routes are tried in order: exact_path routes first, then path_prefix
	// routes from the longest match to the shortest (ties by route ID).
	// Treat it as read-only: [HTTPSEdge.Route] uses an index built from
	// it by [NewHTTPSEdge].
	Routes []*Route

	exact    map[string]*Route // exact_path routes by match
	prefixes []*Route          // path_prefix routes, longest first
}

// NewHTTPSEdge returns the runtime form of an edge and its routes, the
// routes sorted into matching order.
func NewHTTPSEdge(accountID, edgeID string, routes []*Route) *HTTPSEdge {
	rs := append([]*Route{}, routes...)
	sort.SliceStable(rs, func(i, j int) bool {
		a, b := rs[i], rs[j]
		if (a.MatchType == edges.MatchExactPath) != (b.MatchType == edges.MatchExactPath) {
			return a.MatchType == edges.MatchExactPath
		}
		if len(a.Match) != len(b.Match) {
			return len(a.Match) > len(b.Match)
		}
		return a.RouteID < b.RouteID
	})
	c := &HTTPSEdge{AccountID: accountID, EdgeID: edgeID, Routes: rs, exact: map[string]*Route{}}
	for _, r := range rs {
		if r.MatchType == edges.MatchExactPath {
			if _, dup := c.exact[r.Match]; !dup {
				c.exact[r.Match] = r
			}
			continue
		}
		c.prefixes = append(c.prefixes, r)
	}
	return c
}

// Route returns the route that takes a request for path (the first that
// [Route.Matches] it, in [HTTPSEdge.Routes] order), or nil when none
// does.
// A lookup is one map probe and a scan of the prefix routes; it does not
// allocate.
func (c *HTTPSEdge) Route(path string) *Route {
	if c.exact == nil { // built by hand, not by NewHTTPSEdge
		for _, r := range c.Routes {
			if r.Matches(path) {
				return r
			}
		}
		return nil
	}
	if r, ok := c.exact[path]; ok {
		return r
	}
	for _, r := range c.prefixes {
		if strings.HasPrefix(path, r.Match) {
			return r
		}
	}
	return nil
}
