package proxy

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/httpserver"
	"github.com/edgeplane/edgeplane/policy/limits"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestHostRouting: two accounts, each with edges on its own hostnames
// and its own upstream. Each hostname reaches its own upstream; a
// hostport no edge serves gets a plain 404 and reaches nobody's
// upstream, whatever edges other tenants have; the Host's case and
// trailing dot do not matter; a wildcard hostport serves its names one
// label deep, and a name reserved by another account is that account's,
// not the wildcard's.
func TestHostRouting(t *testing.T) {
	s := newSite(t, siteOptions{})
	acme, globex := s.account("acme"), s.account("globex")
	upA, upB, upW, upX := newUpstream(t, "acme"), newUpstream(t, "globex"), newUpstream(t, "globex-wildcard"), newUpstream(t, "acme-exact")
	s.newApp(acme, "a", upA, "a.example.com:443", "www.a.example.com:443")
	s.newApp(globex, "b", upB, "b.example.com:443")
	s.newApp(globex, "w", upW, "*.w.example.com:443")
	s.newApp(acme, "x", upX, "x.w.example.com:443") // acme's name inside globex's wildcard
	s.newApp(acme, "idle", nil)                     // an edge without hostports
	ups := []*testUpstream{upA, upB, upW, upX}

	cases := []struct {
		host     string
		upstream string // "" for a 404 no upstream sees
	}{
		{"a.example.com:443", "acme"},
		{"www.a.example.com:443", "acme"},
		{"b.example.com:443", "globex"},
		{"A.Example.COM:443", "acme"},
		{"B.EXAMPLE.COM:443", "globex"},
		{"a.example.com.:443", "acme"},
		{"one.w.example.com:443", "globex-wildcard"},
		{"TWO.W.example.com:443", "globex-wildcard"},
		{"x.w.example.com:443", "acme-exact"},
		{"X.W.EXAMPLE.COM:443", "acme-exact"},
		{"deep.one.w.example.com:443", ""}, // one label deep only
		{"w.example.com:443", ""},          // the wildcard does not cover its parent
		{".w.example.com:443", ""},         // nor an empty label
		{"*.w.example.com:443", ""},        // nor a request for the wildcard itself
		{"c.example.com:443", ""},
		{"example.com:443", ""},
		{"a.example.com.evil:443", ""},
		{"127.0.0.1:443", ""},
		{"[::1]:443", ""},
		{"a.example.com:", ""},
		{"a.example.com:https", ""},
	}
	for _, tc := range cases {
		t.Run(tc.host, func(t *testing.T) {
			before := make([]int, len(ups))
			for i, u := range ups {
				before[i] = len(u.requests())
			}
			res := s.do(nil, tc.host, "GET", "/who")
			if tc.upstream == "" {
				if res.status != 404 || res.body != "no edge serves this host\n" {
					t.Errorf("%d %q, want 404 %q", res.status, res.body, "no edge serves this host\n")
				}
			} else if res.status != 200 || res.body != "upstream "+tc.upstream+" /who" {
				t.Errorf("%d %q, want 200 from upstream %s", res.status, res.body, tc.upstream)
			}
			for i, u := range ups {
				n := len(u.requests()) - before[i]
				if want := 0; u.name == tc.upstream {
					if n != 1 {
						t.Errorf("upstream %s got %d requests, want 1", u.name, n)
					}
				} else if n != want {
					t.Errorf("upstream %s got %d requests, want none", u.name, n)
				}
			}
		})
	}
	unknown := 0
	for _, tc := range cases {
		if tc.upstream == "" {
			unknown++
		}
	}
	if got := s.metric("edgeplane_proxy_unrouted_total", "reason=unknown_host"); got != float64(unknown) {
		t.Errorf("unrouted_total{reason=unknown_host} = %v, want %d", got, unknown)
	}
}

