package relay_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/proxy/relay"
)

// send writes data to c, then half-closes it, and returns the SHA-256 of
// what it sent.
func send(c net.Conn, data []byte) error {
	if _, err := c.Write(data); err != nil {
		return err
	}
	return c.(closeWriter).CloseWrite()
}

// TestPipeTransfer: large random transfers both ways at once arrive
// intact, over every copy path, with and without an idle timeout (with
// one, each copy call reads under its window's deadline). The timeout is
// a minute: this test is about the bytes, and a loaded machine (the race
// detector, the whole suite on two cores) has starved the test's readers
// for more than a second, which the relay rightly took as idle.
// TestPipeOneWay is the one whose windows end while bytes move.
func TestPipeTransfer(t *testing.T) {
	const size = 8 << 20
	for _, v := range variants {
		for _, idle := range []time.Duration{0, time.Minute} {
			t.Run(fmt.Sprintf("%s/idle=%v", v.name, idle), func(t *testing.T) {
				up, down := make([]byte, size), make([]byte, size)
				rand.Read(up)
				rand.Read(down)
				w := newWorld(t, context.Background(), v, relay.Options{IdleTimeout: idle})

				errc := make(chan error, 2)
				go func() { errc <- send(w.client, up) }()
				go func() { errc <- send(w.upstream, down) }()
				gotDown := make(chan []byte, 1)
				go func() { b, _ := io.ReadAll(w.client); gotDown <- b }()
				gotUp, err := io.ReadAll(w.upstream)
				if err != nil {
					t.Fatalf("upstream read: %v (Pipe: %v)", err, w.wait(t).err)
				}
				for range 2 {
					if err := <-errc; err != nil {
						t.Fatalf("send: %v (Pipe: %v)", err, w.wait(t).err)
					}
				}
				if sha256.Sum256(gotUp) != sha256.Sum256(up) {
					t.Errorf("upstream got %d bytes, not the %d the client sent", len(gotUp), size)
				}
				if b := <-gotDown; sha256.Sum256(b) != sha256.Sum256(down) {
					t.Errorf("client got %d bytes, not the %d the upstream sent", len(b), size)
				}
				r := w.wait(t)
				if r.err != nil {
					t.Errorf("Pipe = %v, want nil", r.err)
				}
				if r.stats.ClientToUpstream != size || r.stats.UpstreamToClient != size {
					t.Errorf("Stats = %+v, want %d each way", r.stats, size)
				}
			})
		}
	}
}

// TestPipeHalfClose: the client half-closes after its request; the
// upstream sees EOF, still sends its reply, and the client gets it.
func TestPipeHalfClose(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			w := newWorld(t, context.Background(), v, relay.Options{IdleTimeout: time.Minute})
			if err := send(w.client, []byte("request")); err != nil {
				t.Fatal(err)
			}
			req, err := io.ReadAll(w.upstream) // ends only at the relayed EOF
			if err != nil || string(req) != "request" {
				t.Fatalf("upstream read %q, %v", req, err)
			}
			if err := send(w.upstream, []byte("reply")); err != nil {
				t.Fatalf("upstream could not reply after the client's half-close: %v", err)
			}
			reply, err := io.ReadAll(w.client)
			if err != nil || string(reply) != "reply" {
				t.Fatalf("client read %q, %v", reply, err)
			}
			r := w.wait(t)
			if r.err != nil || r.stats.First != relay.Client || r.stats.FirstErr != nil {
				t.Errorf("Pipe = %+v, %v; want First client (EOF), nil", r.stats, r.err)
			}
			if r.stats.ClientToUpstream != 7 || r.stats.UpstreamToClient != 5 {
				t.Errorf("Stats = %+v, want 7 up, 5 down", r.stats)
			}
		})
	}
}

