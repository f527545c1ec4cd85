package proxy

import (
	"compress/gzip"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane/edges"
)

// TestRouteMatching: exact_path beats path_prefix, the longest prefix
// wins, and a path no route takes is 404. Each route's response headers
// module names it.
func TestRouteMatching(t *testing.T) {
	s, a, up := standalone(t, "", siteOptions{})
	routes := map[string]string{a.route: "root"}
	for _, r := range []struct{ name, typ, match string }{
		{"exact", edges.MatchExactPath, "/api/v1/status"},
		{"api", edges.MatchPathPrefix, "/api"},
		{"v1", edges.MatchPathPrefix, "/api/v1"},
	} {
		rt, err := s.svc.CreateHTTPSEdgeRoute(s.ctx, a.p, a.edge, edges.CreateRouteParams{MatchType: r.typ, Match: r.match})
		s.check(err)
		_, err = s.svc.ReplaceHTTPSRouteBackend(s.ctx, a.p, a.edge, rt.ID, edges.BackendParams{BackendID: a.backend})
		s.check(err)
		routes[rt.ID] = r.name
	}
	for id, name := range routes {
		_, err := s.svc.ReplaceHTTPSRouteResponseHeaders(s.ctx, a.p, a.edge, id, edges.ResponseHeadersParams{Add: map[string]string{"x-route": name}})
		s.check(err)
	}
	s.sync()
	for _, tc := range []struct{ path, route string }{
		{"/api/v1/status", "exact"},
		{"/api/v1/status/x", "v1"},
		{"/api/v1/statusx", "v1"},
		{"/api/v1", "v1"},
		{"/api/v", "api"},
		{"/apis", "api"}, // a plain string prefix
		{"/api", "api"},
		{"/", "root"},
		{"/other", "root"},
	} {
		res := a.get(tc.path)
		if got := res.header.Get("X-Route"); res.status != 200 || got != tc.route {
			t.Errorf("GET %s: %d route %q, want 200 route %q", tc.path, res.status, got, tc.route)
		}
		if got := up.last(t).Path; got != tc.path {
			t.Errorf("GET %s: upstream saw %s", tc.path, got)
		}
	}

	s.check(s.svc.DeleteHTTPSEdgeRoute(s.ctx, a.p, a.edge, a.route))
	s.sync()
	if res := a.get("/other"); res.status != 404 || res.body != "no route of this edge matches the path\n" {
		t.Errorf("no route: %d %q, want 404", res.status, res.body)
	}
	if got := s.metric("edgeplane_proxy_requests_total", "edge="+a.edge, "code=4xx"); got != 1 {
		t.Errorf("requests_total{route=\"\",code=\"4xx\"} = %v, want 1", got)
	}
	if res := a.get("/api/x"); res.status != 200 || res.header.Get("X-Route") != "api" {
		t.Errorf("after the delete: %d %q", res.status, res.header.Get("X-Route"))
	}
}

