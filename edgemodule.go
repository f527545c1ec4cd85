package edgeplane

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"strings"

	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/internal/records"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/internal/ids"
	"github.com/edgeplane/edgeplane/ipaccess"
	"github.com/edgeplane/edgeplane/policy"
	"github.com/edgeplane/edgeplane/store"
)

// Edge modules live inside their edge or route record, so replacing or
// deleting one is a single atomic update of that record, and the record's
// Refs (the IP policies and backends its modules name) are checked in the
// same step.
//
// A module change is reported once, under the module's event name
// ("<edge kind>_<module>_module", see moduleTable) with the verb "updated"
// for a replace and "deleted" for a delete. A module has no identifier of
// its own, so the object is the edge or route as the API shows it after the
// change: it says which edge or route changed and carries every module.

// The modules, in the order of the default event registry (after the
// kinds of kindList).
var routeOIDCModule = moduleInfo{edges.ModuleOIDC, "https_edge_route_oidc_module"}

var routeBackendModule = moduleInfo{edges.ModuleBackend, "https_edge_route_backend_module"}

var routeResponseHeadersModule = moduleInfo{edges.ModuleResponseHeaders, "https_edge_route_response_headers_module"}

var routeCompressionModule = moduleInfo{edges.ModuleCompression, "https_edge_route_compression_module"}

var routeTrafficPolicyModule = moduleInfo{edges.ModuleTrafficPolicy, "https_edge_route_traffic_policy_module"}

var tlsIPRestrictionModule = moduleInfo{edges.ModuleIPRestriction, "tls_edge_ip_restriction_module"}

var tlsTrafficPolicyModule = moduleInfo{edges.ModuleTrafficPolicy, "tls_edge_traffic_policy_module"}

var tlsTerminationModule = moduleInfo{edges.ModuleTLSTermination, "tls_edge_tls_termination_module"}

var tcpIPRestrictionModule = moduleInfo{edges.ModuleIPRestriction, "tcp_edge_ip_restriction_module"}

var tcpBackendModule = moduleInfo{edges.ModuleBackend, "tcp_edge_backend_module"}

var tlsBackendModule = moduleInfo{edges.ModuleBackend, "tls_edge_backend_module"}

// moduleTable lists every module, in order.
var moduleTable = []*moduleInfo{&routeOIDCModule, &routeBackendModule, &routeResponseHeadersModule, &routeCompressionModule,
	&routeTrafficPolicyModule, &tlsIPRestrictionModule, &tlsTrafficPolicyModule, &tlsTerminationModule,
	&tcpIPRestrictionModule, &tcpBackendModule, &tlsBackendModule}

// moduleNotSet is the error of reading or deleting a module that is not
// set.
func moduleNotSet(noun, id, module string) error {
	return apierr.NotFoundf("%s %s has no %s module", noun, id, module)
}

// replaceRouteModule sets a module of a route in one atomic update and
// returns the presented module.
func replaceRouteModule[M any](ctx context.Context, s *Service, p Principal, edgeID, id string, mod moduleInfo, field func(*edges.HTTPSRoute) **M, m M) (*M, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	r, err := s.updateRoute(ctx, p, edgeID, id, mod.event, events.Updated, func(r *edges.HTTPSRoute) error {
		*field(r) = &m
		return nil
	})
	if err != nil {
		return nil, err
	}
	return *field(r), nil
}

func getRouteModule[M any](ctx context.Context, s *Service, p Principal, edgeID, id string, mod moduleInfo, field func(*edges.HTTPSRoute) **M) (*M, error) {
	r, err := s.GetHTTPSEdgeRoute(ctx, p, edgeID, id)
	if err != nil {
		return nil, err
	}
	if *field(r) == nil {
		return nil, moduleNotSet(httpsRouteKind.Noun, id, mod.name)
	}
	return *field(r), nil
}

func deleteRouteModule[M any](ctx context.Context, s *Service, p Principal, edgeID, id string, mod moduleInfo, field func(*edges.HTTPSRoute) **M) error {
	if err := p.Check(); err != nil {
		return err
	}
	_, err := s.updateRoute(ctx, p, edgeID, id, mod.event, events.Deleted, func(r *edges.HTTPSRoute) error {
		if *field(r) == nil {
			return moduleNotSet(httpsRouteKind.Noun, id, mod.name)
		}
		*field(r) = nil
		return nil
	})
	if err != nil {
		return err
	}
	return nil
}