// TestPipeNoCloseWrite: an upstream conn without CloseWrite is not
// half-closed, and the pipe goes on: the reply still arrives.
func TestPipeNoCloseWrite(t *testing.T) {
	v := variant{"no CloseWrite", func(t testing.TB, ca, rc, ru *net.TCPConn) (net.Conn, net.Conn, net.Conn) {
		return ca, rc, noCloseWrite{ru}
	}}
	w := newWorld(t, context.Background(), v, relay.Options{})
	if err := send(w.client, []byte("ping")); err != nil {
		t.Fatal(err)
	}
	req := make([]byte, 4)
	if _, err := io.ReadFull(w.upstream, req); err != nil {
		t.Fatal(err)
	}
	if err := send(w.upstream, []byte("pong")); err != nil {
		t.Fatal(err)
	}
	reply, err := io.ReadAll(w.client)
	if err != nil || string(reply) != "pong" {
		t.Fatalf("client read %q, %v", reply, err)
	}
	if r := w.wait(t); r.err != nil {
		t.Errorf("Pipe = %v, want nil", r.err)
	}
	// The pipe's end closed the upstream: now it sees EOF.
	if n, err := w.upstream.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Errorf("upstream read %d, %v after the pipe ended; want EOF", n, err)
	}
}

// TestPipeIdle: a pipe where nothing moves is closed with ErrIdle, and
// both peers see their connection end; also once one direction is done.
func TestPipeIdle(t *testing.T) {
	for _, v := range variants {
		for _, halfClosed := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/halfClosed=%v", v.name, halfClosed), func(t *testing.T) {
				w := newWorld(t, context.Background(), v, relay.Options{IdleTimeout: 20 * time.Millisecond})
				if halfClosed {
					if err := send(w.client, []byte("x")); err != nil {
						t.Fatal(err)
					}
				}
				r := w.wait(t)
				if !errors.Is(r.err, relay.ErrIdle) {
					t.Fatalf("Pipe = %v, want ErrIdle", r.err)
				}
				if halfClosed && r.stats.First != relay.Client {
					t.Errorf("First = %v, want client", r.stats.First)
				}
				if !halfClosed && r.stats.First != relay.NoSide {
					t.Errorf("First = %v, want none", r.stats.First)
				}
				if _, err := io.ReadAll(w.client); err != nil {
					t.Errorf("client: %v, want EOF", err)
				}
				if _, err := io.ReadAll(w.upstream); err != nil {
					t.Errorf("upstream: %v, want EOF", err)
				}
			})
		}
	}
}

// TestPipeOneWay: traffic in one direction only keeps the pipe open across
// many idle timeouts: the quiet direction does not get it closed.
func TestPipeOneWay(t *testing.T) {
	// The timeout is long enough that a loaded machine (the whole suite
	// on two cores) does not starve a relay goroutine for all of it.
	const (
		idle  = 500 * time.Millisecond
		ticks = 40
		every = 50 * time.Millisecond // paces the stream over 4 idle timeouts
		chunk = 1024
	)
	for _, v := range variants[:2] {
		for _, download := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/download=%v", v.name, download), func(t *testing.T) {
				t.Parallel()
				w := newWorld(t, context.Background(), v, relay.Options{IdleTimeout: idle})
				from, to := net.Conn(w.client), net.Conn(w.upstream)
				if download {
					from, to = to, from
				}
				errc := make(chan error, 1)
				go func() {
					tick := time.NewTicker(every)
					defer tick.Stop()
					buf := bytes.Repeat([]byte{'d'}, chunk)
					for range ticks {
						<-tick.C
						if _, err := from.Write(buf); err != nil {
							errc <- err
							return
						}
					}
					errc <- from.(closeWriter).CloseWrite()
				}()
				got, err := io.ReadAll(to)
				if err != nil || len(got) != ticks*chunk {
					t.Fatalf("read %d bytes, %v; want %d", len(got), err, ticks*chunk)
				}
				if err := <-errc; err != nil {
					t.Fatalf("sender: %v", err)
				}
				to.(closeWriter).CloseWrite()
				if r := w.wait(t); r.err != nil {
					t.Errorf("Pipe = %v, want nil: the stream was not idle", r.err)
				}
			})
		}
	}
}

