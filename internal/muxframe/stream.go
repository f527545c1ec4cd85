package muxframe

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"golang.ngrok.com/muxado/v2"
	"golang.ngrok.com/muxado/v2/frame"
)

// aLongTimeAgo is a deadline in the past: a read waiting ends at once.
var aLongTimeAgo = time.Unix(1, 0)

// Stream is a muxado stream of a [Conn]'s session ([Conn.Wrap]) whose
// writes and closes never wait on the peer longer than their caller
// allows. muxado (v2.0.2) gives a stream no way to abandon a write: a
// write waiting for the peer's window ignores its deadline, a close
// writes its FIN without one, and there is no reset at all. So:
//
//   - Window: a Stream counts the peer's window as muxado does (the
//     session's window, less the bytes written, plus the peer's window
//     updates, which the Conn's framer reads) and hands muxado no more
//     than it has, so muxado never waits for it; the Stream waits
//     instead, until the window grows, the write deadline passes
//     (os.ErrDeadlineExceeded; the stream stays usable, as a net.Conn's
//     does) or the stream is closed.
//   - Deadlines: a write waiting for the session's writer (a busy or
//     stalled socket) fails at its deadline, muxado's WriteTimeout; the
//     frame may still be in muxado's queue, pointing at the caller's
//     bytes, so the stream is then reset (below) and the framer drops
//     that frame when it comes to it: once the write returns, its bytes
//     are never read again. The write returns os.ErrDeadlineExceeded.
//   - Close returns at once: reads in progress end (io.EOF, as muxado's
//     Close has them), writes fail with net.ErrClosed, and the FIN is
//     written by a goroutine of the stream's once the write in progress,
//     if any, has returned.
//   - [Stream.Reset] closes as Close does, and the peer is told with an
//     RST frame instead of a FIN, after every frame of the stream muxado
//     had queued: the framer drops the stream's later DATA frames and
//     writes the RST in place of its FIN. A peer waiting for its window
//     on the stream learns that nobody reads it.
//
// A write that fails because the session died ([Dead]) stops the
// session's writer ([Conn.Stop]) before it returns, for the same reason.
// A Stream's writes are serialized (muxado serializes them too).
type Stream struct {
	muxado.Stream
	raw *Conn
	id  frame.StreamId

	mu          sync.Mutex // held by a write, a half-close, and the close that ends the stream in muxado (finish)
	muxDeadline time.Time  // the write deadline muxado has (under mu)

	fmu      sync.Mutex
	window   int           // the bytes the peer's window takes now, as muxado counts them
	deadline time.Time     // the write deadline
	ended    bool          // Close or Reset was called
	reset    bool          // by Reset (or a write's timeout)
	through  bool          // the peer reset the stream or the session died: muxado fails the writes
	wake     chan struct{} // (capacity 1) the window grew, the deadline moved or the stream ended

	once    sync.Once     // finish runs once
	settled chan struct{} // made by failed (under raw.smu): closed once the frame in doubt is out of muxado's queue

	// Under raw.cmu:
	resetting bool             // the framer drops its DATA frames and turns its FIN into an RST
	rstSent   bool             // the RST was written
	code      muxado.ErrorCode // the RST's error code
}

// Wrap returns str, a stream of the session whose socket is c, before
// anything was written on it (a stream the session opened, or one it
// accepted): its window is the session's ([Limits.Window]).
func (c *Conn) Wrap(str muxado.Stream) *Stream {
	s := &Stream{Stream: str, raw: c, id: frame.StreamId(str.Id()), window: c.window, wake: make(chan struct{}, 1)}
	c.smu.Lock()
	s.through = c.dead
	c.streams[s.id] = s
	c.smu.Unlock()
	return s
}

