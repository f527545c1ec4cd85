package httpserver_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/httpserver"
	"github.com/edgeplane/edgeplane/policy/limits"
)

// start serves h with o on a loopback listener until the test ends.
func start(t *testing.T, h http.Handler, o httpserver.Options) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httpserver.New(h, o)
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close(); <-done })
	return ln.Addr().String()
}

// roundTrip writes raw to addr and returns the status line of the answer,
// or the read error (io.EOF when the server closed the connection).
func roundTrip(t *testing.T, addr, raw string) (string, error) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second)) // a bound on a hung test, not a timing assertion
	if _, err := io.WriteString(c, raw); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSpace(line), err
}

func ok(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }

func TestNewDefaults(t *testing.T) {
	srv := httpserver.New(http.HandlerFunc(ok), httpserver.Options{})
	if srv.ReadHeaderTimeout != httpserver.DefaultReadHeaderTimeout || srv.ReadTimeout != httpserver.DefaultReadTimeout ||
		srv.WriteTimeout != httpserver.DefaultWriteTimeout || srv.IdleTimeout != httpserver.DefaultIdleTimeout ||
		srv.MaxHeaderBytes != limits.MaxRequestHeaderBytes {
		t.Errorf("defaults: %+v", srv)
	}
	srv = httpserver.New(http.HandlerFunc(ok), httpserver.Options{ReadTimeout: -1, WriteTimeout: time.Second, MaxHeaderBytes: 1 << 30})
	if srv.ReadTimeout != 0 || srv.WriteTimeout != time.Second || srv.MaxHeaderBytes != limits.MaxRequestHeaderBytes {
		t.Errorf("negative turns off, positive kept, header bound capped: %+v", srv)
	}
}

// TestRequestBounds: what a server from New accepts agrees with what the
// policy cost model assumes.
func TestRequestBounds(t *testing.T) {
	addr := start(t, http.HandlerFunc(ok), httpserver.Options{})
	pathOf := func(n int) string { return "/" + strings.Repeat("a", n-1) }
	for _, tc := range []struct {
		name, raw, want string
	}{
		{"url at the bound", "GET " + pathOf(limits.MaxURLBytes) + " HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 200 OK"},
		{"url over the bound", "GET " + pathOf(limits.MaxURLBytes+1) + " HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 414 Request URI Too Long"},
		{"query counts", "GET /?" + strings.Repeat("q", limits.MaxURLBytes) + " HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 414 Request URI Too Long"},
		{"headers over the bound", "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("b", limits.MaxRequestHeaderBytes+4096) + "\r\n\r\n", "HTTP/1.1 431 Request Header Fields Too Large"},
		{"headers under the bound", "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("b", limits.MaxRequestHeaderBytes-1024) + "\r\n\r\n", "HTTP/1.1 200 OK"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := roundTrip(t, addr, tc.raw)
			if got != tc.want {
				t.Errorf("status %q (%v), want %q", got, err, tc.want)
			}
		})
	}
}

func TestLimitURLWithoutRequestURI(t *testing.T) {
	h := httpserver.LimitURL(http.HandlerFunc(ok), 16)
	for path, want := range map[string]int{"/short": 200, "/" + strings.Repeat("l", 16): 414} {
		r, _ := http.NewRequest("GET", "http://x"+path, nil)
		w := &recorder{header: http.Header{}}
		h.ServeHTTP(w, r)
		if w.code != want {
			t.Errorf("%s: %d, want %d", path, w.code, want)
		}
	}
}

type recorder struct {
	header http.Header
	code   int
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = 200
	}
	return len(b), nil
}
func (r *recorder) WriteHeader(code int) { r.code = code }

// TestTimeouts: a body that never arrives, a handler that never finishes
// and an idle connection are each cut by their timeout.
func TestTimeouts(t *testing.T) {
	const short = 100 * time.Millisecond
	readErr := make(chan error, 1)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	mux := http.NewServeMux()
	mux.HandleFunc("/read", func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		readErr <- err
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-time.After(5 * short):
		}
		io.WriteString(w, "late")
	})
	mux.HandleFunc("/", ok)
	addr := start(t, mux, httpserver.Options{ReadTimeout: short, WriteTimeout: short, IdleTimeout: short})

	t.Run("read", func(t *testing.T) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, "POST /read HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n") // and never the body
		select {
		case err := <-readErr:
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() {
				t.Errorf("reading a body that never comes: %v, want a timeout", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the body read was never cut")
		}
	})
	t.Run("write", func(t *testing.T) {
		got, err := roundTrip(t, addr, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
		if got != "" || err == nil {
			t.Errorf("a response later than WriteTimeout arrived: %q, %v", got, err)
		}
	})
	t.Run("idle", func(t *testing.T) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		br := bufio.NewReader(c)
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if _, err := br.ReadByte(); err != io.EOF {
			t.Errorf("idle connection: %v, want the server to close it (EOF)", err)
		}
	})
}

// TestShutdownAll: every server stops; an in-flight request finishes
// first.
func TestShutdownAll(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	held := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-release // in flight until the test lets it finish
		io.WriteString(w, "done")
	})
	var servers []*http.Server
	var addrs []string
	for _, h := range []http.Handler{held, http.HandlerFunc(ok)} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := httpserver.New(h, httpserver.Options{})
		go srv.Serve(ln)
		servers = append(servers, srv)
		addrs = append(addrs, ln.Addr().String())
	}
	c, err := net.Dial("tcp", addrs[0])
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second)) // a bound on a hung test
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	<-started
	done := make(chan error, 1)
	go func() { done <- httpserver.ShutdownAll(10*time.Second, servers...) }()
	select {
	case err := <-done:
		t.Fatalf("ShutdownAll returned (%v) while a request was in flight", err)
	default:
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if line, _ := bufio.NewReader(c).ReadString('\n'); strings.TrimSpace(line) != "HTTP/1.1 200 OK" {
		t.Errorf("the in-flight request got %q", line)
	}
	for _, a := range addrs {
		if conn, err := net.Dial("tcp", a); err == nil {
			conn.Close()
			t.Errorf("%s still accepts connections", a)
		}
	}
}
