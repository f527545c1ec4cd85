package proxy

import (
	"context"

	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/edgeconfig"
	"github.com/edgeplane/edgeplane/ipaccess"
	"github.com/edgeplane/edgeplane/resource"
)

// Host is what the proxy asks of the Service: the reads [New] makes to
// load and follow every edge, and the pending ACME challenges the
// [Handler] answers (HTTP-01 requests, TLS-ALPN-01 handshakes). *edgeplane.Host implements it; the program that
// runs a proxy (cmd/edgeplane) wires the Service's Host in, and a test or
// an embedding program may give a Host of its own (see the package's
// examples). The agents' endpoints come from an [EndpointSource], which
// the Service's Host is too.
//
// Errors carry the codes of package apierr, which the proxy reads: what
// is gone is NotFound; a config that cannot be built from what is stored
// is FailedPrecondition (or InvalidArgument, PermissionDenied), and its
// edge is not served until it changes; any other error is taken for a
// store out of reach, and the read is retried after a backoff. A Host is
// called from several goroutines at once.
type Host interface {
	// ListHTTPSEdges returns up to opts.Limit HTTPS edges of every
	// account (0 means the Host's page size), newest first, and the
	// cursor of the next page ("" after the last), for opts.BeforeID.
	ListHTTPSEdges(ctx context.Context, opts resource.ListOptions) ([]edgeconfig.EdgeRef, string, error)
	// ListTLSEdges is [Host.ListHTTPSEdges] for TLS edges.
	ListTLSEdges(ctx context.Context, opts resource.ListOptions) ([]edgeconfig.EdgeRef, string, error)
	// ListTCPEdges is [Host.ListHTTPSEdges] for TCP edges.
	ListTCPEdges(ctx context.Context, opts resource.ListOptions) ([]edgeconfig.EdgeRef, string, error)

	// HTTPSEdgeConfig returns what the proxy applies to an HTTPS edge of
	// the account: every route with its enabled modules and compiled
	// traffic policy, in matching order. The policies are compiled by
	// one engine with each route's ID as its scope, so that a rebuild
	// keeps the routes' rate-limit counts.
	HTTPSEdgeConfig(ctx context.Context, accountID, edgeID string) (*edgeconfig.HTTPSEdge, error)
	// TLSEdgeConfig returns what the proxy applies to a TLS edge of the
	// account: its modules and compiled traffic policy.
	TLSEdgeConfig(ctx context.Context, accountID, edgeID string) (*edgeconfig.TLSEdge, error)
	// TCPEdgeConfig returns what the proxy applies to a TCP edge of the
	// account: its modules.
	TCPEdgeConfig(ctx context.Context, accountID, edgeID string) (*edgeconfig.TCPEdge, error)
	// BackendTunnels returns the online tunnels of the account that the
	// tunnel group backend backendID selects, newest first, at most
	// [backends.MaxTunnels]; an empty list when it selects none.
	BackendTunnels(ctx context.Context, accountID, backendID string) ([]backends.Tunnel, error)
	// HostCertificate returns the certificate the proxy presents for
	// host (without port) of the account: the one of the reserved domain
	// that serves it (the domain named host, else the wildcard domain
	// that covers it). NotFound when no domain serves host or it has no
	// certificate.
	HostCertificate(ctx context.Context, accountID, host string) (*domains.HostCertificate, error)
	// EndpointRestrictions returns the account's IP restrictions of type
	// endpoints, ready to check a client's address.
	EndpointRestrictions(ctx context.Context, accountID string) (*ipaccess.EndpointRestrictions, error)
	// WaitRevision waits until the Host's reads reflect every change of
	// the store up to revision (a change's Revision in the feed given to
	// [New]), or ctx ends. The follower calls it before reading what a
	// change names. A Host that reads the store directly returns nil at
	// once.
	WaitRevision(ctx context.Context, revision int64) error

	// ACMEChallenge returns the pending ACME challenge of that type
	// ([domains.ChallengeHTTP01], [domains.ChallengeTLSALPN01]), name
	// and token (empty for TLS-ALPN-01); NotFound when there is none.
	ACMEChallenge(ctx context.Context, typ, name, token string) (*domains.ACMEChallenge, error)
}
