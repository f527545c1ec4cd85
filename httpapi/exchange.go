package httpapi

import (
	"net/http"
	"time"

	"github.com/edgeplane/edgeplane"
)

// exchange is one request's state from ServeHTTP to its answer, in one
// allocation: the ResponseWriter the routes answer through (recording the
// status for the request log, and closing the connection after a response
// to a request whose body was not read to the end), the operation id, and
// the principal, set before the route runs and never changed after. It
// reaches the routes as the ResponseWriter the mux hands them (see
// [exchangeOf]), not in the request's context: that would copy the request
// (WithContext) and add a context to every request.
type exchange struct {
	http.ResponseWriter
	status int
	opID   string
	p      edgeplane.Principal
	// unread is whether the request has an HTTP/1 body not read to its
	// end; decodeBody, the only reader of bodies, clears it at the end.
	unread bool
	// vals holds the values of the headers set with setHeader (see
	// there), indexed by the hdr constants.
	vals [hdrCount]string
}

// Canonical names of headers read or set on every request, for
// headerValue and setHeader (which take them as they are).
const (
	headerOrigin        = "Origin"
	headerAuthorization = "Authorization"
	headerContentType   = "Content-Type"
	headerContentLength = "Content-Length"
)

// headerValue returns h.Get(key) for a key in canonical form (the
// header names above, HeaderVersion): the map lookup Get makes, without
// canonicalising the key first.
func headerValue(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// Indexes in exchange.vals.
const (
	hdrOperationID = iota
	hdrContentType
	hdrContentLength
	hdrCount
)

// setHeader sets the response header key (canonical) to the one value v,
// as Header().Set does, without allocating a slice for it: the value's
// slice is c.vals[i:i+1] with a capacity of 1, so that an Add to the key
// appends to a copy, never into the next value. The slice is this
// response's alone (an exchange is never reused), so no other response sees
// anything done to it; and net/http snapshots the header when the status
// is written (response.WriteHeader, and Header after it, store
// handlerHeader.Clone(), which copies every value slice; http2 and
// httptest.ResponseRecorder clone likewise), so a value set again after
// that (it never is) would not change what was sent.
func (c *exchange) setHeader(i int, key, v string) {
	c.vals[i] = v
	c.ResponseWriter.Header()[key] = c.vals[i : i+1 : i+1]
}

// exchangeOf returns the exchange of a ResponseWriter ServeHTTP handed to
// the mux: the exchange itself. Anything else (the mux is never served but
// by ServeHTTP) gets an exchange of its own, without operation id or
// principal.
func exchangeOf(w http.ResponseWriter) *exchange {
	if c, ok := w.(*exchange); ok {
		return c
	}
	return &exchange{ResponseWriter: w}
}

func (c *exchange) WriteHeader(code int) {
	if c.status == 0 {
		c.status = code
		if c.unread {
			// net/http would read up to 256 KiB of the unread body
			// before sending this response and again when the handler
			// returns (a client trickling it would hold the answer
			// back, then the connection). Closing the connection
			// answers at once; a read deadline in the past makes the
			// second read fail at once, so the connection is closed
			// with the body unread.
			c.Header().Set("Connection", "close")
			http.NewResponseController(c.ResponseWriter).SetReadDeadline(longAgo) // unsupported: the host's ReadTimeout bounds the read
		}
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *exchange) Write(b []byte) (int, error) {
	if c.status == 0 {
		c.WriteHeader(http.StatusOK)
	}
	return c.ResponseWriter.Write(b)
}

// longAgo is a deadline that has passed.
var longAgo = time.Unix(1, 0)