// TestHostportChanges: a hostport moved from one edge to another is
// served by the new edge only; an edge deleted, or one whose hostports
// are removed, no longer serves them (404).
func TestHostportChanges(t *testing.T) {
	s := newSite(t, siteOptions{})
	p := s.account("acme")
	one, two := newUpstream(t, "one"), newUpstream(t, "two")
	a := s.newApp(p, "one", one, "a.example.com:443")
	b := s.newApp(p, "two", two, "b.example.com:443")
	update := func(edgeID string, hostports ...string) {
		t.Helper()
		if hostports == nil {
			hostports = []string{}
		}
		_, err := s.svc.UpdateHTTPSEdge(s.ctx, p, edgeID, edges.UpdateEdgeParams{Hostports: &hostports})
		s.check(err)
		s.sync()
	}
	get := func(host string) string {
		t.Helper()
		res := s.do(nil, host, "GET", "/")
		if res.status != 200 {
			return res.body
		}
		return res.header.Get("X-Upstream")
	}

	update(a.edge)
	update(b.edge, "a.example.com:443", "b.example.com:443")
	if got := get("a.example.com:443"); got != "two" {
		t.Errorf("a.example.com after it moved: %q, want upstream two", got)
	}
	update(b.edge, "b.example.com:443")
	if got := get("a.example.com:443"); got != "no edge serves this host\n" {
		t.Errorf("a.example.com served by no edge: %q", got)
	}
	update(a.edge, "a.example.com:443")
	if got := get("a.example.com:443"); got != "one" {
		t.Errorf("a.example.com given back: %q, want upstream one", got)
	}
	s.check(s.svc.DeleteHTTPSEdge(s.ctx, p, a.edge))
	s.sync()
	if got := get("a.example.com:443"); got != "no edge serves this host\n" {
		t.Errorf("a.example.com after its edge was deleted: %q", got)
	}
	if got := get("b.example.com:443"); got != "two" {
		t.Errorf("b.example.com: %q, want upstream two", got)
	}
}

// TestRoundRobin: the tunnels of a backend take turns, each request to
// the next.
func TestRoundRobin(t *testing.T) {
	s := newSite(t, siteOptions{})
	ups := []*testUpstream{newUpstream(t, "u0"), newUpstream(t, "u1"), newUpstream(t, "u2")}
	a := s.newApp(s.account("acme"), "web", nil, "app.example.com:443")
	for _, u := range ups {
		a.tunnel(u.URL)
	}
	s.sync()
	var order []string
	for range 9 {
		res := a.get("/")
		if res.status != 200 {
			t.Fatalf("%d %q", res.status, res.body)
		}
		order = append(order, res.header.Get("X-Upstream"))
	}
	for i := range order {
		if i >= 3 && order[i] != order[i-3] {
			t.Fatalf("not a rotation: %v", order)
		}
	}
	if order[0] == order[1] || order[1] == order[2] || order[0] == order[2] {
		t.Errorf("three tunnels, three requests, not all served: %v", order)
	}
}

// TestPassiveHealth: a tunnel whose upstream refuses connections costs
// one request a 502, then is skipped for FailureBackoff while the other
// tunnel serves everything; when the backoff has passed it is tried
// again. When every tunnel is in backoff the next in turn is tried
// rather than the request refused.
func TestPassiveHealth(t *testing.T) {
	const backoff = 10 * time.Second
	s := newSite(t, siteOptions{handler: HandlerOptions{FailureBackoff: backoff}})
	good := newUpstream(t, "good")
	a := s.newApp(s.account("acme"), "web", good, "app.example.com:443")
	down := refusedURL(t)
	downTunnel, _ := a.tunnel(down)
	s.sync()

	failures := func(n int) int {
		t.Helper()
		bad := 0
		for range n {
			switch res := a.get("/"); {
			case res.status == 502:
				bad++
				noInternals(t, res.body, down, downTunnel)
			case res.status != 200 || res.header.Get("X-Upstream") != "good":
				t.Fatalf("%d %q", res.status, res.body)
			}
		}
		return bad
	}
	if got := failures(6); got != 1 {
		t.Errorf("first 6 requests: %d failed, want 1 (then the tunnel is skipped)", got)
	}
	s.clock.Advance(backoff - time.Millisecond)
	if got := failures(6); got != 0 {
		t.Errorf("within the backoff: %d failed, want 0", got)
	}
	s.clock.Advance(time.Millisecond)
	if got := failures(6); got != 1 {
		t.Errorf("after the backoff: %d failed, want 1 (tried once again)", got)
	}
	if got := s.metric("edgeplane_proxy_upstream_errors_total", "edge="+a.edge, "route="+a.route); got != 2 {
		t.Errorf("upstream errors %v, want 2", got)
	}

	// Only the failing tunnel left: it is tried on every request, in
	// backoff or not (502, never 503).
	tn, err := s.svc.GetTunnel(s.ctx, a.p, s.cfgs.Edge(a.p.AccountID, a.edge).Tunnels[a.backend][1].ID)
	s.check(err)
	if tn.ID == downTunnel {
		t.Fatalf("tunnel order: %s is the down one", tn.ID)
	}
	s.check(s.svc.DeleteCredential(s.ctx, a.p, tn.Credential.ID))
	s.sync()
	for i := range 3 {
		if res := a.get("/"); res.status != 502 {
			t.Errorf("request %d to the only tunnel, in backoff: %d %q, want 502", i, res.status, res.body)
		}
	}
}

