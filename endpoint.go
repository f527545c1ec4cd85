package edgeplane

import (
	"context"

	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/internal/agentstate"
	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/store"
)

// Endpoints (package agents has the model): a public address an agent
// binds itself in its tunnel session (a Bind of http, https, tcp or tls,
// [hosting.TunnelHost.BindEndpoint]), served by edge proxies without an edge. An
// endpoint record is a child of its session: closing the session,
// reaping it, or deleting its credential removes the endpoint in the
// same atomic step.
//
// An endpoint holds the store keys of its hostport (hostportKey, and for
// a tcp endpoint tcpPortKey of its port), the keys edges hold: a
// hostport serves one edge or endpoint in the whole store, and the store
// refuses a second one atomically; endpoints with pooling enabled share
// theirs as one pool (package internal/agentstate). An http, https or tls endpoint's host
// is a reserved domain of the account (or a name its wildcard domain
// covers), which the record references, so the domain cannot be
// released while the endpoint is online; so are the IP policies its
// traffic policy names. The API lists and reads endpoints; only agents
// create and remove them, through the Host (package internal/agentstate).

// The identity of the kind this file declares (see kindList); its
// stored form is package internal/agentstate's.
var (
	endpointKind = &records.Kind{StoreKind: KindEndpoint, Prefix: agents.EndpointPrefix, Collection: "endpoints",
		Noun: "endpoint", Event: "endpoint", Parent: tunnelSessionKind}
)

var endpointForm = &kind[agentstate.EndpointRecord]{Form: agentstate.EndpointForm(endpointKind),
	present: (*Service).presentEndpoint, shown: showEndpoint}

// showEndpoint shows an endpoint as the API does: without its
// credential.
func showEndpoint(_ context.Context, _ *Service, r *agentstate.EndpointRecord, _ store.Record) (any, error) {
	return &r.Endpoint, nil
}

func (s *Service) presentEndpoint(r *agentstate.EndpointRecord, _ store.Record) {
	r.URI = s.uri(endpointKind.Collection, r.ID)
	if r.Domain != nil {
		ref := s.ref(reservedDomainKind.Collection, r.Domain.ID)
		r.Domain = &ref
	}
	if r.TunnelSession != nil {
		ref := s.ref(tunnelSessionKind.Collection, r.TunnelSession.ID)
		r.TunnelSession = &ref
	}
}

// GetEndpoint returns an endpoint of the account (GET /endpoints/{id}):
// an address an agent bound in one of the account's tunnel sessions. It
// reads the store, not the record cache: an endpoint is removed with its
// session's credential, two levels up, which a delete's invalidation of
// the cache reaches only through a cached session.
func (s *Service) GetEndpoint(ctx context.Context, p Principal, id string) (*agents.Endpoint, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	return s.agentState.Endpoint(ctx, p.AccountID, id)
}

// ListEndpoints returns a page of the account's endpoints, newest first
// (GET /endpoints).
func (s *Service) ListEndpoints(ctx context.Context, p Principal, opts ListOptions) (*Page[agents.Endpoint], error) {
	return listAs(ctx, s, p, endpointForm.Form, "", endpointKind.Collection, opts,
		func(r *agentstate.EndpointRecord, rec store.Record) (*agents.Endpoint, error) {
			s.presentEndpoint(r, rec)
			return &r.Endpoint, s.agentState.PresentPool(ctx, &r.Endpoint)
		}, records.LateField[agents.Endpoint]{})
}