func routeOIDC(r *edges.HTTPSRoute) **edges.OIDC                       { return &r.OIDC }
func routeBackend(r *edges.HTTPSRoute) **edges.Backend                 { return &r.Backend }
func routeResponseHeaders(r *edges.HTTPSRoute) **edges.ResponseHeaders { return &r.ResponseHeaders }
func routeCompression(r *edges.HTTPSRoute) **edges.Compression         { return &r.Compression }
func routeTrafficPolicy(r *edges.HTTPSRoute) **edges.TrafficPolicy     { return &r.TrafficPolicy }

// ReplaceHTTPSRouteOIDC replaces the OIDC module of a route of an HTTPS
// edge (PUT /edges/https/{edge_id}/routes/{id}/oidc). Fields not supplied
// are stored as "", 0 and false; enabled defaults to true.
func (s *Service) ReplaceHTTPSRouteOIDC(ctx context.Context, p Principal, edgeID, id string, params edges.OIDCParams) (*edges.OIDC, error) {
	if err := params.Validate(); err != nil {
		return nil, err
	}
	return replaceRouteModule(ctx, s, p, edgeID, id, routeOIDCModule, routeOIDC, params.Module())
}

// GetHTTPSRouteOIDC returns the OIDC module of a route; not found when the
// module is not set.
func (s *Service) GetHTTPSRouteOIDC(ctx context.Context, p Principal, edgeID, id string) (*edges.OIDC, error) {
	return getRouteModule(ctx, s, p, edgeID, id, routeOIDCModule, routeOIDC)
}

// DeleteHTTPSRouteOIDC removes the OIDC module of a route; not found when
// the module is not set.
func (s *Service) DeleteHTTPSRouteOIDC(ctx context.Context, p Principal, edgeID, id string) error {
	return deleteRouteModule(ctx, s, p, edgeID, id, routeOIDCModule, routeOIDC)
}

// ReplaceHTTPSRouteBackend replaces the backend module of a route of an
// HTTPS edge (PUT /edges/https/{edge_id}/routes/{id}/backend). backend_id
// must name a tunnel group backend of the account, checked in the same
// atomic step as the write; while the module stands, that backend cannot
// be deleted.
func (s *Service) ReplaceHTTPSRouteBackend(ctx context.Context, p Principal, edgeID, id string, params edges.BackendParams) (*edges.Backend, error) {
	if err := params.Validate(); err != nil {
		return nil, err
	}
	m, err := replaceRouteModule(ctx, s, p, edgeID, id, routeBackendModule, routeBackend, params.Module())
	return m, refViolation(err, "backend_id", false, nil)
}

// GetHTTPSRouteBackend returns the backend module of a route; not found
// when the module is not set.
func (s *Service) GetHTTPSRouteBackend(ctx context.Context, p Principal, edgeID, id string) (*edges.Backend, error) {
	return getRouteModule(ctx, s, p, edgeID, id, routeBackendModule, routeBackend)
}

// DeleteHTTPSRouteBackend removes the backend module of a route, releasing
// its backend; not found when the module is not set.
func (s *Service) DeleteHTTPSRouteBackend(ctx context.Context, p Principal, edgeID, id string) error {
	return deleteRouteModule(ctx, s, p, edgeID, id, routeBackendModule, routeBackend)
}

// ReplaceHTTPSRouteResponseHeaders replaces the response headers module of
// a route (PUT /edges/https/{edge_id}/routes/{id}/response_headers).
// Header names are stored lower-cased.
func (s *Service) ReplaceHTTPSRouteResponseHeaders(ctx context.Context, p Principal, edgeID, id string, params edges.ResponseHeadersParams) (*edges.ResponseHeaders, error) {
	if err := params.Validate(); err != nil {
		return nil, err
	}
	return replaceRouteModule(ctx, s, p, edgeID, id, routeResponseHeadersModule, routeResponseHeaders, params.Module())
}

// GetHTTPSRouteResponseHeaders returns the response headers module of a
// route; not found when the module is not set.
func (s *Service) GetHTTPSRouteResponseHeaders(ctx context.Context, p Principal, edgeID, id string) (*edges.ResponseHeaders, error) {
	return getRouteModule(ctx, s, p, edgeID, id, routeResponseHeadersModule, routeResponseHeaders)
}

