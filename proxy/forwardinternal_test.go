package proxy

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/identity"
	"github.com/edgeplane/edgeplane/memstore"
)

// internalEndpoint returns an internal endpoint of account a at
// proto://host:port with the traffic policy doc.
func (e *epEnv) internalEndpoint(id, proto, host string, port int64, doc string) agents.Endpoint {
	ep := e.endpoint(id, proto, host, doc)
	ep.Port, ep.Bindings = port, []string{agents.BindingInternal}
	ep.Hostport = host + ":" + strconv.FormatInt(port, 10)
	ep.URL, ep.PublicURL = proto+"://"+ep.Hostport, proto+"://"+ep.Hostport
	return ep
}

// TestForwardInternal: an internal endpoint is served by no listener;
// the forward-internal action of a public endpoint or edge route of the
// same account sends requests to it, its own traffic policy applied,
// with the public Host; a missing target answers 404 with on_error
// halt, and lets the public upstream answer with continue; another
// account's internal endpoint is never reached.
func TestForwardInternal(t *testing.T) {
	e := newEpEnv(t, nil)
	api := e.internalEndpoint("api", protoHTTPS, "api.internal", 443, `{"on_http_request":[{"actions":[
		{"type":"add-headers","config":{"headers":{"x-internal":"yes"}}}]}],
		"on_http_response":[{"actions":[{"type":"add-headers","config":{"headers":{"x-internal-out":"${string(res.status_code)}"}}}]}]}`)
	e.bind(api)
	web := e.internalEndpoint("web", protoHTTP, "web.internal", 8080, "")
	e.bind(web)
	// Account b's internal endpoint of the same name as one a forwards to.
	theirs := e.internalEndpoint("theirs", protoHTTPS, "db.internal", 443, "")
	theirs.AccountID = e.b.AccountID
	e.bind(theirs)

	pub := e.endpoint("pub", protoHTTPS, "app.example.com", `{"on_http_request":[
		{"expressions":["req.url.path.startsWith('/web')"],"actions":[{"type":"forward-internal","config":{"url":"http://web.internal:8080"}}]},
		{"expressions":["req.url.path.startsWith('/db')"],"actions":[{"type":"forward-internal","config":{"url":"https://db.internal"}}]},
		{"expressions":["req.url.path.startsWith('/fallback')"],"actions":[{"type":"forward-internal","config":{"url":"https://db.internal","on_error":"continue"}}]},
		{"expressions":["req.url.path.startsWith('/api')"],"actions":[
			{"type":"add-headers","config":{"headers":{"x-public":"yes"}}},
			{"type":"forward-internal","config":{"url":"https://api.internal"}}]}]}`)
	e.bind(pub)

	// No listener serves an internal name, whatever the port.
	for _, overTLS := range []bool{false, true} {
		res, err := e.get(t, overTLS, "api.internal", "/")
		if err == nil && res.status != http.StatusNotFound {
			t.Errorf("api.internal directly (TLS %v): %d %q", overTLS, res.status, res.body)
		}
	}
	if n := len(e.fa.calls()); n != 0 {
		t.Fatalf("%d streams opened for requests to internal names", n)
	}

	res := e.mustGet(t, true, "app.example.com", "/api/v1")
	if res.status != http.StatusOK || res.body != "agent "+api.ID+" /api/v1" || res.header.Get("X-Internal-Out") != "200" {
		t.Fatalf("/api/v1: %d %q, X-Internal-Out %q; want the internal endpoint's agent and its outbound rules", res.status, res.body, res.header.Get("X-Internal-Out"))
	}
	got := e.rec.last(t)
	if got.Host != "app.example.com" || got.Header.Get("X-Public") != "yes" || got.Header.Get("X-Internal") != "yes" ||
		got.dial.tunnelID != api.ID || got.dial.header.EdgeType != agents.EdgeNone || got.dial.header.Proto != "https" {
		t.Errorf("the internal agent saw Host %q, X-Public %q, X-Internal %q, dial %+v", got.Host, got.Header.Get("X-Public"), got.Header.Get("X-Internal"), got.dial)
	}
	if n := e.metric("edgeplane_proxy_requests_total", "edge="+api.ID, "action=", "code=2xx"); n != 1 {
		t.Errorf("requests counted for the internal endpoint: %v, want 1", n)
	}

	if res := e.mustGet(t, true, "app.example.com", "/web"); res.status != http.StatusOK || res.body != "agent "+web.ID+" /web" {
		t.Errorf("/web: %d %q, want the http internal endpoint on port 8080", res.status, res.body)
	}

	// db.internal is account b's: a's forward finds nothing.
	before := len(e.fa.calls())
	if res := e.mustGet(t, true, "app.example.com", "/db"); res.status != http.StatusNotFound || !strings.Contains(res.body, "offline") {
		t.Errorf("/db (halt): %d %q, want 404 offline", res.status, res.body)
	}
	if n := e.metric("edgeplane_proxy_requests_total", "edge="+pub.ID, "action=forward-internal", "code=4xx"); n != 1 {
		t.Errorf("requests answered by forward-internal: %v, want 1", n)
	}
	if res := e.mustGet(t, true, "app.example.com", "/fallback"); res.status != http.StatusOK || res.body != "agent "+pub.ID+" /fallback" {
		t.Errorf("/fallback (continue): %d %q, want the public endpoint's own agent", res.status, res.body)
	}
	for _, c := range e.fa.calls()[before:] {
		if c.tunnelID == theirs.ID {
			t.Fatalf("another account's internal endpoint was dialed: %+v", c)
		}
	}

	// An HTTPS edge's route forwards too.
	e.serveHosts(e.a, e.a1, "term.example.com:443")
	e.policy(e.a, e.a1, e.a1r, `{"inbound":[{"actions":[{"type":"forward-internal","config":{"url":"https://api.internal"}}]}]}`)
	e.applied(e.c)
	if res := e.mustGet(t, true, "term.example.com", "/from-edge"); res.status != http.StatusOK || res.body != "agent "+api.ID+" /from-edge" {
		t.Errorf("from an edge route: %d %q", res.status, res.body)
	}

	// One hop: an internal endpoint's own forward-internal forwards
	// nowhere (halt: 404), even to an endpoint that is online.
	hop := e.internalEndpoint("hop", protoHTTPS, "hop.internal", 443, `{"on_http_request":[{"actions":[{"type":"forward-internal","config":{"url":"https://api.internal"}}]}]}`)
	e.bind(hop)
	e.policy(e.a, e.a1, e.a1r, `{"inbound":[{"actions":[{"type":"forward-internal","config":{"url":"https://hop.internal"}}]}]}`)
	e.applied(e.c)
	before = len(e.fa.calls())
	if res := e.mustGet(t, true, "term.example.com", "/twice"); res.status != http.StatusNotFound {
		t.Errorf("a second hop: %d %q, want 404", res.status, res.body)
	}
	if n := len(e.fa.calls()); n != before {
		t.Errorf("%d streams opened for a second hop", n-before)
	}

	// Gone: halt answers 404, and nothing is dialed.
	e.unbind(api.ID)
	before = len(e.fa.calls())
	if res := e.mustGet(t, true, "app.example.com", "/api"); res.status != http.StatusNotFound {
		t.Errorf("/api once unbound: %d %q, want 404", res.status, res.body)
	}
	if n := len(e.fa.calls()); n != before {
		t.Errorf("%d streams opened to an unbound internal endpoint", n-before)
	}
}

