package proxy

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/netip"
	"net/textproto"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// seenRequest is what an upstream saw of a request.
type seenRequest struct {
	Method, RequestURI, Host string
	Header                   http.Header
	ContentLength            int64
	TransferEncoding         []string
}

// recordingUpstream records each request it gets (by X-Case) and answers
// with hop-by-hop fields, a field its Connection names, and a trailer.
func recordingUpstream(t *testing.T) (*httptest.Server, func(string) seenRequest) {
	t.Helper()
	var mu sync.Mutex
	seen := map[string]seenRequest{}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.Header.Get("X-Case")] = seenRequest{r.Method, r.RequestURI, r.Host, r.Header.Clone(), r.ContentLength, r.TransferEncoding}
		mu.Unlock()
		h := w.Header()
		h.Set("Connection", "X-Hop")
		h.Set("X-Hop", "dropped")
		h.Set("Keep-Alive", "timeout=5")
		h.Add("X-Multi", "a")
		h.Add("X-Multi", "b")
		switch r.URL.Path {
		case "/trailer":
			h.Set("Trailer", "X-Checksum")
			_, _ = io.WriteString(w, "body with a trailer")
			h.Set("X-Checksum", "abc")
		case "/events":
			h.Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "data: 1\n\n")
		default:
			_, _ = io.WriteString(w, "hello")
		}
	}))
	t.Cleanup(up.Close)
	return up, func(c string) seenRequest {
		mu.Lock()
		defer mu.Unlock()
		return seen[c]
	}
}

// TestForwardMatchesReverseProxy: the direct path sends the upstream what
// ReverseProxy (the Handler over a transport of the caller's) sends, and
// gives the client what ReverseProxy gives, for requests of every method
// without a body and with hop-by-hop fields, forwarding fields (from an
// untrusted and a trusted client), odd queries and user agents.
func TestForwardMatchesReverseProxy(t *testing.T) {
	up, seen := recordingUpstream(t)
	c := fleet(t, 1, up.URL, "")
	for _, trusted := range []bool{false, true} {
		var tp []netip.Prefix
		if trusted {
			tp = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
		}
		direct := NewHandler(c, HandlerOptions{TrustedProxies: tp})
		if direct.plain == nil {
			t.Fatal("the default transport is not the direct path's")
		}
		rp := NewHandler(c, HandlerOptions{TrustedProxies: tp, Transport: http.DefaultTransport.(*http.Transport).Clone()})
		servers := map[string]*httptest.Server{"direct": httptest.NewServer(direct), "rp": httptest.NewServer(rp)}
		for _, s := range servers {
			t.Cleanup(s.Close)
		}
		for _, tc := range []struct {
			name, method, target string
			header               http.Header
		}{
			{"get", "GET", "/a/b?x=1&y=%41+b", http.Header{"Accept": {"*/*"}, "X-Two": {"1", "2"}, "User-Agent": {"curl/8"}}},
			{"no user agent", "GET", "/", http.Header{"User-Agent": {""}}},
			{"hop by hop", "GET", "/hop", http.Header{"Connection": {"keep-alive, X-Drop"}, "X-Drop": {"1"}, "Keep-Alive": {"5"},
				"Te": {"trailers, deflate"}, "Proxy-Authorization": {"Basic Zm9v"}, "X-Keep": {"kept"}}},
			{"forwarded", "GET", "/f", http.Header{"X-Forwarded-For": {"203.0.113.7, 198.51.100.2"}, "X-Forwarded-Host": {"evil"},
				"X-Forwarded-Proto": {"ftp"}, "Forwarded": {"for=1.2.3.4"}}},
			{"delete", "DELETE", "/d", nil},
			{"post without a body", "POST", "/p", nil},
			{"options", "OPTIONS", "/o", nil},
			{"head", "HEAD", "/h", nil},
			{"trailer", "GET", "/trailer", nil},
			{"events", "GET", "/events", nil},
			{"escaped path", "GET", "/a%2Fb/%7Ec", nil},
			{"semicolon query (ReverseProxy's path)", "GET", "/q?a=1;b=2", nil},
		} {
			t.Run(tc.name, func(t *testing.T) {
				type answer struct {
					status          int
					header, trailer http.Header
					body            string
				}
				var seenBy [2]seenRequest
				var answers [2]answer
				for i, via := range []string{"direct", "rp"} {
					req, _ := http.NewRequest(tc.method, servers[via].URL+tc.target, nil)
					req.Host = benchHostport(0)
					for k, vv := range tc.header {
						req.Header[k] = vv
					}
					req.Header.Set("X-Case", tc.name+via)
					resp, err := servers[via].Client().Do(req)
					if err != nil {
						t.Fatal(err)
					}
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					resp.Header.Del("Date")
					answers[i] = answer{resp.StatusCode, resp.Header, resp.Trailer, string(b)}
					seenBy[i] = seen(tc.name + via)
					seenBy[i].Header.Del("X-Case")
				}
				if !reflect.DeepEqual(seenBy[0], seenBy[1]) {
					t.Errorf("the upstream saw\n direct: %+v\n     rp: %+v", seenBy[0], seenBy[1])
				}
				if !reflect.DeepEqual(answers[0], answers[1]) {
					t.Errorf("the client got\n direct: %+v\n     rp: %+v", answers[0], answers[1])
				}
				if h := answers[0].header; h.Get("X-Hop") != "" || h.Get("Keep-Alive") != "" || !slices.Equal(h["X-Multi"], []string{"a", "b"}) {
					t.Errorf("response header %v", h)
				}
			})
		}
	}
}

