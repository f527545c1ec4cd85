package edgeplane

import (
	"context"
	"crypto/ed25519"
	"time"

	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/edgeconfig"
	"github.com/edgeplane/edgeplane/identity"
	"github.com/edgeplane/edgeplane/internal/ids"
	"github.com/edgeplane/edgeplane/internal/leases"
	"github.com/edgeplane/edgeplane/ipaccess"
)

// Host is the Service's privileged side: the operations a host performs
// for the service itself rather than for a caller. Accounts, users, bots
// and API keys are provisioned here; tunnel servers register and renew
// tunnels, and open, renew and close agents' sessions; edge proxies read
// edge configs and backend tunnels; the certificate manager takes
// orders, reports certificates and reads key pairs; the host publishes
// its own events. None of them takes a [Principal]: they trust the host.
//
// A host obtains it deliberately with [Service.Host]. Transports that act
// for callers (package httpapi) hold a *Service, whose methods all check
// a Principal, so a route table cannot reach these by mistake.
type Host struct{ s *Service }

// Host returns the privileged operations of the Service.
func (s *Service) Host() *Host { return &Host{s: s} }

// CreateAccount creates an account. It is a host operation: no principal
// is involved.
func (h *Host) CreateAccount(ctx context.Context, params identity.AccountParams) (*identity.Account, error) {
	return h.s.createAccount(ctx, params)
}

// CreateUser creates a user of the account; a host operation.
func (h *Host) CreateUser(ctx context.Context, accountID string, params identity.SubjectParams) (*identity.Subject, error) {
	return h.s.createUser(ctx, accountID, params)
}

// CreateBot creates a bot of the account; a host operation.
func (h *Host) CreateBot(ctx context.Context, accountID string, params identity.SubjectParams) (*identity.Subject, error) {
	return h.s.createBot(ctx, accountID, params)
}

// GetSubject returns a user or bot of the account; a host operation.
func (h *Host) GetSubject(ctx context.Context, accountID, id string) (*identity.Subject, error) {
	return h.s.getSubject(ctx, accountID, id)
}

// CreateAPIKey creates an API key for a user or bot of the account; a host
// operation. The result's Token is the secret, shown this once: only its
// SHA-256 hash is stored. Secrets carry 256 random bits, so a fast hash is
// the right one (there is nothing to brute-force).
func (h *Host) CreateAPIKey(ctx context.Context, accountID string, params identity.CreateAPIKeyParams) (*identity.APIKey, error) {
	return h.s.createAPIKey(ctx, accountID, params)
}

// DeleteAPIKey revokes an API key of the account; a host operation.
func (h *Host) DeleteAPIKey(ctx context.Context, accountID, id string) error {
	return h.s.deleteAPIKey(ctx, accountID, id)
}

// AuthenticateTunnelToken resolves a tunnel authtoken, as presented by an
// agent opening a tunnel, to its credential. The token is hashed and the
// stored hash compared in constant time. Any failure is
// [apierr.Unauthenticated] with one message.
func (h *Host) AuthenticateTunnelToken(ctx context.Context, token string) (*TunnelAuth, error) {
	return h.s.authenticateTunnelToken(ctx, token)
}

// RegisterTunnel records an online tunnel, as a tunnel server does when an
// agent opens one. token is the agent's authtoken
// ([Host.AuthenticateTunnelToken]); the tunnel belongs to the
// credential's account, and every one of its labels must be permitted by
// the credential's ACL (else permission denied naming the labels that are
// not). Authentication comes first: a bad token is unauthenticated whatever
// the params.
func (h *Host) RegisterTunnel(ctx context.Context, token string, params backends.RegisterTunnelParams) (*backends.Tunnel, error) {
	return h.s.registerTunnel(ctx, token, params)
}

// UnregisterTunnel removes an online tunnel of the account, as a tunnel
// server does when the tunnel closes: one it registered
// ([Host.RegisterTunnel]) or one an agent started in its session
// ([Host.StartLabeledTunnel]). It is a host operation. A tunnel that is
// already gone (for example because its credential was deleted, or its
// session closed) is not found.
func (h *Host) UnregisterTunnel(ctx context.Context, accountID, id string) error {
	return h.s.unregisterTunnel(ctx, accountID, id)
}

// RenewTunnel extends the lease of an online tunnel of the account to
// [Options.TunnelLease] from now, as its tunnel server does while the
// tunnel is open, and returns the tunnel. It is a host operation. A
// tunnel whose lease has already ended cannot be renewed (failed
// precondition: register it again); one that is gone is not found.
func (h *Host) RenewTunnel(ctx context.Context, accountID, id string) (*backends.Tunnel, error) {
	return h.s.renewTunnel(ctx, accountID, id)
}

