package tunnel_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/tunnel"
	"github.com/prometheus/client_golang/prometheus"
	"golang.ngrok.com/muxado/v2"
	"golang.ngrok.com/muxado/v2/frame"
	"golang.ngrok.com/ngrok"
	"golang.ngrok.com/ngrok/config"
)

// countingListener is a listener of the tunnel server that counts the
// bytes the server reads from each connection it accepts.
type countingListener struct {
	net.Listener
	mu    sync.Mutex
	conns []*countingConn
}

type countingConn struct {
	net.Conn
	read atomic.Int64
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.read.Add(int64(n))
	return n, err
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	cc := &countingConn{Conn: c}
	l.mu.Lock()
	l.conns = append(l.conns, cc)
	l.mu.Unlock()
	return cc, nil
}

// reads returns the bytes the server read from each connection so far.
func (l *countingListener) reads() []int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var n []int64
	for _, c := range l.conns {
		n = append(n, c.read.Load())
	}
	return n
}

// counting serves e's tunnel server on a counting listener too.
func (e *env) counting(t *testing.T) *countingListener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{Listener: ln}
	go e.srv.Serve(cl)
	return cl
}

// refusals returns edgeplane_tunnel_refusals_total{reason}.
func (e *env) refusals(t *testing.T, reason string) float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(e.m)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "edgeplane_tunnel_refusals_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == reason {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// rawHeader is a muxado frame header.
func rawHeader(t frame.Type, flags frame.Flags, stream uint32, length int) []byte {
	h := make([]byte, 8)
	h[0], h[1], h[2] = byte(length>>16), byte(length>>8), byte(length)
	h[3] = byte(t)<<4 | byte(flags)
	binary.BigEndian.PutUint32(h[4:], stream)
	return h
}

// readGoAway reads frames from r until a GOAWAY, and returns its code
// and debug text.
func readGoAway(r io.Reader) (muxado.ErrorCode, string, error) {
	fr := frame.NewFramer(r, nil)
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return 0, "", fmt.Errorf("no GOAWAY before %w", err)
		}
		switch f := f.(type) {
		case *frame.GoAway:
			debug, _ := io.ReadAll(f.Debug())
			return muxado.ErrorCode(f.ErrorCode()), string(debug), nil
		case *frame.Data:
			io.Copy(io.Discard, f.Reader())
		case *frame.Rst:
			return 0, "", fmt.Errorf("the server reset stream %d (code %d) instead of refusing the frame", f.StreamId(), f.ErrorCode())
		}
	}
}

// served checks that an honest SDK agent still connects, binds and
// serves a request.
func served(t *testing.T, e *env) {
	t.Helper()
	_, token := e.token(t)
	sess := e.connect(t, e.addr, token)
	tun, err := sess.Listen(context.Background(), config.LabeledTunnel(config.WithLabel("app", "honest")))
	if err != nil {
		t.Fatal(err)
	}
	go serve(tun)
	if code, body, err := e.get(t, tun.ID(), "/after"); err != nil || code != 200 || !strings.HasPrefix(body, "/after") {
		t.Fatalf("an honest agent afterwards: %d %q %v", code, body, err)
	}
}

