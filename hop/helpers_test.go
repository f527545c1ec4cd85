package hop_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/hop"
	"github.com/edgeplane/edgeplane/internal/syncbuf"
)

// The store's node key, and another store's.
var (
	storeKey = ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, ed25519.SeedSize))
	otherKey = ed25519.NewKeyFromSeed(bytes.Repeat([]byte{2}, ed25519.SeedSize))
)

// clientHeader is the header the tests forward.
var clientHeader = agents.ConnHeader{
	ClientAddr: netip.MustParseAddrPort("203.0.113.7:51234"),
	Proto:      "https",
	EdgeType:   agents.EdgeHTTPS,
}

// dialed is one call of a fakeLocal's DialTunnel.
type dialed struct {
	node, tunnel string
	hdr          agents.ConnHeader
}

// fakeLocal is a node's tunnel server: each DialTunnel opens a TCP
// connection on loopback whose other end, the agent, serve handles.
// DialTunnel of a tunnel in errs fails with that error; of "tn_slow"
// blocks until its context ends.
type fakeLocal struct {
	ln    net.Listener
	serve func(net.Conn)
	errs  map[string]error
	calls chan dialed
	wg    sync.WaitGroup
}

func newLocal(t testing.TB, serve func(net.Conn)) *fakeLocal {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &fakeLocal{ln: ln, serve: serve, errs: map[string]error{}, calls: make(chan dialed, 1<<16)}
	l.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			l.wg.Go(func() {
				defer c.Close()
				l.serve(c)
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		l.wg.Wait()
	})
	return l
}

func (l *fakeLocal) DialTunnel(ctx context.Context, node, tunnelID string, h agents.ConnHeader) (net.Conn, error) {
	l.calls <- dialed{node: node, tunnel: tunnelID, hdr: h}
	if err := l.errs[tunnelID]; err != nil {
		return nil, err
	}
	if tunnelID == "tn_slow" {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", l.ln.Addr().String())
}

// call returns the next call of DialTunnel, failing the test when there
// was none.
func (l *fakeLocal) call(t testing.TB) dialed {
	t.Helper()
	select {
	case c := <-l.calls:
		return c
	default:
		t.Fatal("Local.DialTunnel was not called")
		return dialed{}
	}
}

// noCalls fails the test when DialTunnel was called.
func (l *fakeLocal) noCalls(t testing.TB) {
	t.Helper()
	select {
	case c := <-l.calls:
		t.Fatalf("Local.DialTunnel was called: %+v", c)
	default:
	}
}

// echo is an agent that sends back what it reads, then half-closes.
func echo(c net.Conn) {
	io.Copy(c, c)
	c.(*net.TCPConn).CloseWrite()
}

// countingListener counts the connections it accepted.
type countingListener struct {
	net.Listener
	accepted atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
	}
	return c, err
}

// cluster is nodes that find each other's address in one map, as the
// store's node records.
type cluster struct {
	t     testing.TB
	mu    sync.Mutex
	addrs map[string]string
}

func newCluster(t testing.TB) *cluster {
	return &cluster{t: t, addrs: map[string]string{}}
}

func (c *cluster) setAddr(node, addr string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.addrs[node] = addr
}

// node is one edge node of a cluster.
type node struct {
	id       string
	hop      *hop.Hop
	local    *fakeLocal
	m        *hop.Metrics
	ln       *countingListener
	addr     string
	logs     *syncbuf.Buffer
	resolves atomic.Int64 // calls of its Resolve
	served   chan error   // Serve's result
}

// start starts node id with key, listening on addr ("" for any port of
// 127.0.0.1), its agents served by serve (nil: echo).
func (c *cluster) start(id string, key ed25519.PrivateKey, addr string, serve func(net.Conn), opts ...func(*hop.Options)) *node {
	t := c.t
	t.Helper()
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	if serve == nil {
		serve = echo
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	n := &node{id: id, local: newLocal(t, serve), m: hop.NewMetrics(), ln: &countingListener{Listener: ln},
		addr: ln.Addr().String(), logs: &syncbuf.Buffer{}, served: make(chan error, 1)}
	o := hop.Options{
		Node: id, Key: key, Local: n.local, Metrics: n.m,
		Logger: slog.New(slog.NewTextHandler(n.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Resolve: func(ctx context.Context, node string) (string, error) {
			n.resolves.Add(1)
			c.mu.Lock()
			defer c.mu.Unlock()
			if a, ok := c.addrs[node]; ok {
				return a, nil
			}
			return "", errors.New("no such node")
		},
	}
	for _, f := range opts {
		f(&o)
	}
	h, err := hop.New(o)
	if err != nil {
		t.Fatal(err)
	}
	n.hop = h
	go func() { n.served <- h.Serve(n.ln) }()
	c.setAddr(id, n.addr)
	t.Cleanup(func() { n.stop(t) })
	return n
}

// stop closes the node's Hop and checks that Serve returned ErrClosed.
func (n *node) stop(t testing.TB) {
	t.Helper()
	if err := n.hop.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := <-n.served; !errors.Is(err, hop.ErrClosed) {
		t.Errorf("Serve returned %v, want ErrClosed", err)
	}
	n.served <- hop.ErrClosed // for a second stop
}

// roundTrip sends msg through n to tunnel tn_1 of node to, half-closes,
// and checks that the echo agent sent it back.
func roundTrip(t testing.TB, n *node, to, msg string) {
	t.Helper()
	c, err := n.hop.DialTunnel(context.Background(), to, "tn_1", clientHeader)
	if err != nil {
		t.Fatalf("DialTunnel(%s): %v", to, err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, msg); err != nil {
		t.Fatal(err)
	}
	if err := c.(interface{ CloseWrite() error }).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(c)
	if err != nil || string(got) != msg {
		t.Fatalf("read %q, %v; want %q", got, err, msg)
	}
}
