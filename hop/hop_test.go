package hop_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/hop"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"golang.ngrok.com/muxado/v2"
)

// Compile-time check: a Hop is an agents.Dialer.
var _ agents.Dialer = (*hop.Hop)(nil)

func TestForward(t *testing.T) {
	c := newCluster(t)
	a := c.start("nd_a", storeKey, "", nil)
	b := c.start("nd_b", storeKey, "", nil)

	hdr := agents.ConnHeader{ClientAddr: clientHeader.ClientAddr, Proto: "tls", EdgeType: agents.EdgeTLS, PassthroughTLS: true}
	conn, err := b.hop.DialTunnel(t.Context(), "nd_a", "ep_123", hdr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// A's Local serves it, for A: never another hop.
	got := a.local.call(t)
	if want := (dialed{node: "nd_a", tunnel: "ep_123", hdr: hdr}); got != want {
		t.Errorf("A's Local got %+v, want %+v", got, want)
	}
	b.local.noCalls(t)
	if _, err := io.WriteString(conn, "hello"); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := io.ReadFull(conn, buf); err != nil || string(buf) != "hello" {
		t.Fatalf("read %q, %v", buf, err)
	}
	if got := conn.RemoteAddr().String(); got != a.addr {
		t.Errorf("RemoteAddr = %s, want A's hop address %s", got, a.addr)
	}
	if conn.LocalAddr() == nil {
		t.Error("LocalAddr is nil")
	}
	// Deadlines reach the stream.
	conn.SetReadDeadline(time.Now().Add(-time.Second))
	if _, err := conn.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("Read after the deadline: %v, want a deadline error", err)
	}
	conn.SetReadDeadline(time.Time{})
	if b.hop.Node() != "nd_b" {
		t.Errorf("Node() = %q", b.hop.Node())
	}
}

func TestHalfClose(t *testing.T) {
	c := newCluster(t)
	// The agent answers once it read the whole request (its EOF), then
	// closes.
	c.start("nd_a", storeKey, "", func(c net.Conn) {
		req, _ := io.ReadAll(c)
		io.WriteString(c, "pong:"+string(req))
	})
	b := c.start("nd_b", storeKey, "", nil)
	conn, err := b.hop.DialTunnel(t.Context(), "nd_a", "tn_1", clientHeader)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, "ping")
	if err := conn.(interface{ CloseWrite() error }).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(conn)
	if err != nil || string(got) != "pong:ping" {
		t.Fatalf("read %q, %v", got, err)
	}
}

func TestLargeTransfer(t *testing.T) {
	c := newCluster(t)
	a := c.start("nd_a", storeKey, "", nil)
	b := c.start("nd_b", storeKey, "", nil)
	const size = 8 << 20
	data := make([]byte, size)
	rand.Read(data)
	conn, err := b.hop.DialTunnel(t.Context(), "nd_a", "tn_1", clientHeader)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var wg sync.WaitGroup
	var werr error
	wg.Go(func() {
		_, werr = conn.Write(data)
		if werr == nil {
			werr = conn.(interface{ CloseWrite() error }).CloseWrite()
		}
	})
	h := sha256.New()
	n, err := io.Copy(h, conn)
	wg.Wait()
	if err != nil || werr != nil {
		t.Fatalf("read %d bytes, %v; write: %v", n, err, werr)
	}
	if want := sha256.Sum256(data); n != size || !bytes.Equal(h.Sum(nil), want[:]) {
		t.Fatalf("read %d bytes, hash %x; want %d bytes, %x", n, h.Sum(nil), size, want)
	}
	// Both ends counted 8 MiB each way. A counted before its half-close,
	// which B read as EOF.
	for _, m := range []struct {
		n         *node
		peer, dir string
	}{{b, "nd_a", "out"}, {a, "nd_b", "in"}} {
		if got := hop.MetricValue(m.n.m, "bytes", m.peer, m.dir); got != 2*size {
			t.Errorf("%s: bytes{peer=%s,direction=%s} = %v, want %v", m.n.id, m.peer, m.dir, got, 2*size)
		}
		if got := hop.MetricValue(m.n.m, "streams", m.peer, m.dir); got != 1 {
			t.Errorf("%s: streams{peer=%s,direction=%s} = %v, want 1", m.n.id, m.peer, m.dir, got)
		}
	}
}

