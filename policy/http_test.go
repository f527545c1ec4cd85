package policy

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane/policy/limits"
)

func TestRequestFromHTTP(t *testing.T) {
	r := httptest.NewRequest("PUT", "https://example.com:8443/a%2Fb/c?x=1", nil)
	r.RemoteAddr = "203.0.113.9:5555"
	r.Header.Set("X-Forwarded-For", "10.0.0.1")
	r.TLS = &tls.ConnectionState{ServerName: "example.com", Version: tls.VersionTLS12}
	r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, &net.TCPAddr{IP: net.ParseIP("192.0.2.1"), Port: 8443}))
	req := RequestFromHTTP(r, t1)
	want := Request{
		Method: "PUT", Scheme: "https", Host: "example.com:8443", Path: "/a/b/c", RawPath: "/a%2Fb/c", RawQuery: "x=1",
		Header: r.Header, ContentLength: 0, Proto: "HTTP/1.1", Time: t1,
		Conn: Conn{
			ClientAddr: netip.MustParseAddrPort("203.0.113.9:5555"),
			ServerAddr: netip.MustParseAddrPort("192.0.2.1:8443"),
			TLS:        &TLSInfo{ServerName: "example.com", Version: tls.VersionTLS12},
		},
	}
	if req.Method != want.Method || req.Scheme != want.Scheme || req.Host != want.Host || req.Path != want.Path ||
		req.RawPath != want.RawPath || req.RawQuery != want.RawQuery || req.Proto != want.Proto || req.Time != want.Time ||
		req.Conn.ClientAddr != want.Conn.ClientAddr || req.Conn.ServerAddr != want.Conn.ServerAddr || *req.Conn.TLS != *want.Conn.TLS {
		t.Fatalf("got %+v\nwant %+v", req, want)
	}
	e, _ := newTestEngine(t, Options{})
	p := mustCompile(t, e, phaseDoc("inbound", "req.url == 'https://example.com:8443/a%2Fb/c?x=1' && conn.client_ip == '203.0.113.9' && conn.tls.version == '1.2'"), CompileOptions{})
	native, _, celRes, err := evalCond(t, p, Inbound, &req, nil, nil)
	if native != triTrue || celRes != triTrue {
		t.Fatalf("native %v, CEL %v (%v)", native, celRes, err)
	}
}

func TestApplyHTTP(t *testing.T) {
	tests := []struct {
		name        string
		res         Result
		wantHandled bool
		wantStatus  int
		wantBody    string
		wantHeader  http.Header // response headers (handled) or request headers
		wantURI     string
	}{
		{name: "respond", res: Result{Verdict: Respond, StatusCode: 429, Header: http.Header{"retry-after": {"3"}}, Body: "slow down"},
			wantHandled: true, wantStatus: 429, wantBody: "slow down", wantHeader: http.Header{"Retry-After": {"3"}}},
		{name: "continue with edits", res: Result{HeaderEdits: []HeaderEdit{{Name: "x-new", Value: "1"}, {Remove: true, Name: "x-old"}, {Remove: true, Name: "x-weird"}},
			RewriteURI: "/new/path?q=%20"},
			wantHeader: http.Header{"X-New": {"1"}}, wantURI: "/new/path?q=%20"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/old?a=b", nil)
			r.Header = http.Header{"X-Old": {"v"}, "x-WEIRD": {"w"}}
			w := httptest.NewRecorder()
			handled := tc.res.ApplyHTTP(w, r)
			if handled != tc.wantHandled {
				t.Fatalf("handled %v", handled)
			}
			if handled {
				if w.Code != tc.wantStatus || w.Body.String() != tc.wantBody {
					t.Fatalf("response %d %q", w.Code, w.Body.String())
				}
				for k, v := range tc.wantHeader {
					if w.Header()[k][0] != v[0] {
						t.Fatalf("header %s = %q", k, w.Header()[k])
					}
				}
				return
			}
			if len(r.Header) != len(tc.wantHeader) || r.Header.Get("X-New") != "1" {
				t.Fatalf("request headers %v", r.Header)
			}
			if r.URL.Path != "/new/path" || r.URL.RawQuery != "q=%20" || r.RequestURI != tc.wantURI {
				t.Fatalf("URL %v, RequestURI %q", r.URL, r.RequestURI)
			}
		})
	}
}

func TestHandler(t *testing.T) {
	e, sink := newTestEngine(t, Options{})
	p := mustCompile(t, e, `{
	  "on_http_request": [
	    {"expressions": ["req.url.path == '/blocked'"], "actions": [{"type": "deny"}]},
	    {"actions": [{"type": "add-headers", "config": {"headers": {"x-client": "${conn.client_ip}"}}},
	                 {"type": "url-rewrite", "config": {"from": "/old/", "to": "/new/"}}]}
	  ],
	  "on_http_response": [
	    {"expressions": ["res.status_code == 500"], "actions": [{"type": "custom-response", "config": {"status_code": 503, "body": "sorry"}}]},
	    {"actions": [{"type": "add-headers", "config": {"headers": {"x-seen": "${req.url.path}"}}}, {"type": "remove-headers", "config": {"headers": ["server"]}}]}
	  ]}`, CompileOptions{})
	upstream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Server", "up")
		if r.URL.Path == "/new/fail" {
			w.WriteHeader(500)
			_, _ = io.WriteString(w, "stack trace")
			return
		}
		_, _ = io.WriteString(w, "hello "+r.Header.Get("X-Client")+" "+r.URL.Path)
	})
	h := p.Handler(upstream)
	do := func(path string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", path, nil)
		r.RemoteAddr = "203.0.113.9:5555"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	if w := do("/blocked"); w.Code != 403 || w.Body.Len() != 0 {
		t.Fatalf("blocked: %d %q", w.Code, w.Body.String())
	}
	w := do("/old/x")
	if w.Code != 200 || w.Body.String() != "hello 203.0.113.9 /new/x" {
		t.Fatalf("forwarded: %d %q", w.Code, w.Body.String())
	}
	if w.Header().Get("X-Seen") != "/new/x" || w.Header().Get("Server") != "" {
		t.Fatalf("response headers %v", w.Header())
	}
	w = do("/old/fail")
	if w.Code != 503 || w.Body.String() != "sorry" || w.Header().Get("Server") != "" {
		t.Fatalf("replaced: %d %q %v", w.Code, w.Body.String(), w.Header())
	}
	if errs := sink.errors(); len(errs) != 0 {
		t.Fatalf("sink errors %q", errs)
	}
}

