package hosting

import (
	"context"
	"time"

	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/internal/ids"
	"github.com/edgeplane/edgeplane/ipaccess"
)

// Agents' resume tokens (a session's cookie, an endpoint's token) are
// the Service's seal of the ID and the time the token was made, bound to
// their purpose, account and credential: package internal/agenttokens
// makes and opens them ([TunnelHost.AgentToken]).

// TunnelHost is the Host's role for tunnel servers (package tunnel's
// Host): edge nodes registered and renewed, agents' sessions opened and
// closed, their labeled tunnels and endpoints bound and unbound, resume
// tokens made and opened, and the IP restrictions of type agent.
type TunnelHost struct{ r *Roles }

// RegisterNode records a new edge node (a tunnel server of the store)
// under a lease of [github.com/edgeplane/edgeplane.Options.TunnelLease] from now, which it renews with
// [TunnelHost.RenewNode] for every session it holds, and returns it with its
// ID. params are validated ([agents.NodeParams.Validate]). Nodes report
// no events.
func (h *TunnelHost) RegisterNode(ctx context.Context, params agents.NodeParams) (*agents.Node, error) {
	return h.r.c.Nodes.Register(ctx, params)
}

// RenewNode extends the lease of node id to [github.com/edgeplane/edgeplane.Options.TunnelLease] from
// now: one write, whatever the node holds. A node whose lease has
// already ended is not renewed (failed precondition): its sessions are
// offline, to be reaped, and the node must close them and register
// anew. One that is gone (reaped or removed) is not found.
func (h *TunnelHost) RenewNode(ctx context.Context, id string) (*agents.Node, error) {
	return h.r.c.Nodes.Renew(ctx, id)
}

// RemoveNode removes node id and every session it holds (with their
// tunnels and endpoints, each session reported as
// tunnel_session_deleted), as a node that shuts down does.
func (h *TunnelHost) RemoveNode(ctx context.Context, id string) error {
	return h.r.c.Nodes.Remove(ctx, id)
}

// OpenTunnelSession records an agent's session with a tunnel server, as
// the server does when an agent connects: it authenticates the agent's
// authtoken as [github.com/edgeplane/edgeplane.Host.AuthenticateTunnelToken] does (an unknown or
// malformed token, or one of a deactivated bot, is
// [apierr.Unauthenticated] with one message; authentication comes first,
// whatever the params), validates params ([agents.SessionParams.Validate])
// and stores the session as a child of the token's credential, held by
// params.Node: a live registered node ([TunnelHost.RegisterNode]), whose lease
// keeps the session online (else invalid, naming node). The account's IP
// restrictions of type agent are checked against params.IP as
// [github.com/edgeplane/edgeplane.Service.CheckIPRestrictions] does (read from the store, not a cache):
// an enforced one that refuses it is [apierr.PermissionDenied], naming
// the restriction. Deleting the
// credential removes the session and its tunnels. Reported as a
// tunnel_session_created event.
func (h *TunnelHost) OpenTunnelSession(ctx context.Context, token string, params agents.SessionParams) (*agents.TunnelSession, error) {
	return h.r.c.Agents.OpenSession(ctx, token, params)
}

// CloseTunnelSession removes a session of the account and its tunnels,
// in one atomic store delete (they are its children), as its tunnel
// server does when the agent disconnects. Reported as the session's
// tunnel_session_deleted event, and each tunnel's tunnel_deleted. A
// session that is gone is not found.
func (h *TunnelHost) CloseTunnelSession(ctx context.Context, accountID, id string) error {
	return h.r.c.Agents.CloseSession(ctx, accountID, id)
}

// GetTunnelSession returns a session of the account with StopRequested,
// read from the store (never from the record cache), so that a tunnel
// server that saw the session change in the store's change feed reads
// that change. A session that is gone is not found.
func (h *TunnelHost) GetTunnelSession(ctx context.Context, accountID, id string) (*agents.TunnelSession, error) {
	return h.r.c.Agents.Session(ctx, accountID, id)
}

