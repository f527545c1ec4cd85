package muxframe

import (
	"bytes"
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"golang.ngrok.com/muxado/v2"
)

// pair is a muxado session (server role) over a Conn, whose streams are
// wrapped, and its peer, a plain muxado client, over a TCP connection on
// loopback.
func pair(t *testing.T) (*Conn, muxado.Session, muxado.Session) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	peerConn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	sc, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	c := NewConn(sc)
	srv := muxado.Server(c, &muxado.Config{NewFramer: c.Framer(Limits{})})
	peer := muxado.Client(peerConn, &muxado.Config{})
	t.Cleanup(func() { srv.Close(); peer.Close() })
	return c, srv, peer
}

// TestStreamWindow: a write the peer's window cannot take fails at its
// deadline (muxado alone waits for the window whatever the deadline),
// after exactly the window; the stream goes on once the peer reads.
func TestStreamWindow(t *testing.T) {
	c, srv, peer := pair(t)
	opened, err := srv.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	str := c.Wrap(opened)
	_ = str.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
	n, err := str.Write(make([]byte, 1<<20))
	if !errors.Is(err, os.ErrDeadlineExceeded) || n != DefaultWindow {
		t.Fatalf("a write of 1 MiB to a peer that reads nothing: %d bytes, %v; want the window (%d) and a timeout", n, err, DefaultWindow)
	}
	got, err := peer.AcceptStream()
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, DefaultWindow)
	for read := 0; read < DefaultWindow; {
		k, err := got.Read(buf[read:])
		if err != nil {
			t.Fatal(err)
		}
		read += k
	}
	_ = str.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := str.Write([]byte("more")); err != nil {
		t.Errorf("a write once the peer read: %v", err)
	}
}

// TestStreamReset: Reset returns without waiting for the peer and tells the peer, whose
// write waits for its window on the stream, with an RST of its code;
// Close, too, returns at once.
func TestStreamReset(t *testing.T) {
	c, srv, peer := pair(t)
	accepted := make(chan *Stream, 1)
	go func() {
		if a, err := srv.AcceptStream(); err == nil {
			accepted <- c.Wrap(a)
		}
	}()
	ps, err := peer.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	wrote := make(chan error, 1)
	go func() { _, err := ps.Write(make([]byte, 1<<20)); wrote <- err }() // waits after the window
	var str *Stream
	select {
	case str = <-accepted:
	case <-time.After(5 * time.Second):
		t.Fatal("the peer's stream did not arrive")
	}
	// Reset must not wait for anything the peer does (its window, its
	// reads): it returns while the peer's write still waits, which would
	// wait for ever if Reset did not reach it. A deadline, not a speed.
	reset := make(chan struct{})
	go func() { str.Reset(muxado.StreamCancelled); close(reset) }()
	select {
	case <-reset:
	case <-time.After(10 * time.Second):
		t.Fatal("Reset did not return while the peer's write waited for its window")
	}
	select {
	case err := <-wrote:
		if code, _ := muxado.GetError(err); code != muxado.StreamCancelled {
			t.Errorf("the peer's write: %v (code %d); want StreamCancelled", err, code)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the peer's write still waits 5 s after the reset")
	}
	if _, err := str.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Errorf("a write after Reset: %v; want net.ErrClosed", err)
	}
}

// TestStall: a peer that reads nothing stalls the session's writer; with
// a write timeout the session dies of it, and Stalled says so.
func TestStall(t *testing.T) {
	c2, srv2 := stalledPair(t)
	c2.SetWriteTimeout(300 * time.Millisecond)
	opened, err := srv2.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	str := c2.Wrap(opened)
	start := time.Now()
	go func() {
		for i := 0; i < 64; i++ { // a stream each, their windows: more than the sockets hold
			o, err := srv2.OpenStream()
			if err != nil {
				return
			}
			go c2.Wrap(o).Write(bytes.Repeat([]byte("x"), DefaultWindow))
		}
	}()
	_, _ = str.Write(bytes.Repeat([]byte("x"), DefaultWindow))
	srv2.Wait()
	if !c2.Stalled() {
		t.Fatal("the session died, but not stalled")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("the stall was found after %s; want about 300-375 ms", d)
	}
}

// stalledPair is a session over a Conn whose peer never reads its
// socket.
func stalledPair(t *testing.T) (*Conn, muxado.Session) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	peerConn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	_ = peerConn.(*net.TCPConn).SetReadBuffer(16 << 10)
	sc, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	_ = sc.(*net.TCPConn).SetWriteBuffer(16 << 10)
	c := NewConn(sc)
	srv := muxado.Server(c, &muxado.Config{NewFramer: c.Framer(Limits{})})
	t.Cleanup(func() { srv.Close(); peerConn.Close() })
	return c, srv
}
