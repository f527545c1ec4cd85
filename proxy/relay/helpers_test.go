package relay_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"io"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/proxy/relay"
)

// tcpPair returns the two ends of a loopback TCP connection.
func tcpPair(t testing.TB) (a, b *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ch := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		ch <- c
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s := <-ch
	if s == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	return c.(*net.TCPConn), s.(*net.TCPConn)
}

type closeWriter interface {
	CloseWrite() error
}

// bufConn hides the *net.TCPConn (and its ReadFrom and WriteTo), so the
// relay copies through its buffer; CloseWrite stays.
type bufConn struct{ net.Conn }

func (c bufConn) CloseWrite() error { return c.Conn.(closeWriter).CloseWrite() }

// noCloseWrite hides CloseWrite too.
type noCloseWrite struct{ net.Conn }

// writerToConn is a conn wrapper with a WriteTo of its own, as package
// proxy/sni's: it splices when it can.
type writerToConn struct {
	*net.TCPConn
	calls int
}

func (c *writerToConn) WriteTo(w io.Writer) (int64, error) {
	c.calls++
	return w.(io.ReaderFrom).ReadFrom(c.TCPConn)
}

// variant is a way to hand the relay its two connections.
type variant struct {
	name string
	// wrap returns the app's end and the relay's end of the client
	// connection, and the relay's end of the upstream one.
	wrap func(t testing.TB, clientApp, relayClient, relayUp *net.TCPConn) (net.Conn, net.Conn, net.Conn)
}

var variants = []variant{
	{"splice", func(t testing.TB, ca, rc, ru *net.TCPConn) (net.Conn, net.Conn, net.Conn) { return ca, rc, ru }},
	{"buffer", func(t testing.TB, ca, rc, ru *net.TCPConn) (net.Conn, net.Conn, net.Conn) {
		return ca, bufConn{rc}, bufConn{ru}
	}},
	{"writerTo", func(t testing.TB, ca, rc, ru *net.TCPConn) (net.Conn, net.Conn, net.Conn) {
		return ca, &writerToConn{TCPConn: rc}, ru
	}},
	{"TLS client", func(t testing.TB, ca, rc, ru *net.TCPConn) (net.Conn, net.Conn, net.Conn) {
		cert, pool := newCert(t, "relay.test")
		tc := tls.Client(ca, &tls.Config{ServerName: "relay.test", RootCAs: pool})
		ts := tls.Server(rc, &tls.Config{Certificates: []tls.Certificate{cert}})
		errc := make(chan error, 1)
		go func() { errc <- tc.Handshake() }()
		if err := ts.Handshake(); err != nil {
			t.Fatal(err)
		}
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		return tc, ts, ru
	}},
}

// world is a client app, a relay running Pipe, and an upstream app.
type world struct {
	client   net.Conn // the client app's end
	upstream *net.TCPConn
	done     chan result
}

type result struct {
	stats relay.Stats
	err   error
}

func newWorld(t testing.TB, ctx context.Context, v variant, opts relay.Options) *world {
	t.Helper()
	ca, rc := tcpPair(t)
	ru, ua := tcpPair(t)
	client, relayClient, relayUp := v.wrap(t, ca, rc, ru)
	w := &world{client: client, upstream: ua, done: make(chan result, 1)}
	// Guards, not timings: a broken relay fails the test instead of
	// hanging it.
	ca.SetDeadline(time.Now().Add(10 * time.Second))
	ua.SetDeadline(time.Now().Add(10 * time.Second))
	go func() {
		s, err := relay.Pipe(ctx, relayClient, relayUp, opts)
		w.done <- result{s, err}
	}()
	return w
}

// wait returns Pipe's result.
func (w *world) wait(t testing.TB) result {
	t.Helper()
	select {
	case r := <-w.done:
		return r
	case <-time.After(10 * time.Second): // a guard, not a timing
		t.Fatal("Pipe did not return")
		return result{}
	}
}

func newCert(t testing.TB, name string) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		DNSNames:     []string{name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		IsCA:         true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}
