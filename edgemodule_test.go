package edgeplane_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/resource"
	"github.com/google/go-cmp/cmp"
)

// moduleTarget names the edge, and for route modules the route, a module
// operation acts on.
type moduleTarget struct{ edgeID, routeID string }

// moduleFixture holds what the round-trip cases refer to.
type moduleFixture struct {
	pol1, pol2, backend string
}

// moduleOps drives one of the ten modules through the Service.
type moduleOps struct {
	name    string // edges.Module* name
	event   string // the module's event name
	target  func(e *env, t *testing.T, p edgeplane.Principal) moduleTarget
	replace func(e *env, p edgeplane.Principal, tg moduleTarget, params any) (any, error)
	get     func(e *env, p edgeplane.Principal, tg moduleTarget) (any, error)
	del     func(e *env, p edgeplane.Principal, tg moduleTarget) error
	// parent returns the module as the edge's or route's GET shows it
	// (nil interface when not set).
	parent func(e *env, p edgeplane.Principal, tg moduleTarget) (any, error)
	// cases are round trips: params -> the module stored and returned.
	cases func(f moduleFixture) []moduleCase
	// valid is one valid params value.
	valid func(f moduleFixture) any
	// bad are invalid params, each with the violation it must cause (the
	// edges package tests every rule; these check the Service refuses
	// before writing).
	bad func(f moduleFixture) []moduleBad
}

type moduleBad struct {
	params        any
	field, reason string
}

type moduleCase struct {
	name   string
	params any
	want   any
	json   string // the response as JSON, when the case checks the wire shape
}

func routeTarget(e *env, t *testing.T, p edgeplane.Principal) moduleTarget {
	edge := e.httpsEdge(t, p)
	return moduleTarget{edge.ID, e.route(t, p, edge.ID, "path_prefix", "/").ID}
}

func tlsTarget(e *env, t *testing.T, p edgeplane.Principal) moduleTarget {
	return moduleTarget{edgeID: e.tlsEdge(t, p).ID}
}

func tcpTarget(e *env, t *testing.T, p edgeplane.Principal) moduleTarget {
	return moduleTarget{edgeID: e.tcpEdge(t, p).ID}
}

// nilIfNone turns a typed nil module into a nil interface.
func nilIfNone[M any](m *M) any {
	if m == nil {
		return nil
	}
	return m
}

// wrap adapts typed module operations to moduleOps' untyped ones.
func wrapReplace[P, M any](f func(e *env, p edgeplane.Principal, tg moduleTarget, params P) (*M, error)) func(*env, edgeplane.Principal, moduleTarget, any) (any, error) {
	return func(e *env, p edgeplane.Principal, tg moduleTarget, params any) (any, error) {
		m, err := f(e, p, tg, params.(P))
		if err != nil {
			if m != nil {
				panic("a failed replace returned a module")
			}
			return nil, err
		}
		return m, nil
	}
}

func wrapGet[M any](f func(e *env, p edgeplane.Principal, tg moduleTarget) (*M, error)) func(*env, edgeplane.Principal, moduleTarget) (any, error) {
	return func(e *env, p edgeplane.Principal, tg moduleTarget) (any, error) {
		m, err := f(e, p, tg)
		if err != nil {
			return nil, err
		}
		return m, nil
	}
}

func routeParent[M any](field func(*edges.HTTPSRoute) *M) func(*env, edgeplane.Principal, moduleTarget) (any, error) {
	return func(e *env, p edgeplane.Principal, tg moduleTarget) (any, error) {
		r, err := e.svc.GetHTTPSEdgeRoute(e.ctx, p, tg.edgeID, tg.routeID)
		if err != nil {
			return nil, err
		}
		return nilIfNone(field(r)), nil
	}
}

func tlsParent[M any](field func(*edges.TLSEdge) *M) func(*env, edgeplane.Principal, moduleTarget) (any, error) {
	return func(e *env, p edgeplane.Principal, tg moduleTarget) (any, error) {
		v, err := e.svc.GetTLSEdge(e.ctx, p, tg.edgeID)
		if err != nil {
			return nil, err
		}
		return nilIfNone(field(v)), nil
	}
}

func tcpParent[M any](field func(*edges.TCPEdge) *M) func(*env, edgeplane.Principal, moduleTarget) (any, error) {
	return func(e *env, p edgeplane.Principal, tg moduleTarget) (any, error) {
		v, err := e.svc.GetTCPEdge(e.ctx, p, tg.edgeID)
		if err != nil {
			return nil, err
		}
		return nilIfNone(field(v)), nil
	}
}

func polRefs(ids ...string) []resource.Ref {
	out := []resource.Ref{}
	for _, id := range ids {
		out = append(out, resource.Ref{ID: id, URI: testBase + "ip_policies/" + id})
	}
	return out
}

func backendRef(id string) resource.Ref {
	return resource.Ref{ID: id, URI: testBase + "backends/tunnel_group/" + id}
}

const denyAll = `{"inbound":[{"name":"no","actions":[{"type":"deny"}]}]}`

// rateLimitDoc is a compact HTTP traffic policy whose inbound rule limits
// each client address to capacity requests a minute, and whose outbound
// rule marks responses.
func rateLimitDoc(capacity int) string {
	return `{"on_http_request":[{"name":"limit","expressions":["req.method != 'OPTIONS'"],"actions":[{"type":"rate-limit","config":` +
		`{"name":"per client","algorithm":"sliding_window","capacity":` + strconv.Itoa(capacity) + `,"rate":"60s","bucket_key":["conn.client_ip"]}}]}],` +
		`"on_http_response":[{"actions":[{"type":"add-headers","config":{"headers":{"x-limited":"${actions.service.rate_limit.limited}"}}}]}]}`
}

