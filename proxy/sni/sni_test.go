package sni_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/proxy/sni"
)

func TestPeekHello(t *testing.T) {
	tests := []struct {
		name  string
		cfg   *tls.Config
		want  sni.Hello // compared: ServerName, Protocols, MaxVersion
		wantV []uint16  // Versions, when not nil
	}{
		{
			name: "server name",
			cfg:  &tls.Config{ServerName: "app.example.com"},
			want: sni.Hello{ServerName: "app.example.com", MaxVersion: tls.VersionTLS13},
		},
		{
			name: "server name as sent, not lower-cased",
			cfg:  &tls.Config{ServerName: "App.Example.COM"},
			want: sni.Hello{ServerName: "App.Example.COM", MaxVersion: tls.VersionTLS13},
		},
		{
			name: "no server name",
			cfg:  &tls.Config{InsecureSkipVerify: true},
			want: sni.Hello{ServerName: "", MaxVersion: tls.VersionTLS13},
		},
		{
			name: "IP literal sends no server name",
			cfg:  &tls.Config{ServerName: "192.0.2.1"},
			want: sni.Hello{ServerName: "", MaxVersion: tls.VersionTLS13},
		},
		{
			name:  "ALPN",
			cfg:   &tls.Config{ServerName: "a.test", NextProtos: []string{"h2", "http/1.1"}},
			want:  sni.Hello{ServerName: "a.test", Protocols: []string{"h2", "http/1.1"}, MaxVersion: tls.VersionTLS13},
			wantV: []uint16{tls.VersionTLS13, tls.VersionTLS12},
		},
		{
			name:  "TLS 1.2 at most",
			cfg:   &tls.Config{ServerName: "a.test", MaxVersion: tls.VersionTLS12},
			want:  sni.Hello{ServerName: "a.test", MaxVersion: tls.VersionTLS12},
			wantV: []uint16{tls.VersionTLS12},
		},
		{
			name:  "TLS 1.3 only",
			cfg:   &tls.Config{ServerName: "a.test", MinVersion: tls.VersionTLS13},
			want:  sni.Hello{ServerName: "a.test", MaxVersion: tls.VersionTLS13},
			wantV: []uint16{tls.VersionTLS13},
		},
		{
			name:  "TLS 1.0 only: no supported_versions extension",
			cfg:   &tls.Config{ServerName: "a.test", MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS10},
			want:  sni.Hello{ServerName: "a.test", MaxVersion: tls.VersionTLS10},
			wantV: []uint16{tls.VersionTLS10},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client, server := tcpPair(t)
			go tls.Client(client, tt.cfg).Handshake()
			hello, conn, err := sni.Peek(context.Background(), server, sni.Options{})
			if err != nil {
				t.Fatalf("Peek: %v", err)
			}
			server.SetReadDeadline(time.Now().Add(2 * time.Second)) // a guard, not a timing
			if hello.ServerName != tt.want.ServerName {
				t.Errorf("ServerName = %q, want %q", hello.ServerName, tt.want.ServerName)
			}
			if !slices.Equal(hello.Protocols, tt.want.Protocols) {
				t.Errorf("Protocols = %q, want %q", hello.Protocols, tt.want.Protocols)
			}
			if hello.MaxVersion != tt.want.MaxVersion {
				t.Errorf("MaxVersion = %#x, want %#x", hello.MaxVersion, tt.want.MaxVersion)
			}
			if tt.wantV != nil && !slices.Equal(hello.Versions, tt.wantV) {
				t.Errorf("Versions = %#x, want %#x", hello.Versions, tt.wantV)
			}
			if len(hello.CipherSuites) == 0 || len(hello.Extensions) == 0 {
				t.Errorf("CipherSuites = %v, Extensions = %v: want some", hello.CipherSuites, hello.Extensions)
			}
			if hello.ECH {
				t.Errorf("ECH = true for a client without ECH")
			}
			// The conn replays exactly the bytes read: a TLS record
			// header, then the rest.
			buf := make([]byte, hello.Bytes)
			if _, err := io.ReadFull(conn, buf); err != nil {
				t.Fatal(err)
			}
			if buf[0] != 0x16 || hello.Bytes < 5+4 {
				t.Errorf("replayed %d bytes starting %#x: want a handshake record", len(buf), buf[0])
			}
		})
	}
}

