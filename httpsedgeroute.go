package edgeplane

import (
	"context"
	"errors"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/internal/ids"
	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/internal/storedforms"
	"github.com/edgeplane/edgeplane/policy"
	"github.com/edgeplane/edgeplane/store"
)

// routesPath returns the collection path of an HTTPS edge's routes.
func routesPath(edgeID string) string { return httpsRouteKind.Path(edgeID) }

// routeMatchKey is the lookup key that keeps two routes of one edge from
// matching the same thing.
func routeMatchKey(r *edges.HTTPSRoute) string {
	return "https_edge_route_match:" + r.EdgeID + ":" + r.MatchType + ":" + r.Match
}

// presentHTTPSRoute fills the URIs of a route and of its modules' Refs and
// gives its modules' lists their empty forms.
func (s *Service) presentHTTPSRoute(v *edges.HTTPSRoute, _ store.Record) {
	v.URI = s.uri(routesPath(v.EdgeID), v.ID)
	if m := v.OIDC; m != nil && m.Scopes == nil {
		m.Scopes = []string{}
	}
	if m := v.Backend; m != nil {
		m.Backend = s.ref(backendKind.Collection, m.Backend.ID)
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
	_, _, err := records.Get(ctx, s.db, p, httpsEdgeForm.Form, edgeID)
	return err
}

// CreateHTTPSEdgeRoute adds a route to an HTTPS edge of the account. Two
// routes of one edge cannot have the same match_type and match
// (conflict); an edge has at most [edges.MaxRoutesPerEdge] routes (failed
// precondition beyond).
func (s *Service) CreateHTTPSEdgeRoute(ctx context.Context, p Principal, edgeID string, params edges.CreateRouteParams) (*edges.HTTPSRoute, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	if err := params.Validate(); err != nil {
		return nil, err
	}
	if !ids.Valid(edgeID, edges.HTTPSEdgePrefix) {
		return nil, httpsEdgeKind.NotFound(edgeID)
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
	err = records.CreateInSlot(ctx, s.db, p, httpsRouteForm.Form, v.ID, edgeID, &v, v.Refs(), edges.MaxRoutesPerEdge, func() error {
		return apierr.New(apierr.FailedPrecondition, "HTTPS edge %s already has %d routes, the most one edge may have; delete a route first",
			edgeID, edges.MaxRoutesPerEdge)
	}, routeMatchKey(&v))
	var miss *store.MissingRefError
	switch {
	case errors.As(err, &miss) && miss.ID == edgeID:
		return nil, httpsEdgeKind.NotFound(edgeID)
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
	v, rec, err := records.Get(ctx, s.db, p, httpsRouteForm.Form, id)
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
	return list(ctx, s, p, httpsRouteForm.Form, edgeID, routesPath(edgeID), opts, s.presentHTTPSRoute)
}

// updateRoute runs mutate on a route of the HTTPS edge edgeID inside one
// atomic update, reported as the change verb of the event name ev; the
// route's Keys and Refs follow the result. A missing
// edge, or a route that is missing or of another edge, is not found.
func (s *Service) updateRoute(ctx context.Context, p Principal, edgeID, id, ev, verb string, mutate func(*edges.HTTPSRoute) error) (*edges.HTTPSRoute, error) {
	if err := s.checkHTTPSEdge(ctx, p, edgeID); err != nil {
		return nil, err
	}
	if !ids.Valid(id, edges.HTTPSRoutePrefix) {
		return nil, routeNotFound(edgeID, id)
	}
	ran := false
	var refused error // the callback's own error, which update would reword
	v, err := records.UpdateAs(ctx, s.db, p, httpsRouteForm.Form, id, ev, verb, func(v *edges.HTTPSRoute, rec *store.Record) error {
		ran = true
		if rec.ParentID != edgeID {
			refused = routeNotFound(edgeID, id)
		} else {
			refused = mutate(v)
		}
		if refused != nil {
			return refused
		}
		rec.Keys = append(records.SlotKeys(rec.Keys), routeMatchKey(v)) // keeps its slot (see records.CreateInSlot)
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
	if err := p.Check(); err != nil {
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
	v, err := s.updateRoute(ctx, p, edgeID, id, httpsRouteKind.Event, events.Updated, func(v *edges.HTTPSRoute) error {
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
	if err := s.store.Delete(ctx, KindHTTPSEdgeRoute, p.AccountID, id, s.db.Note(httpsRouteKind.Event, events.Deleted)); err != nil {
		if errors.Is(err, apierr.ErrNotFound) {
			return routeNotFound(edgeID, id)
		}
		return s.db.StoreErr(err, httpsRouteKind, id)
	}
	return nil
}

var httpsRouteKind = &records.Kind{StoreKind: KindHTTPSEdgeRoute, Prefix: edges.HTTPSRoutePrefix, Collection: "routes", Noun: "HTTPS edge route", Event: "https_edge_route", Parent: httpsEdgeKind, Nested: true}

var httpsRouteForm = &kind[edges.HTTPSRoute]{Form: storedforms.HTTPSRoute(httpsRouteKind), present: (*Service).presentHTTPSRoute}
