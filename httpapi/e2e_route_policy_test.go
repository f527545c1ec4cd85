package httpapi_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane/backends"
	"github.com/google/go-cmp/cmp"
)

// routePolicyRateLimit is an HTTP policy with the rate-limit action of
// SPEC 2.8, as written by a user (with whitespace) and as stored.
const (
	routePolicyRateLimit = `{
  "on_http_request": [
    {"name": "limit", "actions": [
      {"type": "rate-limit", "config": {"name": "per client", "algorithm": "sliding_window", "capacity": 10, "rate": "60s", "bucket_key": ["conn.client_ip", "req.headers['x-api-key']"]}}
    ]}
  ]
}`
	routePolicyRateLimitCompact = `{"on_http_request":[{"name":"limit","actions":[{"type":"rate-limit","config":{"name":"per client","algorithm":"sliding_window","capacity":10,"rate":"60s","bucket_key":["conn.client_ip","req.headers['x-api-key']"]}}]}]}`
)

// The HTTPS route traffic policy module over HTTP: PUT answers 200 with
// the module, GET 200, DELETE 204, then GET 404; the route shows the
// module as traffic_policy (null when unset).
func TestE2ERouteTrafficPolicyLifecycle(t *testing.T) {
	s := newE2E(t)
	e := newEdges(t, s, s.keyA)
	path := e.routePath("traffic_policy")
	routeURI := "/edges/https/" + e.https + "/routes/" + e.route
	routeShows := func(t *testing.T, want string) {
		t.Helper()
		r := call(t, s, "GET", routeURI, s.keyA, "")
		if r.status != 200 {
			t.Fatalf("GET route: %d %s", r.status, r.body)
		}
		var route map[string]json.RawMessage
		if err := json.Unmarshal(r.body, &route); err != nil {
			t.Fatal(err)
		}
		got, ok := route["traffic_policy"]
		if !ok {
			t.Fatalf("the route has no traffic_policy field: %s", r.body)
		}
		var g, w any
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(want), &w); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(w, g); diff != "" {
			t.Errorf("route traffic_policy (-want +got):\n%s", diff)
		}
	}

	checkError(t, call(t, s, "GET", path, s.keyA, ""), apiError{status: 404, code: errNotFound, msg: []string{e.route, "traffic_policy"}})
	checkError(t, call(t, s, "DELETE", path, s.keyA, ""), apiError{status: 404, code: errNotFound, msg: []string{e.route, "traffic_policy"}})
	routeShows(t, `null`)

	want := `{"enabled":true,"value":` + jsonString(routePolicyRateLimitCompact) + `}`
	exact(t, call(t, s, "PUT", path, s.keyA, `{"value":`+jsonString(routePolicyRateLimit)+`}`), 200, want)
	exact(t, call(t, s, "GET", path, s.keyA, ""), 200, want)
	routeShows(t, want)
	// PUT replaces: a disabled module, the value kept compact.
	disabled := `{"enabled":false,"value":"{\"inbound\":[{\"expressions\":[\"req.method == 'POST'\"],\"actions\":[{\"type\":\"deny\",\"config\":{\"status_code\":405}}]}]}"}`
	exact(t, call(t, s, "PUT", path, s.keyA, disabled), 200, disabled)
	exact(t, call(t, s, "GET", path, s.keyA, ""), 200, disabled)
	routeShows(t, disabled)
	// Another account sees nothing and changes nothing.
	for _, m := range []string{"GET", "DELETE"} {
		checkError(t, call(t, s, m, path, s.keyB, ""), apiError{status: 404, code: errNotFound})
	}
	checkError(t, call(t, s, "PUT", path, s.keyB, `{"value":"{}"}`), apiError{status: 404, code: errNotFound})
	exact(t, call(t, s, "GET", path, s.keyA, ""), 200, disabled)

	noContent(t, call(t, s, "DELETE", path, s.keyA, ""))
	checkError(t, call(t, s, "GET", path, s.keyA, ""), apiError{status: 404, code: errNotFound})
	checkError(t, call(t, s, "DELETE", path, s.keyA, ""), apiError{status: 404, code: errNotFound})
	routeShows(t, `null`)

	// A route of another edge, and a missing route, are not found.
	other := create(t, s, s.keyA, "/edges/https", `{}`, "edghts_")
	for _, p := range []string{
		"/edges/https/" + other + "/routes/" + e.route + "/traffic_policy",
		"/edges/https/" + e.https + "/routes/edghtsrt_000000000000000000000000000/traffic_policy",
	} {
		checkError(t, call(t, s, "PUT", p, s.keyA, `{"value":"{}"}`), apiError{status: 404, code: errNotFound})
		checkError(t, call(t, s, "GET", p, s.keyA, ""), apiError{status: 404, code: errNotFound})
		checkError(t, call(t, s, "DELETE", p, s.keyA, ""), apiError{status: 404, code: errNotFound})
	}
}

