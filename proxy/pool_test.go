package proxy

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/agents"
)

// TestEndpointPool: two http endpoints with pooling enabled on one host
// form a pool: requests take turns between them; a member whose dial
// fails (its session gone) is skipped within the request, which the
// other answers; when a member is unbound the other serves the host
// alone, and when both are, nothing does. A tcp pool's connections
// take turns too.
func TestEndpointPool(t *testing.T) {
	e := newEpEnv(t, nil)
	member := func(id, node string, created time.Time) agents.Endpoint {
		ep := e.endpoint(id, protoHTTP, "plain.example.com", "")
		ep.PoolingEnabled, ep.Node, ep.CreatedAt = true, node, created
		return ep
	}
	a, b := member("a", "nd_1", time.Unix(1, 0)), member("b", "nd_2", time.Unix(2, 0))
	e.bind(a)
	e.bind(b)
	dials := func() map[string]int {
		n := map[string]int{}
		for _, d := range e.fa.calls() {
			n[d.tunnelID]++
		}
		return n
	}
	for range 10 {
		if res := e.mustGet(t, false, "plain.example.com", "/x"); res.status != 200 {
			t.Fatalf("through the pool: %d %q", res.status, res.body)
		}
	}
	if n := dials(); n[a.ID] != 5 || n[b.ID] != 5 {
		t.Errorf("dials %v; want 5 each (round robin, whatever node holds the member)", n)
	}
	for _, id := range []string{a.ID, b.ID} {
		if ep := e.c.Endpoint(e.a.AccountID, id); ep == nil || !ep.Endpoint.PoolingEnabled {
			t.Errorf("member %s's own snapshot: %+v", id, ep)
		}
	}

	// a's session is gone, and the proxy has not learnt it yet.
	e.fa.failing(a.ID, agents.ErrNoSession)
	before := dials()
	for i := range 6 {
		if res := e.mustGet(t, false, "plain.example.com", "/x"); res.status != 200 {
			t.Fatalf("request %d with a's session gone: %d %q", i, res.status, res.body)
		}
	}
	after := dials()
	if after[b.ID]-before[b.ID] != 6 || after[a.ID]-before[a.ID] != 1 {
		t.Errorf("dials with a's session gone: %v then %v; want each request answered by b, a tried once (then in its backoff)", before, after)
	}

	e.unbind(a.ID)
	for range 3 {
		if res := e.mustGet(t, false, "plain.example.com", "/x"); res.status != 200 {
			t.Fatalf("after a member was unbound: %d %q", res.status, res.body)
		}
	}
	e.unbind(b.ID)
	if res := e.mustGet(t, false, "plain.example.com", "/x"); res.status != 404 {
		t.Errorf("after the pool's last member was unbound: %d %q; want 404", res.status, res.body)
	}
}

// TestEndpointPoolTCP: a pool of two tcp endpoints on the port: the
// connections take turns; with one member's session gone, each
// connection goes to the other. An endpoint without pooling that
// claims the pool's host while the pool is there (the control plane
// refuses it; its record exists for the instant of the refusal) does
// not take the host from the pool.
func TestEndpointPoolTCP(t *testing.T) {
	e := newEpEnv(t, nil)
	a, b := e.endpoint("ta", protoTCP, "tcp.example.com", ""), e.endpoint("tb", protoTCP, "tcp.example.com", "")
	a.PoolingEnabled, b.PoolingEnabled = true, true
	a.CreatedAt, b.CreatedAt = time.Unix(1, 0), time.Unix(2, 0)
	e.bind(a)
	e.bind(b)
	for i := range 4 {
		c := e.dialTCP(t)
		roundTrip(t, c, "hello "+string(rune('0'+i)))
		c.Close()
	}
	if na, nb := e.fa.callsOf(a.ID), e.fa.callsOf(b.ID); na != 2 || nb != 2 {
		t.Errorf("dials %d and %d; want 2 each", na, nb)
	}
	e.fa.failing(a.ID, agents.ErrNoSession)
	for i := range 3 {
		c := e.dialTCP(t)
		roundTrip(t, c, "again "+string(rune('0'+i)))
		c.Close()
	}
	if nb := e.fa.callsOf(b.ID); nb != 5 {
		t.Errorf("b dialed %d times; want 5 (every connection once a's session is gone)", nb)
	}

	// HTTP: a pool on plain.example.com; a member-less endpoint claims it.
	p := e.endpoint("pa", protoHTTP, "plain.example.com", "")
	p.PoolingEnabled = true
	e.bind(p)
	intruder := e.endpoint("solo", protoHTTP, "plain.example.com", "")
	e.bind(intruder)
	before := e.fa.callsOf(intruder.ID)
	if res := e.mustGet(t, false, "plain.example.com", "/x"); res.status != 200 {
		t.Fatalf("the pool with an endpoint without pooling on its host: %d %q", res.status, res.body)
	}
	if e.fa.callsOf(intruder.ID) != before || e.fa.callsOf(p.ID) == 0 {
		t.Errorf("the request went to the endpoint without pooling")
	}
	e.unbind(intruder.ID)
	if res := e.mustGet(t, false, "plain.example.com", "/x"); res.status != 200 {
		t.Errorf("the pool once the other endpoint is gone: %d %q", res.status, res.body)
	}
}

// TestEndpointPoolRetry: a request whose stream to a member opened and
// then broke before any answer (the member's session died under it) is
// sent to the next member when it has no body and an idempotent method,
// and answered; with every member broken it is tried on each once, then
// 502; a request with a body is never sent twice.
func TestEndpointPoolRetry(t *testing.T) {
	e := newEpEnv(t, nil)
	member := func(id string, created time.Time) agents.Endpoint {
		ep := e.endpoint(id, protoHTTP, "plain.example.com", "")
		ep.PoolingEnabled, ep.CreatedAt = true, created
		return ep
	}
	a, b := member("a", time.Unix(1, 0)), member("b", time.Unix(2, 0))
	e.bind(a)
	e.bind(b)
	e.fa.breaking(a.ID)
	for i := 0; i < 6 || e.fa.callsOf(a.ID) == 0; i++ {
		if i == 8 {
			t.Fatal("no request went to the broken member")
		}
		if res := e.mustGet(t, false, "plain.example.com", "/x"); res.status != 200 {
			t.Fatalf("request %d with a broken member: %d %q; want the other member's answer", i, res.status, res.body)
		}
	}
	if !strings.Contains(e.logs.String(), "failed a request before answering; sending it to the next") {
		t.Errorf("the log does not say the request was sent again:\n%s", e.logs.String())
	}

	e.fa.breaking(b.ID)
	before := len(e.fa.calls())
	if res := e.mustGet(t, false, "plain.example.com", "/x"); res.status != 502 {
		t.Errorf("GET with every member broken: %d %q; want 502", res.status, res.body)
	}
	if n := len(e.fa.calls()) - before; n != 2 {
		t.Errorf("GET with every member broken dialed %d streams; want 2 (each member once)", n)
	}
	before = len(e.fa.calls())
	req, err := http.NewRequest(http.MethodPost, e.plainURL+"/x", strings.NewReader("a body"))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "plain.example.com"
	res, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 502 {
		t.Errorf("POST with every member broken: %d; want 502", res.StatusCode)
	}
	if n := len(e.fa.calls()) - before; n != 1 {
		t.Errorf("POST dialed %d streams; want 1 (a request with a body is not sent again)", n)
	}
}