func TestOwnNodeGoesToLocal(t *testing.T) {
	c := newCluster(t)
	a := c.start("nd_a", storeKey, "", nil)
	b := c.start("nd_b", storeKey, "", nil)
	for _, node := range []string{"nd_b", ""} {
		conn, err := b.hop.DialTunnel(t.Context(), node, "tn_1", clientHeader)
		if err != nil {
			t.Fatalf("DialTunnel(%q): %v", node, err)
		}
		conn.Close()
		if got := b.local.call(t); got.node != "nd_b" || got.tunnel != "tn_1" {
			t.Errorf("DialTunnel(%q): B's Local got %+v", node, got)
		}
	}
	if n := b.resolves.Load(); n != 0 {
		t.Errorf("B resolved %d nodes, want none", n)
	}
	if n := a.ln.accepted.Load(); n != 0 {
		t.Errorf("A accepted %d connections, want none", n)
	}
	a.local.noCalls(t)
}

func TestNoSession(t *testing.T) {
	c := newCluster(t)
	a := c.start("nd_a", storeKey, "", nil)
	b := c.start("nd_b", storeKey, "", nil)
	c.start("nd_c", storeKey, "", nil)
	a.local.errs["tn_gone"] = fmt.Errorf("tunnel tn_gone: %w", agents.ErrNoSession)
	a.local.errs["tn_broken"] = errors.New("secret internal detail")

	_, err := b.hop.DialTunnel(t.Context(), "nd_a", "tn_gone", clientHeader)
	if !errors.Is(err, agents.ErrNoSession) {
		t.Fatalf("DialTunnel: %v, want ErrNoSession", err)
	}
	var re *hop.RefusedError
	if !errors.As(err, &re) || re.Node != "nd_a" || !re.NoSession || !strings.Contains(re.Message, "tn_gone") {
		t.Errorf("DialTunnel: %#v, want a RefusedError of nd_a with NoSession", err)
	}
	// Never twice: A's Local answered for A, and A resolved no node to
	// try elsewhere.
	if got := a.local.call(t); got.node != "nd_a" {
		t.Errorf("A's Local was asked for node %q", got.node)
	}
	if n := a.resolves.Load(); n != 0 {
		t.Errorf("A resolved %d nodes: a forwarded stream went on", n)
	}

	_, err = b.hop.DialTunnel(t.Context(), "nd_a", "tn_broken", clientHeader)
	if err == nil || errors.Is(err, agents.ErrNoSession) || !errors.As(err, &re) || re.NoSession {
		t.Fatalf("DialTunnel: %v, want a RefusedError without NoSession", err)
	}
	if strings.Contains(err.Error(), "secret") {
		t.Errorf("the local error's text crossed the hop: %v", err)
	}
	a.local.call(t)
	if got := hop.MetricValue(b.m, "errors", "refused"); got != 2 {
		t.Errorf("B's errors{reason=refused} = %v, want 2", got)
	}
	if got := hop.MetricValue(a.m, "errors", "local"); got != 2 {
		t.Errorf("A's errors{reason=local} = %v, want 2", got)
	}
	// The connection survived the refusals.
	roundTrip(t, b, "nd_a", "still there")
	if n := a.ln.accepted.Load(); n != 1 {
		t.Errorf("A accepted %d connections, want 1", n)
	}
}

