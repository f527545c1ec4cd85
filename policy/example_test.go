package policy_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"time"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/policy"
)

var now = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

func request(clientIP string) *policy.Request {
	return &policy.Request{
		Method: "GET", Scheme: "https", Host: "app.example.com", Path: "/orders",
		Header: http.Header{"User-Agent": {"example/1.0"}},
		Conn:   policy.Conn{ClientAddr: netip.MustParseAddrPort(clientIP + ":50000")},
		Time:   now,
	}
}

// A policy that denies clients from a CIDR range.
func Example_denyByCIDR() {
	engine, err := policy.NewEngine(policy.Options{})
	if err != nil {
		panic(err)
	}
	p, err := engine.CompileJSON([]byte(`{
	  "inbound": [{
	    "name": "block internal ranges",
	    "expressions": ["inCidrRanges(conn.client_ip, ['10.0.0.0/8', '192.168.0.0/16'])"],
	    "actions": [{"type": "deny"}]
	  }]
	}`), policy.CompileOptions{})
	if err != nil {
		panic(err)
	}
	for _, ip := range []string{"10.1.2.3", "203.0.113.5"} {
		res := p.Inbound(request(ip))
		fmt.Println(ip, res.Verdict, res.StatusCode)
	}
	// Output:
	// 10.1.2.3 respond 403
	// 203.0.113.5 continue 0
}

// A policy that rate-limits each client IP to two requests a minute.
func Example_rateLimitByClientIP() {
	engine, err := policy.NewEngine(policy.Options{})
	if err != nil {
		panic(err)
	}
	p, err := engine.CompileJSON([]byte(`{
	  "on_http_request": [{
	    "actions": [{"type": "rate-limit", "config": {
	      "name": "per client", "algorithm": "sliding_window",
	      "capacity": 2, "rate": "60s", "bucket_key": ["conn.client_ip"]}}]
	  }]
	}`), policy.CompileOptions{Scope: "edghtsrt_123"})
	if err != nil {
		panic(err)
	}
	for i := 1; i <= 3; i++ {
		res := p.Inbound(request("203.0.113.5"))
		fmt.Println(i, res.Verdict, res.StatusCode)
		if ra := res.Header.Get("Retry-After"); ra != "" {
			// Whole seconds, rounded up, never more than the rate.
			fmt.Println("retry-after", ra)
		}
	}
	// Another client has its own bucket.
	res := p.Inbound(request("203.0.113.6"))
	fmt.Println("other", res.Verdict)
	// Output:
	// 1 continue 0
	// 2 continue 0
	// 3 respond 429
	// retry-after 60
	// other continue
}

// A policy that adds request headers built with ${...} templates.
func Example_addHeaders() {
	engine, err := policy.NewEngine(policy.Options{})
	if err != nil {
		panic(err)
	}
	p, err := engine.CompileJSON([]byte(`{
	  "inbound": [{
	    "expressions": ["req.url.path.startsWith('/orders')"],
	    "actions": [{"type": "add-headers", "config": {"headers": {
	      "X-Client-IP": "${conn.client_ip}",
	      "X-Route": "orders ${req.method} ${req.url.path}"}}}]
	  }]
	}`), policy.CompileOptions{})
	if err != nil {
		panic(err)
	}
	res := p.Inbound(request("203.0.113.5"))
	for _, e := range res.HeaderEdits {
		fmt.Printf("%s: %s\n", e.Name, e.Value)
	}
	// Output:
	// x-client-ip: 203.0.113.5
	// x-route: orders GET /orders
}

// Compile errors list every problem with its location.
func ExampleEngine_Compile_errors() {
	engine, err := policy.NewEngine(policy.Options{})
	if err != nil {
		panic(err)
	}
	_, err = engine.CompileJSON([]byte(`{
	  "on_http_request": [
	    {"name": "bad", "expressions": ["req.method == 'GET' &&\n req.nope"], "actions": [{"type": "deny", "config": {"status_code": 200}}]},
	    {"actions": [{"type": "rate-limit", "config": {"name": "x", "algorithm": "sliding_window", "capacity": 5, "rate": "65s", "bucket_key": ["conn.client_ip"]}}]}
	  ]
	}`), policy.CompileOptions{})
	fmt.Println(apierr.CodeOf(err))
	for _, v := range apierr.ViolationsOf(err) {
		fmt.Println(v.Field, "=>", v.Reason)
	}
	// Output:
	// invalid argument
	// on_http_request[0].expressions[0] => rule "bad": 2:2: undeclared reference to 'req'; the variables here are req.content_length, req.content_type, req.cookies, req.headers, req.host, req.method, req.url, req.url.host, req.url.path, req.url.port, req.url.query, req.url.query_params, req.url.raw_path, req.url.scheme, req.user_agent, req.version
	// on_http_request[0].actions[0].config.status_code => rule "bad": must be between 400 and 599, got 200
	// on_http_request[1].actions[0].config.rate => must be a whole multiple of 10s, got "65s"
}

// A TLS edge's traffic policy runs once per connection and sees conn.*.
func ExamplePolicy_Connect() {
	engine, err := policy.NewEngine(policy.Options{})
	if err != nil {
		panic(err)
	}
	p, err := engine.CompileJSON([]byte(`{"on_tcp_connect": [
	  {"expressions": ["!conn.tls.sni.endsWith('.example.com')"], "actions": [{"type": "deny"}]}
	]}`), policy.CompileOptions{Target: policy.TargetConnection})
	if err != nil {
		panic(err)
	}
	for _, sni := range []string{"app.example.com", "evil.test"} {
		c := policy.Conn{ClientAddr: netip.MustParseAddrPort("203.0.113.5:4000"), TLS: &policy.TLSInfo{ServerName: sni}}
		fmt.Println(sni, p.Connect(&c, now).Verdict)
	}
	b, _ := p.MarshalJSON()
	fmt.Println(string(b))
	// Output:
	// app.example.com continue
	// evil.test close
	// {"on_tcp_connect":[{"expressions":["!conn.tls.sni.endsWith('.example.com')"],"actions":[{"type":"deny"}]}]}
}

// Handler runs a policy around a net/http handler.
func ExamplePolicy_Handler() {
	engine, err := policy.NewEngine(policy.Options{Clock: func() time.Time { return now }})
	if err != nil {
		panic(err)
	}
	p, err := engine.CompileJSON([]byte(`{
	  "on_http_request": [{"expressions": ["req.method == 'DELETE'"], "actions": [{"type": "deny", "config": {"status_code": 405}}]}],
	  "on_http_response": [{"actions": [{"type": "add-headers", "config": {"headers": {"x-upstream-status": "${res.status_code}"}}}]}]
	}`), policy.CompileOptions{})
	if err != nil {
		panic(err)
	}
	h := p.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	for _, m := range []string{"GET", "DELETE"} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(m, "/", nil))
		fmt.Println(m, w.Code, w.Header().Get("X-Upstream-Status"), w.Body.String())
	}
	// Output:
	// GET 200 200 ok
	// DELETE 405
}
