package tunnel_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/internal/sdktunnel"
	"github.com/edgeplane/edgeplane/tunnel"
	"golang.ngrok.com/ngrok/config"
)

// BenchmarkDialTunnelHTTP: one HTTP request and its response through a
// stream of an agent's session (the SDK as the agent, http.Serve on its
// tunnel, over real TLS on loopback): the cost the proxy pays per
// request to an agent tunnel, beside its own.
func BenchmarkDialTunnelHTTP(b *testing.B) {
	e := newEnv(b, tunnel.Options{})
	_, token := e.tokenB(b)
	sess := e.connectB(b, token)
	defer sess.Close()
	tun, err := sess.Listen(context.Background(), config.LabeledTunnel(config.WithLabel("app", "bench")))
	if err != nil {
		b.Fatal(err)
	}
	go http.Serve(httpListener(tun), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello, world\n") }))
	h := agents.ConnHeader{ClientAddr: clientAddr, Proto: "https", EdgeType: agents.EdgeHTTPS}
	req := []byte("GET / HTTP/1.1\r\nHost: bench.example.com\r\nConnection: close\r\n\r\n")
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		c, err := e.srv.DialTunnel(context.Background(), "", tun.ID(), h)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Write(req); err != nil {
			b.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		c.Close()
	}
}

// BenchmarkDialTunnelBytes: bytes through one stream to an agent that
// echoes them (1 MiB a time, both ways): the tunnel's throughput on one
// connection, bounded by muxado's 256 KiB stream window.
func BenchmarkDialTunnelBytes(b *testing.B) {
	e := newEnv(b, tunnel.Options{})
	_, token := e.tokenB(b)
	sess := e.connectB(b, token)
	defer sess.Close()
	tun, err := sess.Listen(context.Background(), config.LabeledTunnel(config.WithLabel("app", "echo")))
	if err != nil {
		b.Fatal(err)
	}
	go func() {
		for {
			c, err := sdktunnel.Accept(tun)
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	c, err := e.srv.DialTunnel(context.Background(), "", tun.ID(), agents.ConnHeader{ClientAddr: clientAddr, Proto: "tcp", EdgeType: agents.EdgeTCP})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	buf := make([]byte, 1<<20)
	got := make([]byte, 1<<20)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		errc := make(chan error, 1)
		go func() { _, err := c.Write(buf); errc <- err }()
		if _, err := io.ReadFull(c, got); err != nil {
			b.Fatal(err)
		}
		if err := <-errc; err != nil {
			b.Fatal(err)
		}
	}
}
