package hop

import (
	"errors"
	"io"
	"net"
	"sync/atomic"
	"time"

	"github.com/edgeplane/edgeplane/internal/bulkcopy"
	"golang.ngrok.com/muxado/v2"
)

// conn is a stream [Hop.DialTunnel] returns: a muxado stream to the peer
// node that serves the agent's connection, its bytes counted, and fast
// paths for a relay's bulk copies (as package tunnel's connections to
// agents have). It hides the stream's session: closing the conn closes
// the stream, never the connection to the peer.
type conn struct {
	str    muxado.Stream
	pc     *peerConn
	bytes  counter
	closed atomic.Bool
}

// Read reads what the agent sent.
func (c *conn) Read(p []byte) (int, error) {
	n, err := c.str.Read(p)
	c.bytes.add(n)
	return n, err
}

// Write sends p to the agent.
func (c *conn) Write(p []byte) (int, error) {
	n, err := c.str.Write(p)
	c.bytes.add(n)
	return n, err
}

// Close closes the stream: both directions end (a half-close first, so
// that the agent reads EOF after what was written).
func (c *conn) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	err := c.str.Close()
	c.pc.release()
	return err
}

// CloseWrite half-closes the stream: the agent reads EOF, and may go on
// writing.
func (c *conn) CloseWrite() error { return c.str.CloseWrite() }

// LocalAddr returns the local address of the connection to the peer node.
func (c *conn) LocalAddr() net.Addr { return c.str.LocalAddr() }

// RemoteAddr returns the address of the peer node.
func (c *conn) RemoteAddr() net.Addr { return c.str.RemoteAddr() }

// SetDeadline sets the stream's read and write deadlines.
func (c *conn) SetDeadline(t time.Time) error { return c.str.SetDeadline(t) }

// SetReadDeadline sets the stream's read deadline.
func (c *conn) SetReadDeadline(t time.Time) error { return c.str.SetReadDeadline(t) }

// SetWriteDeadline sets the stream's write deadline.
func (c *conn) SetWriteDeadline(t time.Time) error { return c.str.SetWriteDeadline(t) }

// ReadFrom copies src to the agent until src's EOF (nil) or an error.
func (c *conn) ReadFrom(src io.Reader) (int64, error) { return bulkcopy.Copy(c, src) }

// WriteTo copies what the agent sends to dst until the stream's EOF (nil)
// or an error.
func (c *conn) WriteTo(dst io.Writer) (int64, error) { return bulkcopy.Copy(dst, c) }

// counter counts bytes into a Prometheus counter; the zero counter
// counts nothing.
type counter struct{ c interface{ Add(float64) } }

func (c counter) add(n int) {
	if c.c != nil && n > 0 {
		c.c.Add(float64(n))
	}
}

// countedConn is a served stream whose bytes are counted.
type countedConn struct {
	net.Conn
	bytes counter
}

func (c *countedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.bytes.add(n)
	return n, err
}

func (c *countedConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.bytes.add(n)
	return n, err
}

func (c *countedConn) CloseWrite() error { return closeWrite(c.Conn) }

// closeWrite half-closes c when it can, and reports whether it did.
func closeWrite(c net.Conn) error {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errNoCloseWrite
}

// relay copies between a served stream and the agent's connection both
// ways until both directions end: each direction's EOF half-closes its
// destination, and an error in either closes both. Both are closed on
// return.
func relay(str, local net.Conn) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		pipe(local, str)
	}()
	pipe(str, local)
	<-done
	local.Close()
	str.Close()
}

// pipe copies src to dst, then half-closes dst (when dst cannot be
// half-closed, the other direction goes on until it ends). A copy or
// half-close that failed closes both: the other direction ends too.
func pipe(dst, src net.Conn) {
	_, err := bulkcopy.Copy(dst, src)
	if err == nil {
		if err = closeWrite(dst); err == errNoCloseWrite {
			return
		}
	}
	if err != nil {
		dst.Close()
		src.Close()
	}
}

// errNoCloseWrite is closeWrite's answer for a connection without
// CloseWrite.
var errNoCloseWrite = errors.New("hop: the connection cannot be half-closed")
