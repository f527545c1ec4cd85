package hosting

import (
	"context"
	"errors"
	"strings"

	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/edgeconfig"
	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/internal/dataplane"
	"github.com/edgeplane/edgeplane/internal/ids"
	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/resource"
	"github.com/edgeplane/edgeplane/store"
)

// DataPlaneHost is the Host's role for edge proxies (package proxy's Host
// and EndpointSource): every account's edges listed, their configs
// compiled, backend tunnels, certificates by host, endpoint restrictions,
// agents' endpoints, and the ACME challenges every node answers.
type DataPlaneHost struct{ r *Roles }

// ListHTTPSEdges returns up to opts.Limit HTTPS edges (0 means
// [github.com/edgeplane/edgeplane.MaxPageSize]) of every account, newest first, and the cursor of the
// next page ("" on the last): what an edge proxy that serves every
// account loads at start. It reads only the records' keys and decodes no
// document. A host operation.
func (h *DataPlaneHost) ListHTTPSEdges(ctx context.Context, opts resource.ListOptions) ([]EdgeRef, string, error) {
	return records.HostList(ctx, h.r.c.DB, h.r.c.Kinds.HTTPSEdge.Kind, listQuery(opts), edgeRefOf)
}

// ListTLSEdges is [DataPlaneHost.ListHTTPSEdges] for TLS edges.
func (h *DataPlaneHost) ListTLSEdges(ctx context.Context, opts resource.ListOptions) ([]EdgeRef, string, error) {
	return records.HostList(ctx, h.r.c.DB, h.r.c.Kinds.TLSEdge.Kind, listQuery(opts), edgeRefOf)
}

// ListTCPEdges is [DataPlaneHost.ListHTTPSEdges] for TCP edges.
func (h *DataPlaneHost) ListTCPEdges(ctx context.Context, opts resource.ListOptions) ([]EdgeRef, string, error) {
	return records.HostList(ctx, h.r.c.DB, h.r.c.Kinds.TCPEdge.Kind, listQuery(opts), edgeRefOf)
}

// HTTPSEdgeConfig returns what an edge proxy applies to an HTTPS edge:
// every route with its enabled modules and compiled traffic policy (as
// [DataPlaneHost.HTTPSRouteConfig] gives them), in matching order (see
// [edgeconfig.HTTPSEdge.Route]). A host operation.
func (h *DataPlaneHost) HTTPSEdgeConfig(ctx context.Context, accountID, edgeID string) (*edgeconfig.HTTPSEdge, error) {
	return h.r.c.Dataplane.HTTPSEdge(ctx, accountID, edgeID)
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
	return h.r.c.Dataplane.HTTPSRoute(ctx, accountID, edgeID, routeID)
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
	return h.r.c.Dataplane.TLSEdge(ctx, accountID, edgeID)
}

// TCPEdgeConfig returns what an edge proxy applies to a TCP edge: its IP
// restriction (the IP policies' current rules, ready to answer
// Allowed(ip)) and its backend, each nil unless set and enabled. A host
// operation.
func (h *DataPlaneHost) TCPEdgeConfig(ctx context.Context, accountID, edgeID string) (*edgeconfig.TCPEdge, error) {
	return h.r.c.Dataplane.TCPEdge(ctx, accountID, edgeID)
}

// BackendTunnels returns the online tunnels of the account that the
// tunnel group backend backendID selects, newest first: those that carry
// all of the backend's labels (at most [backends.MaxTunnels], the newest),
// as the backend's tunnels field shows them. It is a host
// operation, for the data plane that routes a backend's traffic to one of
// its tunnels (each tunnel says where its agent forwards, ForwardsTo). A
// backend that is missing or of another account is not found; a backend
// without tunnels gives an empty list, never nil.
func (h *DataPlaneHost) BackendTunnels(ctx context.Context, accountID, backendID string) ([]backends.Tunnel, error) {
	return h.r.backendTunnels(ctx, accountID, backendID)
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
	id, ok, err := h.r.c.Records.ReservedDomain(ctx, accountID, strings.ToLower(host))
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, apierr.NotFoundf("no reserved domain of the account serves %s", host)
	}
	d, err := h.r.hostDomain(ctx, accountID, id)
	if err != nil {
		return nil, err
	}
	if d.Certificate == nil {
		return nil, apierr.NotFoundf("the reserved domain %s has no TLS certificate", d.Domain)
	}
	certPEM, keyPEM, err := h.r.c.Records.KeyPair(ctx, accountID, d.Certificate.ID)
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
	return h.r.c.Dataplane.EndpointRestrictions(ctx, accountID)
}

// WaitRevision is [Roles.WaitRevision].
func (h *DataPlaneHost) WaitRevision(ctx context.Context, revision int64) error {
	return h.r.WaitRevision(ctx, revision)
}