// Bad documents are 400 with every violation located under value, and
// change nothing; rate-limit is accepted on a route but refused on a TLS
// edge, whose policy runs on connections.
func TestE2ERouteTrafficPolicyValidation(t *testing.T) {
	s := newE2E(t)
	e := newEdges(t, s, s.keyA)
	path := e.routePath("traffic_policy")
	for _, tc := range []struct {
		name, body string
		fields     []string
	}{
		{"value missing", `{}`, []string{"value"}},
		{"value not a JSON object", `{"value":"[]"}`, []string{"value"}},
		{"connection-only phase", `{"value":"{\"on_tcp_connect\":[{\"actions\":[{\"type\":\"deny\"}]}]}"}`, []string{"value.on_tcp_connect"}},
		{"expression and action", `{"value":"{\"inbound\":[{\"expressions\":[\"req.method ==\"],\"actions\":[{\"type\":\"explode\"}]}]}"}`,
			[]string{"value.inbound[0].expressions[0]", "value.inbound[0].actions[0].type"}},
		{"rate-limit config", `{"value":"{\"inbound\":[{\"actions\":[{\"type\":\"rate-limit\",\"config\":{\"name\":\"n\",\"algorithm\":\"fixed_window\",\"capacity\":1,\"rate\":\"60s\",\"bucket_key\":[\"req.host\"]}}]}]}"}`,
			[]string{"value.inbound[0].actions[0].config.algorithm"}},
		{"rate-limit on responses", `{"value":"{\"outbound\":[{\"actions\":[{\"type\":\"rate-limit\",\"config\":{\"name\":\"n\",\"algorithm\":\"sliding_window\",\"capacity\":1,\"rate\":\"60s\",\"bucket_key\":[\"req.host\"]}}]}]}"}`,
			[]string{"value.outbound[0].actions[0].type"}},
		{"enabled not a boolean", `{"enabled":"yes","value":"{}"}`, []string{"enabled"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := snapshot(t, s, s.keyA)
			checkError(t, call(t, s, "PUT", path, s.keyA, tc.body), apiError{status: 400, code: errInvalid, fields: tc.fields})
			unchanged(t, s, s.keyA, before)
		})
	}
	checkError(t, call(t, s, "GET", path, s.keyA, ""), apiError{status: 404, code: errNotFound})

	rateLimit := `{"value":` + jsonString(routePolicyRateLimitCompact) + `}`
	exact(t, call(t, s, "PUT", path, s.keyA, rateLimit), 200, `{"enabled":true,"value":`+jsonString(routePolicyRateLimitCompact)+`}`)
	rateLimitInbound := `{"value":"{\"inbound\":[{\"actions\":[{\"type\":\"rate-limit\",\"config\":{\"name\":\"n\",\"algorithm\":\"sliding_window\",\"capacity\":1,\"rate\":\"60s\",\"bucket_key\":[\"conn.client_ip\"]}}]}]}"}`
	checkError(t, call(t, s, "PUT", e.tlsPath("traffic_policy"), s.keyA, rateLimitInbound),
		apiError{status: 400, code: errInvalid, fields: []string{"value.inbound[0].actions[0].type"}})
}

