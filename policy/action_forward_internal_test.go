package policy

import (
	"net/http"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane/apierr"
)

// onlineSet is the host's side of forward-internal: the canonical URLs
// of the internal endpoints online.
type onlineSet map[string]bool

func (s onlineSet) InternalEndpointOnline(url string) bool { return s[url] }

// TestForwardInternal: forward-internal ends evaluation with Forward
// when its endpoint is online; otherwise on_error says whether the
// request gets 404 (halt, the default) or the next actions run
// (continue).
func TestForwardInternal(t *testing.T) {
	e, sink := newTestEngine(t, Options{})
	online := onlineSet{"https://api.internal:443": true, "http://web.internal:8080": true}
	const fallback = `{"type":"custom-response","config":{"status_code":503,"body":"fallback"}}`
	for _, tc := range []struct {
		name     string
		config   string
		internal InternalEndpoints
		verdict  Verdict
		forward  string
		status   int
		body     string
		reported bool
	}{
		{name: "online", config: `{"url":"https://api.internal"}`, internal: online, verdict: Forward, forward: "https://api.internal:443"},
		{name: "no scheme, upper case", config: `{"url":"API.internal"}`, internal: online, verdict: Forward, forward: "https://api.internal:443"},
		{name: "http with a port", config: `{"url":"http://web.internal:8080/"}`, internal: online, verdict: Forward, forward: "http://web.internal:8080"},
		{name: "templated", config: `{"url":"https://${req.url.path.substring(1)}.internal"}`, internal: online, verdict: Forward, forward: "https://api.internal:443"},
		{name: "offline, halt", config: `{"url":"https://db.internal"}`, internal: online, verdict: Respond, status: http.StatusNotFound, body: "offline", reported: true},
		{name: "offline, halt said so", config: `{"url":"https://db.internal","on_error":"halt"}`, internal: online, verdict: Respond, status: http.StatusNotFound, reported: true},
		{name: "offline, continue", config: `{"url":"https://db.internal","on_error":"continue"}`, internal: online, verdict: Respond, status: 503, body: "fallback", reported: true},
		{name: "no host support", config: `{"url":"https://api.internal"}`, verdict: Respond, status: http.StatusNotFound, reported: true},
		{name: "another port", config: `{"url":"https://api.internal:8443"}`, internal: online, verdict: Respond, status: http.StatusNotFound, reported: true},
		{name: "rendered to no internal URL, continue", config: `{"url":"https://${req.url.path.substring(1)}.example.com","on_error":"continue"}`, internal: online,
			verdict: Respond, status: 503, reported: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink.reset()
			doc := `{"on_http_request":[{"actions":[{"type":"forward-internal","config":` + tc.config + `}]},{"actions":[` + fallback + `]}]}`
			p := mustCompile(t, e, doc, CompileOptions{Target: TargetHTTP})
			req := testRequest()
			req.Path = "/api"
			req.Internal = tc.internal
			out := p.Inbound(req)
			if out.Verdict != tc.verdict || out.ForwardURL != tc.forward || (tc.status != 0 && out.StatusCode != tc.status) || !strings.Contains(out.Body, tc.body) {
				t.Fatalf("result %v %q %d %q, want %v %q %d %q", out.Verdict, out.ForwardURL, out.StatusCode, out.Body, tc.verdict, tc.forward, tc.status, tc.body)
			}
			if got := len(sink.errors()) > 0; got != tc.reported {
				t.Errorf("reported %q, want an error reported: %v", sink.errors(), tc.reported)
			}
			if tc.verdict == Forward && out.Location != "on_http_request[0].actions[0]" {
				t.Errorf("location %q", out.Location)
			}
		})
	}
}

// TestForwardInternalHeaderEdits: a request forwarded carries the
// header edits of the actions before forward-internal.
func TestForwardInternalHeaderEdits(t *testing.T) {
	e, _ := newTestEngine(t, Options{})
	p := mustCompile(t, e, `{"on_http_request":[{"actions":[{"type":"add-headers","config":{"headers":{"x-via":"public"}}},
		{"type":"forward-internal","config":{"url":"https://api.internal"}}]}]}`, CompileOptions{Target: TargetHTTP})
	req := testRequest()
	req.Internal = onlineSet{"https://api.internal:443": true}
	out := p.Inbound(req)
	if out.Verdict != Forward || len(out.HeaderEdits) != 1 || out.HeaderEdits[0].Name != "x-via" {
		t.Fatalf("result %+v", out)
	}
	if out.Verdict.String() != "forward" {
		t.Errorf("String() = %q", out.Verdict.String())
	}
}