// TestFrameTooLongBeforeAuth: four connections that never authenticate
// each announce a 16 MiB DATA frame and go on sending its payload: each
// is told why (GOAWAY, ProtocolError) and closed with the header and
// little more read (the payload is not), and the server allocates far
// less than one such frame; an honest agent is served afterwards.
func TestFrameTooLongBeforeAuth(t *testing.T) {
	e := newEnv(t, tunnel.Options{})
	cl := e.counting(t)
	const announced = 1<<24 - 1
	payload := make([]byte, 1<<20)
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var wg sync.WaitGroup
	var sent atomic.Int64
	for i := range 4 {
		wg.Go(func() {
			tc, err := tls.Dial("tcp", cl.Addr().String(), &tls.Config{RootCAs: e.pool, ServerName: "127.0.0.1"})
			if err != nil {
				t.Error(err)
				return
			}
			defer tc.Close()
			if _, err := tc.Write(rawHeader(frame.TypeData, frame.FlagDataSyn, 3, announced)); err != nil {
				t.Error(err)
				return
			}
			go func() { // the payload, as long as the server takes it
				for n := 0; n < announced; n += len(payload) {
					k, err := tc.Write(payload[:min(len(payload), announced-n)])
					sent.Add(int64(k))
					if err != nil {
						return
					}
				}
			}()
			_ = tc.SetReadDeadline(time.Now().Add(5 * time.Second))
			code, debug, err := readGoAway(tc)
			if err != nil {
				t.Errorf("connection %d: %v", i, err)
				return
			}
			if code != muxado.ProtocolError || !strings.Contains(debug, "DATA frame of 16777215 bytes") || !strings.Contains(debug, "before authentication") {
				t.Errorf("connection %d: GOAWAY %d %q; want ProtocolError saying why", i, code, debug)
			}
			if _, err := io.Copy(io.Discard, tc); err != nil && !errors.Is(err, net.ErrClosed) && !isReset(err) {
				t.Errorf("connection %d: after the GOAWAY: %v; want the connection closed", i, err)
			}
		})
	}
	wg.Wait()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	reads := cl.reads()
	if len(reads) != 4 {
		t.Fatalf("%d connections counted", len(reads))
	}
	for i, n := range reads {
		if n > 64<<10 {
			t.Errorf("connection %d: the server read %d bytes; want the handshake and the header, not the payload", i, n)
		}
	}
	allocated := after.TotalAlloc - before.TotalAlloc
	if allocated > announced {
		t.Errorf("the four connections allocated %d bytes; want less than one frame's %d", allocated, announced)
	}
	t.Logf("bytes the server read per connection (TLS handshake included): %v; the clients wrote %d bytes of payload in all; allocated while they ran: %d KiB (heap in use %d -> %d KiB)",
		reads, sent.Load(), allocated>>10, before.HeapInuse>>10, after.HeapInuse>>10)
	// Counted by the session's accept loop once muxado has closed the
	// session, which may be a moment after the client saw the GOAWAY.
	if _, ok := eventually(2*time.Second, func() bool { return e.refusals(t, "protocol") == 4 }); !ok {
		t.Errorf("refusals{reason=protocol} = %v; want 4", e.refusals(t, "protocol"))
	}
	if _, ok := eventually(2*time.Second, func() bool { return tunnel.Conns(e.srv) == 0 }); !ok {
		t.Errorf("%d connections held after the refusals", tunnel.Conns(e.srv))
	}
	served(t, e)
}

// isReset reports whether err is the connection reset by the server
// (which closed it with unread bytes).
func isReset(err error) bool {
	return strings.Contains(err.Error(), "connection reset") || strings.Contains(err.Error(), "broken pipe")
}

// TestFrameOverWindow: an authenticated agent's DATA frame may be as
// long as the stream's window (256 KiB), and no longer: one byte more
// closes the session with a protocol error, before the frame is read.
func TestFrameOverWindow(t *testing.T) {
	e := newEnv(t, tunnel.Options{})
	_, token := e.token(t)
	a := dialRaw(t, e)
	if r := a.auth(t, token, "", ""); r.Error != "" {
		t.Fatalf("Auth: %+v", r)
	}
	const window = 256 << 10
	// A new stream of a type the server does not take, whose first frame
	// is a whole window: read, and the stream closed.
	whole := append(rawHeader(frame.TypeData, frame.FlagDataSyn, 101, window), 0, 0, 0, 100)
	whole = append(whole, make([]byte, window-4)...)
	if _, err := a.tc.Write(whole); err != nil {
		t.Fatal(err)
	}
	var info struct{ Region string }
	a.rpc(t, 8, struct{}{}, &info) // the session still answers
	if _, err := a.tc.Write(rawHeader(frame.TypeData, 0, 103, window+1)); err != nil {
		t.Fatal(err)
	}
	if !a.closed(2 * time.Second) {
		t.Fatal("the session is open after a frame longer than the window")
	}
	_, remote, debug := a.mux.Wait()
	if code, _ := muxado.GetError(remote); code != muxado.ProtocolError || !strings.Contains(string(debug), "longer than the stream's window, 262144 bytes") {
		t.Errorf("the server's GOAWAY: %v %q; want ProtocolError naming the window", remote, debug)
	}
	if _, ok := eventually(2*time.Second, func() bool { return e.refusals(t, "protocol") == 1 }); !ok {
		t.Errorf("refusals{reason=protocol} = %v; want 1", e.refusals(t, "protocol"))
	}
	served(t, e)
}