// DeleteHTTPSRouteResponseHeaders removes the response headers module of
// a route; not found when the module is not set.
func (s *Service) DeleteHTTPSRouteResponseHeaders(ctx context.Context, p Principal, edgeID, id string) error {
	return deleteRouteModule(ctx, s, p, edgeID, id, routeResponseHeadersModule, routeResponseHeaders)
}

// ReplaceHTTPSRouteCompression replaces the compression module of a route
// (PUT /edges/https/{edge_id}/routes/{id}/compression).
func (s *Service) ReplaceHTTPSRouteCompression(ctx context.Context, p Principal, edgeID, id string, params edges.CompressionParams) (*edges.Compression, error) {
	if err := params.Validate(); err != nil {
		return nil, err
	}
	return replaceRouteModule(ctx, s, p, edgeID, id, routeCompressionModule, routeCompression, params.Module())
}

// GetHTTPSRouteCompression returns the compression module of a route; not
// found when the module is not set.
func (s *Service) GetHTTPSRouteCompression(ctx context.Context, p Principal, edgeID, id string) (*edges.Compression, error) {
	return getRouteModule(ctx, s, p, edgeID, id, routeCompressionModule, routeCompression)
}

// DeleteHTTPSRouteCompression removes the compression module of a route;
// not found when the module is not set.
func (s *Service) DeleteHTTPSRouteCompression(ctx context.Context, p Principal, edgeID, id string) error {
	return deleteRouteModule(ctx, s, p, edgeID, id, routeCompressionModule, routeCompression)
}

// ReplaceHTTPSRouteTrafficPolicy replaces the traffic policy module of a
// route of an HTTPS edge (PUT
// /edges/https/{edge_id}/routes/{id}/traffic_policy). The document in
// value is validated as for [Service.ReplaceTLSEdgeTrafficPolicy], but
// compiled for HTTP traffic: phases inbound (on_http_request) and outbound
// (on_http_response), HTTP variables, and HTTP actions such as rate-limit
// (see [hosting.DataPlaneHost.HTTPSRouteConfig] for how it runs). It is stored
// re-serialized compactly; enabled defaults to true. The IP policies its
// restrict-ips actions name must be IP policies of the account, checked in
// the same atomic step as the write; while the module stands, they cannot
// be deleted.
func (s *Service) ReplaceHTTPSRouteTrafficPolicy(ctx context.Context, p Principal, edgeID, id string, params edges.TrafficPolicyParams) (*edges.TrafficPolicy, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	if err := params.Validate(); err != nil {
		return nil, err
	}
	value, policyIDs, err := s.checkPolicy(ctx, p, policy.TargetHTTP, id, params.Value)
	if err != nil {
		return nil, err
	}
	m := edges.TrafficPolicy{Enabled: params.Enabled == nil || *params.Enabled, Value: value, IPPolicyIDs: policyIDs}
	out, err := replaceRouteModule(ctx, s, p, edgeID, id, routeTrafficPolicyModule, routeTrafficPolicy, m)
	return out, refViolation(err, "value", false, nil)
}

// GetHTTPSRouteTrafficPolicy returns the traffic policy module of a route;
// not found when the module is not set.
func (s *Service) GetHTTPSRouteTrafficPolicy(ctx context.Context, p Principal, edgeID, id string) (*edges.TrafficPolicy, error) {
	return getRouteModule(ctx, s, p, edgeID, id, routeTrafficPolicyModule, routeTrafficPolicy)
}

// DeleteHTTPSRouteTrafficPolicy removes the traffic policy module of a
// route, releasing the IP policies it names; not found when the module is
// not set.
func (s *Service) DeleteHTTPSRouteTrafficPolicy(ctx context.Context, p Principal, edgeID, id string) error {
	return deleteRouteModule(ctx, s, p, edgeID, id, routeTrafficPolicyModule, routeTrafficPolicy)
}

// moduleHolder is a TLS or TCP edge: a record whose modules name Refs.
type moduleHolder[E any] interface {
	*E
	Refs() []string
}

