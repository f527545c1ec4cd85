package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/internal/ids"
	"github.com/edgeplane/edgeplane/ratelimit"
)

// Defaults of [Options].
const (
	DefaultMaxBodyBytes = 1 << 20
	DefaultRateLimit    = 120
	DefaultRateWindow   = 60 * time.Second
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
	// AllowedOrigins lists the origins CORS answers for. Empty allows
	// every origin (the API authenticates with bearer keys, not cookies).
	AllowedOrigins []string
	// Clock returns the current time (rate limiting, durations). Default
	// time.Now.
	Clock func() time.Time
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
}

// New returns a Handler over svc. It fails only when opts is invalid.
func New(svc *edgeplane.Service, opts Options) (*Handler, error) {
	h := &Handler{svc: svc, opts: opts, log: opts.Logger, now: opts.Clock}
	if h.log == nil {
		h.log = slog.New(slog.NewTextHandler(io.Discard, nil))
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
		h.writeError(w, r, apierr.NotFoundf("no such path %s", r.URL.Path))
	})
	doc, err := json.Marshal(h.openAPI())
	if err != nil {
		return nil, err
	}
	h.openapi = doc
	return h, nil
}

// statusWriter records the status for the request log.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

type ctxKey int

const (
	principalKey ctxKey = iota
	opIDKey
)

// ServeHTTP implements [http.Handler]: operation id, CORS, the OpenAPI
// document, the version header, authentication and the per-account rate
// limit, then the route.
func (h *Handler) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	start := h.now()
	opID := h.opIDs.New("op_")
	w := &statusWriter{ResponseWriter: rw}
	w.Header().Set(HeaderOperationID, opID)
	r = r.WithContext(context.WithValue(r.Context(), opIDKey, opID))
	defer func() {
		h.log.Info("request", "method", r.Method, "path", r.URL.Path, "status", w.status,
			"duration", h.now().Sub(start), "operation_id", opID)
	}()

	if origin := r.Header.Get("Origin"); origin != "" && h.originAllowed(origin) {
		w.Header().Set("Access-Control-Allow-Origin", origin)
		w.Header().Set("Access-Control-Allow-Credentials", "true")
		w.Header().Set("Access-Control-Expose-Headers", HeaderOperationID+", Retry-After")
		w.Header().Add("Vary", "Origin")
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			h.preflight(w, r)
			return
		}
	}
	if r.URL.Path == "/openapi.json" && r.Method == http.MethodGet {
		w.Header().Set("Content-Type", "application/json")
		w.Write(h.openapi)
		return
	}
	if v := r.Header.Get(HeaderVersion); v != Version {
		h.writeError(w, r, apierr.Invalidf(HeaderVersion, "the %s header is required and must be one of the supported versions: %s; got %q", HeaderVersion, Version, v))
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
	h.mux.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey, p)))
}

func (h *Handler) originAllowed(origin string) bool {
	return len(h.opts.AllowedOrigins) == 0 || slices.Contains(h.opts.AllowedOrigins, origin)
}

