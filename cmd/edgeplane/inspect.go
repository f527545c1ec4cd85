package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// The inspector: the HTTP requests an agent forwards to the upstream of
// an http endpoint, captured for the agent API (GET /api/requests/http)
// and its web page (/inspect/http), as the original agent's inspector.
//
// Capture is passive: the bytes of each direction of a connection are
// copied to their destination first, and then to a parser through a
// pipe, so what reaches the upstream and the client is exactly what was
// sent, in the same writes. The parser keeps a bounded prefix of each
// body (64 KiB, with a truncated flag and the full size) and discards
// the rest; it never holds a whole body. A parser that cannot follow
// the connection (not HTTP/1.x, a request pipelined too far ahead) stops
// parsing, and the connection goes on uncaptured. After a request that
// asks for an Upgrade (websockets) or a CONNECT, the exchange is captured
// as headers (the 101 response, or the refusal) and the rest of the
// connection is passed through uncaptured.
//
// The captures are kept in memory only: the last 100 of each endpoint,
// and at most 32 MiB in all (headers, URIs and bodies counted), the
// oldest dropped first.

// Bounds of the inspector; inspectLimits' zero values mean these.
const (
	inspectBodyMax   = 64 << 10 // bytes of a body kept, each way
	inspectPerTunnel = 100      // captures kept per endpoint
	inspectMaxBytes  = 32 << 20 // bytes kept in all
	// inspectPipeline bounds requests parsed ahead of their responses;
	// past it the connection is no longer captured.
	inspectPipeline = 32
)

// inspectLimits are an inspector's bounds; a zero field is the default.
type inspectLimits struct {
	body      int   // inspectBodyMax
	perTunnel int   // inspectPerTunnel
	bytes     int64 // inspectMaxBytes
}

// inspector keeps the captured requests. Its methods are safe for
// concurrent use; a nil *inspector captures nothing.
type inspector struct {
	limits inspectLimits
	now    func() time.Time
	prefix string // the IDs' random part: they are not reused across runs

	mu        sync.Mutex
	seq       uint64
	list      []*capture // oldest first
	bytes     int64
	perTunnel map[string]int
}