// ReapTunnels removes up to limit tunnel sessions and tunnels, across
// all accounts, whose lease ended before now, and returns how many it
// removed. Sessions come first, each with its tunnels (which count with
// it as one removal), then tunnels. It is a host operation, for a
// periodic job (every few seconds, say). It reads only expired sessions
// and tunnels, through the store's indexes of leases; one renewed between
// the read and the removal is kept. Each removal is reported as a
// tunnel_session_deleted or tunnel_deleted event, as
// [Host.CloseTunnelSession] and [Host.UnregisterTunnel] do (and the
// tunnels of a session as tunnel_deleted).
func (h *Host) ReapTunnels(ctx context.Context, limit int) (int, error) {
	return h.s.reapTunnels(ctx, limit)
}

// OpenTunnelSession records an agent's session with a tunnel server, as
// the server does when an agent connects: it authenticates the agent's
// authtoken as [Host.AuthenticateTunnelToken] does (an unknown or
// malformed token, or one of a deactivated bot, is
// [apierr.Unauthenticated] with one message; authentication comes first,
// whatever the params), validates params ([agents.SessionParams.Validate])
// and stores the session as a child of the token's credential, held by
// params.Node: a live registered node ([Host.RegisterNode]), whose lease
// keeps the session online (else invalid, naming node). The account's IP
// restrictions of type agent are checked against params.IP as
// [Service.CheckIPRestrictions] does (read from the store, not a cache):
// an enforced one that refuses it is [apierr.PermissionDenied], naming
// the restriction. Deleting the
// credential removes the session and its tunnels. Reported as a
// tunnel_session_created event.
func (h *Host) OpenTunnelSession(ctx context.Context, token string, params agents.SessionParams) (*agents.TunnelSession, error) {
	return h.s.openTunnelSession(ctx, token, params)
}

// Lease is the state of a named lease. Leases elect one replica of a
// store for work that must run once (ordering certificates, delivering
// events): every replica that can do the work asks for the lease of its
// name ([Host.AcquireLease]) every so often; one holds it until it lets
// it go ([Host.ReleaseLease]) or stops renewing it, and then the next to
// ask takes it. A holder must stop the work once it has not renewed its
// lease for the lease's term: the term is the longest two replicas may
// both believe they hold it, measured on their own clocks, so it should
// exceed the renewal interval by more than the clocks may drift. Leases
// are records the API does not show; they report no events.
type Lease = leases.Lease

const (
	// MaxLeaseName is the longest lease name, in bytes.
	MaxLeaseName = leases.MaxName
	// MaxLeaseHolder is the longest holder name, in bytes.
	MaxLeaseHolder = leases.MaxHolder
	// MaxLeaseTerm is the longest term of a lease.
	MaxLeaseTerm = leases.MaxTerm
)

// AcquireLease takes or renews the lease name for holder, for term from
// now (between 1s and [MaxLeaseTerm]), unless another holder's term has
// not ended: then it returns the lease as it stands, Held false. A
// holder renews by calling it again before its term ends; the lease
// keeps its Since. See [Lease] for the guarantee. name is at most
// [MaxLeaseName] bytes of a-z, 0-9, '_', '-' and '.'; holder at most
// [MaxLeaseHolder] bytes of UTF-8.
func (h *Host) AcquireLease(ctx context.Context, name, holder string, term time.Duration) (*Lease, error) {
	return h.s.leases.Acquire(ctx, name, holder, term)
}

// ReleaseLease lets lease name go if holder holds it, so that the next
// [Host.AcquireLease] of another holder takes it at once; otherwise it
// does nothing.
func (h *Host) ReleaseLease(ctx context.Context, name, holder string) error {
	return h.s.leases.Release(ctx, name, holder)
}

// RegisterNode records a new edge node (a tunnel server of the store)
// under a lease of [Options.TunnelLease] from now, which it renews with
// [Host.RenewNode] for every session it holds, and returns it with its
// ID. params are validated ([agents.NodeParams.Validate]). Nodes report
// no events.
func (h *Host) RegisterNode(ctx context.Context, params agents.NodeParams) (*agents.Node, error) {
	return h.s.nodes.Register(ctx, params)
}

