// Package edges holds edgeplane's edges and their modules: HTTPS edges
// ([HTTPSEdge]) with their routes ([HTTPSRoute]), TLS edges ([TLSEdge]) and
// TCP edges ([TCPEdge]); the ten modules that hang off them, with the
// parameters that replace each one and their validation.
//
// The package is a leaf: it holds models and pure logic. Storage,
// identifiers, URIs, the checks that referenced IP policies and backends
// exist, and the parsing and compilation of traffic policies belong to the
// edgeplane Service. URI fields, including those of Refs, are stored empty
// and filled by the Service when it returns a resource. The runtime form of
// an edge, what an edge proxy applies, is package
// [github.com/edgeplane/edgeplane/edgeconfig].
//
// # Edges and routes
//
// Every edge and route has id, uri, created_at, description (at most 255
// bytes) and metadata (at most 4096 bytes). An edge also has hostports
// (see below). A route also has edge_id, match_type (exact_path or
// path_prefix) and match, a URL path starting with "/" (see
// [CheckMatch]). HTTPS edges are created and updated with
// [CreateEdgeParams] and [UpdateEdgeParams], TLS edges with
// [CreateTLSEdgeParams] and [UpdateTLSEdgeParams], TCP edges with
// [CreateTCPEdgeParams] and [UpdateTCPEdgeParams], routes with
// [CreateRouteParams] and [UpdateRouteParams]; in update parameters a nil
// field is absent and leaves the value unchanged.
//
// TLS and TCP edges and routes take their modules inline too, at create
// and at update, under the same names as in responses
// ({"match": "/", "match_type": "path_prefix", "backend": {"backend_id":
// "bkdtg_…"}, "compression": {"enabled": true}}). An inline module is the
// request body of its replace operation: validated by the same params
// type, its violations named under the module
// (backend.backend_id, traffic_policy.value.inbound[0].expressions[1]),
// and set in the same single write as the rest of the edge or route (one
// created or updated event). At update, a module given replaces the
// module whole and a module not given is left as it is; a module is
// removed only by its delete operation. An HTTPS edge has no modules of
// its own: its routes carry them.
//
// # Hostports
//
// An edge serves the hostports it lists: "host:port" ([ParseHostport]),
// at most [MaxHostports] per edge, listed once each, returned in
// canonical form (host lower-cased, no trailing dot, port without
// leading zeros) and as [] when none. The host must be a reserved domain
// of the edge's account, or be covered by a wildcard reserved domain of
// it (*.example.com covers a.example.com); a name reserved by another
// account is never served through a wildcard of this one (checked when
// the hostports are set: a name reserved later does not take a hostport
// away from the edge that holds it, and its owner's edges clash with it). A hostport may
// itself be a wildcard (*.example.com:443) when that wildcard is
// reserved. A hostport is used by one edge in the whole service, across
// edge kinds and accounts: a second use is a conflict naming the
// hostport. An update that gives hostports replaces the list ([] removes
// them all).
//
// An edge or route shows its modules as fields named after the module's
// path (oidc, backend, response_headers, compression, traffic_policy,
// ip_restriction, tls_termination), null when the module is not set. A
// module is stored inside its edge or route, so replacing it is one
// atomic write of that record, and the record's references ([TLSEdge.Refs]
// and the like: the IP policies and backends its modules name) are checked
// in the same step.
//
// # Modules
//
// Each module has its own type (the stored and returned shape) and a
// params type (the request of a replace). Every params type has Validate,
// which reports every broken rule at once as an InvalidArgument
// [apierr.Error] whose violations name fields by JSON path (issuer,
// scopes[2], add["X-Foo"], remove[1], ip_policy_ids[0], min_version), and
// Module, which returns the module to store. Enabled defaults to true when
// absent.
//
//   - OIDC ([OIDCParams]): issuer is an absolute https URL without user
//     information, query or fragment; client_id and client_secret are
//     required and returned. Fields not supplied are stored and returned as
//     "", 0 and false; the cookie prefix in force is
//     [OIDC.EffectiveCookiePrefix] ([DefaultCookiePrefix], "service.", when
//     empty). Scopes are kept in order, never null.
//   - Backend ([BackendParams]), on HTTPS routes, TCP edges and TLS edges:
//     the request names backend_id, which must be a tunnel group backend
//     (bkdtg_) of the account; the response shows it as the backend Ref
//     (under /backends/tunnel_group/). SPEC 2.7 lists no backend module
//     for TLS edges; edgeplane adds one (/edges/tls/{id}/backend, and
//     backend on a TLS edge's create and update), the same as a TCP
//     edge's, because an edge proxy must send a TLS edge's connections to
//     some tunnels (edgeconfig.TLSEdge.Backend).
//   - Response headers ([ResponseHeadersParams]): add maps header names to
//     values, remove lists names. Names are HTTP tokens ([IsToken]), stored
//     and returned lower-cased; two names that differ only in case are
//     refused; values may not hold CR, LF or NUL. add is {} and remove []
//     when empty.
//   - Compression ([CompressionParams]): enabled only.
//   - IP restriction ([IPRestrictionParams]), on TLS and TCP edges: 1 to
//     [MaxIPPolicies] distinct IP policies of the account; the response
//     shows them as ip_policies Refs. At run time
//     edgeconfig.IPRestriction.Allowed answers whether a source address
//     may connect, from the policies' rules (deny wins; with any allow
//     rule, unmatched addresses are refused).
//   - Traffic policy ([TrafficPolicyParams]), on TLS edges and on HTTPS
//     routes: value is a traffic policy document as a JSON string. The
//     Service parses, validates and compiles it with its policy engine, for
//     connection traffic on a TLS edge and for HTTP on a route (so a
//     route's policy may use HTTP variables, the outbound phase and HTTP
//     actions such as rate-limit, and may not use on_tcp_connect);
//     violations are located under value
//     (value.inbound[0].expressions[1]). The value is stored and returned
//     re-serialized compactly by the policy package: no insignificant
//     whitespace, phases in the order inbound then outbound, the keys of a
//     rule in the order name, expressions, actions, and action configs as
//     written (compacted, their keys in document order).
//   - TLS termination ([TLSTerminationParams]), on TLS edges: terminate_at
//     is edge (the default) or upstream; min_version is 1.0, 1.1, 1.2, 1.3
//     or null (the service default, [DefaultMinTLSVersion]: see
//     [TLSTermination.EffectiveMinVersion]), and must be null with
//     upstream. A TLS edge cannot hold both a traffic policy module and a
//     TLS termination module that terminates upstream
//     ([TLSEdge.CheckModules]): the policy needs the decrypted traffic.
//
// # Decisions where the specification is silent
//
//   - Edges have no fields beyond id, uri, created_at, description,
//     metadata, hostports and their modules.
//   - Ports: HTTPS and TLS edges serve on port 443 only ([HTTPSPort]), the
//     port their clients use when a URL names none, as the original
//     service requires; TCP edges on any port from 1 to 65535.
//   - The service has no reserved TCP addresses: a TCP edge's hostport
//     names a reserved domain of the account, like the other edges', with
//     the port the edge listens on. Since a hostport serves one edge of
//     any kind, app.example.com:443 cannot be both an HTTPS edge's and a
//     TCP edge's.
//   - A TCP port serves one TCP edge in the whole service: a TCP client
//     names no host, so an edge proxy can tell TCP edges apart by port
//     only (as the original's reserved TCP addresses each have a port of
//     their own). A TCP edge may list several hosts on one port; a
//     second TCP edge, of any account, on a port in use is a conflict
//     naming its hostport.
//   - A reserved domain that an edge's hostport uses cannot be released:
//     deleting it is a conflict naming the edge ("the hostports of HTTPS
//     edge edghts_…"); change the edge's hostports first.
//   - Inline modules of a route or edge are validated and written exactly
//     as their replace operations would (one validation); an inline module
//     cannot be removed by an update, as in the original API.
//   - The specification lists nine modules; a tenth, the HTTPS route
//     traffic policy module (/edges/https/{edge_id}/routes/{id}/traffic_policy),
//     gives the rate-limit action a home. It has the TLS edge traffic
//     policy module's shape ({enabled, value}) and rules, but its document
//     is compiled for HTTP: on_tcp_connect is refused, outbound rules run
//     on responses, and rate-limit is allowed in inbound rules (it is
//     refused on a TLS edge, whose policy sees no HTTP request). A route
//     shows it as traffic_policy. No other route module excludes it.
//   - A compiled traffic policy's rate limiters are scoped to its edge or
//     route ID: two routes with identical rate-limit configs count
//     separately, and recompiling the same route's config (a reload, or a
//     replace with the same rate-limit config) keeps the counts. The
//     policy engine holds limiters only while some compiled policy uses
//     them, so a proxy keeps its current config until the reloaded one is
//     compiled (which swapping a pointer after the reload does).
//   - Routes carry edge_id. Two routes of one edge may not have the same
//     match_type and match (a conflict); a match is at most 1024 bytes,
//     without spaces, control characters, "?" or "#".
//   - Reading or deleting a module that is not set is not found (deleting
//     is not silently idempotent), naming the edge or route and the module.
//   - Limits: at most [MaxHostports] (10) hostports per edge, each at
//     most [MaxHostportBytes]; OIDC issuer 2048 bytes, client_id and client_secret 1024
//     bytes without control characters, cookie_prefix 64 bytes of token
//     characters, at most 100 scopes of 1 to 256 scope-token characters
//     (printable ASCII but space, '"' and '\'), distinct; response headers
//     at most 100 added and 100 removed, names 256 bytes, values 4096
//     bytes; a header may not be both added and removed; a traffic policy
//     value at most [MaxTrafficPolicyBytes].
//   - The module combination rule counts modules that are set, enabled or
//     not: a disabled upstream TLS termination module still refuses a
//     traffic policy, so enabling a module never needs another check.
//   - A disabled module still holds its references (an IP policy or
//     backend it names cannot be deleted); the IP policies named by
//     restrict-ips actions of a traffic policy are held too.
//   - Without an enabled TLS termination module a TLS edge terminates TLS
//     at the edge with TLS 1.2 as the minimum; with upstream termination
//     [TLSTermination.EffectiveMinVersion] is "" and
//     edgeconfig.TLSEdge.MinVersion is 0.
//   - A response headers module replaces the values the upstream sent for
//     the headers it adds, after removing those it removes
//     (edgeconfig.ResponseHeaders.Apply).
package edges
