package proxy

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/credentials"
	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/resource"
)

// The agent tests' tunnels are the Service's, registered by the tests
// as a tunnel server would register an agent's (package tunnel, which
// does it for real, is not part of these tests): a tunnel labeled
// agentLabel=<name> is read by the Configs (through hooks.options, or
// fleetWith) with the TunnelSession "ts_<name>" and, when it registered
// no forwards_to, the informational one an agent reports
// ("app://<name>/server?pid=12").
const agentLabel = "agent"

// asAgents gives the tunnels labeled agentLabel their TunnelSession (and
// informational forwards_to), as described above. ts is the caller's
// own copy.
func asAgents(ts []backends.Tunnel) []backends.Tunnel {
	for i := range ts {
		name := ts[i].Labels[agentLabel]
		if name == "" {
			continue
		}
		ts[i].TunnelSession = &resource.Ref{ID: agents.SessionPrefix + name}
		if ts[i].ForwardsTo == "" {
			ts[i].ForwardsTo = "app://" + name + "/server?pid=12"
		}
	}
	return ts
}

// registerAgentTunnel registers, in p's account, a tunnel labeled
// app=<app> that agent <agent> holds (see agentLabel), reporting
// forwardsTo, and returns its ID. The caller syncs.
func registerAgentTunnel(t testing.TB, svc *edgeplane.Service, p edgeplane.Principal, app, agent, forwardsTo string) string {
	t.Helper()
	ctx := context.Background()
	cred, err := svc.CreateCredential(ctx, p, credentials.CreateParams{ACL: []string{"bind:app=" + app, "bind:" + agentLabel + "=" + agent}})
	if err != nil {
		t.Fatal(err)
	}
	tn, err := svc.Host().RegisterTunnel(ctx, *cred.Token, backends.RegisterTunnelParams{
		Labels: map[string]string{"app": app, agentLabel: agent}, ForwardsTo: forwardsTo})
	if err != nil {
		t.Fatal(err)
	}
	return tn.ID
}

// fakeAgents is an agents.Dialer over agents that live in the test.
// DialTunnel records each call, then hands the agent's end of a new
// connection pair (net.Pipe, or with loopback a TCP connection over
// 127.0.0.1, which can half-close) to the agent: an HTTPS edge's (or
// http or https endpoint's) stream to http (an http.Server, as an agent runs http.Serve on its tunnel), a
// TLS edge's stream of the client's own TLS to a TLS echo server with
// passTLS's certificate, any other to an echo server. A tunnel in fail
// gets that error instead, and so do the next failNext calls, whatever
// their tunnel.
type fakeAgents struct {
	loopback bool
	http     *agentHTTP
	passTLS  *tls.Config

	mu       sync.Mutex
	fail     map[string]error
	failNext int
	broken   map[string]bool // tunnels whose streams open, then break before an answer
	dials    []*agentDial
}

var _ agents.Dialer = (*fakeAgents)(nil)

// agentDial is one call of DialTunnel.
type agentDial struct {
	node     string
	tunnelID string
	header   agents.ConnHeader
	err      error
	read     *firstBytes // what the agent read; nil when the dial failed
}

func (f *fakeAgents) DialTunnel(ctx context.Context, node, tunnelID string, h agents.ConnHeader) (net.Conn, error) {
	d := &agentDial{node: node, tunnelID: tunnelID, header: h}
	f.mu.Lock()
	d.err = f.fail[tunnelID]
	if f.failNext > 0 {
		f.failNext--
		d.err = io.ErrClosedPipe
	}
	f.mu.Unlock()
	var proxySide, agentSide net.Conn
	if d.err == nil {
		proxySide, agentSide, d.err = f.pair(ctx)
	}
	if d.err == nil {
		d.read = &firstBytes{Conn: agentSide}
	}
	f.mu.Lock()
	f.dials = append(f.dials, d)
	broken := f.broken[tunnelID]
	f.mu.Unlock()
	if d.err != nil {
		return nil, d.err
	}
	if broken { // the agent's session dies under the stream: it takes the request, then nothing
		go func() {
			_, _ = d.read.Read(make([]byte, 1))
			d.read.Close()
		}()
		return proxySide, nil
	}
	go f.serve(d)
	return proxySide, nil
}