// TestExpiredLeaseGetsNoTraffic: a tunnel whose lease ended (not renewed,
// the clock past its ExpiresAt) receives no traffic, though nothing was
// written to the store and the reaper has not deleted it: the snapshot
// still lists it. A renewed tunnel keeps receiving traffic.
func TestExpiredLeaseGetsNoTraffic(t *testing.T) {
	const lease = time.Minute
	s := newSite(t, siteOptions{lease: lease})
	first, second := newUpstream(t, "first"), newUpstream(t, "second")
	a := s.newApp(s.account("acme"), "web", first, "app.example.com:443")
	s.clock.Advance(lease / 2)
	secondTunnel, _ := a.tunnel(second.URL)
	s.sync()
	seenBy := map[string]int{}
	for range 4 {
		seenBy[a.get("/").header.Get("X-Upstream")]++
	}
	if seenBy["first"] != 2 || seenBy["second"] != 2 {
		t.Fatalf("two live tunnels: %v", seenBy)
	}

	s.clock.Advance(lease / 2) // the first lease ends now
	if n := len(s.cfgs.Edge(a.p.AccountID, a.edge).Tunnels[a.backend]); n != 2 {
		t.Fatalf("the snapshot lists %d tunnels, want both (no reaper ran): the test proves nothing", n)
	}
	before := len(first.requests())
	for range 4 {
		if res := a.get("/"); res.status != 200 || res.header.Get("X-Upstream") != "second" {
			t.Errorf("after the first lease ended: %d from %q", res.status, res.header.Get("X-Upstream"))
		}
	}
	if n := len(first.requests()) - before; n != 0 {
		t.Errorf("the expired tunnel's upstream got %d requests", n)
	}

	// Renewed before its end, the second tunnel lives on.
	s.clock.Advance(lease/2 - time.Second)
	_, err := s.svc.Host().RenewTunnel(s.ctx, a.p.AccountID, secondTunnel)
	s.check(err)
	s.sync()
	s.clock.Advance(2 * time.Second) // past its first lease, within the renewed one
	if res := a.get("/"); res.status != 200 || res.header.Get("X-Upstream") != "second" {
		t.Errorf("a renewed tunnel: %d from %q", res.status, res.header.Get("X-Upstream"))
	}
	s.clock.Advance(lease)
	if res := a.get("/"); res.status != 503 || res.body != "no online tunnel serves this route\n" {
		t.Errorf("every lease ended: %d %q, want 503", res.status, res.body)
	}
}

// TestUpstreamFailureBodies: the proxy's own answers (502 refused, 504
// timed out, 503 no tunnel) have fixed bodies that name neither the
// upstream's address, nor the tunnel, nor the error.
func TestUpstreamFailureBodies(t *testing.T) {
	s := newSite(t, siteOptions{handler: HandlerOptions{UpstreamTimeout: 100 * time.Millisecond}})
	p := s.account("acme")
	hung := newUpstream(t, "hung")
	slow := s.newApp(p, "slow", hung, "slow.example.com:443")
	slowTunnel := s.edgeTunnel(slow)
	refused := s.newApp(p, "refused", nil, "refused.example.com:443")
	down := refusedURL(t)
	refusedTunnel, _ := refused.tunnel(down)
	empty := s.newApp(p, "empty", nil, "empty.example.com:443")
	s.sync()

	for _, tc := range []struct {
		name      string
		a         *app
		path      string
		status    int
		body      string
		internals []string
	}{
		{"504", slow, "/hang", http.StatusGatewayTimeout, "gateway timeout: the upstream did not answer in time\n", []string{hung.URL, slowTunnel, "timeout awaiting", "net/http"}},
		{"502", refused, "/", http.StatusBadGateway, "bad gateway: the upstream did not answer\n", []string{down, refusedTunnel, "refused", "dial"}},
		{"503", empty, "/", http.StatusServiceUnavailable, "no online tunnel serves this route\n", []string{empty.backend}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := tc.a.get(tc.path)
			if res.status != tc.status || res.body != tc.body {
				t.Errorf("%d %q, want %d %q", res.status, res.body, tc.status, tc.body)
			}
			noInternals(t, res.body, tc.internals...)
			if ct := res.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
				t.Errorf("Content-Type %q", ct)
			}
		})
	}
	if !strings.Contains(s.logs.String(), "timeout awaiting response headers") {
		t.Errorf("the cause of the 504 is not logged:\n%s", s.logs)
	}
}

