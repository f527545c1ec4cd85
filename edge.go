package edgeplane

import (
	"context"
	"errors"
	"strings"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/internal/ids"
	"github.com/edgeplane/edgeplane/policy"
	"github.com/edgeplane/edgeplane/store"
)

// routesPath returns the collection path of an HTTPS edge's routes.
func routesPath(edgeID string) string { return httpsRouteKind.path(edgeID) }

// routeMatchKey is the lookup key that keeps two routes of one edge from
// matching the same thing.
func routeMatchKey(r *edges.HTTPSRoute) string {
	return "https_edge_route_match:" + r.EdgeID + ":" + r.MatchType + ":" + r.Match
}

func (s *Service) presentHTTPSEdge(v *edges.HTTPSEdge, _ store.Record) {
	v.URI = s.uri(httpsEdgeKind.collection, v.ID)
	if v.Hostports == nil {
		v.Hostports = []string{}
	}
}

// CreateHTTPSEdge creates an HTTPS edge. Its routes and their modules are
// added by their own operations. Each hostport's host must be a reserved
// domain of the account (or be covered by a wildcard one), and the
// hostport used by no other edge of any account (a conflict naming it).
func (s *Service) CreateHTTPSEdge(ctx context.Context, p Principal, params edges.CreateEdgeParams) (*edges.HTTPSEdge, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	if err := params.Validate(); err != nil {
		return nil, err
	}
	v := &edges.HTTPSEdge{ID: s.ids.New(edges.HTTPSEdgePrefix), CreatedAt: s.timestamp(),
		Description: params.Description, Metadata: params.Metadata, Hostports: edges.CanonicalHostports(params.Hostports, edges.EdgeHTTPS)}
	domainIDs, err := s.resolveHostports(ctx, p, v.Hostports)
	if err != nil {
		return nil, err
	}
	if err := create(ctx, s, p, httpsEdgeForm, v.ID, "", v, domainIDs, hostportKeys(v.Hostports, edges.EdgeHTTPS)...); err != nil {
		fields := refFields{}
		fields.hostports(domainIDs)
		return nil, s.edgeWriteErr(err, httpsEdgeKind, v.ID, v.Hostports, fields)
	}
	s.presentHTTPSEdge(v, store.Record{})
	return v, nil
}

// GetHTTPSEdge returns an HTTPS edge of the account.
func (s *Service) GetHTTPSEdge(ctx context.Context, p Principal, id string) (*edges.HTTPSEdge, error) {
	v, rec, err := get(ctx, s, p, httpsEdgeForm, id)
	if err != nil {
		return nil, err
	}
	s.presentHTTPSEdge(v, rec)
	return v, nil
}

// ListHTTPSEdges returns a page of the account's HTTPS edges, newest
// first.
func (s *Service) ListHTTPSEdges(ctx context.Context, p Principal, opts ListOptions) (*Page[edges.HTTPSEdge], error) {
	return list(ctx, s, p, httpsEdgeForm, "", httpsEdgeKind.collection, opts, s.presentHTTPSEdge)
}

// UpdateHTTPSEdge changes the fields present in params. Hostports given
// replace the edge's, with the rules of [Service.CreateHTTPSEdge].
func (s *Service) UpdateHTTPSEdge(ctx context.Context, p Principal, id string, params edges.UpdateEdgeParams) (*edges.HTTPSEdge, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	if err := params.Validate(); err != nil {
		return nil, err
	}
	hostports, domainIDs, err := s.newHostports(ctx, p, params.Hostports, edges.EdgeHTTPS)
	if err != nil {
		return nil, err
	}
	v, err := update(ctx, s, p, httpsEdgeForm, id, func(v *edges.HTTPSEdge, rec *store.Record) error {
		params.Apply(&v.Description, &v.Metadata)
		if hostports != nil {
			v.Hostports = hostports
			rec.Keys = hostportKeys(hostports, edges.EdgeHTTPS)
			rec.Refs = edgeRefs(nil, domainIDs, rec.Refs)
		}
		return nil
	})
	if err != nil {
		fields := refFields{}
		fields.hostports(domainIDs)
		return nil, s.edgeWriteErr(err, httpsEdgeKind, id, hostports, fields)
	}
	s.presentHTTPSEdge(v, store.Record{})
	return v, nil
}

