package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/credentials"
	"github.com/edgeplane/edgeplane/edges"
)

// TestRouteMatching: exact_path beats path_prefix, the longest prefix
// wins, and a path no route takes is 404. Each route's response headers
// module names it.
func TestRouteMatching(t *testing.T) {
	s := service(t)
	ctx := context.Background()
	routes := map[string]string{s.b.routeID: "root"}
	for _, r := range []struct{ name, typ, match string }{
		{"exact", edges.MatchExactPath, "/api/v1/status"},
		{"api", edges.MatchPathPrefix, "/api"},
		{"v1", edges.MatchPathPrefix, "/api/v1"},
	} {
		rt, err := s.svc.CreateHTTPSEdgeRoute(ctx, s.p, s.b.edgeID, edges.CreateRouteParams{MatchType: r.typ, Match: r.match})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.svc.ReplaceHTTPSRouteBackend(ctx, s.p, s.b.edgeID, rt.ID, edges.BackendParams{BackendID: s.b.backendID}); err != nil {
			t.Fatal(err)
		}
		routes[rt.ID] = r.name
	}
	for id, name := range routes {
		if _, err := s.svc.ReplaceHTTPSRouteResponseHeaders(ctx, s.p, s.b.edgeID, id, edges.ResponseHeadersParams{Add: map[string]string{"x-route": name}}); err != nil {
			t.Fatal(err)
		}
	}
	for path, want := range map[string]string{
		"/api/v1/status":   "exact",
		"/api/v1/status/x": "v1",
		"/api/v1/statusx":  "v1",
		"/api/v1":          "v1",
		"/api/v":           "api",
		"/apis":            "api", // a plain string prefix
		"/api":             "api",
		"/":                "root",
		"/other":           "root",
	} {
		res := s.get(path)
		if got := res.header.Get("X-Route"); res.status != 200 || got != want {
			t.Errorf("GET %s: %d route %q, want 200 route %q", path, res.status, got, want)
		}
		if got := s.up.last(t).Path; got != path {
			t.Errorf("GET %s: upstream saw %s", path, got)
		}
	}

	s.call("DELETE", "/edges/https/"+s.b.edgeID+"/routes/"+s.b.routeID, nil, 204)
	if res := s.get("/other"); res.status != 404 {
		t.Errorf("no route: %d %q, want 404", res.status, res.body)
	}
	if res := s.get("/api/x"); res.status != 200 || res.header.Get("X-Route") != "api" {
		t.Errorf("after the delete: %d %q", res.status, res.header.Get("X-Route"))
	}
}

