package batchconn_test

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/internal/batchconn"
)

// tcpPair returns the two ends of a loopback TCP connection.
func tcpPair(t testing.TB) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		done <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server = <-done
	if server == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

func TestWritesArriveInOrder(t *testing.T) {
	for _, tc := range []struct {
		name  string
		sizes []int
	}{
		{"one byte", []int{1}},
		{"header and records", []int{30, 16 << 10, 16 << 10, 16 << 10, 30, 4}},
		{"more than MaxPending in one write", []int{batchconn.MaxPending + 12345}},
		{"many small", func() []int {
			v := make([]int, 5000)
			for i := range v {
				v[i] = 1 + i%97
			}
			return v
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, s := tcpPair(t)
			b := batchconn.New(c)
			var want bytes.Buffer
			got := make(chan []byte, 1)
			go func() {
				all, _ := io.ReadAll(s)
				got <- all
			}()
			for _, n := range tc.sizes {
				p := make([]byte, n)
				rand.Read(p)
				want.Write(p)
				if k, err := b.Write(p); k != n || err != nil {
					t.Fatalf("Write(%d bytes) = %d, %v", n, k, err)
				}
			}
			if err := b.Close(); err != nil { // writes what is queued first
				t.Fatal(err)
			}
			if g := <-got; !bytes.Equal(g, want.Bytes()) {
				t.Fatalf("the peer read %d bytes, not the %d written in order", len(g), want.Len())
			}
		})
	}
}

func TestReadsThroughTheBuffer(t *testing.T) {
	c, s := tcpPair(t)
	b := batchconn.New(s)
	data := make([]byte, 3*batchconn.ReadSize+777)
	rand.Read(data)
	go func() {
		_, _ = c.Write(data)
		c.Close()
	}()
	var got bytes.Buffer
	for _, n := range []int{5, 17, 16 << 10, batchconn.ReadSize, 1, 100000} { // small reads and one past the buffer
		p := make([]byte, n)
		k, err := io.ReadFull(b, p)
		got.Write(p[:k])
		if err != nil {
			t.Fatalf("ReadFull(%d): %v", n, err)
		}
	}
	rest, err := io.ReadAll(b)
	if err != nil {
		t.Fatal(err)
	}
	got.Write(rest)
	if !bytes.Equal(got.Bytes(), data) {
		t.Fatalf("read %d bytes, not the %d sent", got.Len(), len(data))
	}
	if n, err := b.Read(make([]byte, 10)); n != 0 || err != io.EOF {
		t.Fatalf("after the end: Read = %d, %v, want 0, EOF", n, err)
	}
	if n, err := b.Read(nil); n != 0 || err != nil {
		t.Fatalf("Read(nil) = %d, %v, want 0, nil", n, err)
	}
}

func TestWriteErrorComesBack(t *testing.T) {
	c, s := tcpPair(t)
	b := batchconn.New(c)
	s.(*net.TCPConn).SetLinger(0)
	s.Close() // the peer resets: writes fail
	p := make([]byte, 64<<10)
	deadline := time.Now().Add(20 * time.Second)
	var err error
	for err == nil && time.Now().Before(deadline) {
		_, err = b.Write(p)
	}
	if err == nil {
		t.Fatal("writes to a reset peer never failed")
	}
	if _, again := b.Write(p); again == nil {
		t.Fatal("a write after the failure succeeded")
	}
	if err := b.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		t.Logf("Close: %v", err) // the socket's own close: any outcome is fine
	}
	if _, err := b.Write(p); err == nil {
		t.Fatal("a write after Close succeeded")
	}
	if err := b.Close(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("a second Close = %v, want net.ErrClosed", err)
	}
}

func TestCloseWithoutWrites(t *testing.T) {
	c, s := tcpPair(t)
	b := batchconn.New(c)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Fatalf("the peer read %d, %v, want EOF", n, err)
	}
}
