package httpapi

import (
	"bytes"
	"context"
	"encoding"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"
	gojson "github.com/goccy/go-json"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/internal/ids"
	"github.com/edgeplane/edgeplane/internal/jsonenc"
	"github.com/edgeplane/edgeplane/ratelimit"
)

// Defaults of [Options].
const (
	DefaultMaxBodyBytes = 1 << 20
	DefaultRateLimit    = 120
	DefaultRateWindow   = 60 * time.Second
)

// Bounds of what the handler echoes (see the package doc, # Limits).
const (
	// MaxViolations is how many violations one error body lists; the
	// number of the rest is in its violations_omitted field.
	MaxViolations = 100
	// MaxEchoBytes bounds each piece of user-supplied text the handler
	// repeats: the method, path or a header value in a message or in the
	// request log, and the field of a violation. Longer text is cut at a
	// UTF-8 boundary and ends with "…", MaxEchoBytes bytes in all.
	MaxEchoBytes = 512
	// MaxMessageBytes bounds an error's msg and each violation's reason
	// (which may quote what the request sent), cut the same way.
	MaxMessageBytes = 1024
)

// Version is the only supported value of the Service-Version header.
const Version = "2"

// Header names.
const (
	HeaderVersion     = "Service-Version"
	HeaderOperationID = "Service-Operation-Id"
)

// Options configures a [Handler]. The zero value gives the documented
// defaults.
type Options struct {
	// Logger receives one line per request (method, path, status,
	// duration, operation id) and the causes of internal errors. Default:
	// discard.
	Logger *slog.Logger
	// MaxBodyBytes bounds request bodies; larger ones get 413. Default
	// [DefaultMaxBodyBytes] (1 MiB).
	MaxBodyBytes int64
	// RateLimit is how many requests one account may make per RateWindow;
	// beyond it requests get 429 with retry-after. Default
	// [DefaultRateLimit]; negative disables the limit.
	RateLimit int
	// RateWindow is the rolling window of RateLimit. Default
	// [DefaultRateWindow]; it must be a whole multiple of 10s.
	RateWindow time.Duration
	// AllowedOrigins lists the origins CORS answers for with credentials:
	// a request from a listed origin gets that origin echoed in
	// Access-Control-Allow-Origin with Access-Control-Allow-Credentials:
	// true, one from any other origin gets no CORS headers, and every
	// response carries Vary: Origin. Empty (the default) allows every
	// origin without credentials: Access-Control-Allow-Origin: * and never
	// Access-Control-Allow-Credentials, since the API authenticates with
	// bearer keys, not cookies.
	AllowedOrigins []string
	// Clock returns the current time (rate limiting, durations). Default
	// time.Now.
	Clock func() time.Time
	// Observe, when set, is called once for every request the Handler
	// answers, after the answer (for metrics: counts and latencies by
	// route and status). It runs on the request's goroutine, so it must be
	// safe for concurrent use and quick.
	Observe func(Served)
}

// Served describes a request a [Handler] answered, for [Options.Observe].
type Served struct {
	// Route is the route pattern the request matched, as [Handler.Route]
	// returns it: such as "GET /credentials/{id}", or "/" when it matched
	// none.
	Route string
	// Method is the request's method, as sent.
	Method string
	// Status is the HTTP status of the answer.
	Status int
	// Duration is the time the Handler took to answer.
	Duration time.Duration
}

// Handler serves the management API over JSON/HTTP. Create it with [New];
// it is safe for concurrent use.
type Handler struct {
	svc     *edgeplane.Service
	opts    Options
	log     *slog.Logger
	now     func() time.Time
	opIDs   *ids.Generator
	limiter *ratelimit.Limiter
	mux     *http.ServeMux
	routes  []route
	methods map[string][]string // pattern path -> allowed methods
	openapi []byte
	// docProblems are what the OpenAPI document could not say; the
	// tests fail while there are any.
	docProblems []string
}

// New returns a Handler over svc. It fails only when opts is invalid.
func New(svc *edgeplane.Service, opts Options) (*Handler, error) {
	h := &Handler{svc: svc, opts: opts, log: opts.Logger, now: opts.Clock}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.now == nil {
		h.now = time.Now
	}
	if h.opts.MaxBodyBytes <= 0 {
		h.opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if h.opts.RateLimit == 0 {
		h.opts.RateLimit = DefaultRateLimit
	}
	if h.opts.RateWindow == 0 {
		h.opts.RateWindow = DefaultRateWindow
	}
	if h.opts.RateLimit > 0 {
		l, err := ratelimit.New(ratelimit.Options{Capacity: uint64(h.opts.RateLimit), Window: h.opts.RateWindow})
		if err != nil {
			return nil, err
		}
		h.limiter = l
	}
	h.opIDs = ids.NewGenerator(h.now)
	h.routes = h.table()
	h.mux = http.NewServeMux()
	h.methods = make(map[string][]string)
	for _, rt := range h.routes {
		h.mux.Handle(rt.method+" "+rt.pattern, h.endpoint(rt))
		h.methods[rt.pattern] = append(h.methods[rt.pattern], rt.method)
	}
	for pattern := range h.methods {
		h.mux.HandleFunc(pattern, h.methodNotAllowed(pattern))
	}
	h.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		h.writeError(exchangeOf(w), r, noSuchPath(r))
	})
	var api map[string]any
	api, h.docProblems = h.openAPI()
	doc, err := json.Marshal(api)
	if err != nil {
		return nil, err
	}
	h.openapi = doc
	return h, nil
}

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

