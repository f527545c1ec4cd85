package proxy

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/credentials"
	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/httpserver"
	"github.com/edgeplane/edgeplane/internal/syncbuf"
	"github.com/edgeplane/edgeplane/ipaccess"
	"github.com/edgeplane/edgeplane/memstore"
)

// streamEnv serves the world's edges through Streams: the HTTPS port
// (SplitTLS in front of the HTTPS Handler's server) on addr443 and the
// TCP edges on ports of 127.0.0.1. Account a has:
//   - TLS edge term (term.example.com:443, TLS terminated at the edge
//     with a certificate of the test CA) whose tunnel forwards to an echo
//     server;
//   - TLS edge pass (pass.example.com:443, terminate_at upstream) whose
//     tunnel forwards to a TLS echo server with its own certificate;
//   - TCP edge tcp (db.example.com:<tcpPort>) whose tunnel forwards to
//     the echo server;
//   - HTTPS edge a1 (a.example.com:443) as the world made it.
type streamEnv struct {
	*world
	ca, upstreamCA    *testCA
	c                 *Configs
	s                 *Streams
	metrics           *Metrics
	addr443           string
	term, pass, tcp   string // edge IDs
	tcpPort           int
	termSerial        int64 // of term.example.com's certificate
	passSerial        int64 // of the TLS upstream's own certificate
	echoAddr, tlsAddr string
}

func newStreamEnv(t testing.TB, o StreamOptions) *streamEnv {
	t.Helper()
	w := newWorld(t, memstore.New())
	e := &streamEnv{world: w, ca: newTestCA(t), upstreamCA: newTestCA(t)}
	for _, name := range []string{"term.example.com", "pass.example.com", "db.example.com", "a.example.com"} {
		id := w.reserve(w.a, name)
		switch name {
		case "term.example.com":
			e.termSerial = w.attachCert(w.a, e.ca, id, name)
		case "a.example.com":
			w.attachCert(w.a, e.ca, id, name)
		}
	}
	w.serveHosts(w.a, w.a1, "a.example.com:443")

	e.echoAddr = echoServer(t, nil)
	certPEM, keyPEM, serial := e.upstreamCA.issue(t, "pass.example.com")
	pair, err := tls.X509KeyPair([]byte(certPEM), []byte(keyPEM))
	w.check(err)
	e.passSerial = serial
	e.tlsAddr = echoServer(t, &tls.Config{Certificates: []tls.Certificate{pair}})

	backend := func(label, forwardsTo string) string {
		bk, err := w.api.CreateTunnelGroupBackend(w.ctx, w.a, backends.CreateParams{Labels: map[string]string{"app": label}})
		w.check(err)
		cred, err := w.api.CreateCredential(w.ctx, w.a, credentials.CreateParams{ACL: []string{"bind:app=" + label}})
		w.check(err)
		_, err = w.api.Host().RegisterTunnel(w.ctx, *cred.Token, backends.RegisterTunnelParams{Labels: map[string]string{"app": label}, ForwardsTo: forwardsTo})
		w.check(err)
		return bk.ID
	}
	echo := backend("echo", "tcp://"+e.echoAddr)
	tlsEcho := backend("tls-echo", "tls://"+e.tlsAddr)
	term, err := w.api.CreateTLSEdge(w.ctx, w.a, edges.CreateTLSEdgeParams{Hostports: []string{"term.example.com:443"}, Backend: &edges.BackendParams{BackendID: echo}})
	w.check(err)
	e.term = term.ID
	pass, err := w.api.CreateTLSEdge(w.ctx, w.a, edges.CreateTLSEdgeParams{Hostports: []string{"pass.example.com:443"},
		TLSTermination: &edges.TLSTerminationParams{TerminateAt: edges.TerminateAtUpstream}, Backend: &edges.BackendParams{BackendID: tlsEcho}})
	w.check(err)
	e.pass = pass.ID
	held := holdPort(t)
	e.tcpPort = held.port
	tcp, err := w.api.CreateTCPEdge(w.ctx, w.a, edges.CreateTCPEdgeParams{Hostports: []string{"db.example.com:" + strconv.Itoa(e.tcpPort)}, Backend: &edges.BackendParams{BackendID: echo}})
	w.check(err)
	e.tcp = tcp.ID

	e.c = w.start(w.api.Host(), w.st, newHooks(w.api.Host()), Options{})
	e.metrics = NewMetrics(MetricsOptions{})
	o.Metrics = e.metrics
	o.listen = held.listen
	if o.Clock == nil {
		o.Clock = w.clock.Now
	}
	e.s = NewStreams(e.c, o)
	t.Cleanup(e.s.Close)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	w.check(err)
	e.addr443 = ln.Addr().String()
	srv := NewHandler(e.c, HandlerOptions{Clock: w.clock.Now, Logger: o.Logger, Agents: o.Agents}).Server(true, httpserver.Options{})
	split := e.s.SplitTLS(ln)
	go func() { _ = srv.ServeTLS(split, "", "") }()
	t.Cleanup(func() { _ = srv.Close() })

	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = e.s.ServeTCP(ctx, "127.0.0.1", e.tcpPort, e.tcpPort)
	}()
	t.Cleanup(func() { cancel(); <-served })
	return e
}