// Write writes p on the stream, in pieces the peer's window takes.
func (s *Stream) Write(p []byte) (int, error) {
	if s.isEnded() {
		return 0, net.ErrClosed
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	written := 0
	for len(p) > 0 {
		n, dl, err := s.take(len(p))
		if err != nil {
			return written, err
		}
		if !dl.Equal(s.muxDeadline) {
			_ = s.Stream.SetWriteDeadline(dl)
			s.muxDeadline = dl
		}
		epoch := s.raw.epoch.Load()
		k, err := s.Stream.Write(p[:n])
		written += k
		if err != nil {
			return written, s.failed(err)
		}
		s.raw.passed(epoch)
		p = p[n:]
	}
	return written, nil
}

// take waits until the peer's window takes some of want bytes, and
// takes them: it returns how many, and the write deadline. It fails at
// the deadline, and once the stream is closed.
func (s *Stream) take(want int) (int, time.Time, error) {
	var t *time.Timer
	defer func() {
		if t != nil {
			t.Stop()
		}
	}()
	s.fmu.Lock()
	for {
		dl := s.deadline
		switch {
		case s.ended:
			s.fmu.Unlock()
			return 0, dl, net.ErrClosed
		case s.through:
			s.fmu.Unlock()
			return want, dl, nil // muxado fails the write
		case s.window > 0:
			n := min(want, s.window)
			s.window -= n
			s.fmu.Unlock()
			return n, dl, nil
		}
		s.fmu.Unlock()
		var timeout <-chan time.Time
		if !dl.IsZero() {
			d := time.Until(dl)
			if d <= 0 {
				return 0, dl, os.ErrDeadlineExceeded
			}
			if t == nil {
				t = time.NewTimer(d)
			} else {
				t.Reset(d)
			}
			timeout = t.C
		}
		select {
		case <-s.wake:
		case <-timeout:
		}
		s.fmu.Lock()
	}
}

// failed returns the error of a write that failed with err, after
// seeing to what may still read it (see [Stream]).
func (s *Stream) failed(err error) error {
	code, _ := muxado.GetError(err)
	switch {
	case Dead(err):
		s.raw.Stop()
	case code == muxado.WriteTimeout:
		// The frame is in doubt: in muxado's queue, or not. Until it is
		// known to be out (dropped by the framer, or a write that began
		// later went through), the stream is not closed in muxado,
		// which would pack its FIN into the same frame.
		c := s.raw
		c.smu.Lock()
		s.settled = make(chan struct{})
		c.doubts[s] = c.epoch.Add(1)
		c.ndoubts.Add(1)
		c.smu.Unlock()
		s.end(true, muxado.StreamCancelled)
		return os.ErrDeadlineExceeded
	}
	return err
}

// CloseWrite half-closes the stream (a FIN frame); it fails at the
// write deadline as a write does.
func (s *Stream) CloseWrite() error {
	if s.isEnded() {
		return net.ErrClosed
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fmu.Lock()
	dl := s.deadline
	s.fmu.Unlock()
	if !dl.Equal(s.muxDeadline) {
		_ = s.Stream.SetWriteDeadline(dl)
		s.muxDeadline = dl
	}
	if err := s.Stream.CloseWrite(); err != nil {
		return s.failed(err)
	}
	return nil
}

// Read reads from the stream; once it is closed, reads end with io.EOF
// (net.ErrClosed once reset).
func (s *Stream) Read(p []byte) (int, error) {
	n, err := s.Stream.Read(p)
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		s.fmu.Lock()
		ended, reset := s.ended, s.reset
		s.fmu.Unlock()
		switch {
		case reset:
			return n, net.ErrClosed
		case ended:
			return n, io.EOF
		}
	}
	return n, err
}

// Close closes the stream without waiting (see [Stream]); it always
// returns nil.
func (s *Stream) Close() error {
	s.end(false, 0)
	return nil
}

// Reset closes the stream without waiting, and tells the peer with an
// RST frame of code (see [Stream]): a peer waiting for its window on the
// stream learns that nobody reads it. It is Close when the FIN was
// written already.
func (s *Stream) Reset(code muxado.ErrorCode) {
	s.end(true, code)
}

// SetDeadline sets the read and write deadlines.
func (s *Stream) SetDeadline(t time.Time) error {
	_ = s.SetReadDeadline(t)
	return s.SetWriteDeadline(t)
}

// SetReadDeadline sets the read deadline, unless the stream is closed.
func (s *Stream) SetReadDeadline(t time.Time) error {
	s.fmu.Lock()
	defer s.fmu.Unlock()
	if s.ended {
		return nil
	}
	return s.Stream.SetReadDeadline(t)
}

// SetWriteDeadline sets the write deadline: a write waiting when it
// passes fails, whether it waits for the window or for the session's
// writer.
func (s *Stream) SetWriteDeadline(t time.Time) error {
	s.fmu.Lock()
	s.deadline = t
	s.fmu.Unlock()
	s.poke()
	return nil
}

func (s *Stream) isEnded() bool {
	s.fmu.Lock()
	defer s.fmu.Unlock()
	return s.ended
}

// poke wakes the write waiting for the window, if any.
func (s *Stream) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// end closes the stream: writes fail, reads in progress end, and the
// stream is ended in muxado by finish; reset marks it for the framer.
func (s *Stream) end(reset bool, code muxado.ErrorCode) {
	s.fmu.Lock()
	s.ended = true
	s.reset = s.reset || reset
	s.fmu.Unlock()
	s.poke()
	if reset {
		c := s.raw
		c.cmu.Lock()
		if !s.resetting {
			s.resetting, s.code = true, code
			c.resets[s.id] = s
		}
		c.cmu.Unlock()
	}
	_ = s.Stream.SetReadDeadline(aLongTimeAgo)
	s.once.Do(func() { go s.finish() })
}

// finish ends the stream in muxado once the write in progress returned
// and the frame in doubt, if any, is out of muxado's queue: muxado's
// Close writes the FIN (which the framer makes an RST for a stream
// reset), waiting for the session's writer as long as it takes (the
// write timeout bounds a writer that goes no further).
func (s *Stream) finish() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.settled != nil {
		select {
		case <-s.settled:
		case <-s.raw.deadc:
			// The session died, but its writer may still be reading the
			// frame in doubt: once stopped, it reads no frame again.
			s.raw.Stop()
		}
	}
	if !s.muxDeadline.IsZero() {
		_ = s.Stream.SetWriteDeadline(time.Time{})
	}
	_ = s.Stream.Close()
	s.raw.forget(s)
}