// Route returns the route pattern r matches, such as
// "GET /credentials/{id}", or "/" (the not-found catch-all) when it
// matches none: a label of bounded cardinality for metrics and logs (a
// path's IDs are not in it).
func (h *Handler) Route(r *http.Request) string {
	_, pattern := h.mux.Handler(r)
	return pattern
}

// ServeHTTP implements [http.Handler]: operation id, CORS, the OpenAPI
// document, the version header, authentication and the per-account rate
// limit, then the route. Everything before the route looks at headers
// only: a request refused there is answered without reading its body.
func (h *Handler) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	start := h.now()
	opID := h.opIDs.New("op_")
	w := &exchange{ResponseWriter: rw, opID: opID}
	w.setHeader(hdrOperationID, HeaderOperationID, opID)
	w.unread = r.ProtoMajor == 1 && r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody
	routed := false
	defer func() {
		// One clock reading ends the request for the log line and for
		// Observe; the line is handed to the log's handler without the
		// caller's program counter (slog.Logger would look it up on
		// every request; the server logs no source).
		logs := h.log.Handler()
		logging := logs.Enabled(r.Context(), slog.LevelInfo)
		if !logging && h.opts.Observe == nil {
			return // no attributes built for a log nobody reads
		}
		end := h.now()
		d := end.Sub(start)
		if h.opts.Observe != nil {
			status := w.status
			if status == 0 {
				status = http.StatusOK // what net/http sends
			}
			route := r.Pattern // set by the mux on r
			if !routed || route == "" {
				route = h.Route(r)
			}
			h.opts.Observe(Served{Route: route, Method: r.Method, Status: status, Duration: d})
		}
		if logging {
			if h.opts.Clock != nil {
				end = time.Now() // a log line is stamped with the wall clock
			}
			line := slog.NewRecord(end, slog.LevelInfo, "request", 0)
			line.AddAttrs(slog.String("method", clip(r.Method, MaxEchoBytes)),
				slog.String("path", clip(r.URL.Path, MaxEchoBytes)), slog.Int("status", w.status),
				slog.Duration("duration", d), slog.String("operation_id", opID))
			_ = logs.Handle(r.Context(), line)
		}
	}()

	if origin := headerValue(r.Header, headerOrigin); len(h.opts.AllowedOrigins) > 0 {
		w.Header().Add("Vary", "Origin")
		if origin != "" && slices.Contains(h.opts.AllowedOrigins, origin) {
			w.Header().Set("Access-Control-Allow-Origin", origin)
			w.Header().Set("Access-Control-Allow-Credentials", "true")
			if h.cors(w, r) {
				return
			}
		}
	} else if origin != "" {
		w.Header().Set("Access-Control-Allow-Origin", "*")
		if h.cors(w, r) {
			return
		}
	}
	if r.URL.Path == "/openapi.json" && r.Method == http.MethodGet {
		w.Header().Set("Content-Type", "application/json")
		w.Write(h.openapi)
		return
	}
	if v := headerValue(r.Header, HeaderVersion); v != Version {
		h.writeError(w, r, apierr.Invalidf(HeaderVersion, "the %s header is required and must be one of the supported versions: %s; got %q", HeaderVersion, Version, clip(v, MaxEchoBytes)))
		return
	}
	p, err := h.authenticate(r)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	if h.limiter != nil {
		if d := h.limiter.AllowAt(p.AccountID, h.now()); !d.Allowed {
			w.Header().Set("Retry-After", strconv.FormatInt(d.RetryAfterSeconds(), 10))
			h.writeError(w, r, apierr.New(apierr.ResourceExhausted,
				"rate limit of %d requests per %s exceeded; retry after %d seconds", h.opts.RateLimit, h.opts.RateWindow, d.RetryAfterSeconds()))
			return
		}
	}
	w.p = p
	routed = true
	// r is not copied: the mux records the route it matched on r itself
	// (Pattern, the path values), as a ServeMux mounted in another does.
	h.mux.ServeHTTP(w, r)
}

// cors adds the headers every CORS answer to an allowed origin carries
// and answers a preflight, reporting whether it did.
func (h *Handler) cors(w *exchange, r *http.Request) bool {
	w.Header().Set("Access-Control-Expose-Headers", HeaderOperationID+", Retry-After")
	if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
		h.preflight(w, r)
		return true
	}
	return false
}

