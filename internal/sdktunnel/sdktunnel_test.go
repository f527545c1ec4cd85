package sdktunnel_test

import (
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane/internal/sdktunnel"
	"golang.ngrok.com/ngrok"
)

// conn is the inner tunnel's connection type (the SDK's is its own).
type conn struct{ net.Conn }

// inner is the SDK's inner tunnel: once closed, its Accept returns its
// close error again on every call.
type inner interface {
	Accept() (*conn, error)
}

type closed struct{ err error }

func (c closed) Accept() (*conn, error) { return nil, c.err }

// racy is the SDK's tunnel when it lost the race: a failed Accept
// dereferences a nil logger.
type racy struct {
	base
	Tunnel inner
	logger *struct{ name string }
}

func (t *racy) Accept() (net.Conn, error) {
	if _, err := t.Tunnel.Accept(); err != nil {
		_ = t.logger.name // the nil logger
		return nil, err
	}
	return nil, nil
}

// opaque panics the same way but keeps its inner tunnel unexported.
type opaque struct {
	base
	tunnel inner
}

func (t *opaque) Accept() (net.Conn, error) {
	var logger *struct{ name string }
	_ = logger.name
	return nil, nil
}

// other panics with something else than a runtime error.
type other struct{ base }

func (other) Accept() (net.Conn, error) { panic("not the SDK's race") }

// healthy accepts a connection.
type healthy struct {
	base
	c net.Conn
}

func (h healthy) Accept() (net.Conn, error) { return h.c, nil }

func TestAccept(t *testing.T) {
	removed := errors.New("the endpoint was removed")
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	for _, tc := range []struct {
		name string
		tun  net.Listener
		conn net.Conn
		err  error
	}{
		{"a connection", healthy{c: a}, a, nil},
		{"the race: the inner tunnel's error", &racy{Tunnel: closed{removed}}, nil, removed},
		{"the race without a readable inner tunnel", &opaque{tunnel: closed{removed}}, nil, sdktunnel.ErrEnded},
		{"the race with a nil inner tunnel", &racyNil{}, nil, sdktunnel.ErrEnded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := sdktunnel.Accept(tc.tun)
			if c != tc.conn || !errors.Is(err, tc.err) {
				t.Errorf("Accept: %v, %v; want %v, %v", c, err, tc.conn, tc.err)
			}
			if c, err := (sdktunnel.Listener{Listener: tc.tun}).Accept(); c != tc.conn || !errors.Is(err, tc.err) {
				t.Errorf("Listener.Accept: %v, %v; want %v, %v", c, err, tc.conn, tc.err)
			}
		})
	}
}

// racyNil lost the race and has no inner tunnel.
type racyNil struct {
	base
	Tunnel inner
}

func (t *racyNil) Accept() (net.Conn, error) {
	_, err := t.Tunnel.Accept() // nil interface: a runtime error
	return nil, err
}

// base gives the fakes the rest of a net.Listener.
type base struct{}

func (base) Close() error   { return nil }
func (base) Addr() net.Addr { return &net.TCPAddr{} }

func TestAcceptOtherPanic(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "not the SDK's race") {
			t.Errorf("recovered %v; want the panic to go on", r)
		}
	}()
	_, _ = sdktunnel.Accept(other{})
	t.Error("Accept returned")
}

// The SDK's tunnel is what Accept is for.
var _ sdktunnel.Acceptor = ngrok.Tunnel(nil)
