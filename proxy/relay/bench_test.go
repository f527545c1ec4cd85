package relay_test

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/proxy/relay"
)

// BenchmarkPipe uploads through the relay (client -> relay listener ->
// upstream sink, all loopback TCP) and, for comparison, straight to the
// same sink; one op is 1 MiB written, so the rows read in MB/s.
func BenchmarkPipe(b *testing.B) {
	const chunk = 1 << 20
	sink := newSink(b)
	cases := []struct {
		name  string
		relay bool
		wrap  func(net.Conn) net.Conn
		idle  time.Duration
	}{
		{name: "direct"},
		{name: "relay/splice", relay: true},
		{name: "relay/splice/idle", relay: true, idle: time.Minute},
		{name: "relay/buffer", relay: true, wrap: func(c net.Conn) net.Conn { return bufConn{c} }},
		{name: "relay/buffer/idle", relay: true, wrap: func(c net.Conn) net.Conn { return bufConn{c} }, idle: time.Minute},
	}
	for _, bc := range cases {
		b.Run(bc.name, func(b *testing.B) {
			addr := sink.Addr().String()
			if bc.relay {
				addr = startRelay(b, addr, bc.wrap, relay.Options{IdleTimeout: bc.idle})
			}
			c, err := net.Dial("tcp", addr)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			buf := make([]byte, chunk)
			b.SetBytes(chunk)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, err := c.Write(buf); err != nil {
					b.Fatal(err)
				}
			}
			// The sink's count, after the half-close, ends the op.
			c.(*net.TCPConn).CloseWrite()
			if _, err := io.ReadAll(c); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
		})
	}
}

// newSink listens for connections it reads to EOF and then closes.
func newSink(b *testing.B) net.Listener {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				io.Copy(io.Discard, c)
				c.Close()
			}()
		}
	}()
	return ln
}

// startRelay listens for one client and pipes it to addr.
func startRelay(b *testing.B, addr string, wrap func(net.Conn) net.Conn, opts relay.Options) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	go func() {
		client, err := ln.Accept()
		if err != nil {
			return
		}
		upstream, err := net.Dial("tcp", addr)
		if err != nil {
			client.Close()
			return
		}
		if wrap != nil {
			client, upstream = wrap(client), wrap(upstream)
		}
		relay.Pipe(context.Background(), client, upstream, opts)
	}()
	return ln.Addr().String()
}
