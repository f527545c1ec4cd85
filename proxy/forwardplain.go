package proxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/textproto"
	"reflect"
	"strings"
)

// The direct path: a request the default transport carries itself
// (upstreamTransport.carries: no body, no Expect, no Upgrade, a plain-HTTP
// upstream) to a tunnel that is not an agent's is forwarded by forward
// instead of httputil.ReverseProxy, with the same result on the wire and
// for the pipeline: the request line and headers ReverseProxy's Rewrite
// (h.rewrite) would send, written straight from the client's request
// without copying it or its header map; the response read as the
// transport reads it, its hop-by-hop headers removed, the outbound rules
// and the response headers module applied (h.modify), its headers moved
// into the client's header map without copying their values, and its body
// relayed with a pooled buffer, flushed after each write when
// ReverseProxy would flush (a stream of events, or a body of unknown
// length), trailers included. Errors go to h.upstreamFailed as
// ReverseProxy's ErrorHandler; a failed relay of the body aborts the
// client's connection (http.ErrAbortHandler) as ReverseProxy does.
//
// A request whose query ReverseProxy would rewrite (a ';' or a malformed
// escape: it re-encodes such queries) or a tunnel URL with a path or
// query of its own (which ReverseProxy joins with the request's) keep
// the ReverseProxy path.

// forward serves r by the direct path and reports true, or reports false
// without having done anything when r needs ReverseProxy.
func (h *Handler) forward(rw *responseWriter, r *http.Request, ex *exchange) bool {
	u := ex.upstream.url
	if u.Scheme != "http" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Opaque != "" ||
		r.ContentLength != 0 || (r.Body != nil && r.Body != http.NoBody) || !h.plain.plain ||
		r.Header["Expect"] != nil || r.Header["Upgrade"] != nil || r.Method == http.MethodConnect ||
		!strings.HasPrefix(r.URL.Path, "/") || !queryClean(r.URL.RawQuery) {
		return false
	}
	ctx := r.Context()
	w := upstreamRequest{r: r, forwarded: ex.forwarded}
	dst := rw.Header()
	resp, err := h.plain.do(ctx, upstreamAddr(u), r, w.write, func(code int, hd http.Header) error {
		moveHeader(dst, hd)
		rw.WriteHeader(code)
		clear(dst) // WriteHeader does not clear them for 1xx
		return nil
	}, dst)
	if err != nil {
		h.upstreamFailed(ctx, rw, ex, err)
		return true
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		_ = resp.Body.Close()
		h.upstreamFailed(ctx, rw, ex, fmt.Errorf("backend tried to switch protocol %q when %q was requested", resp.Header.Get("Upgrade"), ""))
		return true
	}
	removeHopHeaders(resp.Header)
	if err := h.modify(ex, resp); err != nil {
		_ = resp.Body.Close()
		clear(dst)
		h.upstreamFailed(ctx, rw, ex, err)
		return true
	}
	if !sameHeader(resp.Header, dst) { // read by http.ReadResponse, or replaced by an outbound rule
		clear(dst)
		moveHeader(dst, resp.Header)
	}
	announced := len(resp.Trailer)
	if announced > 0 {
		keys := make([]string, 0, announced)
		for k := range resp.Trailer {
			keys = append(keys, k)
		}
		dst.Add("Trailer", strings.Join(keys, ", "))
	}
	rw.WriteHeader(resp.StatusCode)
	if err := h.relayBody(rw, resp); err != nil {
		_ = resp.Body.Close()
		if ctx.Value(http.ServerContextKey) != nil {
			panic(http.ErrAbortHandler) // as ReverseProxy: the client sees the response cut off
		}
		return true
	}
	_ = resp.Body.Close() // now: it fills resp.Trailer
	if len(resp.Trailer) > 0 {
		_ = rw.FlushError() // force chunking, as ReverseProxy does
	}
	if len(resp.Trailer) == announced {
		moveHeader(dst, resp.Trailer)
		return true
	}
	for k, vv := range resp.Trailer {
		for _, v := range vv {
			dst.Add(http.TrailerPrefix+k, v)
		}
	}
	return true
}