func TestApplyHTTPClose(t *testing.T) {
	res := Result{Verdict: Close}
	// A writer that cannot hijack gets a 403.
	w := httptest.NewRecorder()
	if !res.ApplyHTTP(w, httptest.NewRequest("GET", "/", nil)) || w.Code != 403 {
		t.Fatalf("recorder: %d", w.Code)
	}
	// A real HTTP/1 connection is closed without a response.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		res.ApplyHTTP(w, r)
	}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("got a response %d, want the connection closed", resp.StatusCode)
	}
}

func TestHandlerOutboundClose(t *testing.T) {
	var seen []string
	e, _ := newTestEngine(t, Options{Actions: []ActionType{inspectType{&seen}}})
	p := mustCompile(t, e, `{"outbound":[{"expressions":["res.status_code == 204"],"actions":[{"type":"inspect","config":{"close":true}}]}]}`, CompileOptions{})
	h := p.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/none" {
			w.WriteHeader(204)
		}
		_, _ = w.Write([]byte("body"))
	}))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/none", nil))
	if w.Code != 403 || w.Body.Len() != 0 {
		t.Fatalf("closed: %d %q", w.Code, w.Body.String())
	}
	w = httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
	if w.Code != 200 || w.Body.String() != "body" {
		t.Fatalf("passed: %d %q", w.Code, w.Body.String())
	}
	// A handler that writes nothing still gets the outbound rules.
	h2 := p.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	w = httptest.NewRecorder()
	h2.ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
	if w.Code != 200 {
		t.Fatalf("empty handler: %d", w.Code)
	}
}

// TestRequestFromHTTPWithClient checks that the given client address is
// used as is, and that the server address read from a *net.TCPAddr is the
// one its text would parse to, for every form net/http may store.
func TestRequestFromHTTPWithClient(t *testing.T) {
	client := netip.MustParseAddrPort("198.51.100.7:40000")
	for _, la := range []*net.TCPAddr{
		{IP: net.IPv4(192, 0, 2, 1), Port: 80},                 // 16-byte form of an IPv4 address
		{IP: net.IP{192, 0, 2, 1}, Port: 80},                   // 4-byte form
		{IP: net.ParseIP("2001:db8::1"), Port: 443},            // IPv6
		{IP: net.ParseIP("fe80::1"), Port: 8080, Zone: "eth0"}, // zoned
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = "203.0.113.9:5555"
		r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, la))
		req := RequestFromHTTPWithClient(r, client, t1)
		if req.Conn.ClientAddr != client {
			t.Errorf("%v: client %v, want the given %v, not RemoteAddr", la, req.Conn.ClientAddr, client)
		}
		if want := netip.MustParseAddrPort(la.String()); req.Conn.ServerAddr != want {
			t.Errorf("%v: server %v, want %v as its text parses", la, req.Conn.ServerAddr, want)
		}
	}
}

// TestHandlerRequestBounds checks that Handler refuses a request beyond
// the bounds the cost model assumes before evaluating anything, and
// passes one at the bounds.
func TestHandlerRequestBounds(t *testing.T) {
	e, sink := newTestEngine(t, Options{})
	p := mustCompile(t, e, `{"inbound":[{"actions":[{"type":"log"}]}]}`, CompileOptions{})
	h := p.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") }))
	// The request line "GET <target> HTTP/1.1\r\nHost: example.com\r\n" and
	// one header line "X-Big: <value>\r\n".
	fixed := len("GET  HTTP/1.1\r\nHost: example.com\r\n") + len("X-Big: \r\n")
	tests := []struct {
		name        string
		target, big int
		want        int
	}{
		{"at both bounds", limits.MaxURLBytes, limits.MaxRequestHeaderBytes - fixed - limits.MaxURLBytes, http.StatusOK},
		{"target too long", limits.MaxURLBytes + 1, 0, http.StatusRequestURITooLong},
		{"headers too long", limits.MaxURLBytes, limits.MaxRequestHeaderBytes - fixed - limits.MaxURLBytes + 1, http.StatusRequestHeaderFieldsTooLarge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sink.reset()
			r := httptest.NewRequest("GET", "/"+strings.Repeat("a", tc.target-1), nil)
			r.Header.Set("X-Big", strings.Repeat("b", tc.big))
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tc.want {
				t.Fatalf("status %d, want %d", w.Code, tc.want)
			}
			if evaluated := len(sink.logs) == 1; evaluated != (tc.want == http.StatusOK) {
				t.Fatalf("policy evaluated: %v", evaluated)
			}
		})
	}
}
