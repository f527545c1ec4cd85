//go:build !unix

package proxy

import "net"

// connAlive cannot look at an idle connection here without blocking: it
// takes it as alive (a request on a connection the upstream closed fails
// with 502, as it may with http.Transport).
func connAlive(net.Conn) bool { return true }