// failing makes DialTunnel of tunnelID fail with err.
func (f *fakeAgents) failing(tunnelID string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail == nil {
		f.fail = map[string]error{}
	}
	f.fail[tunnelID] = err
}

// breaking makes the streams of tunnelID open, then close once the
// agent side has read a byte, with no answer.
func (f *fakeAgents) breaking(tunnelID string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.broken == nil {
		f.broken = map[string]bool{}
	}
	f.broken[tunnelID] = true
}

// calls returns the calls of DialTunnel so far.
func (f *fakeAgents) calls() []*agentDial {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*agentDial(nil), f.dials...)
}

// callsOf returns the number of calls of DialTunnel for tunnelID.
func (f *fakeAgents) callsOf(tunnelID string) int {
	n := 0
	for _, d := range f.calls() {
		if d.tunnelID == tunnelID {
			n++
		}
	}
	return n
}

// pair returns the two ends of a new connection.
func (f *fakeAgents) pair(ctx context.Context) (net.Conn, net.Conn, error) {
	if !f.loopback {
		a, b := net.Pipe()
		return a, b, nil
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	defer l.Close()
	c, err := (&net.Dialer{}).DialContext(ctx, "tcp", l.Addr().String())
	if err != nil {
		return nil, nil, err
	}
	a, err := l.Accept()
	if err != nil {
		c.Close()
		return nil, nil, err
	}
	return c, a, nil
}

// serve runs the agent's side of a stream.
func (f *fakeAgents) serve(d *agentDial) {
	var c net.Conn = d.read
	switch {
	case d.header.EdgeType == agents.EdgeHTTPS,
		d.header.EdgeType == agents.EdgeNone && (d.header.Proto == "http" || d.header.Proto == "https"): // an endpoint's
		f.http.push(d, c)
		return
	case d.header.PassthroughTLS:
		c = tls.Server(c, f.passTLS)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Minute)) // bounds a hung test
	_, _ = io.Copy(c, c)
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_, _ = io.Copy(io.Discard, c)
}

// firstBytes records the first 64 bytes read from its connection, and
// passes CloseWrite on when the connection has it.
type firstBytes struct {
	net.Conn
	mu    sync.Mutex
	first []byte
}

func (c *firstBytes) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.mu.Lock()
	if room := 64 - len(c.first); room > 0 {
		c.first = append(c.first, p[:min(n, room)]...)
	}
	c.mu.Unlock()
	return n, err
}

func (c *firstBytes) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// bytes returns what was read first.
func (c *firstBytes) bytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]byte(nil), c.first...)
}

// agentHTTP is an http.Server serving the streams pushed to it, as an
// agent serves HTTP on its tunnel. Its handler finds the stream's
// DialTunnel call with dialOf.
type agentHTTP struct{ ln *connListener }

type agentDialKey struct{}

// serveAgentHTTP starts an agentHTTP with handler h; it stops at the
// test's end.
func serveAgentHTTP(t testing.TB, h http.Handler) *agentHTTP {
	a := &agentHTTP{ln: newConnListener()}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, agentDialKey{}, c.(*agentStream).dial)
		}}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(a.ln) }()
	t.Cleanup(func() { _ = srv.Close(); <-done })
	return a
}

// agentStream is a stream the agentHTTP serves, with its DialTunnel call.
type agentStream struct {
	net.Conn
	dial *agentDial
}

// push serves c, the agent's end of the stream of call d.
func (a *agentHTTP) push(d *agentDial, c net.Conn) { a.ln.push(&agentStream{Conn: c, dial: d}) }

// dialOf returns the DialTunnel call of the stream a request of an
// agentHTTP came on.
func dialOf(ctx context.Context) *agentDial { return ctx.Value(agentDialKey{}).(*agentDial) }

// connListener is a listener whose connections are pushed to it.
type connListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newConnListener() *connListener {
	return &connListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *connListener) push(c net.Conn) {
	select {
	case l.conns <- c:
	case <-l.done:
		_ = c.Close()
	}
}

func (l *connListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *connListener) Close() error { l.once.Do(func() { close(l.done) }); return nil }

func (l *connListener) Addr() net.Addr { return agentAddr{} }

type agentAddr struct{}