// DeleteHTTPSEdge deletes an HTTPS edge with its routes and their modules,
// in one atomic step. Only the edge's deletion is reported as a change.
func (s *Service) DeleteHTTPSEdge(ctx context.Context, p Principal, id string) error {
	return s.remove(ctx, p, httpsEdgeKind, id)
}

// presentHTTPSRoute fills the URIs of a route and of its modules' Refs and
// gives its modules' lists their empty forms.
func (s *Service) presentHTTPSRoute(v *edges.HTTPSRoute, _ store.Record) {
	v.URI = s.uri(routesPath(v.EdgeID), v.ID)
	if m := v.OIDC; m != nil && m.Scopes == nil {
		m.Scopes = []string{}
	}
	if m := v.Backend; m != nil {
		m.Backend = s.ref(backendKind.collection, m.Backend.ID)
	}
	if m := v.ResponseHeaders; m != nil {
		if m.Add == nil {
			m.Add = map[string]string{}
		}
		if m.Remove == nil {
			m.Remove = []string{}
		}
	}
	if m := v.TrafficPolicy; m != nil {
		m.IPPolicyIDs = nil
	}
}

// routeNotFound is the error of a route that is missing, of another
// account or of another edge.
func routeNotFound(edgeID, id string) error {
	return apierr.NotFoundf("HTTPS edge route %s not found on HTTPS edge %s", id, edgeID)
}

// checkHTTPSEdge returns nil when the HTTPS edge exists in p's account,
// else the edge's not-found error.
func (s *Service) checkHTTPSEdge(ctx context.Context, p Principal, edgeID string) error {
	_, _, err := get(ctx, s, p, httpsEdgeForm, edgeID)
	return err
}

// CreateHTTPSEdgeRoute adds a route to an HTTPS edge of the account. Two
// routes of one edge cannot have the same match_type and match
// (conflict); an edge has at most [edges.MaxRoutesPerEdge] routes (failed
// precondition beyond).
func (s *Service) CreateHTTPSEdgeRoute(ctx context.Context, p Principal, edgeID string, params edges.CreateRouteParams) (*edges.HTTPSRoute, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	if err := params.Validate(); err != nil {
		return nil, err
	}
	if !ids.Valid(edgeID, edges.HTTPSEdgePrefix) {
		return nil, httpsEdgeKind.notFound(edgeID)
	}
	if err := s.checkHTTPSEdge(ctx, p, edgeID); err != nil {
		return nil, err // before compiling a policy; the write checks the edge again
	}
	v := params.Route()
	v.ID, v.EdgeID, v.CreatedAt = s.ids.New(edges.HTTPSRoutePrefix), edgeID, s.timestamp()
	tp, err := s.inlinePolicy(ctx, p, policy.TargetHTTP, v.ID, params.TrafficPolicy)
	if err != nil {
		return nil, err
	}
	v.TrafficPolicy = tp
	err = createInSlot(ctx, s, p, httpsRouteForm, v.ID, edgeID, &v, v.Refs(), edges.MaxRoutesPerEdge, func() error {
		return apierr.New(apierr.FailedPrecondition, "HTTPS edge %s already has %d routes, the most one edge may have; delete a route first",
			edgeID, edges.MaxRoutesPerEdge)
	}, routeMatchKey(&v))
	var miss *store.MissingRefError
	switch {
	case errors.As(err, &miss) && miss.ID == edgeID:
		return nil, httpsEdgeKind.notFound(edgeID)
	case errors.As(err, &miss):
		return nil, s.edgeWriteErr(err, httpsRouteKind, v.ID, nil, routeRefFields(&v))
	case err != nil:
		return nil, routeErr(err, &v)
	}
	s.presentHTTPSRoute(&v, store.Record{})
	return &v, nil
}

