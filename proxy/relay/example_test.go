package relay_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/edgeplane/edgeplane/proxy/relay"
)

// A TCP edge: accept a client, dial its backend, and relay until both
// sides are done.
func ExamplePipe() {
	// An upstream that answers what it reads, upper-cased, once the
	// client has half-closed.
	backend, _ := net.Listen("tcp", "127.0.0.1:0")
	defer backend.Close()
	go func() {
		c, _ := backend.Accept()
		req, _ := io.ReadAll(c)
		c.Write(bytes.ToUpper(req))
		c.Close()
	}()

	// The edge.
	edge, _ := net.Listen("tcp", "127.0.0.1:0")
	defer edge.Close()
	stats := make(chan relay.Stats, 1)
	go func() {
		client, _ := edge.Accept()
		upstream, err := net.Dial("tcp", backend.Addr().String())
		if err != nil {
			client.Close()
			return
		}
		s, err := relay.Pipe(context.Background(), client, upstream, relay.Options{IdleTimeout: 5 * time.Minute})
		if err != nil {
			fmt.Println("pipe:", err)
		}
		stats <- s
	}()

	// A client.
	c, _ := net.Dial("tcp", edge.Addr().String())
	c.Write([]byte("hello, edge"))
	c.(*net.TCPConn).CloseWrite()
	reply, _ := io.ReadAll(c)
	fmt.Printf("reply: %s\n", reply)
	s := <-stats
	fmt.Printf("%d bytes up, %d down; the %v ended first\n", s.ClientToUpstream, s.UpstreamToClient, s.First)
	// Output:
	// reply: HELLO, EDGE
	// 11 bytes up, 11 down; the client ended first
}
