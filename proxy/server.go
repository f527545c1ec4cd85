package proxy

import (
	"log/slog"
	"net/http"
	"time"
)

// Server limits: what one client may hold of a proxy's listener.
const (
	// ReadHeaderTimeout bounds the time to read a request's headers.
	ReadHeaderTimeout = 10 * time.Second
	// IdleTimeout closes keep-alive connections idle this long.
	IdleTimeout = 2 * time.Minute
	// MaxHeaderBytes bounds a request's headers (the request line
	// included).
	MaxHeaderBytes = 64 << 10
)

// Server returns an http.Server that serves h with the limits above: for
// plain HTTP when tls is false; for HTTPS when it is true, with
// [Handler.TLSConfig] (serve it with srv.ServeTLS(ln, "", ""): the
// certificates come from the edges). Bodies are not bounded here: they
// stream to the upstream as they arrive. Set Addr or serve on a
// listener.
func (h *Handler) Server(tls bool) *http.Server {
	s := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: ReadHeaderTimeout,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(h.log.Handler(), slog.LevelWarn),
	}
	if tls {
		s.TLSConfig = h.TLSConfig()
	}
	return s
}
