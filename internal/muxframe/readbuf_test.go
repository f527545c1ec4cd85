package muxframe

import (
	"bytes"
	"crypto/rand"
	"io"
	"net"
	"testing"
)

// TestConnReadBulk reads a bulk transfer through Conn.Read with the
// room sizes TLS gives it, then a short message: every byte arrives in
// order, the bulk reads go through the pooled buffer, and the buffer is
// released once a short read is drained (an idle session holds none).
func TestConnReadBulk(t *testing.T) {
	a, b := net.Pipe() // each read returns what one write gave: like a socket's segments
	defer a.Close()
	c := NewConn(b)
	defer c.Close()
	bulk := make([]byte, 5*readSize+3)
	rand.Read(bulk)
	short := []byte("the tail")
	go func() {
		for p := bulk; len(p) > 0; {
			n := min(len(p), 2*readSize)
			_, _ = a.Write(p[:n])
			p = p[n:]
		}
		_, _ = a.Write(short)
	}()
	var got bytes.Buffer
	usedBuffer := false
	rooms := []int{5, 512, 16 << 10, 16<<10 + 29, 3}
	for i := 0; got.Len() < len(bulk); i++ {
		p := make([]byte, rooms[i%len(rooms)])
		n, err := c.Read(p)
		if err != nil {
			t.Fatal(err)
		}
		got.Write(p[:n])
		usedBuffer = usedBuffer || c.rbuf != nil
	}
	if !bytes.Equal(got.Bytes()[:len(bulk)], bulk) {
		t.Fatal("the bulk bytes arrived changed")
	}
	if !usedBuffer {
		t.Fatal("no bulk read used the pooled buffer")
	}
	rest := got.Bytes()[len(bulk):]
	for len(rest) < len(short) {
		p := make([]byte, 16<<10)
		n, err := c.Read(p)
		if err != nil {
			t.Fatal(err)
		}
		rest = append(rest, p[:n]...)
	}
	if !bytes.Equal(rest, short) {
		t.Fatalf("the short message read %q, want %q", rest, short)
	}
	if c.rbuf != nil {
		t.Fatal("the read buffer is still held after a short read was drained")
	}
	a.Close()
	if n, err := c.Read(make([]byte, 10)); n != 0 || err != io.EOF {
		t.Fatalf("after the peer closed: Read = %d, %v, want 0, EOF", n, err)
	}
	if n, err := c.Read(nil); n != 0 || err != nil {
		t.Fatalf("Read(nil) = %d, %v", n, err)
	}
}