// frames is an agent's connection spoken in raw muxado frames: what it
// sends is exactly what the server reads.
type frames struct {
	tc *tls.Conn
	fr frame.Framer
}

func dialFrames(t *testing.T, e *env) *frames {
	t.Helper()
	tc, err := tls.Dial("tcp", e.addr, &tls.Config{RootCAs: e.pool, ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tc.Close() })
	_ = tc.SetDeadline(time.Now().Add(10 * time.Second))
	return &frames{tc: tc, fr: frame.NewFramer(tc, nil)}
}

// open opens stream id of type typ with payload, in one DATA frame.
func (f *frames) open(t *testing.T, id uint32, typ uint32, payload []byte) {
	t.Helper()
	b := rawHeader(frame.TypeData, frame.FlagDataSyn, id, 4+len(payload))
	b = binary.BigEndian.AppendUint32(b, typ)
	if _, err := f.tc.Write(append(b, payload...)); err != nil {
		t.Fatal(err)
	}
}

// read reads frames until the server's FIN on stream id (then it
// returns the stream's bytes and "") or its GOAWAY (then the bytes and
// the GOAWAY's code and text); the connection must then end.
func (f *frames) read(t *testing.T, id uint32) (data []byte, code muxado.ErrorCode, goAway string) {
	t.Helper()
	for {
		fm, err := f.fr.ReadFrame()
		if err != nil {
			t.Fatalf("reading the server's frames: %v", err)
		}
		switch fm := fm.(type) {
		case *frame.Data:
			b, err := io.ReadAll(fm.Reader())
			if err != nil {
				t.Fatal(err)
			}
			if uint32(fm.StreamId()) == id {
				data = append(data, b...)
				if fm.Fin() {
					return data, 0, ""
				}
			}
		case *frame.GoAway:
			debug, _ := io.ReadAll(fm.Debug())
			if _, err := f.fr.ReadFrame(); err == nil {
				t.Error("a frame after the GOAWAY")
			}
			return data, muxado.ErrorCode(fm.ErrorCode()), string(debug)
		}
	}
}

// flood opens f's heartbeat stream (id) with beats beats in its first
// frame and reads the echoes until the server closes the session; it
// returns the echoes, the time from the beats to the close, and the
// server's GOAWAY text.
func (f *frames) flood(t *testing.T, id uint32, beats int) (echoes int, took time.Duration, why string) {
	t.Helper()
	start := time.Now()
	f.open(t, id, 0xFFFFFFFF, bytes.Repeat([]byte{0, 0, 0, 1}, beats))
	data, code, why := f.read(t, id)
	took = time.Since(start)
	if code != muxado.EnhanceYourCalm {
		t.Errorf("the server's GOAWAY: code %d %q; want EnhanceYourCalm", code, why)
	}
	return len(data) / 4, took, why
}

// TestHeartbeatFlood: a heartbeat flood gets HeartbeatsBeforeAuth echoes
// before Auth and HeartbeatBurst after it, and then its session is
// closed, saying why; an honest agent is served afterwards.
// TestBeats (heartbeat_internal_test.go) has the rate over time.
func TestHeartbeatFlood(t *testing.T) {
	e := newEnv(t, tunnel.Options{})
	_, token := e.token(t)
	const beats = 1000

	echoes, took, why := dialFrames(t, e).flood(t, 3, beats)
	t.Logf("%d beats before Auth: %d echoes, the session closed %v after them: %q", beats, echoes, took, why)
	if echoes != tunnel.HeartbeatsBeforeAuth || !strings.Contains(why, "more than 3 before Auth") {
		t.Errorf("before Auth: %d echoes (%q); want %d", echoes, why, tunnel.HeartbeatsBeforeAuth)
	}

	a := dialFrames(t, e)
	auth, err := json.Marshal(map[string]any{"Version": []string{"3", "2"}, "Extra": map[string]any{"Authtoken": token, "ClientType": "test"}})
	if err != nil {
		t.Fatal(err)
	}
	a.open(t, 3, 0, append(auth, '\n'))
	if resp, _, why := a.read(t, 3); !strings.Contains(string(resp), `"ClientId":"ts_`) {
		t.Fatalf("Auth: %q %q", resp, why)
	}
	echoes, took, why = a.flood(t, 5, beats)
	t.Logf("%d beats after Auth: %d echoes, the session closed %v after them: %q", beats, echoes, took, why)
	if most := tunnel.HeartbeatBurst + int(took.Seconds()*tunnel.HeartbeatRate); echoes < tunnel.HeartbeatBurst || echoes > most || !strings.Contains(why, "faster than 5 a second") {
		t.Errorf("after Auth: %d echoes in %v (%q); want from %d to %d", echoes, took, why, tunnel.HeartbeatBurst, most)
	}
	if got := e.refusals(t, "heartbeat"); got != 2 {
		t.Errorf("refusals{reason=heartbeat} = %v; want 2", got)
	}
	served(t, e)
}

