package proxy

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/textproto"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// newTestTransport returns an upstreamTransport over a fallback with the
// Handler's default settings.
func newTestTransport(t *testing.T, headerTimeout time.Duration) *upstreamTransport {
	t.Helper()
	fb := http.DefaultTransport.(*http.Transport).Clone()
	fb.MaxIdleConns, fb.MaxIdleConnsPerHost = 1024, 256
	fb.DisableCompression = true
	fb.ResponseHeaderTimeout = headerTimeout
	fb.MaxResponseHeaderBytes = DefaultMaxResponseHeaderBytes
	tr := newUpstreamTransport(fb)
	tr.plain = true // whatever the test's environment says of proxies
	t.Cleanup(fb.CloseIdleConnections)
	return tr
}

// countingServer is an httptest.Server that counts the connections it
// accepted.
func countingServer(t *testing.T, h http.Handler) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	s := httptest.NewUnstartedServer(h)
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			n.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s, &n
}

// upstreamRoundTrip sends req through tr and returns the response's status,
// body and trailer.
func upstreamRoundTrip(t *testing.T, tr http.RoundTripper, req *http.Request) (int, string, http.Header) {
	t.Helper()
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", req.Method, req.URL, err)
	}
	_ = resp.Body.Close()
	return resp.StatusCode, string(b), resp.Trailer
}

// TestUpstreamTransportReuse: requests without a body, one after the
// other, of every kind of response framing, all go over one connection;
// a request with a body goes to the fallback and is answered too.
func TestUpstreamTransportReuse(t *testing.T) {
	up, conns := countingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/empty":
			w.WriteHeader(http.StatusNoContent)
		case "/chunked":
			w.Header().Set("Trailer", "X-Sum")
			_, _ = io.WriteString(w, "part one, ")
			w.(http.Flusher).Flush()
			_, _ = io.WriteString(w, "part two")
			w.Header().Set("X-Sum", "42")
		case "/post":
			b, _ := io.ReadAll(r.Body)
			_, _ = w.Write(b)
		default:
			_, _ = io.WriteString(w, "hello "+r.Host+" "+r.URL.RequestURI())
		}
	}))
	tr := newTestTransport(t, time.Minute)
	for i, tc := range []struct {
		method, path, body string
		status             int
		want               string
		trailer            string
	}{
		{"GET", "/a?x=1", "", 200, "hello app.example.com:443 /a?x=1", ""},
		{"HEAD", "/a", "", 200, "", ""},
		{"GET", "/empty", "", 204, "", ""},
		{"GET", "/chunked", "", 200, "part one, part two", "42"},
		{"DELETE", "/b", "", 200, "hello app.example.com:443 /b", ""},
		{"GET", "/c", "", 200, "hello app.example.com:443 /c", ""},
		{"POST", "/post", "a body", 200, "a body", ""},
	} {
		var body io.Reader
		if tc.body != "" {
			body = strings.NewReader(tc.body)
		}
		req, _ := http.NewRequest(tc.method, up.URL+tc.path, body)
		req.Host = "app.example.com:443"
		status, got, trailer := upstreamRoundTrip(t, tr, req)
		if status != tc.status || got != tc.want || trailer.Get("X-Sum") != tc.trailer {
			t.Errorf("%d: %s %s: %d %q trailer %q; want %d %q trailer %q", i, tc.method, tc.path, status, got, trailer.Get("X-Sum"), tc.status, tc.want, tc.trailer)
		}
	}
	// One connection for the requests without a body, one of the
	// fallback's for the POST.
	if n := conns.Load(); n != 2 {
		t.Errorf("%d connections to the upstream; want 2 (one reused by every request without a body, one for the fallback)", n)
	}
}

// closingUpstream answers each request on a connection of its own with
// a kept-alive 200 "ok", then closes the connection (without saying so)
// and reports it on closed.
func closingUpstream(t *testing.T) (string, *atomic.Int64, chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	var n atomic.Int64
	closed := make(chan struct{}, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			go func() {
				defer func() { closed <- struct{}{} }()
				defer c.Close()
				if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
					return
				}
				_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			}()
		}
	}()
	return "http://" + ln.Addr().String(), &n, closed
}

// TestUpstreamTransportClosedIdle: an idle connection the upstream closed
// is not the end of the next request: an idempotent one is sent again on
// a new connection, a non-idempotent one is never sent on it (the check
// before its use finds it closed).
func TestUpstreamTransportClosedIdle(t *testing.T) {
	for _, method := range []string{"GET", "POST"} {
		t.Run(method, func(t *testing.T) {
			url, conns, closed := closingUpstream(t)
			tr := newTestTransport(t, time.Minute)
			for i := range 3 {
				req, _ := http.NewRequest(method, url+"/", nil)
				if status, body, _ := upstreamRoundTrip(t, tr, req); status != 200 || body != "ok" {
					t.Fatalf("request %d: %d %q", i, status, body)
				}
				select { // the upstream has closed the connection now in the pool
				case <-closed:
				case <-time.After(10 * time.Second):
					t.Fatal("the upstream did not close its connection")
				}
			}
			if n := conns.Load(); n != 3 {
				t.Errorf("%d connections; want 3", n)
			}
		})
	}
}

