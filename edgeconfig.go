package edgeplane

import (
	"context"
	"log/slog"
	"time"

	"github.com/edgeplane/edgeplane/internal/records"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/edgeconfig"
	"github.com/edgeplane/edgeplane/internal/dataplane"
	"github.com/edgeplane/edgeplane/internal/ids"
	"github.com/edgeplane/edgeplane/ipaccess"
	"github.com/edgeplane/edgeplane/policy"
	"github.com/edgeplane/edgeplane/store"
)

// The edge proxy calls: one call returns everything a proxy applies to an
// edge or route. They are host operations (a proxy acts for the service,
// not for a user), so they take the account ID instead of a Principal.
// Each returns a snapshot: a proxy reloads it when the edge, its routes or
// the IP policies and rules its modules name change (their change events).
// Package internal/dataplane compiles them from the records of the kinds
// dataplaneKinds gives it.

// dataplaneKinds are the kinds the Service's dataplane reads.
func dataplaneKinds() dataplane.Kinds {
	return dataplane.Kinds{Account: accountKind, HTTPSEdge: httpsEdgeForm.Form, HTTPSRoute: httpsRouteForm.Form,
		TLSEdge: tlsEdgeForm.Form, TCPEdge: tcpEdgeForm.Form, IPRule: ipRuleForm.Form, IPRestriction: ipRestrictionForm.Form,
		RouteNotFound: routeNotFound}
}

// loadEdgeRecord reads and decodes the record id of form f's kind in
// accountID, for a host operation (backendTunnels); package
// internal/dataplane reads the edges' records the same way.
func loadEdgeRecord[M any](ctx context.Context, s *Service, accountID string, f records.Form[M], id string) (*M, store.Record, error) {
	if !ids.Valid(accountID, AccountPrefix) {
		return nil, store.Record{}, accountKind.NotFound(accountID)
	}
	if !ids.Valid(id, f.Prefix) {
		return nil, store.Record{}, f.NotFound(id)
	}
	v, rec, err := f.Read(ctx, s.db, accountID, id)
	if err != nil {
		return nil, store.Record{}, s.db.StoreErr(err, f.Kind, id)
	}
	return v, rec, nil
}

// httpsRouteConfig is [DataPlaneHost.HTTPSRouteConfig].
func (s *Service) httpsRouteConfig(ctx context.Context, accountID, edgeID, routeID string) (*edgeconfig.Route, error) {
	return s.dataplane.HTTPSRoute(ctx, accountID, edgeID, routeID)
}

// httpsEdgeConfig is [DataPlaneHost.HTTPSEdgeConfig].
func (s *Service) httpsEdgeConfig(ctx context.Context, accountID, edgeID string) (*edgeconfig.HTTPSEdge, error) {
	return s.dataplane.HTTPSEdge(ctx, accountID, edgeID)
}

// tcpEdgeConfig is [DataPlaneHost.TCPEdgeConfig].
func (s *Service) tcpEdgeConfig(ctx context.Context, accountID, edgeID string) (*edgeconfig.TCPEdge, error) {
	return s.dataplane.TCPEdge(ctx, accountID, edgeID)
}

// tlsEdgeConfig is [DataPlaneHost.TLSEdgeConfig].
func (s *Service) tlsEdgeConfig(ctx context.Context, accountID, edgeID string) (*edgeconfig.TLSEdge, error) {
	return s.dataplane.TLSEdge(ctx, accountID, edgeID)
}

// EndpointRestrictions is what an edge proxy applies to the traffic of
// every edge of an account: [ipaccess.EndpointRestrictions].
type EndpointRestrictions = ipaccess.EndpointRestrictions

// endpointRestrictions is [DataPlaneHost.EndpointRestrictions].
func (s *Service) endpointRestrictions(ctx context.Context, accountID string) (*EndpointRestrictions, error) {
	return s.dataplane.EndpointRestrictions(ctx, accountID)
}

// newPolicyEngine returns engine, or when it is nil a traffic policy
// engine with the built-in actions, the Service's clock and a sink on its
// logger.
func newPolicyEngine(engine *policy.Engine, now func() time.Time, log *slog.Logger) (*policy.Engine, error) {
	if engine != nil {
		return engine, nil
	}
	engine, err := policy.NewEngine(policy.Options{Clock: now, Sink: policy.NewSlogSink(log)})
	if err != nil {
		return nil, apierr.Wrap(apierr.Internal, err, "cannot build the default traffic policy engine") // a bug: the built-ins always register
	}
	return engine, nil
}