func TestResolve(t *testing.T) {
	c := newCluster(t)
	b := c.start("nd_b", storeKey, "", nil)
	c.setAddr("nd_nowhere", "")
	for _, node := range []string{"nd_unknown", "nd_nowhere"} {
		if _, err := b.hop.DialTunnel(t.Context(), node, "tn_1", clientHeader); !errors.Is(err, agents.ErrNoSession) {
			t.Errorf("DialTunnel(%s): %v, want ErrNoSession", node, err)
		}
	}
	// Without Resolve, only Local.
	h, err := hop.New(hop.Options{Node: "nd_x", Key: storeKey, Local: b.local})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if _, err := h.DialTunnel(t.Context(), "nd_b", "tn_1", clientHeader); !errors.Is(err, agents.ErrNoSession) {
		t.Errorf("DialTunnel without Resolve: %v, want ErrNoSession", err)
	}
}

func TestOneConnectionPerPeer(t *testing.T) {
	c := newCluster(t)
	a := c.start("nd_a", storeKey, "", nil)
	b := c.start("nd_b", storeKey, "", nil)
	// Concurrent streams to a peer not yet connected share one dial.
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() { roundTrip(t, b, "nd_a", fmt.Sprint("stream ", i)) })
	}
	wg.Wait()
	for i := range 20 {
		roundTrip(t, b, "nd_a", fmt.Sprint("again ", i))
	}
	if n := a.ln.accepted.Load(); n != 1 {
		t.Errorf("A accepted %d connections for 70 streams, want 1", n)
	}
	if got := hop.MetricValue(b.m, "streams", "nd_a", "out"); got != 70 {
		t.Errorf("B's streams{nd_a,out} = %v, want 70", got)
	}
	if out, in := b.m.Peers(); out != 1 || in != 0 {
		t.Errorf("B's peers out %d, in %d; want 1, 0", out, in)
	}
	if out, in := a.m.Peers(); out != 0 || in != 1 {
		t.Errorf("A's peers out %d, in %d; want 0, 1", out, in)
	}
	b.stop(t)
	if out, _ := b.m.Peers(); out != 0 {
		t.Errorf("B's peers out %d after Close, want 0", out)
	}
	if _, err := b.hop.DialTunnel(t.Context(), "nd_a", "tn_1", clientHeader); !errors.Is(err, hop.ErrClosed) {
		t.Errorf("DialTunnel after Close: %v, want ErrClosed", err)
	}
	a.stop(t)
	if _, in := a.m.Peers(); in != 0 {
		t.Errorf("A's peers in %d after Close, want 0", in)
	}
}

func TestPeerRestart(t *testing.T) {
	c := newCluster(t)
	a := c.start("nd_a", storeKey, "", nil)
	b := c.start("nd_b", storeKey, "", nil)
	roundTrip(t, b, "nd_a", "before")
	a.stop(t)
	// A restarts at the same address: B's connection to it is dead
	// (noticed or not yet); the next stream dials again.
	a2 := c.start("nd_a", storeKey, a.addr, nil)
	roundTrip(t, b, "nd_a", "after")
	if n := a2.ln.accepted.Load(); n != 1 {
		t.Errorf("the restarted A accepted %d connections, want 1", n)
	}
	a2.stop(t)
	// A is gone: B cannot dial it.
	if _, err := b.hop.DialTunnel(t.Context(), "nd_a", "tn_1", clientHeader); err == nil {
		t.Error("DialTunnel to a stopped node succeeded")
	}
	if got := hop.MetricValue(b.m, "errors", "dial"); got < 1 {
		t.Errorf("B's errors{reason=dial} = %v, want at least 1", got)
	}
}

func TestPeerMoved(t *testing.T) {
	c := newCluster(t)
	a1 := c.start("nd_a", storeKey, "", nil)
	a2 := c.start("nd_a", storeKey, "", nil) // the same node at a new address
	b := c.start("nd_b", storeKey, "", nil)
	c.setAddr("nd_a", a1.addr)
	roundTrip(t, b, "nd_a", "one")
	a1.local.call(t)
	c.setAddr("nd_a", a2.addr)
	roundTrip(t, b, "nd_a", "two")
	a2.local.call(t)
	a1.local.noCalls(t)
	if n1, n2 := a1.ln.accepted.Load(), a2.ln.accepted.Load(); n1 != 1 || n2 != 1 {
		t.Errorf("accepted %d at the old address and %d at the new, want 1 and 1", n1, n2)
	}
}