func allModules() []moduleOps {
	ipRestrictionCases := func(f moduleFixture) []moduleCase {
		return []moduleCase{
			{"one policy, enabled by default", edges.IPRestrictionParams{IPPolicyIDs: []string{f.pol1}},
				&edges.IPRestriction{Enabled: true, IPPolicies: polRefs(f.pol1)},
				`{"enabled":true,"ip_policies":[{"id":"` + f.pol1 + `","uri":"` + testBase + `ip_policies/` + f.pol1 + `"}]}`},
			{"two policies in order, disabled", edges.IPRestrictionParams{Enabled: ptr(false), IPPolicyIDs: []string{f.pol2, f.pol1}},
				&edges.IPRestriction{Enabled: false, IPPolicies: polRefs(f.pol2, f.pol1)}, ""},
		}
	}
	backendCases := func(f moduleFixture) []moduleCase {
		return []moduleCase{
			{"enabled by default", edges.BackendParams{BackendID: f.backend},
				&edges.Backend{Enabled: true, Backend: backendRef(f.backend)},
				`{"enabled":true,"backend":{"id":"` + f.backend + `","uri":"` + testBase + `backends/tunnel_group/` + f.backend + `"}}`},
			{"disabled", edges.BackendParams{Enabled: ptr(false), BackendID: f.backend},
				&edges.Backend{Enabled: false, Backend: backendRef(f.backend)}, ""},
		}
	}
	return []moduleOps{
		{
			name: "oidc", event: "https_edge_route_oidc_module", target: routeTarget,
			replace: wrapReplace(func(e *env, p edgeplane.Principal, tg moduleTarget, params edges.OIDCParams) (*edges.OIDC, error) {
				return e.svc.ReplaceHTTPSRouteOIDC(e.ctx, p, tg.edgeID, tg.routeID, params)
			}),
			get: wrapGet(func(e *env, p edgeplane.Principal, tg moduleTarget) (*edges.OIDC, error) {
				return e.svc.GetHTTPSRouteOIDC(e.ctx, p, tg.edgeID, tg.routeID)
			}),
			del: func(e *env, p edgeplane.Principal, tg moduleTarget) error {
				return e.svc.DeleteHTTPSRouteOIDC(e.ctx, p, tg.edgeID, tg.routeID)
			},
			parent: routeParent(func(r *edges.HTTPSRoute) *edges.OIDC { return r.OIDC }),
			valid: func(moduleFixture) any {
				return edges.OIDCParams{Issuer: "https://idp.example", ClientID: "c", ClientSecret: "s"}
			},
			bad: func(moduleFixture) []moduleBad {
				return []moduleBad{
					{edges.OIDCParams{ClientID: "c", ClientSecret: "s"}, "issuer", "is required"},
					{edges.OIDCParams{Issuer: "http://idp.example", ClientID: "c", ClientSecret: "s"}, "issuer", "https"},
					{edges.OIDCParams{Issuer: "https://idp.example", ClientSecret: "s"}, "client_id", "is required"},
					{edges.OIDCParams{Issuer: "https://idp.example", ClientID: "c"}, "client_secret", "is required"},
					{edges.OIDCParams{Issuer: "https://idp.example", ClientID: "c", ClientSecret: "s", Scopes: []string{"a b"}}, "scopes[0]", "OAuth scope"},
					{edges.OIDCParams{Issuer: "https://idp.example", ClientID: "c", ClientSecret: "s", CookiePrefix: "a;"}, "cookie_prefix", "cookie name"},
				}
			},
			cases: func(moduleFixture) []moduleCase {
				return []moduleCase{
					{"fields not supplied are empty, zero and false", edges.OIDCParams{Issuer: "https://idp.example", ClientID: "c", ClientSecret: "s"},
						&edges.OIDC{Enabled: true, Issuer: "https://idp.example", ClientID: "c", ClientSecret: "s", Scopes: []string{}},
						`{"enabled":true,"options_passthrough":false,"cookie_prefix":"","inactivity_timeout":0,"maximum_duration":0,"issuer":"https://idp.example","client_id":"c","client_secret":"s","scopes":[]}`},
					{"every field", edges.OIDCParams{Enabled: ptr(false), OptionsPassthrough: true, CookiePrefix: "app.", InactivityTimeout: 600,
						MaximumDuration: 86400, Issuer: "https://idp.example/realms/r", ClientID: "c", ClientSecret: "s", Scopes: []string{"openid", "email"}},
						&edges.OIDC{Enabled: false, OptionsPassthrough: true, CookiePrefix: "app.", InactivityTimeout: 600, MaximumDuration: 86400,
							Issuer: "https://idp.example/realms/r", ClientID: "c", ClientSecret: "s", Scopes: []string{"openid", "email"}}, ""},
				}
			},
		},
		{
			name: "backend", event: "https_edge_route_backend_module", target: routeTarget,
			replace: wrapReplace(func(e *env, p edgeplane.Principal, tg moduleTarget, params edges.BackendParams) (*edges.Backend, error) {
				return e.svc.ReplaceHTTPSRouteBackend(e.ctx, p, tg.edgeID, tg.routeID, params)
			}),
			get: wrapGet(func(e *env, p edgeplane.Principal, tg moduleTarget) (*edges.Backend, error) {
				return e.svc.GetHTTPSRouteBackend(e.ctx, p, tg.edgeID, tg.routeID)
			}),
			del: func(e *env, p edgeplane.Principal, tg moduleTarget) error {
				return e.svc.DeleteHTTPSRouteBackend(e.ctx, p, tg.edgeID, tg.routeID)
			},
			parent: routeParent(func(r *edges.HTTPSRoute) *edges.Backend { return r.Backend }),
			valid:  func(f moduleFixture) any { return edges.BackendParams{BackendID: f.backend} },
			bad: func(f moduleFixture) []moduleBad {
				return []moduleBad{
					{edges.BackendParams{}, "backend_id", "is required"},
					{edges.BackendParams{BackendID: f.pol1}, "backend_id", "tunnel group backend ID"},
					{edges.BackendParams{BackendID: "bkdtg_000000000000000000000000000"}, "backend_id", "not found in this account"},
				}
			},
			cases: backendCases,
		},
		{
			name: "response_headers", event: "https_edge_route_response_headers_module", target: routeTarget,
			replace: wrapReplace(func(e *env, p edgeplane.Principal, tg moduleTarget, params edges.ResponseHeadersParams) (*edges.ResponseHeaders, error) {
				return e.svc.ReplaceHTTPSRouteResponseHeaders(e.ctx, p, tg.edgeID, tg.routeID, params)
			}),
			get: wrapGet(func(e *env, p edgeplane.Principal, tg moduleTarget) (*edges.ResponseHeaders, error) {
				return e.svc.GetHTTPSRouteResponseHeaders(e.ctx, p, tg.edgeID, tg.routeID)
			}),
			del: func(e *env, p edgeplane.Principal, tg moduleTarget) error {
				return e.svc.DeleteHTTPSRouteResponseHeaders(e.ctx, p, tg.edgeID, tg.routeID)
			},
			parent: routeParent(func(r *edges.HTTPSRoute) *edges.ResponseHeaders { return r.ResponseHeaders }),
			valid:  func(moduleFixture) any { return edges.ResponseHeadersParams{Remove: []string{"Server"}} },
			bad: func(moduleFixture) []moduleBad {
				return []moduleBad{
					{edges.ResponseHeadersParams{Add: map[string]string{"X Bad": "v"}}, `add["X Bad"]`, "HTTP token"},
					{edges.ResponseHeadersParams{Add: map[string]string{"X-A": "a\r\nb"}}, `add["X-A"]`, "CR, LF or NUL"},
					{edges.ResponseHeadersParams{Add: map[string]string{"X-A": "1", "x-a": "2"}}, `add["x-a"]`, "duplicates"},
					{edges.ResponseHeadersParams{Remove: []string{"ok", "not ok"}}, "remove[1]", "HTTP token"},
				}
			},
			cases: func(moduleFixture) []moduleCase {
				return []moduleCase{
					{"nothing: add {} and remove []", edges.ResponseHeadersParams{},
						&edges.ResponseHeaders{Enabled: true, Add: map[string]string{}, Remove: []string{}},
						`{"enabled":true,"add":{},"remove":[]}`},
					{"names lower-cased", edges.ResponseHeadersParams{Add: map[string]string{"X-Frame-Options": "DENY"}, Remove: []string{"X-Powered-By"}},
						&edges.ResponseHeaders{Enabled: true, Add: map[string]string{"x-frame-options": "DENY"}, Remove: []string{"x-powered-by"}},
						`{"enabled":true,"add":{"x-frame-options":"DENY"},"remove":["x-powered-by"]}`},
				}
			},
		},
		{
			name: "compression", event: "https_edge_route_compression_module", target: routeTarget,
			replace: wrapReplace(func(e *env, p edgeplane.Principal, tg moduleTarget, params edges.CompressionParams) (*edges.Compression, error) {
				return e.svc.ReplaceHTTPSRouteCompression(e.ctx, p, tg.edgeID, tg.routeID, params)
			}),
			get: wrapGet(func(e *env, p edgeplane.Principal, tg moduleTarget) (*edges.Compression, error) {
				return e.svc.GetHTTPSRouteCompression(e.ctx, p, tg.edgeID, tg.routeID)
			}),
			del: func(e *env, p edgeplane.Principal, tg moduleTarget) error {
				return e.svc.DeleteHTTPSRouteCompression(e.ctx, p, tg.edgeID, tg.routeID)
			},
			parent: routeParent(func(r *edges.HTTPSRoute) *edges.Compression { return r.Compression }),
			valid:  func(moduleFixture) any { return edges.CompressionParams{} },
			bad:    func(moduleFixture) []moduleBad { return nil }, // every CompressionParams is valid
			cases: func(moduleFixture) []moduleCase {
				return []moduleCase{
					{"enabled by default", edges.CompressionParams{}, &edges.Compression{Enabled: true}, `{"enabled":true}`},
					{"disabled", edges.CompressionParams{Enabled: ptr(false)}, &edges.Compression{Enabled: false}, `{"enabled":false}`},
				}
			},
		},
		{
			name: "traffic_policy", event: "https_edge_route_traffic_policy_module", target: routeTarget,
			replace: wrapReplace(func(e *env, p edgeplane.Principal, tg moduleTarget, params edges.TrafficPolicyParams) (*edges.TrafficPolicy, error) {
				return e.svc.ReplaceHTTPSRouteTrafficPolicy(e.ctx, p, tg.edgeID, tg.routeID, params)
			}),
			get: wrapGet(func(e *env, p edgeplane.Principal, tg moduleTarget) (*edges.TrafficPolicy, error) {
				return e.svc.GetHTTPSRouteTrafficPolicy(e.ctx, p, tg.edgeID, tg.routeID)
			}),
			del: func(e *env, p edgeplane.Principal, tg moduleTarget) error {
				return e.svc.DeleteHTTPSRouteTrafficPolicy(e.ctx, p, tg.edgeID, tg.routeID)
			},
			parent: routeParent(func(r *edges.HTTPSRoute) *edges.TrafficPolicy { return r.TrafficPolicy }),
			valid:  func(moduleFixture) any { return edges.TrafficPolicyParams{Value: denyAll} },
			bad: func(f moduleFixture) []moduleBad {
				return []moduleBad{
					{edges.TrafficPolicyParams{}, "value", "is required"},
					{edges.TrafficPolicyParams{Value: "[]"}, "value", "JSON object"},
					{edges.TrafficPolicyParams{Value: `{"inbound":[{"expressions":["nope("],"actions":[{"type":"deny"}]}]}`}, "value.inbound[0].expressions[0]", ""},
					{edges.TrafficPolicyParams{Value: `{"on_tcp_connect":[{"actions":[{"type":"deny"}]}]}`}, "value.on_tcp_connect", "an HTTP policy uses inbound or on_http_request"},
					{edges.TrafficPolicyParams{Value: `{"inbound":[{"actions":[{"type":"restrict-ips","config":{"ip_policies":["` + f.backend + `"]}}]}]}`}, "value.inbound[0].actions[0].config.ip_policies", "is not an IP policy ID"},
				}
			},
			cases: func(f moduleFixture) []moduleCase {
				return []moduleCase{
					{"re-serialized compactly, enabled by default", edges.TrafficPolicyParams{Value: "{\n  \"inbound\": [\n    {\"name\": \"no\", \"actions\": [ {\"type\": \"deny\"} ]}\n  ]\n}\n"},
						&edges.TrafficPolicy{Enabled: true, Value: denyAll},
						`{"enabled":true,"value":"{\"inbound\":[{\"name\":\"no\",\"actions\":[{\"type\":\"deny\"}]}]}"}`},
					{"HTTP phases, variables and a rate limit, disabled", edges.TrafficPolicyParams{Enabled: ptr(false), Value: rateLimitDoc(2)},
						&edges.TrafficPolicy{Enabled: false, Value: rateLimitDoc(2)},
						`{"enabled":false,"value":` + strconv.Quote(rateLimitDoc(2)) + `}`},
					{"keys reordered, config keys kept", edges.TrafficPolicyParams{Value: `{"on_http_response": [{"actions": [{"config": {"headers": {"z": "1", "a": "2"}}, "type": "add-headers"}], "name": "n"}], "on_http_request": []}`},
						&edges.TrafficPolicy{Enabled: true, Value: `{"on_http_request":[],"on_http_response":[{"name":"n","actions":[{"type":"add-headers","config":{"headers":{"z":"1","a":"2"}}}]}]}`}, ""},
					{"restrict-ips naming an IP policy", edges.TrafficPolicyParams{Value: `{"inbound":[{"actions":[{"type":"restrict-ips","config":{"ip_policies":["` + f.pol1 + `"]}}]}]}`},
						&edges.TrafficPolicy{Enabled: true, Value: `{"inbound":[{"actions":[{"type":"restrict-ips","config":{"ip_policies":["` + f.pol1 + `"]}}]}]}`}, ""},
					{"no rules", edges.TrafficPolicyParams{Value: `{}`}, &edges.TrafficPolicy{Enabled: true, Value: `{}`}, `{"enabled":true,"value":"{}"}`},
				}
			},
		},
		{
			name: "ip_restriction", event: "tls_edge_ip_restriction_module", target: tlsTarget,
			replace: wrapReplace(func(e *env, p edgeplane.Principal, tg moduleTarget, params edges.IPRestrictionParams) (*edges.IPRestriction, error) {
				return e.svc.ReplaceTLSEdgeIPRestriction(e.ctx, p, tg.edgeID, params)
			}),
			get: wrapGet(func(e *env, p edgeplane.Principal, tg moduleTarget) (*edges.IPRestriction, error) {
				return e.svc.GetTLSEdgeIPRestriction(e.ctx, p, tg.edgeID)
			}),
			del: func(e *env, p edgeplane.Principal, tg moduleTarget) error {
				return e.svc.DeleteTLSEdgeIPRestriction(e.ctx, p, tg.edgeID)
			},
			parent: tlsParent(func(v *edges.TLSEdge) *edges.IPRestriction { return v.IPRestriction }),
			valid:  func(f moduleFixture) any { return edges.IPRestrictionParams{IPPolicyIDs: []string{f.pol1}} },
			bad: func(f moduleFixture) []moduleBad {
				return []moduleBad{
					{edges.IPRestrictionParams{}, "ip_policy_ids", "at least one"},
					{edges.IPRestrictionParams{IPPolicyIDs: []string{f.pol1, f.backend}}, "ip_policy_ids[1]", "IP policy ID"},
					{edges.IPRestrictionParams{IPPolicyIDs: []string{f.pol1, "ipp_000000000000000000000000000"}}, "ip_policy_ids[1]", "not found in this account"},
				}
			},
			cases: ipRestrictionCases,
		},
		{
			name: "traffic_policy", event: "tls_edge_traffic_policy_module", target: tlsTarget,
			replace: wrapReplace(func(e *env, p edgeplane.Principal, tg moduleTarget, params edges.TrafficPolicyParams) (*edges.TrafficPolicy, error) {
				return e.svc.ReplaceTLSEdgeTrafficPolicy(e.ctx, p, tg.edgeID, params)
			}),
			get: wrapGet(func(e *env, p edgeplane.Principal, tg moduleTarget) (*edges.TrafficPolicy, error) {
				return e.svc.GetTLSEdgeTrafficPolicy(e.ctx, p, tg.edgeID)
			}),
			del: func(e *env, p edgeplane.Principal, tg moduleTarget) error {
				return e.svc.DeleteTLSEdgeTrafficPolicy(e.ctx, p, tg.edgeID)
			},
			parent: tlsParent(func(v *edges.TLSEdge) *edges.TrafficPolicy { return v.TrafficPolicy }),
			valid:  func(moduleFixture) any { return edges.TrafficPolicyParams{Value: denyAll} },
			bad: func(moduleFixture) []moduleBad {
				return []moduleBad{
					{edges.TrafficPolicyParams{}, "value", "is required"},
					{edges.TrafficPolicyParams{Value: "[]"}, "value", "JSON object"},
					{edges.TrafficPolicyParams{Value: `{"inbound":[{"expressions":["nope("],"actions":[{"type":"deny"}]}]}`}, "value.inbound[0].expressions[0]", ""},
				}
			},
			cases: func(f moduleFixture) []moduleCase {
				return []moduleCase{
					{"re-serialized compactly", edges.TrafficPolicyParams{Value: "{\n  \"inbound\": [\n    {\"name\": \"no\", \"actions\": [ {\"type\": \"deny\"} ]}\n  ]\n}\n"},
						&edges.TrafficPolicy{Enabled: true, Value: denyAll},
						`{"enabled":true,"value":"{\"inbound\":[{\"name\":\"no\",\"actions\":[{\"type\":\"deny\"}]}]}"}`},
					{"expressions, configs and a disabled module", edges.TrafficPolicyParams{Enabled: ptr(false), Value: `{"inbound": [{"expressions": ["conn.client_ip == '10.0.0.1'"],
						"actions": [{"type": "log", "config": {"metadata": {"why": "watched"}}}, {"type": "restrict-ips", "config": {"ip_policies": ["` + f.pol1 + `"]}}]}]}`},
						&edges.TrafficPolicy{Enabled: false, Value: `{"inbound":[{"expressions":["conn.client_ip == '10.0.0.1'"],"actions":[{"type":"log","config":{"metadata":{"why":"watched"}}},{"type":"restrict-ips","config":{"ip_policies":["` + f.pol1 + `"]}}]}]}`}, ""},
					{"no rules", edges.TrafficPolicyParams{Value: `{}`}, &edges.TrafficPolicy{Enabled: true, Value: `{}`}, ""},
					{"keys reordered, config keys kept", edges.TrafficPolicyParams{Value: `{"on_tcp_connect": [{"actions": [{"config": {"metadata": {"z": "1", "a": "2"}}, "type": "log"}], "name": "n"}]}`},
						&edges.TrafficPolicy{Enabled: true, Value: `{"on_tcp_connect":[{"name":"n","actions":[{"type":"log","config":{"metadata":{"z":"1","a":"2"}}}]}]}`}, ""},
				}
			},
		},
		{
			name: "tls_termination", event: "tls_edge_tls_termination_module", target: tlsTarget,
			replace: wrapReplace(func(e *env, p edgeplane.Principal, tg moduleTarget, params edges.TLSTerminationParams) (*edges.TLSTermination, error) {
				return e.svc.ReplaceTLSEdgeTLSTermination(e.ctx, p, tg.edgeID, params)
			}),
			get: wrapGet(func(e *env, p edgeplane.Principal, tg moduleTarget) (*edges.TLSTermination, error) {
				return e.svc.GetTLSEdgeTLSTermination(e.ctx, p, tg.edgeID)
			}),
			del: func(e *env, p edgeplane.Principal, tg moduleTarget) error {
				return e.svc.DeleteTLSEdgeTLSTermination(e.ctx, p, tg.edgeID)
			},
			parent: tlsParent(func(v *edges.TLSEdge) *edges.TLSTermination { return v.TLSTermination }),
			valid:  func(moduleFixture) any { return edges.TLSTerminationParams{} },
			bad: func(moduleFixture) []moduleBad {
				return []moduleBad{
					{edges.TLSTerminationParams{TerminateAt: "agent"}, "terminate_at", "edge, upstream"},
					{edges.TLSTerminationParams{MinVersion: ptr("1.4")}, "min_version", "1.0, 1.1, 1.2, 1.3"},
					{edges.TLSTerminationParams{TerminateAt: "upstream", MinVersion: ptr("1.2")}, "min_version", "must be null"},
				}
			},
			cases: func(moduleFixture) []moduleCase {
				return []moduleCase{
					{"defaults: edge, null min_version", edges.TLSTerminationParams{},
						&edges.TLSTermination{Enabled: true, TerminateAt: "edge"}, `{"enabled":true,"terminate_at":"edge","min_version":null}`},
					{"edge with 1.3", edges.TLSTerminationParams{TerminateAt: "edge", MinVersion: ptr("1.3")},
						&edges.TLSTermination{Enabled: true, TerminateAt: "edge", MinVersion: ptr("1.3")}, `{"enabled":true,"terminate_at":"edge","min_version":"1.3"}`},
					{"upstream", edges.TLSTerminationParams{TerminateAt: "upstream"},
						&edges.TLSTermination{Enabled: true, TerminateAt: "upstream"}, `{"enabled":true,"terminate_at":"upstream","min_version":null}`},
				}
			},
		},
		{
			name: "ip_restriction", event: "tcp_edge_ip_restriction_module", target: tcpTarget,
			replace: wrapReplace(func(e *env, p edgeplane.Principal, tg moduleTarget, params edges.IPRestrictionParams) (*edges.IPRestriction, error) {
				return e.svc.ReplaceTCPEdgeIPRestriction(e.ctx, p, tg.edgeID, params)
			}),
			get: wrapGet(func(e *env, p edgeplane.Principal, tg moduleTarget) (*edges.IPRestriction, error) {
				return e.svc.GetTCPEdgeIPRestriction(e.ctx, p, tg.edgeID)
			}),
			del: func(e *env, p edgeplane.Principal, tg moduleTarget) error {
				return e.svc.DeleteTCPEdgeIPRestriction(e.ctx, p, tg.edgeID)
			},
			parent: tcpParent(func(v *edges.TCPEdge) *edges.IPRestriction { return v.IPRestriction }),
			valid:  func(f moduleFixture) any { return edges.IPRestrictionParams{IPPolicyIDs: []string{f.pol1}} },
			bad: func(f moduleFixture) []moduleBad {
				return []moduleBad{
					{edges.IPRestrictionParams{}, "ip_policy_ids", "at least one"},
					{edges.IPRestrictionParams{IPPolicyIDs: []string{f.pol1, f.backend}}, "ip_policy_ids[1]", "IP policy ID"},
					{edges.IPRestrictionParams{IPPolicyIDs: []string{f.pol1, "ipp_000000000000000000000000000"}}, "ip_policy_ids[1]", "not found in this account"},
				}
			},
			cases: ipRestrictionCases,
		},
		{
			name: "backend", event: "tcp_edge_backend_module", target: tcpTarget,
			replace: wrapReplace(func(e *env, p edgeplane.Principal, tg moduleTarget, params edges.BackendParams) (*edges.Backend, error) {
				return e.svc.ReplaceTCPEdgeBackend(e.ctx, p, tg.edgeID, params)
			}),
			get: wrapGet(func(e *env, p edgeplane.Principal, tg moduleTarget) (*edges.Backend, error) {
				return e.svc.GetTCPEdgeBackend(e.ctx, p, tg.edgeID)
			}),
			del: func(e *env, p edgeplane.Principal, tg moduleTarget) error {
				return e.svc.DeleteTCPEdgeBackend(e.ctx, p, tg.edgeID)
			},
			parent: tcpParent(func(v *edges.TCPEdge) *edges.Backend { return v.Backend }),
			valid:  func(f moduleFixture) any { return edges.BackendParams{BackendID: f.backend} },
			bad: func(f moduleFixture) []moduleBad {
				return []moduleBad{
					{edges.BackendParams{}, "backend_id", "is required"},
					{edges.BackendParams{BackendID: f.pol1}, "backend_id", "tunnel group backend ID"},
					{edges.BackendParams{BackendID: "bkdtg_000000000000000000000000000"}, "backend_id", "not found in this account"},
				}
			},
			cases: backendCases,
		},
	}
}