// preflight answers a CORS preflight with the methods of the path.
func (h *Handler) preflight(w *exchange, r *http.Request) {
	methods := h.allowed(r)
	if methods == nil {
		h.writeError(w, r, noSuchPath(r))
		return
	}
	w.Header().Set("Access-Control-Allow-Methods", strings.Join(methods, ", "))
	if hdrs := r.Header.Get("Access-Control-Request-Headers"); hdrs != "" {
		w.Header().Set("Access-Control-Allow-Headers", hdrs)
	}
	w.Header().Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
}

// allowed returns the methods registered for the request's path, or nil.
func (h *Handler) allowed(r *http.Request) []string {
	probe := r.Clone(r.Context())
	probe.Method = "OPTIONS"
	_, pattern := h.mux.Handler(probe)
	if _, ok := h.methods[pattern]; !ok {
		return nil
	}
	return h.methods[pattern]
}

// noSuchPath is the 404 of a path no route serves.
func noSuchPath(r *http.Request) error {
	return apierr.NotFoundf("no such path %s", clip(r.URL.Path, MaxEchoBytes))
}

// methodNotAllowed answers 405 with an Allow header for a known path.
func (h *Handler) methodNotAllowed(pattern string) http.HandlerFunc {
	methods := h.methods[pattern]
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", strings.Join(methods, ", "))
		h.writeError(exchangeOf(w), r, apierr.New(apierr.MethodNotAllowed, "method %s is not allowed on %s; allowed: %s",
			clip(r.Method, MaxEchoBytes), clip(r.URL.Path, MaxEchoBytes), strings.Join(methods, ", ")))
	}
}

// authenticate resolves the bearer API key.
func (h *Handler) authenticate(r *http.Request) (edgeplane.Principal, error) {
	auth := headerValue(r.Header, headerAuthorization)
	scheme, key, ok := strings.Cut(auth, " ")
	if auth == "" {
		return edgeplane.Principal{}, apierr.New(apierr.Unauthenticated, "the Authorization header is required: Authorization: Bearer <API key>")
	}
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(key) == "" {
		return edgeplane.Principal{}, apierr.New(apierr.Unauthenticated, "the Authorization header must have the form: Bearer <API key>")
	}
	return h.svc.Authenticate(r.Context(), strings.TrimSpace(key))
}

// endpoint adapts a route to an http.Handler.
func (h *Handler) endpoint(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := exchangeOf(w)
		out, err := rt.handle(h, c, r)
		if err != nil {
			h.writeError(c, r, err)
			return
		}
		if rt.status == http.StatusNoContent {
			c.WriteHeader(http.StatusNoContent)
			return
		}
		writeJSON(c, rt.status, out)
	})
}

