package proxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"net/url"
	"os"
	"sync"
	"time"
)

// upstreamTransport is the Handler's default transport (HandlerOptions.
// Transport nil): it carries the requests that need nothing but a plain
// HTTP/1.1 exchange itself, and hands every other request to an
// http.Transport with the same settings (fallback).
//
// Why: http.Transport runs two goroutines per upstream connection (one
// writes requests, one reads responses) and hands each request and each
// response between them and the caller over channels; a proxied request
// then costs three goroutine switches, a select and a dozen allocations
// more than its exchange needs. Here the caller's goroutine writes the
// request and reads the response itself, on a connection taken from an
// idle pool per upstream address and put back once the response's body
// has been read to its end.
//
// The requests it carries: to an http:// upstream, without a body
// (ReverseProxy sends one of length 0 as none), without Expect or
// Upgrade (100-continue and protocol switches need the fallback's
// concurrent reading and writing, or its hijackable bodies), and only
// when no proxy is set in the environment (the fallback honours
// HTTP_PROXY as http.DefaultTransport does). A request with a body is the
// fallback's: an upstream may answer before it has read the body, which
// only concurrent writing and reading handle.
//
// What it keeps of http.Transport's behaviour: the request is written by
// net/http's own Request.Write and the response read by http.ReadResponse
// (so framing, trailers and header parsing are net/http's); the wait for
// response headers is bounded by headerTimeout (a timeout error, which
// the Handler answers 504); the response headers are bounded by
// maxHeaderBytes with http.Transport's own error text (which
// headersTooLarge recognises); 1xx informational responses reach the
// client trace ReverseProxy installs (it forwards them); the request's
// context ends the exchange at any point (the connection is closed); a
// request that fails on a reused connection before anything of its
// response arrived is sent again once on a new connection when it is
// idempotent (GET, HEAD, OPTIONS, TRACE, or an Idempotency-Key), and a
// non-idempotent one only goes out on an idle connection the upstream
// has not closed (checked without blocking before it is used). Idle
// connections: at most maxIdlePerHost per upstream address and maxIdle in
// all, closed after idleTimeout.
type upstreamTransport struct {
	fallback *http.Transport
	// plain is false when the environment sets a proxy: every request then
	// goes to the fallback.
	plain          bool
	dial           func(ctx context.Context, network, addr string) (net.Conn, error)
	headerTimeout  time.Duration
	maxHeaderBytes int64
	pool           connPool
}

// newUpstreamTransport returns the transport over fallback, whose
// settings (dialer, timeouts, bounds, idle limits) it follows.
func newUpstreamTransport(fallback *http.Transport) *upstreamTransport {
	t := &upstreamTransport{
		fallback:       fallback,
		plain:          os.Getenv("HTTP_PROXY") == "" && os.Getenv("http_proxy") == "",
		dial:           fallback.DialContext,
		headerTimeout:  fallback.ResponseHeaderTimeout,
		maxHeaderBytes: fallback.MaxResponseHeaderBytes,
		pool: connPool{maxPerHost: fallback.MaxIdleConnsPerHost, max: fallback.MaxIdleConns,
			timeout: positiveOr(fallback.IdleConnTimeout, 90*time.Second)},
	}
	if t.dial == nil {
		t.dial = (&net.Dialer{Timeout: upstreamDialTimeout, KeepAlive: 30 * time.Second}).DialContext
	}
	if t.maxHeaderBytes <= 0 {
		t.maxHeaderBytes = 10 << 20 // http.Transport's default
	}
	return t
}

// carries says whether the transport carries req itself.
func (t *upstreamTransport) carries(req *http.Request) bool {
	return t.plain && req.URL.Scheme == "http" && (req.Body == nil || req.Body == http.NoBody) &&
		req.Header["Expect"] == nil && req.Header["Upgrade"] == nil && req.Trailer == nil
}