// edgeType is how the module operations handle one kind of edge.
type edgeType[E any] struct {
	form    records.Form[E]
	present func(*E, store.Record)
	check   func(*E) error // module combination rules; nil for none
}

func (s *Service) tlsEdgeType() edgeType[edges.TLSEdge] {
	return edgeType[edges.TLSEdge]{tlsEdgeForm.Form, s.presentTLSEdge, (*edges.TLSEdge).CheckModules}
}

func (s *Service) tcpEdgeType() edgeType[edges.TCPEdge] {
	return edgeType[edges.TCPEdge]{tcpEdgeForm.Form, s.presentTCPEdge, nil}
}

// updateEdgeModule runs mutate on an edge in one atomic update, checks the
// edge's module rules, sets its Refs and reports the change of the module
// name with verb.
func updateEdgeModule[E any, PE moduleHolder[E]](ctx context.Context, s *Service, p Principal, t edgeType[E], id string, mod moduleInfo, verb string, mutate func(*E) error) (*E, error) {
	var refused error // the callback's own error, which update would reword
	v, err := records.UpdateAs(ctx, s.db, p, t.form, id, mod.event, verb, func(v *E, rec *store.Record) error {
		refused = mutate(v)
		if refused == nil && t.check != nil {
			refused = t.check(v)
		}
		if refused != nil {
			return refused
		}
		rec.Refs = edgeRefs(PE(v).Refs(), nil, rec.Refs) // keeps the reserved domains of its hostports
		return nil
	})
	if refused != nil {
		return nil, refused
	}
	if err != nil {
		return nil, err
	}
	t.present(v, store.Record{})
	return v, nil
}

func replaceEdgeModule[E any, PE moduleHolder[E], M any](ctx context.Context, s *Service, p Principal, t edgeType[E], id string, mod moduleInfo, field func(*E) **M, m M) (*M, error) {
	v, err := updateEdgeModule[E, PE](ctx, s, p, t, id, mod, events.Updated, func(v *E) error {
		*field(v) = &m
		return nil
	})
	if err != nil {
		return nil, err
	}
	return *field(v), nil
}

func getEdgeModule[E any, M any](ctx context.Context, s *Service, p Principal, t edgeType[E], id string, mod moduleInfo, field func(*E) **M) (*M, error) {
	v, rec, err := records.Get(ctx, s.db, p, t.form, id)
	if err != nil {
		return nil, err
	}
	if *field(v) == nil {
		return nil, moduleNotSet(t.form.Noun, id, mod.name)
	}
	t.present(v, rec)
	return *field(v), nil
}

func deleteEdgeModule[E any, PE moduleHolder[E], M any](ctx context.Context, s *Service, p Principal, t edgeType[E], id string, mod moduleInfo, field func(*E) **M) error {
	_, err := updateEdgeModule[E, PE](ctx, s, p, t, id, mod, events.Deleted, func(v *E) error {
		if *field(v) == nil {
			return moduleNotSet(t.form.Noun, id, mod.name)
		}
		*field(v) = nil
		return nil
	})
	return err
}

func tlsIPRestriction(e *edges.TLSEdge) **edges.IPRestriction   { return &e.IPRestriction }
func tlsTrafficPolicy(e *edges.TLSEdge) **edges.TrafficPolicy   { return &e.TrafficPolicy }
func tlsTLSTermination(e *edges.TLSEdge) **edges.TLSTermination { return &e.TLSTermination }
func tlsBackend(e *edges.TLSEdge) **edges.Backend               { return &e.Backend }
func tcpIPRestriction(e *edges.TCPEdge) **edges.IPRestriction   { return &e.IPRestriction }
func tcpBackend(e *edges.TCPEdge) **edges.Backend               { return &e.Backend }

// ReplaceTLSEdgeIPRestriction replaces the IP restriction module of a TLS
// edge (PUT /edges/tls/{id}/ip_restriction). Every ip_policy_ids entry
// must name an IP policy of the account, checked in the same atomic step
// as the write; while the module stands, those policies cannot be deleted.
func (s *Service) ReplaceTLSEdgeIPRestriction(ctx context.Context, p Principal, id string, params edges.IPRestrictionParams) (*edges.IPRestriction, error) {
	if err := params.Validate(); err != nil {
		return nil, err
	}
	m, err := replaceEdgeModule(ctx, s, p, s.tlsEdgeType(), id, tlsIPRestrictionModule, tlsIPRestriction, params.Module())
	return m, refViolation(err, "ip_policy_ids", true, params.IPPolicyIDs)
}