// writeJSON answers status with v as JSON and its Content-Length. It
// encodes with github.com/goccy/go-json, which produces what encoding/json
// does (json tags, Marshalers, sorted map keys, HTML escaping; only \b
// and \f in a string it writes as \u0008 and \u000c, the same JSON
// string, see FuzzAppendJSONString) without reflecting on every value of
// every response: on a page of 100 credentials, encoding was a fifth of
// the server's CPU (see the README's load harness). A model that encodes
// itself (a [jsonenc.Appender]: a credential, which every create and
// update of one answers) writes its own bytes, encoding/json's.
func writeJSON(w *exchange, status int, v any) {
	buf, ready := v.(*jsonBuffer) // the JSON itself (see jsonBuffer)
	if !ready {
		buf = getJSONBuffer()
	}
	defer putJSONBuffer(buf)
	w.setHeader(hdrContentType, headerContentType, "application/json")
	var err error
	switch a, ok := v.(jsonAppender); {
	case ready: // the JSON is in buf
	case ok:
		err = a.appendJSON(&buf.Buffer)
	default:
		if m, ok := v.(jsonenc.Appender); ok {
			if b, ok := m.AppendJSON(buf.AvailableBuffer()); ok {
				buf.Write(append(b, '\n')) // as Encode ends a value
				break
			}
		}
		err = buf.enc.Encode(v)
	}
	if err != nil {
		// Only a value the API never answers with fails; say nothing of it.
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	w.setHeader(hdrContentLength, headerContentLength, strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	w.Write(buf.Bytes()) // a write error means the client went away
}

// jsonAppender is a response that writes its own JSON, as Encode would:
// followed by a newline.
type jsonAppender interface {
	appendJSON(buf *bytes.Buffer) error
}

// encodedPage is a page of a list whose items came encoded
// ([edgeplane.ListOptions.ItemsAsJSON]): it writes what the map
// {field: items, "uri": uri, "next_page_uri": next} encodes to, keys in
// the same (sorted) order, copying the items' JSON.
type encodedPage struct {
	field string
	items func(dst []byte) ([]byte, error)
	uri   string
	next  *string
}

func (p *encodedPage) appendJSON(buf *bytes.Buffer) error {
	keys := [3]string{p.field, "next_page_uri", "uri"}
	slices.Sort(keys[:])
	b := buf.AvailableBuffer()
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(jsonenc.AppendString(b, k), ':')
		var err error
		switch k {
		case p.field:
			b, err = p.items(b)
		case "next_page_uri":
			if p.next == nil {
				b = append(b, "null"...)
			} else {
				b = jsonenc.AppendString(b, *p.next)
			}
		case "uri":
			b = jsonenc.AppendString(b, p.uri)
		}
		if err != nil {
			return err
		}
	}
	b = append(b, '}', '\n')
	buf.Write(b)
	return nil
}

// jsonBuffers keeps response and request body buffers for reuse (a
// *jsonBuffer); one larger than maxPooledBuffer (a rare huge page or body)
// is left to the garbage collector.
var jsonBuffers = sync.Pool{New: func() any {
	b := new(jsonBuffer)
	b.enc = gojson.NewEncoder(&b.Buffer)
	return b
}}

const maxPooledBuffer = 1 << 20

// jsonBuffer is a buffer with an encoder that writes to it (an encoder
// keeps no state between values but its writer): one made per buffer, not
// per response. A route may answer with a *jsonBuffer from
// getJSONBuffer: it holds the response's JSON, as Encode writes it (with
// a newline), and writeJSON answers with it and returns it to the pool.
type jsonBuffer struct {
	bytes.Buffer
	enc *gojson.Encoder
}

// getJSONBuffer returns an empty buffer from jsonBuffers.
func getJSONBuffer() *jsonBuffer {
	b := jsonBuffers.Get().(*jsonBuffer)
	b.Reset()
	return b
}

// putJSONBuffer returns b to jsonBuffers unless it grew too large.
func putJSONBuffer(b *jsonBuffer) {
	if b.Cap() <= maxPooledBuffer {
		jsonBuffers.Put(b)
	}
}

// decodeBody decodes a JSON request body into a T, strictly: the content
// type must be JSON, unknown fields, differently-cased and duplicate keys
// and trailing data are refused, and every failure names what was wrong.
// An empty body decodes as {}.
func decodeBody[T any](h *Handler, c *exchange, r *http.Request) (T, error) {
	var v T
	if r.ContentLength > h.opts.MaxBodyBytes {
		return v, tooLarge(h)
	}
	// The body is read into a pooled buffer: nothing decoded from it
	// keeps its memory (the decoders and checkKeys copy what they keep).
	buf := getJSONBuffer()
	defer putJSONBuffer(buf)
	switch ended, err := readBody(&buf.Buffer, r.Body, h.opts.MaxBodyBytes); {
	case err != nil:
		return v, apierr.New(apierr.InvalidArgument, "the request body could not be read")
	case !ended:
		return v, tooLarge(h)
	}
	c.unread = false
	data := buf.Bytes()
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return v, nil
	}
	if string(trimmed) == "null" {
		return v, apierr.New(apierr.InvalidArgument, "the request body must be a JSON object")
	}
	if ct := headerValue(r.Header, headerContentType); !isJSON(ct) {
		return v, apierr.New(apierr.UnsupportedMediaType, "the request body must be JSON with Content-Type: application/json; got %q", clip(ct, MaxEchoBytes))
	}
	// The strict decoder of github.com/go-json-experiment/json (the
	// mirror of encoding/json/v2) refuses unknown, differently-cased and
	// duplicate names, trailing data and invalid UTF-8 in one pass. What
	// it accepts, decodeChecked accepts too, with the same result
	// (FuzzStrictAgreesWithChecked); when it refuses, decodeChecked
	// decodes again, to say what was wrong in the API's words.
	if jsonv2.Unmarshal(data, &v, jsonv2.RejectUnknownMembers(true)) == nil {
		return v, nil
	}
	var checked T
	err := decodeChecked(data, &checked, reflect.TypeFor[T]())
	return checked, err
}

