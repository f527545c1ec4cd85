package proxy

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/memstore"
)

// absent marks a header that must not be in a response.
const absent = "<absent>"

// TestActions runs each built-in traffic policy action on a route and
// observes it from a real HTTP client through the Handler: status,
// headers, body, what reached the upstream, and the action the metrics
// count.
func TestActions(t *testing.T) {
	type request struct {
		from   string // client address; "" is 127.0.0.1
		path   string
		header []string
	}
	tests := []struct {
		name       string
		doc        string
		req        request
		status     int
		header     map[string]string // first value, or absent
		body       string            // substring of the body
		reached    bool              // whether the upstream saw the request
		upstream   func(t *testing.T, s seen)
		action     string // the action label of the request in the metrics
		logContain string
	}{
		{
			name:   "deny: 403 and no body by default",
			doc:    `{"inbound":[{"actions":[{"type":"deny"}]}]}`,
			req:    request{path: "/x"},
			status: 403, action: "deny",
		},
		{
			name: "deny: the status of the config when the expression holds",
			doc: `{"inbound":[{"name":"no admin","expressions":["req.url.path.startsWith('/admin')"],
				"actions":[{"type":"deny","config":{"status_code":451}}]}]}`,
			req:    request{path: "/admin/users"},
			status: 451, action: "deny",
		},
		{
			name: "deny: a request the expression does not match passes",
			doc: `{"inbound":[{"expressions":["req.url.path.startsWith('/admin')"],
				"actions":[{"type":"deny","config":{"status_code":451}}]}]}`,
			req:    request{path: "/public"},
			status: 200, reached: true, body: "upstream a /public",
		},
		{
			name: "custom-response: templated body and headers",
			doc: `{"inbound":[{"actions":[{"type":"custom-response","config":{"status_code":418,
				"body":"no coffee at ${req.url.path}","headers":{"content-type":"text/plain","x-why":"teapot for ${conn.client_ip}"}}}]}]}`,
			req:    request{path: "/brew"},
			status: 418, body: "no coffee at /brew",
			header: map[string]string{"Content-Type": "text/plain", "X-Why": "teapot for 127.0.0.1"},
			action: "custom-response",
		},
		{
			name:   "redirect: every request, with the status of the config",
			doc:    `{"inbound":[{"actions":[{"type":"redirect","config":{"to":"https://example.com${req.url.path}","status_code":301}}]}]}`,
			req:    request{path: "/moved"},
			status: 301, header: map[string]string{"Location": "https://example.com/moved"},
			action: "redirect",
		},
		{
			name:   "redirect: from with capture groups",
			doc:    `{"inbound":[{"actions":[{"type":"redirect","config":{"from":"^https?://[^/]+/old/(.*)$","to":"/new/$1"}}]}]}`,
			req:    request{path: "/old/page?x=1"},
			status: 302, header: map[string]string{"Location": "/new/page?x=1"},
			action: "redirect",
		},
		{
			name:   "redirect: from that does not match lets the request through",
			doc:    `{"inbound":[{"actions":[{"type":"redirect","config":{"from":"^https?://[^/]+/old/(.*)$","to":"/new/$1"}}]}]}`,
			req:    request{path: "/current"},
			status: 200, reached: true,
		},
		{
			name:   "url-rewrite: the upstream sees the new path and query",
			doc:    `{"inbound":[{"actions":[{"type":"url-rewrite","config":{"from":"/v1/([a-z]+)\\?id=(\\d+)","to":"/api/v2/$1/$2?src=v1"}}]}]}`,
			req:    request{path: "/v1/users?id=7"},
			status: 200, reached: true, body: "upstream a /api/v2/users/7",
			upstream: func(t *testing.T, s seen) {
				if s.Path != "/api/v2/users/7" || s.RawQuery != "src=v1" {
					t.Errorf("upstream saw %s?%s", s.Path, s.RawQuery)
				}
			},
		},
		{
			name:   "add-headers: the upstream sees them",
			doc:    `{"inbound":[{"actions":[{"type":"add-headers","config":{"headers":{"x-client-ip":"${conn.client_ip}","x-added":"yes"}}}]}]}`,
			req:    request{path: "/h"},
			status: 200, reached: true,
			upstream: func(t *testing.T, s seen) {
				if s.Header.Get("X-Client-Ip") != "127.0.0.1" || s.Header.Get("X-Added") != "yes" {
					t.Errorf("upstream headers: %v", s.Header)
				}
			},
		},
		{
			name:   "remove-headers: the upstream does not see them",
			doc:    `{"inbound":[{"actions":[{"type":"remove-headers","config":{"headers":["x-internal"]}}]}]}`,
			req:    request{path: "/h", header: []string{"X-Internal: secret", "X-Kept: 1"}},
			status: 200, reached: true,
			upstream: func(t *testing.T, s seen) {
				if _, ok := s.Header["X-Internal"]; ok || s.Header.Get("X-Kept") != "1" {
					t.Errorf("upstream headers: %v", s.Header)
				}
			},
		},
		{
			name:   "restrict-ips: an allowed client passes",
			doc:    `{"inbound":[{"actions":[{"type":"restrict-ips","config":{"allow":["127.0.0.1/32"]}}]}]}`,
			req:    request{path: "/ip"},
			status: 200, reached: true,
		},
		{
			name:   "restrict-ips: a client outside allow gets 403",
			doc:    `{"inbound":[{"actions":[{"type":"restrict-ips","config":{"allow":["127.0.0.1/32"]}}]}]}`,
			req:    request{from: "127.0.0.2", path: "/ip"},
			status: 403, action: "restrict-ips",
		},
		{
			name:   "restrict-ips: a denied client gets 403",
			doc:    `{"inbound":[{"actions":[{"type":"restrict-ips","config":{"deny":["127.0.0.2"]}}]}]}`,
			req:    request{from: "127.0.0.2", path: "/ip"},
			status: 403, action: "restrict-ips",
		},
		{
			name: "restrict-ips: X-Forwarded-For is not believed without trusted proxies",
			doc:  `{"inbound":[{"actions":[{"type":"restrict-ips","config":{"allow":["203.0.113.0/24"]}}]}]}`,
			req:  request{path: "/ip", header: []string{"X-Forwarded-For: 203.0.113.9"}},
			// The peer, 127.0.0.1, is the client: refused.
			status: 403, action: "restrict-ips",
		},
		{
			name:   "log: the entry reaches the logger and the request passes",
			doc:    `{"inbound":[{"name":"audit","actions":[{"type":"log","config":{"metadata":{"seen_path":"${req.url.path}","who":"${conn.client_ip}"}}}]}]}`,
			req:    request{path: "/logged"},
			status: 200, reached: true, logContain: "seen_path=/logged",
		},
		{
			name: "outbound add-headers: on the response, seeing res.*",
			doc: `{"outbound":[{"expressions":["res.status_code == 200 && hasResHeader('x-upstream')"],
				"actions":[{"type":"add-headers","config":{"headers":{"x-res":"${string(res.status_code)} from ${getResHeader('x-upstream')[0]}"}}}]}]}`,
			req:    request{path: "/o"},
			status: 200, reached: true, header: map[string]string{"X-Res": "200 from a"},
		},
		{
			name:   "outbound remove-headers: the client does not see them",
			doc:    `{"outbound":[{"actions":[{"type":"remove-headers","config":{"headers":["x-secret"]}}]}]}`,
			req:    request{path: "/o"},
			status: 200, reached: true, header: map[string]string{"X-Secret": absent, "X-Upstream": "a"},
		},
		{
			name: "outbound custom-response: replaces the upstream's error",
			doc: `{"outbound":[{"expressions":["res.status_code >= 500"],
				"actions":[{"type":"custom-response","config":{"status_code":503,"body":"sorry, try later","headers":{"content-type":"text/plain"}}}]}]}`,
			req:    request{path: "/status/500"},
			status: 503, reached: true, body: "sorry, try later",
			header: map[string]string{"X-Upstream": absent, "Content-Type": "text/plain", "Content-Length": "16"},
			action: "custom-response",
		},
		{
			name:   "outbound custom-response: replaces a large streamed body",
			doc:    `{"outbound":[{"expressions":["res.status_code == 200"],"actions":[{"type":"custom-response","config":{"body":"replaced"}}]}]}`,
			req:    request{path: "/text"},
			status: 200, reached: true, body: "replaced", header: map[string]string{"Content-Length": "8"},
			action: "custom-response",
		},
		{
			name: "outbound rules see the inbound result variables",
			doc: `{"inbound":[{"actions":[{"type":"rate-limit","config":{"name":"count","algorithm":"sliding_window","capacity":10,"rate":"60s","bucket_key":["conn.client_ip"],"enforce":false}}]}],
				"outbound":[{"actions":[{"type":"add-headers","config":{"headers":{"x-limited":"${string(actions.service.rate_limit.limited)}","x-key":"${actions.service.rate_limit.bucket_key}"}}}]}]}`,
			req:    request{path: "/o"},
			status: 200, reached: true, header: map[string]string{"X-Limited": "false", "X-Key": "127.0.0.1"},
		},
		{
			name: "on_http_request and on_http_response phase names",
			doc: `{"on_http_request":[{"actions":[{"type":"add-headers","config":{"headers":{"x-in":"1"}}}]}],
				"on_http_response":[{"actions":[{"type":"add-headers","config":{"headers":{"x-out":"1"}}}]}]}`,
			req:    request{path: "/o"},
			status: 200, reached: true, header: map[string]string{"X-Out": "1"},
			upstream: func(t *testing.T, s seen) {
				if s.Header.Get("X-In") != "1" {
					t.Errorf("upstream headers: %v", s.Header)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, a, up := standalone(t, tc.doc, siteOptions{})
			var c *http.Client
			if tc.req.from != "" {
				c = client(tc.req.from)
			}
			res := s.do(c, a.host, "GET", tc.req.path, tc.req.header...)
			if res.status != tc.status {
				t.Errorf("status %d, want %d (body %q)", res.status, tc.status, res.body)
			}
			if tc.status == 403 && res.body != "" {
				t.Errorf("deny body %q, want none", res.body)
			}
			if !strings.Contains(res.body, tc.body) {
				t.Errorf("body %q, want it to contain %q", res.body, tc.body)
			}
			for k, want := range tc.header {
				got, ok := res.header[k]
				switch {
				case want == absent && ok:
					t.Errorf("header %s: %q, want none", k, got)
				case want != absent && (!ok || got[0] != want):
					t.Errorf("header %s: %q, want %q", k, got, want)
				}
			}
			reqs := up.requests()
			if reached := len(reqs) > 0; reached != tc.reached {
				t.Errorf("reached the upstream: %v, want %v", reached, tc.reached)
			}
			if tc.upstream != nil && len(reqs) > 0 {
				tc.upstream(t, reqs[len(reqs)-1])
			}
			class := statusClass(tc.status)
			if got := s.metric("edgeplane_proxy_requests_total", "edge="+a.edge, "route="+a.route, "action="+tc.action, "code="+class); got != 1 {
				t.Errorf("requests_total{action=%q,code=%q} = %v, want 1", tc.action, class, got)
			}
			if tc.logContain != "" && !strings.Contains(s.logs.String(), tc.logContain) {
				t.Errorf("log lacks %q:\n%s", tc.logContain, s.logs)
			}
		})
	}
}

// TestRequestLog checks the log line of requests: one the policy
// answered and one the upstream answered, with the operation's account,
// edge, route and tunnel.
func TestRequestLog(t *testing.T) {
	s, a, _ := standalone(t, `{"inbound":[{"expressions":["req.url.path == '/no'"],"actions":[{"type":"deny","config":{"status_code":404}}]}]}`, siteOptions{})
	tn := s.edgeTunnel(a)
	a.get("/no")
	a.get("/yes")
	s.do(nil, "nobody.example.com:443", "GET", "/lost")
	logs := s.logs.String()
	for _, want := range []string{
		`msg=request method=GET host=app.example.com:443 path=/no client_ip=127.0.0.1 status=404 bytes=0 duration=`,
		` account=` + a.p.AccountID + ` edge=` + a.edge + ` route=` + a.route + ` policy_action=deny policy_location=inbound[0].actions[0]`,
		`msg=request method=GET host=app.example.com:443 path=/yes client_ip=127.0.0.1 status=200 bytes=15 duration=`,
		` account=` + a.p.AccountID + ` edge=` + a.edge + ` route=` + a.route + ` tunnel=` + tn + "\n",
		`msg=request method=GET host=nobody.example.com:443 path=/lost client_ip=127.0.0.1 status=404 bytes=25 duration=`,
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("log lacks %q:\n%s", want, logs)
		}
	}
	for line := range strings.SplitSeq(logs, "\n") {
		if strings.Contains(line, "path=/no ") && strings.Contains(line, "tunnel=") {
			t.Errorf("a request the policy answered names a tunnel: %s", line)
		}
	}
}