// RenewNode extends the lease of node id to [Options.TunnelLease] from
// now: one write, whatever the node holds. A node whose lease has
// already ended is not renewed (failed precondition): its sessions are
// offline, to be reaped, and the node must close them and register
// anew. One that is gone (reaped or removed) is not found.
func (h *Host) RenewNode(ctx context.Context, id string) (*agents.Node, error) {
	return h.s.nodes.Renew(ctx, id)
}

// RemoveNode removes node id and every session it holds (with their
// tunnels and endpoints, each session reported as
// tunnel_session_deleted), as a node that shuts down does.
func (h *Host) RemoveNode(ctx context.Context, id string) error {
	return h.s.nodes.Remove(ctx, id)
}

// GetNode returns node id, live or with a lease that ended but not yet
// reaped (see its ExpiresAt); one that is gone is not found.
func (h *Host) GetNode(ctx context.Context, id string) (*agents.Node, error) {
	return h.s.nodes.Get(ctx, id)
}

// ListNodes returns every registered node, newest first.
func (h *Host) ListNodes(ctx context.Context) ([]agents.Node, error) {
	return h.s.nodes.List(ctx)
}

// NodeKey returns the Ed25519 private key every node of the store
// derives from the sealing key ([Options.SealingKey], HKDF): the nodes
// authenticate each other with it on the hop between them (package
// hop), so that only servers holding the store's sealing key can use
// the hop.
func (h *Host) NodeKey() ed25519.PrivateKey { return h.s.nodes.Key() }

// CloseTunnelSession removes a session of the account and its tunnels,
// in one atomic store delete (they are its children), as its tunnel
// server does when the agent disconnects. Reported as the session's
// tunnel_session_deleted event, and each tunnel's tunnel_deleted. A
// session that is gone is not found.
func (h *Host) CloseTunnelSession(ctx context.Context, accountID, id string) error {
	return h.s.closeTunnelSession(ctx, accountID, id)
}