// relayBody copies resp's body to rw with a pooled buffer, flushing after
// each write where ReverseProxy would (a stream of events, or a body of
// unknown length).
func (h *Handler) relayBody(rw *responseWriter, resp *http.Response) error {
	flush := resp.ContentLength == -1
	if ct := resp.Header.Get("Content-Type"); !flush && mentionsEventStream(ct) {
		base, _, _ := mime.ParseMediaType(ct)
		flush = base == "text/event-stream"
	}
	bp := buffers.Get().(*[]byte)
	defer buffers.Put(bp)
	buf := *bp
	for {
		nr, rerr := resp.Body.Read(buf)
		if rerr != nil && rerr != io.EOF && !errors.Is(rerr, context.Canceled) {
			h.log.Warn("httputil: ReverseProxy read error during body copy: " + rerr.Error())
		}
		if nr > 0 {
			nw, werr := rw.Write(buf[:nr])
			if werr != nil {
				return werr
			}
			if nw != nr {
				return io.ErrShortWrite
			}
			if flush {
				_ = rw.FlushError()
			}
		}
		if rerr != nil {
			if rerr == io.EOF {
				return nil
			}
			return rerr
		}
	}
}

// sameHeader says whether a and b are the same map.
func sameHeader(a, b http.Header) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// mentionsEventStream says whether ct holds "text/event-stream" in any
// case: only then is it parsed (mime.ParseMediaType allocates).
func mentionsEventStream(ct string) bool {
	const es = "text/event-stream"
	for i := 0; i+len(es) <= len(ct); i++ {
		if strings.EqualFold(ct[i:i+len(es)], es) {
			return true
		}
	}
	return false
}

// moveHeader adds src's fields to dst, sharing their value slices (src
// is not used after).
func moveHeader(dst, src http.Header) {
	for k, vv := range src {
		if old, ok := dst[k]; ok {
			dst[k] = append(old, vv...)
		} else {
			dst[k] = vv
		}
	}
}

// hopHeaders are the hop-by-hop fields (RFC 9110, 7.6.1), as
// ReverseProxy removes them.
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// removeHopHeaders removes the hop-by-hop fields of hd, and those its
// Connection field names.
func removeHopHeaders(hd http.Header) {
	for _, f := range hd["Connection"] {
		for sf := range strings.SplitSeq(f, ",") {
			if sf = textproto.TrimString(sf); sf != "" {
				hd.Del(sf)
			}
		}
	}
	for _, f := range hopHeaders {
		delete(hd, f)
	}
}