// edgeTunnel returns the ID of the one tunnel of the app's backend.
func (s *site) edgeTunnel(a *app) string {
	s.t.Helper()
	e := s.cfgs.Edge(a.p.AccountID, a.edge)
	if e == nil || len(e.Tunnels[a.backend]) != 1 {
		s.t.Fatalf("want one tunnel of backend %s, edge %+v", a.backend, e)
	}
	return e.Tunnels[a.backend][0].ID
}

// TestConnVariables: conn.* describe the client's connection to the
// proxy; req.host is the Host header.
func TestConnVariables(t *testing.T) {
	s, a, up := standalone(t, `{"inbound":[{"actions":[{"type":"add-headers","config":{"headers":{
		"x-conn":"${conn.client_ip} ${conn.server_ip}:${string(conn.server_port)} ${req.url.scheme} ${req.host}",
		"x-endpoint":"${endpoint.edge_id} ${endpoint.route_id}"}}}]}],
		"outbound":[{"actions":[{"type":"add-headers","config":{"headers":{"x-endpoint":"${endpoint.edge_id} ${endpoint.route_id}"}}}]}]}`, siteOptions{})
	res := a.get("/")
	server := strings.TrimPrefix(s.url, "http://")
	got := up.last(t)
	if got, want := got.Header.Get("X-Conn"), "127.0.0.1 "+server+" http app.example.com:443"; got != want {
		t.Errorf("X-Conn %q, want %q", got, want)
	}
	want := a.edge + " " + a.route
	if got := got.Header.Get("X-Endpoint"); got != want {
		t.Errorf("inbound: endpoint.edge_id and route_id %q, want %q", got, want)
	}
	if got := res.header.Get("X-Endpoint"); got != want {
		t.Errorf("outbound: endpoint.edge_id and route_id %q, want %q", got, want)
	}
}