// otherKindEdge returns a new edge of the user whose kind is not that of
// edgeID.
func otherKindEdge(t *testing.T, e *env, edgeID string) string {
	if strings.HasPrefix(edgeID, "edgtcp_") {
		return e.tlsEdge(t, e.user).ID
	}
	return e.tcpEdge(t, e.user).ID
}

func newModuleFixture(t *testing.T, e *env, p edgeplane.Principal) moduleFixture {
	return moduleFixture{
		pol1:    e.policy(t, p, [2]string{"203.0.113.0/24", "allow"}).ID,
		pol2:    e.policy(t, p).ID,
		backend: e.backend(t, p, map[string]string{"app": "web"}).ID,
	}
}

func TestModuleRoundTrip(t *testing.T) {
	for _, m := range allModules() {
		t.Run(m.event, func(t *testing.T) {
			e := newEnv(t)
			f := newModuleFixture(t, e, e.user)
			tg := m.target(e, t, e.user)

			_, err := m.get(e, e.user, tg)
			wantNotFoundNaming(t, err, m.name)
			wantNotFoundNaming(t, m.del(e, e.user, tg), m.name)
			if got, err := m.parent(e, e.user, tg); err != nil || got != nil {
				t.Fatalf("a new edge or route shows the module: %v, %v", got, err)
			}

			for _, tc := range m.cases(f) {
				t.Run(tc.name, func(t *testing.T) {
					got, err := m.replace(e, e.user, tg, tc.params)
					if err != nil {
						t.Fatal(err)
					}
					if diff := cmp.Diff(tc.want, got); diff != "" {
						t.Errorf("replace (-want +got):\n%s", diff)
					}
					if tc.json != "" {
						b, err := json.Marshal(got)
						if err != nil || string(b) != tc.json {
							t.Errorf("response JSON\n got %s\nwant %s", b, tc.json)
						}
					}
					got, err = m.get(e, e.bot, tg)
					if diff := cmp.Diff(tc.want, got); err != nil || diff != "" {
						t.Errorf("get (%v) (-want +got):\n%s", err, diff)
					}
					got, err = m.parent(e, e.admin, tg)
					if diff := cmp.Diff(tc.want, got); err != nil || diff != "" {
						t.Errorf("the edge or route shows (%v) (-want +got):\n%s", err, diff)
					}
				})
			}

			// Invalid input is refused and changes nothing.
			before, err := m.get(e, e.user, tg)
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range m.bad(f) {
				_, err := m.replace(e, e.user, tg, b.params)
				wantViolation(t, err, b.field, b.reason)
				if after, err := m.get(e, e.user, tg); err != nil || !cmp.Equal(before, after) {
					t.Errorf("refused params %+v changed the module to %+v (%v)", b.params, after, err)
				}
			}

			// Another account sees no module, and cannot change it.
			_, err = m.get(e, e.other, tg)
			wantCode(t, err, apierr.NotFound)
			_, err = m.replace(e, e.other, tg, m.valid(f))
			wantCode(t, err, apierr.NotFound)
			wantCode(t, m.del(e, e.other, tg), apierr.NotFound)

			if err := m.del(e, e.user, tg); err != nil {
				t.Fatal(err)
			}
			_, err = m.get(e, e.user, tg)
			wantNotFoundNaming(t, err, m.name)
			wantNotFoundNaming(t, m.del(e, e.user, tg), m.name)
			if got, err := m.parent(e, e.user, tg); err != nil || got != nil {
				t.Errorf("after delete the edge or route shows %v, %v", got, err)
			}
		})
	}
}

