// Package proxy is edgeplane's edge data plane as a library: what an edge
// proxy that serves every edge (HTTPS, TLS and TCP) of every account in
// a store, and every endpoint agents bind themselves, needs.
//
// It has two layers:
//
//   - [Configs] keeps the runtime config of every edge current by
//     following the store's change feed (below), and indexes the HTTPS
//     and TLS edges by the hosts they serve, with the hosts' TLS
//     certificates, and the TCP edges by port; and the same for the
//     agents' endpoints of an [EndpointSource] (# Endpoints below).
//   - [Handler] is the http.Handler over a Configs: it matches a request
//     to its edge by host, then to a route, and runs the route's
//     pipeline; [Handler.TLSConfig] terminates TLS with the certificate
//     of the reserved domain the ClientHello names; [Handler.Server]
//     wraps both in an http.Server with package httpserver's bounds; [Metrics]
//     is its Prometheus collector.
//   - [Streams] serves the TLS and TCP edges (connection traffic):
//     [Streams.SplitTLS] puts the TLS edges on the HTTPS port beside the
//     Handler's server, [Streams.ServeTCP] listens on the TCP edges'
//     ports; each connection is relayed to a tunnel of its edge's backend
//     (packages sni and relay).
//
// # The Host
//
// The proxy reads the store through a [Host], the interface this package
// declares with only the calls it makes: list the edges, compile an
// edge's config, read a backend's tunnels, a host's certificate, an
// account's IP restrictions and a pending ACME challenge, and wait for
// the reads to reflect a revision of the feed. The agents' endpoints
// come from an [EndpointSource]. The Service's *edgeplane.Host
// implements both, and the program that runs the proxy (cmd/edgeplane)
// wires it in; the package itself never imports the root package
// edgeplane, so a program that embeds the data plane does not compile
// the control plane. Of edgeplane's packages it imports leaves (the
// models of edges, backends, domains and agents, the runtime configs of
// edgeconfig, the policy engine, the HTTP server's bounds), store and
// store/follow for the change feed, and its own subpackages; a test
// fails if it, or one of its subpackages, imports the root again.
//
// # Routing
//
// HTTPS edges serve port 443 only (their hostports say so), and a
// hostport is used by one edge in the whole store, so a host names at
// most one HTTPS edge. A request's host is its Host header's host,
// lower-cased and without a trailing dot; a port in the Host header is
// ignored, because the proxy may listen behind a port mapping, a load
// balancer or, in development, on a high port. The edge that lists
// host:443 serves it, else the edge whose wildcard hostport covers the
// host (one label deep, as the Service's DataPlaneHost.EdgeByHostport resolves
// it). A host no edge serves gets a plain 404 ("no edge serves this
// host"), whatever account's edges exist. On TLS the ClientHello's server name must be
// the Host's host, else the request gets 421 Misdirected Request: a
// connection whose certificate was chosen for one tenant's name never
// reaches another tenant's edge. Within the edge, the path picks the
// route ([edgeconfig.HTTPSEdge.Route]); none matching is a 404.
//
// # The account's IP restrictions
//
// An account's IP restrictions of type endpoints
// ([Host.EndpointRestrictions]) apply to every request and
// connection of every edge and endpoint of the account, before anything
// of the edge's (OIDC, traffic policy, the TLS handshake), on the client's
// address (for HTTP, conn.client_ip: the trusted proxies' X-Forwarded-For
// applies). An enforced restriction whose IP policies refuse the address
// refuses the traffic: 403 for HTTP, the connection closed for TLS and
// TCP edges (counted as ip_restricted). A restriction that is not
// enforced lets it through and the proxy logs a warning naming it, one
// per request or connection. Their changes (a restriction created,
// updated or deleted, a rule of one of their IP policies) give the
// account's edges new snapshots without compiling anything. When an
// account's restrictions cannot be read (more than
// [ipaccess.MaxRestrictionsPerAccount], from a store written by other
// code), its edges refuse every client (fail closed) until a change to
// its restrictions reads them again.
//
// # TLS
//
// [Handler.TLSConfig] chooses the certificate in GetCertificate by the
// ClientHello's server name: the certificate of the reserved domain that
// serves the host ([Host.HostCertificate]: an uploaded
// certificate attached to the domain, or the one the certificate manager
// issued). Certificates are read with the edge's config and again when
// a reserved domain of the account changes, so a new certificate is
// presented from the next handshake on, without restart.
//
// A ClientHello that the proxy has no certificate for fails the
// handshake with the alert unrecognized_name (112, RFC 6066), which
// crypto/tls clients report as "tls: unrecognized name": a name no edge
// or endpoint serves, one whose domain has no certificate (none attached
// or issued yet, or one that does not load: logged when read), a hello
// without a server name (a client that dialled an IP address), and an
// acme-tls/1 hello for a name without a pending challenge. The same
// holds for a TLS edge or tls endpoint terminated at the edge (# TLS and
// TCP edges). Such handshakes, acme-tls/1 ones aside, are counted as
// no_certificate ([Metrics]). Only a failure of the server sends
// internal_error (80): an acme-tls/1 hello whose challenge the store
// cannot read. (crypto/tls sends internal_error for any error a
// certificate callback returns, [crypto/tls.AlertError] included, and
// unrecognized_name when it has no certificate to present: so
// GetCertificate returns none and no error for such a name.)
//
// # Certificates from ACME
//
// The certificate manager (package certmanager) stores each pending ACME
// challenge in the store, and every proxy answers it, whichever the CA
// reaches: an HTTP-01 request (GET or HEAD
// /.well-known/acme-challenge/<token> on the plain HTTP listener, or on
// HTTPS, where the CA follows a redirect) is answered with the key
// authorization of the stored challenge for its host and token, before
// edge routing and the account's IP restrictions (the CA's addresses are
// not known; a key authorization holds nothing secret: the token and the
// account key's public thumbprint); a token with no challenge goes on to the edges, so
// that an upstream may answer its own ACME client's challenges. A client
// address beyond [ACMEChallengeLimit] such requests in
// [ACMEChallengeWindow] gets 429, without a store read. A ClientHello on
// the HTTPS listener that offers the ALPN protocol acme-tls/1
// (TLS-ALPN-01, RFC 8737) gets the validation certificate of the stored
// challenge of its server name, or fails; the split of TLS edges leaves
// such a hello to the HTTPS server, whatever edge serves the name.
// Issued certificates reach the proxies as every certificate does (# TLS
// above).
//
// # Backends
//
// A route's backend is a tunnel group: its tunnels under lease, whose
// forwards_to URL (absolute http or https) is where the proxy sends the
// request (the agent that registers a tunnel names the address the
// proxy reaches it at; a host with a transport sets
// [HandlerOptions.Transport]), unless an agent's session holds the
// tunnel (see # Agents' tunnels below). So whoever may
// register a tunnel (any holder of a credential whose ACL binds the
// backend's labels) chooses an address the proxy connects to and whose
// answers it serves publicly: in production, set
// [HandlerOptions.UpstreamNetworks] to the networks the tunnels' servers
// live in, and the proxy refuses (502) to connect anywhere else, checked
// on the address dialled after name resolution. Requests go
// round-robin across them; a tunnel whose lease has ended never receives
// traffic, even before the reaper deletes it. A tunnel whose upstream
// failed (a connection error or a timeout) is skipped for
// [HandlerOptions.FailureBackoff] while another is usable (when all are
// in backoff, the next in turn is tried rather than refusing). The
// upstream sees the request's own Host header and X-Forwarded-For,
// X-Forwarded-Host and X-Forwarded-Proto. The answers of the proxy
// itself name no internals: 503 when the route has no backend or no
// tunnel under lease, 502 when the upstream fails (or its response
// headers exceed [HandlerOptions.MaxResponseHeaderBytes]: see # Limits),
// 504 when it does not send its response headers within
// [HandlerOptions.UpstreamTimeout].
//
// With the default transport, a request without a body to an http://
// tunnel takes a direct path: the handler writes the request to a
// kept-alive upstream connection and reads the answer in the request's
// own goroutine, without httputil.ReverseProxy or http.Transport, and
// the upstream and the client see what ReverseProxy would have sent
// them (a test compares the two). Requests with a body, Expect or
// Upgrade, https upstreams, a proxy set in the environment, or a
// Transport of the caller's go through httputil.ReverseProxy.
//
// # Agents' tunnels
//
// A tunnel that an agent holds through a tunnel server (its
// TunnelSession is set; package tunnel) is reached through the agent's
// session, never at its forwards_to, which is then informational
// ("app://laptop/server?pid=12") even when it names an address: the
// proxy hands each request or connection to [agents.Dialer.DialTunnel]
// ([HandlerOptions.Agents], [StreamOptions.Agents]: give both the same
// Dialer, the tunnel server), by tunnel ID, with an [agents.ConnHeader]
// that tells the agent the client's socket address (the peer of the
// proxy's connection, not X-Forwarded-For's client), the protocol and
// the edge type. Agents' tunnels take their turn in the round-robin and
// the passive health like any other: when DialTunnel fails (no session
// serves the tunnel here: [agents.ErrNoSession], or any error) the
// request gets 502, or a TLS or TCP edge's connection goes to the next
// tunnel, and the tunnel is skipped for the failure backoff. Without a
// Dialer they are skipped as tunnels that do not say where they forward
// are: a backend whose tunnels are all agents' answers 503 (closes a
// connection, counted no_upstream), as one without tunnels does.
//
// An HTTPS edge's request goes to the agent as HTTP/1.1 (the agent
// serves HTTP on its tunnel) with the headers a direct upstream gets
// (the client's Host, X-Forwarded-For, -Host and -Proto), on a stream
// of its own, told protocol "https" ("http" for a request that came
// over plain HTTP) and edge type HTTPS. Streams are not kept alive for
// later requests (decision: a stream's header names one client, and a
// pooled stream could carry another client's request; opening a stream
// costs the session a frame, not a handshake). The stream is opened
// within [HandlerOptions.UpstreamTimeout] (and 30 seconds at most),
// each write of the request on it must be taken by the agent within the
// upstream timeout, and the response headers are awaited for it after
// the request is written, whatever [HandlerOptions.Transport] is: an
// agent that stops reading (its stream's window spent, or its session
// stalled) costs the client a 504 within the upstream timeout, and its
// stream is reset (package tunnel). A TLS edge's connection goes told protocol "tls", edge type TLS
// and PassthroughTLS when the edge passes the client's TLS through
// (terminate_at upstream: the bytes are the client's TLS), not when it
// terminates TLS (the bytes are plaintext); a TCP edge's told "tcp" and
// edge type TCP. The stream is opened within
// [StreamOptions.ConnectTimeout] and relayed as any upstream connection
// is (idle timeout, half-close, byte counts).
//
// # Endpoints
//
// An agent may bind an endpoint itself (golang.ngrok.com/ngrok's
// listeners without an edge): https://app.example.com,
// http://app.example.com, tls://app.example.com:443 or
// tcp://tcp.example.com:20001, served by the proxies directly, with no
// edge, route or backend. The Configs reads them from
// [Options.Endpoints] (the Service's Host): it lists them all when it
// starts (every page, read once), then reads an endpoint again at each
// change of kind endpoint in the feed; one deleted, or not found when
// read, is no longer served (its host answers as an unknown host does,
// its open connections are cut). An endpoint goes with its agent's
// session: closing the session deletes it. [Configs.Endpoint] returns an
// endpoint's snapshot, an [Edge] whose Endpoint is set.
//
// Where they are served:
//
//   - https endpoints by host on the HTTPS port, TLS terminated with the
//     certificate of the account's reserved domain for the host, as for
//     HTTPS edges ([Configs.Certificate]);
//   - http endpoints by host on the plain HTTP port (a request that did
//     not come over TLS); there an http endpoint comes before an HTTPS
//     edge of the same host (decision: the endpoint's hostport is
//     host:80, the edge's host:443, which the plain port serves only for
//     want of an http one), and the HTTPS port does not serve it;
//   - tls endpoints by the ClientHello's server name on the HTTPS port,
//     split from it as TLS edges are ([Streams.SplitTLS]): passed
//     through (PassthroughTLS: the client's bytes, ClientHello first, go
//     to the agent, whose certificate the client sees) or terminated with
//     the reserved domain's certificate (TLS 1.2 at least; the agent
//     gets the plaintext);
//   - tcp endpoints by port: [Streams.ServeTCP] listens on the ports of
//     its range that a TCP edge or a tcp endpoint names
//     ([Configs.TCPPorts]).
//
// https and tls endpoints must be on port 443 and http ones on port 80
// (an endpoint elsewhere is not served, and is logged, as is one of
// another protocol or without a host name). Hosts are matched as edges'
// are: exact, else the wildcard ("*.example.com") that covers the host
// one label deep; an exact host comes before a wildcard whatever serves
// them. An edge and an endpoint never share a hostport (the control
// plane's store keys guarantee it); if the Configs ever sees both, the
// edge serves it and the clash is logged.
//
// Every request and connection of an endpoint meets, first, the
// account's IP restrictions (# The account's IP restrictions above),
// then the endpoint's traffic policy: compiled once per document (a new
// version of the endpoint with the same document keeps it), by
// [Options.Policy] with the endpoint's ID as its scope, as a route's
// policy is, for HTTP (http and https endpoints: inbound and outbound
// rules, rate limits and every action a route has) or for connections
// (tls and tcp: the on_tcp_connect rules, before any byte goes back);
// its endpoint.edge_id and endpoint.route_id variables are empty.
// IP policies are not resolved for endpoints: restrict-ips takes allow
// and deny CIDRs there. An endpoint whose policy does not compile (the
// control plane refuses such binds; this is defensive) refuses all its
// traffic, fail closed: 503 for HTTP, connections closed (counted
// policy_denied); it is logged when read. Then the traffic goes to the
// agent: [agents.Dialer.DialTunnel] with the endpoint's ID, as an
// agent's tunnel is reached (# Agents' tunnels above: the same Dialer,
// one stream per request, the same timeouts, relay, bounds and byte
// counts), told the client's socket address, the protocol (https for a
// request that came over TLS, http otherwise, tls or tcp), edge type
// [agents.EdgeNone] and, for a tls endpoint, PassthroughTLS. When the
// agent is not connected to this proxy's tunnel server
// ([agents.ErrNoSession]) or the stream fails, the request gets 502 (a
// connection is closed, counted upstream_failed), as when an upstream
// fails. Without a Dialer an endpoint answers 503 (a connection is
// closed, no_upstream).
//
// # Endpoint pools
//
// Endpoints an agent binds with pooling enabled (Endpoint.PoolingEnabled,
// the SDK's WithPoolingEnabled) on one host of one table (or one tcp
// port) form a pool: each keeps its own snapshot ([Configs.Endpoint]),
// and the host or port is served by the pool's snapshot, the oldest
// member's (its config, traffic policy, restrictions and certificate;
// the control plane refuses a member of another account, protocol or
// traffic policy, and one that slips through is left out) with one
// upstream per member. Its connections take turns over the members
// (round robin, each proxy its own counter), wherever their sessions
// are: unlike a backend's tunnels, a member held by another node takes
// its turn through the hop rather than only when no near one is
// healthy (decision: a pool spreads load, across nodes too). Healthy
// means a member whose dial last worked: when DialTunnel fails for one
// (its session gone from the node's table, or the hop to its node
// down) the request or connection goes to the next member at once,
// each member tried once, and the failed one is skipped for the
// failure backoff; when none answers, the answer is a lone endpoint's
// (502, a connection closed). A request whose stream opened and then
// broke before any answer (the member's session died under it) is sent
// to the next member too when it has no body and its method is GET,
// HEAD, OPTIONS or TRACE (one a client may repeat); never after a
// timeout, and never a request with a body, which gets the 502. A
// member that leaves the pool (its
// session closed, or unbound) is dropped from the pool's snapshot at
// the change; the last one takes the host with it. An endpoint without
// pooling never takes a pool's host or port from it (the control plane
// refuses the bind; its record exists for the instant of the refusal).
//
// In [Metrics] an endpoint is an edge whose ID is the endpoint's, with
// route "": its requests, durations and upstream errors count under
// those labels (bounded by [MetricsOptions.MaxSeries] with the edges'),
// its connections by kind and outcome as TLS and TCP edges' are, and its
// streams with the agent streams. Log lines name it as edge.
//
// # Internal endpoints
//
// An endpoint whose binding is internal ([agents.Endpoint.IsInternal]:
// an http or https endpoint under .internal, any port) is in no
// listener's table: a request or connection for its name is answered as
// for a name nothing serves. The forward-internal action of the traffic
// policy of an HTTPS edge's route or of an http or https endpoint
// reaches it: the request carries which internal endpoints of its
// account are online ([policy.Request.Internal]; only when the policy
// has the action), and on the verdict Forward the request (the
// verdict's header edits and URL rewrite applied) goes to the internal
// endpoint of [policy.Result.ForwardURL] as if sent to it directly: its
// own inbound rules run (a forward-internal among them forwards
// nowhere: one hop), its agent gets the request (edge type none, the
// public Host header and X-Forwarded-* as for any endpoint), and its
// outbound rules see the answer; the public route's outbound rules do
// not. From the forward on, the request is logged and counted as the
// internal endpoint's. An internal endpoint of another account is never
// found (the lookup is by account and URL). A target that is not
// online when the rules run is the action's error (404 with on_error
// halt; the next actions with continue); one that went offline between
// the rules and the forward answers 404; an agent that fails answers
// 502 as for any endpoint. Internal endpoints bound with pooling enabled
// on one name of one account form a pool as public ones do (keyed by
// the account and URL): the forward takes turns over its members. Forwarding HTTP requests is what is
// supported: TLS and TCP edges and endpoints do not forward
// (forward-internal does not compile in a connection policy).
//
// # OIDC
//
// A route with the OIDC module enabled lets a request through only with
// a session of its own ([oidcauth.Gate]: authorization-code flow with
// PKCE against the module's issuer, sealed session cookie named with the
// module's cookie_prefix, inactivity_timeout and maximum_duration
// enforced, OPTIONS let through when options_passthrough is set). The
// sign-in's callback, /.service/oidc/callback on the edge's host, is
// handed to the route it belongs to whatever route its path matches. The
// module runs before the route's traffic policy; the identity reaches the
// upstream in the Service-OIDC-* headers ([oidcauth.SetHeaders]), which
// are removed from every request of every route first, so a client
// never forges them. The session keys derive from
// [HandlerOptions.OIDCKey] (proxies that serve the same edges share it);
// a Handler without one answers such routes 503 (fail closed), as it
// does a module that cannot be applied. The route's traffic policy reads
// the identity (inbound and outbound rules) as the variables
// oidc.authenticated, oidc.subject, oidc.issuer, oidc.email,
// oidc.email_verified, oidc.name and oidc.preferred_username
// ([policy.OIDCIdentity]), never from the headers; on a route without the
// module, and for an OPTIONS request let through without a session, they
// are false and "".
//
// # TLS and TCP edges
//
// HTTPS and TLS edges share the hostports on port 443 (a hostport is one
// edge's), so they share the HTTPS port: [Streams.SplitTLS] reads each
// connection's ClientHello without consuming it ([sni.Peek], within
// [StreamOptions.HandshakeTimeout]); a server name that is a TLS edge's
// host (exact, or covered by its wildcard hostport) is served by the
// Streams, any other connection is handed, its ClientHello replayed, to
// the HTTPS server. A TLS edge's connection then meets, before any byte
// goes back to the client (a refused client never completes a
// handshake):
//
//   - the IP restriction module, on the socket's source address;
//   - the traffic policy module's inbound (on_tcp_connect) rules, run
//     with [policy.Policy.Connect]: deny, restrict-ips and log; conn.*
//     and conn.tls.sni are set, while conn.tls.version, cipher_suite,
//     alpn and client_cert are empty, since the handshake has not
//     happened (decision: refusing before the handshake is worth more
//     than those variables);
//   - the bound of [StreamOptions.MaxConnsPerEdge] open connections.
//
// Then the TLS termination module: terminate_at edge (the default)
// completes the handshake with the certificate of the reserved domain
// that serves the name and the module's min_version (TLS 1.2 by
// default), and relays the plaintext (a name whose domain has no
// certificate fails the handshake with unrecognized_name, as on the
// HTTPS server: # TLS); terminate_at upstream relays the
// client's bytes, ClientHello first, untouched, so the client's TLS
// session is with the upstream and it sees the upstream's certificate.
//
// A TCP client names no host, so a TCP edge is found by the port the
// connection arrived on: a port serves one TCP edge in the store (the API
// refuses a second). [Streams.ServeTCP] listens on each port of its
// range that a TCP edge names, opening and closing listeners as the
// Configs change ([Configs.TCPPorts]). A TCP edge's connection meets its
// IP restriction module and the per-edge bound, then is relayed.
//
// The relay ([relay.Pipe]) copies both ways; the end of one direction is
// passed on as a half-close, and the connection ends when both
// directions have, when nothing moved either way for
// [StreamOptions.IdleTimeout] (a side that stops reading while the other
// sends counts as idle too: a slow-read client cannot hold a connection
// open), or when the edge is deleted (decision: a
// deleted edge carries no traffic; any other change, a module or an IP
// policy, applies to new connections only and never cuts an open one).
// The upstream is a tunnel of the edge's backend, round-robin with
// passive health as for HTTPS, at the host and port of its forwards_to
// (tcp:// or tls:// URLs, or http(s):// with their default ports), or
// through its agent's session (# Agents' tunnels); when
// one refuses, the next is tried (no byte has been sent yet), within
// [StreamOptions.ConnectTimeout] each. [StreamOptions.UpstreamNetworks]
// restricts them as [HandlerOptions.UpstreamNetworks] does. A refused
// connection is closed, counted in [Metrics] by outcome and logged; a
// served one is logged when it ends, with the bytes each way.
//
// # Observability
//
// [Metrics] counts requests by edge, route, the policy action that
// answered and the status class, with a latency histogram; the edge and
// route labels are bounded by [MetricsOptions.MaxSeries]; it also counts
// the TLS and TCP edges' connections by outcome, and the streams opened
// to agents' tunnels by kind and outcome. Each request
// is logged at Info with its method, host, path, client IP, status,
// bytes, duration, account, edge, route, tunnel and the policy action
// that answered, built only when the logger has Info enabled.
//
// # Following the store
//
// [New] reads the feed's revision, lists every edge of every account
// ([Host.ListHTTPSEdges], ListTLSEdges, ListTCPEdges), and
// every endpoint ([EndpointSource.ListEndpoints]), and loads
// each one: its config compiled ([Host.HTTPSEdgeConfig]: routes,
// modules, traffic policies; [Host.TLSEdgeConfig],
// [Host.TCPEdgeConfig]) and the online tunnels of the backends
// it uses ([Host.BackendTunnels]). It then follows the feed from that
// revision, as etcd's watch and Kubernetes' informers do, in one
// goroutine that reads a page of changes at a time and rebuilds only what
// they affect:
//
//   - an edge created or updated (its modules are inside it), or one of an
//     HTTPS edge's routes created, updated or deleted: that edge is
//     compiled again; an edge deleted is removed; the same for an
//     endpoint (read again from its source);
//   - an IP policy, or a rule of one: the edges whose configs read its
//     rules (routes' traffic policies, [edgeconfig.Route.IPPolicyIDs];
//     TLS and TCP edges' IP restriction and traffic policy,
//     [edgeconfig.TLSEdge.IPPolicyIDs]) are compiled again;
//   - a tunnel registered, renewed or unregistered in an account, or a
//     backend changed: the tunnel lists of the backends the account's
//     edges use are read again, and the edges that use them get a new
//     snapshot with the same compiled config (no traffic policy is
//     compiled again);
//   - any other change (credentials, API keys, domains, events...) costs
//     nothing.
//
// A rebuild keeps the routes' rate-limit counts: the Host's one policy
// engine compiles each route's policy with the route ID as its scope
// ([Host.HTTPSEdgeConfig]), so the new policy counts on where the old
// one stopped.
//
// Before reading what a page of changes names, the follower waits until
// the Service's record cache has followed the feed as far
// ([Host.WaitRevision]), so it never reads a cached document
// older than a change that another process made.
//
// # Readers never wait
//
// [Configs.Edge] is two atomic loads and a map probe; it never allocates
// and never waits for a compile. A rebuild publishes a new immutable
// [Edge] when it is complete, and until then readers get the previous
// one. A request that holds an Edge keeps a consistent view for its whole
// life.
//
// # Failures
//
// When the store cannot be read (the feed, a listing or an edge's config),
// the last snapshots stay published, the work stays pending and is
// retried after a backoff of [MinBackoff] doubling up to [MaxBackoff];
// [Configs.Revision] does not move past a change whose work is not done.
// When the feed no longer holds the changes after the applied revision
// (a [*store.CompactedError]), every edge is listed and compiled again in
// the background while the old snapshots are served, and edges no longer
// listed are removed. An edge whose config cannot be built from what is
// stored (its traffic policy does not compile with this Service's policy
// engine: failed precondition) is not served (fail closed) and is logged,
// until a change to it.
//
// # Limits
//
// The number of edges (and endpoints) is not bounded here: a proxy that
// serves a store serves every edge in it, and leaving some out would answer their
// hostnames with 404s chosen by memory rather than by configuration. Its
// memory is one compiled [edgeconfig.HTTPSEdge] per edge (at most
// [edges.MaxRoutesPerEdge] routes, each with at most one compiled traffic
// policy of at most [edges.MaxTrafficPolicyBytes] of source) and, per
// backend an edge uses, at most [backends.MaxTunnels] tunnels;
// plus the dependency index (one entry per edge and IP policy or backend
// its routes use), at most [edges.MaxHostports] hosts per edge in the
// hosts table, each with one parsed certificate (chain at most
// [domains.MaxCertificatePEMBytes]). Size the process by the store's
// edges, plus, per endpoint, its document and at most one compiled
// traffic policy, one parsed certificate and three table entries. While
// it
// rebuilds, at most [Options.Parallelism] configs are being compiled and
// at most 256 compiled configs wait to be published besides the published
// ones (so a full reload does not double the memory), a page of at most
// 256 changes is read at a time, and the pending work is a set of edges
// and backends, bounded by the store's. Adding or removing
// edges copies the map of each of 64 shards that holds one of them:
// O(edges/64) per page of changes that create or delete edges (and the
// same for the hosts table).
//
// Per request, the [Handler] reads a Host of at most 255 bytes (longer
// ones reach no edge), scans the edge's routes (at most
// [edges.MaxRoutesPerEdge]) and runs at most one traffic policy, whose
// cost the policy engine bounds by the request bounds of
// [Handler.Server] (package httpserver). Of the answer, the Handler reads
// at most [HandlerOptions.MaxResponseHeaderBytes] (default
// [DefaultMaxResponseHeaderBytes], 64 KiB; net/http's own bound is 10
// MiB) of status line and headers, from a direct upstream through the
// default transport and from an agent's tunnel alike: an answer whose
// headers are longer is not read further, its connection is closed, a
// warning naming the bound is logged and the client gets 502 ("bad
// gateway: the upstream's response headers are larger than this proxy
// accepts"), and the tunnel is skipped for the failure backoff as for any
// upstream failure. Passive health is one word per tunnel; the metrics'
// label pairs are at most [MetricsOptions.MaxSeries].
//
// Per connection, [Streams] holds one goroutine and at most
// [sni.DefaultMaxBytes] of ClientHello while it reads one (for at most
// [StreamOptions.HandshakeTimeout]: a client that sends nothing is
// closed), then two copy buffers of the relay; an edge has at most
// [StreamOptions.MaxConnsPerEdge] open connections on one proxy. The
// connection metrics' labels are two kinds by nine outcomes, and two
// directions; the agent streams' three kinds by three outcomes. A
// request or connection to an agent's tunnel holds one stream of its
// session while it lasts.
package proxy