// routeRefFields names the request fields of the references of a route.
func routeRefFields(v *edges.HTTPSRoute) refFields {
	fields := refFields{}
	fields.backend(v.Backend)
	fields.trafficPolicy(v.TrafficPolicy)
	return fields
}

// routeErr names the clashing route in a duplicate-match error.
func routeErr(err error, v *edges.HTTPSRoute) error {
	var dup *store.DuplicateError
	if errors.As(err, &dup) {
		return &apierr.Error{Code: apierr.Conflict, Err: err,
			Msg: "HTTPS edge " + v.EdgeID + " already has a route with match_type " + v.MatchType + " and match " + v.Match}
	}
	return err
}

// GetHTTPSEdgeRoute returns a route of an HTTPS edge of the account.
func (s *Service) GetHTTPSEdgeRoute(ctx context.Context, p Principal, edgeID, id string) (*edges.HTTPSRoute, error) {
	if err := s.checkHTTPSEdge(ctx, p, edgeID); err != nil {
		return nil, err
	}
	v, rec, err := get(ctx, s, p, httpsRouteForm, id)
	switch {
	case errors.Is(err, apierr.ErrNotFound):
		return nil, routeNotFound(edgeID, id)
	case err != nil:
		return nil, err
	case rec.ParentID != edgeID:
		return nil, routeNotFound(edgeID, id)
	}
	s.presentHTTPSRoute(v, rec)
	return v, nil
}

// ListHTTPSEdgeRoutes returns a page of an HTTPS edge's routes, newest
// first.
func (s *Service) ListHTTPSEdgeRoutes(ctx context.Context, p Principal, edgeID string, opts ListOptions) (*Page[edges.HTTPSRoute], error) {
	if err := s.checkHTTPSEdge(ctx, p, edgeID); err != nil {
		return nil, err
	}
	return list(ctx, s, p, httpsRouteForm, edgeID, routesPath(edgeID), opts, s.presentHTTPSRoute)
}

// updateRoute runs mutate on a route of the HTTPS edge edgeID inside one
// atomic update; the route's Keys and Refs follow the result. A missing
// edge, or a route that is missing or of another edge, is not found.
func (s *Service) updateRoute(ctx context.Context, p Principal, edgeID, id string, mutate func(*edges.HTTPSRoute) error) (*edges.HTTPSRoute, error) {
	if err := s.checkHTTPSEdge(ctx, p, edgeID); err != nil {
		return nil, err
	}
	if !ids.Valid(id, edges.HTTPSRoutePrefix) {
		return nil, routeNotFound(edgeID, id)
	}
	ran := false
	var refused error // the callback's own error, which update would reword
	v, err := update(ctx, s, p, httpsRouteForm, id, func(v *edges.HTTPSRoute, rec *store.Record) error {
		ran = true
		if rec.ParentID != edgeID {
			refused = routeNotFound(edgeID, id)
		} else {
			refused = mutate(v)
		}
		if refused != nil {
			return refused
		}
		rec.Keys = append(slotKeys(rec.Keys), routeMatchKey(v)) // keeps its slot (slots.go)
		rec.Refs = v.Refs()
		return nil
	})
	switch {
	case refused != nil:
		return nil, refused
	case err != nil && !ran && errors.Is(err, apierr.ErrNotFound):
		return nil, routeNotFound(edgeID, id)
	case err != nil:
		return nil, err
	}
	s.presentHTTPSRoute(v, store.Record{})
	return v, nil
}

