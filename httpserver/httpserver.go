// Package httpserver builds the [http.Server] values that edgeplane's
// commands and examples start: every timeout set, and request bounds that
// agree with what the traffic policy engine's cost model assumes.
//
// A server from [New] refuses a request whose request line and headers
// exceed [limits.MaxRequestHeaderBytes] (net/http answers 431) and one
// whose request target exceeds [limits.MaxURLBytes] (414 URI Too Long,
// before the handler runs), so that no request string a policy reads is
// longer than the compile-time cost estimate assumed. It closes a
// connection that does not send its headers within ReadHeaderTimeout, its
// whole request within ReadTimeout, that is not answered within
// WriteTimeout, or that sits idle between requests for IdleTimeout. The
// zero [Options] gives the defaults below; hosts that run their own
// servers should set the same bounds.
//
// # Defaults
//
//	ReadHeaderTimeout  10s
//	ReadTimeout        60s
//	WriteTimeout       60s
//	IdleTimeout        120s
//	MaxHeaderBytes     limits.MaxRequestHeaderBytes (32 KiB)
//	MaxURLBytes        limits.MaxURLBytes (8 KiB)
package httpserver

import (
	"context"
	"log"
	"net/http"
	"time"

	"github.com/edgeplane/edgeplane/policy/limits"
)

// Defaults of [Options].
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 60 * time.Second
	DefaultWriteTimeout      = 60 * time.Second
	DefaultIdleTimeout       = 120 * time.Second
)

// Options configures [New]. Zero fields take the package defaults; a
// negative duration turns that timeout off (for a handler that streams
// without end, say), which a host should do only knowingly.
type Options struct {
	// ReadHeaderTimeout bounds reading the request line and headers.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading the whole request, body included.
	ReadTimeout time.Duration
	// WriteTimeout bounds the time from the end of the request headers to
	// the end of the response.
	WriteTimeout time.Duration
	// IdleTimeout bounds the wait for the next request on a kept-alive
	// connection.
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds the request line and headers together; larger
	// requests get 431. Values above limits.MaxRequestHeaderBytes are
	// lowered to it: the policy cost model assumes no more.
	MaxHeaderBytes int
	// MaxURLBytes bounds the request target; longer ones get 414. Values
	// above limits.MaxURLBytes are lowered to it.
	MaxURLBytes int
	// ErrorLog receives the server's own errors; nil means the log
	// package's standard logger, as in net/http.
	ErrorLog *log.Logger
}

// New returns a server for h with the bounds of o. The caller starts it
// (Serve, ServeTLS) and stops it (Shutdown) as with any [http.Server].
func New(h http.Handler, o Options) *http.Server {
	return &http.Server{
		Handler:           LimitURL(h, bound(o.MaxURLBytes, limits.MaxURLBytes)),
		ReadHeaderTimeout: timeout(o.ReadHeaderTimeout, DefaultReadHeaderTimeout),
		ReadTimeout:       timeout(o.ReadTimeout, DefaultReadTimeout),
		WriteTimeout:      timeout(o.WriteTimeout, DefaultWriteTimeout),
		IdleTimeout:       timeout(o.IdleTimeout, DefaultIdleTimeout),
		MaxHeaderBytes:    bound(o.MaxHeaderBytes, limits.MaxRequestHeaderBytes),
		ErrorLog:          o.ErrorLog,
	}
}

// LimitURL returns a handler that answers 414 URI Too Long, without
// calling h, to a request whose request target (path and query as sent)
// is longer than maxBytes bytes.
func LimitURL(h http.Handler, maxBytes int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		target := len(r.RequestURI)
		if target == 0 { // a request not read from a connection
			target = len(r.URL.RequestURI())
		}
		if target > maxBytes {
			w.Header().Set("Connection", "close")
			http.Error(w, "request target too long", http.StatusRequestURITooLong)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// timeout returns d, def when d is zero, and 0 (no timeout) when d is
// negative.
func timeout(d, def time.Duration) time.Duration {
	switch {
	case d == 0:
		return def
	case d < 0:
		return 0
	}
	return d
}

// bound returns n capped at limit, or limit when n is not positive.
func bound(n, limit int) int {
	if n <= 0 || n > limit {
		return limit
	}
	return n
}

// ShutdownAll shuts servers down gracefully (http.Server.Shutdown), all
// within timeout, and returns the first error.
func ShutdownAll(timeout time.Duration, servers ...*http.Server) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var first error
	for _, srv := range servers {
		if err := srv.Shutdown(ctx); err != nil && first == nil {
			first = err
		}
	}
	return first
}
