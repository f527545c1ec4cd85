package muxframe

import (
	"bytes"
	"errors"
	"io"
	"net"
	"testing"

	"golang.ngrok.com/muxado/v2"
	"golang.ngrok.com/muxado/v2/frame"
)

// TestFrameIsOneWrite: a frame (header and payload) reaches the socket
// in one write, and reads back as the frame written.
func TestFrameIsOneWrite(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	c := NewConn(a)
	f := c.NewFramer(a, c)
	payload := bytes.Repeat([]byte("x"), 10_000)
	var d frame.Data
	if err := d.Pack(1, payload, false, true); err != nil {
		t.Fatal(err)
	}
	reads := make(chan int, 4)
	go func() {
		buf := make([]byte, 64<<10)
		n, _ := b.Read(buf) // net.Pipe: one Read per Write, up to its size
		reads <- n
	}()
	if err := f.WriteFrame(&d); err != nil {
		t.Fatal(err)
	}
	if n := <-reads; n != 8+len(payload) {
		t.Errorf("the first read got %d bytes; want the whole frame, %d", n, 8+len(payload))
	}
}

// TestStop: after Stop, a frame is refused unread.
func TestStop(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	go io.Copy(io.Discard, b)
	c := NewConn(a)
	f := c.NewFramer(a, c)
	var d frame.Data
	if err := d.Pack(1, []byte("before"), false, true); err != nil {
		t.Fatal(err)
	}
	if err := f.WriteFrame(&d); err != nil {
		t.Fatalf("before Stop: %v", err)
	}
	c.Stop()
	if err := f.WriteFrame(&d); !errors.Is(err, ErrStopped) {
		t.Errorf("after Stop: %v; want ErrStopped", err)
	}
}

// TestDead: the errors of a dying session are told from a stream's own.
func TestDead(t *testing.T) {
	a, b := net.Pipe()
	srv := muxado.Server(a, nil)
	cli := muxado.Client(b, nil)
	str, err := cli.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	if Dead(nil) || Dead(io.EOF) || Dead(errors.New("x")) {
		t.Error("an error that is not muxado's says the session died")
	}
	cli.Close()
	srv.Close()
	_, err = str.Write([]byte("after the session closed"))
	if err == nil || !Dead(err) {
		t.Errorf("a write on a closed session: %v; want an error Dead recognizes", err)
	}
}