// TestPeekTerminate terminates TLS on the conn Peek returns: the handshake
// sees the replayed hello, and data flows both ways.
func TestPeekTerminate(t *testing.T) {
	cert, pool := newCert(t, "app.example.com")
	client, server := tcpPair(t)

	done := make(chan error, 1)
	go func() {
		defer client.Close() // so the server's reads end too
		tc := tls.Client(client, &tls.Config{ServerName: "app.example.com", RootCAs: pool, NextProtos: []string{"h2"}})
		if _, err := tc.Write([]byte("ping")); err != nil {
			done <- err
			return
		}
		reply := make([]byte, 4)
		if _, err := io.ReadFull(tc, reply); err != nil {
			done <- err
			return
		}
		if string(reply) != "pong" {
			done <- errors.New("client got " + string(reply))
			return
		}
		done <- nil
	}()

	hello, conn, err := sni.Peek(context.Background(), server, sni.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if hello.ServerName != "app.example.com" {
		t.Fatalf("ServerName = %q", hello.ServerName)
	}
	ts := tls.Server(conn, &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2"}})
	if err := ts.Handshake(); err != nil {
		t.Fatalf("server handshake on the replayed conn: %v", err)
	}
	if p := ts.ConnectionState().NegotiatedProtocol; p != "h2" {
		t.Errorf("NegotiatedProtocol = %q, want h2", p)
	}
	got := make([]byte, 4)
	if _, err := io.ReadFull(ts, got); err != nil || string(got) != "ping" {
		t.Fatalf("server read %q, %v", got, err)
	}
	if _, err := ts.Write([]byte("pong")); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("client: %v", err)
	}
}

// TestPeekPassthrough splices the conn Peek returns to a real TLS
// upstream: the client completes its handshake with the upstream, sees
// the upstream's certificate, and data flows both ways.
func TestPeekPassthrough(t *testing.T) {
	for _, version := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		t.Run(tls.VersionName(version), func(t *testing.T) {
			upCert, pool := newCert(t, "backend.example.com")
			ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{upCert}})
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			go func() { // the upstream: echo with a prefix
				c, err := ln.Accept()
				if err != nil {
					return
				}
				defer c.Close()
				buf := make([]byte, 4)
				if _, err := io.ReadFull(c, buf); err == nil {
					c.Write(append([]byte("up:"), buf...))
				}
			}()

			client, server := tcpPair(t)
			done := make(chan error, 1)
			var state tls.ConnectionState
			go func() {
				defer client.Close()
				tc := tls.Client(client, &tls.Config{ServerName: "backend.example.com", RootCAs: pool, MaxVersion: version})
				if err := tc.Handshake(); err != nil {
					done <- err
					return
				}
				state = tc.ConnectionState()
				tc.Write([]byte("ping"))
				reply := make([]byte, 7)
				if _, err := io.ReadFull(tc, reply); err != nil {
					done <- err
					return
				}
				if string(reply) != "up:ping" {
					done <- errors.New("client got " + string(reply))
					return
				}
				done <- nil
			}()

			hello, conn, err := sni.Peek(context.Background(), server, sni.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if hello.ServerName != "backend.example.com" {
				t.Fatalf("ServerName = %q", hello.ServerName)
			}
			up, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer up.Close()
			go io.Copy(up, conn)
			go io.Copy(conn, up)
			if err := <-done; err != nil {
				t.Fatalf("client through the passthrough: %v", err)
			}
			if len(state.PeerCertificates) == 0 || !state.PeerCertificates[0].Equal(upCert.Leaf) {
				t.Errorf("client did not see the upstream's certificate")
			}
			if state.Version != version {
				t.Errorf("negotiated %s, want %s", tls.VersionName(state.Version), tls.VersionName(version))
			}
			conn.Close()
		})
	}
}

