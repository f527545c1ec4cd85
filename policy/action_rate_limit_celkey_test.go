package policy

import (
	"encoding/json"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane/policy/limits"
)

// celKeyDoc is a rate-limit of capacity 1 keyed by the given elements
// (JSON strings), whose outbound phase reads every result variable.
func celKeyDoc(t testing.TB, elems ...string) string {
	t.Helper()
	js, err := json.Marshal(elems)
	if err != nil {
		t.Fatal(err)
	}
	return rlDoc(1, "60s", strings.Trim(string(js), "[]"), "")
}

// withoutNative drops the native evaluators of a policy's rate-limit key
// expressions, so that cel-go evaluates them.
func withoutNative(p *Policy) {
	for i := range p.in.rules {
		for _, a := range p.in.rules[i].actions {
			if rl, ok := a.action.(*rateLimitAction); ok {
				for j := range rl.elems {
					if rl.elems[j].expr != nil {
						x := *rl.elems[j].expr
						x.native = nil
						rl.elems[j].expr = &x
					}
				}
			}
		}
	}
}

// TestRateLimitCELKey checks bucket key elements that are CEL expressions
// (issue 19, item 3), on the native path and on cel-go: the value shown
// in bucket_key, and which requests share a bucket.
func TestRateLimitCELKey(t *testing.T) {
	tests := []struct {
		name   string
		elems  []string
		shown  string         // bucket_key of testRequest
		same   func(*Request) // a change that keeps the bucket
		other  func(*Request) // a change that gives another bucket
		native bool           // the expression has a native evaluator
	}{
		{name: "header value", elems: []string{"req.headers['x-api-key'][0]"}, shown: "k1", native: true,
			same:  func(r *Request) { r.Path = "/elsewhere" },
			other: func(r *Request) { r.Header = http.Header{"X-Api-Key": {"k2"}} }},
		{name: "concatenation", elems: []string{"req.method + ' ' + req.url.path"}, shown: "POST /v1/users/42",
			same:  func(r *Request) { r.Header = nil },
			other: func(r *Request) { r.Method = "GET" }},
		{name: "path segment", elems: []string{"req.url.path.split('/')[1]"}, shown: "v1",
			same:  func(r *Request) { r.Path = "/v1/other" },
			other: func(r *Request) { r.Path = "/v2/users/42" }},
		{name: "query parameter", elems: []string{"getQueryParam('b')[0]"}, shown: "x y", native: true,
			same:  func(r *Request) { r.RawQuery = "b=x+y" },
			other: func(r *Request) { r.RawQuery = "b=z" }},
		{name: "conditional", elems: []string{"hasReqHeader('x-api-key') ? req.headers['x-api-key'][0] : conn.client_ip"}, shown: "k1",
			same:  func(r *Request) { r.Conn.ClientAddr = netip.MustParseAddrPort("198.51.100.99:1") },
			other: func(r *Request) { r.Header = nil }},
		{name: "a SPEC form beside an expression", elems: []string{"req.host", "req.url.scheme"}, shown: "api.example.com:8443,https",
			same:  func(r *Request) { r.Path = "/x" },
			other: func(r *Request) { r.Scheme = "http" }},
	}
	for _, tt := range tests {
		for _, path := range []string{"native", "cel-go"} {
			t.Run(tt.name+"/"+path, func(t *testing.T) {
				e, sink := newTestEngine(t, Options{})
				p := mustCompile(t, e, celKeyDoc(t, tt.elems...), CompileOptions{})
				if path == "cel-go" {
					withoutNative(p)
				} else if tt.native {
					rl := p.in.rules[0].actions[0].action.(*rateLimitAction)
					if rl.elems[len(rl.elems)-1].expr.native == nil {
						t.Fatal("no native evaluator")
					}
				}
				res := p.Inbound(testRequest())
				if v := resultVar(t, e, res, rlBucketKey); res.Verdict != Continue || v.s != tt.shown {
					t.Fatalf("first request: %v, bucket_key %q, want %q", res.Verdict, v.s, tt.shown)
				}
				same := testRequest()
				tt.same(same)
				if res := p.Inbound(same); res.Verdict != Respond {
					t.Fatalf("a request of the same bucket: %+v", res)
				}
				other := testRequest()
				tt.other(other)
				if res := p.Inbound(other); res.Verdict != Continue {
					t.Fatalf("a request of another bucket: %+v", res)
				}
				if errs := sink.errors(); len(errs) != 0 {
					t.Fatalf("errors %v", errs)
				}
			})
		}
	}
}

