package edgeconfig_test

import (
	"fmt"
	"net/http"

	"github.com/edgeplane/edgeplane/edgeconfig"
	"github.com/edgeplane/edgeplane/edges"
)

// What a proxy does with an enabled response headers module: remove,
// then set.
func ExampleResponseHeaders_Apply() {
	p := edges.ResponseHeadersParams{
		Add:    map[string]string{"X-Frame-Options": "DENY"},
		Remove: []string{"Server"},
	}
	if err := p.Validate(); err != nil {
		panic(err)
	}
	h := http.Header{"Server": {"nginx"}, "X-Frame-Options": {"SAMEORIGIN"}}
	m := p.Module()
	edgeconfig.NewResponseHeaders(&m).Apply(h)
	fmt.Println(h)
	// Output:
	// map[X-Frame-Options:[DENY]]
}

// An HTTPS edge's routes are tried exact paths first, then the longest
// path prefix.
func ExampleHTTPSEdge_Route() {
	routes := []*edgeconfig.Route{}
	for _, r := range []edges.HTTPSRoute{
		{ID: "site", MatchType: edges.MatchPathPrefix, Match: "/"},
		{ID: "api", MatchType: edges.MatchPathPrefix, Match: "/api/"},
		{ID: "health", MatchType: edges.MatchExactPath, Match: "/api/health"},
	} {
		routes = append(routes, edgeconfig.NewRoute("acct", &r))
	}
	cfg := edgeconfig.NewHTTPSEdge("acct", "edghts_x", routes)
	for _, path := range []string{"/", "/api/users", "/api/health", "/api/health/deep"} {
		fmt.Println(path, "->", cfg.Route(path).RouteID)
	}
	// Output:
	// / -> site
	// /api/users -> api
	// /api/health -> health
	// /api/health/deep -> api
}