// TestPipeCancel: cancelling the context closes both connections.
func TestPipeCancel(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			w := newWorld(t, ctx, v, relay.Options{})
			if _, err := w.client.Write([]byte("hi")); err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadFull(w.upstream, make([]byte, 2)); err != nil {
				t.Fatal(err)
			}
			cancel()
			r := w.wait(t)
			if !errors.Is(r.err, context.Canceled) {
				t.Errorf("Pipe = %v, want context.Canceled", r.err)
			}
			if r.stats.First != relay.NoSide || r.stats.ClientToUpstream != 2 {
				t.Errorf("Stats = %+v, want no First, 2 up", r.stats)
			}
			if _, err := io.ReadAll(w.upstream); err != nil {
				t.Errorf("upstream: %v, want EOF", err)
			}
			if _, err := io.ReadAll(w.client); err != nil {
				t.Errorf("client: %v, want EOF", err)
			}
		})
	}
}

// TestPipeError: an upstream that resets its connection ends the pipe with
// an error, and the client's connection is closed.
func TestPipeError(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			w := newWorld(t, context.Background(), v, relay.Options{})
			if _, err := w.client.Write([]byte("hi")); err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadFull(w.upstream, make([]byte, 2)); err != nil {
				t.Fatal(err)
			}
			w.upstream.SetLinger(0)
			w.upstream.Close() // a reset
			r := w.wait(t)
			if r.err == nil || errors.Is(r.err, relay.ErrIdle) {
				t.Errorf("Pipe = %v, want the reset", r.err)
			}
			if r.stats.First != relay.Upstream || r.stats.FirstErr == nil {
				t.Errorf("Stats = %+v, want First upstream with an error", r.stats)
			}
			if n, _ := w.client.Read(make([]byte, 1)); n != 0 {
				t.Errorf("client read %d bytes after the reset", n)
			}
		})
	}
}

func TestPipeOptions(t *testing.T) {
	a, b := tcpPair(t)
	_, err := relay.Pipe(context.Background(), a, b, relay.Options{IdleTimeout: -time.Second})
	if !errors.Is(err, relay.ErrOptions) {
		t.Fatalf("Pipe = %v, want ErrOptions", err)
	}
	if _, err := a.Write([]byte("x")); err == nil {
		t.Error("the client conn is still open after bad options")
	}
}

// TestPipeUsesWriteTo: into a TCP conn, a source with a WriteTo method
// copies itself (package sni's conn splices that way), and the data
// arrives.
func TestPipeUsesWriteTo(t *testing.T) {
	var src *writerToConn
	v := variant{"writerTo", func(t testing.TB, ca, rc, ru *net.TCPConn) (net.Conn, net.Conn, net.Conn) {
		src = &writerToConn{TCPConn: rc}
		return ca, src, ru
	}}
	w := newWorld(t, context.Background(), v, relay.Options{})
	if err := send(w.client, []byte("spliced")); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(w.upstream)
	if err != nil || string(got) != "spliced" {
		t.Fatalf("upstream read %q, %v", got, err)
	}
	w.upstream.CloseWrite()
	if r := w.wait(t); r.err != nil {
		t.Fatal(r.err)
	}
	if src.calls == 0 {
		t.Error("the relay did not use the source's WriteTo")
	}
}

// TestPipeStalledReader: a client that stops reading while the upstream
// has data for it stalls the upstream->client direction in a write; with
// the client->upstream direction quiet too, the idle timeout still closes
// the pipe (a slow-read attack does not hold it open).
func TestPipeStalledReader(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			w := newWorld(t, context.Background(), v, relay.Options{IdleTimeout: 50 * time.Millisecond})
			go func() {
				buf := make([]byte, 1<<20)
				for {
					if _, err := w.upstream.Write(buf); err != nil {
						return
					}
				}
			}()
			r := w.wait(t)
			if !errors.Is(r.err, relay.ErrIdle) {
				t.Errorf("Pipe = %v, want ErrIdle", r.err)
			}
		})
	}
}

// TestPipeTinyIdleTimeout: an idle timeout too small to halve (1 ns) is
// still a timeout, not none.
func TestPipeTinyIdleTimeout(t *testing.T) {
	w := newWorld(t, context.Background(), variants[0], relay.Options{IdleTimeout: time.Nanosecond})
	if r := w.wait(t); !errors.Is(r.err, relay.ErrIdle) {
		t.Errorf("Pipe = %v, want ErrIdle", r.err)
	}
}
