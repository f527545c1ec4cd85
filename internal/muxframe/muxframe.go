// Package muxframe writes the frames of a muxado session
// (golang.ngrok.com/muxado/v2) over TLS with one system call each, lets
// the session's owner stop its writer from touching frames once the
// session is dying, refuses a frame longer than its type may be before
// reading its payload, bounds the writer's wait on a peer that stopped
// reading, and gives streams writes and closes that never wait on the
// peer longer than their caller allows, and a reset.
//
// # One write per frame
//
// muxado's framer writes a frame as two writes, its 8-byte header and
// its payload; crypto/tls makes each write one or more TLS records
// (16 KiB at most) and writes each record to the socket apart: a 32 KiB
// frame was four system calls. Here a frame is gathered in a pooled
// buffer and written to the TLS connection at once, and the records TLS
// makes of it are gathered below TLS ([Conn]) and written to the socket
// in one system call.
//
// # Stopping the writer
//
// muxado (v2.0.2) answers a stream's write with "session closed" as
// soon as the session starts dying, while its writer goroutine may still
// be reading that write's frame (its header, and the caller's bytes): a
// caller that then reuses its buffer, or writes again on the stream
// (which repacks the stream's one frame), races with the writer. After
// [Conn.Stop] returns, the framer reads no frame again: the frame being
// written when it was called is finished first, and every later one is
// refused with [ErrStopped] without being read. A session's owner calls
// Stop before it closes the session, and a [Stream]'s write calls it
// when it fails because the session died ([Dead]), before it returns
// the error. A write that times out in muxado's queue leaves the
// session alone: its stream is reset, and the framer drops the stream's
// frames (see [Stream]).
//
// # Stalled peers and abandoned streams
//
// muxado has one writer goroutine per session, which writes every
// stream's frames in turn: a peer that stops reading its socket stops
// them all once the socket's buffers are full, and muxado's writes wait
// for it without end. [Conn.SetWriteTimeout] bounds each write to the
// socket: one during which the socket takes no byte for the timeout
// fails, the session dies, and [Conn.Stalled] says why. The streams of a
// Conn ([Conn.Wrap], [Stream]) count the peer's window themselves, so
// that no write waits inside muxado for a window; a write waits for the
// window or the writer no longer than its deadline, a close never waits,
// and [Stream.Reset] tells the peer with an RST (muxado has no reset of
// its own: the framer writes it, in place of the stream's FIN, after
// every frame of the stream muxado had queued).
//
// # Bounded frames
//
// muxado (v2.0.2) trusts a frame's announced length (up to 16 MiB): it
// reads a whole DATA frame into the stream's buffer before it compares
// it with the stream's window, and up to 1 MiB of a GOAWAY's debug text
// into memory. The framers of a [Conn] ([Conn.Framer]) read each frame's
// 8-byte header first and refuse a frame longer than its type may be
// before any of its payload is read:
//
//   - DATA, and a frame of a type muxado does not know (which it skips):
//     at most the stream's window ([Limits.Window], 256 KiB by default);
//     until [Conn.Authenticate], at most [Limits.Unauthenticated] each
//     and [Limits.UnauthenticatedTotal] in all;
//   - RST and WNDINC: 4 bytes, their one field;
//   - GOAWAY: its 8 bytes of fields and at most [MaxGoAwayDebug] bytes of
//     debug text.
//
// The framer then writes a GOAWAY with muxado's ProtocolError and what
// was refused in words (after the frame being written, if any, which is
// given a quarter of a second: a writer stuck on a peer that reads
// nothing fails then), stops the writer as [Conn.Stop] does, and returns
// a [*FrameError]: muxado ends the session, and its owner finds why in
// [Conn.Refused]. [Conn.GoAway] ends a session the same way for a reason
// of its owner's. A [Flusher]'s framer reads frames as muxado's does,
// unbounded.
package muxframe

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.ngrok.com/muxado/v2"
	"golang.ngrok.com/muxado/v2/frame"
)

// maxPooledFrame bounds the buffers kept for reuse: a frame's payload is
// at most a stream's window (256 KiB), which append may round up to
// twice; larger buffers are dropped.
const maxPooledFrame = 512 << 10