// StartLabeledTunnel records a labeled tunnel an agent starts in its
// session: a tunnel (tn_) whose TunnelSession is the session and whose
// Credential the session's, selected by tunnel group backends by its
// labels as every tunnel is. params need at least one label, valid under
// the rules of [backends.ValidateLabels]; ForwardsTo is informational, any
// UTF-8 text of at most [agents.MaxForwardsToBytes] (not the URL
// [backends.RegisterTunnelParams] asks for), and Metadata at most
// [agents.MaxMetadataBytes]. Every label must be permitted by the ACL of
// the session's credential as it is now (read again, so that a narrowed
// ACL applies to the next tunnel; an empty ACL or "*" permits every
// label): else permission denied naming the labels it does not permit.
// The tunnel's lease ends with the session's current one and is renewed
// with it; it is removed with the session. A session that is gone is not
// found; one whose lease has ended is a failed precondition. Reported as
// a tunnel_created event.
func (h *TunnelHost) StartLabeledTunnel(ctx context.Context, accountID, sessionID string, params agents.LabeledTunnelParams) (*backends.Tunnel, error) {
	return h.r.c.Agents.StartTunnel(ctx, accountID, sessionID, params)
}

// UnregisterTunnel removes an online tunnel of the account, as a tunnel
// server does when the tunnel closes: one it registered
// ([TunnelHost.RegisterTunnel]) or one an agent started in its session
// ([TunnelHost.StartLabeledTunnel]). It is a host operation. A tunnel that is
// already gone (for example because its credential was deleted, or its
// session closed) is not found.
func (h *TunnelHost) UnregisterTunnel(ctx context.Context, accountID, id string) error {
	return h.r.c.Agents.UnregisterTunnel(ctx, accountID, id)
}

// AgentToken returns the resume token of id (a session's or an
// endpoint's, as purpose says) for an agent of accountID authenticated
// by credentialID, made now; a host operation of tunnel servers.
func (h *TunnelHost) AgentToken(purpose agents.TokenPurpose, accountID, credentialID, id string) string {
	return h.r.c.Tokens.Issue(purpose, accountID, credentialID, id)
}

// OpenAgentToken checks that token is the resume token of id for
// purpose, accountID and credentialID, made by a Service of this store
// (one with the same sealing key), and returns when it was made (to the
// second; the zero time for a token made before tokens carried one). Any
// failure is PermissionDenied with one message, naming neither the ID
// nor why.
func (h *TunnelHost) OpenAgentToken(purpose agents.TokenPurpose, token, accountID, credentialID, id string) (time.Time, error) {
	return h.r.c.Tokens.Open(purpose, token, accountID, credentialID, id)
}

// BindEndpoint records an endpoint the session's agent binds (Bind of
// http, https, tcp or tls): an endpoint (ep_) that is a child of the
// session, so it goes offline with it (closed, reaped, or deleted with
// its credential), and whose hostport edge proxies serve without an
// edge. The rules, each checked against the session's credential's ACL
// as it is now (read again; an empty ACL or "*" permits everything):
//
//   - http, https and tls: params.Domain (canonical, as
//     [domains.ParseName] makes it; a wildcard is allowed) must be
//     permitted by the ACL (bind:<domain>, or bind:*.<parent>), else
//     permission denied naming the domain and those rules; and be a
//     reserved domain of the account, or a name a wildcard one of it
//     covers, else a failed precondition saying to reserve it first (a
//     name another account reserved is refused the same way). The
//     endpoint holds the hostport <domain>:443 (https, tls) or
//     <domain>:80 (http), which one edge or endpoint holds in the
//     whole store: taken, a conflict naming it. It references the
//     domain, which cannot be released while the endpoint is online.
//   - tcp: params.TCPLow 0 says the tunnel server serves no TCP ports
//     (failed precondition). params.Addr host:port (a DNS name or an IP
//     address, and a port from TCPLow to TCPHigh) must be permitted by
//     the ACL (bind:<host>:<port>). Without Addr, the Service picks a
//     free port of the range on params.TCPHost (trying up to 64 ports
//     from a random one; none free is resource exhausted), which only an
//     ACL that permits everything allows: a restricted credential names
//     the address it may bind. The endpoint holds its hostport and its
//     port, as a TCP edge does: a port serves one TCP edge or endpoint.
//   - params.TrafficPolicy, when set, must compile with the engine of
//     edges' traffic policies (for HTTP for http and https, for
//     connections otherwise), else invalid naming TrafficPolicy with the
//     engine's message; the IP policies it names are referenced.
//   - ForwardsTo, Metadata and Description are UTF-8 within
//     [agents.MaxForwardsToBytes], [agents.MaxMetadataBytes] and
//     [agents.MaxDescriptionBytes].
//
// params.ID set is a rebind after a reconnect: an endpoint ID. An
// endpoint of the account with that ID must have been bound with the
// session's credential (else permission denied); it is replaced by one
// under this session with the same ID and creation time (and, for a tcp
// endpoint bound without an address, the same address), after every rule
// passes again. The store writes one record at a time, so the old
// record is deleted, then the new one created: a bind that takes the
// hostport in between makes the rebind a conflict. An ID that is gone
// (its session reaped) is bound anew under that ID. A session that is
// gone is not found; one whose lease has ended is a failed precondition.
// Reported as an endpoint_created event (a rebind: endpoint_deleted,
// then endpoint_created).
func (h *TunnelHost) BindEndpoint(ctx context.Context, accountID, sessionID string, params agents.EndpointParams) (*agents.Endpoint, error) {
	return h.r.c.Agents.BindEndpoint(ctx, accountID, sessionID, params)
}