// GetTLSEdgeIPRestriction returns the IP restriction module of a TLS edge;
// not found when the module is not set.
func (s *Service) GetTLSEdgeIPRestriction(ctx context.Context, p Principal, id string) (*edges.IPRestriction, error) {
	return getEdgeModule(ctx, s, p, s.tlsEdgeType(), id, tlsIPRestrictionModule, tlsIPRestriction)
}

// DeleteTLSEdgeIPRestriction removes the IP restriction module of a TLS
// edge, releasing its IP policies; not found when the module is not set.
func (s *Service) DeleteTLSEdgeIPRestriction(ctx context.Context, p Principal, id string) error {
	return deleteEdgeModule(ctx, s, p, s.tlsEdgeType(), id, tlsIPRestrictionModule, tlsIPRestriction)
}

// ReplaceTLSEdgeTrafficPolicy replaces the traffic policy module of a TLS
// edge (PUT /edges/tls/{id}/traffic_policy). The document in value is
// validated (see [hosting.DataPlaneHost.TLSEdgeConfig] for how it runs) and stored
// re-serialized compactly. It is a conflict while the edge's TLS
// termination module terminates upstream.
func (s *Service) ReplaceTLSEdgeTrafficPolicy(ctx context.Context, p Principal, id string, params edges.TrafficPolicyParams) (*edges.TrafficPolicy, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	if err := params.Validate(); err != nil {
		return nil, err
	}
	value, policyIDs, err := s.checkPolicy(ctx, p, policy.TargetConnection, id, params.Value)
	if err != nil {
		return nil, err
	}
	m := edges.TrafficPolicy{Enabled: params.Enabled == nil || *params.Enabled, Value: value, IPPolicyIDs: policyIDs}
	out, err := replaceEdgeModule(ctx, s, p, s.tlsEdgeType(), id, tlsTrafficPolicyModule, tlsTrafficPolicy, m)
	return out, refViolation(err, "value", false, nil)
}

// GetTLSEdgeTrafficPolicy returns the traffic policy module of a TLS edge;
// not found when the module is not set.
func (s *Service) GetTLSEdgeTrafficPolicy(ctx context.Context, p Principal, id string) (*edges.TrafficPolicy, error) {
	return getEdgeModule(ctx, s, p, s.tlsEdgeType(), id, tlsTrafficPolicyModule, tlsTrafficPolicy)
}

// DeleteTLSEdgeTrafficPolicy removes the traffic policy module of a TLS
// edge; not found when the module is not set.
func (s *Service) DeleteTLSEdgeTrafficPolicy(ctx context.Context, p Principal, id string) error {
	return deleteEdgeModule(ctx, s, p, s.tlsEdgeType(), id, tlsTrafficPolicyModule, tlsTrafficPolicy)
}

// ReplaceTLSEdgeTLSTermination replaces the TLS termination module of a
// TLS edge (PUT /edges/tls/{id}/tls_termination). terminate_at defaults to
// edge; min_version null means the service default. Terminating upstream
// is a conflict while the edge has a traffic policy module.
func (s *Service) ReplaceTLSEdgeTLSTermination(ctx context.Context, p Principal, id string, params edges.TLSTerminationParams) (*edges.TLSTermination, error) {
	if err := params.Validate(); err != nil {
		return nil, err
	}
	return replaceEdgeModule(ctx, s, p, s.tlsEdgeType(), id, tlsTerminationModule, tlsTLSTermination, params.Module())
}

// GetTLSEdgeTLSTermination returns the TLS termination module of a TLS
// edge; not found when the module is not set.
func (s *Service) GetTLSEdgeTLSTermination(ctx context.Context, p Principal, id string) (*edges.TLSTermination, error) {
	return getEdgeModule(ctx, s, p, s.tlsEdgeType(), id, tlsTerminationModule, tlsTLSTermination)
}

