package edgeplane

import (
	"context"

	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/edgeconfig"
	"github.com/edgeplane/edgeplane/identity"
	"github.com/edgeplane/edgeplane/internal/leases"
)

// Host is the Service's privileged side: the operations a host performs
// for the service itself rather than for a caller. None of them takes a
// [Principal]: they trust the host. A host obtains it deliberately with
// [Service.Host]. Transports that act for callers (package httpapi) hold
// a *Service, whose methods all check a Principal, so a route table
// cannot reach these by mistake.
//
// Host's own methods are administration: accounts, users, bots and API
// keys provisioned and listed, the bootstrap, the sealing key's check,
// tunnels registered by a host program (admin register-tunnel), key
// pairs and published events. Each runtime part reaches the Service
// through one role of it, whose methods are those of the interface the
// part declares in its own package:
//
//   - [Host.Tunnels] ([TunnelHost]): the tunnel server (package tunnel's
//     Host): nodes registered, agents' sessions, tunnels and endpoints,
//     resume tokens, IP restrictions of type agent;
//   - [Host.Nodes] ([NodeHost]): the hop between edge nodes (package hop):
//     the store's nodes and their key;
//   - [Host.DataPlane] ([DataPlaneHost]): edge proxies (package proxy's
//     Host and EndpointSource): edges listed, their configs compiled,
//     backend tunnels, certificates, endpoint restrictions, ACME answers;
//   - [Host.Certificates] ([CertificateHost]): the certificate manager
//     (package certmanager's Host) and the DNS-01 server (package
//     acmedns's Host);
//   - [Host.Leases] ([LeaseHost]): elections of one replica (the
//     certificate manager's orders, event delivery);
//   - [Host.EventDelivery]: event delivery (package webhook's Source).
//
// A role is a view of the same Service: make as many as needed.
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
// ([TunnelHost.StartLabeledTunnel]). It is a host operation. A tunnel that is
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
// [TunnelHost.CloseTunnelSession] and [Host.UnregisterTunnel] do (and the
// tunnels of a session as tunnel_deleted).
func (h *Host) ReapTunnels(ctx context.Context, limit int) (int, error) {
	return h.s.reapTunnels(ctx, limit)
}

// Lease is the state of a named lease. Leases elect one replica of a
// store for work that must run once (ordering certificates, delivering
// events): every replica that can do the work asks for the lease of its
// name ([LeaseHost.AcquireLease]) every so often; one holds it until it lets
// it go ([LeaseHost.ReleaseLease]) or stops renewing it, and then the next to
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
