package hosting

import (
	"context"

	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/edgeconfig"
	"github.com/edgeplane/edgeplane/internal/acmestate"
	"github.com/edgeplane/edgeplane/internal/agentstate"
	"github.com/edgeplane/edgeplane/internal/agenttokens"
	"github.com/edgeplane/edgeplane/internal/dataplane"
	"github.com/edgeplane/edgeplane/internal/leases"
	"github.com/edgeplane/edgeplane/internal/nodes"
	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/ipaccess"
	"github.com/edgeplane/edgeplane/store"
)

// Records is what only the root package can do for the roles: the
// stored form and presentation of its kinds, and the lookups its API
// shares with them. The root's Service implements it.
type Records interface {
	// ReservedDomain returns the ID of the account's reserved domain
	// that serves host (the domain named host, else the wildcard domain
	// that covers it); ok is false when there is none.
	ReservedDomain(ctx context.Context, accountID, host string) (id string, ok bool, err error)
	// KeyPair returns the PEM chain and private key of a TLS
	// certificate of the account (the root's
	// Host.TLSCertificateKeyPair).
	KeyPair(ctx context.Context, accountID, id string) (certPEM, keyPEM string, err error)
	// StoreCertificate gives c an ID and creation time and stores it
	// with its key in the account, as issued for the reserved domain
	// managedFor, and presents it.
	StoreCertificate(ctx context.Context, accountID string, c *domains.Certificate, keyPEM, managedFor string) error
	// DeleteManagedCertificate deletes certificate id of the account
	// if the certificate manager issued it for the reserved domain
	// domainID and no domain uses it any more; failures are logged.
	DeleteManagedCertificate(ctx context.Context, accountID, id, domainID string)
	// DomainFacts sets what a reserved domain's record holds beside its
	// document (its keys and indexes), after an update of d.
	DomainFacts(rec *store.Record, d *domains.ReservedDomain)
	// PresentDomain fills in what the API shows of a reserved domain
	// beside its stored form.
	PresentDomain(d *domains.ReservedDomain)
}

// Config is what the roles are made of: the Service's record machinery
// and the kinds they read, the internal packages that hold the runtime
// operations, and the root's [Records].
type Config struct {
	DB      *records.DB
	Records Records
	// Kinds are the data plane's kinds (edges, routes, the account).
	Kinds dataplane.Kinds
	// Backends, Domains and Certificates are the kinds of tunnel group
	// backends, reserved domains and TLS certificates;
	// CertificateDueIndex the index of reserved domains by the time
	// their managed certificate is due.
	Backends            records.Form[backends.TunnelGroupBackend]
	Domains             records.Form[domains.ReservedDomain]
	Certificates        *records.Kind
	CertificateDueIndex string

	Dataplane *dataplane.Compiler
	Agents    *agentstate.State
	Nodes     *nodes.Registry
	Tokens    *agenttokens.Issuer
	Leases    *leases.Registry
	ACME      *acmestate.State
	// WaitRevision waits until the Service's record cache has applied a
	// revision of the change feed; nil when the Service has no cache to
	// wait for.
	WaitRevision func(ctx context.Context, revision int64) error
}

// Roles are the roles of one Service: make them once ([New]), and as
// many views of each as needed.
type Roles struct{ c Config }

// New returns the roles made of c.
func New(c Config) *Roles { return &Roles{c: c} }

// Tunnels returns the role for tunnel servers: what package tunnel's
// Server asks of the Service.
func (r *Roles) Tunnels() *TunnelHost { return &TunnelHost{r} }

// Nodes returns the role for the hop between edge nodes.
func (r *Roles) Nodes() *NodeHost { return &NodeHost{r} }

// DataPlane returns the role for edge proxies: what package proxy's
// Configs ask of the Service.
func (r *Roles) DataPlane() *DataPlaneHost { return &DataPlaneHost{r} }

// Certificates returns the role for the certificate manager and the
// DNS server of DNS-01 challenges.
func (r *Roles) Certificates() *CertificateHost { return &CertificateHost{r} }

// Leases returns the role for electing one replica.
func (r *Roles) Leases() *LeaseHost { return &LeaseHost{r} }

// WaitRevision waits until the Service's reads reflect every change of
// the store up to revision (a [store.Change] Revision), or ctx ends. A
// write through this Service is reflected before the write returns; a
// write by another process (another Service on the same store) is
// reflected once the Service's record cache has followed the change feed
// past it. A host that follows the feed itself (an edge proxy) calls it
// before reading what a change names, so that it never reads a cached
// document older than the change. Without a record cache, or once the
// Service's Close has stopped it (reads then bypass it), it returns nil
// at once.
func (r *Roles) WaitRevision(ctx context.Context, revision int64) error {
	if r.c.WaitRevision == nil {
		return nil
	}
	return r.c.WaitRevision(ctx, revision)
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

// EdgeRef names an edge of an account: [edgeconfig.EdgeRef].
type EdgeRef = edgeconfig.EdgeRef

// EndpointRestrictions is what an edge proxy applies to the traffic of
// every edge of an account: [ipaccess.EndpointRestrictions].
type EndpointRestrictions = ipaccess.EndpointRestrictions

// HostCertificate is the TLS certificate an edge server presents for a
// host: [domains.HostCertificate], see [DataPlaneHost.HostCertificate].
type HostCertificate = domains.HostCertificate

// CertificateOrder is a reserved domain whose managed certificate needs
// issuing or renewing: [domains.CertificateOrder].
type CertificateOrder = domains.CertificateOrder

// ACMEChallenge is a pending ACME challenge: [domains.ACMEChallenge].
type ACMEChallenge = domains.ACMEChallenge