// TestModuleTargetsNotFound: a module operation on an edge or route that is
// missing, of another account, or a route of another edge, is not found and
// names the ID.
func TestModuleTargetsNotFound(t *testing.T) {
	for _, m := range allModules() {
		t.Run(m.event, func(t *testing.T) {
			e := newEnv(t)
			f := newModuleFixture(t, e, e.user)
			mine := m.target(e, t, e.user)
			foreign := m.target(e, t, e.other)
			if _, err := m.replace(e, e.user, mine, m.valid(f)); err != nil {
				t.Fatal(err)
			}
			type bad struct {
				name string
				tg   moduleTarget
				id   string // the ID the error must name
			}
			cases := []bad{
				{"another account's edge", foreign, foreign.edgeID},
				{"malformed edge ID", moduleTarget{"edgxxx_1", mine.routeID}, "edgxxx_1"},
				{"an edge ID of another kind", moduleTarget{otherKindEdge(t, e, mine.edgeID), mine.routeID}, ""},
			}
			if mine.routeID != "" {
				other := routeTarget(e, t, e.user)
				cases = append(cases,
					bad{"a route of another edge", moduleTarget{other.edgeID, mine.routeID}, mine.routeID},
					bad{"a missing route", moduleTarget{mine.edgeID, "edghtsrt_missing"}, "edghtsrt_missing"},
					bad{"the edge ID as the route", moduleTarget{mine.edgeID, mine.edgeID}, mine.edgeID},
					bad{"another account's route on my edge", moduleTarget{mine.edgeID, foreign.routeID}, foreign.routeID},
				)
			}
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					if c.id == "" {
						c.id = c.tg.edgeID
					}
					_, err := m.replace(e, e.user, c.tg, m.valid(f))
					wantNotFoundNaming(t, err, c.id)
					_, err = m.get(e, e.user, c.tg)
					wantNotFoundNaming(t, err, c.id)
					wantNotFoundNaming(t, m.del(e, e.user, c.tg), c.id)
				})
			}
			// The failed calls changed nothing.
			if got, err := m.get(e, e.user, mine); err != nil || got == nil {
				t.Errorf("module after failed calls: %v, %v", got, err)
			}
			_, err := m.get(e, e.other, foreign)
			wantCode(t, err, apierr.NotFound)
		})
	}
}