func (agentAddr) Network() string { return "agent" }
func (agentAddr) String() string  { return "agent" }

// agentSeen is a request as an agent's HTTP server received it.
type agentSeen struct {
	seen
	dial *agentDial
}

// agentRecorder is the handler of an agent's HTTP server that records
// what reaches it and answers "agent <tunnel> <path>" with the header
// X-Agent: <tunnel>.
type agentRecorder struct {
	mu   sync.Mutex
	reqs []agentSeen
}

func (a *agentRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d := dialOf(r.Context())
	a.mu.Lock()
	a.reqs = append(a.reqs, agentSeen{seen: seen{Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery, Host: r.Host, Header: r.Header.Clone()}, dial: d})
	a.mu.Unlock()
	w.Header().Set("X-Agent", d.tunnelID)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, "agent "+d.tunnelID+" "+r.URL.Path)
}

// last returns the last request that reached the agent.
func (a *agentRecorder) last(t testing.TB) agentSeen {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.reqs) == 0 {
		t.Fatal("nothing reached the agent")
	}
	return a.reqs[len(a.reqs)-1]
}

// countingAddr starts a server on 127.0.0.1 that counts the connections
// it accepts and closes them, and returns its address and the count:
// what an agent tunnel's forwards_to names must never be dialed.
func countingAddr(t testing.TB) (string, *atomic.Int64) {
	n := &atomic.Int64{}
	return testServer(t, nil, func(net.Conn) { n.Add(1) }), n
}

// addrClient returns a client as client("") does, without keep-alives,
// and a function that returns the local address of its last connection:
// the socket address the proxy sees the request come from.
func addrClient() (*http.Client, func() netip.AddrPort) {
	var last atomic.Value // netip.AddrPort
	c := client("")
	tr := c.Transport.(*http.Transport)
	dial := tr.DialContext
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err == nil {
			last.Store(addrPort(conn.LocalAddr()))
		}
		return conn, err
	}
	tr.DisableKeepAlives = true
	return c, func() netip.AddrPort { ap, _ := last.Load().(netip.AddrPort); return ap }
}