// TestRateLimitCELKeyError checks a key expression that fails at run time:
// reported, counted as "", and error.code set.
func TestRateLimitCELKeyError(t *testing.T) {
	for _, path := range []string{"native", "cel-go"} {
		t.Run(path, func(t *testing.T) {
			e, sink := newTestEngine(t, Options{})
			p := mustCompile(t, e, celKeyDoc(t, "req.headers['x-missing'][0]"), CompileOptions{})
			if path == "cel-go" {
				withoutNative(p)
			}
			res := p.Inbound(testRequest())
			if v := resultVar(t, e, res, rlErrorCode); v.s != ErrCodeBucketKeyExpression {
				t.Fatalf("error.code %q", v.s)
			}
			if v := resultVar(t, e, res, rlErrorMessage); v.s != msgBucketKeyExpression {
				t.Fatalf("error.message %q", v.s)
			}
			if errs := sink.errors(); len(errs) != 1 || !strings.Contains(errs[0], "bucket_key[0]") {
				t.Fatalf("errors %v", errs)
			}
			other := testRequest()
			other.Path = "/another"
			if res := p.Inbound(other); res.Verdict != Respond {
				t.Fatal("two failing keys do not share the empty key's bucket")
			}
		})
	}
}

// TestRateLimitCELKeyCompileErrors checks that key expressions are
// compiled with the rules' checks, located at config.bucket_key[i] with
// line:column.
func TestRateLimitCELKeyCompileErrors(t *testing.T) {
	const at = `on_http_request[0].actions[0].config.bucket_key[`
	tests := []struct {
		name  string
		elems []string
		want  string
	}{
		{"not a string", []string{"req.host", "size(req.host)"}, at + `1]: rule "limit": is neither one of "req.host"`},
		{"not a string, reason", []string{"size(req.host)"}, `nor a string-typed CEL expression: 1:1: the expression must give a string, got int`},
		{"undeclared", []string{"req.body"}, `1:1: undeclared reference to 'req'`},
		{"syntax", []string{"req.host +"}, at + `0]: rule "limit": is neither one of`},
		{"outbound only", []string{"string(res.status_code)"}, `1:11: res.status_code is only available in outbound (on_http_response) rules`},
		{"literal CIDR checked", []string{"inCidrRange(conn.client_ip, '10.0.0.0/33') ? 'a' : 'b'"}, at + `0]: rule "limit": is neither`},
		{"too long", []string{"'" + strings.Repeat("a", limits.MaxExpressionLength) + "'"}, at + `0]: rule "limit": is neither`},
		{"empty", []string{""}, at + `0]: rule "limit": must not be empty`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := newTestEngine(t, Options{})
			_, err := e.CompileJSON([]byte(celKeyDoc(t, tt.elems...)), CompileOptions{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v\nwant %s", err, tt.want)
			}
		})
	}
}

// TestRateLimitCELKeyCost checks that a key expression's estimated cost
// counts towards limits.MaxExpressionCost.
func TestRateLimitCELKeyCost(t *testing.T) {
	e, _ := newTestEngine(t, Options{})
	expensive := "req.headers.map(k, req.headers.map(j, k + j).join()).join()"
	_, err := e.CompileJSON([]byte(celKeyDoc(t, expensive)), CompileOptions{})
	if err == nil || !strings.Contains(err.Error(), "exceeds the limit of") {
		t.Fatalf("err = %v", err)
	}
}