// UpdateHTTPSEdgeRoute changes the fields present in params. Changing the
// match to one another route of the edge has is a conflict. A module
// given replaces the route's module whole, as its replace operation does;
// modules not given are left as they are (their delete operations remove
// them).
func (s *Service) UpdateHTTPSEdgeRoute(ctx context.Context, p Principal, edgeID, id string, params edges.UpdateRouteParams) (*edges.HTTPSRoute, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	if err := params.Validate(); err != nil {
		return nil, err
	}
	if err := s.checkHTTPSEdge(ctx, p, edgeID); err != nil {
		return nil, err
	}
	tp, err := s.inlinePolicy(ctx, p, policy.TargetHTTP, id, params.TrafficPolicy)
	if err != nil {
		return nil, err
	}
	var want edges.HTTPSRoute
	v, err := s.updateRoute(ctx, p, edgeID, id, func(v *edges.HTTPSRoute) error {
		params.Apply(v)
		if tp != nil {
			v.TrafficPolicy = tp
		}
		want = *v
		return nil
	})
	var miss *store.MissingRefError
	if errors.As(err, &miss) {
		return nil, s.edgeWriteErr(err, httpsRouteKind, id, nil, routeRefFields(&want))
	}
	if err != nil {
		return nil, routeErr(err, &want)
	}
	return v, nil
}

// DeleteHTTPSEdgeRoute deletes a route of an HTTPS edge with its modules.
func (s *Service) DeleteHTTPSEdgeRoute(ctx context.Context, p Principal, edgeID, id string) error {
	if _, err := s.GetHTTPSEdgeRoute(ctx, p, edgeID, id); err != nil {
		return err
	}
	// A route never changes edges, so the check above still holds.
	if err := s.store.Delete(s.reporting(ctx, httpsRouteKind.event, events.Deleted), KindHTTPSEdgeRoute, p.AccountID, id); err != nil {
		if errors.Is(err, apierr.ErrNotFound) {
			return routeNotFound(edgeID, id)
		}
		return s.storeErr(err, httpsRouteKind, id)
	}
	return nil
}

// presentTLSEdge fills the URIs of an edge and of its modules' Refs and
// clears what is stored but not shown.
func (s *Service) presentTLSEdge(v *edges.TLSEdge, _ store.Record) {
	v.URI = s.uri(tlsEdgeKind.collection, v.ID)
	if v.Hostports == nil {
		v.Hostports = []string{}
	}
	s.presentIPRestrictionModule(v.IPRestriction)
	if m := v.TrafficPolicy; m != nil {
		m.IPPolicyIDs = nil
	}
	if m := v.Backend; m != nil {
		m.Backend = s.ref(backendKind.collection, m.Backend.ID)
	}
}

func (s *Service) presentIPRestrictionModule(m *edges.IPRestriction) {
	if m == nil {
		return
	}
	m.IPPolicies = s.refs(ipPolicyKind.collection, m.PolicyIDs())
}

// CreateTLSEdge creates a TLS edge, with the modules params gives set in
// the same write (validated as their replace operations validate them,
// violations under the module's name). Hostports follow the rules of
// [Service.CreateHTTPSEdge]. A traffic policy module with a TLS
// termination module that terminates upstream is a conflict.
func (s *Service) CreateTLSEdge(ctx context.Context, p Principal, params edges.CreateTLSEdgeParams) (*edges.TLSEdge, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	if err := params.Validate(); err != nil {
		return nil, err
	}
	v := &edges.TLSEdge{ID: s.ids.New(edges.TLSEdgePrefix), CreatedAt: s.timestamp(),
		Description: params.Description, Metadata: params.Metadata, Hostports: edges.CanonicalHostports(params.Hostports, edges.EdgeTLS),
		IPRestriction:  moduleOf(params.IPRestriction, edges.IPRestrictionParams.Module),
		TLSTermination: moduleOf(params.TLSTermination, edges.TLSTerminationParams.Module),
		Backend:        moduleOf(params.Backend, edges.BackendParams.Module)}
	tp, err := s.inlinePolicy(ctx, p, policy.TargetConnection, v.ID, params.TrafficPolicy)
	if err != nil {
		return nil, err
	}
	v.TrafficPolicy = tp
	if err := v.CheckModules(); err != nil {
		return nil, err
	}
	domainIDs, err := s.resolveHostports(ctx, p, v.Hostports)
	if err != nil {
		return nil, err
	}
	if err := create(ctx, s, p, tlsEdgeForm, v.ID, "", v, edgeRefs(v.Refs(), domainIDs, nil), hostportKeys(v.Hostports, edges.EdgeTLS)...); err != nil {
		return nil, s.edgeWriteErr(err, tlsEdgeKind, v.ID, v.Hostports, tlsRefFields(v, domainIDs))
	}
	s.presentTLSEdge(v, store.Record{})
	return v, nil
}

