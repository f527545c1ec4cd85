package tunnel_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/credentials"
	"github.com/edgeplane/edgeplane/identity"
	"github.com/edgeplane/edgeplane/internal/sdktunnel"
	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/tunnel"
	"golang.ngrok.com/ngrok"
)

// env is a Service on memstore with one account, and a tunnel Server on
// a real TLS listener on 127.0.0.1.
type env struct {
	svc   *edgeplane.Service
	admin edgeplane.Principal
	srv   *tunnel.Server
	m     *tunnel.Metrics
	addr  string         // the tunnel server's address
	pool  *x509.CertPool // roots agents verify it with
	ctx   context.Context
	st    *memstore.Store
	cert  tls.Certificate // the server's
}

func newEnv(t testing.TB, opts tunnel.Options) *env {
	t.Helper()
	return newEnvHost(t, opts, nil)
}

// newEnvHost is newEnv whose tunnel Server asks wrap(the Service's Host)
// instead of the Host itself, when wrap is not nil.
func newEnvHost(t testing.TB, opts tunnel.Options, wrap func(tunnel.Host) tunnel.Host) *env {
	t.Helper()
	st := memstore.New()
	svc, err := edgeplane.New(st, edgeplane.Options{BaseURL: "https://api.example.test/", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	acct, err := svc.Host().CreateAccount(ctx, identity.AccountParams{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := svc.Host().CreateUser(ctx, acct.ID, identity.SubjectParams{Name: "someone", Admin: true})
	if err != nil {
		t.Fatal(err)
	}
	cert, pool := selfSigned(t)
	opts.Host = svc.Host().Tunnels()
	if wrap != nil {
		opts.Host = wrap(opts.Host)
	}
	opts.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}}
	opts.Feed = st
	if opts.Metrics == nil {
		opts.Metrics = tunnel.NewMetrics()
	}
	srv, err := tunnel.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return &env{svc: svc, admin: edgeplane.Principal{AccountID: acct.ID, SubjectID: sub.ID, Admin: true},
		srv: srv, m: opts.Metrics, addr: ln.Addr().String(), pool: pool, ctx: ctx, st: st, cert: cert}
}

// token creates a credential with acl and returns it and its authtoken.
func (e *env) token(t *testing.T, acl ...string) (*credentials.Credential, string) {
	t.Helper()
	c, err := e.svc.CreateCredential(e.ctx, e.admin, credentials.CreateParams{ACL: acl})
	if err != nil {
		t.Fatal(err)
	}
	return c, *c.Token
}

// connect opens an agent session with the SDK, through addr (the
// server's, or a relay's), and closes it when the test ends.
func (e *env) connect(t *testing.T, addr, token string, opts ...ngrok.ConnectOption) ngrok.Session {
	t.Helper()
	opts = append([]ngrok.ConnectOption{ngrok.WithServer(addr), ngrok.WithCA(e.pool), ngrok.WithAuthtoken(token)}, opts...)
	sess, err := ngrok.Connect(context.Background(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	return sess
}

// eventually waits up to d for cond, and reports how long it took.
func eventually(d time.Duration, cond func() bool) (time.Duration, bool) {
	start := time.Now()
	for {
		if cond() {
			return time.Since(start), true
		}
		if time.Since(start) > d {
			return time.Since(start), false
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// selfSigned returns a certificate for 127.0.0.1 and localhost and a
// pool holding it.
func selfSigned(t testing.TB) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "tunnel test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true,
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}

// relay is a TCP relay in front of the tunnel server that a test can
// freeze (bytes stop flowing both ways: the agent falls silent) or
// break (every connection through it is closed).
type relay struct {
	ln     net.Listener
	mu     sync.Mutex
	frozen bool
	thaw   chan struct{}
	conns  []net.Conn
}

func newRelay(t *testing.T, to string) *relay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &relay{ln: ln, thaw: make(chan struct{})}
	t.Cleanup(func() { ln.Close(); r.breakAll() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", to)
			if err != nil {
				c.Close()
				continue
			}
			r.mu.Lock()
			r.conns = append(r.conns, c, up)
			r.mu.Unlock()
			go r.pipe(up, c)
			go r.pipe(c, up)
		}
	}()
	return r
}

func (r *relay) addr() string { return r.ln.Addr().String() }

func (r *relay) pipe(dst, src net.Conn) {
	defer dst.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		r.mu.Lock()
		frozen, thaw := r.frozen, r.thaw
		r.mu.Unlock()
		if frozen {
			<-thaw
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if err != io.EOF {
				return
			}
			return
		}
	}
}

// freeze stops the relay's bytes in both directions.
func (r *relay) freeze() {
	r.mu.Lock()
	r.frozen = true
	r.mu.Unlock()
}

// breakAll closes every connection through the relay so far.
func (r *relay) breakAll() {
	r.mu.Lock()
	conns := r.conns
	r.conns = nil
	if r.frozen {
		r.frozen = false
		close(r.thaw)
		r.thaw = make(chan struct{})
	}
	r.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

// clientAddr is the client address the tests put in proxy headers.
var clientAddr = netip.MustParseAddrPort("203.0.113.7:40000")

// tokenB is token for a benchmark.
func (e *env) tokenB(b *testing.B, acl ...string) (*credentials.Credential, string) {
	b.Helper()
	c, err := e.svc.CreateCredential(e.ctx, e.admin, credentials.CreateParams{ACL: acl})
	if err != nil {
		b.Fatal(err)
	}
	return c, *c.Token
}

// connectB opens an agent session for a benchmark; the caller closes it.
func (e *env) connectB(b *testing.B, token string) ngrok.Session {
	b.Helper()
	sess, err := ngrok.Connect(context.Background(), ngrok.WithServer(e.addr), ngrok.WithCA(e.pool), ngrok.WithAuthtoken(token))
	if err != nil {
		b.Fatal(err)
	}
	return sess
}

// httpListener returns l for net/http: its Accept is internal/sdktunnel's,
// which returns the error of a failed Accept where the SDK (v1.12.1) may
// panic on it (a race in its Connect; see the package).
func httpListener(l ngrok.Tunnel) net.Listener { return sdktunnel.Listener{Listener: l} }

// noReconnect ends an SDK session at its first disconnect, instead of
// reconnecting: a test whose server ends the session must not leave the
// SDK reconnecting when it closes the session at its end, since closing
// an SDK session while a request of its reconnect is being written is a
// data race inside muxado (v2.0.2: a stream reuses its frame after
// writeFrame returned early on the session's death).
var noReconnect = ngrok.WithDisconnectHandler(func(_ context.Context, s ngrok.Session, _ error) { s.Close() })

// wantStoppedByACL narrows the ACL of credential credID to acl and wants
// stopped, a tunnel or endpoint the agent holds that acl does not allow,
// stopped at the agent within a second (its Accept fails with the
// server's message) and no longer reachable, and kept, one it allows,
// still serving (what names the two in messages).
func wantStoppedByACL(t *testing.T, e *env, credID string, acl []string, stopped, kept ngrok.Tunnel, what string) {
	t.Helper()
	accepted := make(chan error, 1)
	go func() {
		_, err := sdktunnel.Accept(stopped)
		accepted <- err
	}()
	if _, err := e.svc.UpdateCredential(e.ctx, e.admin, credID, credentials.UpdateParams{ACL: &acl}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-accepted:
		if err == nil || !strings.Contains(err.Error(), "ACL no longer allows it") {
			t.Errorf("the stopped %s's Accept: %v", what, err)
		}
	case <-time.After(time.Second):
		t.Fatalf("the %s the ACL no longer allows was not stopped within a second", what)
	}
	if code, body, err := e.get(t, kept.ID(), "/still"); err != nil || code != 200 || !strings.HasPrefix(body, "/still") {
		t.Errorf("the %s still allowed: %d %q %v", what, code, body, err)
	}
	if _, _, err := e.get(t, stopped.ID(), "/"); !errors.Is(err, agents.ErrNoSession) {
		t.Errorf("the stopped %s: %v; want ErrNoSession", what, err)
	}
}