// TestAgentTunnelHTTPS: a route whose backend selects a tunnel an agent
// holds reaches the agent through Agents.DialTunnel, with the client's
// Host and the X-Forwarded-* headers a direct upstream gets, and the
// agent is told the client's socket address (not X-Forwarded-For's
// client), protocol "http" (the request came over plain HTTP) and edge
// type HTTPS. The tunnel's forwards_to, even a dialable URL, is never
// dialed.
func TestAgentTunnelHTTPS(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	for _, tc := range []struct {
		name       string
		forwardsTo string // "": the informational app://laptop/server?pid=12; "dialable": a counting listener's URL
		trusted    []netip.Prefix
		header     []string
		wantXFF    string
	}{
		{name: "informational forwards_to", wantXFF: "127.0.0.1"},
		{name: "dialable forwards_to", forwardsTo: "dialable", wantXFF: "127.0.0.1"},
		{name: "untrusted X-Forwarded-For", header: []string{"X-Forwarded-For: 203.0.113.7"}, wantXFF: "127.0.0.1"},
		{name: "trusted X-Forwarded-For", trusted: trusted, header: []string{"X-Forwarded-For: 203.0.113.7"}, wantXFF: "203.0.113.7, 127.0.0.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &agentRecorder{}
			fa := &fakeAgents{http: serveAgentHTTP(t, rec)}
			s := newSite(t, siteOptions{hooks: newHooks(nil), handler: HandlerOptions{Agents: fa, TrustedProxies: tc.trusted}})
			p := s.account("acme")
			a := s.newApp(p, "web", nil, "app.example.com:443")
			direct := newUpstream(t, "direct")
			d := s.newApp(p, "direct", direct, "direct.example.com:443")
			forwardsTo, accepts := tc.forwardsTo, (*atomic.Int64)(nil)
			if forwardsTo == "dialable" {
				var addr string
				addr, accepts = countingAddr(t)
				forwardsTo = "http://" + addr
			}
			tid := registerAgentTunnel(t, s.svc, p, "web", "laptop", forwardsTo)
			s.sync()

			c, local := addrClient()
			res := s.do(c, a.host, "GET", "/hello?x=1", tc.header...)
			if res.status != http.StatusOK || res.body != "agent "+tid+" /hello" || res.header.Get("X-Agent") != tid {
				t.Fatalf("got %d %q (X-Agent %q), want 200 from the agent of %s", res.status, res.body, res.header.Get("X-Agent"), tid)
			}
			got := rec.last(t)
			want := agents.ConnHeader{ClientAddr: local(), Proto: "http", EdgeType: agents.EdgeHTTPS}
			if got.dial.header != want || got.dial.tunnelID != tid {
				t.Errorf("DialTunnel(%s, %+v), want (%s, %+v)", got.dial.tunnelID, got.dial.header, tid, want)
			}
			if got.Host != a.host || got.Path != "/hello" || got.RawQuery != "x=1" {
				t.Errorf("the agent saw Host %q, path %q, query %q; want %q, /hello, x=1", got.Host, got.Path, got.RawQuery, a.host)
			}
			if xff := got.Header.Get("X-Forwarded-For"); xff != tc.wantXFF {
				t.Errorf("the agent saw X-Forwarded-For %q, want %q", xff, tc.wantXFF)
			}
			// The same headers as a direct upstream gets for the same request.
			if res := s.do(nil, d.host, "GET", "/hello?x=1", tc.header...); res.status != http.StatusOK {
				t.Fatalf("direct upstream: %d %q", res.status, res.body)
			}
			dseen := direct.last(t)
			for _, h := range []string{"X-Forwarded-For", "X-Forwarded-Proto", "User-Agent"} {
				if got.Header.Get(h) != dseen.Header.Get(h) {
					t.Errorf("%s: the agent saw %q, a direct upstream %q", h, got.Header.Get(h), dseen.Header.Get(h))
				}
			}
			if got.Header.Get("X-Forwarded-Host") != a.host || dseen.Header.Get("X-Forwarded-Host") != d.host {
				t.Errorf("X-Forwarded-Host: the agent saw %q, a direct upstream %q", got.Header.Get("X-Forwarded-Host"), dseen.Header.Get("X-Forwarded-Host"))
			}
			if accepts != nil && accepts.Load() != 0 {
				t.Errorf("the agent tunnel's forwards_to was dialed %d times", accepts.Load())
			}
			if n := s.metric("edgeplane_proxy_agent_streams_total", "kind=https", "outcome=opened"); n != 1 {
				t.Errorf("agent streams opened: %v, want 1", n)
			}
		})
	}
}

// TestAgentTunnelWithoutDialer: without HandlerOptions.Agents a tunnel
// an agent holds is skipped as a tunnel that says nowhere to forward:
// alone it leaves the route with no tunnel (503), beside a direct
// tunnel it gets no request; its dialable forwards_to is never dialed.
func TestAgentTunnelWithoutDialer(t *testing.T) {
	for _, tc := range []struct {
		name       string
		direct     bool
		wantStatus int
		wantBody   string
	}{
		{name: "only an agent tunnel", wantStatus: http.StatusServiceUnavailable, wantBody: "no online tunnel serves this route\n"},
		{name: "beside a direct tunnel", direct: true, wantStatus: http.StatusOK, wantBody: "upstream a /"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSite(t, siteOptions{hooks: newHooks(nil)})
			p := s.account("acme")
			var up *testUpstream
			if tc.direct {
				up = newUpstream(t, "a")
			}
			a := s.newApp(p, "web", up, "app.example.com:443")
			addr, accepts := countingAddr(t)
			registerAgentTunnel(t, s.svc, p, "web", "laptop", "http://"+addr)
			s.sync()
			for range 4 { // round-robin would reach both tunnels
				if res := a.get("/"); res.status != tc.wantStatus || res.body != tc.wantBody {
					t.Fatalf("got %d %q, want %d %q", res.status, res.body, tc.wantStatus, tc.wantBody)
				}
			}
			if n := accepts.Load(); n != 0 {
				t.Errorf("the agent tunnel's forwards_to was dialed %d times", n)
			}
		})
	}
}