func TestContext(t *testing.T) {
	c := newCluster(t)
	a := c.start("nd_a", storeKey, "", nil, func(o *hop.Options) { o.DialTimeout = time.Minute })
	b := c.start("nd_b", storeKey, "", nil)
	roundTrip(t, b, "nd_a", "connected")
	a.local.call(t)

	// A deadline: A's Local blocks for a minute, DialTunnel returns at
	// the deadline.
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := b.hop.DialTunnel(ctx, "nd_a", "tn_slow", clientHeader)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("DialTunnel: %v, want DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("DialTunnel returned after %v", d)
	}

	// A cancellation, once A's Local is waiting.
	ctx, cancel = context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, err := b.hop.DialTunnel(ctx, "nd_a", "tn_slow", clientHeader)
		errc <- err
	}()
	<-a.local.calls // the first tn_slow
	<-a.local.calls // this one
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("DialTunnel: %v, want Canceled", err)
	}
	// The connection is still good.
	roundTrip(t, b, "nd_a", "still connected")
}

// rawClient connects to addr over TLS with cert (none when nil) and no
// verification of the server. It returns the TLS connection and the
// socket under it.
func rawClient(t *testing.T, addr string, cert *tls.Certificate) (*tls.Conn, net.Conn) {
	t.Helper()
	cfg := &tls.Config{MinVersion: tls.VersionTLS13, InsecureSkipVerify: true}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	raw, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	c := tls.Client(raw, cfg)
	if err := c.Handshake(); err != nil {
		t.Fatal(err)
	}
	return c, raw
}

func TestRefusesNonNodes(t *testing.T) {
	other, err := hop.Identity(otherKey)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		dial func(t *testing.T, addr string) (conn, raw net.Conn)
	}{
		{"no certificate", func(t *testing.T, addr string) (net.Conn, net.Conn) { return rawClient(t, addr, nil) }},
		{"another key", func(t *testing.T, addr string) (net.Conn, net.Conn) { return rawClient(t, addr, &other) }},
		{"plain bytes", func(t *testing.T, addr string) (net.Conn, net.Conn) {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
			return c, c
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t)
			a := c.start("nd_a", storeKey, "", nil)
			conn, raw := tc.dial(t, a.addr)
			// A muxado stream with a valid header, if TLS let it through.
			req := binary.BigEndian.AppendUint32(nil, 1)
			body := `{"from":"nd_b","tunnel":"tn_1","client_addr":"203.0.113.7:1","proto":"http"}`
			req = binary.BigEndian.AppendUint32(req, uint32(len(body)))
			conn.Write(append(req, body...))
			conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			if n, err := io.Copy(io.Discard, conn); err == nil && n > 0 {
				t.Errorf("read %d bytes from a node that should refuse", n)
			}
			// The node closes the socket once it counted and logged the
			// refusal (its alert may come before).
			raw.SetReadDeadline(time.Now().Add(10 * time.Second))
			if _, err := io.Copy(io.Discard, raw); err != nil && !errors.Is(err, syscall.ECONNRESET) {
				t.Errorf("the node did not close the socket: %v", err)
			}
			if got := hop.MetricValue(a.m, "errors", "auth"); got != 1 {
				t.Errorf("errors{reason=auth} = %v, want 1", got)
			}
			a.local.noCalls(t)
			logs := a.logs.String()
			if !strings.Contains(logs, conn.LocalAddr().String()) {
				t.Errorf("the refusal's log does not name the remote address %s:\n%s", conn.LocalAddr(), logs)
			}
			for _, k := range [][]byte{storeKey, storeKey.Seed(), otherKey, otherKey.Seed()} {
				if strings.Contains(logs, hex.EncodeToString(k)) || strings.Contains(logs, base64.StdEncoding.EncodeToString(k)) {
					t.Errorf("the logs show a key:\n%s", logs)
				}
			}
		})
	}
}

