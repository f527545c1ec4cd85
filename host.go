package edgeplane

import (
	"context"

	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/hosting"
	"github.com/edgeplane/edgeplane/identity"
	"github.com/edgeplane/edgeplane/store"
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
//   - [Host.Tunnels] ([hosting.TunnelHost]): the tunnel server (package tunnel's
//     Host): nodes registered, agents' sessions, tunnels and endpoints,
//     resume tokens, IP restrictions of type agent;
//   - [Host.Nodes] ([hosting.NodeHost]): the hop between edge nodes (package hop):
//     the store's nodes and their key;
//   - [Host.DataPlane] ([hosting.DataPlaneHost]): edge proxies (package proxy's
//     Host and EndpointSource): edges listed, their configs compiled,
//     backend tunnels, certificates, endpoint restrictions, ACME answers;
//   - [Host.Certificates] ([hosting.CertificateHost]): the certificate manager
//     (package certmanager's Host) and the DNS-01 server (package
//     acmedns's Host);
//   - [Host.Leases] ([hosting.LeaseHost]): elections of one replica (the
//     certificate manager's orders, event delivery);
//   - [Host.EventDelivery]: event delivery (package webhook's Source).
//
// The roles are package hosting's types (it does not import this
// package, so a runtime part can depend on it alone); a role is a view
// of the same Service: make as many as needed.
type Host struct{ s *Service }

// Host returns the privileged operations of the Service.
func (s *Service) Host() *Host { return &Host{s: s} }

// Tunnels returns the Host's role for tunnel servers.
func (h *Host) Tunnels() *hosting.TunnelHost { return h.s.roles.Tunnels() }

// Nodes returns the Host's role for the hop between edge nodes.
func (h *Host) Nodes() *hosting.NodeHost { return h.s.roles.Nodes() }

// DataPlane returns the Host's role for edge proxies.
func (h *Host) DataPlane() *hosting.DataPlaneHost { return h.s.roles.DataPlane() }

// Certificates returns the Host's role for the certificate manager and
// the DNS server of DNS-01 challenges.
func (h *Host) Certificates() *hosting.CertificateHost { return h.s.roles.Certificates() }

// Leases returns the Host's role for electing one replica.
func (h *Host) Leases() *hosting.LeaseHost { return h.s.roles.Leases() }

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

// RegisterTunnel is [hosting.TunnelHost.RegisterTunnel], for a host
// program that registers tunnels itself (edgeplane admin register-tunnel).
func (h *Host) RegisterTunnel(ctx context.Context, token string, params backends.RegisterTunnelParams) (*backends.Tunnel, error) {
	return h.Tunnels().RegisterTunnel(ctx, token, params)
}

// UnregisterTunnel is [hosting.TunnelHost.UnregisterTunnel].
func (h *Host) UnregisterTunnel(ctx context.Context, accountID, id string) error {
	return h.Tunnels().UnregisterTunnel(ctx, accountID, id)
}

// RenewTunnel is [hosting.TunnelHost.RenewTunnel].
func (h *Host) RenewTunnel(ctx context.Context, accountID, id string) (*backends.Tunnel, error) {
	return h.Tunnels().RenewTunnel(ctx, accountID, id)
}

// ReapTunnels is [hosting.TunnelHost.ReapTunnels].
func (h *Host) ReapTunnels(ctx context.Context, limit int) (int, error) {
	return h.Tunnels().ReapTunnels(ctx, limit)
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

// WaitRevision is [hosting.Roles.WaitRevision], for a host that
// follows the change feed itself.
func (h *Host) WaitRevision(ctx context.Context, revision int64) error {
	return h.s.roles.WaitRevision(ctx, revision)
}

// hostingRecords is what package hosting's roles need of the root (its
// Records): the stored forms and presentation of the root's kinds.
type hostingRecords struct{ s *Service }

// ReservedDomain implements hosting.Records.
func (r hostingRecords) ReservedDomain(ctx context.Context, accountID, host string) (string, bool, error) {
	return r.s.reservedDomainOf(ctx, accountID, host)
}

// KeyPair implements hosting.Records.
func (r hostingRecords) KeyPair(ctx context.Context, accountID, id string) (string, string, error) {
	return r.s.tlsCertificateKeyPair(ctx, accountID, id)
}

// StoreCertificate implements hosting.Records.
func (r hostingRecords) StoreCertificate(ctx context.Context, accountID string, c *domains.Certificate, keyPEM, managedFor string) error {
	return r.s.storeCertificate(ctx, accountID, c, keyPEM, managedFor)
}

// DeleteManagedCertificate implements hosting.Records.
func (r hostingRecords) DeleteManagedCertificate(ctx context.Context, accountID, id, domainID string) {
	r.s.deleteManagedCertificate(ctx, accountID, id, domainID)
}

// DomainFacts implements hosting.Records.
func (hostingRecords) DomainFacts(rec *store.Record, d *domains.ReservedDomain) {
	setDomainFacts(rec, d)
}

// PresentDomain implements hosting.Records.
func (r hostingRecords) PresentDomain(d *domains.ReservedDomain) {
	r.s.presentReservedDomain(d, store.Record{})
}

// newRoles returns the Host's roles over the Service's runtime parts.
func (s *Service) newRoles() *hosting.Roles {
	c := hosting.Config{DB: s.db, Records: hostingRecords{s}, Kinds: dataplaneKinds(), Backends: backendForm.Form,
		Domains: reservedDomainForm.Form, Certificates: certificateKind, CertificateDueIndex: indexCertificateDue,
		Dataplane: s.dataplane, Agents: s.agentState, Nodes: s.nodes, Tokens: s.tokens, Leases: s.leases, ACME: s.acme}
	if s.cache != nil && s.cacheFollow != nil {
		c.WaitRevision = s.cacheFollow.WaitApplied
	}
	return hosting.New(c)
}