// RoundTrip implements http.RoundTripper.
func (t *upstreamTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !t.carries(req) {
		return t.fallback.RoundTrip(req)
	}
	ctx := req.Context()
	var info func(int, http.Header) error
	if trace := httptrace.ContextClientTrace(ctx); trace != nil && trace.Got1xxResponse != nil {
		info = func(code int, h http.Header) error { return trace.Got1xxResponse(code, textproto.MIMEHeader(h)) }
	}
	return t.do(ctx, upstreamAddr(req.URL), req, req.Write, info, nil)
}

// upstreamAddr returns u's host and port (80 when u names none).
func upstreamAddr(u *url.URL) string {
	if u.Port() == "" {
		return net.JoinHostPort(u.Hostname(), "80")
	}
	return u.Host
}

// do sends req (whose method and context are read; write writes it) to
// addr and reads its response; informational, when not nil, receives
// each 1xx response but 101. A response head of the common form
// (readQuickHead) has its fields put into dst, when dst is not nil, and
// dst is the response's Header.
func (t *upstreamTransport) do(ctx context.Context, addr string, req *http.Request, write func(io.Writer) error,
	informational func(int, http.Header) error, dst http.Header) (*http.Response, error) {
	checked := !idempotent(req) // a non-idempotent request only on a connection known alive
	for attempt := 0; ; attempt++ {
		pc, err := t.conn(ctx, addr, checked)
		if err != nil {
			return nil, err
		}
		resp, err := pc.exchange(ctx, req, write, informational, dst, t)
		if err == nil {
			return resp, nil
		}
		if attempt == 0 && pc.reused && !pc.readAny && !checked && ctx.Err() == nil {
			continue // the upstream closed the idle connection: once more, on a new one
		}
		return nil, err
	}
}

// idempotent says whether req may be sent twice (RFC 9110, 9.2.2), as
// http.Transport decides it for its retries.
func idempotent(req *http.Request) bool {
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	_, key := req.Header["Idempotency-Key"]
	_, xkey := req.Header["X-Idempotency-Key"]
	return key || xkey
}

// conn returns an idle connection to addr, or a new one. With checked,
// an idle connection is used only when the upstream has not closed it.
func (t *upstreamTransport) conn(ctx context.Context, addr string, checked bool) (*upstreamConn, error) {
	for {
		pc := t.pool.get(addr)
		if pc == nil {
			break
		}
		if checked && !connAlive(pc.conn) {
			_ = pc.conn.Close()
			continue
		}
		pc.reused, pc.readAny = true, false
		return pc, nil
	}
	c, err := t.dial(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	pc := &upstreamConn{addr: addr, conn: c}
	pc.lr.Conn = c
	pc.br = bufio.NewReaderSize(&pc.lr, 4<<10)
	pc.bw = bufio.NewWriterSize(c, 4<<10)
	return pc, nil
}

// upstreamConn is one connection to an upstream: its buffers live as
// long as it does (as http.Transport's), 8 KiB per connection.
type upstreamConn struct {
	addr string
	conn net.Conn
	lr   limitedConn
	br   *bufio.Reader
	bw   *bufio.Writer
	// reused: taken from the pool; readAny: some of the response arrived.
	reused, readAny bool
	idleSince       time.Time

	// mu orders the request context's end (which sets a read deadline in
	// the past) with the clearing of the response-header deadline.
	mu       sync.Mutex
	canceled bool
}

// aLongTimeAgo is a read deadline that ends any read at once.
var aLongTimeAgo = time.Unix(1, 0)

// errHeaderLimit ends the reading of response headers past the bound.
var errHeaderLimit = errors.New("proxy: response header bound reached")

// limitedConn reads from Conn at most left bytes (then errHeaderLimit),
// and records that a read returned something.
type limitedConn struct {
	net.Conn
	left int64
	read bool
}

func (c *limitedConn) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, errHeaderLimit
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.Conn.Read(p)
	c.left -= int64(n)
	if n > 0 {
		c.read = true
	}
	return n, err
}

// maxInformational is how many 1xx responses may precede the response,
// as http.Transport bounds them.
const maxInformational = 5

