package tunnel_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/proxy"
	"github.com/edgeplane/edgeplane/tunnel"
	"golang.ngrok.com/muxado/v2"
	"golang.ngrok.com/ngrok/config"
)

// smallBuffers is a listener of the tunnel server whose connections have
// small socket buffers, so that an agent that stops reading fills them
// with little: how a stalled agent looks once the kernel's buffers (MiBs
// on loopback) are full.
type smallBuffers struct{ net.Listener }

func (l smallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(16 << 10)
	}
	return c, err
}

// freezable is an agent's socket whose reads stop when frozen: the agent
// stops reading, and what the server writes stays in the sockets'
// buffers. Closing it ends a read stopped.
type freezable struct {
	net.Conn
	frozen chan struct{}
	closed chan struct{}
	once   sync.Once
}

func (c *freezable) freeze() { close(c.frozen) }

func (c *freezable) Read(p []byte) (int, error) {
	select {
	case <-c.frozen:
		<-c.closed
		return 0, net.ErrClosed
	default:
		return c.Conn.Read(p)
	}
}

func (c *freezable) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

// dialFreezable connects a raw agent to addr over a socket it can
// freeze, with a small receive buffer.
func dialFreezable(t *testing.T, e *env, addr string) (*rawAgent, *freezable) {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_ = nc.(*net.TCPConn).SetReadBuffer(16 << 10)
	fc := &freezable{Conn: nc, frozen: make(chan struct{}), closed: make(chan struct{})}
	tc := tls.Client(fc, &tls.Config{RootCAs: e.pool, ServerName: "127.0.0.1"})
	a := &rawAgent{tc: tc, mux: muxado.NewTypedStreamSession(muxado.Client(tc, &muxado.Config{}))}
	t.Cleanup(func() { fc.Close(); a.mux.Close() })
	return a, fc
}

// edgeProxy serves the http endpoints of e's agents through a proxy
// Handler whose Agents is e's tunnel server, on a plain HTTP listener.
func edgeProxy(t *testing.T, e *env, upstreamTimeout time.Duration) (*httptest.Server, *proxy.Configs) {
	t.Helper()
	configs, err := proxy.New(e.ctx, e.svc.Host().DataPlane(), e.st, proxy.Options{Endpoints: e.svc.Host().DataPlane()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { configs.Close() })
	log := slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv := httptest.NewServer(proxy.NewHandler(configs, proxy.HandlerOptions{Agents: e.srv, UpstreamTimeout: upstreamTimeout, Logger: log}))
	t.Cleanup(srv.Close)
	return srv, configs
}

// testLog writes log lines to the test's log.
type testLog struct{ t testing.TB }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// caughtUp waits until configs has read the store as it is now.
func (e *env) caughtUp(t *testing.T, configs *proxy.Configs) {
	t.Helper()
	rev, err := e.st.Revision(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
	defer cancel()
	if err := configs.WaitRevision(ctx, rev); err != nil {
		t.Fatal(err)
	}
}

// post sends body to host through the proxy at url, and returns the
// status (0 when the request failed) and how long the answer took.
func post(client *http.Client, url, host string, body []byte) (int, time.Duration) {
	start := time.Now()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, 0
	}
	req.Host = host
	resp, err := client.Do(req)
	if err != nil {
		return 0, time.Since(start)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, time.Since(start)
}

// TestStalledAgent (issue 41, item 7): an agent that stops reading its
// socket while clients POST large bodies to its endpoint holds none of
// them past the upstream timeout: each gets 504 within it (and a small
// margin), the stalled session is closed within the write timeout
// (counted as stalled), and an honest SDK agent is served afterwards.
// Before, the clients waited until the session died of its heartbeat
// (25 s here), their handlers stuck in the stream's close.
func TestStalledAgent(t *testing.T) {
	const (
		upstreamTimeout = time.Second
		// writeTimeout is well past upstreamTimeout, so that on a loaded
		// machine every client's request reaches the stalled session (and
		// times out: 504) before the session is closed (which would make
		// a late client's request find no session: 502).
		writeTimeout = 5 * time.Second
		clients      = 8
		margin       = 1500 * time.Millisecond
	)
	e := newEnv(t, tunnel.Options{WriteTimeout: writeTimeout})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go e.srv.Serve(smallBuffers{ln})
	e.reserve(t, "stall.example.com")
	e.reserve(t, "honest.example.com")
	_, token := e.token(t)
	srv, configs := edgeProxy(t, e, upstreamTimeout)

	a, sock := dialFreezable(t, e, ln.Addr().String())
	if r := a.auth(t, token, "", ""); r.Error != "" {
		t.Fatalf("Auth: %+v", r)
	}
	if b := a.bind(t, "", "", "stall.example.com"); b.Error != "" {
		t.Fatalf("Bind: %+v", b)
	}
	e.caughtUp(t, configs)
	sock.freeze()

	client := &http.Client{Timeout: 20 * time.Second}
	body := bytes.Repeat([]byte("x"), 2<<20)
	start := time.Now()
	type answer struct {
		status int
		took   time.Duration
	}
	answers := make(chan answer, clients)
	for range clients {
		go func() {
			status, took := post(client, srv.URL+"/upload", "stall.example.com", body)
			answers <- answer{status, took}
		}()
	}
	var slowest time.Duration
	for range clients {
		got := <-answers
		slowest = max(slowest, got.took)
		if got.status != http.StatusGatewayTimeout || got.took > upstreamTimeout+margin {
			t.Errorf("a client's POST to the stalled agent: %d after %s; want 504 within %s", got.status, got.took.Round(time.Millisecond), upstreamTimeout+margin)
		}
	}
	t.Logf("%d clients answered, the slowest after %s (upstream timeout %s)", clients, slowest.Round(time.Millisecond), upstreamTimeout)
	if _, ok := eventually(writeTimeout+10*time.Second, func() bool { return e.refusals(t, "stalled") == 1 }); !ok {
		t.Fatalf("the stalled session was not closed as stalled within %s", writeTimeout+10*time.Second)
	}
	// The writer stalls as soon as the first bodies fill the sockets'
	// buffers, at once; the stall is found within a quarter of the
	// write timeout more (muxframe.Conn.SetWriteTimeout).
	if closedAfter := time.Since(start); closedAfter > writeTimeout*5/4+margin {
		t.Errorf("the stalled session was closed %s after the clients began; want within the write timeout, %s (and a margin)", closedAfter.Round(time.Millisecond), writeTimeout)
	} else {
		t.Logf("the stalled session was closed %s after the clients began (write timeout %s)", closedAfter.Round(time.Millisecond), writeTimeout)
	}
	if n := tunnel.Sessions(e.srv); n != 0 {
		t.Errorf("%d sessions held after the stall; want 0", n)
	}

	// An honest agent is served.
	sess := e.connect(t, e.addr, token)
	l, err := sess.Listen(e.ctx, config.HTTPEndpoint(config.WithDomain("honest.example.com"), config.WithScheme(config.SchemeHTTP)))
	if err != nil {
		t.Fatal(err)
	}
	go http.Serve(httpListener(l), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		fmt.Fprintf(w, "got %d bytes", n)
	}))
	e.caughtUp(t, configs)
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/upload", bytes.NewReader(body))
	req.Host = "honest.example.com"
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(got) != fmt.Sprintf("got %d bytes", len(body)) {
		t.Errorf("the honest agent's answer: %d %q", resp.StatusCode, got)
	}
}