// TestAgentTunnelDialFails: a tunnel whose DialTunnel fails answers 502
// (counted as an upstream error and by outcome in the agent streams),
// and passive health skips it while the backend's other agent tunnel
// serves.
func TestAgentTunnelDialFails(t *testing.T) {
	for _, tc := range []struct {
		name    string
		err     error
		outcome string
	}{
		{"no session", agents.ErrNoSession, "no_session"},
		{"stream refused", io.ErrClosedPipe, "failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &agentRecorder{}
			fa := &fakeAgents{http: serveAgentHTTP(t, rec)}
			s := newSite(t, siteOptions{hooks: newHooks(nil), handler: HandlerOptions{Agents: fa}})
			p := s.account("acme")
			a := s.newApp(p, "web", nil, "app.example.com:443")
			good := registerAgentTunnel(t, s.svc, p, "web", "laptop", "")
			bad := registerAgentTunnel(t, s.svc, p, "web", "desktop", "")
			fa.failing(bad, tc.err)
			s.sync()

			// Round-robin: the first two requests go one to each tunnel.
			statuses := map[int]int{}
			for range 2 {
				res := a.get("/")
				statuses[res.status]++
				if res.status == http.StatusBadGateway && res.body != "bad gateway: the upstream did not answer\n" {
					t.Errorf("502 body %q", res.body)
				}
			}
			if statuses[http.StatusOK] != 1 || statuses[http.StatusBadGateway] != 1 {
				t.Fatalf("statuses %v, want one 200 and one 502", statuses)
			}
			for range 4 {
				if res := a.get("/"); res.status != http.StatusOK || res.body != "agent "+good+" /" {
					t.Fatalf("after the failure: %d %q, want 200 from %s", res.status, res.body, good)
				}
			}
			if n := fa.callsOf(bad); n != 1 {
				t.Errorf("the failed tunnel was dialed %d times, want 1 (then skipped)", n)
			}
			if n := s.metric("edgeplane_proxy_agent_streams_total", "kind=https", "outcome="+tc.outcome); n != 1 {
				t.Errorf("agent streams %s: %v, want 1", tc.outcome, n)
			}
			// The five requests that reached the good tunnel came on one
			// client connection: one stream carried them all.
			if n := s.metric("edgeplane_proxy_agent_streams_total", "kind=https", "outcome=opened"); n != 1 {
				t.Errorf("agent streams opened: %v, want 1 (one per client connection)", n)
			}
			if n := s.metric("edgeplane_proxy_upstream_errors_total", "edge="+a.edge, "route="+a.route); n != 1 {
				t.Errorf("upstream errors: %v, want 1", n)
			}
		})
	}
}

// agentStreamEnv is a streamEnv whose TLS edges (term, pass) and TCP
// edge use backends of their own, labeled app=agent-term, agent-pass
// and agent-tcp, whose tunnels agents hold: one each, or, with
// twoTunnels, two each (agents laptop and desktop). Their forwards_to
// is a counting listener's address (accepts), which must never be
// dialed. fa serves the agents' side with passthrough TLS under the
// upstream CA's certificate for pass.example.com (serial passSerial);
// it is given to both the Streams and the HTTPS Handler, unless
// noDialer.
type agentStreamEnv struct {
	*streamEnv
	fa         *fakeAgents
	accepts    *atomic.Int64
	tunnels    map[string][]string // by app label
	passSerial int64
}