func TestBackendModuleReferences(t *testing.T) {
	e := newEnv(t)
	f := newModuleFixture(t, e, e.user)
	foreign := e.backend(t, e.other, map[string]string{"app": "x"})
	route := routeTarget(e, t, e.user)
	tcp := e.tcpEdge(t, e.user)
	replaceBoth := func(params edges.BackendParams) (error, error) {
		_, err1 := e.svc.ReplaceHTTPSRouteBackend(e.ctx, e.user, route.edgeID, route.routeID, params)
		_, err2 := e.svc.ReplaceTCPEdgeBackend(e.ctx, e.user, tcp.ID, params)
		return err1, err2
	}
	missing := strings.TrimSuffix(f.backend, f.backend[len(f.backend)-4:]) + "zzzz"
	for _, tc := range []struct {
		name, id, reason string
	}{
		{"another account's backend", foreign.ID, "tunnel group backend " + foreign.ID + " not found in this account"},
		{"a missing backend", missing, "not found in this account"},
		{"an IP policy ID", f.pol1, "tunnel group backend ID"},
		{"empty", "", "is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err1, err2 := replaceBoth(edges.BackendParams{BackendID: tc.id})
			wantViolation(t, err1, "backend_id", tc.reason)
			wantViolation(t, err2, "backend_id", tc.reason)
		})
	}
	// Bad input changed nothing.
	if r, _ := e.svc.GetHTTPSEdgeRoute(e.ctx, e.user, route.edgeID, route.routeID); r.Backend != nil {
		t.Errorf("a refused replace stored %+v", r.Backend)
	}

	if err1, err2 := replaceBoth(edges.BackendParams{BackendID: f.backend}); err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	err := e.svc.DeleteTunnelGroupBackend(e.ctx, e.user, f.backend)
	wantCode(t, err, apierr.Conflict)
	for _, want := range []string{"the backend module of HTTPS edge route " + route.routeID, "the backend module of TCP edge " + tcp.ID} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("conflict %q does not say %q", err, want)
		}
	}
	// Replacing with a disabled module still holds the reference.
	if _, err := e.svc.ReplaceTCPEdgeBackend(e.ctx, e.user, tcp.ID, edges.BackendParams{BackendID: f.backend, Enabled: ptr(false)}); err != nil {
		t.Fatal(err)
	}
	// Deleting the TCP edge and the HTTPS edge (with its route) releases it.
	if err := e.svc.DeleteTCPEdge(e.ctx, e.user, tcp.ID); err != nil {
		t.Fatal(err)
	}
	wantCode(t, e.svc.DeleteTunnelGroupBackend(e.ctx, e.user, f.backend), apierr.Conflict)
	if err := e.svc.DeleteHTTPSEdge(e.ctx, e.user, route.edgeID); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.DeleteTunnelGroupBackend(e.ctx, e.user, f.backend); err != nil {
		t.Errorf("delete after the edges are gone: %v", err)
	}
}

