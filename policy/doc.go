// Package policy is edgeplane's traffic policy engine: it compiles traffic
// policy documents (rules of CEL expressions and actions) once, and
// evaluates them on every HTTP request, HTTP response or TLS/TCP connection
// an edge proxy handles. Proxies embed it; the Service uses it to validate
// and store the traffic policies of TLS edges and HTTPS routes.
//
// CEL comes from cel.dev/cel-go (the module formerly published as
// github.com/google/cel-go). No cel-go type appears in this package's API.
//
// # Documents
//
// A document is a JSON object with a list of rules per phase:
//
//	{
//	  "inbound": [
//	    {
//	      "name": "block internal ranges",
//	      "expressions": ["inCidrRanges(conn.client_ip, ['10.0.0.0/8'])"],
//	      "actions": [{"type": "deny", "config": {"status_code": 403}}]
//	    }
//	  ],
//	  "outbound": [...]
//	}
//
// inbound rules run before the upstream: on each HTTP request, or on each
// new connection of a TLS/TCP edge. outbound rules run on each HTTP
// response. on_http_request and on_tcp_connect are accepted as names of the
// inbound phase (of HTTP and connection policies respectively), and
// on_http_response as the name of the outbound phase; any other key is
// refused, as is a document naming one phase twice. A rule has an optional
// name, a list of CEL expressions that must all be true (none means
// always) and a non-empty list of actions, each with a type and an
// optional config object. [Parse] checks this shape; [Document.MarshalJSON]
// and [Policy.MarshalJSON] give the compact form (the phase names and
// configs as written).
//
// # Compiling
//
// An [Engine] compiles documents. It owns the CEL environment, the action
// registry (built-in actions plus the host's, see [ActionType]) and a pool
// of rate limiters. [Engine.Compile] type-checks every expression (it must
// be boolean), applies the limits (section Limits), decodes every action
// config strictly (unknown, duplicate and differently-cased keys are
// refused) and validates it, and compiles every ${...} template. It returns
// every problem at once as an InvalidArgument [*apierr.Error] with one
// violation per problem, located by JSON path:
//
//	on_http_request[0].expressions[0]: rule "bad": 2:2: undeclared reference to 'req'; ...
//	on_http_request[0].actions[0].config.status_code: rule "bad": must be between 400 and 599, got 200
//	on_http_request[1].actions[0].config.rate: must be a whole multiple of 10s, got "65s"
//
// The reason names the rule when it has a name and, for CEL problems, gives
// line:column within the expression. An action that can never run, because
// an action that always ends evaluation (deny, custom-response, redirect
// without from) precedes it in the same rule, is refused.
//
// [CompileOptions].Target selects the traffic. An HTTP policy
// ([TargetHTTP]) sees req.*, conn.*, oidc.* and, in outbound rules, res.*. A
// connection policy ([TargetConnection], for TLS and TCP edges) has only
// inbound rules, sees conn.* and time.now, and allows the log, deny,
// restrict-ips and set-vars actions; an HTTP-only variable, function or
// action in it is a compile error that says so.
//
// A compiled [Policy] is immutable and safe for concurrent use.
//
// # Evaluating
//
// [Policy.Inbound] evaluates an HTTP policy's inbound rules on a [Request],
// [Policy.Outbound] its outbound rules on the upstream's [Response], and
// [Policy.Connect] a connection policy on a new [Conn]. Rules run in order;
// a rule applies when all its expressions are true, and its actions then
// run in order. deny, custom-response, redirect, and restrict-ips and
// rate-limit when they refuse, end evaluation. The [Result] says what the
// host must do: [Continue] (applying the accumulated header edits and URL
// rewrite), [Respond] with a status, headers and body, or [Close] the
// connection; [Forward] (forward-internal) only for a host that sets
// [Request.Internal]. [Result.ApplyHTTP] applies an inbound result to a net/http
// request, [RequestFromHTTP] builds the Request, and [Policy.Handler] is
// net/http middleware doing both phases (it forwards to no internal
// endpoint: forward-internal answers as for one offline).
//
// Header changes and URL rewrites are visible to later rules of the same
// evaluation. The Request is never modified. Time is injected: the
// evaluation time is Request.Time (or Connect's argument), else the
// Engine's [Options].Clock.
//
// # Variables
//
// Every variable, with its CEL type, where it is available (H: HTTP
// inbound and outbound, O: HTTP outbound only, C: connection policies too)
// and an example value:
//
//	Variable                                  Type                      Where  Example
//	req.method                                string                    H      "GET"
//	req.host                                  string                    H      "api.example.com:8443" (Host header, port kept)
//	req.url                                   string                    H      "https://api.example.com:8443/v1/users?id=7"
//	req.url.path                              string                    H      "/v1/users" (decoded)
//	req.url.query                             string                    H      "id=7" (raw, without '?')
//	req.url.scheme                            string                    H      "https"
//	req.url.query_params                      map(string, list(string)) H      {"id": ["7"]}
//	req.headers                               map(string, list(string)) H      {"accept": ["*/*"], "x-api-key": ["k1"]} (lower-case keys)
//	req.content_length                        int                       H      512 (-1 when unknown)
//	req.user_agent                            string                    H      "curl/8.5.0" ("" when absent)
//	req.version                               string                    H      "HTTP/1.1"
//	res.status_code                           int                       O      502
//	res.headers                               map(string, list(string)) O      {"content-type": ["text/html"]}
//	conn.client_ip                            string                    C      "198.51.100.10" ("" when unknown)
//	conn.client_port                          int                       C      40000
//	conn.server_ip                            string                    C      "192.0.2.1"
//	conn.server_port                          int                       C      443
//	conn.ts.start                             timestamp                 C      timestamp("2025-01-01T00:00:00Z")
//	conn.tls.sni                              string                    C      "api.example.com" ("" without TLS)
//	conn.tls.version                          string                    C      "1.3" ("" without TLS)
//	time.now                                  timestamp                 C      timestamp("2025-01-01T00:00:05Z")
//	vars                                      map(string, string)       C      {"tenant": "acme"} (set by set-vars; vars.tenant)
//	req.cookies                               map(string, list(string)) H      {"session": ["abc"]} (from the Cookie headers)
//	req.url.host                              string                    H      "api.example.com" (req.host without port or brackets)
//	req.url.port                              int                       H      8443 (of req.host, else 443 for https, 80 for http)
//	req.url.raw_path                          string                    H      "/v1/a%2Fb" (the escaped path)
//	req.content_type                          string                    H      "application/json" ("" when absent)
//	conn.tls.cipher_suite                     string                    C      "TLS_AES_128_GCM_SHA256" ("" without TLS)
//	conn.tls.alpn                             string                    C      "h2" ("" without ALPN)
//	conn.tls.client_cert.subject              string                    C      "CN=client,O=Example" (RFC 2253; "" without a client certificate)
//	conn.tls.client_cert.issuer               string                    C      "CN=Example CA"
//	conn.tls.client_cert.sans                 list(string)              C      ["client.example.com", "192.0.2.7"] (DNS, email, IP, URI)
//	conn.tls.client_cert.fingerprint          string                    C      "3f4a..." (SHA-256 of the DER form, lower-case hex)
//	endpoint.edge_id                          string                    C      "edghts_1" (Conn.EdgeID, "" when the host gave none)
//	endpoint.route_id                         string                    H      "edghtsrt_1" (Request.RouteID)
//	oidc.authenticated                        bool                      H      true (a user signed in through the route's OIDC module)
//	oidc.subject                              string                    H      "248289761001" (the ID token's sub)
//	oidc.issuer                               string                    H      "https://accounts.example.com"
//	oidc.email                                string                    H      "ada@example.com"
//	oidc.email_verified                       bool                      H      true
//	oidc.name                                 string                    H      "Ada Lovelace"
//	oidc.preferred_username                   string                    H      "ada"
//	actions.service.rate_limit.bucket_key     string                    H      "198.51.100.10"
//	actions.service.rate_limit.limited        bool                      H      true
//	actions.service.rate_limit.error.code     string                    H      "ERR_RATE_LIMIT_BUCKET_KEY_TOO_LONG"
//	actions.service.rate_limit.error.message  string                    H      "the bucket key is longer than 4096 bytes and was truncated"
//	actions.service.rate_limit.limit          int                       H      100 (the capacity; extension)
//	actions.service.rate_limit.remaining      int                       H      42 (0 when limited; extension)
//	actions.service.rate_limit.reset          int                       H      17 (seconds, at least 1; extension)
//	actions.service.deny.denied               bool                      C      true (the deny ran, enforced or not)
//	actions.service.restrict_ips.action       string                    C      "deny" ("allow" or "deny")
//	actions.service.restrict_ips.matched_cidr string                    C      "10.0.0.0/8" ("" when no entry decided)
//	actions.service.basic_auth.authenticated  bool                      H      true
//	actions.service.basic_auth.username       string                    H      "alice" ("" when not authenticated)
//	actions.service.jwt_validation.valid      bool                      H      true
//	actions.service.jwt_validation.subject    string                    H      "alice" (the token's sub)
//	actions.service.jwt_validation.error      string                    H      "invalid token: wrong audience" ("" when valid)
//	actions.service.redirect.matches          bool                      H      true
//	actions.service.redirect.url              string                    H      "https://example.com/v2/users" ("" without a match)
//	actions.service.url_rewrite.matches       bool                      H      true
//	actions.service.url_rewrite.url           string                    H      "https://api.example.com/v2/users?id=7"
//
// The variables from req.cookies down are extensions of the SPEC (issue
// 19): the host provides the TLS details in TLSInfo (RequestFromHTTP
// copies them from the connection state) and the edge and route in
// Conn.EdgeID and Request.RouteID. The client certificate's strings are
// formatted once per evaluation that reads them.
//
// The oidc.* variables (an extension of the SPEC, issue 17) are the
// identity an HTTPS route's OIDC module authenticated, in inbound and
// outbound rules alike: the host passes it in Request.OIDC (an
// [OIDCIdentity]; the edge proxy sets it from the session the module
// checked, before the route's traffic policy runs). They are set only on
// routes with the OIDC module, for requests carrying a session: on a route
// without it, on a request the module lets through unauthenticated (an
// OPTIONS request with options_passthrough), and for a host that sets
// nothing, oidc.authenticated and oidc.email_verified are false and the
// strings are "" (nothing a client sends, such as Service-OIDC-* headers,
// changes that). The strings are "" when the token had no such claim;
// oidc.email_verified is the email_verified claim as given, so test it
// together with oidc.email.
//
// conn.client_ip is the socket's peer address, never taken from
// X-Forwarded-For; IPv4-mapped IPv6 addresses are unmapped and zones
// dropped. Header names are case-insensitive: req.headers has lower-case
// keys, so req.headers['x-api-key'] works and req.headers['X-Api-Key'] is a
// missing key. A Request's header map should use canonical keys as net/http
// does; other spellings are found too (if several spellings of one name
// are present, the canonical one wins, else the smallest).
//
// Modelling req.url: req.url is a string and req.url.path, req.url.query,
// req.url.scheme and req.url.query_params are variables of their own.
// Every name in the table is a declared CEL variable with a dotted name;
// CEL resolves a dotted name to the longest declared variable, so req.url
// is the URL string while req.url.path is the path, and both behave as
// written (req.url.size(), req.url.path.startsWith('/v1')). req, conn and
// res on their own are not variables.
//
// Action result variables (actions.service.<action>.<field>) hold the
// value of the action's last execution in this request, and their type's
// zero value before it first ran. The inbound result carries them to
// [Policy.Outbound] of the same Policy. They cost nothing when unused:
// Compile notes which of them the policy's expressions and templates read,
// and evaluation only computes and keeps those (the inbound result carries
// them only when an outbound rule reads some).
//
// # Functions
//
// Besides CEL's standard functions, cel-go's string extensions (charAt,
// indexOf, lastIndexOf, lowerAscii, upperAscii, replace, split, substring,
// trim, join, quote, reverse, format) and, as extensions of the SPEC,
// cel-go's libraries Encoders (base64.encode, base64.decode), Lists
// (lists.range up to limits.MaxListRange elements, distinct, flatten, reverse,
// slice, sort, sortBy, first, last), Sets (sets.contains,
// sets.equivalent, sets.intersects), Math (math.greatest, math.least,
// math.abs, math.ceil, math.floor, math.round, math.sign, math.bitAnd and
// the other bit functions, math.isNaN...), Network (ip, cidr, isIP,
// isCIDR, ip.isCanonical, family, isLoopback, isGlobalUnicast,
// isLinkLocalMulticast, isLinkLocalUnicast, isUnspecified, containsIP,
// containsCIDR, masked, prefixLength) and optional types (optional.of,
// optional.none, x[?k], x.?f, orValue, hasValue, value), each charged by
// its own cost model, at compile time and at run time, under the same
// limits; and the package's own:
//
//	Function                          Result        Where  Meaning
//	getReqHeader(name)                list(string)  H      values of a request header; [] when absent; name case-insensitive
//	hasReqHeader(name)                bool          H      whether the request has the header
//	getResHeader(name)                list(string)  O      values of a response header; [] when absent
//	hasResHeader(name)                bool          O      whether the response has the header
//	getQueryParam(name)               list(string)  H      values of a query parameter; [] when absent; name case-sensitive
//	hasQueryParam(name)               bool          H      whether the query has the parameter
//	inCidrRange(ip, cidr)             bool          C      whether ip is in cidr, for example inCidrRange(conn.client_ip, '10.0.0.0/8')
//	inCidrRanges(ip, cidrs)           bool          C      whether ip is in one of the list of CIDRs
//	getReqCookie(name)                list(string)  H      values of the request's cookies named name (case-sensitive); [] when none
//	hasReqCookie(name)                bool          H      whether the request has a cookie named name
//	parseURL(url)                     map(string, string)  C  scheme, host, hostname, port, path, raw_path, query and fragment of a URL or reference; an error when invalid
//	sha256(s), sha1(s), md5(s)        string        C      lower-case hex digest of the string's bytes
//
// Cookies are read from the request's Cookie headers as net/http reads
// them (pairs separated by ';', spaces trimmed, surrounding double quotes
// removed). The cookie functions and the hashes run on the native path
// too; they are charged one unit plus CEL's traversal of their input (the
// Cookie headers, the hashed or parsed string), on both paths alike.
// Functions of cel-go's extension libraries run on cel-go only.
//
// An invalid IP or CIDR given to inCidrRange at run time is an error; a
// literal one is refused at compile time. An IPv4 address is never in an
// IPv6 prefix, nor the other way round.
//
// vars holds the variables set-vars actions set (an extension of the
// SPEC): vars.<name> or vars['<name>'] is the value the last set-vars
// (or jwt-validation, from a claim) that ran in this evaluation gave
// <name>. Reading a name that no set-vars or jwt-validation action before
// that point of the document sets (in document order:
// inbound rules, then outbound; a rule's expressions run before its own
// actions) is a compile error; a name set by a rule that did not apply is
// a missing map key at run time (test it with has(vars.<name>)). The
// inbound result carries vars to Outbound when outbound rules read them.
// Expressions reading vars run on cel-go, not the native path.
//
// # Templates
//
// Config strings documented as templated may contain ${expr} parts: CEL
// expressions over the same variables as the rule's expressions, producing
// a string, number, boolean, timestamp, duration or bytes, rendered as
// CEL's string() does. Braces and quotes inside the expression are allowed
// (${ {'a': 'b'}['a'] }). There is no escape for a literal "${". In the to
// field of redirect and url-rewrite, $1 to $99 in the literal text refer to
// the capture groups of from, and $$ is a literal $.
//
// # Actions
//
// Built in (config fields; all optional unless marked required):
//
//   - log: metadata (object of templated strings). Sends a [LogEntry] to
//     the [Sink]. HTTP and connection policies.
//   - deny: status_code (400-599, default 403), enforce (bool, default
//     true). Ends evaluation with the status and no body; on a connection
//     policy, closes the connection (and status_code is refused). Sets
//     actions.service.deny.denied. With enforce false (shadow mode) it only
//     sets the variable, and actions may follow it in the rule.
//   - custom-response: status_code (200-599, default 200), body
//     (templated), headers (object of templated values). Ends evaluation
//     with that response. HTTP only; replaces the upstream's response in
//     outbound rules.
//   - add-headers: headers (required; object of templated values).
//     Appends to the request headers (inbound) or response headers
//     (outbound). HTTP only.
//   - remove-headers: headers (required; list of names). Removes request
//     (inbound) or response (outbound) headers. HTTP only.
//   - redirect: to (required, templated), from (regex), status_code
//     (300-399, default 302). Without from, every request is redirected to
//     to. With from, the first match of from in req.url is replaced by to
//     and the result is the Location; when from does not match, nothing
//     happens and evaluation goes on. Sets actions.service.redirect.matches
//     and .url (the Location, "" when from did not match). HTTP only.
//   - url-rewrite: from (required, regex), to (required, templated). The
//     first match of from in req.url is replaced by to; the result must
//     keep the scheme and host, and its path and query become the request's
//     (Result.RewriteURI). Sets actions.service.url_rewrite.matches and
//     .url (the rewritten URL, "" when from did not match). Inbound HTTP
//     only.
//   - restrict-ips: allow, deny (lists of CIDRs or single addresses),
//     ip_policies (list of IP policy IDs); at least one is required. The
//     connection's client IP is refused when it is unknown, in a deny
//     range, outside the allow ranges (when there are some) or not allowed
//     by the IP policies (when there are some): 403 on HTTP, close on a
//     connection. enforce (bool, default true): with false (shadow mode)
//     nothing is refused. Either way it sets
//     actions.service.restrict_ips.action ("allow" or "deny", what it
//     decided) and .matched_cidr (the deny or allow entry that decided, as
//     "198.51.100.0/24"; "" when none did: outside the allow ranges, or
//     decided by the IP policies). Inbound only.
//   - basic-auth: credentials (required; at most MaxBasicAuthCredentials
//     "username:hash" strings, the hash salted: bcrypt "$2b$..." of cost
//     at most MaxBcryptCost, or "$pbkdf2-sha256$<iterations>$<salt>$<key>"
//     with MinPBKDF2Iterations to MaxPBKDF2Iterations iterations, salt
//     and key in unpadded standard base64; a plain password is refused),
//     realm (default "restricted"), enforce (bool, default true). Checks
//     the request's one Authorization header ("Basic ...", at most
//     MaxBasicAuthHeaderBytes); without valid credentials ends evaluation
//     with 401 and WWW-Authenticate: Basic realm="...", charset="UTF-8",
//     unless enforce is false. Sets actions.service.basic_auth.authenticated
//     and .username (so that a later rate-limit can key on the user). A
//     verified password is remembered (by an HMAC under a random key, never
//     in clear) for five minutes of evaluation time, up to 1024 per
//     action, so a client's requests do not each pay a slow hash; failures
//     are not. An unknown username is refused after verifying the password
//     against a configured hash, so response times do not tell which
//     usernames exist. An extension of the SPEC. Inbound HTTP only.
//   - jwt-validation: issuer (required), jwks_url (required; http or
//     https), audiences (list; when given, the token's aud must hold one),
//     vars (object of variable names to claim names), enforce (bool,
//     default true). Verifies the request's bearer token (one
//     Authorization header "Bearer <JWT>" in compact form, at most
//     MaxTokenBytes) with github.com/go-jose/go-jose/v4: its JWS signature
//     by the key of the issuer's JWKS its kid names (used with the key's
//     alg when the JWKS gives one, else an alg the key's type allows;
//     never "none", and a token without alg or with crit is refused),
//     exp, nbf and iat (30s of skew, by the evaluation time), iss and aud.
//     Without a valid token it ends evaluation with 401 and
//     WWW-Authenticate: Bearer, unless enforce is false. With one, it sets
//     each configured vars.<name> to its claim (a string as is, other
//     values as JSON, at most limits.MaxVarBytes), so later rules, templates and
//     rate-limit bucket keys read the claims. Sets
//     actions.service.jwt_validation.valid, .subject and .error. The JWKS
//     is fetched with [Options].HTTPClient when first needed, kept per
//     URL by the Engine for JWKSRefresh (by its clock), fetched again
//     sooner when a token verifies with none of its keys (a rotation), but
//     never more often than JWKSMinRefetch; a fetch (at most
//     JWKSFetchTimeout and MaxJWKSBytes) that fails keeps the previous
//     keys and is reported to the Sink; with no keys at all, tokens are
//     refused. Requests needing a fetch wait for it. An extension of the
//     SPEC. Inbound HTTP only.
//   - forward-internal: url (required, templated: an http or https URL
//     whose host ends in .internal, such as https://api.internal or
//     http://api.internal:8080; see [ParseInternalURL]), on_error (halt,
//     the default, or continue). Sends the request to the internal
//     endpoint of the same account at url instead of the upstream: when
//     [Request.Internal] says it is online, evaluation ends with the
//     verdict Forward and Result.ForwardURL, and the host forwards the
//     request (with the header edits and URL rewrite so far) and the
//     client gets that endpoint's answer. When it is not (or url renders
//     to no internal endpoint's URL), the error is reported and, with
//     on_error halt, evaluation ends with 404 (the endpoint is offline);
//     with continue the actions after it run, as a fallback. Sets no
//     variables, as the original's sets none. Inbound HTTP only.
//   - set-vars: vars (required; object of variable names to templated
//     values, at most limits.MaxVars). Renders every value, then sets them all,
//     so a value reads the variables as they were before the action (see
//     Variables). Names are ASCII identifiers of at most limits.MaxVarNameLength
//     bytes, not CEL reserved words; a value longer than limits.MaxVarBytes is
//     truncated and reported. An extension of the SPEC. HTTP and
//     connection policies.
//   - rate-limit: name, algorithm, capacity, rate, bucket_key (all
//     required, as SPEC 2.8 and the ratelimit package's Config.Validate
//     define them, except that a bucket_key element may also be a CEL
//     expression, see Rate limiting), enforce (bool, default true). Counts the request in the
//     bucket its key elements select and sets the rate_limit result
//     variables; when the bucket is full and enforce is on, ends evaluation
//     with 429 and retry-after in whole seconds (rounded up, at least 1).
//     With enforce false it only counts and sets the variables. Inbound
//     HTTP only. Extensions of SPEC 2.8 (off when absent): headers,
//     "none" (the default), "ietf" or "x-ratelimit", adds rate-limit
//     headers to the response the client gets; the bucket key element
//     conn.client_ip_prefix, with client_ip_prefix {"ipv4": 0-32, "ipv6":
//     0-128} (defaults 32 and 64; refused without that element); see Rate
//     limiting.
//
// Header names are validated as HTTP tokens; content-length,
// transfer-encoding, connection, keep-alive, proxy-connection, te,
// trailer, upgrade and host may not be changed (they could desynchronise
// the proxy and the upstream). Rendered header values have CR, LF and NUL
// replaced by spaces.
//
// # Rate limiting
//
// A rate-limit action asks a ratelimit.Limiter, with the evaluation time,
// whether its bucket has room. The bucket key is built from the key
// elements with ratelimit.AppendKeyPart, so different tuples never share a
// bucket; a header element uses all the header's values joined by ",". The
// Engine keeps a pool of limiters keyed by [CompileOptions].Scope and
// everything that shapes the counting (name, capacity, rate, bucket key
// elements and Options.RateLimitMaxKeys; not enforce). Compiling a
// document whose rate-limit config is unchanged, in the same scope, reuses
// the limiter and so keeps its counts across a policy reload, however
// many reloads and garbage collections come between. The pool holds
// limiters strongly, and drops one only by time: when a sweep finds it
// idle, every request time it was given being at least a window (plus
// the rest of a slot) before the Engine's clock ([Options].Clock), so
// that nothing in it counts any more and a new limiter decides as it
// would. Compiling sweeps at most once a minute of that clock;
// [Engine.ReleaseIdleRateLimiters] sweeps on demand. A dropped limiter
// that a live Policy still uses is never replaced by a second one for the
// same config while that Policy can use it: a compile adopts it again, as
// does the Policy's next request, so counts are never split. Capacity is
// per Engine (per ingress server, as SPEC 2.8 says).
//
// Bucket key expressions (an extension of SPEC 2.8): an element that is
// none of the fixed forms (req.host, conn.client_ip,
// conn.client_ip_prefix, req.headers['<name>'], getReqHeader('<Name>'),
// which keep their meaning) is compiled as a CEL expression that must give
// a string, over the same variables and functions as the rule's
// expressions and with the same limits (limits.MaxExpressionLength, nodes, cost,
// counted in the document's budgets); its problems are violations of
// config.bucket_key[i] with line:column. For example
//
//	"bucket_key": ["req.url.path.split('/')[1]", "hasReqHeader('x-api-key') ? req.headers['x-api-key'][0] : conn.client_ip"]
//
// It is evaluated per request on the native path when it has the common
// shapes, else by cel-go, charging the evaluation's budget. One that fails
// (a missing map key, an index out of range) counts as "" (so such
// requests share a bucket), is reported to the Sink, and sets error.code
// to ERR_RATE_LIMIT_BUCKET_KEY_EXPRESSION; one that runs out of budget
// fails the evaluation closed, counting nothing.
//
// Network prefixes (an extension of SPEC 2.8): the key element
// conn.client_ip_prefix is the client IP masked to a prefix, IPv4 to
// client_ip_prefix.ipv4 bits (default 32, the address) and IPv6 to
// client_ip_prefix.ipv6 (default 64), so that a client rotating addresses
// inside its /64 keeps one bucket. Its value (and the bucket_key variable)
// is the prefix's text, "2001:db8:1:2::/64"; an IPv4-mapped address counts
// as IPv4; an unknown client IP gives "". conn.client_ip stays the whole
// address.
//
// Feedback (an extension of SPEC 2.8): the limit, remaining and reset
// result variables give the limiter's capacity, how many more requests at
// the same time its bucket would admit (0 when limited), and the seconds
// until that number grows (rounded up, at least 1; for a limited request,
// retry-after), as ratelimit.Decision defines them. A config with headers
// "ietf" adds the headers of draft-ietf-httpapi-ratelimit-headers,
//
//	RateLimit-Policy: "<name>";q=<capacity>;w=<rate in seconds>
//	RateLimit: "<name>";r=<remaining>;t=<reset>
//
// (the name as a structured-field string, characters outside printable
// ASCII replaced by '_'), and "x-ratelimit" adds X-RateLimit-Limit,
// X-RateLimit-Remaining and X-RateLimit-Reset (seconds), as Envoy, Kong
// and APISIX do. They go in Result.ResponseHeader on an admitted request
// (ApplyHTTP and Handler set them on the upstream's response) and beside
// retry-after on a 429; a later rate-limit action with headers replaces an
// earlier one's.
//
// # IP policies
//
// restrict-ips may name IP policy IDs (ipp_...). The package does not know
// the Service: the host passes [CompileOptions].IPPolicies, an
// [IPPolicyResolver] called at compile time that returns an [IPChecker]
// consulted on every evaluation (so the host decides how fresh the IP
// policies are). Without a resolver, a config naming ip_policies is a
// compile error that says so.
//
// # Runtime errors
//
// An expression can fail at run time: a missing map key
// (req.headers['x-missing']), an index out of range, an invalid IP given
// to inCidrRange, a failed conversion. Then the rule does not apply (as if
// the expression were false), an [EvalError] with the expression's
// location (for example "inbound[2].expressions[0]") and the rule's name
// goes to the Sink, and evaluation goes on with the next rule. Such errors
// fail open for the rule concerned: write deny conditions so that they
// cannot fail ('x' in req.headers && ..., hasReqHeader, getReqHeader).
//
// Running out of the evaluation's cost budget ([limits.MaxEvaluationCost]) is
// different: it fails closed. The expression, template or from regex that
// would exceed the budget is not evaluated; an EvalError whose cause is
// [ErrCostLimit] goes to the Sink, located at it; its rule does not apply
// and evaluation ends there, with 403 Forbidden on an inbound HTTP
// evaluation, 502 Bad Gateway (replacing the upstream's response) on an
// outbound one, and Close on a connection, Result.Location naming where
// the budget ran out. Going on would let a client who can make one
// expression expensive (with a long URL or header) skip every later rule,
// deny rules included, since none of them could be evaluated either. CEL's && and || absorb an error when the other side decides the
// result (false && error is false). A ${...} template part that fails
// renders as "" and is reported the same way; an action that cannot do its
// work (url-rewrite producing another host) reports and does nothing.
// Evaluation never panics: a panic in a host's action is reported as an
// internal error and ends evaluation with 500 (close on a connection).
//
// # Limits
//
// Documents: [limits.MaxDocumentBytes] (1 MiB), [limits.MaxRulesPerPhase] (100 rules per
// phase), [limits.MaxExpressionsPerRule] and [limits.MaxActionsPerRule] (32 each), and a
// budget for the whole document, so that compiling one costs at most tens
// of milliseconds and megabytes (about 40 ms and 15 MB allocated for the
// costliest, see BenchmarkCompileWorstDocument): [limits.MaxDocumentNodes] (5000 AST nodes over
// all expressions and templates, each counting [limits.ExpressionOverheadNodes]
// (10) more), [limits.MaxDocumentRegexProgramSize] (10,000 RE2 instructions over
// the distinct patterns) and [limits.MaxDocumentCost] (the sum of the worst-case
// costs estimated for every expression, template expression and from
// regex: 1,000,000). A document over one of them is refused with one
// violation naming the limit, at the expression that went over; nothing
// after it is checked. Each distinct regular expression is compiled once
// per document, shared by the cel-go programs, the native evaluators and
// the actions.
//
// Expressions: [limits.MaxExpressionLength] (4096 code points),
// [limits.MaxExpressionNodes] (2000 AST nodes), [limits.MaxRecursionDepth] (50, the CEL
// parser's recursion limit), [limits.MaxComprehensionNesting] (2),
// [limits.MaxRegexProgramSize] (1000 RE2 instructions, for matches() and for
// from fields), and [limits.MaxExpressionCost]: the worst-case cost CEL's cost
// model estimates at compile time may not exceed 1,000,000. The estimate
// assumes the request bounds servers built by this library set
// ([limits.MaxURLBytes] for the request target, answered 414 beyond;
// [limits.MaxRequestHeaderBytes] for the request line and headers): req.url.path,
// req.url.query and query parameters of up to 8 KiB, req.url of up to
// 8 KiB and a host name, every other request string, header name and
// value (and response header value) of up to 32 KiB, up to 128 headers or
// query parameters and up to 16 values each. [Policy.Handler] refuses a
// request beyond limits.MaxURLBytes (414) or limits.MaxRequestHeaderBytes (431) before
// evaluating it; a host calling Inbound itself should do the same (or
// configure its server so). A matches() call costs one
// unit per ten input characters per instruction of the pattern's RE2
// program, rather than CEL's per character of the pattern, since that is
// the work Go's regexp does.
//
// Evaluation: every call of Inbound, Outbound or Connect has a cost budget
// of [limits.MaxEvaluationCost] (1,000,000) in CEL's cost units, shared by all
// the expressions, ${...} templates and from regexes it evaluates, on the
// native path and on cel-go alike (both charge the same for the same
// expression); regexes and the native string operations are charged
// before they run, cel-go's other functions when they return. As
// limits.MaxDocumentCost equals it, an accepted document never runs out
// on requests within the assumed sizes; beyond them (a host with larger
// server limits, thousands of headers, a rewritten URL) the evaluation
// fails closed (section Runtime errors). Host actions' own work is not
// counted. Templates:
// [limits.MaxTemplateOutput] (64 KiB; a literal longer is refused, a longer
// rendering is truncated and reported), [limits.MaxTemplateExpressions] (32 per
// string). Rate-limit bucket keys: [limits.MaxBucketKeyBytes] (4096; a longer key
// is truncated and reported through actions.service.rate_limit.error.code).
// Variables: [limits.MaxVars] (64 distinct names per document), [limits.MaxVarNameLength]
// (64 bytes), [limits.MaxVarBytes] (8 KiB per value, the size the cost model
// assumes for vars.<name>; a longer value is truncated and reported).
// OIDC identity: the cost model assumes oidc.issuer is at most
// [limits.MaxOIDCIssuerBytes] (2048) and the other oidc.* strings at most
// [limits.MaxOIDCClaimBytes] (255), the bounds the edge proxy's OIDC module
// enforces; a host passing longer strings is charged their actual cost.
//
// # Performance
//
// Expressions made of the common shapes (comparisons of variables with
// literals, startsWith/endsWith/contains, matches with a literal regex, in
// a literal list, size, header and query lookups, inCidrRange(s) with
// literal CIDRs, &&, || and !) are reduced at compile time to native Go
// evaluators that read the request without boxing values, with exactly
// CEL's semantics (the package's tests compare both on every expression).
// What is reduced is chosen by the overload IDs the type checker resolved,
// never by function names. Everything else runs on cel-go with a pooled
// activation whose variables are resolved by a switch. A typical five-rule inbound policy evaluates in
// about 0.1 µs without allocating, and so does a rate-limit action whose
// result variables nothing reads (its bucket key is built in a reused
// buffer, the client IP appended as text without formatting a string);
// see the package's benchmarks. At the other end, the costliest documents
// limits.MaxDocumentCost accepts (dozens of regexes over the path or a header)
// take about 20 ms to evaluate on a request at the size bounds
// (BenchmarkEvaluateWorstDocument): that is what limits.MaxEvaluationCost
// allows.
//
// # Metrics
//
// [Options].Observer, an [Observer], is told of every rule that applies,
// every action that runs and every evaluation's target, phase, verdict and
// duration, on the evaluating goroutine and without allocating; with none
// (the default), evaluation pays nothing. The policyprom subpackage has a
// Prometheus collector (client_golang) that is an Observer, with the rule
// and action labels bounded.
//
// # Extending
//
// Hosts add action types through [Options].Actions: an [ActionType]
// validates a config at compile time ([CompileContext] decodes it strictly
// and compiles templates) and returns an [Action] that runs with a
// [RunContext] (respond, close, edit headers, rewrite the URL, log, set
// result variables declared through [ResultDeclarer]).
package policy