// newInspector returns an empty inspector with limits (zero fields: the
// defaults) and clock now (nil: time.Now).
func newInspector(limits inspectLimits, now func() time.Time) *inspector {
	if limits.body == 0 {
		limits.body = inspectBodyMax
	}
	if limits.perTunnel == 0 {
		limits.perTunnel = inspectPerTunnel
	}
	if limits.bytes == 0 {
		limits.bytes = inspectMaxBytes
	}
	if now == nil {
		now = time.Now
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return &inspector{limits: limits, now: now, prefix: hex.EncodeToString(b[:]), perTunnel: map[string]int{}}
}

// capture is one request and its response. It is not changed once
// added to the inspector.
type capture struct {
	id         string
	tunnel     string
	target     agentTarget // the upstream it went to, where a replay goes
	remoteAddr string
	start      time.Time
	duration   time.Duration
	req        capturedRequest
	resp       *capturedResponse // nil: the connection ended first
}

// capturedRequest is a request as parsed, its headers as sent (Host
// and Transfer-Encoding included).
type capturedRequest struct {
	method, uri, proto string
	header             http.Header
	body               capturedBody
}

type capturedResponse struct {
	status string // "200 OK"
	code   int
	proto  string
	header http.Header
	body   capturedBody
}

// capturedBody is a body's first bytes and its size.
type capturedBody struct {
	data      []byte
	size      int64 // the whole body's, decoded from chunks
	truncated bool  // size > len(data)
}

// size is what c counts against the inspector's byte bound.
func (c *capture) size() int64 {
	n := int64(len(c.req.method)+len(c.req.uri)+len(c.remoteAddr)) + headerSize(c.req.header) + int64(len(c.req.body.data))
	if c.resp != nil {
		n += int64(len(c.resp.status)) + headerSize(c.resp.header) + int64(len(c.resp.body.data))
	}
	return n
}

func headerSize(h http.Header) int64 {
	var n int64
	for k, vs := range h {
		for _, v := range vs {
			n += int64(len(k) + len(v) + 4)
		}
	}
	return n
}

// add keeps c, giving it its ID, and drops the oldest captures of its
// endpoint past the per-endpoint bound, then the oldest of all past the
// byte bound.
func (ins *inspector) add(c *capture) {
	ins.mu.Lock()
	defer ins.mu.Unlock()
	ins.seq++
	c.id = fmt.Sprintf("%s%08x", ins.prefix, ins.seq)
	ins.list = append(ins.list, c)
	ins.bytes += c.size()
	ins.perTunnel[c.tunnel]++
	if ins.perTunnel[c.tunnel] > ins.limits.perTunnel {
		for i, old := range ins.list {
			if old.tunnel == c.tunnel {
				ins.remove(i)
				break
			}
		}
	}
	for ins.bytes > ins.limits.bytes && len(ins.list) > 0 {
		ins.remove(0)
	}
}

// remove drops the i'th capture; ins.mu is held.
func (ins *inspector) remove(i int) {
	old := ins.list[i]
	ins.list = append(ins.list[:i], ins.list[i+1:]...)
	ins.bytes -= old.size()
	if ins.perTunnel[old.tunnel]--; ins.perTunnel[old.tunnel] == 0 {
		delete(ins.perTunnel, old.tunnel)
	}
}

// captures returns at most limit captures (0: all), newest first, of
// tunnel ("": every endpoint's).
func (ins *inspector) captures(tunnel string, limit int) []*capture {
	ins.mu.Lock()
	defer ins.mu.Unlock()
	var out []*capture
	for i := len(ins.list) - 1; i >= 0 && (limit <= 0 || len(out) < limit); i-- {
		if c := ins.list[i]; tunnel == "" || c.tunnel == tunnel {
			out = append(out, c)
		}
	}
	return out
}

// get returns the capture of id, or nil.
func (ins *inspector) get(id string) *capture {
	ins.mu.Lock()
	defer ins.mu.Unlock()
	for _, c := range ins.list {
		if c.id == id {
			return c
		}
	}
	return nil
}

// clear drops every capture.
func (ins *inspector) clear() {
	ins.mu.Lock()
	ins.list, ins.bytes, ins.perTunnel = nil, 0, map[string]int{}
	ins.mu.Unlock()
}

// connTap parses the two directions of one HTTP connection, which the
// caller copies to req (client to upstream) and resp (upstream to
// client) after their destinations, and closes when they end.
type connTap struct {
	req, resp *io.PipeWriter
	done      chan struct{} // closed once both parsers are done and their captures added
}

// tap starts the parsers of a connection of tunnel from remoteAddr to
// target; nil when ins is nil.
func (ins *inspector) tap(tunnel, remoteAddr string, target agentTarget) *connTap {
	if ins == nil {
		return nil
	}
	reqR, reqW := io.Pipe()
	respR, respW := io.Pipe()
	t := &connTap{req: reqW, resp: respW, done: make(chan struct{})}
	exchanges := make(chan *exchange, inspectPipeline)
	var commits sync.WaitGroup
	reqsDone := make(chan struct{})
	go func() {
		defer close(reqsDone)
		ins.parseRequests(reqR, exchanges, tunnel, remoteAddr, target)
	}()
	go func() {
		ins.parseResponses(respR, exchanges, &commits)
		<-reqsDone
		commits.Wait()
		close(t.done)
	}()
	return t
}

// exchange is a capture being made.
type exchange struct {
	c       *capture
	method  string        // for ReadResponse: a HEAD's response has no body
	reqDone chan struct{} // closed once the request's body is read
	upgrade bool          // the last request parsed: an Upgrade or CONNECT
}

// parseRequests parses requests from r until its end or the first that
// cannot be parsed, and hands each to the response parser once its
// headers are read. It closes out when it stops, and r with it (so that
// the copy no longer writes to it).
func (ins *inspector) parseRequests(r *io.PipeReader, out chan<- *exchange, tunnel, remoteAddr string, target agentTarget) {
	defer close(out)
	defer r.CloseWithError(errCaptureStopped)
	br := bufio.NewReader(r)
	for {
		req, err := http.ReadRequest(br)
		if err != nil || req.ProtoMajor != 1 {
			return // not HTTP/1.x (an HTTP/2 preface parses as a request "PRI *")
		}
		h := req.Header.Clone()
		if h.Get("Host") == "" && req.Host != "" {
			h.Set("Host", req.Host)
		}
		if len(req.TransferEncoding) > 0 {
			h["Transfer-Encoding"] = req.TransferEncoding
		}
		ex := &exchange{
			c: &capture{tunnel: tunnel, target: target, remoteAddr: remoteAddr, start: ins.now(),
				req: capturedRequest{method: req.Method, uri: req.RequestURI, proto: req.Proto, header: h}},
			method:  req.Method,
			reqDone: make(chan struct{}),
			upgrade: req.Method == http.MethodConnect || headerHasToken(req.Header, "Connection", "upgrade"),
		}
		select {
		case out <- ex:
		default: // too far ahead of the responses
			return
		}
		body, err := readCaptured(req.Body, ins.limits.body)
		ex.c.req.body = body
		close(ex.reqDone)
		if err != nil || ex.upgrade {
			return // what follows an Upgrade is not HTTP
		}
	}
}

// parseResponses parses the response of each exchange from r, and adds
// each capture once both its bodies are read. An exchange whose response
// does not come (the connection ended) is added without one.
func (ins *inspector) parseResponses(r *io.PipeReader, exchanges <-chan *exchange, commits *sync.WaitGroup) {
	defer r.CloseWithError(errCaptureStopped)
	commit := func(ex *exchange) {
		commits.Add(1)
		go func() {
			defer commits.Done()
			<-ex.reqDone
			ex.c.duration = ins.now().Sub(ex.c.start)
			ins.add(ex.c)
		}()
	}
	br := bufio.NewReader(r)
	// rest adds the exchanges left without a response, once the request
	// parser has stopped.
	rest := func() {
		r.CloseWithError(errCaptureStopped)
		for ex := range exchanges {
			commit(ex)
		}
	}
	for {
		// Bytes first, then their request: a few bytes the upstream sends
		// on its own (a 408 on an idle connection) wait in br, and do
		// not hold up the copy to the client.
		if _, err := br.Peek(1); err != nil {
			rest()
			return
		}
		ex, ok := <-exchanges
		if !ok {
			return // the request parser stopped: nothing more to pair
		}
		var resp *http.Response
		var err error
		for {
			resp, err = http.ReadResponse(br, &http.Request{Method: ex.method})
			// A provisional response (100 Continue) is not the answer,
			// 101 Switching Protocols is.
			if err != nil || resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
				break
			}
		}
		if err != nil {
			commit(ex)
			rest()
			return
		}
		h := resp.Header.Clone()
		if len(resp.TransferEncoding) > 0 {
			h["Transfer-Encoding"] = resp.TransferEncoding
		}
		cr := &capturedResponse{status: resp.Status, code: resp.StatusCode, proto: resp.Proto, header: h}
		if resp.StatusCode != http.StatusSwitchingProtocols {
			cr.body, err = readCaptured(resp.Body, ins.limits.body)
		}
		ex.c.resp = cr
		commit(ex)
		if err != nil || ex.upgrade || resp.StatusCode == http.StatusSwitchingProtocols {
			rest() // what follows is not HTTP
			return
		}
	}
}