// acceptProxied accepts the next proxied connection on a's session and
// reads its header and HTTP request.
func (a *rawAgent) acceptProxied(t *testing.T) (muxado.Stream, *http.Request) {
	t.Helper()
	str, err := a.mux.AcceptTypedStream()
	if err != nil {
		t.Fatal(err)
	}
	if str.StreamType() != 3 {
		t.Fatalf("a stream of type %d; want 3 (a proxied connection)", str.StreamType())
	}
	br := bufio.NewReader(str)
	var n uint64
	if err := binary.Read(br, binary.LittleEndian, &n); err != nil || n > 1<<20 {
		t.Fatalf("the proxy header's length: %d, %v", n, err)
	}
	hdr := make([]byte, n)
	if _, err := io.ReadFull(br, hdr); err != nil || !json.Valid(hdr) {
		t.Fatalf("the proxy header: %q, %v", hdr, err)
	}
	req, err := http.ReadRequest(br)
	if err != nil {
		t.Fatal(err)
	}
	return str, req
}

// TestClientHangUpResetsStream: a client that hangs up while the agent
// waits for its stream's window (the client reads nothing of a large
// answer) resets the agent's stream: the agent's write fails with
// StreamCancelled. Before, the stream ended with a FIN, and the agent's
// write waited for a window that never came.
func TestClientHangUpResetsStream(t *testing.T) {
	e := newEnv(t, tunnel.Options{})
	e.reserve(t, "big.example.com")
	_, token := e.token(t)
	srv, configs := edgeProxy(t, e, 5*time.Second)
	a := dialRaw(t, e)
	if r := a.auth(t, token, "", ""); r.Error != "" {
		t.Fatalf("Auth: %+v", r)
	}
	if b := a.bind(t, "", "", "big.example.com"); b.Error != "" {
		t.Fatalf("Bind: %+v", b)
	}
	e.caughtUp(t, configs)

	// The client reads the answer's headers, then nothing.
	nc, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	_ = nc.(*net.TCPConn).SetReadBuffer(16 << 10)
	defer nc.Close()
	fmt.Fprintf(nc, "GET /big HTTP/1.1\r\nHost: big.example.com\r\n\r\n")

	str, _ := a.acceptProxied(t)
	const size = 1 << 30
	if _, err := fmt.Fprintf(str, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", size); err != nil {
		t.Fatal(err)
	}
	// The agent writes until its window is spent (the proxy's buffers,
	// the client's socket and the stream's window are full), then waits.
	wrote := make(chan error, 1)
	var written atomic.Int64
	go func() {
		chunk := make([]byte, 64<<10)
		for {
			n, err := str.Write(chunk)
			written.Add(int64(n))
			if err != nil {
				wrote <- err
				return
			}
		}
	}()
	resp, err := http.ReadResponse(bufio.NewReader(nc), nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the answer's headers: %v, %v", resp, err)
	}
	// Wait for the agent's write to stop going forward (polled every 50
	// ms: a write that took nothing since the last look).
	last := int64(-1)
	waited := time.Now()
	for w := written.Load(); w != last || w == 0; w = written.Load() {
		if time.Since(waited) > 10*time.Second {
			t.Fatalf("the agent's writes never stopped: %d bytes", w)
		}
		last = w
		select {
		case err := <-wrote:
			t.Fatalf("the agent's write failed before the client hung up: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	nc.Close() // the client hangs up
	select {
	case err := <-wrote:
		if code, _ := muxado.GetError(err); code != muxado.StreamCancelled {
			t.Errorf("the agent's write, after %d bytes: %v (code %d); want a reset of code StreamCancelled (%d)", written.Load(), err, code, muxado.StreamCancelled)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the agent's write still waits 10 s after the client hung up, after %d bytes: its stream was not reset", written.Load())
	}
}
