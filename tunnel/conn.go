package tunnel

import (
	"io"
	"net"

	"github.com/edgeplane/edgeplane/internal/bulkcopy"
)

// agentConn is a connection handed to an agent: a muxado stream, its
// bytes counted (when the Server measures), and fast paths for a relay's
// bulk copies. Each Read of a stream returns a window update to the
// agent and each Write is a frame: copied through the relay's 32 KiB
// buffer, a bulk transfer is a frame and an update per 32 KiB. ReadFrom
// and WriteTo copy with package bulkcopy: through a 256 KiB buffer while
// the transfer is bulk, and a 32 KiB one otherwise, so an idle
// connection holds no more than before.
type agentConn struct {
	net.Conn
	m *Metrics // nil: nothing counted
}

func (c *agentConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if c.m != nil {
		c.m.bytesOut.Add(float64(n))
	}
	return n, err
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