// stream returns the stream id wrapped, or nil.
func (c *Conn) stream(id frame.StreamId) *Stream {
	c.smu.Lock()
	defer c.smu.Unlock()
	return c.streams[id]
}

// forget removes s, ended, from c.
func (c *Conn) forget(s *Stream) {
	c.smu.Lock()
	if c.streams[s.id] == s {
		delete(c.streams, s.id)
	}
	if _, ok := c.doubts[s]; ok {
		delete(c.doubts, s)
		c.ndoubts.Add(-1)
	}
	c.smu.Unlock()
	c.cmu.Lock()
	if c.resets[s.id] == s {
		delete(c.resets, s.id)
	}
	c.cmu.Unlock()
}

// observe tells the streams of the window updates and resets the
// session's reader read (before muxado handles them).
func (c *Conn) observe(fr frame.Frame) {
	switch f := fr.(type) {
	case *frame.WndInc:
		if s := c.stream(f.StreamId()); s != nil {
			s.fmu.Lock()
			s.window += int(f.WindowIncrement())
			s.fmu.Unlock()
			s.poke()
		}
	case *frame.Rst:
		if s := c.stream(f.StreamId()); s != nil {
			s.fmu.Lock()
			s.through = true
			s.fmu.Unlock()
			s.poke()
		}
	}
}

// die records that the session died: its streams' writes go to muxado,
// which fails them, and no frame in doubt is waited for.
func (c *Conn) die() {
	c.smu.Lock()
	if c.dead {
		c.smu.Unlock()
		return
	}
	c.dead = true
	close(c.deadc)
	streams := make([]*Stream, 0, len(c.streams))
	for _, s := range c.streams {
		streams = append(streams, s)
	}
	c.smu.Unlock()
	for _, s := range streams {
		s.fmu.Lock()
		s.through = true
		s.fmu.Unlock()
		s.poke()
	}
}

// passed records that a write which began at epoch e went through: the
// frames in doubt of epoch e or before were out of muxado's queue
// (which is first in, first out) before its frame.
func (c *Conn) passed(e uint64) {
	if c.ndoubts.Load() == 0 {
		return
	}
	c.smu.Lock()
	for s, d := range c.doubts {
		if d <= e {
			delete(c.doubts, s)
			c.ndoubts.Add(-1)
			close(s.settled)
		}
	}
	c.smu.Unlock()
}

// gather writes fr into the framer's buffer through inner, under cmu: a
// reset waits for the copy of its stream's frame in progress, and from
// then on the stream's DATA frames are dropped (a frame in doubt is
// settled) and its FIN is written as an RST. Nothing is gathered for a
// frame dropped.
func (c *Conn) gather(inner frame.Framer, fr frame.Frame) error {
	c.cmu.Lock()
	defer c.cmu.Unlock()
	if len(c.resets) > 0 {
		if d, ok := fr.(*frame.Data); ok {
			if s := c.resets[d.StreamId()]; s != nil {
				id, fin := d.StreamId(), d.Fin()
				// Settled once fr is read no more: the stream's owner may
				// then pack its FIN into the same frame.
				s.settle()
				if !fin || s.rstSent {
					return nil
				}
				s.rstSent = true
				var rst frame.Rst
				if err := rst.Pack(id, frame.ErrorCode(s.code)); err != nil {
					return err
				}
				return inner.WriteFrame(&rst)
			}
		}
	}
	return inner.WriteFrame(fr)
}

// settle records that s's frame in doubt, if any, is out of muxado's
// queue.
func (s *Stream) settle() {
	c := s.raw
	if c.ndoubts.Load() == 0 {
		return
	}
	c.smu.Lock()
	if _, ok := c.doubts[s]; ok {
		delete(c.doubts, s)
		c.ndoubts.Add(-1)
		close(s.settled)
	}
	c.smu.Unlock()
}