func tlsRefFields(v *edges.TLSEdge, domainIDs []string) refFields {
	fields := refFields{}
	fields.hostports(domainIDs)
	fields.ipRestriction(v.IPRestriction)
	fields.trafficPolicy(v.TrafficPolicy)
	fields.backend(v.Backend)
	return fields
}

// moduleOf returns the module of params, nil when params is.
func moduleOf[P, M any](params *P, module func(P) M) *M {
	if params == nil {
		return nil
	}
	m := module(*params)
	return &m
}

// newHostports returns the canonical hostports of an update and the
// reserved domains that serve them; both nil when list is (the hostports
// do not change), never nil otherwise.
func (s *Service) newHostports(ctx context.Context, p Principal, list *[]string, t edges.EdgeType) ([]string, []string, error) {
	if list == nil {
		return nil, nil, nil
	}
	hostports := edges.CanonicalHostports(*list, t)
	domainIDs, err := s.resolveHostports(ctx, p, hostports)
	return hostports, domainIDs, err
}

// GetTLSEdge returns a TLS edge of the account, with its modules.
func (s *Service) GetTLSEdge(ctx context.Context, p Principal, id string) (*edges.TLSEdge, error) {
	v, rec, err := get(ctx, s, p, tlsEdgeForm, id)
	if err != nil {
		return nil, err
	}
	s.presentTLSEdge(v, rec)
	return v, nil
}

// ListTLSEdges returns a page of the account's TLS edges, newest first.
func (s *Service) ListTLSEdges(ctx context.Context, p Principal, opts ListOptions) (*Page[edges.TLSEdge], error) {
	return list(ctx, s, p, tlsEdgeForm, "", tlsEdgeKind.collection, opts, s.presentTLSEdge)
}

// UpdateTLSEdge changes the fields present in params: hostports given
// replace the edge's, and a module given replaces that module, with the
// rules of [Service.CreateTLSEdge]; modules not given are left as they
// are.
func (s *Service) UpdateTLSEdge(ctx context.Context, p Principal, id string, params edges.UpdateTLSEdgeParams) (*edges.TLSEdge, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	if err := params.Validate(); err != nil {
		return nil, err
	}
	tp, err := s.inlinePolicy(ctx, p, policy.TargetConnection, id, params.TrafficPolicy)
	if err != nil {
		return nil, err
	}
	hostports, domainIDs, err := s.newHostports(ctx, p, params.Hostports, edges.EdgeTLS)
	if err != nil {
		return nil, err
	}
	var (
		refused error // the callback's own error, which update would reword
		want    edges.TLSEdge
	)
	v, err := update(ctx, s, p, tlsEdgeForm, id, func(v *edges.TLSEdge, rec *store.Record) error {
		params.Apply(&v.Description, &v.Metadata)
		setModule(&v.IPRestriction, params.IPRestriction, edges.IPRestrictionParams.Module)
		setModule(&v.TLSTermination, params.TLSTermination, edges.TLSTerminationParams.Module)
		setModule(&v.Backend, params.Backend, edges.BackendParams.Module)
		if tp != nil {
			v.TrafficPolicy = tp
		}
		if refused = v.CheckModules(); refused != nil {
			return refused
		}
		setHostports(&v.Hostports, rec, hostports, domainIDs, v.Refs(), edges.EdgeTLS)
		want = *v
		return nil
	})
	switch {
	case refused != nil:
		return nil, refused
	case err != nil:
		return nil, s.edgeWriteErr(err, tlsEdgeKind, id, hostports, tlsRefFields(&want, domainIDs))
	}
	s.presentTLSEdge(v, store.Record{})
	return v, nil
}

// setModule sets *field to the module of params when params is given.
func setModule[P, M any](field **M, params *P, module func(P) M) {
	if params != nil {
		*field = moduleOf(params, module)
	}
}