// TestUpstreamTransportInformational: 1xx responses reach the request's
// client trace (ReverseProxy forwards them to the client), then the
// response follows; more than 5 fail the request.
func TestUpstreamTransportInformational(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int
		ok   bool
	}{{"one", 1, true}, {"five", 5, true}, {"six", 6, false}} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			go func() {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				defer c.Close()
				if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
					return
				}
				_, _ = io.WriteString(c, strings.Repeat("HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n", tc.n)+
					"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
				_, _ = io.Copy(io.Discard, c)
			}()
			var hints []string
			trace := &httptrace.ClientTrace{Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
				hints = append(hints, h.Get("Link"))
				return nil
			}}
			req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "GET", "http://"+ln.Addr().String()+"/", nil)
			resp, err := newTestTransport(t, time.Minute).RoundTrip(req)
			if !tc.ok {
				if err == nil {
					resp.Body.Close()
					t.Fatalf("%d informational responses went through", tc.n)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || string(b) != "ok" || len(hints) != tc.n || hints[0] != "</style.css>; rel=preload" {
				t.Errorf("%d %q, hints %q", resp.StatusCode, b, hints)
			}
		})
	}
}

// TestUpstreamTransportEnds: a request whose context ends while the
// upstream sends its body, or before its headers, ends at once and its
// connection is not kept; an upstream that sends no headers within the
// timeout fails the request with a timeout (the Handler's 504).
func TestUpstreamTransportEnds(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	up, _ := countingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/stall-headers" {
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		w.Header().Set("Content-Length", "100")
		_, _ = io.WriteString(w, "the start")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))

	t.Run("body", func(t *testing.T) {
		tr := newTestTransport(t, time.Minute)
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, "GET", up.URL+"/stall-body", nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 9)
		if _, err := io.ReadFull(resp.Body, buf); err != nil || string(buf) != "the start" {
			t.Fatalf("%q %v", buf, err)
		}
		cancel()
		if _, err := io.ReadAll(resp.Body); err == nil {
			t.Error("the body read to its end after the request's context ended")
		}
		resp.Body.Close()
		if tr.pool.n != 0 {
			t.Errorf("%d idle connections; want none", tr.pool.n)
		}
	})
	t.Run("headers", func(t *testing.T) {
		tr := newTestTransport(t, time.Minute)
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, "GET", up.URL+"/stall-headers", nil)
		errc := make(chan error, 1)
		go func() {
			resp, err := tr.RoundTrip(req)
			if err == nil {
				resp.Body.Close()
			}
			errc <- err
		}()
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Errorf("err %v; want context.Canceled", err)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		tr := newTestTransport(t, 50*time.Millisecond)
		req, _ := http.NewRequest("GET", up.URL+"/stall-headers", nil)
		resp, err := tr.RoundTrip(req)
		if err == nil {
			resp.Body.Close()
			t.Fatal("no error")
		}
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() || !strings.Contains(err.Error(), "timeout awaiting response headers") {
			t.Errorf("err %v; want a timeout awaiting response headers", err)
		}
	})
}

// TestUpstreamTransportConcurrent: many requests at once share the pool;
// every answer is the right one and the pool keeps at most its bound.
func TestUpstreamTransportConcurrent(t *testing.T) {
	up, _ := countingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.URL.Path)
	}))
	tr := newTestTransport(t, time.Minute)
	tr.pool.maxPerHost = 3
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				path := "/" + string(rune('a'+g)) + strings.Repeat("x", i)
				req, _ := http.NewRequest("GET", up.URL+path, nil)
				resp, err := tr.RoundTrip(req)
				if err != nil {
					t.Error(err)
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if string(b) != path {
					t.Errorf("%s answered %q", path, b)
				}
			}
		})
	}
	wg.Wait()
	tr.pool.mu.Lock()
	defer tr.pool.mu.Unlock()
	if tr.pool.n > 3 {
		t.Errorf("%d idle connections; want at most 3", tr.pool.n)
	}
}

// TestConnPoolExpire: connections idle for longer than the timeout are
// closed by the sweep and never handed out; newer ones stay.
func TestConnPoolExpire(t *testing.T) {
	p := &connPool{maxPerHost: 4, max: 8, timeout: time.Hour}
	var closed []int
	conn := func(i int) *upstreamConn {
		a, b := net.Pipe()
		t.Cleanup(func() { a.Close(); b.Close() })
		return &upstreamConn{addr: "up:80", conn: &closeRecorder{Conn: a, i: i, closed: &closed}}
	}
	for i := range 3 {
		p.put(conn(i))
	}
	p.sweep.Stop()
	p.idle["up:80"][0].idleSince = time.Now().Add(-2 * time.Hour)
	p.idle["up:80"][1].idleSince = time.Now().Add(-2 * time.Hour)
	p.expire()
	if p.n != 1 || len(closed) != 2 {
		t.Fatalf("%d idle, closed %v; want 1 idle, 0 and 1 closed", p.n, closed)
	}
	if p.sweep != nil {
		p.sweep.Stop()
	}
	p.idle["up:80"][0].idleSince = time.Now().Add(-2 * time.Hour)
	if pc := p.get("up:80"); pc != nil || len(closed) != 3 {
		t.Errorf("an expired connection was handed out (%v), closed %v", pc, closed)
	}
	for i := 3; i < 8; i++ {
		p.put(conn(i))
	}
	if p.n != 4 || len(closed) != 4 {
		t.Errorf("%d idle, closed %v; want the bound of 4 per address", p.n, closed)
	}
	p.sweep.Stop()
}

type closeRecorder struct {
	net.Conn
	i      int
	closed *[]int
}

func (c *closeRecorder) Close() error {
	*c.closed = append(*c.closed, c.i)
	return c.Conn.Close()
}