// TestPolicyTime checks where a policy's time.now comes from: the
// Handler's Clock when set, else the request's arrival, never the
// engine's own clock (the Service's, here stuck in 2000, so a policy
// reading it would tell).
func TestPolicyTime(t *testing.T) {
	ctx := t.Context()
	st := memstore.New()
	svc, err := edgeplane.New(st, edgeplane.Options{Clock: func() time.Time { return time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close(ctx)
	s := &site{t: t, ctx: ctx, st: st, svc: svc}
	p := s.account("acme")
	s.domain(p, "app.example.com")
	e, err := svc.CreateHTTPSEdge(ctx, p, edges.CreateEdgeParams{Hostports: []string{"app.example.com:443"}})
	s.check(err)
	r, err := svc.CreateHTTPSEdgeRoute(ctx, p, e.ID, edges.CreateRouteParams{MatchType: edges.MatchPathPrefix, Match: "/"})
	s.check(err)
	_, err = svc.ReplaceHTTPSRouteTrafficPolicy(ctx, p, e.ID, r.ID, edges.TrafficPolicyParams{Value: `{"inbound":[{"actions":[{"type":"custom-response",
		"config":{"status_code":200,"body":"${string(time.now)}"}}]}]}`})
	s.check(err)
	cfgs, err := New(ctx, svc.Host().DataPlane(), st, Options{})
	s.check(err)
	defer cfgs.Close()

	fixed := time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		clock func() time.Time
		check func(t *testing.T, now time.Time)
	}{
		{"HandlerOptions.Clock", func() time.Time { return fixed }, func(t *testing.T, now time.Time) {
			if !now.Equal(fixed) {
				t.Errorf("time.now = %v, want the handler's clock %v", now, fixed)
			}
		}},
		{"arrival", nil, func(t *testing.T, now time.Time) {
			if d := time.Since(now); d < 0 || d > time.Minute {
				t.Errorf("time.now = %v, want the request's arrival (about now)", now)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := NewHandler(cfgs, HandlerOptions{Clock: tc.clock})
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest("GET", "http://app.example.com:443/", nil))
			if w.Code != 200 {
				t.Fatalf("status %d, body %q", w.Code, w.Body)
			}
			now, err := time.Parse(time.RFC3339Nano, w.Body.String())
			if err != nil {
				t.Fatalf("body %q is not a timestamp: %v", w.Body, err)
			}
			tc.check(t, now)
		})
	}
}

// TestPolicyRefusedKeepsServing: a policy the Service refuses changes
// nothing; the route keeps its policy.
func TestPolicyRefusedKeepsServing(t *testing.T) {
	s, a, _ := standalone(t, `{"inbound":[{"expressions":["req.url.path == '/private'"],"actions":[{"type":"deny","config":{"status_code":401}}]}]}`, siteOptions{})
	_, err := s.svc.ReplaceHTTPSRouteTrafficPolicy(s.ctx, a.p, a.edge, a.route, edges.TrafficPolicyParams{Value: `{"inbound":[{"actions":[{"type":"deny","config":{"status_code":200}}]}]}`})
	if err == nil {
		t.Fatal("the Service accepted a deny with status 200")
	}
	s.sync()
	if res := a.get("/private"); res.status != 401 {
		t.Errorf("after a refused policy: %d, want 401", res.status)
	}
	if res := a.get("/public"); res.status != 200 {
		t.Errorf("after a refused policy, another path: %d, want 200", res.status)
	}
}
