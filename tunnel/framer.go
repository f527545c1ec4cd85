package tunnel

import (
	"io"
	"sync"

	"golang.ngrok.com/muxado/v2/frame"
)

// muxado's framer writes a frame as two writes, its 8-byte header and
// its payload; on a TLS connection each write is a TLS record and a
// system call of its own. coalescingFramer makes each frame one write:
// the frame is gathered in a pooled buffer, then written at once. Only
// the session's writer goroutine writes frames, one at a time.

// maxPooledFrame bounds the buffers kept for reuse: a frame's payload is
// at most a stream's window (256 KiB), which append may round up to
// twice; larger buffers are dropped.
const maxPooledFrame = 512 << 10

var framePool = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

// newCoalescingFramer is a muxado.Config.NewFramer.
func newCoalescingFramer(r io.Reader, w io.Writer) frame.Framer {
	g := &gather{}
	return &coalescingFramer{Framer: frame.NewFramer(r, g), g: g, w: w}
}

type coalescingFramer struct {
	frame.Framer // reads from the transport, writes into g
	g            *gather
	w            io.Writer // the transport
}

// WriteFrame writes f to the transport in one write.
func (f *coalescingFramer) WriteFrame(fr frame.Frame) error {
	bp := framePool.Get().(*[]byte)
	f.g.buf = (*bp)[:0]
	err := f.Framer.WriteFrame(fr)
	if err == nil {
		_, err = f.w.Write(f.g.buf)
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