// FuzzUpstreamRequest: whatever the client's request (method, target,
// Host, fields, remote address), the direct path's request is one
// well-formed HTTP/1.1 request without a body that net/http reads back
// with the method, target and Host as given, every field but the
// hop-by-hop and forwarding ones as given (values trimmed), and its own
// forwarding fields; or it is refused (a field http.Transport would not
// send) with nothing more on the wire than a partial request.
func FuzzUpstreamRequest(f *testing.F) {
	f.Add("GET", "/a?b=c", "app.example.com", "X-A", "1", "Connection", "x-a", "192.0.2.1:5", true)
	f.Add("POST", "/", "h:443", "User-Agent", " ua ", "X-Forwarded-For", "1.2.3.4", "[2001:db8::1]:80", false)
	f.Add("DELETE", "/%41", "h", "Te", "trailers", "X-B", "v\r\nX-Injected: 1", "bad", true)
	f.Fuzz(func(t *testing.T, method, target, host, k1, v1, k2, v2, remote string, forwarded bool) {
		if !validName(method) || !strings.HasPrefix(target, "/") || host == "" || !validValue(host) || strings.ContainsAny(host, " \t") {
			return // the server accepts no such request line or Host
		}
		r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(method + " " + target + " HTTP/1.1\r\nHost: " + host + "\r\n\r\n")))
		if err != nil {
			return
		}
		r.RemoteAddr = remote
		r.Header.Add(k1, v1)
		r.Header.Add(k2, v2)
		var buf bytes.Buffer
		bw := bufio.NewWriter(&buf)
		werr := upstreamRequest{r: r, forwarded: forwarded}.write(bw)
		_ = bw.Flush()
		if werr != nil {
			return // refused: the connection is closed
		}
		br := bufio.NewReader(&buf)
		got, err := http.ReadRequest(br)
		if err != nil {
			t.Fatalf("the request written does not parse: %v\n%q", err, buf.String())
		}
		if br.Buffered() != 0 {
			t.Fatalf("%d bytes follow the request:\n%q", br.Buffered(), buf.String())
		}
		if got.Method != r.Method || got.RequestURI != r.URL.RequestURI() || got.Host != r.Host || got.ContentLength != 0 {
			t.Fatalf("read back %s %s Host %s length %d; want %s %s Host %s", got.Method, got.RequestURI, got.Host, got.ContentLength,
				r.Method, r.URL.RequestURI(), r.Host)
		}
		conn := r.Header["Connection"]
		for k, vv := range r.Header {
			if skipRequest[k] || namedIn(conn, k) {
				continue
			}
			if k == "User-Agent" {
				continue
			}
			var want []string
			for _, v := range vv {
				want = append(want, strings.TrimSpace(v))
			}
			if !slices.Equal(got.Header[k], want) {
				t.Fatalf("field %s read back as %q; want %q\n%q", k, got.Header[k], want, buf.String())
			}
		}
		for k := range got.Header {
			switch {
			case k == "X-Forwarded-For" || k == "X-Forwarded-Host" || k == "X-Forwarded-Proto" || k == "Content-Length" ||
				k == "User-Agent" || k == "Te":
			case skipRequest[k] || namedIn(conn, k) || r.Header[k] == nil:
				t.Fatalf("field %s sent; the client's request has it not, or it is hop-by-hop\n%q", k, buf.String())
			}
		}
		if got.Header.Get("X-Forwarded-Host") != r.Host || got.Header.Get("X-Forwarded-Proto") != "http" {
			t.Fatalf("forwarding fields %v", got.Header)
		}
	})
}