func TestDialsOnlyNodes(t *testing.T) {
	c := newCluster(t)
	x := c.start("nd_x", otherKey, "", nil) // a node of another store
	b := c.start("nd_b", storeKey, "", nil)
	_, err := b.hop.DialTunnel(t.Context(), "nd_x", "tn_1", clientHeader)
	if err == nil {
		t.Fatal("DialTunnel to a node of another store succeeded")
	}
	if got := hop.MetricValue(b.m, "errors", "auth"); got != 1 {
		t.Errorf("B's errors{reason=auth} = %v, want 1", got)
	}
	x.stop(t) // its handshake ended: its count is in
	if got := hop.MetricValue(x.m, "errors", "auth"); got != 1 {
		t.Errorf("X's errors{reason=auth} = %v, want 1", got)
	}
	x.local.noCalls(t)
}

// rawSession opens a muxado session to a node with the node certificate,
// as a peer would, but writes what the test says.
func rawSession(t *testing.T, addr string) muxado.Session {
	t.Helper()
	cert, err := hop.Identity(storeKey)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := rawClient(t, addr, &cert)
	sess := muxado.Client(c, nil)
	t.Cleanup(func() { sess.Close() })
	return sess
}

// readRefusal reads a status and its message from str.
func readRefusal(t *testing.T, str io.Reader) (byte, string) {
	t.Helper()
	var b [3]byte
	if _, err := io.ReadFull(str, b[:1]); err != nil {
		t.Fatalf("reading the status: %v", err)
	}
	if b[0] == 0 {
		return 0, ""
	}
	if _, err := io.ReadFull(str, b[1:]); err != nil {
		t.Fatalf("reading the message's length: %v", err)
	}
	msg := make([]byte, binary.BigEndian.Uint16(b[1:]))
	if _, err := io.ReadFull(str, msg); err != nil {
		t.Fatalf("reading the message: %v", err)
	}
	return b[0], string(msg)
}

func TestRefusesBadHeaders(t *testing.T) {
	c := newCluster(t)
	a := c.start("nd_a", storeKey, "", nil)
	sess := rawSession(t, a.addr)
	valid := `{"from":"nd_b","tunnel":"tn_1","client_addr":"203.0.113.7:1","proto":"http","edge_type":"3"}`
	tests := []struct {
		name   string
		header string
		length int // the length prefix; 0: the header's
		field  string
	}{
		{"over the bound", strings.Repeat(" ", 5000), 0, "header"},
		{"length over the bound", "{}", hop.MaxHeaderBytes + 1, "header"},
		{"not JSON", "{", 0, "header"},
		{"not an object", `["tn_1"]`, 0, "header"},
		{"no tunnel", strings.Replace(valid, `"tn_1"`, `""`, 1), 0, "tunnel"},
		{"long tunnel", strings.Replace(valid, `"tn_1"`, `"`+strings.Repeat("t", hop.MaxTunnelIDBytes+1)+`"`, 1), 0, "tunnel"},
		{"bad client_addr", strings.Replace(valid, `203.0.113.7:1`, `203.0.113.7`, 1), 0, "client_addr"},
		{"long proto", strings.Replace(valid, `"http"`, `"`+strings.Repeat("p", hop.MaxProtoBytes+1)+`"`, 1), 0, "proto"},
		{"no from", strings.Replace(valid, `"nd_b"`, `""`, 1), 0, "from"},
		{"another from", strings.Replace(valid, `"nd_b"`, `"nd_c"`, 1), 0, "from"},
	}
	// The connection's first stream names its node, nd_b.
	str, err := sess.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	str.Write(binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, 1), uint32(len(valid))))
	str.Write([]byte(valid))
	if status, msg := readRefusal(t, str); status != 0 {
		t.Fatalf("a valid header: status %d, %q", status, msg)
	}
	str.Close()
	a.local.call(t)
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			str, err := sess.OpenStream()
			if err != nil {
				t.Fatal(err)
			}
			defer str.Close()
			n := tc.length
			if n == 0 {
				n = len(tc.header)
			}
			b := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, 1), uint32(n))
			str.Write(append(b, tc.header...))
			status, msg := readRefusal(t, str)
			if status != 1 || !strings.Contains(msg, tc.field+": ") {
				t.Errorf("status %d, %q; want a refusal naming %s", status, msg, tc.field)
			}
			if got := hop.MetricValue(a.m, "errors", "bad_header"); got != float64(i+1) {
				t.Errorf("errors{reason=bad_header} = %v, want %d", got, i+1)
			}
			a.local.noCalls(t)
		})
	}
}

