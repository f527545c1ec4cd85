//go:build !unix

package refusedport

import (
	"net"
	"testing"
)

// Hold returns the address of a listener closed at once: a
// port that refuses connections unless another process takes it
// meanwhile (see the unix version, which holds it).
func Hold(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}
