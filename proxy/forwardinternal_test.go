package proxy

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane/agents"
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