func TestPeekErrors(t *testing.T) {
	hello := helloBytes(t, &tls.Config{ServerName: "a.test"})
	serverHello := slices.Clone(hello)
	serverHello[5] = 2 // handshake type server_hello

	tests := []struct {
		name  string
		send  []byte // what the client sends
		close bool   // client closes its write side after sending
		opts  sni.Options
		ctx   func() context.Context
		want  error
	}{
		{name: "plain HTTP", send: []byte("GET / HTTP/1.1\r\nHost: a.test\r\n\r\n"), want: sni.ErrNotTLS},
		{name: "SSH banner", send: []byte("SSH-2.0-OpenSSH_9.6\r\n"), want: sni.ErrNotTLS},
		{name: "SSLv2 hello", send: []byte{0x80, 0x2e, 0x01, 0x00, 0x02}, want: sni.ErrNotTLS},
		{name: "oversized record", send: []byte{0x16, 0x03, 0x01, 0xff, 0xff}, want: sni.ErrNotTLS},
		{name: "closed at once", close: true, want: sni.ErrTruncated},
		{name: "truncated header", send: hello[:3], close: true, want: sni.ErrTruncated},
		{name: "truncated hello", send: hello[:len(hello)-1], close: true, want: sni.ErrTruncated},
		{name: "slowloris", send: hello[:len(hello)/2], opts: sni.Options{Timeout: 20 * time.Millisecond}, want: sni.ErrTimeout},
		{name: "slowloris is a deadline", send: hello[:10], opts: sni.Options{Timeout: 20 * time.Millisecond}, want: os.ErrDeadlineExceeded},
		{name: "larger than MaxBytes", send: hello, opts: sni.Options{MaxBytes: len(hello) - 1}, want: sni.ErrTooLarge},
		{name: "not a ClientHello", send: serverHello, want: sni.ErrBadHello},
		{name: "alert record", send: []byte{0x15, 0x03, 0x01, 0x00, 0x02, 0x02, 0x28}, want: sni.ErrBadHello},
		{
			name: "context cancelled", send: hello[:10], want: context.Canceled,
			ctx: func() context.Context {
				ctx, cancel := context.WithCancel(context.Background())
				time.AfterFunc(10*time.Millisecond, cancel)
				return ctx
			},
		},
		{
			name: "context deadline is a timeout", send: hello[:10], want: sni.ErrTimeout,
			ctx: func() context.Context {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
				t.Cleanup(cancel)
				return ctx
			},
		},
		{
			name: "context deadline", send: hello[:10], want: context.DeadlineExceeded,
			ctx: func() context.Context {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
				t.Cleanup(cancel)
				return ctx
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client, server := tcpPair(t)
			if _, err := client.Write(tt.send); err != nil {
				t.Fatal(err)
			}
			if tt.close {
				client.CloseWrite()
			}
			ctx := context.Background()
			if tt.ctx != nil {
				ctx = tt.ctx()
			}
			h, conn, err := sni.Peek(ctx, server, tt.opts)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Peek error = %v, want %v", err, tt.want)
			}
			if h != nil {
				t.Errorf("Hello = %+v on error, want nil", h)
			}
			// The conn still replays what was read.
			if len(tt.send) > 0 {
				server.SetReadDeadline(time.Now().Add(time.Second))
				n := min(len(tt.send), 5)
				got := make([]byte, n)
				if _, err := io.ReadFull(conn, got); err != nil || !bytes.Equal(got, tt.send[:n]) {
					t.Errorf("replayed %q, %v; want %q", got, err, tt.send[:n])
				}
			}
			// Nothing, not even an alert, was written to the client.
			// (Drain first: closing with unread data would reset.)
			client.CloseWrite()
			server.SetReadDeadline(time.Now().Add(5 * time.Second))
			io.Copy(io.Discard, conn)
			conn.Close()
			client.SetReadDeadline(time.Now().Add(5 * time.Second))
			if n, err := client.Read(make([]byte, 64)); n != 0 || !errors.Is(err, io.EOF) {
				t.Errorf("client read %d bytes, %v: want 0, EOF", n, err)
			}
		})
	}
}

func TestPeekOptions(t *testing.T) {
	for _, opts := range []sni.Options{{MaxBytes: -1}, {Timeout: -time.Second}} {
		c := newMemConn(nil)
		_, conn, err := sni.Peek(context.Background(), c, opts)
		if !errors.Is(err, sni.ErrOptions) || conn != nil {
			t.Errorf("Peek(%+v) = %v, %v: want ErrOptions, nil conn", opts, conn, err)
		}
		if len(c.deadlines) != 0 {
			t.Errorf("Peek(%+v) set deadlines %v on the conn", opts, c.deadlines)
		}
	}
}

