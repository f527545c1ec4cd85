//go:build unix

// Package refusedport gives tests an address that refuses connections
// for as long as the test runs: a port bound and not listening, which no
// other process (another package's test server under go test ./...) can
// take meanwhile.
package refusedport

import (
	"net"
	"strconv"
	"syscall"
	"testing"
)

// Hold binds a TCP socket of 127.0.0.1 to a free port and
// does not listen on it: a connection to it is refused, and no other
// socket can be bound to the port until the test ends and closes it. A
// listener found free and closed at once (the old way) left the port to
// the next process that asked for one, under go test ./... another
// package's test server, which then answered the connections meant to
// be refused.
func Hold(t testing.TB) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	in4, ok := sa.(*syscall.SockaddrInet4)
	if !ok {
		t.Fatalf("bound to %T", sa)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(in4.Port))
}