// TestBackendModule: the upstream is a tunnel of the route's backend and
// sees the request's Host and X-Forwarded-*; several tunnels share the
// traffic; a tunnel that goes offline gets none; a failing upstream is
// 502, no tunnel or no backend module 503, with bodies that name no
// internals; upstream failures are counted.
func TestBackendModule(t *testing.T) {
	s, a, up := standalone(t, "", siteOptions{})

	res := a.get("/hello?x=1")
	if res.status != 200 || res.body != "upstream a /hello" {
		t.Fatalf("through the tunnel: %d %q", res.status, res.body)
	}
	got := up.last(t)
	if got.RawQuery != "x=1" || got.Host != "app.example.com:443" || got.Header.Get("X-Forwarded-For") != "127.0.0.1" ||
		got.Header.Get("X-Forwarded-Host") != "app.example.com:443" || got.Header.Get("X-Forwarded-Proto") != "http" {
		t.Errorf("upstream saw %+v", got)
	}

	// A second tunnel of the backend, forwarding elsewhere: round-robin.
	b := newUpstream(t, "b")
	_, credB := a.tunnel(b.URL)
	s.sync()
	seenBy := map[string]int{}
	for range 6 {
		seenBy[a.get("/rr").header.Get("X-Upstream")]++
	}
	if seenBy["a"] != 3 || seenBy["b"] != 3 {
		t.Errorf("round-robin over two tunnels: %v", seenBy)
	}

	// The second tunnel goes offline (its credential is deleted); its
	// upstream is never asked again.
	s.check(s.svc.DeleteCredential(s.ctx, a.p, credB))
	s.sync()
	before := len(b.requests())
	for range 3 {
		if res := a.get("/rr"); res.header.Get("X-Upstream") != "a" {
			t.Errorf("after the tunnel went offline: %d from %q", res.status, res.header.Get("X-Upstream"))
		}
	}
	if len(b.requests()) != before {
		t.Error("an offline tunnel's upstream got traffic")
	}

	// Only a tunnel whose upstream is down: 502.
	tnA, err := s.svc.GetTunnel(s.ctx, a.p, s.edgeTunnel(a))
	s.check(err)
	s.check(s.svc.DeleteCredential(s.ctx, a.p, tnA.Credential.ID))
	down := refusedURL(t)
	downTunnel, credDown := a.tunnel(down)
	s.sync()
	res = a.get("/down")
	if res.status != 502 {
		t.Errorf("upstream down: %d %q, want 502", res.status, res.body)
	}
	noInternals(t, res.body, down, downTunnel, a.backend, a.edge, a.route, "refused", "dial")
	if got := s.metric("edgeplane_proxy_upstream_errors_total", "edge="+a.edge, "route="+a.route); got != 1 {
		t.Errorf("upstream errors %v, want 1", got)
	}
	if !strings.Contains(s.logs.String(), "upstream error") || !strings.Contains(s.logs.String(), "tunnel="+downTunnel) {
		t.Errorf("the failure is not logged with its tunnel:\n%s", s.logs)
	}

	// No online tunnel: 503.
	s.check(s.svc.DeleteCredential(s.ctx, a.p, credDown))
	s.sync()
	if res := a.get("/none"); res.status != 503 || res.body != "no online tunnel serves this route\n" {
		t.Errorf("no tunnel: %d %q, want 503", res.status, res.body)
	}
	// No backend module: 503.
	s.check(s.svc.DeleteHTTPSRouteBackend(s.ctx, a.p, a.edge, a.route))
	s.sync()
	if res := a.get("/none"); res.status != 503 || res.body != "this route has no backend\n" {
		t.Errorf("no backend module: %d %q, want 503", res.status, res.body)
	}
	// 503s are the proxy's answers, not upstream failures.
	if got := s.metric("edgeplane_proxy_upstream_errors_total", "edge="+a.edge, "route="+a.route); got != 1 {
		t.Errorf("upstream errors %v, want still 1", got)
	}
	if got := s.metric("edgeplane_proxy_requests_total", "edge="+a.edge, "route="+a.route, "code=5xx"); got != 3 {
		t.Errorf("requests_total{code=\"5xx\"} = %v, want 3", got)
	}
}

// noInternals fails the test if body names any of the internals.
func noInternals(t *testing.T, body string, internals ...string) {
	t.Helper()
	for _, s := range internals {
		if s != "" && strings.Contains(strings.ToLower(body), strings.ToLower(strings.TrimPrefix(s, "http://"))) {
			t.Errorf("body %q names %q", body, s)
		}
	}
}

// TestResponseHeadersModule: the module applies from the next request
// after its change: it removes headers, and sets the ones it adds,
// replacing the upstream's values; disabled or deleted it no longer
// does.
func TestResponseHeadersModule(t *testing.T) {
	s, a, _ := standalone(t, "", siteOptions{})
	if res := a.get("/"); res.header.Get("X-Secret") != "s3cret" || res.header.Get("X-Frame-Options") != "" {
		t.Fatalf("before: %v", res.header)
	}
	set := func(p edges.ResponseHeadersParams) {
		t.Helper()
		_, err := s.svc.ReplaceHTTPSRouteResponseHeaders(s.ctx, a.p, a.edge, a.route, p)
		s.check(err)
		s.sync()
	}
	set(edges.ResponseHeadersParams{Add: map[string]string{"X-Frame-Options": "DENY", "x-upstream": "hidden"}, Remove: []string{"x-secret"}})
	res := a.get("/")
	if res.header.Get("X-Frame-Options") != "DENY" || !slices.Equal(res.header.Values("X-Upstream"), []string{"hidden"}) {
		t.Errorf("added: %v", res.header)
	}
	if _, ok := res.header["X-Secret"]; ok {
		t.Errorf("removed header still there: %v", res.header)
	}

	off := false
	set(edges.ResponseHeadersParams{Enabled: &off, Add: map[string]string{"x-frame-options": "DENY"}})
	if res := a.get("/"); res.header.Get("X-Frame-Options") != "" || res.header.Get("X-Secret") != "s3cret" {
		t.Errorf("disabled module still applies: %v", res.header)
	}
	set(edges.ResponseHeadersParams{Add: map[string]string{"x-frame-options": "DENY"}})
	if res := a.get("/"); res.header.Get("X-Frame-Options") != "DENY" {
		t.Errorf("enabled again: %v", res.header)
	}
	s.check(s.svc.DeleteHTTPSRouteResponseHeaders(s.ctx, a.p, a.edge, a.route))
	s.sync()
	if res := a.get("/"); res.header.Get("X-Frame-Options") != "" {
		t.Errorf("deleted module still applies: %v", res.header)
	}
}

