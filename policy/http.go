package policy

import (
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"time"

	"github.com/edgeplane/edgeplane/policy/limits"
)

// RequestFromHTTP returns the [Request] of an incoming net/http server
// request. The client address comes from r.RemoteAddr (the socket, never a
// forwarding header), the server address from the request context's
// [http.LocalAddrContextKey]. now is the evaluation time; zero means the
// Engine's clock. Conn.Start stays zero: net/http does not expose it.
func RequestFromHTTP(r *http.Request, now time.Time) Request {
	var client netip.AddrPort
	if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
		client = ap
	}
	return RequestFromHTTPWithClient(r, client, now)
}

// RequestFromHTTPWithClient is [RequestFromHTTP] with the client address
// given rather than parsed from r.RemoteAddr: for a host that works it out
// itself, such as a proxy that believes X-Forwarded-For from trusted peers,
// or that has parsed r.RemoteAddr already.
func RequestFromHTTPWithClient(r *http.Request, client netip.AddrPort, now time.Time) Request {
	req := Request{
		Method:        r.Method,
		Host:          r.Host,
		Path:          r.URL.Path,
		RawPath:       r.URL.RawPath,
		RawQuery:      r.URL.RawQuery,
		Header:        r.Header,
		ContentLength: r.ContentLength,
		Proto:         r.Proto,
		Time:          now,
		Scheme:        "http",
	}
	req.Conn.ClientAddr = client
	if r.TLS != nil {
		req.Scheme = "https"
		req.Conn.TLS = &TLSInfo{ServerName: r.TLS.ServerName, Version: r.TLS.Version, CipherSuite: r.TLS.CipherSuite,
			NegotiatedProtocol: r.TLS.NegotiatedProtocol}
		if len(r.TLS.PeerCertificates) > 0 {
			req.Conn.TLS.ClientCertificate = r.TLS.PeerCertificates[0]
		}
	}
	switch la := r.Context().Value(http.LocalAddrContextKey).(type) {
	case *net.TCPAddr:
		// What net/http's server stores: read it without formatting and
		// re-parsing, unmapped as its text would parse.
		ap := la.AddrPort()
		req.Conn.ServerAddr = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	case net.Addr:
		if ap, err := netip.ParseAddrPort(la.String()); err == nil {
			req.Conn.ServerAddr = ap
		}
	}
	return req
}

// ApplyHTTP applies an inbound result. With Respond it writes the response
// to w and returns true; with Close it closes the connection (or, where
// that is impossible, as on HTTP/2, answers 403) and returns true; with
// Continue (and Forward) it applies the header edits and URL rewrite to
// r, sets the result's ResponseHeader on w (so that the upstream's
// response carries them) and returns false, and the host forwards r (to
// the internal endpoint of Result.ForwardURL, with Forward).
func (res *Result) ApplyHTTP(w http.ResponseWriter, r *http.Request) bool {
	switch res.Verdict {
	case Respond:
		writeResponse(w, res)
		return true
	case Close:
		closeConn(w)
		return true
	}
	setHeaders(w.Header(), res.ResponseHeader)
	applyEdits(r.Header, res.HeaderEdits)
	if res.RewriteURI != "" {
		if u, err := url.ParseRequestURI(res.RewriteURI); err == nil {
			r.URL.Path, r.URL.RawPath, r.URL.RawQuery = u.Path, u.RawPath, u.RawQuery
			r.RequestURI = res.RewriteURI
		}
	}
	return false
}

func writeResponse(w http.ResponseWriter, res *Result) {
	h := w.Header()
	setHeaders(h, res.ResponseHeader)
	setHeaders(h, res.Header)
	w.WriteHeader(res.StatusCode)
	if res.Body != "" {
		_, _ = w.Write([]byte(res.Body))
	}
}

