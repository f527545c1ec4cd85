// Package tunnel is the agent-facing side of the service: a [Server]
// that accepts agents' sessions on a TLS listener, binds the tunnels
// their credentials allow, and hands them connections. An edge proxy
// (package proxy) reaches a tunnel an agent holds through the Server,
// which implements [agents.Dialer]: the connection travels inside the
// agent's own outbound connection, so the agent's upstream needs no
// public address.
//
// # Protocol
//
// The Server speaks the agent protocol of golang.ngrok.com/ngrok v1.12,
// the original service's open-source agent SDK, so that programs built
// on it work unchanged when pointed at it with the SDK's own options
// (ngrok.WithServer, ngrok.WithCA, ngrok.WithAuthtoken). Each agent
// connection is TLS (the Server's certificate; no client certificate),
// then a muxado session (golang.ngrok.com/muxado/v2, server role) whose
// streams are typed: the agent opens one per request (Auth, Bind,
// StartTunnelWithLabel, Unbind, SrvInfo) carrying one JSON object each
// way, and a heartbeat stream the Server echoes; the Server opens one
// per proxied connection (a length-prefixed JSON header naming the
// tunnel, the client's address, the protocol and the edge type, then the
// connection's bytes) and one per command (Stop, StopTunnel).
//
// Errors reach the agent as the protocol carries them, a message with
// the error's stable code on a line of its own ("...\n\nERR_SERVICE_104");
// an internal failure's text is never sent.
//
// # Sessions
//
// An agent's Auth carries the authtoken of a tunnel credential. The
// Server asks the [Host] (the Service's) to judge it: an unknown token,
// a malformed one and a deactivated bot's are refused, and the
// connection is closed (by the agent, as both SDKs do once they have
// read the answer; by the Server 5 s later if the agent has not, while
// nothing but the answer goes through). A session that authenticates
// is recorded
// (GET /tunnel_sessions shows it) under the Server's node: each Server is
// a node of the store ([github.com/edgeplane/edgeplane/hosting.TunnelHost.RegisterNode], Options.NodeAddr
// for the hop between nodes, package hop) and renews the node's one
// lease every RenewInterval, one store write for all its sessions,
// tunnels and endpoints. When a connection ends, its record and its
// tunnels are removed; if this process dies without removing them, the
// node's lease ends them all (the Service's reaper removes a node's
// sessions once its lease ended). A Server that could not renew in
// time (the store unreachable for a whole lease) closes its sessions,
// whose records are reaped, and registers a new node; its agents
// reconnect. [Server.Close] removes the node and what it still holds.
//
// A session lives while its heartbeat does: the agent reports its
// heartbeat interval and tolerance (bounded to [MinHeartbeat,
// MaxHeartbeat] each; the SDK's defaults are 10 s and 15 s), and a
// session whose heartbeat stream is silent for their sum is closed.
// Before Auth, a connection lives HandshakeTimeout. A Server holds at
// most MaxUnauthenticated connections that have not authenticated yet,
// MaxUnauthenticatedPerIP of them from one source address (past either,
// a new connection is closed at once and counted as
// too_many_unauthenticated), at most MaxSessions connections in all, and each session at most
// MaxTunnelsPerSession tunnels; one message is at most
// [MaxMessageBytes], the Auth message (and any request before it) at
// most [MaxAuthBytes]. The Host bounds the sessions of one credential and
// of one account, and the tunnels and endpoints of one account, across
// every Server of the store (edgeplane.Options.AgentLimits): a refusal
// reaches the agent as ERR_SERVICE_106 and is counted as
// too_many_sessions or too_many_tunnels.
//
// # Bounds of the protocol
//
// A frame whose header announces more than its type may carry is
// refused before any of its payload is read, and the session is closed
// with a protocol error: a GOAWAY of muxado's ProtocolError naming the
// frame and the bound (counted as a refusal of reason protocol). A DATA
// frame is at most the stream's window, 256 KiB (muxado's default, which
// both SDKs assume); before Auth at most the Auth message (MaxAuthBytes,
// its stream's type and a newline), and the frames before Auth at most
// twice that in all. RST and WNDINC carry 4 bytes, GOAWAY 8 and at most
// 4 KiB of debug text. (muxado alone reads a whole frame, up to 16 MiB,
// before it compares it with the window.)
//
// The agent's heartbeat is answered at most [HeartbeatRate] (5) times a
// second, in bursts of at most [HeartbeatBurst] (10), and at most
// [HeartbeatsBeforeAuth] (3) times before Auth; the beat past these
// closes the session (a GOAWAY of EnhanceYourCalm saying why, counted as
// a refusal of reason heartbeat). The SDKs beat every 10 s by default;
// an agent configured to beat more often than every 200 ms is closed
// once its burst is spent.
//
// A session's frames go to the agent's socket one at a time, every
// stream's in turn: an agent that stops reading it stops them all once
// the sockets' buffers are full. A write of the session's during which
// the socket takes no byte for Options.WriteTimeout (by default the
// session's heartbeat allowance, its interval and tolerance: 25 s for
// the SDK's defaults; HandshakeTimeout before Auth) closes the session,
// within a quarter of the timeout more (counted as a refusal of reason
// stalled). Meanwhile no client waits on it: a connection handed to an
// agent counts the agent's window on its stream itself, so that its
// writes wait for the window, or for the session's writer, no longer
// than their deadlines (the proxy gives each write of a request the
// upstream timeout), and its close never waits. A write that times out
// while its frame waits for the session's writer resets the stream; the
// frame is dropped, never sent after its buffer was given back. A
// connection closed before the agent's answer ended (a client that hung
// up, a request that timed out) resets the agent's stream
// (StreamCancelled) rather than ending it with a FIN: an agent waiting
// for its window on the stream learns that nobody reads it. One closed
// after the agent's EOF ends with a FIN.
//
// Following the store's change feed (Options.Feed), the Server closes a
// held session whose record was removed (deleting a credential removes
// its sessions and their tunnels), stops one a stop was requested for
// (POST /tunnel_sessions/{id}/stop: the agent's Stop command when the
// agent accepts it, after which it does not reconnect; else its
// connection is closed), and tells the agent of a tunnel removed under
// it (StopTunnel).
//
// Each session's Auth answer carries a cookie: the session's ID sealed
// by the Service (TunnelHost.AgentToken: AES-256-GCM under the
// store's sealing key, authenticated with the account and credential).
// An agent that reconnects sends the session ID it had and that cookie;
// when the cookie opens for that ID, account and credential, the old
// session is taken over at once (closed here if held here, and its
// record removed, which closes it on whichever server of the store
// holds it) instead of lingering until its heartbeat times out. A forged
// cookie, or one of another credential, takes nothing over (counted as
// a resume refusal; the new session opens all the same, since an agent
// never drops a cookie it was given). Cookies and endpoint tokens carry
// the time they were made, and take things over only for
// Options.ResumeTokenTTL after it (a day by default): an older cookie
// opens a fresh session (refusal reason resume_expired), an older
// endpoint token binds its ID again only once no other session holds it.
//
// # Tunnels
//
// A labeled tunnel (StartTunnelWithLabel) becomes a tunnel of the
// credential's account, selected by tunnel group backends by its labels
// as every tunnel is; each label must be allowed by the credential's ACL
// as it is at bind time (bind:<key>=<value>, bind:<key>=*; an empty ACL
// or "*" allows all). Unbind removes it; an ID the session does not hold
// is a success, as the SDK unbinds a labeled tunnel under its
// pre-reconnect ID. A proxied connection for a just-started tunnel waits
// until the agent has read the answer (its request stream's FIN), as
// the SDK registers the tunnel only then and drops a connection that
// comes first.
//
// # Endpoints
//
// A Bind of http, https, tcp or tls opens an endpoint: a public address
// the edge proxies serve without an edge, recorded through the Host
// ([github.com/edgeplane/edgeplane/hosting.TunnelHost.BindEndpoint] has the rules) as a child of the
// session, and reached through DialTunnel under the endpoint's ID (the
// proxy header's Id). Its address is the Bind's Domain (else Hostname,
// else the host of URL) for http, https and tls, checked against the
// credential's ACL (bind:<domain>, bind:*.<parent>) and the account's
// reserved domains; for tcp, Addr (else URL's host:port), whose port
// must be in [Options.TCPLow, Options.TCPHigh], checked against
// bind:<host>:<port>; without one, the Host picks a free port of the
// range on Options.TCPHost, for a credential whose ACL permits
// everything. A tls endpoint whose TLSTermination is null passes the
// client's TLS to the agent; set (without a certificate of the
// agent's), the edge terminates it. Options the edges do not apply
// (basic auth, OAuth, OIDC, IP restrictions, PROXY protocol, header
// rewrites, ...) are refused when set, rather than ignored; a traffic
// policy expresses them. The answer echoes the Bind's Proto and Opts (a
// tcp endpoint's picked address filled in), with the endpoint's ID and
// URL. Endpoints count with tunnels towards MaxTunnelsPerSession. A
// Bind with Extra.PoolingEnabled (the SDK's WithPoolingEnabled) makes
// the endpoint a member of the pool of its URL, which other sessions'
// pooled binds of the account share (package internal/agentstate has
// the rules; the proxy spreads the URL's connections over the
// members); a bind without pooling on a pool's URL is refused, and the
// reverse (Conflict, in the original's words).
//
// An agent that reconnects binds its endpoints again under their IDs,
// each with the token its first bind's answer carried (the endpoint's ID
// sealed for the account and credential, as a session's cookie is): a
// bind under an ID without that endpoint's valid token is refused
// (PermissionDenied), so an ID cannot be taken over by a forged or
// another credential's token. The Host moves each to the new session,
// keeping its URL and creation time, so the SDK's tunnels keep their IDs
// and URLs. An Unbind removes
// the endpoint unless a newer session of the agent holds it; an endpoint
// removed elsewhere is stopped at the agent (StopTunnel), as a tunnel is.
//
// # Internal endpoints
//
// A Bind's Extra.Bindings names at most one binding: public (or none) or
// internal (the SDK's WithBindings("internal"), the agent's bindings:
// [internal]). An internal endpoint's URL (or Domain) must end in
// .internal, with any port (https://api.internal,
// http://api.internal:8080); no listener serves it, and only the
// forward-internal action of a traffic policy of the same account
// reaches it (package proxy). A public endpoint's name must not end in
// .internal. The Host checks the rest (package internal/agentstate:
// http and https only, the ACL, one endpoint per name in the account).
//
// # Names the server picks
//
// With [Options.DomainBase] set (the -agent-domain-base flag), an http
// or https endpoint that names no domain is given <label>.<base>, the
// label derived from the endpoint's ID: the agent's rebinds after a
// reconnect carry the ID, so the name is kept. Without it such a Bind
// is refused with a message that says a domain is needed. The base must
// be a DNS name whose wildcard DNS record (*.base) and certificate are
// the operator's ([DomainBaseProblem] checks the name).
//
// # Imports
//
// The Server asks the Service for what it needs through [Host], declared
// here: *edgeplane.Host implements it, and cmd/edgeplane wires one in.
// The package imports the leaves agents, backends, domains (to check
// a domain base), ipaccess, kinds, apierr and store (and store/follow,
// internal/muxframe), never the root
// package or the policy engine; internal/layering's tests keep it so.
package tunnel