// decodeChecked decodes data, a JSON request body, into *ptr, of type
// typ, strictly, with encoding/json, and names what was wrong when it
// cannot. *ptr must be the zero value.
func decodeChecked(data []byte, ptr any, typ reflect.Type) error {
	// encoding/json matches keys to fields case-insensitively, even with
	// DisallowUnknownFields, and keeps the last of duplicate keys; the
	// API's field names are exact and each key may appear once. The keys
	// are checked first, so that every bad one is listed; malformed JSON
	// is left to Decode, which says where it is.
	end, err := checkKeys(data, typ)
	if err != nil && !errors.Is(err, errMalformed) {
		return err
	}
	if err == nil && len(bytes.TrimSpace(data[end:])) == 0 {
		// One valid JSON value whose every key names a field exactly
		// (checkKeys): Unmarshal decodes it as the strict decoder below
		// would, without the decoder's copy of the body. Should it fail
		// (a type mismatch), the decoder below says how, as always.
		if json.Unmarshal(data[:end], ptr) == nil {
			return nil
		}
		reflect.ValueOf(ptr).Elem().SetZero()
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(ptr); err != nil {
		return jsonError(err)
	}
	if dec.More() {
		return apierr.New(apierr.InvalidArgument, "the request body must hold one JSON value; found more data after it")
	}
	return nil
}

// readBody appends body to buf up to its end or past max bytes, and
// reports whether it ended within max bytes (a nil body is empty). It
// reads as buf.ReadFrom(http.MaxBytesReader(nil, body, max)) would,
// without the reader that allocates: one bound, checked here (net/http
// bounds a body by its Content-Length, which decodeBody compared with max
// before; a chunked one has no other bound).
func readBody(buf *bytes.Buffer, body io.Reader, max int64) (ended bool, err error) {
	if body == nil {
		return true, nil
	}
	for {
		buf.Grow(bytes.MinRead)
		b := buf.AvailableBuffer()
		b = b[:min(int64(cap(b)), max+1-int64(buf.Len()))]
		n, err := body.Read(b)
		buf.Write(b[:n])
		switch {
		case int64(buf.Len()) > max:
			return false, nil
		case err == io.EOF:
			return true, nil
		case err != nil:
			return false, err
		}
	}
}

func tooLarge(h *Handler) error {
	return apierr.New(apierr.PayloadTooLarge, "the request body exceeds %d bytes", h.opts.MaxBodyBytes)
}

// Reasons of the violations checkKeys records.
const (
	reasonDuplicateKey = "appears more than once in its object; each key may appear only once"
	reasonInexactKey   = "is not a field of this request (field names are case-sensitive)"
)

// errMalformed is checkKeys' error for data that is not JSON.
var errMalformed = errors.New("malformed JSON")

// checkKeys walks the first JSON value of data once, byte by byte, and
// returns an InvalidArgument error listing every object key that appears
// twice in its object (at every nesting level, whatever the Go type) and
// every key of an object decoded into a struct of t that names no field
// of it exactly (unknown, or matched only case-insensitively). It returns
// errMalformed when data is not JSON (by the grammar encoding/json
// enforces, nesting deeper than it allows included), and ignores what
// follows the first value, whose end (an offset in data) it returns.
//
// It keeps the first [MaxViolations] violations and counts the rest (a
// body of nothing but duplicate keys would otherwise make a violation of
// every six bytes): past the cap the error is a *cappedError.
func checkKeys(data []byte, t reflect.Type) (end int, err error) {
	k := keyChecker{data: data}
	if err := k.value(t, location{root: true, index: -1}, 0); err != nil {
		return 0, errMalformed
	}
	if k.omitted == 0 {
		return k.pos, k.vs.Err()
	}
	ae := &apierr.Error{Code: apierr.InvalidArgument, Violations: k.vs}
	ae.Msg, _, _ = bounded(ae, k.omitted)
	return k.pos, &cappedError{err: ae, omitted: k.omitted}
}

// cappedError is a validation error that lists the first [MaxViolations]
// violations and counts the others.
type cappedError struct {
	err     *apierr.Error
	omitted int // violations found beyond err.Violations
}

func (e *cappedError) Error() string { return e.err.Msg }
func (e *cappedError) Unwrap() error { return e.err }

// keyChecker is the state of one checkKeys walk: a scanner over data
// that reads it once, allocating only for violations, keys that need
// unescaping and the key sets of large objects.
type keyChecker struct {
	data    []byte
	pos     int
	vs      apierr.Violations
	omitted int
}

// maxKeyDepth is the deepest nesting checkKeys walks: encoding/json's
// decoder refuses deeper values (its maxNestingDepth).
const maxKeyDepth = 10000

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// shape returns the type whose fields, elements or values the JSON value
// of t fills, or nil when t says nothing about them (no type, an
// interface, []byte or json.RawMessage, or a type that decodes itself).
func shape(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) {
		return nil
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return t
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() != reflect.Uint8 {
			return t
		}
	}
	return nil
}

// location is where a JSON value is: the path of its container and its
// key or index there. Its path is built only when needed (a violation, or
// a container to walk into), not for every scalar.
type location struct {
	parent string
	// key is an object's key (nil for an array element or the root): the
	// bytes checkKeys read, made a string only for a path, so that a key
	// of a scalar value costs no allocation.
	key   []byte
	index int  // an array element's index, else -1
	inMap bool // the key is a Go map's: written ["key"]
	root  bool
}

func (l location) path() string {
	switch {
	case l.root:
		return ""
	case l.index >= 0:
		return l.parent + "[" + strconv.Itoa(l.index) + "]"
	case l.inMap:
		return l.parent + "[" + strconv.Quote(string(l.key)) + "]"
	}
	return apierr.JoinPath(l.parent, string(l.key))
}

