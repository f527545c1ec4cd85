// Package sdktunnel accepts the connections of a tunnel of the original
// service's Go SDK (golang.ngrok.com/ngrok v1.12.1) without the SDK's
// crash on a failed Accept.
//
// The SDK's Connect stores a placeholder session without a logger
// (session.go, line 741) after starting the goroutine that connects, and
// that goroutine stores the connected session, with its logger, when
// the first connect succeeds (line 689). When the connect wins the race
// the placeholder replaces it and stays until the next reconnect; a
// tunnel's Accept that fails (the session closed, or the server ended
// the tunnel) then logs its error through the nil logger (tunnel.go,
// line 155) and panics, taking the process down with a nil pointer
// dereference instead of returning the error.
//
// Accept recovers from that panic and returns the error the SDK was
// about to log: the SDK's inner tunnel keeps returning its close error
// from its own Accept once closed, and the SDK's tunnel exposes it as
// its exported field Tunnel.
package sdktunnel

import (
	"errors"
	"net"
	"reflect"
	"runtime"
)

// Acceptor is what Accept needs of a tunnel: the SDK's ngrok.Tunnel is
// one.
type Acceptor interface {
	Accept() (net.Conn, error)
}

// ErrEnded is returned by Accept when the SDK panicked on a failed
// Accept and its inner tunnel's error could not be read (a later SDK
// that changed its types).
var ErrEnded = errors.New("the tunnel ended")

// Accept returns tun.Accept(), or, when the SDK panics with a runtime
// error while logging the error of a failed Accept, that error. Other
// panics go on.
func Accept(tun Acceptor) (c net.Conn, err error) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		if _, ok := r.(runtime.Error); !ok {
			panic(r)
		}
		c, err = nil, innerError(tun)
	}()
	return tun.Accept()
}

// innerError returns the error of the Accept of the tunnel that tun
// wraps in its exported field Tunnel, or ErrEnded.
func innerError(tun Acceptor) error {
	v := reflect.ValueOf(tun)
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return ErrEnded
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return ErrEnded
	}
	inner := v.FieldByName("Tunnel")
	if !inner.IsValid() || !inner.CanInterface() || (inner.Kind() == reflect.Interface && inner.IsNil()) {
		return ErrEnded
	}
	accept := inner.MethodByName("Accept")
	if !accept.IsValid() || accept.Type().NumIn() != 0 || accept.Type().NumOut() != 2 {
		return ErrEnded
	}
	out := accept.Call(nil)
	if err, ok := out[1].Interface().(error); ok && err != nil {
		return err
	}
	return ErrEnded
}

// Listener is a net.Listener whose Accept is this package's Accept, for
// serving a tunnel with net/http.
type Listener struct {
	net.Listener
}

// Accept accepts the next connection of the tunnel.
func (l Listener) Accept() (net.Conn, error) {
	return Accept(l.Listener)
}
