// Package httpapi serves the management API of an [edgeplane.Service] over
// JSON/HTTP, exactly as the specification describes it. The core stays
// transport-free; this is the transport most hosts use:
//
//	h, err := httpapi.New(svc, httpapi.Options{Logger: logger})
//	http.ListenAndServe(":8080", h)
//
// # Routes
//
// Every route is declared once, in a table; the Go 1.22 ServeMux patterns,
// the 405 answers (with an Allow header), CORS preflights and the OpenAPI
// 3.1 document served at GET /openapi.json (no authentication) all derive
// from it. Creates answer 201, deletes 204 with no body, everything else
// 200.
//
// # OpenAPI document
//
// The document is derived, never written by hand: the schemas from the Go
// types of the request and response bodies (by their json tags, with
// github.com/swaggest/jsonschema-go), the rules from their `validate` tags
// and from `openapi` tags that state, in the same words, the rules a
// hand-written Validate method enforces (required, enum, byte limits as
// maxLength plus the limit in bytes in the description, minimum/maximum,
// item bounds, ID patterns, fields an update refuses); the descriptions
// from the Go doc comments of the types, their fields and the Service
// methods the routes call (collected by go generate into godoc_gen.go).
// Response fields are all required but those tagged omitempty; optional
// request fields take null (the same as absent); objects are closed
// (additionalProperties: false). Operations are tagged by resource (the
// path up to its first parameter) and list every error status they may
// answer, with the Error schema and the Service-Operation-Id header
// (Retry-After on 429); servers is the Service's base URL. The tests check
// every request and response of the end-to-end suite against the document
// with kin-openapi, and send, for every rule the document states of a
// request field, a request breaking it, which must be refused naming the
// field. After changing a doc comment, run go generate ./httpapi.
//
// # Requests
//
// Every request but GET /openapi.json, GET / (a short object pointing at
// the document) and CORS preflights carries Authorization: Bearer <API
// key> (else 401) and Service-Version: 2 (else 400 naming the header and
// the supported versions; a request with neither gets one 400 that names
// both and points at /openapi.json). Request bodies are
// JSON with Content-Type: application/json (else 415), at most 1 MiB (else
// 413, at once when Content-Length says so), decoded strictly: malformed
// JSON, unknown fields, keys that match a field only in case, a key
// written twice in one object (at any depth, as {"acl":[],"acl":["*"]})
// and wrong types are 400 naming the field by its JSON path (acl,
// certificate_management_policy.authority, labels["app"]). An empty body
// is an empty object. Update (PATCH) bodies change only the fields
// present; null counts as absent.
//
// The version header, authentication and the rate limit are checked, and
// the route found, before the body is read. A request refused there (or
// served by a route that takes no body) is answered at once, without
// waiting for its body, and its HTTP/1 connection is closed after the
// answer, the body unread. A body that is read is bounded in size, not in
// time: set http.Server.ReadTimeout (or ReadHeaderTimeout and a deadline
// of your own) so that an authenticated client cannot trickle one
// forever. (The connection is closed at once through
// [http.ResponseController]; behind a middleware whose ResponseWriter
// does not unwrap to net/http's, only the answer is prompt and the unread
// body is drained up to 256 KiB, bounded by ReadTimeout.)
//
// Lists take limit (1..100, default 100) and before_id, and answer
// {<collection>: [...], uri, next_page_uri}, newest first.
//
// # Filters
//
// Every list (and the sources of a subscription) takes filter, a CEL
// expression over obj, the resource as the API shows it, with fields by
// their JSON names (see package filter):
//
//	GET /credentials?filter=obj.description.startsWith("prod") && obj.owner_id == "usr_..."
//	GET /ip_policy_rules?filter=obj.ip_policy.id == "ipp_..."
//	GET /tls_certificates?filter=obj.not_after < timestamp("2025-01-01T00:00:00Z")
//
// A filter is at most 4096 bytes (filter.MaxBytes) and given at most once;
// it is type-checked against the resource and its worst-case cost bounded
// by the traffic policy engine's limits before anything is read. A
// malformed, ill-typed, too long or too costly filter is 400 with
// violations naming "filter", each reason starting with line:column
// ("1:5: undefined field 'descripton'"). A page holds up to limit
// matching resources and its next_page_uri keeps the filter; it scans at
// most 1000 resources (edgeplane.MaxFilterScan) and spends at most about
// 10,000,000 CEL cost units evaluating the filter
// (edgeplane.MaxFilterPageCost), and when a bound is reached first it
// holds the matches so far (possibly none) and a
// next_page_uri that continues after the last resource scanned, so a page
// with fewer than limit items is the last one only when next_page_uri is
// null. A resource on which the filter fails at run time (a method on a
// null field, an absent map key) does not match.
//
// # Errors
//
// Every error has the body
//
//	{"error_code": "ERR_SERVICE_<n>", "status_code": 400, "msg": "...",
//	 "details": {"operation_id": "op_..."}, "violations": [{"field": "acl[2]", "reason": "..."}],
//	 "violations_omitted": 12}
//
// (violations only when there are some, violations_omitted only when
// there are more than [MaxViolations]: the first 100 are listed, in the
// order found, and violations_omitted counts the rest). With several
// violations the msg names the first and counts the others ("invalid
// request: acl[0]: ...; and 11 more violations"), so that each is listed
// once. Codes map to statuses through one
// table ([StatusOf]): invalid argument 400, unauthenticated 401, permission
// denied 403, not found 404, method not allowed 405, conflict and failed
// precondition 409, payload too large 413, unsupported media type 415,
// resource exhausted 429, internal 500. An internal error answers a generic
// message with the operation id; its cause goes to the log only. Every
// response carries Service-Operation-Id.
//
// # IP restrictions
//
// After authentication, every request is checked against the IP
// restrictions of type api of the caller's account
// ([edgeplane.Service.CheckIPRestrictions]), by the client's address: the
// connection's peer, or, when the peer is one of
// [Options.TrustedProxies], the client its X-Forwarded-For names (walked
// from the right, past the trusted proxies). An enforced restriction that
// refuses it answers 403 (permission denied) naming the restriction,
// before the request counts toward the rate limit and before anything is
// read or written; one that is not enforced lets it through with a
// warning in the Service's log. The address is passed on as the
// principal's ClientIP, so that an enforced api restriction that would
// refuse the request writing it is refused (400, naming enforced).
//
// # Rate limit
//
// Each account may make 120 requests per rolling 60 seconds by default
// ([Options.RateLimit], [Options.RateWindow]), enforced by this library's
// sliding-window limiter per server; beyond it requests get 429 with a
// Retry-After header in whole seconds. Requests that fail authentication
// are not counted against any account.
//
// # CORS
//
// By default ([Options.AllowedOrigins] empty) every origin is allowed
// without credentials: a request with an Origin header gets
// Access-Control-Allow-Origin: * and never
// Access-Control-Allow-Credentials, since the API authenticates with
// bearer keys, not cookies. When the host lists origins, only a listed
// origin is allowed: it is echoed in Access-Control-Allow-Origin with
// Access-Control-Allow-Credentials: true, any other origin gets no CORS
// headers, and every response carries Vary: Origin. A preflight (OPTIONS
// with Origin and Access-Control-Request-Method) from an allowed origin
// gets the methods of that path, the requested headers echoed and a max
// age of 600 seconds; answers to allowed origins expose
// Service-Operation-Id and Retry-After.
//
// # Limits
//
// What the server repeats is bounded, whatever the request sent: an error
// lists at most [MaxViolations] (100) violations; a msg and each reason
// have at most [MaxMessageBytes] (1024) bytes; each violation's field and
// each piece of the request (path, method, header value) quoted in a msg
// or written to the request log has at most [MaxEchoBytes] (512) bytes.
// Longer text is cut at a UTF-8 boundary and ends with "…". Bodies are at
// most [Options.MaxBodyBytes] (1 MiB); the request line and headers are
// bounded by the http.Server (MaxHeaderBytes, 1 MiB by default).
package httpapi