// TestLargestAuth: the largest Auth the Service takes (metadata of
// agents.MaxMetadataBytes, each byte escaped by JSON to six) fits the
// frames allowed before Auth: the SDK connects with it and is served.
func TestLargestAuth(t *testing.T) {
	e := newEnv(t, tunnel.Options{})
	_, token := e.token(t)
	metadata := strings.Repeat("<", agents.MaxMetadataBytes) // \u003c in the SDK's JSON
	sess := e.connect(t, e.addr, token, ngrok.WithMetadata(metadata), noReconnect)
	tun, err := sess.Listen(context.Background(), config.LabeledTunnel(config.WithLabel("app", "big")))
	if err != nil {
		t.Fatal(err)
	}
	go serve(tun)
	if code, _, err := e.get(t, tun.ID(), "/"); err != nil || code != 200 {
		t.Fatalf("a request: %d %v", code, err)
	}
	if got := e.refusals(t, "protocol"); got != 0 {
		t.Errorf("refusals{reason=protocol} = %v; want 0", got)
	}
	page, err := e.svc.ListTunnelSessions(e.ctx, e.admin, edgeplane.ListOptions{})
	if err != nil || len(page.Items) != 1 || page.Items[0].Metadata != metadata {
		t.Fatalf("the session's metadata was not kept whole: %v", err)
	}
}

// TestUnauthenticatedBounds: connections that never authenticate are
// bounded per source address and in total, apart from authenticated
// sessions: past either bound a new connection is closed at once and
// counted, an authenticated agent is not held back by them, and once
// they are gone an agent connects again.
func TestUnauthenticatedBounds(t *testing.T) {
	e := newEnv(t, tunnel.Options{MaxUnauthenticatedPerIP: 4, MaxUnauthenticated: 6})
	_, token := e.token(t)
	e.connect(t, e.addr, token, noReconnect) // authenticated: counts toward neither bound
	dialFrom := func(src string) net.Conn {
		t.Helper()
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
		c, err := d.Dial("tcp", e.addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	// held: the server keeps the connection, waiting for its handshake.
	held := func(c net.Conn) bool {
		_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		_, err := c.Read(make([]byte, 1))
		var ne net.Error
		return errors.As(err, &ne) && ne.Timeout()
	}
	var idle []net.Conn
	for i, src := range []string{"127.0.0.1", "127.0.0.1", "127.0.0.1", "127.0.0.1", "127.0.0.2", "127.0.0.2"} {
		c := dialFrom(src)
		if !held(c) {
			t.Fatalf("connection %d from %s closed within both bounds", i, src)
		}
		idle = append(idle, c)
	}
	for _, c := range []struct{ src, bound string }{{"127.0.0.1", "per address"}, {"127.0.0.3", "in total"}} {
		if held(dialFrom(c.src)) {
			t.Errorf("a connection from %s past the bound %s was held", c.src, c.bound)
		}
	}
	if got := e.refusals(t, "too_many_unauthenticated"); got != 2 {
		t.Errorf("too_many_unauthenticated counted %v, want 2", got)
	}
	for _, c := range idle {
		c.Close()
	}
	if _, ok := eventually(2*time.Second, func() bool {
		c := dialFrom("127.0.0.1")
		ok := held(c)
		c.Close()
		return ok
	}); !ok {
		t.Fatal("connections are still refused once the idle ones closed")
	}
	e.connect(t, e.addr, token, noReconnect)
}