// TestForwardConcurrent: clients at once through the direct path, on
// kept-alive and new connections, each get their own answer (race
// detector on in the suite's -race run).
func TestForwardConcurrent(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("stream") != "" {
			w.Header().Set("Content-Type", "text/event-stream")
		}
		_, _ = io.WriteString(w, r.URL.RequestURI())
	}))
	t.Cleanup(up.Close)
	c := fleet(t, 4, up.URL, "")
	s := httptest.NewServer(NewHandler(c, HandlerOptions{}))
	t.Cleanup(s.Close)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			client := s.Client()
			if g%2 == 1 {
				client = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
			}
			for i := range 40 {
				target := "/g" + string(rune('a'+g)) + "?i=" + strings.Repeat("x", i)
				if i%3 == 0 {
					target += "&stream=1"
				}
				req, _ := http.NewRequest("GET", s.URL+target, nil)
				req.Host = benchHostport(i % 4)
				resp, err := client.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || string(b) != target {
					t.Errorf("%s: %d %q", target, resp.StatusCode, b)
				}
			}
		})
	}
	wg.Wait()
}

// rawUpstream answers each request with the bytes answers gives for its
// path, as they are, then closes the connection when close says so
// (else it waits for the client to close it).
func rawUpstream(t *testing.T, answers map[string]string, closes map[string]bool) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					r, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					if _, err := io.WriteString(c, answers[r.URL.Path]); err != nil || closes[r.URL.Path] {
						return
					}
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// TestForwardUpstreamAnswers: through the direct path, an upstream's 1xx
// reaches the client before the answer, trailers it did not announce
// reach it as trailers, a 101 to a request that asked for no upgrade is
// a 502, no head within the upstream timeout a 504, and a body cut short
// cuts the client's answer short.
func TestForwardUpstreamAnswers(t *testing.T) {
	up := rawUpstream(t, map[string]string{
		"/hints":   "HTTP/1.1 103 Early Hints\r\nLink: </style.css>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		"/trailer": "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nX-Late: yes\r\n\r\n",
		"/switch":  "HTTP/1.1 101 Switching Protocols\r\nUpgrade: other\r\nConnection: Upgrade\r\n\r\n",
		"/stall":   "",
		"/cut":     "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort",
	}, map[string]bool{"/switch": true, "/cut": true})
	c := fleet(t, 1, up, "")
	s := httptest.NewServer(NewHandler(c, HandlerOptions{}))
	t.Cleanup(s.Close)
	// Only /stall is sent through the handler with a short upstream
	// timeout: the others must not meet it on a busy machine.
	short := httptest.NewServer(NewHandler(c, HandlerOptions{UpstreamTimeout: 200 * time.Millisecond}))
	t.Cleanup(short.Close)
	get := func(path string, trace *httptrace.ClientTrace) (*http.Response, string, error) {
		s := s
		if path == "/stall" {
			s = short
		}
		ctx := context.Background()
		if trace != nil {
			ctx = httptrace.WithClientTrace(ctx, trace)
		}
		req, _ := http.NewRequestWithContext(ctx, "GET", s.URL+path, nil)
		req.Host = benchHostport(0)
		resp, err := s.Client().Do(req)
		if err != nil {
			return nil, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp, string(b), err
	}

	var hints []string
	resp, body, err := get("/hints", &httptrace.ClientTrace{Got1xxResponse: func(code int, hd textproto.MIMEHeader) error {
		hints = append(hints, strconv.Itoa(code)+" "+hd.Get("Link"))
		return nil
	}})
	if err != nil || resp.StatusCode != 200 || body != "ok" || !slices.Equal(hints, []string{"103 </style.css>"}) {
		t.Errorf("/hints: %v %v %q, 1xx %q", err, resp, body, hints)
	}
	resp, body, err = get("/trailer", nil)
	if err != nil || resp.StatusCode != 200 || body != "ok" || resp.Trailer.Get("X-Late") != "yes" {
		t.Errorf("/trailer: %v %v %q", err, resp, body)
	}
	resp, _, err = get("/switch", nil)
	if err != nil || resp.StatusCode != http.StatusBadGateway {
		t.Errorf("/switch: %v %v; want 502", err, resp)
	}
	resp, body, err = get("/stall", nil)
	if err != nil || resp.StatusCode != http.StatusGatewayTimeout || !strings.HasPrefix(body, "gateway timeout") {
		t.Errorf("/stall: %v %v %q; want 504", err, resp, body)
	}
	if _, body, err = get("/cut", nil); err == nil {
		t.Errorf("/cut: the client read %q to its end", body)
	}
}
