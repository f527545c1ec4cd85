package policy

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestRateLimitFeedbackVariables checks the limit, remaining and reset
// result variables (issue 19, item 1) over a burst that ends limited.
func TestRateLimitFeedbackVariables(t *testing.T) {
	e, sink := newTestEngine(t, Options{})
	p := mustCompile(t, e, `{"on_http_request":[{"actions":[{"type":"rate-limit","config":`+rlConfig(3, "60s", `"conn.client_ip"`)+`}]},
	  {"actions":[{"type":"log","config":{"metadata":{
	    "v":"${actions.service.rate_limit.limit}/${actions.service.rate_limit.remaining}/${actions.service.rate_limit.reset}"}}}]}]}`, CompileOptions{})
	req := testRequest()
	want := []string{"3/2/60", "3/1/60", "3/0/60"}
	for i, w := range want {
		req.Time = t0.Add(time.Duration(i) * time.Second) // t0 starts a 6s slot
		if res := p.Inbound(req); res.Verdict != Continue {
			t.Fatalf("request %d: %+v", i, res)
		}
		if got := sink.logs[i].Metadata["v"]; got != w {
			t.Fatalf("request %d: limit/remaining/reset %s, want %s", i, got, w)
		}
	}
	// Rejected at +3s: every admission leaves the window when the latest
	// does, at +62s.
	p2 := mustCompile(t, e, `{"on_http_request":[{"actions":[{"type":"rate-limit","config":`+withExtra(rlConfig(3, "60s", `"conn.client_ip"`), `"enforce":false`)+`}]},
	  {"actions":[{"type":"log","config":{"metadata":{
	    "v":"${actions.service.rate_limit.limit}/${actions.service.rate_limit.remaining}/${actions.service.rate_limit.reset}"}}}]}]}`, CompileOptions{})
	sink.reset()
	req.Time = t0.Add(3 * time.Second)
	p2.Inbound(req) // the same limiter: same config, same scope
	if got := sink.logs[0].Metadata["v"]; got != "3/0/59" {
		t.Fatalf("limited: limit/remaining/reset %s, want 3/0/59", got)
	}
}

// TestRateLimitHeaders checks the optional response headers of each form,
// on an admitted request (ResponseHeader) and a refused one (the 429's
// Header), and that there are none by default.
func TestRateLimitHeaders(t *testing.T) {
	tests := []struct {
		name      string
		extra     string
		allowed   map[string]string // ResponseHeader of the first request
		limited   map[string]string // Header of the 429
		noHeaders bool
	}{
		{name: "default: none", noHeaders: true},
		{name: "none", extra: `"headers":"none"`, noHeaders: true},
		{name: "ietf", extra: `"headers":"ietf"`,
			allowed: map[string]string{"Ratelimit-Policy": `"per-ip";q=2;w=60`, "Ratelimit": `"per-ip";r=1;t=60`},
			limited: map[string]string{"Ratelimit-Policy": `"per-ip";q=2;w=60`, "Ratelimit": `"per-ip";r=0;t=60`, "Retry-After": "60"}},
		{name: "x-ratelimit", extra: `"headers":"x-ratelimit"`,
			allowed: map[string]string{"X-Ratelimit-Limit": "2", "X-Ratelimit-Remaining": "1", "X-Ratelimit-Reset": "60"},
			limited: map[string]string{"X-Ratelimit-Limit": "2", "X-Ratelimit-Remaining": "0", "X-Ratelimit-Reset": "60", "Retry-After": "60"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := newTestEngine(t, Options{})
			p := mustCompile(t, e, rlDoc(2, "60s", `"conn.client_ip"`, tt.extra), CompileOptions{})
			req := testRequest()
			first := p.Inbound(req)
			p.Inbound(req)
			third := p.Inbound(req)
			if first.Verdict != Continue || third.StatusCode != http.StatusTooManyRequests {
				t.Fatalf("verdicts %v, %v", first.Verdict, third.StatusCode)
			}
			if tt.noHeaders {
				if first.ResponseHeader != nil || len(third.Header) != 1 {
					t.Fatalf("headers without a headers config: %v, %v", first.ResponseHeader, third.Header)
				}
				return
			}
			checkHeaders(t, "admitted", first.ResponseHeader, tt.allowed)
			checkHeaders(t, "limited", third.Header, tt.limited)
		})
	}
}

// withExtra adds members to a JSON object.
func withExtra(obj, members string) string { return obj[:len(obj)-1] + "," + members + "}" }

func checkHeaders(t *testing.T, what string, h http.Header, want map[string]string) {
	t.Helper()
	if len(h) != len(want) {
		t.Fatalf("%s: headers %v, want %v", what, h, want)
	}
	for k, v := range want {
		if got := h[k]; len(got) != 1 || got[0] != v {
			t.Fatalf("%s: %s = %q, want %q (all: %v)", what, k, got, v, h)
		}
	}
}

// TestRateLimitHeadersThroughHandler checks that Policy.Handler sends the
// headers with the upstream's response.
func TestRateLimitHeadersThroughHandler(t *testing.T) {
	e, _ := newTestEngine(t, Options{})
	p := mustCompile(t, e, `{"on_http_request":[{"actions":[{"type":"rate-limit","config":`+
		withExtra(rlConfig(5, "60s", `"req.host"`), `"headers":"x-ratelimit"`)+`}]}]}`, CompileOptions{})
	h := p.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok")) }))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "http://example.com/", nil))
	if rec.Code != 200 || rec.Header().Get("X-RateLimit-Remaining") != "4" || rec.Header().Get("X-RateLimit-Limit") != "5" {
		t.Fatalf("status %d, headers %v", rec.Code, rec.Header())
	}
}

func TestRateLimitHeadersInvalid(t *testing.T) {
	e, _ := newTestEngine(t, Options{})
	_, err := e.CompileJSON([]byte(rlDoc(2, "60s", `"conn.client_ip"`, `"headers":"draft"`)), CompileOptions{})
	if err == nil || !strings.Contains(err.Error(), `on_http_request[0].actions[0].config.headers: rule "limit": must be "none", "ietf" or "x-ratelimit", got "draft"`) {
		t.Fatalf("err = %v", err)
	}
}

func TestSFString(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain", "per-ip", `"per-ip"`},
		{"quotes and backslashes", `a"b\c`, `"a\"b\\c"`},
		{"non-ASCII and controls", "é\tx", `"__x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sfString(tt.in); got != tt.want {
				t.Fatalf("sfString(%q) = %s, want %s", tt.in, got, tt.want)
			}
		})
	}
}