// TestTrustedProxiesEndToEnd: with TrustedProxies naming the loopback
// peer, conn.client_ip is the forwarded client, and the upstream sees the
// chain with the peer appended; without it, the header is dropped and
// the peer is the client.
func TestTrustedProxiesEndToEnd(t *testing.T) {
	trusted, err := ParseTrustedProxies("127.0.0.0/8")
	if err != nil {
		t.Fatal(err)
	}
	doc := `{"inbound":[{"actions":[
		{"type":"restrict-ips","config":{"allow":["203.0.113.0/24"]}},
		{"type":"add-headers","config":{"headers":{"x-client":"${conn.client_ip}"}}}]}]}`
	s, a, up := standalone(t, doc, siteOptions{handler: HandlerOptions{TrustedProxies: trusted}})
	if res := a.get("/", "X-Forwarded-For: 203.0.113.9, 127.0.0.5"); res.status != 200 {
		t.Fatalf("forwarded allowed client: %d", res.status)
	}
	got := up.last(t)
	if got.Header.Get("X-Client") != "203.0.113.9" || got.Header.Get("X-Forwarded-For") != "203.0.113.9, 127.0.0.5, 127.0.0.1" {
		t.Errorf("upstream saw X-Client %q, X-Forwarded-For %q", got.Header.Get("X-Client"), got.Header.Get("X-Forwarded-For"))
	}
	if res := a.get("/", "X-Forwarded-For: 198.51.100.1"); res.status != 403 {
		t.Errorf("forwarded refused client: %d", res.status)
	}
	if res := a.get("/"); res.status != 403 {
		t.Errorf("no header, the trusted peer is the client: %d", res.status)
	}
	if !strings.Contains(s.logs.String(), "path=/ client_ip=203.0.113.9 status=200") {
		t.Errorf("the log line does not name the forwarded client:\n%s", s.logs)
	}

	_, plain, plainUp := standalone(t, `{"inbound":[{"actions":[{"type":"add-headers","config":{"headers":{"x-client":"${conn.client_ip}"}}}]}]}`, siteOptions{})
	plain.get("/", "X-Forwarded-For: 203.0.113.9")
	got = plainUp.last(t)
	if got.Header.Get("X-Client") != "127.0.0.1" || got.Header.Get("X-Forwarded-For") != "127.0.0.1" {
		t.Errorf("untrusted: X-Client %q, X-Forwarded-For %q", got.Header.Get("X-Client"), got.Header.Get("X-Forwarded-For"))
	}
}

