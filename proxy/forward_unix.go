//go:build unix

package proxy

import (
	"net"
	"syscall"
)

// connAlive says whether the upstream has neither closed c nor sent
// anything on it while it was idle: a recv with MSG_PEEK|MSG_DONTWAIT
// that finds nothing to read (EAGAIN). It never blocks.
func connAlive(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	alive := false
	err = rc.Read(func(fd uintptr) bool {
		var b [1]byte
		_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		alive = err == syscall.EAGAIN || err == syscall.EWOULDBLOCK
		return true
	})
	return err == nil && alive
}