// BenchmarkHandlerForwardInternal is one request through the Handler
// among 1,000 http endpoints of one account (each request to the next),
// agents in memory (pipeDialer). forward_internal: each endpoint's
// traffic policy forwards to the one internal endpoint, so every
// request ends at that endpoint's agent (its kept-alive streams);
// direct: no policy, each request goes to its own endpoint's agent (a
// stream kept per endpoint). So the two differ in more than the
// forward: direct keeps 1,000 endpoints' streams, and costs more per
// request on this machine; forward_internal's figure is the whole cost
// of a forwarded request (the policy's evaluation, the lookup of the
// internal endpoint, its route).
func BenchmarkHandlerForwardInternal(b *testing.B) {
	answer := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(fixedBody)))
		_, _ = w.Write(fixedBody)
	})
	for _, bc := range []struct{ name, doc string }{
		{"direct", ""},
		{"forward_internal", `{"on_http_request":[{"actions":[{"type":"forward-internal","config":{"url":"https://api.internal"}}]}]}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			srv := &http.Server{Handler: answer}
			d := &pipeDialer{ln: newConnListener()}
			go func() { _ = srv.Serve(d.ln) }()
			b.Cleanup(func() { _ = srv.Close() })
			m := NewMetrics(MetricsOptions{MaxSeries: benchEdges})
			prometheus.NewRegistry().MustRegister(m)
			c := endpointFleetWith(b, benchEdges, bc.doc, agents.Endpoint{ID: agents.EndpointPrefix + "internal", Proto: "https", Host: "api.internal", Port: 443,
				Hostport: "api.internal:443", Bindings: []string{agents.BindingInternal}})
			benchServe(b, NewHandler(c, HandlerOptions{Metrics: m, Agents: d}), http.StatusOK)
		})
	}
}

// endpointFleetWith is endpointFleet with extra endpoints of the same
// account.
func endpointFleetWith(b testing.TB, n int, doc string, extra ...agents.Endpoint) *Configs {
	b.Helper()
	ctx := context.Background()
	st := memstore.New()
	svc := mustService(edgeplane.New(st, edgeplane.Options{}))
	b.Cleanup(func() { _ = svc.Close(ctx) })
	acct, err := svc.Host().CreateAccount(ctx, identity.AccountParams{Name: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	src := newFakeEndpoints(st)
	src.pageSize = 100
	for i := range n {
		host := strings.TrimSuffix(benchHostport(i), ":443")
		src.set(agents.Endpoint{ID: fmt.Sprintf("%sbench%04d", agents.EndpointPrefix, i), AccountID: acct.ID, Proto: "http", Host: host, Port: 80,
			Hostport: host + ":80", TrafficPolicy: doc})
	}
	for _, ep := range extra {
		ep.AccountID = acct.ID
		src.set(ep)
	}
	c, err := New(ctx, svc.Host().DataPlane(), st, Options{Endpoints: src})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Close)
	if s := c.Stats(); s.Endpoints != n+len(extra) {
		b.Fatalf("stats %+v, want %d endpoints", s, n+len(extra))
	}
	return c
}

// TestForwardInternalPool: internal endpoints bound with pooling enabled
// on one name form a pool that forward-internal spreads over (round
// robin), a member whose session is gone skipped within the request;
// another account's pool of the same name is never reached, and the
// pool's name goes when its last member does.
func TestForwardInternalPool(t *testing.T) {
	e := newEpEnv(t, nil)
	member := func(id string, created int64, account string) agents.Endpoint {
		ep := e.internalEndpoint(id, protoHTTPS, "api.internal", 443, "")
		ep.PoolingEnabled, ep.CreatedAt, ep.AccountID = true, time.Unix(created, 0), account
		return ep
	}
	a, b := member("a", 1, e.a.AccountID), member("b", 2, e.a.AccountID)
	theirs := member("theirs", 3, e.b.AccountID)
	for _, ep := range []agents.Endpoint{a, b, theirs} {
		e.bind(ep)
	}
	pub := e.endpoint("pub", protoHTTPS, "app.example.com", `{"on_http_request":[{"actions":[{"type":"forward-internal","config":{"url":"https://api.internal"}}]}]}`)
	e.bind(pub)

	seen := map[string]int{}
	for range 6 {
		res := e.mustGet(t, true, "app.example.com", "/x")
		if res.status != http.StatusOK {
			t.Fatalf("through the pool: %d %q", res.status, res.body)
		}
		seen[strings.TrimSuffix(strings.TrimPrefix(res.body, "agent "), " /x")]++
	}
	if seen[a.ID] != 3 || seen[b.ID] != 3 || len(seen) != 2 {
		t.Errorf("answered by %v; want 3 each from %s and %s (round robin, never account b's)", seen, a.ID, b.ID)
	}

	e.fa.failing(a.ID, agents.ErrNoSession)
	for i := range 4 {
		if res := e.mustGet(t, true, "app.example.com", "/x"); res.status != http.StatusOK || res.body != "agent "+b.ID+" /x" {
			t.Fatalf("request %d with a's session gone: %d %q; want b's answer", i, res.status, res.body)
		}
	}

	e.unbind(a.ID)
	e.unbind(b.ID)
	if res := e.mustGet(t, true, "app.example.com", "/x"); res.status != http.StatusNotFound {
		t.Errorf("after the pool's last member went: %d %q; want 404 (offline)", res.status, res.body)
	}
	for _, c := range e.fa.calls() {
		if c.tunnelID == theirs.ID {
			t.Fatalf("another account's member was dialed: %+v", c)
		}
	}
}
