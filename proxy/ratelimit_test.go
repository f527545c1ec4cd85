package proxy

import (
	"strconv"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/edges"
)

const rateLimitPolicy = `{"inbound":[{"name":"per client","actions":[{"type":"rate-limit","config":{
	"name":"per-client","algorithm":"sliding_window","capacity":5,"rate":"60s","bucket_key":["conn.client_ip"]}}]}]}`

// TestRateLimit: capacity 5 per 60s keyed on conn.client_ip. Exactly 5
// requests from one client pass, the 6th gets 429 with retry-after,
// another client is unaffected, and once the injected clock has moved by
// retry-after the first client passes again. The metrics count the
// refusals under action rate-limit.
//
// retry-after is checked against 1 to 60 (the window), wherever in the
// limiter's 6s slot the burst lands: see TestRateLimitRetryAfterWithinWindow.
func TestRateLimit(t *testing.T) {
	s, a, up := standalone(t, rateLimitPolicy, siteOptions{})
	one, two := client("127.0.0.1"), client("127.0.0.2")

	for i := 1; i <= 5; i++ {
		if res := s.do(one, a.host, "GET", "/r"); res.status != 200 {
			t.Fatalf("request %d: %d %q, want 200", i, res.status, res.body)
		}
	}
	res := s.do(one, a.host, "GET", "/r")
	if res.status != 429 {
		t.Fatalf("request 6: %d, want 429", res.status)
	}
	retry, err := strconv.Atoi(res.header.Get("Retry-After"))
	if err != nil || retry < 1 || retry > 60 {
		t.Fatalf("retry-after %q, want 1 to 60", res.header.Get("Retry-After"))
	}
	if n := len(up.requests()); n != 5 {
		t.Errorf("the upstream got %d requests, want 5", n)
	}

	for i := 1; i <= 5; i++ {
		if res := s.do(two, a.host, "GET", "/r"); res.status != 200 {
			t.Fatalf("other client, request %d: %d, want 200", i, res.status)
		}
	}
	if res := s.do(two, a.host, "GET", "/r"); res.status != 429 {
		t.Errorf("other client, request 6: %d, want 429", res.status)
	}

	// Halfway to retry-after the five requests still count.
	half := time.Duration(retry) * time.Second / 2
	if retry > 2 {
		s.clock.Advance(half)
		if res := s.do(one, a.host, "GET", "/r"); res.status != 429 {
			t.Errorf("%v later: %d, want 429", half, res.status)
		}
	} else {
		half = 0
	}
	// retry-after is counted from the refusal.
	s.clock.Advance(time.Duration(retry)*time.Second - half)
	if res := s.do(one, a.host, "GET", "/r"); res.status != 200 {
		t.Errorf("after retry-after (%ds): %d, want 200", retry, res.status)
	}

	limited, passed := 2.0, 11.0
	if half > 0 {
		limited = 3
	}
	if got := s.metric("edgeplane_proxy_requests_total", "edge="+a.edge, "route="+a.route, "action=rate-limit", "code=4xx"); got != limited {
		t.Errorf("requests_total{action=rate-limit,code=4xx} = %v, want %v", got, limited)
	}
	if got := s.metric("edgeplane_proxy_requests_total", "edge="+a.edge, "route="+a.route, "code=2xx"); got != passed {
		t.Errorf("requests_total{action=\"\",code=2xx} = %v, want %v", got, passed)
	}
}

// TestRateLimitSurvivesReload: a change to the route (here its response
// headers module) compiles the edge's config again, traffic policy
// included; the limiter's counts are kept.
func TestRateLimitSurvivesReload(t *testing.T) {
	s, a, _ := standalone(t, rateLimitPolicy, siteOptions{})
	for i := 1; i <= 5; i++ {
		if res := a.get("/"); res.status != 200 {
			t.Fatalf("request %d: %d", i, res.status)
		}
	}
	policyBefore := s.cfgs.Edge(a.p.AccountID, a.edge).Config.Routes[0].TrafficPolicy
	_, err := s.svc.ReplaceHTTPSRouteResponseHeaders(s.ctx, a.p, a.edge, a.route, edges.ResponseHeadersParams{Add: map[string]string{"x-reloaded": "1"}})
	s.check(err)
	s.sync()
	if s.cfgs.Edge(a.p.AccountID, a.edge).Config.Routes[0].TrafficPolicy == policyBefore {
		t.Fatal("the policy was not compiled again: the test proves nothing")
	}
	res := a.get("/")
	retry, err := strconv.Atoi(res.header.Get("Retry-After"))
	if res.status != 429 || err != nil {
		t.Fatalf("after a reload: %d, retry-after %q; want 429", res.status, res.header.Get("Retry-After"))
	}
	s.clock.Advance(time.Duration(retry) * time.Second)
	if res := a.get("/"); res.status != 200 || res.header.Get("X-Reloaded") != "1" {
		t.Errorf("a window later: %d %v", res.status, res.header)
	}

	// The same policy put again (a new policy document, same route) keeps
	// counting too.
	for i := 2; i <= 5; i++ {
		if res := a.get("/"); res.status != 200 {
			t.Fatalf("second window, request %d: %d", i, res.status)
		}
	}
	a.policy(rateLimitPolicy)
	if res := a.get("/"); res.status != 429 {
		t.Errorf("after the policy was put again: %d, want 429", res.status)
	}
}

// TestRateLimitRetryAfterWithinWindow: the 6th request's retry-after is
// between 1 and 60 with capacity 5 per 60s, wherever in the limiter's 6s
// slot the burst lands.
func TestRateLimitRetryAfterWithinWindow(t *testing.T) {
	for _, offset := range []time.Duration{0, time.Second, 3 * time.Second, 5900 * time.Millisecond} {
		t.Run(offset.String(), func(t *testing.T) {
			t.Parallel()
			s, a, _ := standalone(t, rateLimitPolicy, siteOptions{})
			s.clock.Advance(offset)
			for range 5 {
				a.get("/")
			}
			res := a.get("/")
			if retry, err := strconv.Atoi(res.header.Get("Retry-After")); res.status != 429 || err != nil || retry < 1 || retry > 60 {
				t.Errorf("%d, retry-after %q; want 429 and 1 to 60", res.status, res.header.Get("Retry-After"))
			}
		})
	}
}