// ACMEChallenge returns the pending challenge of that type, name and
// token (token empty for TLS-ALPN-01 and DNS-01), read from the store;
// one that is missing or expired is not found. Edge nodes answer the
// CA's validation requests with it.
func (h *DataPlaneHost) ACMEChallenge(ctx context.Context, typ, name, token string) (*ACMEChallenge, error) {
	return h.r.c.ACME.Challenge(ctx, typ, name, token)
}

// GetEndpoint returns an endpoint of the account, read from the store
// (never from the record cache), with PassthroughTLS and AccountID, which
// the API does not show. One that is gone is not found.
func (h *DataPlaneHost) GetEndpoint(ctx context.Context, accountID, id string) (*agents.Endpoint, error) {
	return h.r.c.Agents.Endpoint(ctx, accountID, id)
}

// ListEndpoints returns up to opts.Limit endpoints (0 means
// [github.com/edgeplane/edgeplane.MaxPageSize]) of every account, newest first, and the cursor of the
// next page ("" at the end): what an edge proxy that serves every
// account loads at start, as [DataPlaneHost.ListHTTPSEdges] for edges, but whole
// models (with PassthroughTLS and AccountID). A host operation.
func (h *DataPlaneHost) ListEndpoints(ctx context.Context, opts resource.ListOptions) ([]agents.Endpoint, string, error) {
	return h.r.c.Agents.Endpoints(ctx, listQuery(opts))
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
	return h.r.edgeByHostport(ctx, hostport)
}

// HostportEdge is the edge that serves a hostport, as
// [DataPlaneHost.EdgeByHostport] finds it.
type HostportEdge struct {
	// Kind is the edge's kind: the root's KindHTTPSEdge, KindTLSEdge or
	// KindTCPEdge.
	Kind store.Kind
	// AccountID is the account the edge belongs to.
	AccountID string
	// EdgeID is the edge's identifier.
	EdgeID string
	// Hostport is the edge's hostport that matched, in canonical form: the
	// one asked for, or the wildcard hostport that covers it.
	Hostport string
}

// edgeByHostport finds the edge that serves hostport: the edge with
// exactly that hostport, else the edge with the wildcard hostport that
// covers its host (*.example.com:443 for a.example.com:443).
func (r *Roles) edgeByHostport(ctx context.Context, hostport string) (*HostportEdge, error) {
	hp, host, reason := edges.ParseHostport(hostport, edges.EdgeTCP)
	if reason != "" {
		return nil, apierr.Invalidf("hostport", "%s", reason)
	}
	candidates := []string{hp}
	if _, parent, ok := strings.Cut(host, "."); ok && !domains.IsWildcard(host) && domains.Covers([]string{"*." + parent}, host) {
		candidates = append(candidates, "*."+parent+hp[len(host):])
	}
	for _, c := range candidates {
		for _, k := range []*records.Kind{r.c.Kinds.HTTPSEdge.Kind, r.c.Kinds.TLSEdge.Kind, r.c.Kinds.TCPEdge.Kind} {
			rec, err := r.c.DB.Store.Lookup(ctx, k.StoreKind, dataplane.HostportKey(c))
			if errors.Is(err, apierr.ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, r.c.DB.StoreErr(err, k, "")
			}
			return &HostportEdge{Kind: k.StoreKind, AccountID: rec.AccountID, EdgeID: rec.ID, Hostport: c}, nil
		}
	}
	return nil, apierr.NotFoundf("no edge serves the hostport %s", hp)
}

// backendTunnels is [DataPlaneHost.BackendTunnels].
func (r *Roles) backendTunnels(ctx context.Context, accountID, backendID string) ([]backends.Tunnel, error) {
	b, _, err := loadEdgeRecord(ctx, r, accountID, r.c.Backends, backendID)
	if err != nil {
		return nil, err
	}
	return r.c.Agents.BackendTunnels(ctx, accountID, b.Labels)
}

// loadEdgeRecord reads and decodes the record id of form f's kind in
// accountID, for a host operation (backendTunnels); package
// internal/dataplane reads the edges' records the same way.
func loadEdgeRecord[M any](ctx context.Context, r *Roles, accountID string, f records.Form[M], id string) (*M, store.Record, error) {
	if k := r.c.Kinds.Account; !ids.Valid(accountID, k.Prefix) {
		return nil, store.Record{}, k.NotFound(accountID)
	}
	if !ids.Valid(id, f.Prefix) {
		return nil, store.Record{}, f.NotFound(id)
	}
	v, rec, err := f.Read(ctx, r.c.DB, accountID, id)
	if err != nil {
		return nil, store.Record{}, r.c.DB.StoreErr(err, f.Kind, id)
	}
	return v, rec, nil
}

// listQuery returns the records query of opts.
func listQuery(opts resource.ListOptions) records.Query {
	return records.Query{Limit: opts.Limit, BeforeID: opts.BeforeID, Filter: opts.Filter}
}

func edgeRefOf(rec store.Record) (EdgeRef, error) {
	return EdgeRef{AccountID: rec.AccountID, ID: rec.ID}, nil
}