// add records a violation of the value at l, or counts it past the cap.
func (k *keyChecker) add(l location, reason string) {
	if len(k.vs) == MaxViolations {
		k.omitted++
		return
	}
	k.vs = append(k.vs, apierr.Violation{Field: l.path(), Reason: reason})
}

// skipSpace moves past JSON whitespace and returns the next byte, 0 at
// the end.
func (k *keyChecker) skipSpace() byte {
	for k.pos < len(k.data) {
		switch c := k.data[k.pos]; c {
		case ' ', '\t', '\n', '\r':
			k.pos++
		default:
			return c
		}
	}
	return 0
}

// value walks one JSON value decoded into t (nil: unknown) at l, depth
// containers deep.
func (k *keyChecker) value(t reflect.Type, l location, depth int) error {
	switch c := k.skipSpace(); {
	case c == '{' || c == '[':
		if depth >= maxKeyDepth {
			return errMalformed
		}
		k.pos++
		if c == '[' {
			return k.array(t, l, depth+1)
		}
		return k.object(t, l, depth+1)
	case c == '"':
		_, _, err := k.str()
		return err
	case c == '-' || c >= '0' && c <= '9':
		return k.number()
	case c == 't':
		return k.literal("true")
	case c == 'f':
		return k.literal("false")
	case c == 'n':
		return k.literal("null")
	}
	return errMalformed
}

// array walks the elements of an array whose [ was read.
func (k *keyChecker) array(t reflect.Type, l location, depth int) error {
	path := l.path()
	var elem reflect.Type
	if t = shape(t); t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
		elem = t.Elem()
	}
	if k.skipSpace() == ']' {
		k.pos++
		return nil
	}
	for i := 0; ; i++ {
		if err := k.value(elem, location{parent: path, index: i}, depth); err != nil {
			return err
		}
		switch k.skipSpace() {
		case ',':
			k.pos++
		case ']':
			k.pos++
			return nil
		default:
			return errMalformed
		}
	}
}

// smallObject is how many keys an object may have before its keys are
// remembered in a map rather than a slice searched linearly.
const smallObject = 16

// object walks the members of an object whose { was read.
func (k *keyChecker) object(t reflect.Type, l location, depth int) error {
	path := l.path()
	var (
		fields map[string]reflect.Type // a struct's
		elem   reflect.Type            // a map's
	)
	t = shape(t)
	inMap := t != nil && t.Kind() == reflect.Map
	switch {
	case t == nil:
	case t.Kind() == reflect.Struct:
		fields = fieldsOf(t)
	case inMap:
		elem = t.Elem()
	}
	if k.skipSpace() == '}' {
		k.pos++
		return nil
	}
	var (
		few  [8][]byte
		seen = few[:0]
		many map[string]struct{}
	)
	for {
		if k.skipSpace() != '"' {
			return errMalformed
		}
		raw, err := k.key()
		if err != nil {
			return err
		}
		if k.skipSpace() != ':' {
			return errMalformed
		}
		k.pos++
		// The key is compared as bytes and made a string only when kept
		// in a large object's set or named in a path: a body of scalar
		// values, or of repeated keys past the cap of violations, costs no
		// allocation per key.
		dup := false
		if many != nil {
			_, dup = many[string(raw)]
		} else {
			for _, s := range seen {
				if string(s) == string(raw) {
					dup = true
					break
				}
			}
		}
		var key []byte
		if !dup || len(k.vs) < MaxViolations {
			key = raw
		}
		switch {
		case dup:
		case many != nil:
			many[string(raw)] = struct{}{}
		case len(seen) < smallObject:
			seen = append(seen, raw)
		default:
			many = make(map[string]struct{}, 2*smallObject)
			for _, s := range seen {
				many[string(s)] = struct{}{}
			}
			many[string(raw)] = struct{}{}
		}
		// Past the cap, a duplicate's key is left out of its location:
		// nothing below it is named in a violation any more.
		at := location{parent: path, key: key, index: -1, inMap: inMap}
		vt := elem
		switch {
		case dup:
			k.add(at, reasonDuplicateKey)
			vt = nil // its keys were checked against the type at the first
		case fields != nil:
			ft, ok := fields[string(raw)]
			if !ok {
				k.add(at, reasonInexactKey)
			}
			vt = ft
		}
		if err := k.value(vt, at, depth); err != nil {
			return err
		}
		switch k.skipSpace() {
		case ',':
			k.pos++
		case '}':
			k.pos++
			return nil
		default:
			return errMalformed
		}
	}
}

// key reads a string at the opening quote and returns it as
// encoding/json decodes it (escapes resolved, invalid UTF-8 replaced): a
// slice of data when it has no escape and is valid UTF-8.
func (k *keyChecker) key() ([]byte, error) {
	start := k.pos
	raw, plain, err := k.str()
	if err != nil || plain && utf8.Valid(raw) {
		return raw, err
	}
	var s string
	if err := json.Unmarshal(k.data[start:k.pos], &s); err != nil {
		return nil, errMalformed
	}
	return []byte(s), nil
}

