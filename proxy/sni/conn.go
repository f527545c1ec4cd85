package sni

import (
	"io"
	"net"
)

// newConn returns a conn that replays buf, then reads from c; it has a
// CloseWrite method when c has one.
func newConn(c net.Conn, buf []byte) net.Conn {
	r := &replayConn{Conn: c, buf: buf}
	if cw, ok := c.(closeWriter); ok {
		return &replayCloseWriteConn{replayConn: r, cw: cw}
	}
	return r
}

type closeWriter interface {
	CloseWrite() error
}

// replayConn replays buf, then reads from Conn. Like a net.Conn it allows
// one reader at a time alongside writers.
type replayConn struct {
	net.Conn
	buf []byte
}

// Read returns the replayed bytes first, then reads from the conn.
func (c *replayConn) Read(p []byte) (int, error) {
	if len(c.buf) > 0 {
		n := copy(p, c.buf)
		c.buf = c.buf[n:]
		if len(c.buf) == 0 {
			c.buf = nil // let the recording go
		}
		return n, nil
	}
	return c.Conn.Read(p)
}

// WriteTo writes the replayed bytes to w, then copies the conn to w until
// EOF or an error. When the conn is a *net.TCPConn and w an io.ReaderFrom
// (a *net.TCPConn), the copy is w.ReadFrom(conn), which Linux does with
// splice(2); so io.Copy(upstream, replayed) costs no more than between the
// bare TCP connections. A timeout returns what was written so far, and a
// later WriteTo carries on.
func (c *replayConn) WriteTo(w io.Writer) (int64, error) {
	var written int64
	if len(c.buf) > 0 {
		n, err := w.Write(c.buf)
		written += int64(n)
		c.buf = c.buf[n:]
		if len(c.buf) == 0 {
			c.buf = nil
		}
		if err != nil {
			return written, err
		}
	}
	var n int64
	var err error
	if rf, ok := w.(io.ReaderFrom); ok {
		if tc, ok := c.Conn.(*net.TCPConn); ok {
			n, err = rf.ReadFrom(tc)
			return written + n, err
		}
	}
	n, err = io.Copy(w, readerOnly{c.Conn})
	return written + n, err
}

// readerOnly hides every method but Read, so io.Copy cannot loop back
// into WriteTo.
type readerOnly struct{ io.Reader }

// replayCloseWriteConn is a replayConn over a conn with CloseWrite.
type replayCloseWriteConn struct {
	*replayConn
	cw closeWriter
}

// CloseWrite half-closes the underlying conn (a TCP FIN, a TLS
// close_notify).
func (c *replayCloseWriteConn) CloseWrite() error { return c.cw.CloseWrite() }
