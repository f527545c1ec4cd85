package proxy

import (
	"crypto/tls"
	"encoding/binary"
	"io"
	"net"
	"strconv"
	"testing"

	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/credentials"
	"github.com/edgeplane/edgeplane/edges"
)

// sinkServer starts a server on 127.0.0.1 that reads everything a client
// sends and, at its end of stream, answers the byte count (8 bytes, big
// endian); with config it speaks TLS. It returns its address.
func sinkServer(tb testing.TB, config *tls.Config) string {
	return testServer(tb, config, func(c net.Conn) {
		n, _ := io.Copy(io.Discard, c)
		_ = binary.Write(c, binary.BigEndian, n)
	})
}

// benchSend writes b.N chunks of 1 MiB on c, half-closes it and checks
// that the sink counted them all.
func benchSend(b *testing.B, c net.Conn) {
	chunk := make([]byte, 1<<20)
	b.SetBytes(int64(len(chunk)))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := c.Write(chunk); err != nil {
			b.Fatal(err)
		}
	}
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	var n int64
	if err := binary.Read(c, binary.BigEndian, &n); err != nil || n != int64(b.N)*int64(len(chunk)) {
		b.Fatalf("the sink counted %d bytes (%v), want %d", n, err, int64(b.N)*int64(len(chunk)))
	}
	b.StopTimer()
	_ = c.Close()
}

// BenchmarkStreamThroughput: bytes per second from a client to an
// upstream sink on loopback, through a TCP edge and through TLS edges
// (passthrough, and terminated at the edge), each beside the same
// transfer over a direct connection to the sink.
func BenchmarkStreamThroughput(b *testing.B) {
	e := newStreamEnv(b, StreamOptions{})
	certPEM, keyPEM, _ := e.upstreamCA.issue(b, "pass.example.com")
	pair, err := tls.X509KeyPair([]byte(certPEM), []byte(keyPEM))
	e.check(err)
	plainSink := sinkServer(b, nil)
	tlsSink := sinkServer(b, &tls.Config{Certificates: []tls.Certificate{pair}})
	// Point the edges' tunnels at the sinks: new backends and edges.
	backend := func(label, forwardsTo string) string {
		bk, err := e.api.CreateTunnelGroupBackend(e.ctx, e.a, backends.CreateParams{Labels: map[string]string{"app": label}})
		e.check(err)
		cred, err := e.api.CreateCredential(e.ctx, e.a, credentials.CreateParams{ACL: []string{"bind:app=" + label}})
		e.check(err)
		_, err = e.api.Host().RegisterTunnel(e.ctx, *cred.Token, backends.RegisterTunnelParams{Labels: map[string]string{"app": label}, ForwardsTo: forwardsTo})
		e.check(err)
		return bk.ID
	}
	plainBk, tlsBk := backend("sink", "tcp://"+plainSink), backend("tls-sink", "tls://"+tlsSink)
	_, err = e.api.UpdateTCPEdge(e.ctx, e.a, e.tcp, edges.UpdateTCPEdgeParams{Backend: &edges.BackendParams{BackendID: plainBk}})
	e.check(err)
	_, err = e.api.UpdateTLSEdge(e.ctx, e.a, e.pass, edges.UpdateTLSEdgeParams{Backend: &edges.BackendParams{BackendID: tlsBk}})
	e.check(err)
	_, err = e.api.UpdateTLSEdge(e.ctx, e.a, e.term, edges.UpdateTLSEdgeParams{Backend: &edges.BackendParams{BackendID: plainBk}})
	e.check(err)
	e.applied(e.c)
	tcpAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(e.tcpPort))
	dial := func(b *testing.B, addr string) net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		return c
	}
	dialTLS := func(b *testing.B, addr, name string, roots *testCA) net.Conn {
		c, err := tls.Dial("tcp", addr, &tls.Config{ServerName: name, RootCAs: roots.pool})
		if err != nil {
			b.Fatal(err)
		}
		return c
	}
	e.dialTCP(b).Close() // the TCP edge's listener is up
	b.Run("tcp/direct", func(b *testing.B) { benchSend(b, dial(b, plainSink)) })
	b.Run("tcp/edge", func(b *testing.B) { benchSend(b, dial(b, tcpAddr)) })
	b.Run("tls/direct", func(b *testing.B) { benchSend(b, dialTLS(b, tlsSink, "pass.example.com", e.upstreamCA)) })
	b.Run("tls/passthrough_edge", func(b *testing.B) { benchSend(b, dialTLS(b, e.addr443, "pass.example.com", e.upstreamCA)) })
	b.Run("tls/terminating_edge", func(b *testing.B) { benchSend(b, dialTLS(b, e.addr443, "term.example.com", e.ca)) })
}