// str reads a string at the opening quote and returns the bytes between
// the quotes, and whether they hold no escape.
func (k *keyChecker) str() (raw []byte, plain bool, err error) {
	start := k.pos
	k.pos++
	plain = true
	for k.pos < len(k.data) {
		c := k.data[k.pos]
		switch {
		case c == '"':
			k.pos++
			return k.data[start+1 : k.pos-1], plain, nil
		case c < 0x20:
			return nil, false, errMalformed
		case c == '\\':
			plain = false
			if k.pos+1 >= len(k.data) {
				return nil, false, errMalformed
			}
			switch k.data[k.pos+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				k.pos += 2
			case 'u':
				if k.pos+6 > len(k.data) {
					return nil, false, errMalformed
				}
				for _, h := range k.data[k.pos+2 : k.pos+6] {
					if !isHex(h) {
						return nil, false, errMalformed
					}
				}
				k.pos += 6
			default:
				return nil, false, errMalformed
			}
		default:
			k.pos++
		}
	}
	return nil, false, errMalformed
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// number reads a number by JSON's grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (k *keyChecker) number() error {
	d := k.data
	if k.pos < len(d) && d[k.pos] == '-' {
		k.pos++
	}
	switch {
	case k.pos < len(d) && d[k.pos] == '0':
		k.pos++
	case k.pos < len(d) && d[k.pos] >= '1' && d[k.pos] <= '9':
		k.digits()
	default:
		return errMalformed
	}
	if k.pos < len(d) && d[k.pos] == '.' {
		k.pos++
		if k.digits() == 0 {
			return errMalformed
		}
	}
	if k.pos < len(d) && (d[k.pos] == 'e' || d[k.pos] == 'E') {
		k.pos++
		if k.pos < len(d) && (d[k.pos] == '+' || d[k.pos] == '-') {
			k.pos++
		}
		if k.digits() == 0 {
			return errMalformed
		}
	}
	return nil
}

// digits moves past decimal digits and returns how many.
func (k *keyChecker) digits() int {
	n := 0
	for k.pos < len(k.data) && k.data[k.pos] >= '0' && k.data[k.pos] <= '9' {
		k.pos++
		n++
	}
	return n
}

// literal reads the literal word.
func (k *keyChecker) literal(word string) error {
	if !bytes.HasPrefix(k.data[k.pos:], []byte(word)) {
		return errMalformed
	}
	k.pos += len(word)
	return nil
}

// jsonFields maps the JSON names of t's fields (including those of
// embedded structs without a name of their own) to their types.
// knownFields caches jsonFields by type: request types are a fixed set
// (the route table's), so it is bounded by them.
var knownFields sync.Map // reflect.Type -> map[string]reflect.Type

// fieldsOf returns jsonFields(t), computed once per type.
func fieldsOf(t reflect.Type) map[string]reflect.Type {
	if f, ok := knownFields.Load(t); ok {
		return f.(map[string]reflect.Type)
	}
	f, _ := knownFields.LoadOrStore(t, jsonFields(t))
	return f.(map[string]reflect.Type)
}

func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := make(map[string]reflect.Type)
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-":
			continue
		case f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct:
			for k, v := range jsonFields(f.Type) {
				out[k] = v
			}
			continue
		case !f.IsExported():
			continue
		case name == "":
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

func isJSON(ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	return strings.EqualFold(strings.TrimSpace(mt), "application/json")
}

// jsonError describes a decoding failure without internal detail.
func jsonError(err error) error {
	var (
		syn *json.SyntaxError
		typ *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &syn):
		return apierr.New(apierr.InvalidArgument, "the request body is not valid JSON (at byte %d)", syn.Offset)
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			return apierr.New(apierr.InvalidArgument, "the request body must be a JSON object")
		}
		return apierr.Invalidf(field, "must be a JSON %s, got %s", jsonType(typ.Type.Kind().String()), typ.Value)
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return apierr.New(apierr.InvalidArgument, "the request body is truncated JSON")
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		name = strings.Trim(name, `"`)
		return apierr.Invalidf(name, "is not a field of this request")
	}
	return apierr.New(apierr.InvalidArgument, "the request body is not valid JSON")
}

func jsonType(kind string) string {
	switch kind {
	case "string":
		return "string"
	case "bool":
		return "boolean"
	case "slice", "array":
		return "array"
	case "map", "struct", "ptr":
		return "object"
	}
	return "number"
}

