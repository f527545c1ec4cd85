package edgeplane

import (
	"log/slog"
	"time"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/internal/dataplane"
	"github.com/edgeplane/edgeplane/ipaccess"
	"github.com/edgeplane/edgeplane/policy"
)

// The edge proxy calls (hosting.DataPlaneHost): one call returns what a
// proxy applies to an edge or route. They are host operations (a proxy acts for the service,
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

// EndpointRestrictions is what an edge proxy applies to the traffic of
// every edge of an account: [ipaccess.EndpointRestrictions].
type EndpointRestrictions = ipaccess.EndpointRestrictions

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
