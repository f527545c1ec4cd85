package proxy

import (
	"log/slog"
	"net/http"

	"github.com/edgeplane/edgeplane/httpserver"
)

// Server returns an http.Server that serves h with the timeouts and
// request bounds of package httpserver (o's, defaults where zero): 431
// beyond limits.MaxRequestHeaderBytes of headers and 414 beyond
// limits.MaxURLBytes of request target, the bounds the traffic policy
// cost model assumes. Without an ErrorLog in o, the server's errors go to
// the handler's logger at Warn. When tls is true the server carries
// [Handler.TLSConfig]: serve it with srv.ServeTLS(ln, "", "") (the
// certificates come from the edges). Set Addr or serve on a listener.
func (h *Handler) Server(tls bool, o httpserver.Options) *http.Server {
	if o.ErrorLog == nil {
		o.ErrorLog = slog.NewLogLogger(h.log.Handler(), slog.LevelWarn)
	}
	s := httpserver.New(h, o)
	if tls {
		s.TLSConfig = h.TLSConfig()
	}
	return s
}