// IP policies named by restrict-ips actions of a route's policy cannot be
// deleted while the module stands; the conflict names the module and
// route.
func TestE2ERouteTrafficPolicyReferences(t *testing.T) {
	s := newE2E(t)
	e := newEdges(t, s, s.keyA)
	path := e.routePath("traffic_policy")
	pol := create(t, s, s.keyA, "/ip_policies", `{}`, "ipp_")
	foreign := create(t, s, s.keyB, "/ip_policies", `{}`, "ipp_")
	restrict := func(id string) string {
		return `{"value":"{\"inbound\":[{\"actions\":[{\"type\":\"restrict-ips\",\"config\":{\"ip_policies\":[\"` + id + `\"]}}]}]}"}`
	}
	checkError(t, call(t, s, "PUT", path, s.keyA, restrict(foreign)),
		apiError{status: 400, code: errInvalid, fields: []string{"value.inbound[0].actions[0].config.ip_policies"}})
	r := call(t, s, "PUT", path, s.keyA, restrict(pol))
	if r.status != 200 || strings.Contains(string(r.body), "ip_policy_ids") {
		t.Fatalf("PUT: %d %s", r.status, r.body)
	}
	checkError(t, call(t, s, "DELETE", "/ip_policies/"+pol, s.keyA, ""),
		apiError{status: 409, code: errConflict, msg: []string{"traffic_policy module", e.route}})
	noContent(t, call(t, s, "DELETE", path, s.keyA, ""))
	noContent(t, call(t, s, "DELETE", "/ip_policies/"+pol, s.keyA, ""))
}

// The OpenAPI document has the three operations of the new path.
func TestE2ERouteTrafficPolicyOpenAPI(t *testing.T) {
	s := newE2E(t)
	r := call(t, s, "GET", "/openapi.json", "", "", "Service-Version", "")
	if r.status != 200 {
		t.Fatalf("openapi.json: %d", r.status)
	}
	paths, _ := r.json["paths"].(map[string]any)
	item, _ := paths["/edges/https/{edge_id}/routes/{id}/traffic_policy"].(map[string]any)
	for method, op := range map[string]string{"put": "replaceHTTPSRouteTrafficPolicy", "get": "getHTTPSRouteTrafficPolicy", "delete": "deleteHTTPSRouteTrafficPolicy"} {
		o, _ := item[method].(map[string]any)
		if o == nil || o["operationId"] != op {
			t.Errorf("%s of the route traffic policy path: %v", method, o)
		}
	}
	schemas, _ := r.json["components"].(map[string]any)["schemas"].(map[string]any)
	route, _ := schemas["edges.HTTPSRoute"].(map[string]any)
	props, _ := route["properties"].(map[string]any)
	if _, ok := props["traffic_policy"]; !ok {
		t.Errorf("the route schema has no traffic_policy: %v", route)
	}
}

// A tunnel shows where its agent forwards (forwards_to), "" when unsaid.
func TestE2ETunnelForwardsTo(t *testing.T) {
	s := newE2E(t)
	r := call(t, s, "POST", "/credentials", s.keyA, `{}`)
	if r.status != 201 {
		t.Fatalf("create credential: %d %s", r.status, r.body)
	}
	token, _ := r.json["token"].(string)
	ctx := context.Background()
	with, err := s.svc.Host().RegisterTunnel(ctx, token, backends.RegisterTunnelParams{Labels: map[string]string{"app": "web"}, ForwardsTo: "http://127.0.0.1:3000"})
	if err != nil {
		t.Fatal(err)
	}
	without, err := s.svc.Host().RegisterTunnel(ctx, token, backends.RegisterTunnelParams{})
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{with.ID: "http://127.0.0.1:3000", without.ID: ""} {
		r := call(t, s, "GET", "/tunnels/"+id, s.keyA, "")
		if got, ok := r.json["forwards_to"]; r.status != 200 || !ok || got != want {
			t.Errorf("GET /tunnels/%s: %d, forwards_to %v; %s", id, r.status, got, r.body)
		}
	}
	r = call(t, s, "GET", "/tunnels", s.keyA, "")
	items, _ := r.json["tunnels"].([]any)
	if len(items) != 2 || items[1].(map[string]any)["forwards_to"] != "http://127.0.0.1:3000" {
		t.Errorf("GET /tunnels: %s", r.body)
	}
}
