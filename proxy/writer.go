package proxy

import (
	"compress/gzip"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// responseWriter wraps the client's ResponseWriter: it records the status
// and body size for the log and, when compression is on for the response,
// gzips the body. The decision is taken in WriteHeader, when the headers
// the client will see (after the outbound rules and the response headers
// module) are known.
type responseWriter struct {
	http.ResponseWriter
	status int
	bytes  int64

	// compress is set when the route's compression module is on (for
	// upstream responses only), acceptGzip when the client accepts gzip.
	compress, acceptGzip bool
	gz                   *gzip.Writer
}

func (w *responseWriter) WriteHeader(code int) {
	if w.status != 0 {
		return
	}
	if code >= 100 && code < 200 && code != http.StatusSwitchingProtocols {
		w.ResponseWriter.WriteHeader(code) // informational: pass through
		return
	}
	w.status = code
	if w.compress && compressible(code, w.Header()) {
		h := w.Header()
		h.Add("Vary", "Accept-Encoding")
		if w.acceptGzip {
			h.Del("Content-Length")
			h.Del("Accept-Ranges")
			h.Set("Content-Encoding", "gzip")
			if etag := h.Get("Etag"); strings.HasPrefix(etag, `"`) {
				h.Set("Etag", "W/"+etag) // the representation is no longer byte-identical
			}
			w.gz = gzipPool.Get().(*gzip.Writer)
			w.gz.Reset(writerOnly{w.ResponseWriter})
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *responseWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	w.bytes += int64(len(b))
	if w.gz != nil {
		return w.gz.Write(b)
	}
	return w.ResponseWriter.Write(b)
}

// FlushError flushes buffered compressed data and the client connection;
// httputil.ReverseProxy flushes through http.ResponseController.
func (w *responseWriter) FlushError() error {
	if w.gz != nil {
		if err := w.gz.Flush(); err != nil {
			return err
		}
	}
	return http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the underlying writer (to
// hijack the connection for a close verdict, or set deadlines).
func (w *responseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// finish ends the gzip stream, if any.
func (w *responseWriter) finish() {
	if w.gz == nil {
		return
	}
	_ = w.gz.Close()
	w.gz.Reset(io.Discard)
	gzipPool.Put(w.gz)
	w.gz = nil
}

// writerOnly hides the ResponseWriter's other methods from gzip.
type writerOnly struct{ io.Writer }

var gzipPool = sync.Pool{New: func() any {
	w, _ := gzip.NewWriterLevel(io.Discard, gzip.DefaultCompression)
	return w
}}

// minCompressSize is the smallest body of known length worth compressing:
// below it the gzip header and trailer (18 bytes) eat most of the gain.
const minCompressSize = 256

// compressible reports whether a response with this status and header may
// be gzipped: it has a body, is not already encoded, not a range, does not
// forbid transformation, is not known to be tiny, and has a textual
// content type.
func compressible(code int, h http.Header) bool {
	switch {
	case code == http.StatusNoContent, code == http.StatusNotModified, code == http.StatusPartialContent,
		code == http.StatusSwitchingProtocols:
		return false
	case h.Get("Content-Encoding") != "", h.Get("Content-Range") != "":
		return false
	case strings.Contains(strings.ToLower(strings.Join(h.Values("Cache-Control"), ",")), "no-transform"):
		return false
	}
	if cl := h.Get("Content-Length"); cl != "" {
		if n, err := strconv.ParseInt(cl, 10, 64); err == nil && n < minCompressSize {
			return false
		}
	}
	return compressibleType(h.Get("Content-Type"))
}

// compressibleType reports whether a media type is worth gzipping: text,
// JSON, XML, JavaScript, SVG and the like. Images, video, archives and
// anything already compressed are not.
func compressibleType(ct string) bool {
	if ct == "" {
		return false
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	if strings.HasPrefix(mt, "text/") || strings.HasSuffix(mt, "+json") || strings.HasSuffix(mt, "+xml") {
		return true
	}
	switch mt {
	case "application/json", "application/javascript", "application/xml", "application/x-javascript",
		"application/ecmascript", "application/wasm", "application/x-ndjson", "application/graphql-response+json",
		"image/svg+xml", "image/x-icon", "font/ttf", "font/otf":
		return true
	}
	return false
}

// acceptsGzip reports whether an Accept-Encoding header permits gzip: it
// names gzip (or x-gzip, or *) with a q-value above zero, and does not
// refuse gzip explicitly.
func acceptsGzip(values []string) bool {
	ok := false
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			name, params, _ := strings.Cut(part, ";")
			name = strings.ToLower(strings.TrimSpace(name))
			if name != "gzip" && name != "x-gzip" && name != "*" {
				continue
			}
			q := 1.0
			for p := range strings.SplitSeq(params, ";") {
				k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
				if strings.EqualFold(strings.TrimSpace(k), "q") {
					f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
					if err != nil {
						f = 0
					}
					q = f
				}
			}
			if q <= 0 {
				if name != "*" {
					return false // gzip;q=0 refuses gzip whatever * says
				}
				continue
			}
			ok = true
		}
	}
	return ok
}