// exchange writes req on pc and reads its response. On an error pc is
// closed; on success it goes back to t's pool once the response's body
// has been read to its end (or at once when it has none).
func (pc *upstreamConn) exchange(ctx context.Context, req *http.Request, write func(io.Writer) error,
	informational func(int, http.Header) error, dst http.Header, t *upstreamTransport) (*http.Response, error) {
	pc.canceled = false
	stop := context.AfterFunc(ctx, pc.cancel)
	fail := func(err error) (*http.Response, error) {
		stop()
		_ = pc.conn.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	if err := write(pc.bw); err != nil {
		return fail(err)
	}
	if err := pc.bw.Flush(); err != nil {
		return fail(err)
	}
	if t.headerTimeout > 0 {
		pc.deadline(time.Now().Add(t.headerTimeout))
	}
	pc.lr.read = false
	var resp *http.Response
	for n := 0; ; n++ {
		pc.lr.left = t.maxHeaderBytes
		hd := dst
		if hd == nil {
			hd = make(http.Header, 8)
		}
		if qh, ok, _ := readQuickHead(pc.br, hd); ok {
			pc.readAny = true
			resp = quickResponse(req, qh, hd)
			break
		}
		var err error
		resp, err = http.ReadResponse(pc.br, req) // meets the error readQuickHead met, if any
		pc.readAny = pc.lr.read
		if err != nil {
			if pc.lr.left <= 0 {
				err = fmt.Errorf("net/http: server response headers exceeded %d bytes; aborted", t.maxHeaderBytes)
			} else if errors.Is(err, os.ErrDeadlineExceeded) && !pc.isCanceled() {
				err = &net.OpError{Op: "read", Net: "tcp", Err: errHeaderTimeout{}}
			}
			return fail(err)
		}
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			break
		}
		if n == maxInformational {
			return fail(errors.New("net/http: too many 1xx informational responses"))
		}
		if informational != nil {
			if err := informational(resp.StatusCode, resp.Header); err != nil {
				return fail(err)
			}
		}
	}
	pc.lr.left = math.MaxInt64
	if t.headerTimeout > 0 {
		pc.deadline(time.Time{})
	}
	keep := !resp.Close && !req.Close
	if resp.Body == http.NoBody {
		if stop() && keep {
			t.pool.put(pc)
		} else {
			_ = pc.conn.Close()
		}
		return resp, nil
	}
	b := &upstreamBody{rc: resp.Body, left: -1, pc: pc, t: t, stop: stop, keep: keep}
	if resp.Body == nil {
		b.rc, b.left = nil, resp.ContentLength
	}
	resp.Body = b
	return resp, nil
}

// quickResponse is the response of a head readQuickHead read, as
// http.ReadResponse makes it; its Body is nil when it has one, which
// exchange reads from the connection's buffer (Content-Length bytes),
// else http.NoBody.
func quickResponse(req *http.Request, qh quickHead, hd http.Header) *http.Response {
	resp := &http.Response{Status: qh.status, StatusCode: qh.code, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: hd, ContentLength: qh.length, Request: req}
	switch {
	case req.Method == http.MethodHead:
		resp.Body = http.NoBody
	case qh.code == http.StatusNoContent || qh.code == http.StatusNotModified:
		resp.Body, resp.ContentLength = http.NoBody, 0
	case qh.length == 0:
		resp.Body = http.NoBody
	}
	return resp
}

// cancel ends the exchange when the request's context ends.
func (pc *upstreamConn) cancel() {
	pc.mu.Lock()
	pc.canceled = true
	_ = pc.conn.SetReadDeadline(aLongTimeAgo)
	pc.mu.Unlock()
}

// deadline sets the read deadline unless the request's context has ended.
func (pc *upstreamConn) deadline(t time.Time) {
	pc.mu.Lock()
	if !pc.canceled {
		_ = pc.conn.SetReadDeadline(t)
	}
	pc.mu.Unlock()
}

func (pc *upstreamConn) isCanceled() bool {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return pc.canceled
}