// setHostports sets an edge's hostports, its record's keys and its Refs
// (those of its modules, and the reserved domains of its hostports):
// hostports nil leaves the hostports as they are.
func setHostports(field *[]string, rec *store.Record, hostports, domainIDs, moduleRefs []string, t edges.EdgeType) {
	if hostports != nil {
		*field = hostports
		rec.Keys = hostportKeys(hostports, t)
	}
	rec.Refs = edgeRefs(moduleRefs, domainIDs, rec.Refs)
}

// DeleteTLSEdge deletes a TLS edge with its modules.
func (s *Service) DeleteTLSEdge(ctx context.Context, p Principal, id string) error {
	return s.remove(ctx, p, tlsEdgeKind, id)
}

// presentTCPEdge fills the URIs of an edge and of its modules' Refs.
func (s *Service) presentTCPEdge(v *edges.TCPEdge, _ store.Record) {
	v.URI = s.uri(tcpEdgeKind.collection, v.ID)
	if v.Hostports == nil {
		v.Hostports = []string{}
	}
	s.presentIPRestrictionModule(v.IPRestriction)
	if m := v.Backend; m != nil {
		m.Backend = s.ref(backendKind.collection, m.Backend.ID)
	}
}

// CreateTCPEdge creates a TCP edge, with the modules params gives set in
// the same write, as [Service.CreateTLSEdge] does. Its hostports may use
// any port; their hosts are reserved domains of the account.
func (s *Service) CreateTCPEdge(ctx context.Context, p Principal, params edges.CreateTCPEdgeParams) (*edges.TCPEdge, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	if err := params.Validate(); err != nil {
		return nil, err
	}
	v := &edges.TCPEdge{ID: s.ids.New(edges.TCPEdgePrefix), CreatedAt: s.timestamp(),
		Description: params.Description, Metadata: params.Metadata, Hostports: edges.CanonicalHostports(params.Hostports, edges.EdgeTCP),
		IPRestriction: moduleOf(params.IPRestriction, edges.IPRestrictionParams.Module),
		Backend:       moduleOf(params.Backend, edges.BackendParams.Module)}
	domainIDs, err := s.resolveHostports(ctx, p, v.Hostports)
	if err != nil {
		return nil, err
	}
	if err := create(ctx, s, p, tcpEdgeForm, v.ID, "", v, edgeRefs(v.Refs(), domainIDs, nil), hostportKeys(v.Hostports, edges.EdgeTCP)...); err != nil {
		return nil, s.edgeWriteErr(err, tcpEdgeKind, v.ID, v.Hostports, tcpRefFields(v, domainIDs))
	}
	s.presentTCPEdge(v, store.Record{})
	return v, nil
}

func tcpRefFields(v *edges.TCPEdge, domainIDs []string) refFields {
	fields := refFields{}
	fields.hostports(domainIDs)
	fields.ipRestriction(v.IPRestriction)
	fields.backend(v.Backend)
	return fields
}

// GetTCPEdge returns a TCP edge of the account, with its modules.
func (s *Service) GetTCPEdge(ctx context.Context, p Principal, id string) (*edges.TCPEdge, error) {
	v, rec, err := get(ctx, s, p, tcpEdgeForm, id)
	if err != nil {
		return nil, err
	}
	s.presentTCPEdge(v, rec)
	return v, nil
}

// ListTCPEdges returns a page of the account's TCP edges, newest first.
func (s *Service) ListTCPEdges(ctx context.Context, p Principal, opts ListOptions) (*Page[edges.TCPEdge], error) {
	return list(ctx, s, p, tcpEdgeForm, "", tcpEdgeKind.collection, opts, s.presentTCPEdge)
}