// errorBody is the wire shape of every error.
type errorBody struct {
	// ErrorCode is the stable code of the error, ERR_SERVICE_<n>.
	ErrorCode string `json:"error_code"`
	// StatusCode repeats the HTTP status of the response.
	StatusCode int `json:"status_code"`
	// Msg says what was wrong and what is allowed; with several
	// violations, the first and how many more there are.
	Msg string `json:"msg"`
	// Details identifies the request.
	Details errorDetails `json:"details"`
	// Violations are the broken field rules, the first MaxViolations in
	// the order found; absent when there are none.
	Violations []apierr.Violation `json:"violations,omitempty"`
	// ViolationsOmitted counts the violations beyond the first
	// MaxViolations, which are not listed; absent when there are none.
	ViolationsOmitted int `json:"violations_omitted,omitempty"`
}

// errorDetails identifies the request an error answers.
type errorDetails struct {
	// OperationID is the request's identifier, as in the
	// Service-Operation-Id header: quote it when reporting a problem.
	OperationID string `json:"operation_id"`
}

// statusOf is the one table mapping error codes to HTTP statuses.
var statusOf = map[apierr.Code]int{
	apierr.InvalidArgument:      http.StatusBadRequest,
	apierr.Unauthenticated:      http.StatusUnauthorized,
	apierr.PermissionDenied:     http.StatusForbidden,
	apierr.NotFound:             http.StatusNotFound,
	apierr.MethodNotAllowed:     http.StatusMethodNotAllowed,
	apierr.Conflict:             http.StatusConflict,
	apierr.FailedPrecondition:   http.StatusConflict,
	apierr.PayloadTooLarge:      http.StatusRequestEntityTooLarge,
	apierr.UnsupportedMediaType: http.StatusUnsupportedMediaType,
	apierr.ResourceExhausted:    http.StatusTooManyRequests,
	apierr.Internal:             http.StatusInternalServerError,
}

// StatusOf returns the HTTP status of an error code (500 for an unknown
// one).
func StatusOf(c apierr.Code) int {
	if s, ok := statusOf[c]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// writeError writes err as the wire error. Internal errors get a generic
// message; their cause goes to the log only.
func (h *Handler) writeError(w *exchange, r *http.Request, err error) {
	code := apierr.CodeOf(err)
	opID := w.opID
	body := errorBody{ErrorCode: code.Wire(), StatusCode: StatusOf(code), Details: errorDetails{OperationID: opID}}
	var ae *apierr.Error
	switch {
	case code == apierr.Internal || !errors.As(err, &ae):
		if errors.Is(err, context.Canceled) {
			h.log.Info("request cancelled", "operation_id", opID)
		} else {
			h.log.Error("internal error", "operation_id", opID, "err", cause(err))
		}
		code = apierr.Internal
		body.ErrorCode, body.StatusCode = code.Wire(), http.StatusInternalServerError
		body.Msg = "internal error; quote operation id " + opID + " when reporting it"
	default:
		var capped *cappedError
		omitted := 0
		if errors.As(err, &capped) {
			omitted = capped.omitted
		}
		body.Msg, body.Violations, body.ViolationsOmitted = bounded(ae, omitted)
	}
	writeJSON(w, body.StatusCode, body)
}

// bounded returns the msg, the listed violations and the number of the
// rest for the wire, given ae and the number of its violations already
// counted but not kept (known): at most [MaxViolations] violations,
// fields cut to [MaxEchoBytes] and reasons to [MaxMessageBytes]. With
// several violations the msg is not ae.Msg (which lists them all) but the
// first and how many more there are, so each is listed once.
func bounded(ae *apierr.Error, known int) (msg string, vs []apierr.Violation, omitted int) {
	all := ae.Violations
	vs = make([]apierr.Violation, min(len(all), MaxViolations))
	for i := range vs {
		vs[i] = apierr.Violation{Field: clip(all[i].Field, MaxEchoBytes), Reason: clip(all[i].Reason, MaxMessageBytes)}
	}
	omitted = len(all) - len(vs) + known
	if len(vs)+omitted < 2 {
		return clip(ae.Msg, MaxMessageBytes), vs, omitted
	}
	const prefix = "invalid request: "
	more := "; and " + strconv.Itoa(len(vs)+omitted-1) + " more violations"
	return prefix + clip(vs[0].String(), MaxMessageBytes-len(prefix)-len(more)) + more, vs, omitted
}

// clip returns s if it has at most n bytes, else its first bytes up to a
// UTF-8 boundary followed by "…", n bytes or fewer in all (n >= 3).
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const ellipsis = "…"
	i := n - len(ellipsis)
	for j := 0; j < utf8.UTFMax-1 && i > 0 && !utf8.RuneStart(s[i]); j++ {
		i--
	}
	return s[:i] + ellipsis
}

// cause returns the innermost cause of err for the log: an [apierr.Error]'s
// message is client-safe and says nothing; its Err says what happened.
func cause(err error) error {
	var ae *apierr.Error
	for errors.As(err, &ae) && ae.Err != nil {
		err = ae.Err
	}
	return err
}