// preflight answers a CORS preflight with the methods of the path.
func (h *Handler) preflight(w http.ResponseWriter, r *http.Request) {
	methods := h.allowed(r)
	if methods == nil {
		h.writeError(w, r, apierr.NotFoundf("no such path %s", r.URL.Path))
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

// methodNotAllowed answers 405 with an Allow header for a known path.
func (h *Handler) methodNotAllowed(pattern string) http.HandlerFunc {
	methods := h.methods[pattern]
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", strings.Join(methods, ", "))
		h.writeError(w, r, apierr.New(apierr.MethodNotAllowed, "method %s is not allowed on %s; allowed: %s", r.Method, r.URL.Path, strings.Join(methods, ", ")))
	}
}

// authenticate resolves the bearer API key.
func (h *Handler) authenticate(r *http.Request) (edgeplane.Principal, error) {
	auth := r.Header.Get("Authorization")
	scheme, key, ok := strings.Cut(auth, " ")
	if auth == "" {
		return edgeplane.Principal{}, apierr.New(apierr.Unauthenticated, "the Authorization header is required: Authorization: Bearer <API key>")
	}
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(key) == "" {
		return edgeplane.Principal{}, apierr.New(apierr.Unauthenticated, "the Authorization header must have the form: Bearer <API key>")
	}
	return h.svc.Authenticate(r.Context(), strings.TrimSpace(key))
}

func principal(r *http.Request) edgeplane.Principal {
	p, _ := r.Context().Value(principalKey).(edgeplane.Principal)
	return p
}

// endpoint adapts a route to an http.Handler.
func (h *Handler) endpoint(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		out, err := rt.handle(h, r, principal(r))
		if err != nil {
			h.writeError(w, r, err)
			return
		}
		if rt.status == http.StatusNoContent {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		writeJSON(w, rt.status, out)
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.Encode(v) // a write error means the client went away
}

// decodeBody decodes a JSON request body into a T, strictly: the content
// type must be JSON, unknown fields and trailing data are refused, and
// every failure names what was wrong. An empty body decodes as {}.
func decodeBody[T any](h *Handler, r *http.Request) (T, error) {
	var v T
	body := http.MaxBytesReader(nil, r.Body, h.opts.MaxBodyBytes)
	data, err := io.ReadAll(body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return v, apierr.New(apierr.PayloadTooLarge, "the request body exceeds %d bytes", h.opts.MaxBodyBytes)
		}
		return v, apierr.New(apierr.InvalidArgument, "the request body could not be read")
	}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return v, nil
	}
	if string(trimmed) == "null" {
		return v, apierr.New(apierr.InvalidArgument, "the request body must be a JSON object")
	}
	if ct := r.Header.Get("Content-Type"); !isJSON(ct) {
		return v, apierr.New(apierr.UnsupportedMediaType, "the request body must be JSON with Content-Type: application/json; got %q", ct)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return v, jsonError(err)
	}
	if dec.More() {
		return v, apierr.New(apierr.InvalidArgument, "the request body must hold one JSON value; found more data after it")
	}
	// encoding/json matches keys to fields case-insensitively, even with
	// DisallowUnknownFields; the API's field names are exact.
	var vs apierr.Violations
	exactKeys(&vs, data, reflect.TypeFor[T](), "")
	return v, vs.Err()
}

// exactKeys records every object key in data that names no field of t
// exactly (it may have matched one case-insensitively), recursing into
// nested objects, lists and maps.
func exactKeys(vs *apierr.Violations, data []byte, t reflect.Type, path string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		var obj map[string]json.RawMessage
		if json.Unmarshal(data, &obj) != nil {
			return // not an object (null, or a type with its own encoding)
		}
		fields := jsonFields(t)
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			ft, ok := fields[k]
			if !ok {
				vs.Add(apierr.JoinPath(path, k), "is not a field of this request (field names are case-sensitive)")
				continue
			}
			exactKeys(vs, obj[k], ft, apierr.JoinPath(path, k))
		}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return // []byte and json.RawMessage are opaque
		}
		var elems []json.RawMessage
		if json.Unmarshal(data, &elems) != nil {
			return
		}
		for i, el := range elems {
			exactKeys(vs, el, t.Elem(), path+"["+strconv.Itoa(i)+"]")
		}
	case reflect.Map:
		var obj map[string]json.RawMessage
		if json.Unmarshal(data, &obj) != nil {
			return
		}
		for k, el := range obj {
			exactKeys(vs, el, t.Elem(), path+"["+strconv.Quote(k)+"]")
		}
	}
}

// jsonFields maps the JSON names of t's fields (including those of
// embedded structs without a name of their own) to their types.
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
	ErrorCode  string             `json:"error_code"`
	StatusCode int                `json:"status_code"`
	Msg        string             `json:"msg"`
	Details    errorDetails       `json:"details"`
	Violations []apierr.Violation `json:"violations,omitempty"`
}

type errorDetails struct {
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
func (h *Handler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	code := apierr.CodeOf(err)
	opID, _ := r.Context().Value(opIDKey).(string)
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
		body.Msg = ae.Msg
		body.Violations = ae.Violations
	}
	writeJSON(w, body.StatusCode, body)
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