// TestCompressionModule: gzip when the client accepts it and the content
// is compressible; identity otherwise.
func TestCompressionModule(t *testing.T) {
	s, a, up := standalone(t, "", siteOptions{})
	plain := a.get("/text").body
	if res := a.get("/text", "Accept-Encoding: gzip"); res.header.Get("Content-Encoding") != "" {
		t.Fatalf("compressed without the module: %v", res.header)
	}
	set := func(enabled bool) {
		t.Helper()
		_, err := s.svc.ReplaceHTTPSRouteCompression(s.ctx, a.p, a.edge, a.route, edges.CompressionParams{Enabled: &enabled})
		s.check(err)
		s.sync()
	}
	set(true)

	res := a.get("/text", "Accept-Encoding: gzip, deflate, br")
	if res.header.Get("Content-Encoding") != "gzip" || res.header.Get("Vary") != "Accept-Encoding" || res.header.Get("Content-Length") != "" {
		t.Fatalf("headers of a compressed response: %v", res.header)
	}
	zr, err := gzip.NewReader(strings.NewReader(res.body))
	if err != nil {
		t.Fatal(err)
	}
	unzipped, err := io.ReadAll(zr)
	if err != nil || string(unzipped) != plain {
		t.Fatalf("gunzipped body (%v): %d bytes, want the %d of the upstream", err, len(unzipped), len(plain))
	}
	if len(res.body) >= len(plain)/4 {
		t.Errorf("compressed %d bytes to %d", len(plain), len(res.body))
	}
	if got := up.last(t).Header.Get("Accept-Encoding"); got != "" {
		t.Errorf("the upstream was asked for %q; the proxy compresses itself", got)
	}

	for _, tc := range []struct {
		name, method, path string
		header             []string
		vary               bool
	}{
		{"not accepted", "GET", "/text", nil, true},
		{"refused with q=0", "GET", "/text", []string{"Accept-Encoding: gzip;q=0, *"}, true},
		{"an image", "GET", "/png", []string{"Accept-Encoding: gzip"}, false},
		{"a tiny body", "GET", "/small", []string{"Accept-Encoding: gzip"}, false},
		{"no body", "GET", "/status/204", []string{"Accept-Encoding: gzip"}, false},
		{"HEAD", "HEAD", "/text", []string{"Accept-Encoding: gzip"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := s.do(nil, a.host, tc.method, tc.path, tc.header...)
			if res.header.Get("Content-Encoding") != "" {
				t.Errorf("compressed: %v", res.header)
			}
			if got := res.header.Get("Vary") == "Accept-Encoding"; got != tc.vary {
				t.Errorf("Vary %q", res.header.Get("Vary"))
			}
			if tc.method == "GET" && tc.path == "/text" && res.body != plain {
				t.Error("body changed")
			}
		})
	}

	set(false)
	if res := a.get("/text", "Accept-Encoding: gzip"); res.header.Get("Content-Encoding") != "" {
		t.Errorf("disabled module compresses: %v", res.header)
	}
}

// TestTrafficPolicyModule: a route's traffic policy applies from the
// next request after its change; disabled or deleted, it no longer does.
func TestTrafficPolicyModule(t *testing.T) {
	s, a, _ := standalone(t, "", siteOptions{})
	deny := `{"inbound":[{"expressions":["req.url.path == '/private'"],"actions":[{"type":"deny","config":{"status_code":401}}]}]}`
	if res := a.get("/private"); res.status != 200 {
		t.Fatalf("before: %d", res.status)
	}
	a.policy(deny)
	if res := a.get("/private"); res.status != 401 {
		t.Errorf("with the policy: %d, want 401", res.status)
	}
	if res := a.get("/public"); res.status != 200 {
		t.Errorf("with the policy, another path: %d, want 200", res.status)
	}
	off := false
	_, err := s.svc.ReplaceHTTPSRouteTrafficPolicy(s.ctx, a.p, a.edge, a.route, edges.TrafficPolicyParams{Value: deny, Enabled: &off})
	s.check(err)
	s.sync()
	if res := a.get("/private"); res.status != 200 {
		t.Errorf("disabled: %d, want 200", res.status)
	}
	a.policy(deny)
	s.check(s.svc.DeleteHTTPSRouteTrafficPolicy(s.ctx, a.p, a.edge, a.route))
	s.sync()
	if res := a.get("/private"); res.status != 200 {
		t.Errorf("deleted: %d, want 200", res.status)
	}
}