func newAgentStreamEnv(t *testing.T, twoTunnels, noDialer bool) *agentStreamEnv {
	t.Helper()
	fa := &fakeAgents{loopback: true}
	o := StreamOptions{Agents: fa}
	if noDialer {
		o.Agents = nil
	}
	e := &agentStreamEnv{streamEnv: newStreamEnv(t, o), fa: fa, tunnels: map[string][]string{}}
	certPEM, keyPEM, serial := e.upstreamCA.issue(t, "pass.example.com")
	pair, err := tls.X509KeyPair([]byte(certPEM), []byte(keyPEM))
	e.check(err)
	fa.passTLS, e.passSerial = &tls.Config{Certificates: []tls.Certificate{pair}}, serial
	addr, accepts := countingAddr(t)
	e.accepts = accepts
	backend := func(label string) string {
		bk, err := e.api.CreateTunnelGroupBackend(e.ctx, e.a, backends.CreateParams{Labels: map[string]string{"app": label}})
		e.check(err)
		agentNames := []string{"laptop"}
		if twoTunnels {
			agentNames = append(agentNames, "desktop")
		}
		for _, name := range agentNames {
			e.tunnels[label] = append(e.tunnels[label], registerAgentTunnel(t, e.api, e.a, label, name, "tcp://"+addr))
		}
		return bk.ID
	}
	_, err = e.api.UpdateTLSEdge(e.ctx, e.a, e.term, edges.UpdateTLSEdgeParams{Backend: &edges.BackendParams{BackendID: backend("agent-term")}})
	e.check(err)
	_, err = e.api.UpdateTLSEdge(e.ctx, e.a, e.pass, edges.UpdateTLSEdgeParams{Backend: &edges.BackendParams{BackendID: backend("agent-pass")}})
	e.check(err)
	_, err = e.api.UpdateTCPEdge(e.ctx, e.a, e.tcp, edges.UpdateTCPEdgeParams{Backend: &edges.BackendParams{BackendID: backend("agent-tcp")}})
	e.check(err)
	e.applied(e.c)
	return e
}

// agentCount returns the agent streams of kind counted with outcome.
func (e *agentStreamEnv) agentCount(kind, outcome string) float64 {
	return testutil.ToFloat64(e.metrics.agentStreams.WithLabelValues(kind, outcome))
}

// TestAgentTunnelTLSEdge: a TLS edge's connection to a tunnel an agent
// holds is a stream DialTunnel opens, telling the agent the client's
// address, protocol "tls", edge type TLS and whether the bytes are the
// client's own TLS: with terminate_at upstream they are (the agent reads
// the ClientHello, and the client completes its handshake with the
// agent's certificate); terminated at the edge they are the plaintext.
// The tunnels' forwards_to is never dialed.
func TestAgentTunnelTLSEdge(t *testing.T) {
	e := newAgentStreamEnv(t, false, false)
	for _, tc := range []struct {
		name, host  string
		roots       *testCA
		passthrough bool
		wantSerial  int64
	}{
		{name: "terminating", host: "term.example.com", roots: e.ca, wantSerial: e.termSerial},
		{name: "passthrough", host: "pass.example.com", roots: e.upstreamCA, passthrough: true, wantSerial: e.passSerial},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(e.fa.calls())
			c, err := e.dialTLS(tc.host, &tls.Config{RootCAs: tc.roots.pool})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if got := c.ConnectionState().PeerCertificates[0].SerialNumber.Int64(); got != tc.wantSerial {
				t.Errorf("certificate serial %d, want %d", got, tc.wantSerial)
			}
			msg := "hello, agent, through " + tc.name
			roundTrip(t, c, msg)
			calls := e.fa.calls()[before:]
			if len(calls) != 1 {
				t.Fatalf("%d calls of DialTunnel, want 1", len(calls))
			}
			d := calls[0]
			label := "agent-term"
			if tc.passthrough {
				label = "agent-pass"
			}
			want := agents.ConnHeader{ClientAddr: addrPort(c.LocalAddr()), Proto: "tls", EdgeType: agents.EdgeTLS, PassthroughTLS: tc.passthrough}
			if d.tunnelID != e.tunnels[label][0] || d.header != want {
				t.Errorf("DialTunnel(%s, %+v), want (%s, %+v)", d.tunnelID, d.header, e.tunnels[label][0], want)
			}
			first := d.read.bytes()
			switch {
			case tc.passthrough && (len(first) == 0 || first[0] != 0x16): // a TLS handshake record
				t.Errorf("the agent read %q first, want the client's ClientHello", first)
			case !tc.passthrough && string(first) != msg:
				t.Errorf("the agent read %q first, want the plaintext %q", first, msg)
			}
		})
	}
	if n := e.agentCount("tls", agentOpened); n != 2 {
		t.Errorf("agent streams opened: %v, want 2", n)
	}
	if n := e.accepts.Load(); n != 0 {
		t.Errorf("the agent tunnels' forwards_to was dialed %d times", n)
	}
}

