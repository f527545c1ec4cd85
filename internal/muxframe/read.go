package muxframe

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"golang.ngrok.com/muxado/v2"
	"golang.ngrok.com/muxado/v2/frame"
)

const (
	// DefaultWindow is muxado's default stream window
	// (muxado.Config.MaxWindowSize 0), which both of the original
	// service's SDKs use and assume of their peer.
	DefaultWindow = 256 << 10
	// MaxGoAwayDebug bounds the debug text of a GOAWAY frame (muxado
	// sends an error's text there, "no error" on a normal close).
	MaxGoAwayDebug = 4 << 10

	headerSize        = 8                      // a frame's header: length, type and flags, stream
	fixedControlSize  = 4                      // the one field of RST and WNDINC
	goAwayFieldsSize  = 8                      // GOAWAY's last stream and error code
	goAwayWriteWindow = 250 * time.Millisecond // as muxado's own GOAWAY
)

// Limits bound the payload of the frames a [Conn]'s framer reads (see
// [Conn.Framer]). The zero value is a peer trusted from the start, whose
// DATA frames are at most DefaultWindow.
type Limits struct {
	// Window bounds a DATA frame, and a frame of a type muxado does not
	// know: the stream's receive window, the session's
	// muxado.Config.MaxWindowSize. 0 (or less) means [DefaultWindow].
	Window int
	// Unauthenticated, when above 0, bounds each such frame until
	// [Conn.Authenticate] (at most Window); 0 (or less): the peer is
	// trusted from the start.
	Unauthenticated int
	// UnauthenticatedTotal, when above 0 and Unauthenticated is,
	// bounds the payload of all such frames until [Conn.Authenticate].
	UnauthenticatedTotal int
}

func (l Limits) withDefaults() Limits {
	if l.Window <= 0 {
		l.Window = DefaultWindow
	}
	l.Unauthenticated = min(max(l.Unauthenticated, 0), l.Window)
	if l.Unauthenticated == 0 || l.UnauthenticatedTotal < 0 {
		l.UnauthenticatedTotal = 0
	}
	return l
}

// maxLength is the most payload a frame of type t may announce, the
// peer authenticated or not.
func (l *Limits) maxLength(t frame.Type, authed bool) int {
	switch t {
	case frame.TypeRst, frame.TypeWndInc:
		return fixedControlSize
	case frame.TypeGoAway:
		return goAwayFieldsSize + MaxGoAwayDebug
	}
	if !authed {
		return l.Unauthenticated
	}
	return l.Window
}

// ErrFrameTooLong is the error a [*FrameError] unwraps to.
var ErrFrameTooLong = errors.New("muxframe: a frame longer than the protocol allows")

// FrameError is a frame refused before its payload was read: its header
// announced more than its type may carry.
type FrameError struct {
	Type   frame.Type
	Stream frame.StreamId
	// Length is the payload the frame announced, Max what it may be.
	Length, Max int
	// Unauthenticated: the peer had not authenticated. Total: Max bounds
	// the payload of all frames before authentication, which this one
	// brought to Length.
	Unauthenticated, Total bool
}

// Error says what was refused, in words an agent's user can read (it is
// the debug text of the GOAWAY sent to the peer).
func (e *FrameError) Error() string {
	what := "a " + e.Type.String() + " frame"
	if e.Type == frame.TypeRst {
		what = "an RST frame"
	}
	if e.Type > frame.TypeGoAway {
		what = fmt.Sprintf("a frame of unknown type %d", e.Type)
	}
	what += fmt.Sprintf(" of %d bytes on stream %d", e.Length, e.Stream)
	switch {
	case e.Total:
		return fmt.Sprintf("frame refused: %s brought the data sent before authentication to more than the %d bytes allowed", what, e.Max)
	case e.Type == frame.TypeRst || e.Type == frame.TypeWndInc:
		return fmt.Sprintf("frame refused: %s is longer than its %d-byte field", what, e.Max)
	case e.Type == frame.TypeGoAway:
		return fmt.Sprintf("frame refused: %s is longer than its %d bytes of fields and %d of debug text", what, goAwayFieldsSize, MaxGoAwayDebug)
	case e.Unauthenticated:
		return fmt.Sprintf("frame refused: %s is longer than the %d bytes a frame may carry before authentication", what, e.Max)
	default:
		return fmt.Sprintf("frame refused: %s is longer than the stream's window, %d bytes", what, e.Max)
	}
}