// queryClean says whether ReverseProxy would send q as it is: no ';' and
// no malformed escape (it re-encodes those).
func queryClean(q string) bool {
	for i := 0; i < len(q); {
		switch q[i] {
		case ';':
			return false
		case '%':
			if i+2 >= len(q) || !isHex(q[i+1]) || !isHex(q[i+2]) {
				return false
			}
			i += 3
		default:
			i++
		}
	}
	return true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// upstreamRequest writes a client's request as ReverseProxy with the
// Handler's rewrite sends it to a plain-HTTP upstream without a path:
// the method and the request URI as received; Host as received; the
// client's fields but the hop-by-hop ones (and those Connection names),
// Host, Content-Length, Forwarded and X-Forwarded-*; "Te: trailers" when
// the client's Te asked for trailers; the first User-Agent, when not
// empty; X-Forwarded-For (the client's chain first when forwarded, from
// a trusted proxy), X-Forwarded-Host and X-Forwarded-Proto; and
// "Content-Length: 0" for POST, PUT and PATCH (they have no body here),
// as net/http writes it. A field name that is not a token, or a
// value with a control character, fails the request as http.Transport
// fails it (502) before the request is complete on the wire.
type upstreamRequest struct {
	r         *http.Request
	forwarded bool
}

// errHeaderField refuses a field http.Transport would not send.
var errHeaderField = errors.New("net/http: invalid header field")

// skipRequest are the fields of the client's request not copied as they
// are.
var skipRequest = map[string]bool{
	"Connection": true, "Proxy-Connection": true, "Keep-Alive": true, "Proxy-Authenticate": true, "Proxy-Authorization": true,
	"Te": true, "Trailer": true, "Transfer-Encoding": true, "Upgrade": true,
	"Host": true, "User-Agent": true, "Content-Length": true,
	"Forwarded": true, "X-Forwarded-For": true, "X-Forwarded-Host": true, "X-Forwarded-Proto": true,
}

func (u upstreamRequest) write(w io.Writer) error {
	bw := w.(*bufio.Writer)
	r := u.r
	_, _ = bw.WriteString(r.Method)
	_ = bw.WriteByte(' ')
	_, _ = bw.WriteString(r.URL.EscapedPath())
	if r.URL.ForceQuery || r.URL.RawQuery != "" {
		_ = bw.WriteByte('?')
		_, _ = bw.WriteString(r.URL.RawQuery)
	}
	_, _ = bw.WriteString(" HTTP/1.1\r\nHost: ")
	_, _ = bw.WriteString(r.Host)
	_, _ = bw.WriteString("\r\n")
	if ua := r.Header["User-Agent"]; len(ua) > 0 && textproto.TrimString(ua[0]) != "" {
		if err := writeField(bw, "User-Agent", ua[0]); err != nil {
			return err
		}
	}
	conn := r.Header["Connection"]
	for k, vv := range r.Header {
		if skipRequest[k] || (conn != nil && namedIn(conn, k)) {
			continue
		}
		for _, v := range vv {
			if err := writeField(bw, k, v); err != nil {
				return err
			}
		}
	}
	if containsToken(r.Header["Te"], "trailers") {
		_, _ = bw.WriteString("Te: trailers\r\n")
	}
	if ip, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		if !validValue(ip) {
			return errHeaderField
		}
		_, _ = bw.WriteString("X-Forwarded-For: ")
		if prior := r.Header["X-Forwarded-For"]; u.forwarded && len(prior) > 0 {
			for _, p := range prior {
				if !validValue(p) {
					return errHeaderField
				}
				_, _ = bw.WriteString(p)
				_, _ = bw.WriteString(", ")
			}
		}
		_, _ = bw.WriteString(ip)
		_, _ = bw.WriteString("\r\n")
	}
	_, _ = bw.WriteString("X-Forwarded-Host: ")
	_, _ = bw.WriteString(r.Host)
	if r.TLS != nil {
		_, _ = bw.WriteString("\r\nX-Forwarded-Proto: https\r\n")
	} else {
		_, _ = bw.WriteString("\r\nX-Forwarded-Proto: http\r\n")
	}
	if r.Method == http.MethodPost || r.Method == http.MethodPut || r.Method == http.MethodPatch {
		_, _ = bw.WriteString("Content-Length: 0\r\n")
	}
	_, err := bw.WriteString("\r\n")
	return err
}

// writeField writes "name: value\r\n", the value trimmed as net/http
// trims it, or fails when name is not a token or value has a control
// character.
func writeField(bw *bufio.Writer, name, value string) error {
	if !validName(name) || !validValue(value) {
		return errHeaderField
	}
	_, _ = bw.WriteString(name)
	_, _ = bw.WriteString(": ")
	_, _ = bw.WriteString(textproto.TrimString(value))
	_, err := bw.WriteString("\r\n")
	return err
}

// namedIn says whether the Connection field values conn name the field
// k (case-insensitively).
func namedIn(conn []string, k string) bool {
	for _, f := range conn {
		for sf := range strings.SplitSeq(f, ",") {
			if strings.EqualFold(textproto.TrimString(sf), k) {
				return true
			}
		}
	}
	return false
}

// containsToken says whether the comma-separated values vv hold token
// (case-insensitively).
func containsToken(vv []string, token string) bool {
	return namedIn(vv, token)
}

// validName says whether s is a token (RFC 9110, 5.6.2).
func validName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x80 || !tchar[c] {
			return false
		}
	}
	return true
}

// validValue says whether s has no control character but tab, as
// net/http checks a field's value.
func validValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// tchar are the bytes of a token.
var tchar = func() (t [128]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
		t[c-'a'+'A'] = true
	}
	for _, c := range "!#$%&'*+-.^_`|~" {
		t[c] = true
	}
	return t
}()