// errCaptureStopped ends a tap's pipe when its parser stops.
var errCaptureStopped = fmt.Errorf("capture stopped")

// readCaptured reads r to its end, keeping its first max bytes.
func readCaptured(r io.Reader, max int) (capturedBody, error) {
	var buf bytes.Buffer
	n, err := io.Copy(&buf, io.LimitReader(r, int64(max)))
	b := capturedBody{data: buf.Bytes(), size: n}
	if err == nil && n == int64(max) {
		var m int64
		m, err = io.Copy(io.Discard, r)
		b.size += m
		b.truncated = m > 0
	}
	if len(b.data) == 0 {
		b.data = nil
	}
	return b, err
}

// headerHasToken says whether a comma-separated header of h lists token.
func headerHasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// tee writes to w, then the same bytes to tap until tap refuses them
// (its parser stopped). Its Write is w's: tap never fails it.
type tee struct {
	w   io.Writer
	tap *io.PipeWriter // nil: no longer captured
}

func (t *tee) Write(p []byte) (int, error) {
	n, err := t.w.Write(p)
	if n > 0 && t.tap != nil {
		if _, terr := t.tap.Write(p[:n]); terr != nil {
			t.tap = nil
		}
	}
	return n, err
}

// rawRequest returns the request's message as captured: the request
// line, the headers and the captured body.
func (r *capturedRequest) raw() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s %s\r\n", r.method, r.uri, r.proto)
	_ = r.header.Write(&b)
	b.WriteString("\r\n")
	b.Write(r.body.data)
	return b.Bytes()
}

// raw returns the response's message as captured.
func (r *capturedResponse) raw() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s\r\n", r.proto, r.status)
	_ = r.header.Write(&b)
	b.WriteString("\r\n")
	b.Write(r.body.data)
	return b.Bytes()
}