// TestAgentTunnelTCPEdge: a TCP edge's connection to a tunnel an agent
// holds carries megabytes both ways intact (SHA-256) and passes the
// client's half-close to the agent, which still answers before closing
// its side; the agent is told protocol "tcp" and edge type TCP. When
// DialTunnel fails the other tunnel takes the connection (no byte was
// sent), and without a Dialer the edge has no upstream.
func TestAgentTunnelTCPEdge(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		twoTunnels, noDialer bool
		fail                 bool // the first tunnel's DialTunnel fails
		wantOutcome          string
	}{
		{name: "relays", wantOutcome: outcomeServed},
		{name: "dial fails, the next tunnel serves", twoTunnels: true, fail: true, wantOutcome: outcomeServed},
		{name: "no dialer", noDialer: true, wantOutcome: outcomeNoUpstream},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newAgentStreamEnv(t, tc.twoTunnels, tc.noDialer)
			if tc.fail {
				e.fa.mu.Lock()
				e.fa.failNext = 1 // whichever tunnel is tried first
				e.fa.mu.Unlock()
			}
			c := e.dialTCP(t)
			defer c.Close()
			if tc.noDialer {
				wantClosed(t, c, "a TCP edge whose only tunnel an agent holds, without a Dialer")
				if n := e.count("tcp", outcomeNoUpstream, 1); n != 1 {
					t.Errorf("no_upstream count %v, want 1", n)
				}
				if n := e.accepts.Load(); n != 0 {
					t.Errorf("the agent tunnel's forwards_to was dialed %d times", n)
				}
				return
			}
			const size = 4 << 20
			sent := sha256.New()
			errc := make(chan error, 1)
			go func() {
				_, err := io.CopyN(io.MultiWriter(c, sent), rand.Reader, size)
				if err == nil {
					err = c.(*net.TCPConn).CloseWrite()
				}
				errc <- err
			}()
			got := sha256.New()
			_ = c.SetDeadline(time.Now().Add(60 * time.Second))
			n, err := io.Copy(got, c) // ends at the agent's half-close, after everything echoed
			if err != nil {
				t.Fatal(err)
			}
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
			if n != size || !bytes.Equal(got.Sum(nil), sent.Sum(nil)) {
				t.Errorf("received %d bytes with SHA-256 %x; want %d with %x", n, got.Sum(nil), size, sent.Sum(nil))
			}
			calls := e.fa.calls()
			want := agents.ConnHeader{ClientAddr: addrPort(c.LocalAddr()), Proto: "tcp", EdgeType: agents.EdgeTCP}
			wantCalls, opened, failed := 1, 1.0, 0.0
			if tc.fail {
				wantCalls, failed = 2, 1
			}
			if len(calls) != wantCalls {
				t.Fatalf("%d calls of DialTunnel, want %d", len(calls), wantCalls)
			}
			for i, d := range calls {
				if d.header != want || (d.err != nil) != (tc.fail && i == 0) {
					t.Errorf("DialTunnel %d: %+v (error %v), want %+v", i, d.header, d.err, want)
				}
			}
			if tc.fail && calls[0].tunnelID == calls[1].tunnelID {
				t.Errorf("after a failed DialTunnel the same tunnel %s was tried again", calls[0].tunnelID)
			}
			if n := e.count("tcp", tc.wantOutcome, 1); n != 1 {
				t.Errorf("%s count %v, want 1", tc.wantOutcome, n)
			}
			if n, m := e.agentCount("tcp", agentOpened), e.agentCount("tcp", agentFailed); n != opened || m != failed {
				t.Errorf("agent streams opened %v, failed %v; want %v, %v", n, m, opened, failed)
			}
			// The bytes are counted just after the outcome.
			bytesIn := e.metrics.streamBytesVec.WithLabelValues("tcp", "in")
			for deadline := time.Now().Add(10 * time.Second); testutil.ToFloat64(bytesIn) != size && time.Now().Before(deadline); {
				time.Sleep(5 * time.Millisecond)
			}
			if in := testutil.ToFloat64(bytesIn); in != size {
				t.Errorf("bytes in %v, want %d", in, size)
			}
			if n := e.accepts.Load(); n != 0 {
				t.Errorf("the agent tunnel's forwards_to was dialed %d times", n)
			}
		})
	}
}