var framePool = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

// ErrStopped is the error of a frame written after [Conn.Stop].
var ErrStopped = errors.New("muxframe: the session's writer is stopped")

// Conn is a muxado session's socket, under its TLS. Between the hold
// and the flush of one frame's write, the records TLS writes are
// gathered and written at once; other writes (the handshake, alerts) go
// through as they come. It is the home of the session's framer
// ([Conn.NewFramer]) and of its stop.
type Conn struct {
	net.Conn
	mu      sync.Mutex
	holding bool
	buf     []byte

	wmu     sync.Mutex // held while the framer reads and writes a frame
	stopped bool       // under wmu

	authed  atomic.Bool                // Authenticate was called
	refused atomic.Pointer[FrameError] // the frame a framer refused
	fr      atomic.Pointer[framer]     // the framer Framer made, for GoAway

	// The bound of a write to the socket (see SetWriteTimeout).
	writeTimeout atomic.Int64 // nanoseconds; 0: none
	stalled      atomic.Bool  // a write made no progress for writeTimeout
	until        time.Time    // under wmu: the deadline of the GOAWAY being written, else zero
	wdl          time.Time    // the socket's write deadline writeOut set last (under mu)
	goingAway    atomic.Bool  // goAway set the socket's deadline: the frame being written fails at it

	// The streams (see stream.go).
	window  int // the streams' send window when they open: the session's muxado.Config.MaxWindowSize
	smu     sync.Mutex
	streams map[frame.StreamId]*Stream // wrapped and not finished, for the frames that concern them
	dead    bool                       // under smu: the session died (or its writer stopped)
	deadc   chan struct{}              // closed when dead is set
	doubts  map[*Stream]uint64         // under smu: streams with a frame in doubt, by the epoch of the doubt
	ndoubts atomic.Int32               // len(doubts)
	epoch   atomic.Uint64              // counts the doubts (see Stream.failed)

	cmu    sync.Mutex                 // held by a framer while it copies a frame into its buffer, and by a reset
	resets map[frame.StreamId]*Stream // under cmu: streams being reset

	// The read side (see Read), used by TLS's reader alone.
	rbuf       *[]byte // the pooled read buffer, nil when not bulk
	rpos, rend int     // its unread bytes: rbuf[rpos:rend]
	rbulk      bool    // the last read was bulk: read into rbuf again
	rerr       error   // the error of the read that filled rbuf
}

// NewConn returns c wrapped.
func NewConn(c net.Conn) *Conn {
	return &Conn{Conn: c, window: DefaultWindow, streams: map[frame.StreamId]*Stream{}, deadc: make(chan struct{}),
		doubts: map[*Stream]uint64{}, resets: map[frame.StreamId]*Stream{}}
}

// SetWriteTimeout bounds each write of frames to the socket: a write
// during which the socket takes no byte for d fails (the socket's write
// deadline, set again each time it takes some), and with it the
// session, whose writer could go no further; [Conn.Stalled] then
// reports it. d 0 (the default) means no bound. It may be called at any
// time, and applies from the next write on.
func (c *Conn) SetWriteTimeout(d time.Duration) { c.writeTimeout.Store(int64(max(d, 0))) }

// Stalled reports whether a write of frames failed because the socket
// took no byte for the write timeout ([Conn.SetWriteTimeout]): the peer
// stopped reading.
func (c *Conn) Stalled() bool { return c.stalled.Load() }

// NewFramer is the muxado.Config.NewFramer of the session whose TLS
// connection w runs over c: each frame is one write to w, and one write
// to the socket. It reads frames bounded by the zero [Limits]: a peer
// trusted from the start, with muxado's default window.
func (c *Conn) NewFramer(r io.Reader, w io.Writer) frame.Framer {
	return c.Framer(Limits{})(r, w)
}

