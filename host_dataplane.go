package edgeplane

import (
	"context"
	"strings"

	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/edgeconfig"
)

// DataPlaneHost is the Host's role for edge proxies (package proxy's Host
// and EndpointSource): every account's edges listed, their configs
// compiled, backend tunnels, certificates by host, endpoint restrictions,
// agents' endpoints, and the ACME challenges every node answers.
type DataPlaneHost struct{ s *Service }

// DataPlane returns the Host's role for edge proxies: what package
// proxy's Configs ask of the Service.
func (h *Host) DataPlane() *DataPlaneHost { return &DataPlaneHost{s: h.s} }

// ListHTTPSEdges returns up to opts.Limit HTTPS edges (0 means
// [MaxPageSize]) of every account, newest first, and the cursor of the
// next page ("" on the last): what an edge proxy that serves every
// account loads at start. It reads only the records' keys and decodes no
// document. A host operation.
func (h *DataPlaneHost) ListHTTPSEdges(ctx context.Context, opts ListOptions) ([]EdgeRef, string, error) {
	return h.s.listHTTPSEdges(ctx, opts)
}

// ListTLSEdges is [DataPlaneHost.ListHTTPSEdges] for TLS edges.
func (h *DataPlaneHost) ListTLSEdges(ctx context.Context, opts ListOptions) ([]EdgeRef, string, error) {
	return h.s.listTLSEdges(ctx, opts)
}

// ListTCPEdges is [DataPlaneHost.ListHTTPSEdges] for TCP edges.
func (h *DataPlaneHost) ListTCPEdges(ctx context.Context, opts ListOptions) ([]EdgeRef, string, error) {
	return h.s.listTCPEdges(ctx, opts)
}