// errHeaderTimeout is the wait for response headers running out: a
// timeout (net.Error), as http.Transport's.
type errHeaderTimeout struct{}

func (errHeaderTimeout) Error() string   { return "net/http: timeout awaiting response headers" }
func (errHeaderTimeout) Timeout() bool   { return true }
func (errHeaderTimeout) Temporary() bool { return true }

// upstreamBody is a response's body: at its end the connection goes back
// to the pool; closed before its end, the connection is closed.
type upstreamBody struct {
	rc io.ReadCloser // nil: the body is the next left bytes of the connection's buffer
	// left is what remains of a body read from the buffer.
	left int64
	pc   *upstreamConn
	t    *upstreamTransport
	stop func() bool
	keep bool
	done bool
}

func (b *upstreamBody) Read(p []byte) (int, error) {
	if b.done {
		return 0, io.EOF
	}
	if b.rc == nil {
		return b.readLength(p)
	}
	n, err := b.rc.Read(p)
	if err != nil {
		b.finish(err == io.EOF)
	}
	return n, err
}

// readLength reads the rest of a body of known length from the
// connection's buffer, and gives io.EOF with its last bytes.
func (b *upstreamBody) readLength(p []byte) (int, error) {
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.pc.br.Read(p)
	b.left -= int64(n)
	if b.left == 0 {
		b.finish(true)
		return n, io.EOF
	}
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		b.finish(false)
	}
	return n, err
}

func (b *upstreamBody) Close() error {
	if !b.done {
		_ = b.pc.conn.Close() // net/http's body would read the rest first
		if b.rc != nil {
			_ = b.rc.Close()
		}
		b.finish(false)
	}
	return nil
}

// finish ends the exchange: the connection goes back to the pool when
// the body was read to its end, nothing follows it, and the request's
// context has not ended; else it is closed.
func (b *upstreamBody) finish(ok bool) {
	b.done = true
	if b.stop() && ok && b.keep && b.pc.br.Buffered() == 0 {
		b.t.pool.put(b.pc)
		return
	}
	_ = b.pc.conn.Close()
}

// connPool holds idle upstream connections per address, the most recent
// first out; a timer closes those idle for longer than timeout.
type connPool struct {
	maxPerHost, max int
	timeout         time.Duration

	mu    sync.Mutex
	idle  map[string][]*upstreamConn
	n     int
	sweep *time.Timer
}

// get returns an idle connection to addr that has not been idle too
// long, or nil.
func (p *connPool) get(addr string) *upstreamConn {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.idle[addr]
	for len(l) > 0 {
		pc := l[len(l)-1]
		l[len(l)-1] = nil
		l = l[:len(l)-1]
		p.idle[addr] = l
		p.n--
		if time.Since(pc.idleSince) < p.timeout {
			return pc
		}
		_ = pc.conn.Close() // idle too long; the sweep had not come yet
	}
	return nil
}

// put keeps pc for reuse, or closes it when the pool is full.
func (p *connPool) put(pc *upstreamConn) {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.idle == nil {
		p.idle = map[string][]*upstreamConn{}
	}
	l := p.idle[pc.addr]
	if len(l) >= p.maxPerHost || p.n >= p.max {
		_ = pc.conn.Close()
		return
	}
	pc.idleSince = now
	p.idle[pc.addr] = append(l, pc)
	p.n++
	if p.sweep == nil {
		p.sweep = time.AfterFunc(p.timeout, p.expire)
	}
}

// expire closes the connections idle for longer than the timeout, and
// comes back while any remain.
func (p *connPool) expire() {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sweep = nil
	for addr, l := range p.idle {
		k := 0
		for k < len(l) && now.Sub(l[k].idleSince) >= p.timeout {
			_ = l[k].conn.Close()
			k++
		}
		if k == len(l) {
			delete(p.idle, addr)
		} else if k > 0 {
			p.idle[addr] = append(l[:0], l[k:]...)
		}
		p.n -= k
	}
	if p.n > 0 {
		p.sweep = time.AfterFunc(p.timeout/2, p.expire)
	}
}