// Framer returns the muxado.Config.NewFramer of the session whose TLS
// connection runs over c, which writes frames as [Conn.NewFramer] does
// and reads frames bounded by l (see [Limits]). l.Window must be the
// session's muxado.Config.MaxWindowSize.
func (c *Conn) Framer(l Limits) func(r io.Reader, w io.Writer) frame.Framer {
	l = l.withDefaults()
	c.window = l.Window
	return func(r io.Reader, w io.Writer) frame.Framer {
		g := &gather{}
		f := &framer{g: g, w: w, raw: c, lim: l, in: headerReader{r: r}, authed: l.Unauthenticated == 0}
		f.Framer = frame.NewFramer(&f.in, g)
		c.fr.Store(f)
		return f
	}
}

// Authenticate tells c's framer that the peer authenticated: from then
// on only [Limits.Window] bounds its DATA frames. A session's owner
// calls it before it answers the request that authenticated the peer.
func (c *Conn) Authenticate() { c.authed.Store(true) }

// Refused returns the error of the frame c's framer refused (a
// [*FrameError]), or nil if it refused none.
func (c *Conn) Refused() error {
	if e := c.refused.Load(); e != nil {
		return e
	}
	return nil
}

// Stop ends the framer's reads of frames: it waits for the frame being
// written, if any, and from then on refuses every frame unread. The
// session's streams then fail their writes as muxado does.
func (c *Conn) Stop() {
	c.wmu.Lock()
	c.stopped = true
	c.wmu.Unlock()
	c.die()
}

// Dead reports whether err, a muxado stream's or session's, says that
// the session died (closed by either end, or its transport failed): the
// write that returned it may still be read by the writer until
// [Conn.Stop].
func Dead(err error) bool {
	if err == nil {
		return false
	}
	code, _ := muxado.GetError(err)
	switch code {
	case muxado.SessionClosed, muxado.PeerEOF, muxado.RemoteGoneAway:
		return true
	}
	return false
}

type framer struct {
	frame.Framer // reads from in, writes into g
	g            *gather
	w            io.Writer // the TLS connection
	raw          *Conn     // the socket under it

	// Used by the session's reader goroutine alone (lastSyn is read by
	// goAway too):
	in       headerReader  // the transport, with the frame's header put back in front
	lim      Limits        // with defaults
	authed   bool          // raw.authed, once it is set
	unauthed int           // the DATA payload announced before authentication
	lastSyn  atomic.Uint32 // the last stream the peer opened (read by goAway)
}

// WriteFrame writes f to the TLS connection in one write, and its
// records to the socket in one write. Only the session's writer
// goroutine calls it.
func (f *framer) WriteFrame(fr frame.Frame) error {
	f.raw.wmu.Lock()
	defer f.raw.wmu.Unlock()
	if f.raw.stopped {
		return ErrStopped
	}
	return f.writeLocked(fr)
}

// writeLocked writes fr as WriteFrame does; the caller holds raw.wmu.
func (f *framer) writeLocked(fr frame.Frame) error {
	bp := framePool.Get().(*[]byte)
	f.g.buf = (*bp)[:0]
	err := f.raw.gather(f.Framer, fr)
	if err == nil && len(f.g.buf) > 0 {
		f.raw.hold()
		_, err = f.w.Write(f.g.buf)
		if ferr := f.raw.flush(); err == nil {
			err = ferr
		}
	}
	if cap(f.g.buf) <= maxPooledFrame {
		*bp = f.g.buf[:0]
		framePool.Put(bp)
	}
	f.g.buf = nil
	return err
}

// gather is the writer the inner framer writes a frame into.
type gather struct{ buf []byte }

func (g *gather) Write(p []byte) (int, error) {
	g.buf = append(g.buf, p...)
	return len(p), nil
}

func (c *Conn) hold() {
	c.mu.Lock()
	c.holding = true
	c.mu.Unlock()
}

// Write writes p to the socket, or gathers it while a frame is written.
func (c *Conn) Write(p []byte) (int, error) {
	c.mu.Lock()
	if c.holding {
		if c.buf == nil {
			c.buf = (*framePool.Get().(*[]byte))[:0]
		}
		c.buf = append(c.buf, p...)
		c.mu.Unlock()
		return len(p), nil
	}
	c.mu.Unlock()
	return c.Conn.Write(p)
}