func TestIPRestrictionModuleReferences(t *testing.T) {
	e := newEnv(t)
	f := newModuleFixture(t, e, e.user)
	foreign := e.policy(t, e.other)
	tls := e.tlsEdge(t, e.user)
	tcp := e.tcpEdge(t, e.user)
	both := func(params edges.IPRestrictionParams) (error, error) {
		_, err1 := e.svc.ReplaceTLSEdgeIPRestriction(e.ctx, e.user, tls.ID, params)
		_, err2 := e.svc.ReplaceTCPEdgeIPRestriction(e.ctx, e.user, tcp.ID, params)
		return err1, err2
	}
	for _, tc := range []struct {
		name          string
		ids           []string
		field, reason string
	}{
		{"another account's policy", []string{f.pol1, foreign.ID}, "ip_policy_ids[1]", "IP policy " + foreign.ID + " not found in this account"},
		{"none", nil, "ip_policy_ids", "at least one"},
		{"a backend ID", []string{f.backend}, "ip_policy_ids[0]", "IP policy ID"},
		{"duplicate", []string{f.pol1, f.pol1}, "ip_policy_ids[1]", "duplicates"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err1, err2 := both(edges.IPRestrictionParams{IPPolicyIDs: tc.ids})
			wantViolation(t, err1, tc.field, tc.reason)
			wantViolation(t, err2, tc.field, tc.reason)
		})
	}
	if err1, err2 := both(edges.IPRestrictionParams{IPPolicyIDs: []string{f.pol1, f.pol2}}); err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	err := e.svc.DeleteIPPolicy(e.ctx, e.user, f.pol2)
	wantCode(t, err, apierr.Conflict)
	for _, want := range []string{"IP policy " + f.pol2, "the ip_restriction module of TLS edge " + tls.ID, "the ip_restriction module of TCP edge " + tcp.ID} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("conflict %q does not say %q", err, want)
		}
	}
	// Narrowing the module releases the policy it no longer names.
	if err1, err2 := both(edges.IPRestrictionParams{IPPolicyIDs: []string{f.pol1}}); err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if err := e.svc.DeleteIPPolicy(e.ctx, e.user, f.pol2); err != nil {
		t.Errorf("delete of a released policy: %v", err)
	}
	if err := e.svc.DeleteTLSEdgeIPRestriction(e.ctx, e.user, tls.ID); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.DeleteTCPEdge(e.ctx, e.user, tcp.ID); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.DeleteIPPolicy(e.ctx, e.user, f.pol1); err != nil {
		t.Errorf("delete after the modules are gone: %v", err)
	}
}