// TestAgentTunnelHTTPSOverTLS: a request that came over TLS (the HTTPS
// port, beside the TLS edges) reaches the agent told protocol "https";
// the agent sees X-Forwarded-Proto https and the client's Host.
func TestAgentTunnelHTTPSOverTLS(t *testing.T) {
	e := newAgentStreamEnv(t, false, false)
	rec := &agentRecorder{}
	e.fa.http = serveAgentHTTP(t, rec)                             // before any request
	tid := registerAgentTunnel(t, e.api, e.a, "web", "laptop", "") // a1's backend selects app=web
	e.applied(e.c)

	var local atomic.Value // netip.AddrPort
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: e.ca.pool}, DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, network, e.addr443)
			if err == nil {
				local.Store(addrPort(c.LocalAddr()))
			}
			return c, err
		}}
	res, err := (&http.Client{Transport: tr, Timeout: 20 * time.Second}).Get("https://a.example.com/over-tls")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || string(body) != "agent "+tid+" /over-tls" {
		t.Fatalf("got %d %q, want 200 from the agent of %s", res.StatusCode, body, tid)
	}
	got := rec.last(t)
	want := agents.ConnHeader{ClientAddr: local.Load().(netip.AddrPort), Proto: "https", EdgeType: agents.EdgeHTTPS}
	if got.dial.header != want {
		t.Errorf("DialTunnel header %+v, want %+v", got.dial.header, want)
	}
	if got.Host != "a.example.com" || got.Header.Get("X-Forwarded-Proto") != "https" {
		t.Errorf("the agent saw Host %q, X-Forwarded-Proto %q; want a.example.com, https", got.Host, got.Header.Get("X-Forwarded-Proto"))
	}
}

// TestAgentStreamsPerClientConnection: the requests of one client
// connection reuse one stream to the agent, and each client connection
// gets streams of its own, whose header names that client: a stream
// never carries another client's request.
func TestAgentStreamsPerClientConnection(t *testing.T) {
	rec := &agentRecorder{}
	fa := &fakeAgents{http: serveAgentHTTP(t, rec)}
	s := newSite(t, siteOptions{hooks: newHooks(nil), handler: HandlerOptions{Agents: fa}})
	p := s.account("acme")
	a := s.newApp(p, "web", nil, "app.example.com:443")
	registerAgentTunnel(t, s.svc, p, "web", "laptop", "")
	s.sync()
	clients := []*http.Client{
		{Transport: &http.Transport{MaxIdleConnsPerHost: 1}},
		{Transport: &http.Transport{MaxIdleConnsPerHost: 1}},
	}
	for range 3 {
		for _, c := range clients {
			if res := s.do(c, a.host, "GET", "/"); res.status != http.StatusOK {
				t.Fatalf("status %d %q", res.status, res.body)
			}
		}
	}
	if n := s.metric("edgeplane_proxy_agent_streams_total", "kind=https", "outcome=opened"); n != 2 {
		t.Errorf("agent streams opened for two client connections of three requests each: %v, want 2", n)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	// Each request came on the stream of its own client connection, whose
	// header names that connection: two streams, two client ports.
	streams := map[*agentDial]bool{}
	ports := map[uint16]bool{}
	for _, r := range rec.reqs {
		streams[r.dial] = true
		ports[r.dial.header.ClientAddr.Port()] = true
	}
	if len(streams) != 2 {
		t.Fatalf("requests came on %d streams, want 2", len(streams))
	}
	if len(ports) != 2 {
		t.Errorf("the two streams' headers name the client ports %v; want two different ones", ports)
	}
}

func TestAgentPoolKey(t *testing.T) {
	for _, tc := range []struct{ addr, want string }{
		{"203.0.113.7:40000", "tn_1--203-0-113-7-40000.agent.invalid"},
		{"[2001:db8::1]:443", "tn_1---2001-db8--1--443.agent.invalid"},
		{"[fe80::1%eth0]:80", "tn_1---fe80--1-eth0--80.agent.invalid"},
	} {
		got := agentPoolKey("tn_1", netip.MustParseAddrPort(tc.addr))
		if got != tc.want {
			t.Errorf("agentPoolKey(%s) = %q, want %q", tc.addr, got, tc.want)
		}
		if _, err := url.Parse("http://" + got + "/"); err != nil {
			t.Errorf("%q is not a URL host: %v", got, err)
		}
	}
}