// TestBackendModule: the upstream is a tunnel of the route's backend;
// several tunnels share the traffic; no tunnel or no backend module is
// 503, a failing upstream 502, both counted as upstream errors.
func TestBackendModule(t *testing.T) {
	s := service(t)
	ctx := context.Background()

	res := s.get("/hello?x=1")
	if res.status != 200 || res.body != "upstream a /hello" {
		t.Fatalf("through the tunnel: %d %q", res.status, res.body)
	}
	got := s.up.last(t)
	if got.RawQuery != "x=1" || got.Header.Get("X-Forwarded-For") != "127.0.0.1" ||
		got.Header.Get("X-Forwarded-Host") != strings.TrimPrefix(s.url, "http://") || got.Header.Get("X-Forwarded-Proto") != "http" {
		t.Errorf("upstream saw %+v", got)
	}

	// A second tunnel of the backend, forwarding elsewhere: round-robin.
	b := newUpstream(t, "b")
	cred, err := s.svc.CreateCredential(ctx, s.p, credentials.CreateParams{ACL: []string{"bind:app=web"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.svc.Host().RegisterTunnel(ctx, *cred.Token, backends.RegisterTunnelParams{Labels: map[string]string{"app": "web"}, ForwardsTo: b.URL}); err != nil {
		t.Fatal(err)
	}
	seenBy := map[string]int{}
	for range 6 {
		seenBy[s.get("/rr").header.Get("X-Upstream")]++
	}
	if seenBy["a"] != 3 || seenBy["b"] != 3 {
		t.Errorf("round-robin over two tunnels: %v", seenBy)
	}

	// The second tunnel goes offline (its credential is deleted); its
	// upstream is never asked again.
	s.call("DELETE", "/credentials/"+cred.ID, nil, 204)
	before := len(b.requests())
	for range 3 {
		if res := s.get("/rr"); res.header.Get("X-Upstream") != "a" {
			t.Errorf("after the tunnel went offline: %d from %q", res.status, res.header.Get("X-Upstream"))
		}
	}
	if len(b.requests()) != before {
		t.Error("an offline tunnel's upstream got traffic")
	}

	// A tunnel whose upstream is down: 502.
	down := httptest.NewServer(nil)
	down.Close()
	s.call("DELETE", "/credentials/"+mustTunnelCredential(t, s), nil, 204)
	cred2, err := s.svc.CreateCredential(ctx, s.p, credentials.CreateParams{ACL: []string{"bind:app=web"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.svc.Host().RegisterTunnel(ctx, *cred2.Token, backends.RegisterTunnelParams{Labels: map[string]string{"app": "web"}, ForwardsTo: down.URL}); err != nil {
		t.Fatal(err)
	}
	if res := s.get("/down"); res.status != 502 {
		t.Errorf("upstream down: %d %q, want 502", res.status, res.body)
	}
	if got := s.metric("edgeproxy_upstream_errors_total"); got != "1" {
		t.Errorf("upstream errors %s, want 1", got)
	}

	// No online tunnel: 503.
	s.call("DELETE", "/credentials/"+cred2.ID, nil, 204)
	if res := s.get("/none"); res.status != 503 || !strings.Contains(res.body, "no online tunnel") {
		t.Errorf("no tunnel: %d %q, want 503", res.status, res.body)
	}
	// No backend module: 503.
	s.call("DELETE", s.routePath("backend"), nil, 204)
	if res := s.get("/none"); res.status != 503 || !strings.Contains(res.body, "no backend") {
		t.Errorf("no backend module: %d %q, want 503", res.status, res.body)
	}
	if got := s.metric("edgeproxy_upstream_errors_total"); got != "3" {
		t.Errorf("upstream errors %s, want 3", got)
	}
}

// mustTunnelCredential returns the credential of the bootstrapped tunnel.
func mustTunnelCredential(t *testing.T, s *serviceEnv) string {
	t.Helper()
	tn, err := s.svc.GetTunnel(context.Background(), s.p, s.b.tunnelID)
	if err != nil {
		t.Fatal(err)
	}
	return tn.Credential.ID
}

// TestResponseHeadersModule: replaced through the API, the module applies
// to the next request: it removes headers, and sets the ones it adds,
// replacing the upstream's values.
func TestResponseHeadersModule(t *testing.T) {
	s := service(t)
	if res := s.get("/"); res.header.Get("X-Secret") != "s3cret" || res.header.Get("X-Frame-Options") != "" {
		t.Fatalf("before: %v", res.header)
	}
	s.call("PUT", s.routePath("response_headers"), map[string]any{
		"add":    map[string]string{"X-Frame-Options": "DENY", "x-upstream": "hidden"},
		"remove": []string{"x-secret"},
	}, 200)
	res := s.get("/")
	if res.header.Get("X-Frame-Options") != "DENY" || !slices.Equal(res.header.Values("X-Upstream"), []string{"hidden"}) {
		t.Errorf("added: %v", res.header)
	}
	if _, ok := res.header["X-Secret"]; ok {
		t.Errorf("removed header still there: %v", res.header)
	}

	s.call("PUT", s.routePath("response_headers"), map[string]any{"enabled": false, "add": map[string]string{"x-frame-options": "DENY"}}, 200)
	if res := s.get("/"); res.header.Get("X-Frame-Options") != "" || res.header.Get("X-Secret") != "s3cret" {
		t.Errorf("disabled module still applies: %v", res.header)
	}
	s.call("PUT", s.routePath("response_headers"), map[string]any{"add": map[string]string{"x-frame-options": "DENY"}}, 200)
	s.call("DELETE", s.routePath("response_headers"), nil, 204)
	if res := s.get("/"); res.header.Get("X-Frame-Options") != "" {
		t.Errorf("deleted module still applies: %v", res.header)
	}
}

// TestCompressionModule: gzip when the client accepts it and the content
// is compressible; identity otherwise.
func TestCompressionModule(t *testing.T) {
	s := service(t)
	plain := s.get("/text").body
	if res := s.get("/text", "Accept-Encoding: gzip"); res.header.Get("Content-Encoding") != "" {
		t.Fatalf("compressed without the module: %v", res.header)
	}
	s.call("PUT", s.routePath("compression"), map[string]any{}, 200)

	res := s.get("/text", "Accept-Encoding: gzip, deflate, br")
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
	if got := s.up.last(t).Header.Get("Accept-Encoding"); got != "" {
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
		res := s.do(nil, tc.method, tc.path, tc.header...)
		if res.header.Get("Content-Encoding") != "" {
			t.Errorf("%s: compressed: %v", tc.name, res.header)
		}
		if got := res.header.Get("Vary") == "Accept-Encoding"; got != tc.vary {
			t.Errorf("%s: Vary %q", tc.name, res.header.Get("Vary"))
		}
		if tc.method == "GET" && tc.path == "/text" && res.body != plain {
			t.Errorf("%s: body changed", tc.name)
		}
	}

	s.call("PUT", s.routePath("compression"), map[string]any{"enabled": false}, 200)
	if res := s.get("/text", "Accept-Encoding: gzip"); res.header.Get("Content-Encoding") != "" {
		t.Errorf("disabled module compresses: %v", res.header)
	}
}

// TestTrafficPolicyModule: a route's traffic policy replaced through the
// API applies to the next request; disabled or deleted, it no longer does.
func TestTrafficPolicyModule(t *testing.T) {
	s := service(t)
	deny := `{"inbound":[{"expressions":["req.url.path == '/private'"],"actions":[{"type":"deny","config":{"status_code":401}}]}]}`
	if res := s.get("/private"); res.status != 200 {
		t.Fatalf("before: %d", res.status)
	}
	s.setPolicy(deny)
	if res := s.get("/private"); res.status != 401 {
		t.Errorf("with the policy: %d, want 401", res.status)
	}
	if res := s.get("/public"); res.status != 200 {
		t.Errorf("with the policy, another path: %d, want 200", res.status)
	}
	s.call("PUT", s.routePath("traffic_policy"), map[string]any{"value": deny, "enabled": false}, 200)
	if res := s.get("/private"); res.status != 200 {
		t.Errorf("disabled: %d, want 200", res.status)
	}
	s.setPolicy(deny)
	s.call("DELETE", s.routePath("traffic_policy"), nil, 204)
	if res := s.get("/private"); res.status != 200 {
		t.Errorf("deleted: %d, want 200", res.status)
	}
	// A policy the Service refuses changes nothing.
	s.call("PUT", s.routePath("traffic_policy"), map[string]any{"value": `{"inbound":[{"actions":[{"type":"deny","config":{"status_code":200}}]}]}`}, 400)
	if res := s.get("/private"); res.status != 200 {
		t.Errorf("after a refused policy: %d, want 200", res.status)
	}
}

// TestPipelineOrder: inbound rules, then the upstream, then outbound rules,
// then the response headers module, then compression. The outbound rules
// see the upstream's headers before the module removes them, and the
// module's values replace what the rules added. Responses the inbound
// rules make do not go through the route's modules.
func TestPipelineOrder(t *testing.T) {
	s := service(t)
	s.setPolicy(`{
		"inbound": [
			{"actions": [{"type": "add-headers", "config": {"headers": {"x-step": "inbound"}}}]},
			{"expressions": ["req.url.path == '/blocked'"], "actions": [{"type": "custom-response", "config": {"status_code": 451, "body": "` + strings.Repeat("blocked ", 64) + `", "headers": {"content-type": "text/plain"}}}]}
		],
		"outbound": [
			{"expressions": ["hasResHeader('x-secret')"], "actions": [{"type": "add-headers", "config": {"headers": {"x-saw-secret": "yes", "x-order": "policy"}}}]}
		]}`)
	s.call("PUT", s.routePath("response_headers"), map[string]any{"add": map[string]string{"x-order": "module"}, "remove": []string{"x-secret"}}, 200)
	s.call("PUT", s.routePath("compression"), map[string]any{}, 200)

	res := s.get("/text", "Accept-Encoding: gzip")
	if got := s.up.last(t).Header.Get("X-Step"); got != "inbound" {
		t.Errorf("upstream X-Step %q", got)
	}
	if !slices.Equal(res.header.Values("X-Order"), []string{"module"}) || res.header.Get("X-Saw-Secret") != "yes" || res.header.Get("X-Secret") != "" {
		t.Errorf("outbound rules then the module: %v", res.header)
	}
	if res.header.Get("Content-Encoding") != "gzip" {
		t.Errorf("compression last: %v", res.header)
	}

	res = s.get("/blocked", "Accept-Encoding: gzip")
	if res.status != 451 || res.header.Get("Content-Encoding") != "" || res.header.Get("X-Order") != "" || !strings.HasPrefix(res.body, "blocked") {
		t.Errorf("inbound answer: %d %v", res.status, res.header)
	}
}

// TestOIDCModuleRefused: this proxy does not implement OIDC, so a route
// that requires it is refused rather than served unauthenticated; the
// traffic policy still runs first.
func TestOIDCModuleRefused(t *testing.T) {
	s := service(t)
	s.call("PUT", s.routePath("oidc"), map[string]any{"issuer": "https://accounts.example.com", "client_id": "id", "client_secret": "secret"}, 200)
	if res := s.get("/"); res.status != 501 || len(s.up.requests()) != 0 {
		t.Errorf("OIDC route: %d %q, upstream reached %d times", res.status, res.body, len(s.up.requests()))
	}
	s.setPolicy(`{"inbound":[{"actions":[{"type":"deny","config":{"status_code":429}}]}]}`)
	if res := s.get("/"); res.status != 429 {
		t.Errorf("policy before OIDC: %d", res.status)
	}
}

// TestSnapshotReuse: without writes the proxy reuses its snapshot; any
// write makes the next request rebuild it.
func TestSnapshotReuse(t *testing.T) {
	s := service(t)
	s.get("/")
	first := s.proxy.cur.Load()
	s.get("/")
	if s.proxy.cur.Load() != first {
		t.Error("rebuilt without a write")
	}
	if _, err := s.svc.CreateCredential(context.Background(), s.p, credentials.CreateParams{}); err != nil {
		t.Fatal(err)
	}
	s.get("/")
	if s.proxy.cur.Load() == first {
		t.Error("not rebuilt after a write")
	}
}

// TestServiceModeMissingEdge: New reads the edge, so a wrong ID fails
// early; an edge deleted later makes requests 503.
func TestServiceModeMissingEdge(t *testing.T) {
	s := service(t)
	if _, err := New(context.Background(), Options{Service: s.svc, AccountID: s.b.accountID, EdgeID: "edghts_missing"}); err == nil {
		t.Error("New with a missing edge succeeded")
	}
	if err := s.svc.DeleteHTTPSEdge(context.Background(), s.p, s.b.edgeID); err != nil {
		t.Fatal(err)
	}
	if res := s.get("/"); res.status != 503 {
		t.Errorf("deleted edge: %d %q", res.status, res.body)
	}
	if !strings.Contains(s.logs.String(), "loading the edge configuration") {
		t.Errorf("not logged:\n%s", s.logs)
	}
}

// TestOutboundBody checks that an outbound custom-response replaces the
// upstream's body even when the upstream streams a large one.
func TestOutboundBody(t *testing.T) {
	e := standalone(t, `{"outbound":[{"expressions":["res.status_code == 200"],"actions":[{"type":"custom-response","config":{"body":"replaced"}}]}]}`)
	res := e.get("/text")
	if res.status != 200 || res.body != "replaced" || bytes.Contains([]byte(res.body), []byte("jack")) {
		t.Errorf("%d %q", res.status, res.body)
	}
}