func TestTrafficPolicyModule(t *testing.T) {
	e := newEnv(t)
	f := newModuleFixture(t, e, e.user)
	tls := e.tlsEdge(t, e.user)
	replace := func(doc string) (*edges.TrafficPolicy, error) {
		return e.svc.ReplaceTLSEdgeTrafficPolicy(e.ctx, e.user, tls.ID, edges.TrafficPolicyParams{Value: doc})
	}
	for _, tc := range []struct {
		name, doc, field, reason string
	}{
		{"empty", "", "value", "is required"},
		{"not JSON", "inbound: []", "value", "JSON object"},
		{"a JSON string", `"{}"`, "value", "JSON object"},
		{"trailing data", `{} {}`, "value", ""},
		{"unknown phase", `{"inbound":[],"sideways":[]}`, "value.sideways", "unknown phase"},
		{"outbound rules on a TLS edge", `{"outbound":[{"actions":[{"type":"log"}]}]}`, "value.outbound", "no outbound phase"},
		{"HTTP phase name", `{"on_http_request":[{"actions":[{"type":"deny"}]}]}`, "value.on_http_request", "HTTP policies"},
		{"rule not an object", `{"inbound":[1]}`, "value.inbound[0]", "object"},
		{"expression syntax", `{"inbound":[{"expressions":["conn.client_ip =="],"actions":[{"type":"deny"}]}]}`, "value.inbound[0].expressions[0]", ""},
		{"second expression not boolean", `{"inbound":[{"expressions":["true","conn.client_ip"],"actions":[{"type":"deny"}]}]}`, "value.inbound[0].expressions[1]", ""},
		{"HTTP variable on a connection", `{"inbound":[{"expressions":["req.method == 'GET'"],"actions":[{"type":"deny"}]}]}`, "value.inbound[0].expressions[0]", ""},
		{"unknown action", `{"inbound":[{"actions":[{"type":"explode"}]}]}`, "value.inbound[0].actions[0].type", ""},
		{"HTTP-only action", `{"inbound":[{"actions":[{"type":"add-headers","config":{"headers":{"x":"y"}}}]}]}`, "value.inbound[0].actions[0].type", "HTTP policies"},
		{"bad action config", `{"inbound":[{"actions":[{"type":"restrict-ips","config":{"allow":["10.0.0.0/33"]}}]}]}`, "value.inbound[0].actions[0].config.allow[0]", "CIDR"},
		{"unknown config field", `{"inbound":[{"actions":[{"type":"deny","config":{"nope":1}}]}]}`, "value.inbound[0].actions[0].config.nope", ""},
		{"missing IP policy", `{"inbound":[{"actions":[{"type":"restrict-ips","config":{"ip_policies":["ipp_000000000000000000000000000"]}}]}]}`, "value.inbound[0].actions[0].config.ip_policies", "IP policy ipp_000000000000000000000000000 not found in this account"},
		{"malformed IP policy", `{"inbound":[{"actions":[{"type":"restrict-ips","config":{"ip_policies":["` + f.backend + `"]}}]}]}`, "value.inbound[0].actions[0].config.ip_policies", "is not an IP policy ID"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := replace(tc.doc)
			wantViolation(t, err, tc.field, tc.reason)
		})
	}
	foreign := e.policy(t, e.other)
	_, err := replace(`{"inbound":[{"actions":[{"type":"restrict-ips","config":{"ip_policies":["` + foreign.ID + `"]}}]}]}`)
	wantViolation(t, err, "value.inbound[0].actions[0].config.ip_policies", "not found in this account")
	// Every violation at once, each located.
	_, err = replace(`{"inbound":[{"expressions":["1"],"actions":[{"type":"explode"}]},{"actions":[]}]}`)
	if vs := apierr.ViolationsOf(err); len(vs) < 3 {
		t.Errorf("want every violation, got %v", vs)
	}
	if v, _ := e.svc.GetTLSEdge(e.ctx, e.user, tls.ID); v.TrafficPolicy != nil {
		t.Errorf("refused documents stored %+v", v.TrafficPolicy)
	}

	// restrict-ips policies are held: their deletion is refused, naming the
	// module; the stored IDs are never shown.
	doc := `{"inbound":[{"actions":[{"type":"restrict-ips","config":{"ip_policies":["` + f.pol2 + `","` + f.pol1 + `","` + f.pol2 + `"]}}]}]}`
	m, err := replace(doc)
	if err != nil {
		t.Fatal(err)
	}
	if m.IPPolicyIDs != nil || m.Value != doc {
		t.Errorf("replace = %+v", m)
	}
	if got, _ := e.svc.GetTLSEdgeTrafficPolicy(e.ctx, e.user, tls.ID); got.IPPolicyIDs != nil {
		t.Errorf("get shows the stored IP policy IDs: %+v", got)
	}
	if got, _ := e.svc.GetTLSEdge(e.ctx, e.user, tls.ID); got.TrafficPolicy.IPPolicyIDs != nil {
		t.Errorf("the edge shows the stored IP policy IDs: %+v", got.TrafficPolicy)
	}
	if got, _ := e.svc.ListTLSEdges(e.ctx, e.user, edgeplane.ListOptions{}); got.Items[0].TrafficPolicy.IPPolicyIDs != nil {
		t.Errorf("the list shows the stored IP policy IDs: %+v", got.Items[0].TrafficPolicy)
	}
	err = e.svc.DeleteIPPolicy(e.ctx, e.user, f.pol1)
	wantCode(t, err, apierr.Conflict)
	if want := "the traffic_policy module of TLS edge " + tls.ID; !strings.Contains(err.Error(), want) {
		t.Errorf("conflict %q does not say %q", err, want)
	}
	// An IP restriction naming the same policy: both modules hold it;
	// deleting one module keeps the other's reference.
	if _, err := e.svc.ReplaceTLSEdgeIPRestriction(e.ctx, e.user, tls.ID, edges.IPRestrictionParams{IPPolicyIDs: []string{f.pol1}}); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.DeleteTLSEdgeTrafficPolicy(e.ctx, e.user, tls.ID); err != nil {
		t.Fatal(err)
	}
	wantCode(t, e.svc.DeleteIPPolicy(e.ctx, e.user, f.pol1), apierr.Conflict)
	if err := e.svc.DeleteIPPolicy(e.ctx, e.user, f.pol2); err != nil {
		t.Errorf("the traffic policy's other policy is still held: %v", err)
	}
}