func TestHeaderTimeout(t *testing.T) {
	c := newCluster(t)
	a := c.start("nd_a", storeKey, "", nil, func(o *hop.Options) { o.HandshakeTimeout = 200 * time.Millisecond })
	sess := rawSession(t, a.addr)
	// A valid stream first: the handshake is over (it has the same bound).
	valid := `{"from":"nd_b","tunnel":"tn_1","client_addr":"203.0.113.7:1"}`
	str, err := sess.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	str.Write(append(binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, 1), uint32(len(valid))), valid...))
	if status, msg := readRefusal(t, str); status != 0 {
		t.Fatalf("a valid header: status %d, %q", status, msg)
	}
	str.Close()
	a.local.call(t)

	str, err = sess.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	str.Write(binary.BigEndian.AppendUint32(nil, 1)) // the type, and no header
	str.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := io.Copy(io.Discard, str); err != nil || n != 0 {
		t.Errorf("read %d bytes, %v; want the stream closed", n, err)
	}
	if got := hop.MetricValue(a.m, "errors", "bad_header"); got != 1 {
		t.Errorf("errors{reason=bad_header} = %v, want 1", got)
	}
	a.local.noCalls(t)
}

func TestUnknownStreamType(t *testing.T) {
	c := newCluster(t)
	a := c.start("nd_a", storeKey, "", nil)
	sess := rawSession(t, a.addr)
	str, err := sess.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	valid := `{"from":"nd_b","tunnel":"tn_1","client_addr":"203.0.113.7:1"}`
	b := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, 2), uint32(len(valid)))
	str.Write(append(b, valid...))
	str.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, _ := io.Copy(io.Discard, str); n != 0 {
		t.Errorf("read %d bytes from a stream of another type", n)
	}
	a.local.noCalls(t)
}

func TestDialTunnelValidates(t *testing.T) {
	c := newCluster(t)
	a := c.start("nd_a", storeKey, "", nil)
	b := c.start("nd_b", storeKey, "", nil)
	for _, tc := range []struct {
		name, tunnel string
		hdr          agents.ConnHeader
		field        string
	}{
		{"empty tunnel", "", clientHeader, "tunnel"},
		{"long tunnel", strings.Repeat("t", hop.MaxTunnelIDBytes+1), clientHeader, "tunnel"},
		{"no client address", "tn_1", agents.ConnHeader{Proto: "http"}, "client_addr"},
		{"long proto", "tn_1", agents.ConnHeader{ClientAddr: clientHeader.ClientAddr, Proto: strings.Repeat("p", 17)}, "proto"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := b.hop.DialTunnel(t.Context(), "nd_a", tc.tunnel, tc.hdr)
			vs := apierr.ViolationsOf(err)
			if len(vs) != 1 || vs[0].Field != tc.field {
				t.Errorf("DialTunnel: %v; want one violation of %s", err, tc.field)
			}
		})
	}
	if n := a.ln.accepted.Load(); n != 0 {
		t.Errorf("A accepted %d connections for invalid streams", n)
	}
}