// TestServerBounds: Handler.Server refuses requests beyond the bounds
// the policy cost model assumes.
func TestServerBounds(t *testing.T) {
	s, a, _ := standalone(t, "", siteOptions{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	s.check(err)
	srv := s.h.Server(false, httpserver.Options{})
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	s.url = "http://" + ln.Addr().String()

	for _, tc := range []struct {
		name   string
		path   string
		header []string
		status int
	}{
		{"fine", "/fine", nil, http.StatusOK},
		{"long URL", "/" + strings.Repeat("u", limits.MaxURLBytes), nil, http.StatusRequestURITooLong},
		{"large header", "/", []string{"X-Big: " + strings.Repeat("h", limits.MaxRequestHeaderBytes+4096)}, http.StatusRequestHeaderFieldsTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if res := s.do(nil, a.host, "GET", tc.path, tc.header...); res.status != tc.status {
				t.Errorf("%d, want %d", res.status, tc.status)
			}
		})
	}
}

// TestMetrics scrapes the Metrics collector through a registry: requests
// by edge, route, action and status class; the latency histogram; upstream
// errors; unrouted requests; and the MaxSeries bound, past which new
// (edge, route) pairs count under OtherLabel.
func TestMetrics(t *testing.T) {
	s := newSite(t, siteOptions{handler: HandlerOptions{Metrics: NewMetrics(MetricsOptions{MaxSeries: 2})}})
	reg := s.reg
	p := s.account("acme")
	up := newUpstream(t, "a")
	one := s.newApp(p, "one", up, "one.example.com:443")
	two := s.newApp(p, "two", up, "two.example.com:443")
	three := s.newApp(p, "three", up, "three.example.com:443")
	one.policy(`{"inbound":[{"expressions":["req.url.path == '/deny'"],"actions":[{"type":"deny"}]}]}`)
	down := s.newApp(p, "down", nil, "down.example.com:443")
	down.tunnel(refusedURL(t))
	s.sync()

	one.get("/")
	one.get("/")
	one.get("/deny")
	one.get("/status/500")
	two.get("/status/302")
	three.get("/") // past MaxSeries: _other
	down.get("/")  // _other, an upstream error
	s.do(nil, "nobody.example.com:443", "GET", "/")

	want := `
# HELP edgeplane_proxy_requests_total Requests routed to an edge, by edge, route, the traffic policy action type that answered, and status class.
# TYPE edgeplane_proxy_requests_total counter
edgeplane_proxy_requests_total{action="",code="2xx",edge="_other",route="_other"} 1
edgeplane_proxy_requests_total{action="",code="2xx",edge="ONE",route="ONER"} 2
edgeplane_proxy_requests_total{action="",code="3xx",edge="TWO",route="TWOR"} 1
edgeplane_proxy_requests_total{action="",code="5xx",edge="ONE",route="ONER"} 1
edgeplane_proxy_requests_total{action="",code="5xx",edge="_other",route="_other"} 1
edgeplane_proxy_requests_total{action="deny",code="4xx",edge="ONE",route="ONER"} 1
# HELP edgeplane_proxy_upstream_errors_total Requests whose upstream failed or timed out, by edge and route.
# TYPE edgeplane_proxy_upstream_errors_total counter
edgeplane_proxy_upstream_errors_total{edge="_other",route="_other"} 1
# HELP edgeplane_proxy_unrouted_total Requests and TLS handshakes that reached no edge, by reason.
# TYPE edgeplane_proxy_unrouted_total counter
edgeplane_proxy_unrouted_total{reason="misdirected"} 0
edgeplane_proxy_unrouted_total{reason="no_certificate"} 0
edgeplane_proxy_unrouted_total{reason="unknown_host"} 1
`
	want = strings.NewReplacer("ONER", one.route, "TWOR", two.route, "ONE", one.edge, "TWO", two.edge).Replace(want)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"edgeplane_proxy_requests_total", "edgeplane_proxy_upstream_errors_total", "edgeplane_proxy_unrouted_total"); err != nil {
		t.Error(err)
	}

	// The histogram: one observation per routed request, by edge and
	// route.
	mfs, err := reg.Gather()
	s.check(err)
	counts := map[string]uint64{}
	for _, mf := range mfs {
		if mf.GetName() != "edgeplane_proxy_request_duration_seconds" {
			continue
		}
		for _, mt := range mf.GetMetric() {
			var edge string
			for _, l := range mt.GetLabel() {
				if l.GetName() == "edge" {
					edge = l.GetValue()
				}
			}
			counts[edge] = mt.GetHistogram().GetSampleCount()
		}
	}
	if counts[one.edge] != 4 || counts[two.edge] != 1 || counts[OtherLabel] != 2 || len(counts) != 3 {
		t.Errorf("histogram sample counts by edge: %v", counts)
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) != 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
}