// GetTunnelSession returns a session of the account with StopRequested,
// read from the store (never from the record cache), so that a tunnel
// server that saw the session change in the store's change feed reads
// that change. A session that is gone is not found.
func (h *Host) GetTunnelSession(ctx context.Context, accountID, id string) (*agents.TunnelSession, error) {
	return h.s.getTunnelSession(ctx, accountID, id)
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
func (h *Host) StartLabeledTunnel(ctx context.Context, accountID, sessionID string, params agents.LabeledTunnelParams) (*backends.Tunnel, error) {
	return h.s.startLabeledTunnel(ctx, accountID, sessionID, params)
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
func (h *Host) BindEndpoint(ctx context.Context, accountID, sessionID string, params agents.EndpointParams) (*agents.Endpoint, error) {
	return h.s.bindEndpoint(ctx, accountID, sessionID, params)
}

// UnbindEndpoint removes an endpoint of the account, as its tunnel
// server does when the agent unbinds it. One that is gone is not found.
// Reported as an endpoint_deleted event.
func (h *Host) UnbindEndpoint(ctx context.Context, accountID, id string) error {
	return h.s.unbindEndpoint(ctx, accountID, id)
}

// GetEndpoint returns an endpoint of the account, read from the store
// (never from the record cache), with PassthroughTLS and AccountID, which
// the API does not show. One that is gone is not found.
func (h *Host) GetEndpoint(ctx context.Context, accountID, id string) (*agents.Endpoint, error) {
	return h.s.getEndpoint(ctx, accountID, id)
}

// ListEndpoints returns up to opts.Limit endpoints (0 means
// [MaxPageSize]) of every account, newest first, and the cursor of the
// next page ("" at the end): what an edge proxy that serves every
// account loads at start, as [Host.ListHTTPSEdges] for edges, but whole
// models (with PassthroughTLS and AccountID). A host operation.
func (h *Host) ListEndpoints(ctx context.Context, opts ListOptions) ([]agents.Endpoint, string, error) {
	return h.s.listEndpoints(ctx, opts)
}

// BackendTunnels returns the online tunnels of the account that the
// tunnel group backend backendID selects, newest first: those that carry
// all of the backend's labels (at most [MaxBackendTunnels], the newest),
// as the backend's tunnels field shows them. It is a host
// operation, for the data plane that routes a backend's traffic to one of
// its tunnels (each tunnel says where its agent forwards, ForwardsTo). A
// backend that is missing or of another account is not found; a backend
// without tunnels gives an empty list, never nil.
func (h *Host) BackendTunnels(ctx context.Context, accountID, backendID string) ([]backends.Tunnel, error) {
	return h.s.backendTunnels(ctx, accountID, backendID)
}

// HTTPSEdgeConfig returns what an edge proxy applies to an HTTPS edge:
// every route with its enabled modules and compiled traffic policy (as
// [Host.HTTPSRouteConfig] gives them), in matching order (see
// [edgeconfig.HTTPSEdge.Route]). A host operation.
func (h *Host) HTTPSEdgeConfig(ctx context.Context, accountID, edgeID string) (*edgeconfig.HTTPSEdge, error) {
	return h.s.httpsEdgeConfig(ctx, accountID, edgeID)
}

// HTTPSRouteConfig returns what an edge proxy applies to the requests of
// one route of an HTTPS edge: its enabled modules, typed, with defaults
// resolved, and its traffic policy compiled for HTTP and ready to run
// ([policy.Policy.Inbound], [policy.Policy.Handler]). A host operation; a
// route of another edge is not found.
//
// The policy is compiled by the Service's one engine with the route ID as
// its scope, so a proxy that reloads the config keeps the route's rate
// limiter counts, and two routes with the same rate-limit config count
// separately. IP policies named by restrict-ips actions are read now:
// reload when they change.
func (h *Host) HTTPSRouteConfig(ctx context.Context, accountID, edgeID, routeID string) (*edgeconfig.Route, error) {
	return h.s.httpsRouteConfig(ctx, accountID, edgeID, routeID)
}

// TLSEdgeConfig returns what an edge proxy applies to a TLS edge: its IP
// restriction (ready to answer Allowed(ip)), its traffic policy compiled
// for connection traffic and ready to run ([policy.Policy.Connect]), and
// where TLS terminates with the effective minimum version. Modules not set
// or disabled are nil; without an enabled TLS termination module the edge
// terminates TLS itself with TLS 1.2 as the minimum. A host operation.
//
// The policy is compiled by the Service's one engine with the edge ID as
// its scope, so a proxy that reloads the config keeps any rate limiter
// state. IP policies named by restrict-ips actions are read now: reload
// when they change.
func (h *Host) TLSEdgeConfig(ctx context.Context, accountID, edgeID string) (*edgeconfig.TLSEdge, error) {
	return h.s.tlsEdgeConfig(ctx, accountID, edgeID)
}

// TCPEdgeConfig returns what an edge proxy applies to a TCP edge: its IP
// restriction (the IP policies' current rules, ready to answer
// Allowed(ip)) and its backend, each nil unless set and enabled. A host
// operation.
func (h *Host) TCPEdgeConfig(ctx context.Context, accountID, edgeID string) (*edgeconfig.TCPEdge, error) {
	return h.s.tcpEdgeConfig(ctx, accountID, edgeID)
}

// EndpointRestrictions returns the account's IP restrictions of type
// endpoints, ready to check a source address: an edge proxy applies them
// to every connection and request of the account's edges, before the
// edge's own modules (an enforced restriction refuses, one not enforced
// logs a warning). At most [ipaccess.MaxRestrictionsPerAccount]
// restrictions are read; a store with more (written by other code) is a
// failed precondition, never a check of part of them. A host operation.
func (h *Host) EndpointRestrictions(ctx context.Context, accountID string) (*EndpointRestrictions, error) {
	return h.s.endpointRestrictions(ctx, accountID)
}

// IPRestrictions returns the account's IP restrictions of type typ
// ([ipaccess.TypeAgent], say), each with the combined rules of its IP
// policies, read from the store now; nil when the account has none. A
// tunnel server checks the sessions it holds with them again when the
// account's restrictions, IP policies or rules change, and closes those
// an enforced restriction refuses. At most
// [ipaccess.MaxRestrictionsPerAccount] restrictions are read; a store
// with more is a failed precondition. A host operation.
func (h *Host) IPRestrictions(ctx context.Context, accountID, typ string) (*ipaccess.Enforcer, error) {
	if !ids.Valid(accountID, AccountPrefix) {
		return nil, accountKind.NotFound(accountID)
	}
	e, _, err := h.s.restrictionsOf(ctx, accountID, typ)
	return e, err
}

// CertificateOrders returns up to limit (0 means
// [DefaultCertificateOrders]) reserved domains, across all accounts,
// whose managed certificate needs issuing or renewing now (see
// [domains.ReservedDomain.CertificateDue]), newest domain first.
//
// It is a host operation for the certificate manager, which runs one pass
// at a time: for each order it obtains a certificate and reports the
// outcome with [Host.ReportCertificateIssued] or
// [Host.ReportCertificateFailed]. An order not reported stays due and
// is returned again. The call reads only due domains, through the store's
// index of domains by due time, and changes nothing.
func (h *Host) CertificateOrders(ctx context.Context, limit int) ([]CertificateOrder, error) {
	return h.s.certificateOrders(ctx, limit)
}

// ReportCertificateIssued records that the certificate manager obtained a
// certificate for a reserved domain: certPEM is the chain (leaf first) and
// keyPEM its private key. The certificate must cover the domain and have
// the key type of the domain's policy. The Service creates a TLS
// certificate in the domain's account (it belongs to the account like any
// other, described "managed certificate for <domain>"), makes it the
// domain's certificate, ends the provisioning job and sets renews_at (see
// [domains.RenewsAt]). A managed certificate it replaces (one
// the manager issued for this domain) is deleted, unless another domain
// now uses it; an uploaded one is kept.
//
// It fails with not-found for an unknown domain, invalid-argument for a
// bad chain or key, and failed-precondition when the domain no longer has
// a policy, or its policy now asks for another key type; then nothing is
// stored.
func (h *Host) ReportCertificateIssued(ctx context.Context, accountID, domainID, certPEM, keyPEM string) (*domains.ReservedDomain, error) {
	return h.s.reportCertificateIssued(ctx, accountID, domainID, certPEM, keyPEM)
}

// ReportCertificateFailed records that the certificate manager could not
// obtain a certificate for a reserved domain: with
// [domains.ErrorCodeInternal] the job is retried at f.RetriesAt; with
// [domains.ErrorCodeDNS] at f.RetriesAt when set, else it waits until
// the user sets the policy again.
// It fails with failed-precondition when the domain no longer has a
// policy.
func (h *Host) ReportCertificateFailed(ctx context.Context, accountID, domainID string, f domains.ProvisioningFailure) (*domains.ReservedDomain, error) {
	return h.s.reportCertificateFailed(ctx, accountID, domainID, f)
}

// ReportCertificateProgress records what the certificate manager is
// doing for a reserved domain it orders a certificate for: the
// provisioning job's msg (1 to 1024 bytes of UTF-8), its error code and
// retry time cleared, its started_at kept (or, for a renewal not yet
// shown as a job, renews_at; or now). Each report is a
// reserved_domain_updated event. It fails with failed-precondition when
// the domain no longer has a policy.
func (h *Host) ReportCertificateProgress(ctx context.Context, accountID, domainID, msg string) (*domains.ReservedDomain, error) {
	return h.s.reportCertificateProgress(ctx, accountID, domainID, msg)
}

// ACMEAccountKey returns the ACME account key of the directory (an
// absolute URL) stored for the certificate manager, sealed under the
// sealing key: when none is stored, it stores the one generate returns
// (at most [MaxACMEAccountKey] bytes, PEM). Two replicas that store one
// at the same moment both get the one stored first. It is a host
// operation; the key is never shown by the API.
func (h *Host) ACMEAccountKey(ctx context.Context, directory string, generate func() ([]byte, error)) ([]byte, error) {
	return h.s.acme.AccountKey(ctx, directory, generate)
}

// PutACMEChallenge records a pending ACME challenge (replacing one of
// the same type, name and token), for every edge node to answer until
// c.ExpiresAt: see [ACMEChallenge] for the rules, checked all at once
// (invalid argument naming each field). A host operation of the
// certificate manager.
func (h *Host) PutACMEChallenge(ctx context.Context, c ACMEChallenge) error {
	return h.s.acme.PutChallenge(ctx, c)
}

// ACMEChallenge returns the pending challenge of that type, name and
// token (token empty for TLS-ALPN-01 and DNS-01), read from the store;
// one that is missing or expired is not found. Edge nodes answer the
// CA's validation requests with it.
func (h *Host) ACMEChallenge(ctx context.Context, typ, name, token string) (*ACMEChallenge, error) {
	return h.s.acme.Challenge(ctx, typ, name, token)
}

// DeleteACMEChallenge removes a challenge once validated or failed; one
// that is gone is no error.
func (h *Host) DeleteACMEChallenge(ctx context.Context, typ, name, token string) error {
	return h.s.acme.DeleteChallenge(ctx, typ, name, token)
}

// ReapACMEChallenges removes up to limit (1 to [MaxPageSize]) expired
// challenges (left behind by a manager that stopped between presenting
// and cleaning up) and returns how many it removed.
func (h *Host) ReapACMEChallenges(ctx context.Context, limit int) (int, error) {
	return h.s.acme.ReapChallenges(ctx, limit)
}

// TLSCertificateKeyPair returns the PEM chain and private key of a TLS
// certificate of the account, for the host's edge servers that terminate
// TLS. It is a host operation: no API response ever carries the key. The
// key is stored sealed; a key sealed under another sealing key than the
// Service's is an internal error (logged), never returned.
func (h *Host) TLSCertificateKeyPair(ctx context.Context, accountID, id string) (certPEM, keyPEM string, err error) {
	return h.s.tlsCertificateKeyPair(ctx, accountID, id)
}

// Publish delivers an event of the host's own making, as if a resource of
// the account had changed: every subscription of the account with a source
// of typ receives obj (marshalled now, as JSON). typ must be in the
// registry ([Options.Events], [Service.EventTypes]); a host extends the
// registry with its own types to use this. Unlike the Service's own
// changes, a published event is not in the store's change feed: it is
// queued at once, or dropped and counted when the queue is full, and
// Publish never blocks. Without a sink it does nothing and returns nil.
func (h *Host) Publish(ctx context.Context, accountID, typ string, obj any) error {
	return h.s.publish(ctx, accountID, typ, obj)
}

// ListAccounts returns up to opts.Limit accounts (0 means [MaxPageSize]),
// newest first, and the cursor of the next page ("" on the last), for
// operators.
func (h *Host) ListAccounts(ctx context.Context, opts ListOptions) ([]identity.Account, string, error) {
	return h.s.listAccounts(ctx, opts)
}

// Bootstrap prepares an empty store for its first use: when the store has
// no account, it creates the account "default", an admin user of it and
// the admin's API key, whose secret is secret (an epk_ key of at least 32
// more characters) or, when secret is "", generated; the result carries
// it, shown once. On a store that has an account it creates nothing, so a
// server restarted on its store keeps the keys it had. Two servers
// bootstrapping one empty shared store at the same moment may both create
// an account: start the first alone.
func (h *Host) Bootstrap(ctx context.Context, secret string) (*Bootstrapped, error) {
	return h.s.bootstrap(ctx, secret)
}

// CheckSealingKey verifies that the Service's sealing key
// ([Options.SealingKey]) is the one the store's secrets are sealed under:
// the first call on a store records a value sealed under the key, later
// calls open it. A server runs it at start and refuses to serve on a
// mismatch (failed precondition), rather than serving certificates it
// cannot open. The same record says in which format the store's documents
// are written: a store of another format is refused too (failed
// precondition), rather than misread.
func (h *Host) CheckSealingKey(ctx context.Context) error { return h.s.checkSealingKey(ctx) }

// EdgeRef names an edge of an account: [edgeconfig.EdgeRef].
type EdgeRef = edgeconfig.EdgeRef

// ListHTTPSEdges returns up to opts.Limit HTTPS edges (0 means
// [MaxPageSize]) of every account, newest first, and the cursor of the
// next page ("" on the last): what an edge proxy that serves every
// account loads at start. It reads only the records' keys and decodes no
// document. A host operation.
func (h *Host) ListHTTPSEdges(ctx context.Context, opts ListOptions) ([]EdgeRef, string, error) {
	return h.s.listHTTPSEdges(ctx, opts)
}

// ListTLSEdges is [Host.ListHTTPSEdges] for TLS edges.
func (h *Host) ListTLSEdges(ctx context.Context, opts ListOptions) ([]EdgeRef, string, error) {
	return h.s.listTLSEdges(ctx, opts)
}

// ListTCPEdges is [Host.ListHTTPSEdges] for TCP edges.
func (h *Host) ListTCPEdges(ctx context.Context, opts ListOptions) ([]EdgeRef, string, error) {
	return h.s.listTCPEdges(ctx, opts)
}

// WaitRevision waits until the Service's reads reflect every change of
// the store up to revision (a [store.Change] Revision), or ctx ends. A
// write through this Service is reflected before the write returns; a
// write by another process (another Service on the same store) is
// reflected once the Service's record cache has followed the change feed
// past it. A host that follows the feed itself (an edge proxy) calls it
// before reading what a change names, so that it never reads a cached
// document older than the change. Without a record cache, or once
// [Service.Close] has stopped it (reads then bypass it), it returns nil at
// once.
func (h *Host) WaitRevision(ctx context.Context, revision int64) error {
	if h.s.cache == nil || h.s.cacheFollow == nil {
		return nil
	}
	return h.s.cacheFollow.waitApplied(ctx, revision)
}