// UpdateTCPEdge changes the fields present in params, as
// [Service.UpdateTLSEdge] does.
func (s *Service) UpdateTCPEdge(ctx context.Context, p Principal, id string, params edges.UpdateTCPEdgeParams) (*edges.TCPEdge, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	if err := params.Validate(); err != nil {
		return nil, err
	}
	hostports, domainIDs, err := s.newHostports(ctx, p, params.Hostports, edges.EdgeTCP)
	if err != nil {
		return nil, err
	}
	var want edges.TCPEdge
	v, err := update(ctx, s, p, tcpEdgeForm, id, func(v *edges.TCPEdge, rec *store.Record) error {
		params.Apply(&v.Description, &v.Metadata)
		setModule(&v.IPRestriction, params.IPRestriction, edges.IPRestrictionParams.Module)
		setModule(&v.Backend, params.Backend, edges.BackendParams.Module)
		setHostports(&v.Hostports, rec, hostports, domainIDs, v.Refs(), edges.EdgeTCP)
		want = *v
		return nil
	})
	if err != nil {
		return nil, s.edgeWriteErr(err, tcpEdgeKind, id, hostports, tcpRefFields(&want, domainIDs))
	}
	s.presentTCPEdge(v, store.Record{})
	return v, nil
}

// DeleteTCPEdge deletes a TCP edge with its modules.
func (s *Service) DeleteTCPEdge(ctx context.Context, p Principal, id string) error {
	return s.remove(ctx, p, tcpEdgeKind, id)
}

// explainInUse turns a store's in-use error whose referrers include edges
// or routes into a conflict that names the referring modules ("the
// ip_restriction module of TLS edge edgtls_…") or, for a reserved domain,
// the edges whose hostports it serves ("the hostports of HTTPS edge
// edghts_…"). It returns nil for any
// other error, which the caller handles as usual. It reads the referrers
// only to word the message; the refusal itself was the store's atomic
// decision.
func (s *Service) explainInUse(ctx context.Context, accountID string, err error) error {
	var use *store.InUseError
	if !errors.As(err, &use) {
		return nil
	}
	named := false
	parts := make([]string, len(use.Referrers))
	for i, ref := range use.Referrers {
		parts[i] = describeID(ref)
		if ids.Valid(use.ID, domains.ReservedDomainPrefix) && isEdgeID(ref) {
			parts[i] = "the hostports of " + parts[i]
			named = true
			continue
		}
		if module := s.moduleReferencing(ctx, accountID, ref, use.ID); module != "" {
			parts[i] = "the " + module + " module of " + parts[i]
			named = true
		}
	}
	if !named {
		return nil
	}
	return &apierr.Error{Code: apierr.Conflict, Err: err,
		Msg: describeID(use.ID) + " is still referenced by " + strings.Join(parts, ", ") + "; remove those references first"}
}

// isEdgeID reports whether id is an HTTPS, TLS or TCP edge's.
func isEdgeID(id string) bool {
	return ids.Valid(id, edges.HTTPSEdgePrefix) || ids.Valid(id, edges.TLSEdgePrefix) || ids.Valid(id, edges.TCPEdgePrefix)
}

// moduleReferencing returns the name of the module of the edge or route
// ref that names id, or "" when ref is not an edge or route, cannot be
// read, or no module names id.
func (s *Service) moduleReferencing(ctx context.Context, accountID, ref, id string) string {
	var k kindInfo
	switch {
	case ids.Valid(ref, edges.HTTPSRoutePrefix):
		k = httpsRouteKind
	case ids.Valid(ref, edges.TLSEdgePrefix):
		k = tlsEdgeKind
	case ids.Valid(ref, edges.TCPEdgePrefix):
		k = tcpEdgeKind
	default:
		return ""
	}
	rec, err := s.store.Get(ctx, k.kind, accountID, ref)
	if err != nil {
		return ""
	}
	switch k.kind {
	case KindHTTPSEdgeRoute:
		if v, err := httpsRouteForm.decode(s, rec); err == nil {
			return v.ModuleReferencing(id)
		}
	case KindTLSEdge:
		if v, err := tlsEdgeForm.decode(s, rec); err == nil {
			return v.ModuleReferencing(id)
		}
	case KindTCPEdge:
		if v, err := tcpEdgeForm.decode(s, rec); err == nil {
			return v.ModuleReferencing(id)
		}
	}
	return ""
}
