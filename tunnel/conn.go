package tunnel

import (
	"io"
	"net"
	"sync/atomic"

	"github.com/edgeplane/edgeplane/internal/bulkcopy"
	"github.com/edgeplane/edgeplane/internal/muxframe"
	"golang.ngrok.com/muxado/v2"
)

// agentConn is a connection handed to an agent: a muxado stream, its
// bytes counted (when the Server measures), and fast paths for a relay's
// bulk copies. Closing it never waits for the agent (see
// muxframe.Stream): once the agent has sent all it had to (its EOF
// read), the stream ends with a FIN; before, the client hung up, and the
// agent is told with a reset (StreamCancelled), which also ends a write
// of the agent's waiting for the window. Each Read of a stream returns a window update to the
// agent and each Write is a frame: copied through the relay's 32 KiB
// buffer, a bulk transfer is a frame and an update per 32 KiB. ReadFrom
// and WriteTo copy with package bulkcopy: through a 256 KiB buffer while
// the transfer is bulk, and a 32 KiB one otherwise, so an idle
// connection holds no more than before.
type agentConn struct {
	net.Conn                  // str
	str      *muxframe.Stream //
	m        *Metrics         // nil: nothing counted
	eof      atomic.Bool      // a read returned the agent's EOF
}

func (c *agentConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if c.m != nil {
		c.m.bytesOut.Add(float64(n))
	}
	if err == io.EOF {
		c.eof.Store(true)
	}
	return n, err
}

// Close closes the stream at once: with a FIN once the agent's EOF was
// read, else with a reset.
func (c *agentConn) Close() error {
	if c.eof.Load() {
		return c.str.Close()
	}
	c.str.Reset(muxado.StreamCancelled)
	return nil
}

func (c *agentConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if c.m != nil {
		c.m.bytesIn.Add(float64(n))
	}
	return n, err
}

// CloseWrite half-closes the stream: the client's half-close reaches the
// agent as EOF.
func (c *agentConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// ReadFrom copies src to the agent until src's EOF (nil) or error.
func (c *agentConn) ReadFrom(src io.Reader) (int64, error) {
	return bulkcopy.Copy(c, src)
}

// WriteTo copies what the agent sends to dst until the stream's EOF
// (nil) or error.
func (c *agentConn) WriteTo(dst io.Writer) (int64, error) {
	return bulkcopy.Copy(dst, c)
}