// flush writes what was gathered since hold, and stops gathering.
func (c *Conn) flush() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.holding = false
	if len(c.buf) == 0 {
		return nil
	}
	err := c.writeOut(c.buf)
	if cap(c.buf) <= maxPooledFrame {
		b := c.buf[:0]
		framePool.Put(&b)
	}
	c.buf = nil
	return err
}

// writeOut writes b to the socket, bounded by the write timeout d: the
// socket's write deadline is an eighth of d ahead, and moved on while
// the socket takes some of b; once it has taken nothing for d (found
// between d and 5/4 d), the write fails (the session stalled). A GOAWAY
// being written keeps its own deadline (until).
func (c *Conn) writeOut(b []byte) error {
	d := time.Duration(c.writeTimeout.Load())
	if d <= 0 || !c.until.IsZero() {
		_, err := c.Conn.Write(b)
		return err
	}
	step := max(d/8, time.Millisecond)
	took := time.Now() // when the socket last took some of b
	for {
		// The deadline set for an earlier write serves while it is at
		// least half a step ahead (a write that times out sooner only
		// goes round again): most frames set none.
		if now := time.Now(); c.wdl.Sub(now) < step/2 {
			c.wdl = now.Add(step)
			_ = c.Conn.SetWriteDeadline(c.wdl)
		}
		n, err := c.Conn.Write(b)
		if err == nil || !errors.Is(err, os.ErrDeadlineExceeded) || c.goingAway.Load() {
			return err // a GOAWAY's deadline (see goAway) is not moved on
		}
		c.wdl = time.Time{}
		b = b[n:]
		if now := time.Now(); n > 0 {
			took = now
		} else if now.Sub(took) >= d {
			c.stalled.Store(true)
			return fmt.Errorf("muxframe: the peer read nothing for %s: %w", d, err)
		}
	}
}

// maxPending bounds the bytes a [Flusher] holds for its next write: a
// frame that finds this much pending waits, and so does the session's
// writer.
const maxPending = 1 << 20

// Flusher writes a session's frames to its TLS connection from a
// goroutine of its own ([Flusher.Run]), in groups: the session's writer
// copies each frame into the pending bytes and goes on, and frames that
// come while a write is in progress share the next one (a group commit
// of frames). It suits a connection that carries many streams at once
// (between edge nodes); [Conn.NewFramer] writes each frame as it comes.
type Flusher struct {
	tc       io.WriteCloser // the TLS connection
	raw      *Conn          // the socket under it
	kick     chan struct{}  // a frame is pending (capacity 1)
	done     chan struct{}  // closed by Stop
	stopOnce sync.Once

	mu      sync.Mutex
	room    sync.Cond // signalled when a write took what was pending, or failed
	pending []byte
	err     error // the first write's error: later frames fail with it
}

// NewFlusher returns the Flusher of the session whose TLS connection tc
// runs over c. The caller runs [Flusher.Run] and, once the session
// ended, [Flusher.Stop].
func (c *Conn) NewFlusher(tc io.WriteCloser) *Flusher {
	f := &Flusher{tc: tc, raw: c, kick: make(chan struct{}, 1), done: make(chan struct{})}
	f.room.L = &f.mu
	return f
}

// NewFramer is the muxado.Config.NewFramer whose frames f writes.
func (f *Flusher) NewFramer(r io.Reader, _ io.Writer) frame.Framer {
	g := &gather{}
	return &queueFramer{Framer: frame.NewFramer(r, g), g: g, f: f}
}

// add queues a frame's bytes (copied). It blocks while maxPending bytes
// wait, and fails once a write failed or the flusher stopped.
func (f *Flusher) add(b []byte) error {
	f.mu.Lock()
	for len(f.pending) >= maxPending && f.err == nil {
		f.room.Wait()
	}
	if err := f.err; err != nil {
		f.mu.Unlock()
		return err
	}
	f.pending = append(f.pending, b...)
	f.mu.Unlock()
	select {
	case f.kick <- struct{}{}:
	default: // a kick is pending: the flusher will take these bytes too
	}
	return nil
}