// TestPolicyChangeDoesNotBlockRequests: while an edge's new traffic policy
// compiles, its requests are served at once by the current config (and
// so are other edges'); once the compile is done, the new policy applies.
func TestPolicyChangeDoesNotBlockRequests(t *testing.T) {
	hk := newHooks(nil)
	s := newSite(t, siteOptions{hooks: hk})
	p := s.account("acme")
	up := newUpstream(t, "a")
	a := s.newApp(p, "a", up, "a.example.com:443")
	b := s.newApp(p, "b", up, "b.example.com:443")

	release := hk.holdNext(a.edge)
	defer release()
	_, err := s.svc.ReplaceHTTPSRouteTrafficPolicy(s.ctx, a.p, a.edge, a.route, edges.TrafficPolicyParams{Value: denyAll})
	s.check(err)
	select {
	case <-hk.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the edge's compile did not start")
	}
	// The compile is held: requests are served by the current config.
	// (A request that waited for the compile would wait for ever: the
	// client's timeout would fail the test.)
	for range 3 {
		if res := a.get("/"); res.status != 200 {
			t.Errorf("during the compile: %d, want 200 (the old config)", res.status)
		}
		if res := b.get("/"); res.status != 200 {
			t.Errorf("another edge during the compile: %d", res.status)
		}
	}
	release()
	s.sync()
	if res := a.get("/"); res.status != 403 {
		t.Errorf("after the compile: %d, want 403", res.status)
	}
}

// TestClientAddrSources: conn.client_ip is the socket's peer from an
// untrusted peer, whatever the header says (a table over the Handler
// with httptest requests, no network).
func TestClientAddrSources(t *testing.T) {
	s, a, _ := standalone(t, `{"inbound":[{"actions":[{"type":"custom-response","config":{"status_code":200,"body":"${conn.client_ip}"}}]}]}`, siteOptions{})
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	h := NewHandler(s.cfgs, HandlerOptions{Clock: s.clock.Now, TrustedProxies: trusted})
	for _, tc := range []struct {
		name, remote, xff, want string
	}{
		{"untrusted peer, no header", "192.0.2.1:1234", "", "192.0.2.1"},
		{"untrusted peer, header ignored", "192.0.2.1:1234", "203.0.113.9", "192.0.2.1"},
		{"trusted peer, header believed", "10.1.2.3:1234", "203.0.113.9", "203.0.113.9"},
		{"trusted peer, chain of trusted", "10.1.2.3:1234", "203.0.113.9, 10.9.9.9", "203.0.113.9"},
		{"trusted peer, no header", "10.1.2.3:1234", "", "10.1.2.3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := http.NewRequestWithContext(context.Background(), "GET", "http://"+a.host+"/", nil)
			r.RemoteAddr = tc.remote
			if tc.xff != "" {
				r.Header.Set("X-Forwarded-For", tc.xff)
			}
			w := &recorder{h: http.Header{}}
			h.ServeHTTP(w, r)
			if w.status != 200 || w.body.String() != tc.want {
				t.Errorf("%d %q, want %q", w.status, w.body.String(), tc.want)
			}
		})
	}
}

// recorder is a minimal ResponseWriter.
type recorder struct {
	h      http.Header
	status int
	body   strings.Builder
}

func (w *recorder) Header() http.Header { return w.h }
func (w *recorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = 200
	}
	return w.body.Write(b)
}
func (w *recorder) WriteHeader(code int) { w.status = code }

// TestUpstreamNetworks: with HandlerOptions.UpstreamNetworks, the proxy
// connects only to upstreams whose dialled address is in them; a tunnel
// forwarding elsewhere (here the loopback upstream, outside 10.0.0.0/8)
// gets a 502 that names nothing, and its upstream is never reached.
func TestUpstreamNetworks(t *testing.T) {
	for _, tc := range []struct {
		networks string
		status   int
	}{
		{"", 200},
		{"127.0.0.0/8", 200},
		{"10.0.0.0/8, 192.0.2.7", 502},
		{"::1", 502}, // the upstream listens on 127.0.0.1
	} {
		t.Run(tc.networks, func(t *testing.T) {
			nets, err := ParseNetworks(tc.networks)
			if err != nil {
				t.Fatal(err)
			}
			_, a, up := standalone(t, "", siteOptions{handler: HandlerOptions{UpstreamNetworks: nets}})
			res := a.get("/")
			if res.status != tc.status {
				t.Fatalf("%d %q, want %d", res.status, res.body, tc.status)
			}
			if reached := len(up.requests()) > 0; reached != (tc.status == 200) {
				t.Errorf("upstream reached: %v", reached)
			}
			if tc.status == 502 && res.body != "bad gateway: the upstream did not answer\n" {
				t.Errorf("502 body %q", res.body)
			}
		})
	}
	if _, err := ParseNetworks("10.0.0.0/8,nope"); err == nil || !strings.Contains(err.Error(), `network 2: "nope"`) {
		t.Errorf("ParseNetworks error %v, want one naming network 2", err)
	}
}