// UnbindEndpoint removes an endpoint of the account, as its tunnel
// server does when the agent unbinds it. One that is gone is not found.
// Reported as an endpoint_deleted event.
func (h *TunnelHost) UnbindEndpoint(ctx context.Context, accountID, id string) error {
	return h.r.c.Agents.UnbindEndpoint(ctx, accountID, id)
}

// GetEndpoint returns an endpoint of the account, read from the store
// (never from the record cache), with PassthroughTLS and AccountID, which
// the API does not show. One that is gone is not found.
func (h *TunnelHost) GetEndpoint(ctx context.Context, accountID, id string) (*agents.Endpoint, error) {
	return h.r.c.Agents.Endpoint(ctx, accountID, id)
}

// IPRestrictions returns the account's IP restrictions of type typ
// ([ipaccess.TypeAgent], say), each with the combined rules of its IP
// policies, read from the store now; nil when the account has none. A
// tunnel server checks the sessions it holds with them again when the
// account's restrictions, IP policies or rules change, and closes those
// an enforced restriction refuses. At most
// [ipaccess.MaxRestrictionsPerAccount] restrictions are read; a store
// with more is a failed precondition. A host operation.
func (h *TunnelHost) IPRestrictions(ctx context.Context, accountID, typ string) (*ipaccess.Enforcer, error) {
	if k := h.r.c.Kinds.Account; !ids.Valid(accountID, k.Prefix) {
		return nil, k.NotFound(accountID)
	}
	e, _, err := h.r.c.Dataplane.Restrictions(ctx, accountID, typ)
	return e, err
}

// RegisterTunnel records an online tunnel, as a tunnel server does when an
// agent opens one. token is the agent's authtoken
// ([github.com/edgeplane/edgeplane.Host.AuthenticateTunnelToken]); the tunnel belongs to the
// credential's account, and every one of its labels must be permitted by
// the credential's ACL (else permission denied naming the labels that are
// not). Authentication comes first: a bad token is unauthenticated whatever
// the params.
func (h *TunnelHost) RegisterTunnel(ctx context.Context, token string, params backends.RegisterTunnelParams) (*backends.Tunnel, error) {
	return h.r.c.Agents.RegisterTunnel(ctx, token, params)
}

// RenewTunnel extends the lease of an online tunnel of the account to
// [github.com/edgeplane/edgeplane.Options.TunnelLease] from now, as its tunnel server does while the
// tunnel is open, and returns the tunnel. It is a host operation. A
// tunnel whose lease has already ended cannot be renewed (failed
// precondition: register it again); one that is gone is not found.
func (h *TunnelHost) RenewTunnel(ctx context.Context, accountID, id string) (*backends.Tunnel, error) {
	return h.r.c.Agents.RenewTunnel(ctx, accountID, id)
}

// ReapTunnels removes up to limit tunnel sessions and tunnels, across
// all accounts, whose lease ended before now, and returns how many it
// removed. Sessions come first, each with its tunnels (which count with
// it as one removal), then tunnels. It is a host operation, for a
// periodic job (every few seconds, say). It reads only expired sessions
// and tunnels, through the store's indexes of leases; one renewed between
// the read and the removal is kept. Each removal is reported as a
// tunnel_session_deleted or tunnel_deleted event, as
// [TunnelHost.CloseTunnelSession] and [TunnelHost.UnregisterTunnel] do (and the
// tunnels of a session as tunnel_deleted).
func (h *TunnelHost) ReapTunnels(ctx context.Context, limit int) (int, error) {
	return h.r.c.Agents.Reap(ctx, limit)
}