// TestPeekClearsDeadline: the peek's read deadline is set, then cleared.
func TestPeekClearsDeadline(t *testing.T) {
	c := newMemConn(helloBytes(t, &tls.Config{ServerName: "a.test"}))
	if _, _, err := sni.Peek(context.Background(), c, sni.Options{}); err != nil {
		t.Fatal(err)
	}
	if len(c.deadlines) < 2 || c.deadlines[0].IsZero() || !c.deadlines[len(c.deadlines)-1].IsZero() {
		t.Errorf("read deadlines set: %v; want a deadline, then none", c.deadlines)
	}
}

// TestPeekCloseWrite: the returned conn has CloseWrite exactly when the
// original has, and it half-closes the original.
func TestPeekCloseWrite(t *testing.T) {
	hello := helloBytes(t, &tls.Config{ServerName: "a.test"})
	type closeWriter interface{ CloseWrite() error }

	client, server := tcpPair(t)
	client.Write(hello)
	_, conn, err := sni.Peek(context.Background(), server, sni.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cw, ok := conn.(closeWriter)
	if !ok {
		t.Fatal("conn over a *net.TCPConn has no CloseWrite")
	}
	if err := cw.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	if n, err := client.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Errorf("after CloseWrite the client read %d, %v: want EOF", n, err)
	}
	if conn.LocalAddr().String() != server.LocalAddr().String() || conn.RemoteAddr().String() != server.RemoteAddr().String() {
		t.Errorf("addresses not passed through")
	}

	_, conn, err = sni.Peek(context.Background(), newMemConn(hello), sni.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := conn.(closeWriter); ok {
		t.Error("conn over a conn without CloseWrite has one")
	}
}

// TestPeekWriteTo: io.Copy from the returned conn (which uses its
// WriteTo) delivers the replayed bytes and then the rest, over TCP (the
// splice path) and over a plain conn.
func TestPeekWriteTo(t *testing.T) {
	hello := helloBytes(t, &tls.Config{ServerName: "a.test"})
	rest := bytes.Repeat([]byte("after the hello "), 10000)
	want := append(slices.Clone(hello), rest...)

	t.Run("TCP to TCP", func(t *testing.T) {
		client, server := tcpPair(t)
		go func() { client.Write(want); client.CloseWrite() }()
		_, conn, err := sni.Peek(context.Background(), server, sni.Options{})
		if err != nil {
			t.Fatal(err)
		}
		up, sink := tcpPair(t)
		got := make(chan []byte)
		go func() { b, _ := io.ReadAll(sink); got <- b }()
		n, err := io.Copy(up, conn)
		if err != nil || n != int64(len(want)) {
			t.Fatalf("io.Copy = %d, %v; want %d", n, err, len(want))
		}
		up.CloseWrite()
		if b := <-got; !bytes.Equal(b, want) {
			t.Errorf("upstream got %d bytes, want the %d sent", len(b), len(want))
		}
	})
	t.Run("to a buffer", func(t *testing.T) {
		_, conn, err := sni.Peek(context.Background(), newMemConn(want), sni.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if _, err := io.Copy(&buf, conn); err != nil || !bytes.Equal(buf.Bytes(), want) {
			t.Errorf("io.Copy gave %d bytes, %v; want the %d sent", buf.Len(), err, len(want))
		}
	})
}

// TestPeekGREASE: a GREASE version (RFC 8701) is listed in Versions but
// never taken as MaxVersion.
func TestPeekGREASE(t *testing.T) {
	hello := helloBytes(t, &tls.Config{ServerName: "a.test"})
	// supported_versions: type 0x002b, 5 bytes, a 4-byte list: TLS 1.3, 1.2.
	ext := []byte{0x00, 0x2b, 0x00, 0x05, 0x04, 0x03, 0x04, 0x03, 0x03}
	i := bytes.Index(hello, ext)
	if i < 0 {
		t.Fatalf("no supported_versions [1.3, 1.2] in %x", hello)
	}
	hello[i+5], hello[i+6] = 0xfa, 0xfa // TLS 1.3 -> GREASE
	hello[i+7], hello[i+8] = 0x03, 0x03 // TLS 1.2 stays
	h, _, err := sni.Peek(context.Background(), newMemConn(hello), sni.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(h.Versions, []uint16{0xfafa, tls.VersionTLS12}) || h.MaxVersion != tls.VersionTLS12 {
		t.Errorf("Versions = %#x, MaxVersion = %#x; want [0xfafa 0x303], 0x303", h.Versions, h.MaxVersion)
	}
}
