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
// # Requests
//
// Every request but GET /openapi.json and CORS preflights carries
// Authorization: Bearer <API key> (else 401) and Service-Version: 2 (else
// 400 naming the header and the supported versions). Request bodies are
// JSON with Content-Type: application/json (else 415), at most 1 MiB (else
// 413), decoded strictly: malformed JSON, unknown fields and wrong types
// are 400 naming the field. An empty body is an empty object. Update
// (PATCH) bodies change only the fields present; null counts as absent.
//
// Lists take limit (1..100, default 100) and before_id, and answer
// {<collection>: [...], uri, next_page_uri}, newest first.
//
// # Errors
//
// Every error has the body
//
//	{"error_code": "ERR_SERVICE_<n>", "status_code": 400, "msg": "...",
//	 "details": {"operation_id": "op_..."}, "violations": [{"field": "acl[2]", "reason": "..."}]}
//
// (violations only when there are some). Codes map to statuses through one
// table ([StatusOf]): invalid argument 400, unauthenticated 401, permission
// denied 403, not found 404, method not allowed 405, conflict and failed
// precondition 409, payload too large 413, unsupported media type 415,
// resource exhausted 429, internal 500. An internal error answers a generic
// message with the operation id; its cause goes to the log only. Every
// response carries Service-Operation-Id.
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
// A preflight (OPTIONS with Origin and Access-Control-Request-Method) gets
// the methods of that path, the requested headers echoed, credentials
// allowed and a max age of 600 seconds. Responses to allowed origins carry
// Access-Control-Allow-Origin (the origin echoed) and expose
// Service-Operation-Id and Retry-After.
package httpapi