// count returns the connections of kind counted with outcome, waiting
// (up to 10 s) for it to reach want: a refusal is counted by the proxy's
// goroutine, which may still be running when the client sees the close
// (a failed handshake's alert comes first).
func (e *streamEnv) count(kind, outcome string, want float64) float64 {
	c := e.metrics.connections.WithLabelValues(kind, outcome)
	deadline := time.Now().Add(10 * time.Second)
	for {
		n := testutil.ToFloat64(c)
		if n == want || time.Now().After(deadline) {
			return n
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// heldPort is a free TCP port of 127.0.0.1 that the test holds (its
// listener open) from the moment it is chosen until the Streams listens
// on it. A port found free and closed again can be taken meanwhile by
// another process (another package's tests listening on port 0, as
// under go test ./...); the Streams then cannot listen on it, and the
// test's clients connect to that process instead, which neither serves
// nor closes their connections.
type heldPort struct {
	port int
	mu   sync.Mutex
	l    net.Listener // nil once the Streams took it
}

// holdPort chooses a free port of 127.0.0.1 and holds it; it is closed
// at the test's end unless the Streams took it.
func holdPort(t testing.TB) *heldPort {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &heldPort{port: l.Addr().(*net.TCPAddr).Port, l: l}
	t.Cleanup(func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.l != nil {
			_ = h.l.Close()
		}
	})
	return h
}

// listen is [StreamOptions].listen for the held port: the first listen
// on its address takes the held listener (with the connections already
// queued on it); any other listens anew.
func (h *heldPort) listen(network, address string) (net.Listener, error) {
	h.mu.Lock()
	l := h.l
	if l != nil && network == "tcp" && address == l.Addr().String() {
		h.l = nil
		h.mu.Unlock()
		return l, nil
	}
	h.mu.Unlock()
	return net.Listen(network, address)
}

// echoServer starts a server on 127.0.0.1 that sends back every byte it
// receives and, at the client's end of stream, half-closes its side; with
// config it speaks TLS. It returns its address.
func echoServer(t testing.TB, config *tls.Config) string {
	return testServer(t, config, func(c net.Conn) {
		_, _ = io.Copy(c, c)
		if cw, ok := c.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
		_, _ = io.Copy(io.Discard, c)
	})
}

// testServer starts a server on 127.0.0.1 that runs handle on each
// connection (and closes it after); with config it speaks TLS. It
// returns its address; the server stops at the test's end.
func testServer(t testing.TB, config *tls.Config, handle func(net.Conn)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if config != nil {
		l = tls.NewListener(l, config)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { _ = l.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				handle(c)
			}()
		}
	}()
	return l.Addr().String()
}

// dialTLS makes a TLS connection to the HTTPS port for serverName.
func (e *streamEnv) dialTLS(serverName string, cfg *tls.Config) (*tls.Conn, error) {
	if cfg == nil {
		cfg = &tls.Config{}
	}
	cfg.ServerName = serverName
	if cfg.RootCAs == nil {
		cfg.RootCAs = e.ca.pool
	}
	d := &net.Dialer{Timeout: 10 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp", e.addr443, cfg)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// roundTrip sends msg on c and reads as many bytes back.
func roundTrip(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, msg); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	if string(got) != msg {
		t.Fatalf("echoed %q, want %q", got, msg)
	}
}

// wantClosed fails the test unless c is closed by the other side without
// a byte of data.
func wantClosed(t *testing.T, c net.Conn, what string) {
	t.Helper()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	n, err := c.Read(make([]byte, 1))
	if n != 0 || err == nil || errors.Is(err, context.DeadlineExceeded) || isTimeout(err) {
		t.Errorf("%s: read %d bytes, %v; want the connection closed", what, n, err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// TestTLSEdgeTerminates: a crypto/tls client naming the TLS edge's host
// gets the reserved domain's certificate and reaches the upstream in
// plaintext; a name no edge serves, or no name, gets no handshake but
// the alert unrecognized_name; the HTTPS edge on the same port still
// answers HTTP.
func TestTLSEdgeTerminates(t *testing.T) {
	e := newStreamEnv(t, StreamOptions{})
	c, err := e.dialTLS("term.example.com", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := c.ConnectionState().PeerCertificates[0].SerialNumber.Int64(); got != e.termSerial {
		t.Errorf("certificate serial %d, want the domain's %d", got, e.termSerial)
	}
	if v := c.ConnectionState().Version; v != tls.VersionTLS13 {
		t.Errorf("version %x, want TLS 1.3 (the client's best)", v)
	}
	roundTrip(t, c, "hello through a TLS edge")

	for _, name := range []string{"nowhere.example.com", ""} {
		if c, err := e.dialTLS(name, &tls.Config{InsecureSkipVerify: true}); err == nil {
			c.Close()
			t.Errorf("SNI %q: handshake succeeded", name)
		} else if !strings.Contains(err.Error(), "tls: unrecognized name") {
			t.Errorf("SNI %q: %v; want the alert unrecognized_name", name, err)
		}
	}

	// HTTPS edges share the port.
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: e.ca.pool},
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, e.addr443)
		}}
	defer tr.CloseIdleConnections()
	res, err := (&http.Client{Transport: tr}).Get("https://a.example.com/")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusServiceUnavailable { // a1's backend has no tunnel
		t.Errorf("HTTPS edge behind the split: %d, want 503 from the HTTPS handler", res.StatusCode)
	}
}

// TestTLSEdgeWithoutCertificate: a TLS edge terminated at the edge
// whose host's domain has no certificate fails the handshake with the
// alert unrecognized_name (not a bare close), in TLS 1.3 and 1.2, counted
// as no_certificate; the certificate attached later is presented from
// the next handshake on.
func TestTLSEdgeWithoutCertificate(t *testing.T) {
	e := newStreamEnv(t, StreamOptions{})
	domain := e.reserve(e.a, "bare.example.com")
	_, err := e.api.CreateTLSEdge(e.ctx, e.a, edges.CreateTLSEdgeParams{Hostports: []string{"bare.example.com:443"}})
	e.check(err)
	e.applied(e.c)

	for i, v := range []uint16{tls.VersionTLS13, tls.VersionTLS12} {
		c, err := e.dialTLS("bare.example.com", &tls.Config{MaxVersion: v})
		if err == nil {
			c.Close()
			t.Fatalf("TLS %x: handshake succeeded without a certificate", v)
		}
		if !strings.Contains(err.Error(), "tls: unrecognized name") {
			t.Errorf("TLS %x: %v; want the alert unrecognized_name", v, err)
		}
		if n := e.count(kindTLS, outcomeNoCertificate, float64(i+1)); n != float64(i+1) {
			t.Errorf("TLS %x: %v connections counted no_certificate, want %d", v, n, i+1)
		}
	}

	serial := e.attachCert(e.a, e.ca, domain, "bare.example.com")
	e.applied(e.c)
	c, err := e.dialTLS("bare.example.com", nil)
	if err != nil {
		t.Fatalf("after attaching a certificate: %v", err)
	}
	defer c.Close()
	if got := c.ConnectionState().PeerCertificates[0].SerialNumber.Int64(); got != serial {
		t.Errorf("certificate serial %d, want the domain's %d", got, serial)
	}
}

// TestTLSEdgeMinVersion: min_version 1.3 refuses a TLS 1.2-only client
// and serves a TLS 1.3 one; the change applies to the next connection.
func TestTLSEdgeMinVersion(t *testing.T) {
	e := newStreamEnv(t, StreamOptions{})
	tls12 := func() *tls.Config { return &tls.Config{MaxVersion: tls.VersionTLS12} }
	c, err := e.dialTLS("term.example.com", tls12())
	if err != nil {
		t.Fatalf("TLS 1.2 client with the default minimum (1.2): %v", err)
	}
	c.Close()
	_, err = e.api.ReplaceTLSEdgeTLSTermination(e.ctx, e.a, e.term, edges.TLSTerminationParams{MinVersion: ptr("1.3")})
	e.check(err)
	e.applied(e.c)
	if c, err := e.dialTLS("term.example.com", tls12()); err == nil {
		c.Close()
		t.Error("TLS 1.2-only client completed a handshake with min_version 1.3")
	}
	c, err = e.dialTLS("term.example.com", &tls.Config{MinVersion: tls.VersionTLS13})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	roundTrip(t, c, "1.3 only")
	if n := e.count("tls", outcomeHandshakeFailed, 1); n != 1 {
		t.Errorf("handshake_failed count %v, want 1", n)
	}
}

// TestTLSEdgePassthrough: with terminate_at upstream the client's TLS
// reaches the upstream untouched: the client sees the upstream's own
// certificate (of another CA) and talks to it.
func TestTLSEdgePassthrough(t *testing.T) {
	e := newStreamEnv(t, StreamOptions{})
	c, err := e.dialTLS("pass.example.com", &tls.Config{RootCAs: e.upstreamCA.pool})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := c.ConnectionState().PeerCertificates[0].SerialNumber.Int64(); got != e.passSerial {
		t.Errorf("certificate serial %d, want the upstream's %d", got, e.passSerial)
	}
	roundTrip(t, c, "end to end TLS")
	if _, err := e.dialTLS("pass.example.com", nil); err == nil {
		t.Error("a client trusting only the edge's CA accepted the upstream's certificate")
	}
}

// TestTLSEdgeRefusesBeforeHandshake: an IP restriction that denies the
// client, or an on_tcp_connect rule that denies it, closes the
// connection before any handshake byte goes back; lifting them serves
// the next connection.
func TestTLSEdgeRefusesBeforeHandshake(t *testing.T) {
	e := newStreamEnv(t, StreamOptions{})
	ipp := e.ipPolicy()
	_, err := e.api.CreateIPPolicyRule(e.ctx, e.a, ipaccess.CreateRuleParams{IPPolicyID: ipp, CIDR: "127.0.0.0/8", Action: "deny"})
	e.check(err)

	refused := func(what, outcome string, want float64) {
		t.Helper()
		raw, err := net.Dial("tcp", e.addr443)
		e.check(err)
		defer raw.Close()
		c := tls.Client(raw, &tls.Config{ServerName: "term.example.com", RootCAs: e.ca.pool})
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		err = c.Handshake()
		if err == nil || isTimeout(err) {
			t.Errorf("%s: handshake %v, want the connection closed", what, err)
		}
		if n := e.count("tls", outcome, want); n != want {
			t.Errorf("%s: %s count %v, want %v", what, outcome, n, want)
		}
	}
	_, err = e.api.ReplaceTLSEdgeIPRestriction(e.ctx, e.a, e.term, edges.IPRestrictionParams{IPPolicyIDs: []string{ipp}})
	e.check(err)
	e.applied(e.c)
	refused("IP restriction", outcomeIPRestricted, 1)

	e.check(e.api.DeleteTLSEdgeIPRestriction(e.ctx, e.a, e.term))
	_, err = e.api.ReplaceTLSEdgeTrafficPolicy(e.ctx, e.a, e.term, edges.TrafficPolicyParams{Value: `{"on_tcp_connect":[
		{"expressions":["conn.tls.sni == 'term.example.com' && conn.client_ip == '127.0.0.1'"],"actions":[{"type":"deny"}]}]}`})
	e.check(err)
	e.applied(e.c)
	refused("on_tcp_connect deny", outcomePolicyDenied, 1)

	e.check(e.api.DeleteTLSEdgeTrafficPolicy(e.ctx, e.a, e.term))
	e.applied(e.c)
	c, err := e.dialTLS("term.example.com", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	roundTrip(t, c, "allowed again")
}

// TestTCPEdgeRelays: large random streams both ways at once arrive
// intact (SHA-256), and a client's half-close reaches the upstream,
// which still answers before closing its side.
func TestTCPEdgeRelays(t *testing.T) {
	e := newStreamEnv(t, StreamOptions{})
	c := e.dialTCP(t)
	defer c.Close()
	const size = 8 << 20
	sent := sha256.New()
	errc := make(chan error, 1)
	go func() {
		_, err := io.CopyN(io.MultiWriter(c, sent), rand.Reader, size)
		if err == nil {
			err = c.(*net.TCPConn).CloseWrite() // half-close: we are done sending
		}
		errc <- err
	}()
	got := sha256.New()
	_ = c.SetDeadline(time.Now().Add(60 * time.Second))
	n, err := io.Copy(got, c) // ends at the upstream's half-close, after everything echoed
	if err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if n != size || !bytes.Equal(got.Sum(nil), sent.Sum(nil)) {
		t.Errorf("received %d bytes with SHA-256 %x; want %d with %x", n, got.Sum(nil), size, sent.Sum(nil))
	}
}

// dialTCP connects to the TCP edge's port, waiting for its listener.
func (e *streamEnv) dialTCP(t testing.TB) net.Conn {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(e.tcpPort)))
		if err == nil {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("the TCP edge's port does not listen: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestTCPEdgeModules: the IP restriction refuses new connections while
// an open one goes on (an unrelated change does not cut it); deleting the
// edge cuts it; the per-edge bound refuses connections past it.
func TestTCPEdgeModules(t *testing.T) {
	e := newStreamEnv(t, StreamOptions{MaxConnsPerEdge: 2})
	open := e.dialTCP(t)
	defer open.Close()
	roundTrip(t, open, "before")

	ipp := e.ipPolicy()
	_, err := e.api.CreateIPPolicyRule(e.ctx, e.a, ipaccess.CreateRuleParams{IPPolicyID: ipp, CIDR: "127.0.0.1/32", Action: "deny"})
	e.check(err)
	_, err = e.api.ReplaceTCPEdgeIPRestriction(e.ctx, e.a, e.tcp, edges.IPRestrictionParams{IPPolicyIDs: []string{ipp}})
	e.check(err)
	e.applied(e.c)
	refused := e.dialTCP(t)
	wantClosed(t, refused, "a denied client")
	refused.Close()
	roundTrip(t, open, "the open connection goes on")

	e.check(e.api.DeleteTCPEdgeIPRestriction(e.ctx, e.a, e.tcp))
	e.applied(e.c)
	second := e.dialTCP(t)
	defer second.Close()
	roundTrip(t, second, "second")
	third := e.dialTCP(t)
	wantClosed(t, third, "a connection past MaxConnsPerEdge")
	third.Close()
	if n := e.count("tcp", outcomeOverLimit, 1); n != 1 {
		t.Errorf("over_limit count %v, want 1", n)
	}
	if n := e.s.OpenConns(e.tcp); n != 2 {
		t.Errorf("OpenConns = %d, want 2", n)
	}

	e.check(e.api.DeleteTCPEdge(e.ctx, e.a, e.tcp))
	e.applied(e.c)
	for _, c := range []net.Conn{open, second} {
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.Copy(io.Discard, c); err != nil {
			t.Errorf("a connection of the deleted edge: %v, want closed", err)
		}
	}
	if n := e.count("tcp", outcomeIPRestricted, 1); n != 1 {
		t.Errorf("ip_restricted count %v, want 1", n)
	}
}

// TestServeTCPBadRange: a port range that is not within 1-65535, low to
// high, is refused.
func TestServeTCPBadRange(t *testing.T) {
	e := newStreamEnv(t, StreamOptions{})
	for _, r := range [][2]int{{0, 10}, {10, 5}, {1, 65536}} {
		if err := e.s.ServeTCP(e.ctx, "127.0.0.1", r[0], r[1]); err == nil || !strings.Contains(err.Error(), "port range") {
			t.Errorf("range %v: %v, want refused", r, err)
		}
	}
}

// TestEndpointRestrictions: the account's IP restrictions of type
// endpoints apply to its HTTPS, TLS and TCP edges before their own
// modules: enforced, they refuse (403, or the connection closed before
// any handshake); not enforced, the traffic goes on and a warning naming
// the restriction is logged. Their changes refresh the edges without a
// compile.
func TestEndpointRestrictions(t *testing.T) {
	logs := &syncbuf.Buffer{}
	e := newStreamEnv(t, StreamOptions{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	ipp := e.ipPolicy()
	_, err := e.api.CreateIPPolicyRule(e.ctx, e.a, ipaccess.CreateRuleParams{IPPolicyID: ipp, CIDR: "127.0.0.0/8", Action: "deny"})
	e.check(err)
	compiles := e.c.Stats().Compiles
	ipx, err := e.api.CreateIPRestriction(e.ctx, e.a, ipaccess.CreateRestrictionParams{Type: ipaccess.TypeEndpoints, Enforced: true, IPPolicyIDs: []string{ipp}})
	e.check(err)
	e.applied(e.c)

	// Enforced: every kind of edge refuses 127.0.0.1.
	if c, err := e.dialTLS("term.example.com", nil); err == nil {
		c.Close()
		t.Error("TLS edge: handshake completed despite an enforced endpoints restriction")
	}
	c := e.dialTCP(t)
	wantClosed(t, c, "TCP edge under an enforced endpoints restriction")
	c.Close()
	if code := e.httpsStatus(t, "a.example.com"); code != http.StatusForbidden {
		t.Errorf("HTTPS edge under an enforced endpoints restriction: %d, want 403", code)
	}
	if n := e.count("tcp", outcomeIPRestricted, 1); n != 1 {
		t.Errorf("tcp ip_restricted count %v, want 1", n)
	}

	// Not enforced: the traffic goes on, with a warning.
	_, err = e.api.UpdateIPRestriction(e.ctx, e.a, ipx.ID, ipaccess.UpdateRestrictionParams{Enforced: ptr(false)})
	e.check(err)
	e.applied(e.c)
	tc, err := e.dialTLS("term.example.com", nil)
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, tc, "warned only")
	tc.Close()
	c = e.dialTCP(t)
	roundTrip(t, c, "warned only")
	c.Close()
	if code := e.httpsStatus(t, "a.example.com"); code != http.StatusServiceUnavailable {
		t.Errorf("HTTPS edge under a restriction not enforced: %d, want 503 (its route has no tunnel)", code)
	}
	warnings := func() int {
		n := 0
		for _, line := range strings.Split(logs.String(), "\n") {
			if strings.Contains(line, "level=WARN") && strings.Contains(line, "would refuse") && strings.Contains(line, "restriction="+ipx.ID) {
				n++
			}
		}
		return n
	}
	warnedCount := func() uint64 { return e.c.IPRestrictionCounts()[3].Warned }
	if n := warnings(); n != 1 {
		t.Errorf("%d warnings name the restriction, want one for the three (one client address, within a minute): %s", n, logs)
	}
	if n := warnedCount(); n != 3 {
		t.Errorf("%d warnings counted, want one per connection and request (3)", n)
	}
	// Logged once per restriction and address per minute: a fourth
	// connection from 127.0.0.1 is counted, not logged again.
	logged := warnings()
	c = e.dialTCP(t)
	roundTrip(t, c, "warned again")
	c.Close()
	if n := warnings(); n != logged || warnedCount() != 4 {
		t.Errorf("a repeated warning: %d lines (was %d), %d counted; want it counted only", n, logged, warnedCount())
	}

	// The restriction deleted: nothing refused, nothing logged.
	e.check(e.api.DeleteIPRestriction(e.ctx, e.a, ipx.ID))
	e.applied(e.c)
	before := strings.Count(logs.String(), "restriction=")
	c = e.dialTCP(t)
	roundTrip(t, c, "unrestricted")
	c.Close()
	if after := strings.Count(logs.String(), "restriction="); after != before {
		t.Errorf("a deleted restriction is still logged: %s", logs)
	}

	// A rule added to a policy of an endpoints restriction applies too.
	empty := e.ipPolicy()
	_, err = e.api.CreateIPRestriction(e.ctx, e.a, ipaccess.CreateRestrictionParams{Type: ipaccess.TypeEndpoints, Enforced: true, IPPolicyIDs: []string{empty}})
	e.check(err)
	e.applied(e.c)
	c = e.dialTCP(t)
	roundTrip(t, c, "an empty policy allows all")
	c.Close()
	_, err = e.api.CreateIPPolicyRule(e.ctx, e.a, ipaccess.CreateRuleParams{IPPolicyID: empty, CIDR: "127.0.0.1", Action: "deny"})
	e.check(err)
	e.applied(e.c)
	c = e.dialTCP(t)
	wantClosed(t, c, "TCP edge after a deny rule joined the restriction's policy")
	c.Close()
	if got := e.c.Stats().Compiles; got != compiles {
		t.Errorf("%d compiles for restriction changes, want none", got-compiles)
	}
}

// httpsStatus requests https://host/ through the HTTPS port and returns
// the status.
func (e *streamEnv) httpsStatus(t *testing.T, host string) int {
	t.Helper()
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: e.ca.pool},
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, e.addr443)
		}}
	defer tr.CloseIdleConnections()
	res, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get("https://" + host + "/")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// flakyListener fails its first Accept with an error that is not
// net.ErrClosed, then hands out conn once, then is closed.
type flakyListener struct {
	net.Listener
	calls int
	conn  net.Conn
}

func (l *flakyListener) Accept() (net.Conn, error) {
	l.calls++
	switch l.calls {
	case 1:
		return nil, errors.New("accept4: too many open files")
	case 2:
		return l.conn, nil
	}
	return nil, net.ErrClosed
}

// TestAcceptLoopSurvivesErrors: an Accept error other than a closed
// listener (file descriptors exhausted) pauses the loop; it does not end
// it.
func TestAcceptLoopSurvivesErrors(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	l := &flakyListener{conn: a}
	served := make(chan net.Conn, 1)
	if err := acceptLoop(l, func(c net.Conn) { served <- c }); !errors.Is(err, net.ErrClosed) {
		t.Errorf("acceptLoop returned %v, want net.ErrClosed", err)
	}
	select {
	case c := <-served:
		c.Close()
	case <-time.After(10 * time.Second):
		t.Fatal("the connection after the error was not served")
	}
	if l.calls != 3 {
		t.Errorf("Accept called %d times, want 3", l.calls)
	}
}