// HTTPSEdgeConfig returns what an edge proxy applies to an HTTPS edge:
// every route with its enabled modules and compiled traffic policy (as
// [DataPlaneHost.HTTPSRouteConfig] gives them), in matching order (see
// [edgeconfig.HTTPSEdge.Route]). A host operation.
func (h *DataPlaneHost) HTTPSEdgeConfig(ctx context.Context, accountID, edgeID string) (*edgeconfig.HTTPSEdge, error) {
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
func (h *DataPlaneHost) HTTPSRouteConfig(ctx context.Context, accountID, edgeID, routeID string) (*edgeconfig.Route, error) {
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
func (h *DataPlaneHost) TLSEdgeConfig(ctx context.Context, accountID, edgeID string) (*edgeconfig.TLSEdge, error) {
	return h.s.tlsEdgeConfig(ctx, accountID, edgeID)
}

// TCPEdgeConfig returns what an edge proxy applies to a TCP edge: its IP
// restriction (the IP policies' current rules, ready to answer
// Allowed(ip)) and its backend, each nil unless set and enabled. A host
// operation.
func (h *DataPlaneHost) TCPEdgeConfig(ctx context.Context, accountID, edgeID string) (*edgeconfig.TCPEdge, error) {
	return h.s.tcpEdgeConfig(ctx, accountID, edgeID)
}

// BackendTunnels returns the online tunnels of the account that the
// tunnel group backend backendID selects, newest first: those that carry
// all of the backend's labels (at most [MaxBackendTunnels], the newest),
// as the backend's tunnels field shows them. It is a host
// operation, for the data plane that routes a backend's traffic to one of
// its tunnels (each tunnel says where its agent forwards, ForwardsTo). A
// backend that is missing or of another account is not found; a backend
// without tunnels gives an empty list, never nil.
func (h *DataPlaneHost) BackendTunnels(ctx context.Context, accountID, backendID string) ([]backends.Tunnel, error) {
	return h.s.backendTunnels(ctx, accountID, backendID)
}

// HostCertificate returns the certificate that an edge server terminating
// TLS for host (a name an edge of the account serves, without port)
// presents: the certificate of the account's reserved domain that serves
// host, as [DataPlaneHost.EdgeByHostport] resolves it (the domain named host, else
// the wildcard domain that covers it). It fails with not-found when no
// reserved domain of the account serves host, or the domain has no
// certificate (none attached, none issued yet). A host operation: the key
// is never in an API response.
func (h *DataPlaneHost) HostCertificate(ctx context.Context, accountID, host string) (*HostCertificate, error) {
	s := h.s
	id, ok, err := s.reservedDomainOf(ctx, accountID, strings.ToLower(host))
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, apierr.NotFoundf("no reserved domain of the account serves %s", host)
	}
	d, err := s.hostDomain(ctx, accountID, id)
	if err != nil {
		return nil, err
	}
	if d.Certificate == nil {
		return nil, apierr.NotFoundf("the reserved domain %s has no TLS certificate", d.Domain)
	}
	certPEM, keyPEM, err := s.tlsCertificateKeyPair(ctx, accountID, d.Certificate.ID)
	if err != nil {
		return nil, err
	}
	return &HostCertificate{DomainID: id, CertificateID: d.Certificate.ID, CertificatePEM: certPEM, KeyPEM: keyPEM}, nil
}

// EndpointRestrictions returns the account's IP restrictions of type
// endpoints, ready to check a source address: an edge proxy applies them
// to every connection and request of the account's edges, before the
// edge's own modules (an enforced restriction refuses, one not enforced
// logs a warning). At most [ipaccess.MaxRestrictionsPerAccount]
// restrictions are read; a store with more (written by other code) is a
// failed precondition, never a check of part of them. A host operation.
func (h *DataPlaneHost) EndpointRestrictions(ctx context.Context, accountID string) (*EndpointRestrictions, error) {
	return h.s.endpointRestrictions(ctx, accountID)
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
func (h *DataPlaneHost) WaitRevision(ctx context.Context, revision int64) error {
	if h.s.cache == nil || h.s.cacheFollow == nil {
		return nil
	}
	return h.s.cacheFollow.waitApplied(ctx, revision)
}

// ACMEChallenge returns the pending challenge of that type, name and
// token (token empty for TLS-ALPN-01 and DNS-01), read from the store;
// one that is missing or expired is not found. Edge nodes answer the
// CA's validation requests with it.
func (h *DataPlaneHost) ACMEChallenge(ctx context.Context, typ, name, token string) (*ACMEChallenge, error) {
	return h.s.acme.Challenge(ctx, typ, name, token)
}

// GetEndpoint returns an endpoint of the account, read from the store
// (never from the record cache), with PassthroughTLS and AccountID, which
// the API does not show. One that is gone is not found.
func (h *DataPlaneHost) GetEndpoint(ctx context.Context, accountID, id string) (*agents.Endpoint, error) {
	return h.s.getEndpoint(ctx, accountID, id)
}

// ListEndpoints returns up to opts.Limit endpoints (0 means
// [MaxPageSize]) of every account, newest first, and the cursor of the
// next page ("" at the end): what an edge proxy that serves every
// account loads at start, as [DataPlaneHost.ListHTTPSEdges] for edges, but whole
// models (with PassthroughTLS and AccountID). A host operation.
func (h *DataPlaneHost) ListEndpoints(ctx context.Context, opts ListOptions) ([]agents.Endpoint, string, error) {
	return h.s.listEndpoints(ctx, opts)
}

// EdgeByHostport returns the edge that serves a hostport (host:port), in
// any account, as an edge proxy routes a connection or request by the
// host it names: the edge with exactly that hostport, else the one whose
// wildcard hostport covers the host (*.example.com:443 serves
// a.example.com:443). The host is compared case-insensitively. It is a
// host operation, one store lookup per kind of edge; a malformed hostport
// is invalid (a violation of "hostport") and one no edge serves is not
// found.
func (h *DataPlaneHost) EdgeByHostport(ctx context.Context, hostport string) (*HostportEdge, error) {
	return h.s.edgeByHostport(ctx, hostport)
}
