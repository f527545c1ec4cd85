package httpapi

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/clientip"
	"github.com/edgeplane/edgeplane/internal/ids"
	"github.com/edgeplane/edgeplane/ipaccess"
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

// rootDocument is the answer to GET /, with or without headers: what
// this is and where it is described.
var rootDocument = []byte(`{"name":"edgeplane management API","openapi":"/openapi.json",` +
	`"message":"every request carries the headers Authorization: Bearer <API key> and ` + HeaderVersion + `: ` + Version +
	`; GET /openapi.json (no key needed) describes every operation"}` + "\n")

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
	// TrustedProxies are the proxies in front of the API whose
	// X-Forwarded-For is believed: a request whose connection comes from
	// one of them is checked against the account's IP restrictions of
	// type api with the client that header names (walked from the right,
	// past the trusted proxies), any other with the connection's peer.
	// Default: none, so the peer is always the client.
	TrustedProxies []netip.Prefix
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

// Route returns the route pattern r matches, such as
// "GET /credentials/{id}", or "/" (the not-found catch-all) when it
// matches none: a label of bounded cardinality for metrics and logs (a
// path's IDs are not in it).
func (h *Handler) Route(r *http.Request) string {
	_, pattern := h.mux.Handler(r)
	return pattern
}

// ServeHTTP implements [http.Handler]: operation id, CORS, the OpenAPI
// document, the version header, authentication, the account's IP
// restrictions of type api and the per-account rate limit, then the
// route. Everything before the route looks at headers
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
	if r.URL.Path == "/" && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(rootDocument)
		return
	}
	if v := headerValue(r.Header, HeaderVersion); v != Version {
		if v == "" && headerValue(r.Header, headerAuthorization) == "" {
			// A first request, made without either: one error that names
			// both, and where the API is described.
			h.writeError(w, r, apierr.New(apierr.InvalidArgument,
				"the Authorization and %s headers are required: every request carries Authorization: Bearer <API key> and %s: %s; "+
					"GET /openapi.json (no key needed) describes every operation", HeaderVersion, HeaderVersion, Version))
			return
		}
		h.writeError(w, r, apierr.Invalidf(HeaderVersion, "the %s header is required and must be one of the supported versions: %s; got %q", HeaderVersion, Version, clip(v, MaxEchoBytes)))
		return
	}
	// One fence for the request's reads (see edgeplane.Service.Fence):
	// the authentication and the records read under it. r is replaced:
	// the deferred log reads the one the mux records its route on.
	if ctx := h.svc.Fence(r.Context()); ctx != r.Context() {
		r = r.WithContext(ctx)
	}
	p, err := h.authenticate(r)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	// The account's IP restrictions of type api, before the request
	// counts toward its rate limit: a refused address spends nothing of
	// the account's.
	client, _ := clientip.Of(r, h.opts.TrustedProxies)
	p.ClientIP = client.Addr()
	if err := h.svc.CheckIPRestrictions(r.Context(), p, ipaccess.TypeAPI, p.ClientIP); err != nil {
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