func TestTLSTerminationAndTrafficPolicyConflict(t *testing.T) {
	e := newEnv(t)
	f := newModuleFixture(t, e, e.user)
	tls := e.tlsEdge(t, e.user)
	upstream := edges.TLSTerminationParams{TerminateAt: "upstream"}

	// Upstream first: a traffic policy is refused; IP restriction is fine.
	if _, err := e.svc.ReplaceTLSEdgeTLSTermination(e.ctx, e.user, tls.ID, upstream); err != nil {
		t.Fatal(err)
	}
	_, err := e.svc.ReplaceTLSEdgeTrafficPolicy(e.ctx, e.user, tls.ID, edges.TrafficPolicyParams{Value: denyAll})
	wantCode(t, err, apierr.Conflict)
	if !strings.Contains(err.Error(), tls.ID) || !strings.Contains(err.Error(), "upstream") {
		t.Errorf("conflict %q does not explain itself", err)
	}
	if _, err := e.svc.ReplaceTLSEdgeIPRestriction(e.ctx, e.user, tls.ID, edges.IPRestrictionParams{IPPolicyIDs: []string{f.pol1}}); err != nil {
		t.Errorf("IP restriction with upstream termination: %v", err)
	}
	// min_version must be null upstream.
	_, err = e.svc.ReplaceTLSEdgeTLSTermination(e.ctx, e.user, tls.ID, edges.TLSTerminationParams{TerminateAt: "upstream", MinVersion: ptr("1.3")})
	wantViolation(t, err, "min_version", "must be null")
	_, err = e.svc.ReplaceTLSEdgeTLSTermination(e.ctx, e.user, tls.ID, edges.TLSTerminationParams{TerminateAt: "middle"})
	wantViolation(t, err, "terminate_at", "edge, upstream")
	// A disabled upstream module still refuses the policy.
	if _, err := e.svc.ReplaceTLSEdgeTLSTermination(e.ctx, e.user, tls.ID, edges.TLSTerminationParams{TerminateAt: "upstream", Enabled: ptr(false)}); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.ReplaceTLSEdgeTrafficPolicy(e.ctx, e.user, tls.ID, edges.TrafficPolicyParams{Value: denyAll, Enabled: ptr(false)})
	wantCode(t, err, apierr.Conflict)

	// Terminating at the edge allows the policy; then upstream is refused.
	if _, err := e.svc.ReplaceTLSEdgeTLSTermination(e.ctx, e.user, tls.ID, edges.TLSTerminationParams{MinVersion: ptr("1.3")}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.ReplaceTLSEdgeTrafficPolicy(e.ctx, e.user, tls.ID, edges.TrafficPolicyParams{Value: denyAll}); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.ReplaceTLSEdgeTLSTermination(e.ctx, e.user, tls.ID, upstream)
	wantCode(t, err, apierr.Conflict)
	got, err := e.svc.GetTLSEdgeTLSTermination(e.ctx, e.user, tls.ID)
	if err != nil || got.TerminateAt != "edge" || *got.MinVersion != "1.3" {
		t.Errorf("the refused replace changed the module: %+v, %v", got, err)
	}
	// Without a termination module the edge terminates TLS: the policy
	// stays, and upstream is still refused.
	if err := e.svc.DeleteTLSEdgeTLSTermination(e.ctx, e.user, tls.ID); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.ReplaceTLSEdgeTLSTermination(e.ctx, e.user, tls.ID, upstream)
	wantCode(t, err, apierr.Conflict)
	// Deleting the policy lifts the conflict.
	if err := e.svc.DeleteTLSEdgeTrafficPolicy(e.ctx, e.user, tls.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.ReplaceTLSEdgeTLSTermination(e.ctx, e.user, tls.ID, upstream); err != nil {
		t.Error(err)
	}
}

// TestModuleWritesAreAtomic: concurrent replaces of different modules of
// one edge never lose one another, and a module write racing the deletion
// of the IP policy it names never leaves a dangling reference.
func TestModuleWritesAreAtomic(t *testing.T) {
	e := newEnv(t)
	f := newModuleFixture(t, e, e.user)
	tcp := e.tcpEdge(t, e.user)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			if _, err := e.svc.ReplaceTCPEdgeIPRestriction(e.ctx, e.user, tcp.ID, edges.IPRestrictionParams{IPPolicyIDs: []string{f.pol1}, Enabled: ptr(i%2 == 0)}); err != nil {
				t.Error(err)
			}
		}()
		go func() {
			defer wg.Done()
			if _, err := e.svc.ReplaceTCPEdgeBackend(e.ctx, e.user, tcp.ID, edges.BackendParams{BackendID: f.backend}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	got, err := e.svc.GetTCPEdge(e.ctx, e.user, tcp.ID)
	if err != nil || got.IPRestriction == nil || got.Backend == nil {
		t.Fatalf("lost a module: %+v, %v", got, err)
	}

	for range 20 {
		pol := e.policy(t, e.user)
		tls := e.tlsEdge(t, e.user)
		var replaceErr, deleteErr error
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, replaceErr = e.svc.ReplaceTLSEdgeIPRestriction(e.ctx, e.user, tls.ID, edges.IPRestrictionParams{IPPolicyIDs: []string{pol.ID}})
		}()
		go func() {
			defer wg.Done()
			deleteErr = e.svc.DeleteIPPolicy(e.ctx, e.user, pol.ID)
		}()
		wg.Wait()
		switch {
		case replaceErr == nil && deleteErr == nil:
			t.Fatal("both the module naming a policy and the policy's deletion succeeded")
		case replaceErr != nil && deleteErr != nil:
			t.Fatalf("both failed: %v; %v", replaceErr, deleteErr)
		case replaceErr != nil:
			wantViolation(t, replaceErr, "ip_policy_ids[0]", "not found")
		default:
			wantCode(t, deleteErr, apierr.Conflict)
		}
	}
}
