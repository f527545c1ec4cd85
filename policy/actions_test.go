package policy

import (
	"errors"
	"net/http"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane/policy/limits"
)

type runCase struct {
	name      string
	target    Target
	phase     Phase
	doc       string
	req       func(*Request)
	want      Result
	wantLogs  []map[string]string
	wantErrs  []string // substrings of sink errors, in order
	resolver  IPPolicyResolver
	checkVars func(t *testing.T, e *Engine, r Result)
}

func TestActionsRun(t *testing.T) {
	tests := []runCase{
		{name: "log renders metadata", doc: `{"inbound":[{"name":"audit","actions":[{"type":"log","config":{"metadata":{
				"who":"${conn.client_ip}:${conn.client_port}","what":"${req.method} ${req.url.path}","n":"${req.content_length + 1}","lit":"plain"}}}]}]}`,
			wantLogs: []map[string]string{{"who": "198.51.100.10:40000", "what": "POST /v1/users/42", "n": "124", "lit": "plain"}}},
		{name: "log without config", doc: `{"inbound":[{"actions":[{"type":"log"}]}]}`, wantLogs: []map[string]string{{}}},
		{name: "log in a connection policy", target: TargetConnection, doc: `{"on_tcp_connect":[{"actions":[{"type":"log","config":{"metadata":{"sni":"${conn.tls.sni}"}}}]}]}`,
			wantLogs: []map[string]string{{"sni": "api.example.com"}}},
		{name: "template runtime error renders empty", doc: `{"inbound":[{"name":"l","actions":[{"type":"log","config":{"metadata":{"k":"[${req.headers['nope'][0]}]"}}}]}]}`,
			wantLogs: []map[string]string{{"k": "[]"}},
			wantErrs: []string{`inbound[0].actions[0].config.metadata["k"] (rule "l"): template expression at byte 1: no such key: nope`}},
		{name: "deny default", doc: `{"inbound":[{"actions":[{"type":"deny"}]}]}`,
			want: Result{Verdict: Respond, StatusCode: 403, Location: "inbound[0].actions[0]"}},
		{name: "deny status", doc: `{"inbound":[{"expressions":["req.method == 'POST'"],"actions":[{"type":"deny","config":{"status_code":451}}]}]}`,
			want: Result{Verdict: Respond, StatusCode: 451, Location: "inbound[0].actions[0]"}},
		{name: "deny not applying", doc: `{"inbound":[{"expressions":["req.method == 'GET'"],"actions":[{"type":"deny"}]}]}`},
		{name: "deny on a connection closes", target: TargetConnection, doc: `{"inbound":[{"actions":[{"type":"deny"}]}]}`,
			want: Result{Verdict: Close, Location: "inbound[0].actions[0]"}},
		{name: "deny outbound", phase: Outbound, doc: `{"outbound":[{"expressions":["res.status_code >= 500"],"actions":[{"type":"deny","config":{"status_code":503}}]}]}`,
			want: Result{Verdict: Respond, StatusCode: 503, Location: "outbound[0].actions[0]"}},
		{name: "rules run in order", doc: `{"inbound":[
				{"actions":[{"type":"log","config":{"metadata":{"n":"1"}}}]},
				{"expressions":["false"],"actions":[{"type":"deny"}]},
				{"actions":[{"type":"log","config":{"metadata":{"n":"3"}}},{"type":"deny","config":{"status_code":404}}]},
				{"actions":[{"type":"log","config":{"metadata":{"n":"4"}}}]}]}`,
			want:     Result{Verdict: Respond, StatusCode: 404, Location: "inbound[2].actions[1]"},
			wantLogs: []map[string]string{{"n": "1"}, {"n": "3"}}},
		{name: "custom-response", doc: `{"inbound":[{"actions":[{"type":"custom-response","config":{
				"status_code":418,"body":"hello ${req.host}","headers":{"Content-Type":"text/plain","X-Path":"${req.url.path}"}}}]}]}`,
			want: Result{Verdict: Respond, StatusCode: 418, Body: "hello api.example.com:8443",
				Header: http.Header{"Content-Type": {"text/plain"}, "X-Path": {"/v1/users/42"}}, Location: "inbound[0].actions[0]"}},
		{name: "custom-response defaults", doc: `{"inbound":[{"actions":[{"type":"custom-response"}]}]}`,
			want: Result{Verdict: Respond, StatusCode: 200, Location: "inbound[0].actions[0]"}},
		{name: "custom-response header value sanitised", doc: `{"inbound":[{"actions":[{"type":"custom-response","config":{"headers":{"x":"${getReqHeader('x-evil')[0]}"}}}]}]}`,
			req:  func(r *Request) { r.Header["X-Evil"] = []string{"a\r\nSet-Cookie: b"} },
			want: Result{Verdict: Respond, StatusCode: 200, Header: http.Header{"X": {"a  Set-Cookie: b"}}, Location: "inbound[0].actions[0]"}},
		{name: "custom-response outbound", phase: Outbound, doc: `{"outbound":[{"expressions":["res.status_code == 502"],"actions":[{"type":"custom-response","config":{"status_code":503,"body":"down"}}]}]}`,
			want: Result{Verdict: Respond, StatusCode: 503, Body: "down", Location: "outbound[0].actions[0]"}},
		{name: "add-headers inbound, seen by later rules", doc: `{"inbound":[
				{"actions":[{"type":"add-headers","config":{"headers":{"X-Client":"${conn.client_ip}","x-b":"1"}}}]},
				{"expressions":["getReqHeader('x-client') == ['198.51.100.10'] && req.headers['x-b'][0] == '1'"],"actions":[{"type":"deny","config":{"status_code":409}}]}]}`,
			want: Result{Verdict: Respond, StatusCode: 409, Location: "inbound[1].actions[0]",
				HeaderEdits: []HeaderEdit{{Name: "x-b", Value: "1"}, {Name: "x-client", Value: "198.51.100.10"}}}},
		{name: "add-headers appends", doc: `{"inbound":[{"actions":[{"type":"add-headers","config":{"headers":{"accept":"c"}}}]},
				{"expressions":["req.headers['accept'] == ['a', 'b', 'c']"],"actions":[{"type":"log","config":{"metadata":{"ok":"yes"}}}]}]}`,
			want:     Result{HeaderEdits: []HeaderEdit{{Name: "accept", Value: "c"}}},
			wantLogs: []map[string]string{{"ok": "yes"}}},
		{name: "add-headers outbound", phase: Outbound, doc: `{"outbound":[{"actions":[{"type":"add-headers","config":{"headers":{"x-status":"${res.status_code}"}}}]},
				{"expressions":["res.headers['x-status'] == ['502']"],"actions":[{"type":"log"}]}]}`,
			want:     Result{HeaderEdits: []HeaderEdit{{Name: "x-status", Value: "502"}}},
			wantLogs: []map[string]string{{}}},
		{name: "remove-headers, seen by later rules", doc: `{"inbound":[{"actions":[{"type":"remove-headers","config":{"headers":["X-API-KEY","accept"]}}]},
				{"expressions":["!hasReqHeader('x-api-key') && !('accept' in req.headers) && req.headers.size() == 2"],"actions":[{"type":"log"}]}]}`,
			want:     Result{HeaderEdits: []HeaderEdit{{Remove: true, Name: "x-api-key"}, {Remove: true, Name: "accept"}}},
			wantLogs: []map[string]string{{}}},
		{name: "the request is not modified", doc: `{"inbound":[{"actions":[{"type":"add-headers","config":{"headers":{"x-a":"1"}}},{"type":"remove-headers","config":{"headers":["accept"]}}]}]}`,
			want: Result{HeaderEdits: []HeaderEdit{{Name: "x-a", Value: "1"}, {Remove: true, Name: "accept"}}}},
		{name: "redirect with capture groups", doc: `{"inbound":[{"actions":[{"type":"redirect","config":{
				"from":"^https://api\\.example\\.com:8443/v1/(users)/([0-9]+)","to":"https://new.example.com/v2/$1/$2-$$${req.method}","status_code":301}}]}]}`,
			want: Result{Verdict: Respond, StatusCode: 301, Header: http.Header{"Location": {"https://new.example.com/v2/users/42-$POST?a=1&a=2&b=x%20y"}},
				Location: "inbound[0].actions[0]"}},
		{name: "redirect not matching", doc: `{"inbound":[{"actions":[{"type":"redirect","config":{"from":"^http://","to":"https://"}},{"type":"log"}]}]}`,
			wantLogs: []map[string]string{{}}},
		{name: "redirect without from", doc: `{"inbound":[{"actions":[{"type":"redirect","config":{"to":"https://maintenance.example.com${req.url.path}"}}]}]}`,
			want: Result{Verdict: Respond, StatusCode: 302, Header: http.Header{"Location": {"https://maintenance.example.com/v1/users/42"}},
				Location: "inbound[0].actions[0]"}},
		{name: "redirect http to https", doc: `{"inbound":[{"actions":[{"type":"redirect","config":{"from":"^http://","to":"https://"}}]}]}`,
			req: func(r *Request) { r.Scheme = "http"; r.Host = "example.com"; r.RawQuery = "" },
			want: Result{Verdict: Respond, StatusCode: 302, Header: http.Header{"Location": {"https://example.com/v1/users/42"}},
				Location: "inbound[0].actions[0]"}},
		{name: "url-rewrite, seen by later rules", doc: `{"inbound":[{"actions":[{"type":"url-rewrite","config":{"from":"/v1/users/([0-9]+)","to":"/v2/people/$1"}}]},
				{"expressions":["req.url.path == '/v2/people/42' && req.url == 'https://api.example.com:8443/v2/people/42?a=1&a=2&b=x%20y' && getQueryParam('a').size() == 2"],"actions":[{"type":"log"}]}]}`,
			want:     Result{RewriteURI: "/v2/people/42?a=1&a=2&b=x%20y"},
			wantLogs: []map[string]string{{}}},
		{name: "url-rewrite query", doc: `{"inbound":[{"actions":[{"type":"url-rewrite","config":{"from":"\\?.*$","to":"?q=${req.method}"}}]},
				{"expressions":["getQueryParam('q') == ['POST'] && !hasQueryParam('a')"],"actions":[{"type":"log"}]}]}`,
			want:     Result{RewriteURI: "/v1/users/42?q=POST"},
			wantLogs: []map[string]string{{}}},
		{name: "url-rewrite may not change the host", doc: `{"inbound":[{"actions":[{"type":"url-rewrite","config":{"from":"^https://api\\.example\\.com:8443","to":"https://evil.example"}}]}]}`,
			wantErrs: []string{"inbound[0].actions[0]: url-rewrite may not change the scheme or host"}},
		{name: "url-rewrite not matching", doc: `{"inbound":[{"actions":[{"type":"url-rewrite","config":{"from":"/nope","to":"/x"}}]}]}`},
		{name: "restrict-ips allow", doc: `{"inbound":[{"actions":[{"type":"restrict-ips","config":{"allow":["198.51.100.0/24"]}},{"type":"log"}]}]}`,
			wantLogs: []map[string]string{{}}},
		{name: "restrict-ips not allowed", doc: `{"inbound":[{"actions":[{"type":"restrict-ips","config":{"allow":["10.0.0.0/8","192.0.2.1"]}},{"type":"log"}]}]}`,
			want: Result{Verdict: Respond, StatusCode: 403, Location: "inbound[0].actions[0]"}},
		{name: "restrict-ips deny wins", doc: `{"inbound":[{"actions":[{"type":"restrict-ips","config":{"allow":["0.0.0.0/0"],"deny":["198.51.100.10"]}}]}]}`,
			want: Result{Verdict: Respond, StatusCode: 403, Location: "inbound[0].actions[0]"}},
		{name: "restrict-ips ignores forwarded headers", doc: `{"inbound":[{"actions":[{"type":"restrict-ips","config":{"allow":["10.0.0.0/8"]}}]}]}`,
			req: func(r *Request) {
				r.Header["X-Forwarded-For"] = []string{"10.1.1.1"}
				r.Header["X-Real-Ip"] = []string{"10.1.1.1"}
			},
			want: Result{Verdict: Respond, StatusCode: 403, Location: "inbound[0].actions[0]"}},
		{name: "restrict-ips unknown client", doc: `{"inbound":[{"actions":[{"type":"restrict-ips","config":{"deny":["10.0.0.0/8"]}}]}]}`,
			req:  func(r *Request) { r.Conn.ClientAddr = netip.AddrPort{} },
			want: Result{Verdict: Respond, StatusCode: 403, Location: "inbound[0].actions[0]"}},
		{name: "restrict-ips mapped client", doc: `{"inbound":[{"actions":[{"type":"restrict-ips","config":{"allow":["198.51.100.0/24"]}}]}]}`,
			req: func(r *Request) { r.Conn.ClientAddr = netip.MustParseAddrPort("[::ffff:198.51.100.10]:1") }},
		{name: "restrict-ips connection", target: TargetConnection, doc: `{"on_tcp_connect":[{"actions":[{"type":"restrict-ips","config":{"allow":["10.0.0.0/8"]}}]}]}`,
			want: Result{Verdict: Close, Location: "on_tcp_connect[0].actions[0]"}},
		{name: "restrict-ips ip policies allow", doc: `{"inbound":[{"actions":[{"type":"restrict-ips","config":{"ip_policies":["ipp_1"]}}]}]}`,
			resolver: allowResolver("198.51.100.0/24")},
		{name: "restrict-ips ip policies refuse", doc: `{"inbound":[{"actions":[{"type":"restrict-ips","config":{"ip_policies":["ipp_1","ipp_2"]}}]}]}`,
			resolver: allowResolver("10.0.0.0/8"),
			want:     Result{Verdict: Respond, StatusCode: 403, Location: "inbound[0].actions[0]"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { runActionCase(t, tc) })
	}
}

type prefixChecker []netip.Prefix

func (c prefixChecker) AllowedIP(a netip.Addr) bool { return indexAddr(c, a) >= 0 }

func allowResolver(cidrs ...string) IPPolicyResolver {
	return func(ids []string) (IPChecker, error) {
		var c prefixChecker
		for _, s := range cidrs {
			c = append(c, netip.MustParsePrefix(s))
		}
		return c, nil
	}
}

func runActionCase(t *testing.T, tc runCase) {
	t.Helper()
	e, sink := newTestEngine(t, Options{})
	p := mustCompile(t, e, tc.doc, CompileOptions{Target: tc.target, IPPolicies: tc.resolver})
	req := testRequest()
	if tc.req != nil {
		tc.req(req)
	}
	orig := req.Header.Clone()
	var got Result
	switch {
	case tc.target == TargetConnection:
		got = p.Connect(&req.Conn, t1)
	case tc.phase == Outbound:
		got = p.Outbound(req, testResponse(), nil)
	default:
		got = p.Inbound(req)
	}
	if tc.checkVars != nil {
		tc.checkVars(t, e, got)
	}
	got.vars = nil
	if !reflect.DeepEqual(got, tc.want) {
		t.Errorf("result\n%+v\nwant\n%+v", got, tc.want)
	}
	if !reflect.DeepEqual(req.Header, orig) {
		t.Errorf("the request's headers were modified: %v", req.Header)
	}
	var logs []map[string]string
	for _, l := range sink.logs {
		logs = append(logs, l.Metadata)
		if l.Time != t1 || !strings.Contains(l.Location, ".actions[") {
			t.Errorf("log entry %+v", l)
		}
	}
	if !reflect.DeepEqual(logs, tc.wantLogs) {
		t.Errorf("logs %v, want %v", logs, tc.wantLogs)
	}
	errs := sink.errors()
	if len(errs) != len(tc.wantErrs) {
		t.Fatalf("sink errors %q, want %q", errs, tc.wantErrs)
	}
	for i, w := range tc.wantErrs {
		if !strings.Contains(errs[i], w) {
			t.Errorf("sink error %q does not contain %q", errs[i], w)
		}
	}
}

func TestActionConfigs(t *testing.T) {
	failing := func(ids []string) (IPChecker, error) { return nil, errors.New("ip policy ipp_9 not found") }
	act := func(typ, cfg string) string {
		return `{"inbound":[{"actions":[{"type":"` + typ + `","config":` + cfg + `}]}]}`
	}
	tests := []struct {
		name     string
		target   Target
		doc      string
		resolver IPPolicyResolver
		want     []string
	}{
		{name: "log metadata type", doc: act("log", `{"metadata":["a"]}`),
			want: []string{"inbound[0].actions[0].config.metadata: must be an object of strings, got array"}},
		{name: "log empty key", doc: act("log", `{"metadata":{"":"x"}}`),
			want: []string{`inbound[0].actions[0].config.metadata[""]: a metadata key may not be empty`}},
		{name: "deny status range", doc: act("deny", `{"status_code":302}`),
			want: []string{"inbound[0].actions[0].config.status_code: must be between 400 and 599, got 302"}},
		{name: "deny status on a connection", target: TargetConnection, doc: act("deny", `{"status_code":403}`),
			want: []string{"inbound[0].actions[0].config.status_code: a TLS/TCP connection policy denies by closing the connection"}},
		{name: "custom-response on a connection", target: TargetConnection, doc: act("custom-response", `{}`),
			want: []string{"inbound[0].actions[0].type: custom-response is only available in HTTP policies"}},
		{name: "custom-response checks", doc: act("custom-response", `{"status_code":101,"headers":{"bad name":"x","Content-Length":"1","x-ok":"a\nb"},"body":"${1 +}"}`),
			want: []string{
				"inbound[0].actions[0].config.status_code: must be between 200 and 599, got 101",
				"inbound[0].actions[0].config.body: template ${1 +} at byte 0: 1:4: Syntax error",
				`inbound[0].actions[0].config.headers["bad name"]: invalid header name "bad name"`,
				`inbound[0].actions[0].config.headers["Content-Length"]: header content-length may not be changed by a policy`,
				`inbound[0].actions[0].config.headers["x-ok"]: a header value may not contain CR, LF or NUL`}},
		{name: "custom-response body too long", doc: act("custom-response", `{"body":"`+strings.Repeat("x", limits.MaxTemplateOutput+1)+`"}`),
			want: []string{"inbound[0].actions[0].config.body: is 65537 bytes; at most 65536 are allowed"}},
		{name: "add-headers required", doc: act("add-headers", `{}`),
			want: []string{"inbound[0].actions[0].config.headers: is required"}},
		{name: "add-headers framing", doc: act("add-headers", `{"headers":{"Host":"x","Transfer-Encoding":"chunked"}}`),
			want: []string{`inbound[0].actions[0].config.headers["Host"]: header host may not be changed`,
				`inbound[0].actions[0].config.headers["Transfer-Encoding"]: header transfer-encoding may not be changed`}},
		{name: "add-headers on a connection", target: TargetConnection, doc: act("add-headers", `{"headers":{"a":"b"}}`),
			want: []string{"inbound[0].actions[0].type: add-headers is only available in HTTP policies"}},
		{name: "remove-headers required", doc: act("remove-headers", `{"headers":[]}`),
			want: []string{"inbound[0].actions[0].config.headers: is required"}},
		{name: "remove-headers names", doc: act("remove-headers", `{"headers":["ok","b@d","connection"]}`),
			want: []string{`inbound[0].actions[0].config.headers[1]: invalid header name "b@d"`,
				"inbound[0].actions[0].config.headers[2]: header connection may not be changed"}},
		{name: "redirect to required", doc: act("redirect", `{"from":"x"}`),
			want: []string{"inbound[0].actions[0].config.to: is required"}},
		{name: "redirect checks", doc: act("redirect", `{"from":"(a)(","to":"https://x/$2","status_code":200}`),
			want: []string{"inbound[0].actions[0].config.status_code: must be between 300 and 399, got 200",
				"inbound[0].actions[0].config.from: invalid regular expression",
				"inbound[0].actions[0].config.to: $2 refers to capture group 2, but the from expression has 0"}},
		{name: "redirect groups", doc: act("redirect", `{"from":"/(a)","to":"/$1/$2/$0"}`),
			want: []string{"inbound[0].actions[0].config.to: $2 refers to capture group 2, but the from expression has 1",
				"inbound[0].actions[0].config.to: $0 is not allowed"}},
		{name: "redirect regex too large", doc: act("redirect", `{"from":"[a-z]{600}[0-9]{600}","to":"/"}`),
			want: []string{"inbound[0].actions[0].config.from: regular expression program size"}},
		{name: "url-rewrite from required", doc: act("url-rewrite", `{"to":"/x"}`),
			want: []string{"inbound[0].actions[0].config.from: is required"}},
		{name: "url-rewrite outbound", doc: `{"outbound":[{"actions":[{"type":"url-rewrite","config":{"from":"a","to":"/b"}}]}]}`,
			want: []string{"outbound[0].actions[0].type: url-rewrite is only available in inbound"}},
		{name: "restrict-ips empty", doc: act("restrict-ips", `{}`),
			want: []string{"inbound[0].actions[0].config: needs at least one of allow, deny or ip_policies"}},
		{name: "restrict-ips bad CIDRs", doc: act("restrict-ips", `{"allow":["10.0.0.0/8","nope"],"deny":["fe80::1%eth0"]}`),
			want: []string{`inbound[0].actions[0].config.allow[1]: invalid CIDR "nope"`, `inbound[0].actions[0].config.deny[0]: invalid CIDR "fe80::1%eth0"`}},
		{name: "restrict-ips ip policies without resolver", doc: act("restrict-ips", `{"ip_policies":["ipp_1"]}`),
			want: []string{"inbound[0].actions[0].config.ip_policies: IP policies cannot be resolved here"}},
		{name: "restrict-ips resolver error", doc: act("restrict-ips", `{"ip_policies":["ipp_9"]}`), resolver: failing,
			want: []string{"inbound[0].actions[0].config.ip_policies: ip policy ipp_9 not found"}},
		{name: "restrict-ips empty id", doc: act("restrict-ips", `{"ip_policies":[""]}`), resolver: failing,
			want: []string{"inbound[0].actions[0].config.ip_policies[0]: an IP policy ID may not be empty"}},
		{name: "restrict-ips outbound", doc: `{"outbound":[{"actions":[{"type":"restrict-ips","config":{"allow":["10.0.0.0/8"]}}]}]}`,
			want: []string{"outbound[0].actions[0].type: restrict-ips is only available in inbound rules"}},
		{name: "rate-limit every field", doc: `{"on_http_request":[{"name":"rl","actions":[{"type":"rate-limit","config":{"enforce":"yes"}}]}]}`,
			want: []string{`on_http_request[0].actions[0].config.enforce: rule "rl": must be a boolean, got string`}},
		{name: "rate-limit invalid", doc: `{"on_http_request":[{},{},{"actions":[{"type":"rate-limit","config":{"name":"","algorithm":"token_bucket","capacity":0,"rate":"65s","bucket_key":["req.body"]}}]}]}`,
			want: []string{
				"on_http_request[0].actions: a rule needs at least one action",
				"on_http_request[1].actions: a rule needs at least one action",
				"on_http_request[2].actions[0].config.name: is required",
				`on_http_request[2].actions[0].config.algorithm: must be "sliding_window"`,
				"on_http_request[2].actions[0].config.capacity: must be between 1 and 2000000000",
				"on_http_request[2].actions[0].config.rate: must be a whole multiple of 10s",
				"on_http_request[2].actions[0].config.bucket_key[0]: is neither one of"}},
		{name: "rate-limit missing fields", doc: act("rate-limit", `{}`),
			want: []string{"inbound[0].actions[0].config.name: is required", "inbound[0].actions[0].config.algorithm: is required",
				"inbound[0].actions[0].config.capacity: must be between", "inbound[0].actions[0].config.rate: is required",
				"inbound[0].actions[0].config.bucket_key: is required"}},
		{name: "add-headers duplicate names", doc: act("add-headers", `{"headers":{"X-A":"1","x-a":"2"}}`),
			want: []string{`inbound[0].actions[0].config.headers["x-a"]: header x-a is given twice`}},
		{name: "rate-limit capacity negative", doc: act("rate-limit", `{"name":"a","algorithm":"sliding_window","capacity":-1,"rate":"60s","bucket_key":["req.host"]}`),
			want: []string{"inbound[0].actions[0].config.capacity: must be a non-negative integer, got number -1"}},
		{name: "rate-limit bounds", doc: `{"inbound":[{"actions":[{"type":"rate-limit","config":{"name":"` + strings.Repeat("é", 1024) + `","algorithm":"sliding_window","capacity":2000000001,"rate":"24h10s","bucket_key":["req.host","req.host","req.host","req.host","req.host","req.host","req.host","req.host","req.host","req.host","req.host"]}}]}]}`,
			want: []string{"inbound[0].actions[0].config.name: ", "inbound[0].actions[0].config.capacity: must be between 1 and 2000000000",
				"inbound[0].actions[0].config.rate: ", "inbound[0].actions[0].config.bucket_key: "}},
		{name: "rate-limit rate too short", doc: act("rate-limit", rlConfig(1, "50s", `"req.host"`)),
			want: []string{"inbound[0].actions[0].config.rate: "}},
		{name: "rate-limit outbound", doc: `{"outbound":[{"actions":[{"type":"rate-limit","config":` + rlConfig(10, "60s", `"conn.client_ip"`) + `}]}]}`,
			want: []string{"outbound[0].actions[0].type: rate-limit is only available in inbound (on_http_request) rules"}},
		{name: "rate-limit on a connection", target: TargetConnection, doc: act("rate-limit", rlConfig(10, "60s", `"conn.client_ip"`)),
			want: []string{"inbound[0].actions[0].type: rate-limit is only available in HTTP policies"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := newTestEngine(t, Options{})
			_, err := e.CompileJSON([]byte(tc.doc), CompileOptions{Target: tc.target, IPPolicies: tc.resolver})
			wantViolations(t, err, tc.want)
		})
	}
}