// setHeaders sets every header of src in dst, replacing dst's values.
func setHeaders(dst, src http.Header) {
	for k, v := range src {
		dst[http.CanonicalHeaderKey(k)] = append([]string(nil), v...)
	}
}

func closeConn(w http.ResponseWriter) {
	if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
		_ = conn.Close()
		return
	}
	w.WriteHeader(http.StatusForbidden)
}

func applyEdits(h http.Header, edits []HeaderEdit) {
	for _, e := range edits {
		if e.Remove {
			h.Del(e.Name)
			for k := range h { // non-canonical spellings too
				if asciiLowerEq(k, asciiLower(e.Name)) {
					delete(h, k)
				}
			}
			continue
		}
		h.Add(e.Name, e.Value)
	}
}

// Handler returns net/http middleware that runs p around next: the inbound
// rules before next (answering directly when they decide so), and the
// outbound rules when next writes its response header (replacing the
// response, or editing its headers). It uses the Engine's clock.
//
// A request beyond the bounds the cost model assumes is refused before any
// rule runs, whatever the server's own limits: 414 URI Too Long when its
// request target is longer than limits.MaxURLBytes, 431 Request Header Fields Too
// Large when its request line and header lines (as sent on HTTP/1.1) are
// longer than limits.MaxRequestHeaderBytes.
func (p *Policy) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if code := requestBounds(r); code != 0 {
			http.Error(w, http.StatusText(code), code)
			return
		}
		req := RequestFromHTTP(r, time.Time{})
		in := p.Inbound(&req)
		if in.ApplyHTTP(w, r) {
			return
		}
		if len(p.out.rules) == 0 {
			next.ServeHTTP(w, r)
			return
		}
		req = RequestFromHTTP(r, time.Time{}) // after header edits and rewrite
		pw := &outboundWriter{ResponseWriter: w, p: p, req: &req, in: &in}
		next.ServeHTTP(pw, r)
		if !pw.wroteHeader {
			pw.WriteHeader(http.StatusOK)
		}
	})
}

// requestBounds returns 414 when r's request target is longer than
// limits.MaxURLBytes, 431 when its request line and header lines are longer than
// limits.MaxRequestHeaderBytes, and 0 otherwise.
func requestBounds(r *http.Request) int {
	target := len(r.RequestURI)
	if target == 0 { // not a server request: its target as it would be sent
		target = len(r.URL.EscapedPath()) + len(r.URL.RawQuery) + 1
	}
	if target > limits.MaxURLBytes {
		return http.StatusRequestURITooLong
	}
	n := len(r.Method) + 1 + target + 1 + len(r.Proto) + len("\r\nHost: \r\n") + len(r.Host)
	for k, vs := range r.Header {
		for _, v := range vs {
			n += len(k) + len(": \r\n") + len(v)
		}
	}
	if n > limits.MaxRequestHeaderBytes {
		return http.StatusRequestHeaderFieldsTooLarge
	}
	return 0
}

// outboundWriter evaluates the outbound rules when the handler writes its
// response header.
type outboundWriter struct {
	http.ResponseWriter
	p           *Policy
	req         *Request
	in          *Result
	wroteHeader bool
	discard     bool
}

func (w *outboundWriter) WriteHeader(code int) {
	if w.wroteHeader {
		return
	}
	if code >= 100 && code < 200 {
		w.ResponseWriter.WriteHeader(code) // informational: pass through
		return
	}
	w.wroteHeader = true
	res := w.p.Outbound(w.req, &Response{StatusCode: code, Header: w.Header()}, w.in)
	switch res.Verdict {
	case Respond:
		w.discard = true
		clear(w.Header())
		writeResponse(w.ResponseWriter, &res)
	case Close:
		w.discard = true
		closeConn(w.ResponseWriter)
	default:
		applyEdits(w.Header(), res.HeaderEdits)
		w.ResponseWriter.WriteHeader(code)
	}
}

func (w *outboundWriter) Write(b []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if w.discard {
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *outboundWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
