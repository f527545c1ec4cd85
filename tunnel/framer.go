package tunnel

import (
	"io"
	"net"
	"sync"

	"golang.ngrok.com/muxado/v2/frame"
)

// Writes to an agent. muxado's framer writes a frame as two writes, its
// 8-byte header and its payload; crypto/tls makes each write one or more
// TLS records (16 KiB at most) and writes each record to the socket
// apart: a 32 KiB frame was four system calls. Here a frame is gathered
// in a pooled buffer and written to the TLS connection at once, and the
// records TLS makes of it are gathered below TLS (batchConn) and written
// to the socket in one system call.

// maxPooledFrame bounds the buffers kept for reuse: a frame's payload is
// at most a stream's window (256 KiB), which append may round up to
// twice; larger buffers are dropped.
const maxPooledFrame = 512 << 10

var framePool = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

// framerFor returns the muxado.Config.NewFramer of a session whose TLS
// connection runs over raw: each frame is one write to the TLS
// connection, and one write to the socket.
func framerFor(raw *batchConn) func(r io.Reader, w io.Writer) frame.Framer {
	return func(r io.Reader, w io.Writer) frame.Framer {
		g := &gather{}
		return &coalescingFramer{Framer: frame.NewFramer(r, g), g: g, w: w, raw: raw}
	}
}

type coalescingFramer struct {
	frame.Framer // reads from the transport, writes into g
	g            *gather
	w            io.Writer  // the TLS connection
	raw          *batchConn // the socket under it
}

// WriteFrame writes f to the TLS connection in one write, and its
// records to the socket in one write. Only the session's writer
// goroutine calls it.
func (f *coalescingFramer) WriteFrame(fr frame.Frame) error {
	bp := framePool.Get().(*[]byte)
	f.g.buf = (*bp)[:0]
	err := f.Framer.WriteFrame(fr)
	if err == nil {
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

// batchConn is an agent's socket under TLS. Between hold and flush (one
// frame's write) the records TLS writes are gathered and written at
// once; other writes (the handshake, alerts) go through as they come.
type batchConn struct {
	net.Conn
	mu      sync.Mutex
	holding bool
	buf     []byte
}

func (c *batchConn) hold() {
	c.mu.Lock()
	c.holding = true
	c.mu.Unlock()
}

func (c *batchConn) Write(p []byte) (int, error) {
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
func (c *batchConn) flush() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.holding = false
	if len(c.buf) == 0 {
		return nil
	}
	_, err := c.Conn.Write(c.buf)
	if cap(c.buf) <= maxPooledFrame {
		b := c.buf[:0]
		framePool.Put(&b)
	}
	c.buf = nil
	return err
}
