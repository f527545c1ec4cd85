package sni_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/proxy/sni"
)

// newCert returns a self-signed certificate for the names, and a pool
// that trusts it.
func newCert(t testing.TB, names ...string) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: names[0]},
		DNSNames:              names,
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
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

// tcpPair returns the two ends of a loopback TCP connection; the
// client's end has a 10 s deadline.
func tcpPair(t testing.TB) (client, server *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type res struct {
		c   net.Conn
		err error
	}
	ch := make(chan res, 1)
	go func() {
		c, err := ln.Accept()
		ch <- res{c, err}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	r := <-ch
	if r.err != nil {
		t.Fatal(r.err)
	}
	t.Cleanup(func() { c.Close(); r.c.Close() })
	// A broken peek fails a test instead of hanging it.
	c.SetDeadline(time.Now().Add(10 * time.Second))
	return c.(*net.TCPConn), r.c.(*net.TCPConn)
}

// helloBytes returns the bytes of the ClientHello a crypto/tls client
// with cfg sends.
func helloBytes(t testing.TB, cfg *tls.Config) []byte {
	t.Helper()
	client, server := net.Pipe()
	defer client.Close()
	go tls.Client(client, cfg).Handshake()
	hello, conn, err := sni.Peek(context.Background(), server, sni.Options{})
	if err != nil {
		t.Fatalf("peeking a crypto/tls hello: %v", err)
	}
	server.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, hello.Bytes)
	if _, err := io.ReadFull(conn, buf); err != nil {
		t.Fatal(err)
	}
	server.Close()
	return buf
}

// memConn is a net.Conn that reads data and then io.EOF, discards
// writes, and records the read deadlines set on it.
type memConn struct {
	r         *bytes.Reader
	deadlines []time.Time
	net.Conn  // nil: methods not overridden panic
}

func newMemConn(data []byte) *memConn { return &memConn{r: bytes.NewReader(data)} }

func (c *memConn) Read(p []byte) (int, error)  { return c.r.Read(p) }
func (c *memConn) Write(p []byte) (int, error) { return len(p), nil }
func (c *memConn) Close() error                { return nil }
func (c *memConn) SetReadDeadline(t time.Time) error {
	c.deadlines = append(c.deadlines, t)
	return nil
}