// DeleteTLSEdgeTLSTermination removes the TLS termination module of a TLS
// edge (which then terminates TLS at the edge with the default minimum
// version); not found when the module is not set.
func (s *Service) DeleteTLSEdgeTLSTermination(ctx context.Context, p Principal, id string) error {
	return deleteEdgeModule(ctx, s, p, s.tlsEdgeType(), id, tlsTerminationModule, tlsTLSTermination)
}

// ReplaceTLSEdgeBackend replaces the backend module of a TLS edge (PUT
// /edges/tls/{id}/backend), with the rules of
// [Service.ReplaceHTTPSRouteBackend]. SPEC 2.7 gives TLS edges no backend
// module; edgeplane adds one, as TCP edges have, so that an edge proxy
// has tunnels to send a TLS edge's connections to.
func (s *Service) ReplaceTLSEdgeBackend(ctx context.Context, p Principal, id string, params edges.BackendParams) (*edges.Backend, error) {
	if err := params.Validate(); err != nil {
		return nil, err
	}
	m, err := replaceEdgeModule(ctx, s, p, s.tlsEdgeType(), id, tlsBackendModule, tlsBackend, params.Module())
	return m, refViolation(err, "backend_id", false, nil)
}

// GetTLSEdgeBackend returns the backend module of a TLS edge; not found
// when the module is not set.
func (s *Service) GetTLSEdgeBackend(ctx context.Context, p Principal, id string) (*edges.Backend, error) {
	return getEdgeModule(ctx, s, p, s.tlsEdgeType(), id, tlsBackendModule, tlsBackend)
}

// DeleteTLSEdgeBackend removes the backend module of a TLS edge; not found
// when the module is not set.
func (s *Service) DeleteTLSEdgeBackend(ctx context.Context, p Principal, id string) error {
	return deleteEdgeModule(ctx, s, p, s.tlsEdgeType(), id, tlsBackendModule, tlsBackend)
}

// ReplaceTCPEdgeIPRestriction replaces the IP restriction module of a TCP
// edge (PUT /edges/tcp/{id}/ip_restriction), with the rules of
// [Service.ReplaceTLSEdgeIPRestriction].
func (s *Service) ReplaceTCPEdgeIPRestriction(ctx context.Context, p Principal, id string, params edges.IPRestrictionParams) (*edges.IPRestriction, error) {
	if err := params.Validate(); err != nil {
		return nil, err
	}
	m, err := replaceEdgeModule(ctx, s, p, s.tcpEdgeType(), id, tcpIPRestrictionModule, tcpIPRestriction, params.Module())
	return m, refViolation(err, "ip_policy_ids", true, params.IPPolicyIDs)
}

// GetTCPEdgeIPRestriction returns the IP restriction module of a TCP edge;
// not found when the module is not set.
func (s *Service) GetTCPEdgeIPRestriction(ctx context.Context, p Principal, id string) (*edges.IPRestriction, error) {
	return getEdgeModule(ctx, s, p, s.tcpEdgeType(), id, tcpIPRestrictionModule, tcpIPRestriction)
}

// DeleteTCPEdgeIPRestriction removes the IP restriction module of a TCP
// edge; not found when the module is not set.
func (s *Service) DeleteTCPEdgeIPRestriction(ctx context.Context, p Principal, id string) error {
	return deleteEdgeModule(ctx, s, p, s.tcpEdgeType(), id, tcpIPRestrictionModule, tcpIPRestriction)
}

// ReplaceTCPEdgeBackend replaces the backend module of a TCP edge (PUT
// /edges/tcp/{id}/backend), with the rules of
// [Service.ReplaceHTTPSRouteBackend].
func (s *Service) ReplaceTCPEdgeBackend(ctx context.Context, p Principal, id string, params edges.BackendParams) (*edges.Backend, error) {
	if err := params.Validate(); err != nil {
		return nil, err
	}
	m, err := replaceEdgeModule(ctx, s, p, s.tcpEdgeType(), id, tcpBackendModule, tcpBackend, params.Module())
	return m, refViolation(err, "backend_id", false, nil)
}

// GetTCPEdgeBackend returns the backend module of a TCP edge; not found
// when the module is not set.
func (s *Service) GetTCPEdgeBackend(ctx context.Context, p Principal, id string) (*edges.Backend, error) {
	return getEdgeModule(ctx, s, p, s.tcpEdgeType(), id, tcpBackendModule, tcpBackend)
}