func TestNew(t *testing.T) {
	local := newLocal(t, echo)
	valid := hop.Options{Node: "nd_a", Key: storeKey, Local: local}
	bad := storeKey[:ed25519.PrivateKeySize-1]
	mismatched := append([]byte(nil), storeKey...)
	mismatched[40] ^= 1
	tests := []struct {
		name   string
		modify func(*hop.Options)
		fields []string
	}{
		{"valid", func(*hop.Options) {}, nil},
		{"no node", func(o *hop.Options) { o.Node = "" }, []string{"Node"}},
		{"long node", func(o *hop.Options) { o.Node = strings.Repeat("n", hop.MaxNodeIDBytes+1) }, []string{"Node"}},
		{"no key", func(o *hop.Options) { o.Key = nil }, []string{"Key"}},
		{"short key", func(o *hop.Options) { o.Key = bad }, []string{"Key"}},
		{"mismatched key", func(o *hop.Options) { o.Key = mismatched }, []string{"Key"}},
		{"no local", func(o *hop.Options) { o.Local = nil }, []string{"Local"}},
		{"negative timeouts", func(o *hop.Options) {
			o.DialTimeout, o.HandshakeTimeout, o.HeartbeatInterval = -1, -1, -1
		}, []string{"DialTimeout", "HandshakeTimeout", "HeartbeatInterval"}},
		{"everything", func(o *hop.Options) { *o = hop.Options{} }, []string{"Node", "Key", "Local"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := valid
			tc.modify(&o)
			h, err := hop.New(o)
			if tc.fields == nil {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				h.Close()
				return
			}
			var got []string
			for _, v := range apierr.ViolationsOf(err) {
				got = append(got, v.Field)
			}
			if strings.Join(got, ",") != strings.Join(tc.fields, ",") {
				t.Errorf("New: %v; want violations of %v", err, tc.fields)
			}
			if !errors.Is(err, apierr.ErrInvalidArgument) {
				t.Errorf("New: %v is not InvalidArgument", err)
			}
		})
	}
}

func TestCloseBeforeServe(t *testing.T) {
	h, err := hop.New(hop.Options{Node: "nd_a", Key: storeKey, Local: newLocal(t, echo)})
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Serve(ln); !errors.Is(err, hop.ErrClosed) {
		t.Errorf("Serve after Close: %v, want ErrClosed", err)
	}
	if _, err := ln.Accept(); err == nil {
		t.Error("Serve left the listener open")
	}
	if err := h.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
}

func TestServeListenerFails(t *testing.T) {
	h, err := hop.New(hop.Options{Node: "nd_a", Key: storeKey, Local: newLocal(t, echo)})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	failing := &failingListener{Listener: ln}
	if err := h.Serve(failing); err == nil || errors.Is(err, hop.ErrClosed) || !errors.Is(err, errListener) {
		t.Errorf("Serve: %v, want the listener's error", err)
	}
}

var errListener = errors.New("the listener broke")

type failingListener struct{ net.Listener }

func (failingListener) Accept() (net.Conn, error) { return nil, errListener }

func TestMetricsLint(t *testing.T) {
	c := newCluster(t)
	a := c.start("nd_a", storeKey, "", nil)
	b := c.start("nd_b", storeKey, "", nil)
	roundTrip(t, b, "nd_a", "x")
	for _, n := range []*node{a, b} {
		problems, err := testutil.CollectAndLint(n.m)
		if err != nil || len(problems) != 0 {
			t.Errorf("%s: lint: %v %v", n.id, problems, err)
		}
		if got := testutil.CollectAndCount(n.m, "edgeplane_hop_errors_total"); got != 5 {
			t.Errorf("%s: %d error reasons, want 5 (each from 0)", n.id, got)
		}
	}
	var nilMetrics *hop.Metrics
	if out, in := nilMetrics.Peers(); out != 0 || in != 0 {
		t.Error("a nil Metrics measured peers")
	}
}