func TestForwardInternalCompileErrors(t *testing.T) {
	e, _ := newTestEngine(t, Options{})
	for _, tc := range []struct {
		name   string
		doc    string
		target Target
		field  string
	}{
		{"no url", `{"on_http_request":[{"actions":[{"type":"forward-internal"}]}]}`, TargetHTTP, "config.url"},
		{"not internal", `{"on_http_request":[{"actions":[{"type":"forward-internal","config":{"url":"https://api.example.com"}}]}]}`, TargetHTTP, "config.url"},
		{"a path", `{"on_http_request":[{"actions":[{"type":"forward-internal","config":{"url":"https://api.internal/v1"}}]}]}`, TargetHTTP, "config.url"},
		{"a tcp URL", `{"on_http_request":[{"actions":[{"type":"forward-internal","config":{"url":"tcp://api.internal:1"}}]}]}`, TargetHTTP, "config.url"},
		{"bad on_error", `{"on_http_request":[{"actions":[{"type":"forward-internal","config":{"url":"https://api.internal","on_error":"retry"}}]}]}`, TargetHTTP, "config.on_error"},
		{"unknown key", `{"on_http_request":[{"actions":[{"type":"forward-internal","config":{"url":"https://api.internal","binding":"internal"}}]}]}`, TargetHTTP, "config.binding"},
		{"outbound", `{"on_http_response":[{"actions":[{"type":"forward-internal","config":{"url":"https://api.internal"}}]}]}`, TargetHTTP, "type"},
		{"a connection policy", `{"on_tcp_connect":[{"actions":[{"type":"forward-internal","config":{"url":"https://api.internal"}}]}]}`, TargetConnection, "type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.CompileJSON([]byte(tc.doc), CompileOptions{Target: tc.target})
			vs := apierr.ViolationsOf(err)
			if len(vs) == 0 || !strings.HasSuffix(vs[0].Field, tc.field) {
				t.Fatalf("got %v, want a violation of %s", err, tc.field)
			}
		})
	}
}

func TestParseInternalURL(t *testing.T) {
	for _, tc := range []struct {
		raw, want string
	}{
		{"https://api.internal", "https://api.internal:443"},
		{"http://api.internal", "http://api.internal:80"},
		{"API.Internal.", "https://api.internal:443"},
		{"http://a.b.internal:8080/", "http://a.b.internal:8080"},
		{"https://api.internal:0", ""},
		{"https://api.internal:08", ""},
		{"https://api.internal:65536", ""},
		{"https://u@api.internal", ""},
		{"https://api.internal?x=1", ""},
		{"https://internal", ""},
		{"https://*.api.internal", ""},
		{"https://api.example.com", ""},
		{"ftp://api.internal", ""},
		{"https://a..internal", ""},
		{"", ""},
	} {
		got, err := ParseInternalURL(tc.raw)
		if got != tc.want || (err == nil) != (tc.want != "") {
			t.Errorf("ParseInternalURL(%q) = %q, %v; want %q", tc.raw, got, err, tc.want)
		}
	}
}

// FuzzParseInternalURL: what ParseInternalURL accepts is canonical: it
// parses back to itself.
func FuzzParseInternalURL(f *testing.F) {
	for _, s := range []string{"https://api.internal", "api.internal:80", "http://[::1]:80", "%zz", "https://a:b@c.internal:1", "http://x.internal:65535/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got, err := ParseInternalURL(raw)
		if err != nil {
			if got != "" {
				t.Fatalf("refused %q with a result %q", raw, got)
			}
			return
		}
		if again, err := ParseInternalURL(got); err != nil || again != got {
			t.Fatalf("%q gave %q, which gives %q, %v", raw, got, again, err)
		}
	})
}

// BenchmarkForwardInternal is the inbound evaluation of a policy whose
// one action forwards to an internal endpoint that is online: a literal
// url (parsed when compiled) and a templated one (parsed each time).
func BenchmarkForwardInternal(b *testing.B) {
	e, _ := newTestEngine(b, Options{})
	online := onlineSet{"https://api.internal:443": true}
	for _, bc := range []struct{ name, url string }{
		{"literal", "https://api.internal"},
		{"templated", "https://${req.url.path.substring(1)}.internal"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			p := mustCompile(b, e, `{"on_http_request":[{"actions":[{"type":"forward-internal","config":{"url":"`+bc.url+`"}}]}]}`, CompileOptions{Target: TargetHTTP})
			req := testRequest()
			req.Path = "/api"
			req.Internal = online
			b.ReportAllocs()
			for b.Loop() {
				if out := p.Inbound(req); out.Verdict != Forward {
					b.Fatalf("verdict %v", out.Verdict)
				}
			}
		})
	}
}