// Run writes what is pending until Stop, or a write fails (it then
// closes the TLS connection: the session's reader ends the session).
func (f *Flusher) Run() {
	var buf []byte // the other buffer: pending and buf alternate
	for {
		select {
		case <-f.kick:
		case <-f.done:
			return
		}
		f.mu.Lock()
		buf, f.pending = f.pending, buf[:0]
		f.room.Broadcast()
		f.mu.Unlock()
		if len(buf) == 0 {
			continue
		}
		f.raw.hold()
		_, err := f.tc.Write(buf)
		if ferr := f.raw.flush(); err == nil {
			err = ferr
		}
		if err != nil {
			f.fail(err)
			f.tc.Close()
			return
		}
		if cap(buf) > maxPending {
			buf = nil // a burst's buffer is not kept
		}
	}
}

// fail records err: every later frame fails with it.
func (f *Flusher) fail(err error) {
	f.mu.Lock()
	if f.err == nil {
		f.err = err
	}
	f.room.Broadcast()
	f.mu.Unlock()
}

// Stop ends Run: the session ended. Later frames fail.
func (f *Flusher) Stop() {
	f.stopOnce.Do(func() {
		close(f.done)
		f.fail(net.ErrClosed)
	})
}

// queueFramer reads frames as muxado's framer does, and hands each frame
// it writes to the Flusher in one piece.
type queueFramer struct {
	frame.Framer // reads from the transport, writes into g
	g            *gather
	f            *Flusher
}

// WriteFrame copies fr to the flusher's pending bytes, unless the
// session's writer was stopped ([Conn.Stop]). Only the session's writer
// goroutine calls it. g's buffer is kept: a frame is at most a stream's
// window (256 KiB) and its header.
func (q *queueFramer) WriteFrame(fr frame.Frame) error {
	q.f.raw.wmu.Lock()
	defer q.f.raw.wmu.Unlock()
	if q.f.raw.stopped {
		return ErrStopped
	}
	q.g.buf = q.g.buf[:0]
	if err := q.f.raw.gather(q.Framer, fr); err != nil || len(q.g.buf) == 0 {
		return err
	}
	return q.f.add(q.g.buf)
}

// ReadFrame reads a frame as muxado's framer does, and tells the
// session's streams of their window updates and resets.
func (q *queueFramer) ReadFrame() (frame.Frame, error) {
	fr, err := q.Framer.ReadFrame()
	if err != nil {
		q.f.raw.die()
		return nil, err
	}
	q.f.raw.observe(fr)
	return fr, nil
}

// readSize is the buffer a bulk read of the socket fills: several TLS
// records, where crypto/tls reads about one (its record buffer's room).
const readSize = 64 << 10

var readPool = sync.Pool{New: func() any { b := make([]byte, readSize); return &b }}

// Read reads the socket for TLS (its reader goroutine alone). While the
// bytes come in bulk (a read filled all the room TLS gave it) they are
// read readSize at a time into a pooled buffer, a system call for
// several records; once a read brings less than a quarter of that (the
// bulk ended), the buffer goes back to the pool when drained. An idle
// session holds none, unless its last read was bulk.
func (c *Conn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if c.rbuf == nil {
		n, err := c.Conn.Read(p)
		if n == len(p) && len(p) < readSize {
			c.rbuf, c.rbulk = readPool.Get().(*[]byte), true
		}
		return n, err
	}
	if c.rpos == c.rend {
		if !c.rbulk {
			readPool.Put(c.rbuf)
			c.rbuf = nil
			return c.Read(p)
		}
		n, err := c.Conn.Read(*c.rbuf)
		c.rpos, c.rend, c.rbulk = 0, n, n >= readSize/4
		if n == 0 {
			readPool.Put(c.rbuf)
			c.rbuf = nil
			return 0, err
		}
		c.rerr = err // returned once the bytes are read
	}
	n := copy(p, (*c.rbuf)[c.rpos:c.rend])
	c.rpos += n
	if c.rpos == c.rend {
		err := c.rerr
		c.rerr = nil
		if !c.rbulk {
			readPool.Put(c.rbuf)
			c.rbuf = nil
		}
		return n, err
	}
	return n, nil
}