// Unwrap returns [ErrFrameTooLong].
func (e *FrameError) Unwrap() error { return ErrFrameTooLong }

// headerReader is the transport the inner framer reads from, with the
// header the framer read first put back in front of it.
type headerReader struct {
	r   io.Reader
	hdr [headerSize]byte
	n   int // the bytes of hdr still to read
}

func (h *headerReader) Read(p []byte) (int, error) {
	if h.n > 0 {
		k := copy(p, h.hdr[headerSize-h.n:])
		h.n -= k
		return k, nil
	}
	return h.r.Read(p)
}

// ReadFrame reads a frame's header and, if the frame is not too long,
// the frame as muxado's framer does; a frame too long is refused (see
// refuse). Only the session's reader goroutine calls it.
func (f *framer) ReadFrame() (frame.Frame, error) {
	h := &f.in.hdr
	if _, err := io.ReadFull(f.in.r, h[:]); err != nil {
		f.raw.die() // the session dies of it: its streams stop waiting for their windows
		return nil, err
	}
	length := int(h[0])<<16 | int(h[1])<<8 | int(h[2])
	t := frame.Type(h[3] >> 4)
	if !f.authed && f.raw.authed.Load() {
		f.authed = true
	}
	if length > f.lim.maxLength(t, f.authed) {
		return nil, f.refuse(&FrameError{Type: t, Stream: streamID(h), Length: length, Max: f.lim.maxLength(t, f.authed), Unauthenticated: !f.authed})
	}
	if t == frame.TypeData || t > frame.TypeGoAway {
		if !f.authed && f.lim.UnauthenticatedTotal > 0 {
			f.unauthed += length
			if f.unauthed > f.lim.UnauthenticatedTotal {
				return nil, f.refuse(&FrameError{Type: t, Stream: streamID(h), Length: length, Max: f.lim.UnauthenticatedTotal, Unauthenticated: true, Total: true})
			}
		}
		if t == frame.TypeData && h[3]&frame.FlagDataSyn != 0 {
			f.lastSyn.Store(uint32(streamID(h)))
		}
	}
	f.in.n = headerSize
	fr, err := f.Framer.ReadFrame()
	if err != nil {
		f.raw.die()
		return nil, err
	}
	f.raw.observe(fr)
	return fr, nil
}

func streamID(h *[headerSize]byte) frame.StreamId {
	return frame.StreamId(binary.BigEndian.Uint32(h[4:]) & 0x7FFFFFFF)
}

// refuse records e and ends the session as [Conn.GoAway] does, with
// ProtocolError and e's words: the session dies of the error refuse
// returns, e.
func (f *framer) refuse(e *FrameError) error {
	f.raw.refused.CompareAndSwap(nil, e)
	f.goAway(muxado.ProtocolError, e.Error())
	return e
}

// GoAway tells the peer why its session ends, for a reason of the
// session's owner: a GOAWAY frame with code and why is written, unless
// the writer is stopped, and the writer is then stopped (as by
// [Conn.Stop]); the owner closes the session. A frame being written is
// given a quarter of a second to finish (the socket's write deadline,
// and the GOAWAY's): a peer that reads nothing holds the caller no
// longer. It writes nothing for a Conn whose frames a [Flusher] writes.
func (c *Conn) GoAway(code muxado.ErrorCode, why string) {
	if f := c.fr.Load(); f != nil {
		f.goAway(code, why)
	}
}

func (f *framer) goAway(code muxado.ErrorCode, why string) {
	var ga frame.GoAway
	packed := ga.Pack(frame.StreamId(f.lastSyn.Load()), frame.ErrorCode(code), []byte(why)) == nil
	f.raw.goingAway.Store(true)
	_ = f.raw.Conn.SetWriteDeadline(time.Now().Add(goAwayWriteWindow))
	f.raw.wmu.Lock()
	if packed && !f.raw.stopped {
		f.raw.until = time.Now().Add(goAwayWriteWindow)
		_ = f.writeLocked(&ga)
		f.raw.until = time.Time{}
	}
	f.raw.stopped = true
	f.raw.wmu.Unlock()
	f.raw.die()
}