// DeleteTCPEdgeBackend removes the backend module of a TCP edge; not found
// when the module is not set.
func (s *Service) DeleteTCPEdgeBackend(ctx context.Context, p Principal, id string) error {
	return deleteEdgeModule(ctx, s, p, s.tcpEdgeType(), id, tcpBackendModule, tcpBackend)
}

// checkPolicy validates a traffic policy document by compiling it for
// target with the Service's engine (scope is the edge or route ID that
// owns it), and returns it re-serialized compactly with the IP policies
// its restrict-ips actions name. Every problem is a violation under
// "value", located in the document (value.inbound[0].expressions[1]).
// Named IP policies must be IP policies of the account: checked here to
// locate the problem, and again atomically through the edge or route
// record's Refs when it is written.
func (s *Service) checkPolicy(ctx context.Context, p Principal, target policy.Target, scope, value string) (string, []string, error) {
	return s.compilePolicy(ctx, p.AccountID, target, scope, "value", value)
}

// compilePolicy is checkPolicy for the account accountID, with the
// violations under field: what an agent's endpoint bind (whose document
// is its TrafficPolicy) shares with edges.
func (s *Service) compilePolicy(ctx context.Context, accountID string, target policy.Target, scope, field, value string) (string, []string, error) {
	var (
		named   []string
		failure error // a store failure while resolving: not the caller's fault
	)
	resolve := func(list []string) (policy.IPChecker, error) {
		for _, id := range list {
			if !ids.Valid(id, ipaccess.PolicyPrefix) {
				return nil, apierr.New(apierr.InvalidArgument, "%q is not an IP policy ID (%s followed by %d base62 characters)", id, ipaccess.PolicyPrefix, ids.Len)
			}
			if _, err := s.store.Get(ctx, KindIPPolicy, accountID, id); err != nil {
				if errors.Is(err, apierr.ErrNotFound) {
					return nil, apierr.New(apierr.InvalidArgument, "IP policy %s not found in this account", id)
				}
				failure = s.db.StoreErr(err, ipPolicyKind, id)
				return nil, failure
			}
			if !slices.Contains(named, id) {
				named = append(named, id)
			}
		}
		return allowAll{}, nil
	}
	pol, err := s.policy.CompileJSON([]byte(value), policy.CompileOptions{Target: target, Scope: scope, IPPolicies: resolve})
	if failure != nil {
		return "", nil, failure
	}
	if err != nil {
		if apierr.CodeOf(err) != apierr.InvalidArgument {
			return "", nil, err
		}
		var vs apierr.Violations
		vs.AddError(field, err)
		return "", nil, vs.Err()
	}
	compact, err := pol.MarshalJSON()
	if err != nil {
		return "", nil, apierr.Wrap(apierr.Internal, err, "internal error")
	}
	return string(compact), named, nil
}

// allowAll is the IP checker of a policy compiled only to be validated.
type allowAll struct{}

func (allowAll) AllowedIP(netip.Addr) bool { return true }

func (s *Service) presentIPRestrictionModule(m *edges.IPRestriction) {
	if m == nil {
		return
	}
	m.IPPolicies = s.refs(ipPolicyKind.Collection, m.PolicyIDs())
}

// moduleOf returns the module of params, nil when params is.
func moduleOf[P, M any](params *P, module func(P) M) *M {
	if params == nil {
		return nil
	}
	m := module(*params)
	return &m
}

// setModule sets *field to the module of params when params is given.
func setModule[P, M any](field **M, params *P, module func(P) M) {
	if params != nil {
		*field = moduleOf(params, module)
	}
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
	var k *records.Kind
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
	rec, err := s.store.Get(ctx, k.StoreKind, accountID, ref)
	if err != nil {
		return ""
	}
	switch k.StoreKind {
	case KindHTTPSEdgeRoute:
		if v, err := httpsRouteForm.Decode(s.db, rec); err == nil {
			return v.ModuleReferencing(id)
		}
	case KindTLSEdge:
		if v, err := tlsEdgeForm.Decode(s.db, rec); err == nil {
			return v.ModuleReferencing(id)
		}
	case KindTCPEdge:
		if v, err := tcpEdgeForm.Decode(s.db, rec); err == nil {
			return v.ModuleReferencing(id)
		}
	}
	return ""
}
