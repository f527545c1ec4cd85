package edgeconfig_test

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/edgeplane/edgeplane/edgeconfig"
	"github.com/edgeplane/edgeplane/edges"
)

// BenchmarkHTTPSEdgeRoute picks the route of a request on an edge with
// 100 exact and 100 prefix routes: once per request in a proxy.
func BenchmarkHTTPSEdgeRoute(b *testing.B) {
	var routes []*edgeconfig.Route
	for i := range 100 {
		n := strconv.Itoa(i)
		routes = append(routes,
			edgeconfig.NewRoute("a", &edges.HTTPSRoute{ID: "e" + n, MatchType: edges.MatchExactPath, Match: "/exact/" + n}),
			edgeconfig.NewRoute("a", &edges.HTTPSRoute{ID: "p" + n, MatchType: edges.MatchPathPrefix, Match: "/prefix/" + n + "/"}))
	}
	cfg := edgeconfig.NewHTTPSEdge("a", "e", routes)
	for _, bc := range []struct{ name, path string }{
		{"exact", "/exact/57"},
		{"prefix", "/prefix/57/items/9"},
		{"none", "/nothing/here"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r := cfg.Route(bc.path)
				if (r == nil) != (bc.name == "none") {
					b.Fatalf("Route(%s) = %v", bc.path, r)
				}
			}
		})
	}
}

// BenchmarkResponseHeadersApply edits a response's header: once per
// response of a route with the module.
func BenchmarkResponseHeadersApply(b *testing.B) {
	cfg := edgeconfig.NewResponseHeaders(&edges.ResponseHeaders{Enabled: true,
		Add:    map[string]string{"x-frame-options": "DENY", "strict-transport-security": "max-age=63072000"},
		Remove: []string{"server", "x-powered-by"},
	})
	b.ReportAllocs()
	for b.Loop() {
		h := http.Header{"Server": {"nginx"}, "Content-Type": {"text/html"}}
		cfg.Apply(h)
	}
}