// TestPipelineOrder: inbound rules, then the upstream, then outbound
// rules, then the response headers module, then compression. The
// outbound rules see the upstream's headers before the module removes
// them, and the module's values replace what the rules added. Responses
// the inbound rules make do not go through the route's modules.
func TestPipelineOrder(t *testing.T) {
	s, a, up := standalone(t, `{
		"inbound": [
			{"actions": [{"type": "add-headers", "config": {"headers": {"x-step": "inbound"}}}]},
			{"expressions": ["req.url.path == '/blocked'"], "actions": [{"type": "custom-response", "config": {"status_code": 451, "body": "`+strings.Repeat("blocked ", 64)+`", "headers": {"content-type": "text/plain"}}}]}
		],
		"outbound": [
			{"expressions": ["hasResHeader('x-secret')"], "actions": [{"type": "add-headers", "config": {"headers": {"x-saw-secret": "yes", "x-order": "policy"}}}]}
		]}`, siteOptions{})
	_, err := s.svc.ReplaceHTTPSRouteResponseHeaders(s.ctx, a.p, a.edge, a.route, edges.ResponseHeadersParams{Add: map[string]string{"x-order": "module"}, Remove: []string{"x-secret"}})
	s.check(err)
	_, err = s.svc.ReplaceHTTPSRouteCompression(s.ctx, a.p, a.edge, a.route, edges.CompressionParams{})
	s.check(err)
	s.sync()

	res := a.get("/text", "Accept-Encoding: gzip")
	if got := up.last(t).Header.Get("X-Step"); got != "inbound" {
		t.Errorf("upstream X-Step %q", got)
	}
	if !slices.Equal(res.header.Values("X-Order"), []string{"module"}) || res.header.Get("X-Saw-Secret") != "yes" || res.header.Get("X-Secret") != "" {
		t.Errorf("outbound rules then the module: %v", res.header)
	}
	if res.header.Get("Content-Encoding") != "gzip" {
		t.Errorf("compression last: %v", res.header)
	}

	res = a.get("/blocked", "Accept-Encoding: gzip")
	if res.status != 451 || res.header.Get("Content-Encoding") != "" || res.header.Get("X-Order") != "" || !strings.HasPrefix(res.body, "blocked") {
		t.Errorf("inbound answer: %d %v", res.status, res.header)
	}
}

// TestOIDCModuleWithoutKey: a Handler without an OIDC key cannot apply
// the module, so a route that requires it is refused with 503 rather
// than served unauthenticated; the module runs before the traffic
// policy; disabled, the module no longer refuses. (The sign-in itself:
// TestOIDCThroughTheHandler.)
func TestOIDCModuleWithoutKey(t *testing.T) {
	s, a, up := standalone(t, "", siteOptions{})
	oidc := func(enabled bool) {
		t.Helper()
		_, err := s.svc.ReplaceHTTPSRouteOIDC(s.ctx, a.p, a.edge, a.route, edges.OIDCParams{Enabled: &enabled,
			Issuer: "https://accounts.example.com", ClientID: "id", ClientSecret: "secret"})
		s.check(err)
		s.sync()
	}
	oidc(true)
	if res := a.get("/"); res.status != 503 || len(up.requests()) != 0 {
		t.Errorf("OIDC route: %d %q, upstream reached %d times", res.status, res.body, len(up.requests()))
	}
	a.policy(`{"inbound":[{"expressions":["req.url.path == '/limited'"],"actions":[{"type":"deny","config":{"status_code":429}}]}]}`)
	if res := a.get("/limited"); res.status != 503 {
		t.Errorf("OIDC runs before the policy: %d", res.status)
	}
	oidc(false)
	if res := a.get("/"); res.status != 200 {
		t.Errorf("OIDC disabled: %d %q", res.status, res.body)
	}
	if res := a.get("/limited"); res.status != 429 {
		t.Errorf("the policy with OIDC disabled: %d", res.status)
	}
}
