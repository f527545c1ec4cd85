package httpapi_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// edgeSet is an HTTPS edge with one route, a TLS edge and a TCP edge,
// created through /edges/https, /edges/https/{edge_id}/routes, /edges/tls
// and /edges/tcp.
type edgeSet struct {
	https, route, tls, tcp string
}

func (e edgeSet) routePath(module string) string {
	return "/edges/https/" + e.https + "/routes/" + e.route + "/" + module
}
func (e edgeSet) tlsPath(module string) string { return "/edges/tls/" + e.tls + "/" + module }
func (e edgeSet) tcpPath(module string) string { return "/edges/tcp/" + e.tcp + "/" + module }

// modulePaths returns the nine module paths of SPEC 4.5.
func (e edgeSet) modulePaths() []string {
	return []string{
		e.routePath("oidc"), e.routePath("backend"), e.routePath("response_headers"), e.routePath("compression"),
		e.tlsPath("ip_restriction"), e.tlsPath("traffic_policy"), e.tlsPath("tls_termination"),
		e.tcpPath("ip_restriction"), e.tcpPath("backend"),
	}
}

func newEdges(t *testing.T, s *server, key string) edgeSet {
	t.Helper()
	var e edgeSet
	e.https = create(t, s, key, "/edges/https", `{"description":"web"}`, "edghts_")
	e.route = create(t, s, key, "/edges/https/"+e.https+"/routes", `{"match_type":"path_prefix","match":"/"}`, "edghtsrt_")
	e.tls = create(t, s, key, "/edges/tls", `{}`, "edgtls_")
	e.tcp = create(t, s, key, "/edges/tcp", `{}`, "edgtcp_")
	return e
}

// The life of every module: GET and DELETE of an unset module 404; PUT
// 200 with the module; GET 200 with the same; DELETE 204 with no body;
// then GET and DELETE 404 again.
func TestE2EModuleLifecycle(t *testing.T) {
	s := newE2E(t)
	e := newEdges(t, s, s.keyA)
	pol := create(t, s, s.keyA, "/ip_policies", `{}`, "ipp_")
	bk := create(t, s, s.keyA, "/backends/tunnel_group", `{"labels":{"app":"web"}}`, "bkdtg_")
	polRef := `{"id":"` + pol + `","uri":"` + base + `/ip_policies/` + pol + `"}`
	bkRef := `{"id":"` + bk + `","uri":"` + base + `/backends/tunnel_group/` + bk + `"}`

	tests := []struct {
		name, path, put, want string
	}{
		{"https route oidc", e.routePath("oidc"),
			`{"issuer":"https://accounts.example.com","client_id":"cid","client_secret":"secret","scopes":["openid","email"]}`,
			`{"enabled":true,"options_passthrough":false,"cookie_prefix":"","inactivity_timeout":0,"maximum_duration":0,
			  "issuer":"https://accounts.example.com","client_id":"cid","client_secret":"secret","scopes":["openid","email"]}`},
		{"https route backend", e.routePath("backend"), `{"backend_id":"` + bk + `"}`,
			`{"enabled":true,"backend":` + bkRef + `}`},
		{"https route response headers", e.routePath("response_headers"),
			`{"add":{"X-Frame-Options":"DENY","Strict-Transport-Security":"max-age=63072000"}}`,
			`{"enabled":true,"add":{"x-frame-options":"DENY","strict-transport-security":"max-age=63072000"},"remove":[]}`},
		{"https route compression", e.routePath("compression"), `{}`, `{"enabled":true}`},
		{"tls edge ip restriction", e.tlsPath("ip_restriction"), `{"ip_policy_ids":["` + pol + `"]}`,
			`{"enabled":true,"ip_policies":[` + polRef + `]}`},
		{"tls edge traffic policy", e.tlsPath("traffic_policy"),
			`{"value":"{\"inbound\":[{\"name\":\"log\",\"expressions\":[\"true\"],\"actions\":[{\"type\":\"log\"}]}]}"}`,
			`{"enabled":true,"value":"{\"inbound\":[{\"name\":\"log\",\"expressions\":[\"true\"],\"actions\":[{\"type\":\"log\"}]}]}"}`},
		{"tls edge tls termination", e.tlsPath("tls_termination"), `{"terminate_at":"edge","min_version":"1.3"}`,
			`{"enabled":true,"terminate_at":"edge","min_version":"1.3"}`},
		{"tcp edge ip restriction", e.tcpPath("ip_restriction"), `{"ip_policy_ids":["` + pol + `"]}`,
			`{"enabled":true,"ip_policies":[` + polRef + `]}`},
		{"tcp edge backend", e.tcpPath("backend"), `{"backend_id":"` + bk + `"}`,
			`{"enabled":true,"backend":` + bkRef + `}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkError(t, call(t, s, "GET", tc.path, s.keyA, ""), apiError{status: 404, code: errNotFound})
			checkError(t, call(t, s, "DELETE", tc.path, s.keyA, ""), apiError{status: 404, code: errNotFound})
			exact(t, call(t, s, "PUT", tc.path, s.keyA, tc.put), 200, tc.want)
			exact(t, call(t, s, "GET", tc.path, s.keyA, ""), 200, tc.want)
			// PUT replaces: the same body again gives the same module.
			exact(t, call(t, s, "PUT", tc.path, s.keyA, tc.put), 200, tc.want)
			noContent(t, call(t, s, "DELETE", tc.path, s.keyA, ""))
			checkError(t, call(t, s, "GET", tc.path, s.keyA, ""), apiError{status: 404, code: errNotFound})
			checkError(t, call(t, s, "DELETE", tc.path, s.keyA, ""), apiError{status: 404, code: errNotFound})
		})
	}

	// Modules of edges and routes that do not exist, or of a route under
	// another edge, are not found.
	other := create(t, s, s.keyA, "/edges/https", `{}`, "edghts_")
	missing := edgeSet{https: "edghts_000000000000000000000000000", route: "edghtsrt_000000000000000000000000000",
		tls: "edgtls_000000000000000000000000000", tcp: "edgtcp_000000000000000000000000000"}
	wrongEdge := edgeSet{https: other, route: e.route, tls: "nope", tcp: "nope"}
	for _, set := range []edgeSet{missing, wrongEdge} {
		for _, path := range set.modulePaths() {
			for _, m := range []string{"GET", "DELETE"} {
				checkError(t, call(t, s, m, path, s.keyA, ""), apiError{status: 404, code: errNotFound})
			}
		}
	}
	before := snapshot(t, s, s.keyA)
	for i, path := range missing.modulePaths() {
		checkError(t, call(t, s, "PUT", path, s.keyA, tests[i].put), apiError{status: 404, code: errNotFound})
	}
	for i, path := range wrongEdge.modulePaths()[:4] {
		checkError(t, call(t, s, "PUT", path, s.keyA, tests[i].put), apiError{status: 404, code: errNotFound})
	}
	unchanged(t, s, s.keyA, before)
}

// OIDC (SPEC 2.7): the defaults of fields not supplied are exactly
// cookie_prefix "", inactivity_timeout 0, maximum_duration 0,
// options_passthrough false and enabled true; supplied values come back;
// client_secret is returned.
func TestE2EModuleOIDC(t *testing.T) {
	s := newE2E(t)
	e := newEdges(t, s, s.keyA)
	path := e.routePath("oidc")

	exact(t, call(t, s, "PUT", path, s.keyA, `{"issuer":"https://idp.example.com/realms/a","client_id":"app","client_secret":"s3cret"}`), 200,
		`{"enabled":true,"options_passthrough":false,"cookie_prefix":"","inactivity_timeout":0,"maximum_duration":0,
		  "issuer":"https://idp.example.com/realms/a","client_id":"app","client_secret":"s3cret","scopes":[]}`)
	full := `{"enabled":false,"options_passthrough":true,"cookie_prefix":"sess.","inactivity_timeout":300,"maximum_duration":86400,
		  "issuer":"https://idp.example.com","client_id":"app","client_secret":"s3cret","scopes":["openid","profile"]}`
	exact(t, call(t, s, "PUT", path, s.keyA, full), 200, full)
	exact(t, call(t, s, "GET", path, s.keyA, ""), 200, full)
	// enabled: true explicitly; the largest uint32.
	max := `{"enabled":true,"options_passthrough":false,"cookie_prefix":"","inactivity_timeout":4294967295,"maximum_duration":4294967295,
		  "issuer":"https://idp.example.com","client_id":"app","client_secret":"s3cret","scopes":["openid"]}`
	exact(t, call(t, s, "PUT", path, s.keyA, max), 200, max)

	before := snapshot(t, s, s.keyA)
	const ok = `"issuer":"https://idp.example.com","client_id":"app","client_secret":"s3cret"`
	for _, tc := range []struct{ body, field string }{
		{`{"client_id":"app","client_secret":"s"}`, "issuer"},
		{`{"issuer":"http://idp.example.com","client_id":"app","client_secret":"s"}`, "issuer"},
		{`{"issuer":"https://idp.example.com?x=1","client_id":"app","client_secret":"s"}`, "issuer"},
		{`{"issuer":"https://idp.example.com","client_secret":"s"}`, "client_id"},
		{`{"issuer":"https://idp.example.com","client_id":"app"}`, "client_secret"},
		{`{` + ok + `,"cookie_prefix":"a b"}`, "cookie_prefix"},
		{`{` + ok + `,"scopes":["openid","openid"]}`, "scopes[1]"},
		{`{` + ok + `,"scopes":[""]}`, "scopes[0]"},
		{`{` + ok + `,"inactivity_timeout":-1}`, "inactivity_timeout"},
		{`{` + ok + `,"maximum_duration":4294967296}`, "maximum_duration"},
		{`{` + ok + `,"options_passthrough":"yes"}`, "options_passthrough"},
		{`{` + ok + `,"enabled":"true"}`, "enabled"},
		{`{` + ok + `,"scope":["openid"]}`, "scope"},
	} {
		checkError(t, call(t, s, "PUT", path, s.keyA, tc.body), apiError{status: 400, code: errInvalid, fields: []string{tc.field}})
	}
	unchanged(t, s, s.keyA, before)
}

// Backend modules (SPEC 2.7): backend_id in the request, the backend Ref
// under /backends/tunnel_group/ in the response; the backend cannot be
// deleted while a module holds it.
func TestE2EModuleBackend(t *testing.T) {
	s := newE2E(t)
	e := newEdges(t, s, s.keyA)
	bk := create(t, s, s.keyA, "/backends/tunnel_group", `{"labels":{"app":"web"}}`, "bkdtg_")
	bkRef := `{"id":"` + bk + `","uri":"` + base + `/backends/tunnel_group/` + bk + `"}`

	for _, path := range []string{e.routePath("backend"), e.tcpPath("backend")} {
		exact(t, call(t, s, "PUT", path, s.keyA, `{"enabled":false,"backend_id":"`+bk+`"}`), 200, `{"enabled":false,"backend":`+bkRef+`}`)
		exact(t, call(t, s, "GET", path, s.keyA, ""), 200, `{"enabled":false,"backend":`+bkRef+`}`)

		before := snapshot(t, s, s.keyA)
		for _, tc := range []struct{ body, field string }{
			{`{}`, "backend_id"},
			{`{"backend_id":""}`, "backend_id"},
			{`{"backend_id":"nope"}`, "backend_id"},
			{`{"backend_id":"bkdtg_000000000000000000000000000"}`, "backend_id"},
			{`{"backend_id":"` + e.tls + `"}`, "backend_id"},
			{`{"backend":` + bkRef + `}`, "backend"}, // response only
		} {
			checkError(t, call(t, s, "PUT", path, s.keyA, tc.body), apiError{status: 400, code: errInvalid, fields: []string{tc.field}})
		}
		unchanged(t, s, s.keyA, before)
	}
	// In use by both modules: the conflict names the modules.
	checkError(t, call(t, s, "DELETE", "/backends/tunnel_group/"+bk, s.keyA, ""),
		apiError{status: 409, code: errConflict, msg: []string{"backend module", e.route, e.tcp}})
	noContent(t, call(t, s, "DELETE", e.routePath("backend"), s.keyA, ""))
	noContent(t, call(t, s, "DELETE", e.tcpPath("backend"), s.keyA, ""))
	noContent(t, call(t, s, "DELETE", "/backends/tunnel_group/"+bk, s.keyA, ""))
}

// Response headers (SPEC 2.7): names lower-cased, remove [] when none,
// add {} when none.
func TestE2EModuleResponseHeaders(t *testing.T) {
	s := newE2E(t)
	e := newEdges(t, s, s.keyA)
	path := e.routePath("response_headers")
	exact(t, call(t, s, "PUT", path, s.keyA, `{"add":{"X-Served-By":"Edge","cache-control":"no-store"}}`), 200,
		`{"enabled":true,"add":{"x-served-by":"Edge","cache-control":"no-store"},"remove":[]}`)
	exact(t, call(t, s, "PUT", path, s.keyA, `{"enabled":false,"remove":["Server","X-Powered-By"]}`), 200,
		`{"enabled":false,"add":{},"remove":["server","x-powered-by"]}`)
	exact(t, call(t, s, "GET", path, s.keyA, ""), 200, `{"enabled":false,"add":{},"remove":["server","x-powered-by"]}`)
	exact(t, call(t, s, "PUT", path, s.keyA, ``), 200, `{"enabled":true,"add":{},"remove":[]}`)

	before := snapshot(t, s, s.keyA)
	for _, tc := range []struct{ body, field string }{
		{`{"add":{"Bad Header":"x"}}`, `add["Bad Header"]`},
		{`{"add":{"X-A":"line\nbreak"}}`, `add["X-A"]`},
		{`{"add":{"X-A":"1","x-a":"2"}}`, `add["x-a"]`},
		{`{"remove":[""]}`, "remove[0]"},
		{`{"remove":["Server","server"]}`, "remove[1]"},
		{`{"add":{"X-A":"1"},"remove":["x-a"]}`, "remove[0]"},
		{`{"add":["X-A"]}`, "add"},
	} {
		checkError(t, call(t, s, "PUT", path, s.keyA, tc.body), apiError{status: 400, code: errInvalid, fields: []string{tc.field}})
	}
	unchanged(t, s, s.keyA, before)
}

// Compression (SPEC 2.7): only enabled, default true.
func TestE2EModuleCompression(t *testing.T) {
	s := newE2E(t)
	e := newEdges(t, s, s.keyA)
	path := e.routePath("compression")
	exact(t, call(t, s, "PUT", path, s.keyA, `{"enabled":false}`), 200, `{"enabled":false}`)
	exact(t, call(t, s, "GET", path, s.keyA, ""), 200, `{"enabled":false}`)
	exact(t, call(t, s, "PUT", path, s.keyA, `{"enabled":null}`), 200, `{"enabled":true}`)
	before := snapshot(t, s, s.keyA)
	checkError(t, call(t, s, "PUT", path, s.keyA, `{"level":9}`), apiError{status: 400, code: errInvalid, fields: []string{"level"}})
	checkError(t, call(t, s, "PUT", path, s.keyA, `{"enabled":1}`), apiError{status: 400, code: errInvalid, fields: []string{"enabled"}})
	unchanged(t, s, s.keyA, before)
}

// IP restriction modules (SPEC 2.7): ip_policy_ids in the request,
// ip_policies Refs in the response, in the order given; the policies
// cannot be deleted while a module holds them.
func TestE2EModuleIPRestriction(t *testing.T) {
	s := newE2E(t)
	e := newEdges(t, s, s.keyA)
	p1 := create(t, s, s.keyA, "/ip_policies", `{}`, "ipp_")
	p2 := create(t, s, s.keyA, "/ip_policies", `{}`, "ipp_")
	refs := `[{"id":"` + p2 + `","uri":"` + base + `/ip_policies/` + p2 + `"},{"id":"` + p1 + `","uri":"` + base + `/ip_policies/` + p1 + `"}]`
	for _, path := range []string{e.tlsPath("ip_restriction"), e.tcpPath("ip_restriction")} {
		exact(t, call(t, s, "PUT", path, s.keyA, `{"ip_policy_ids":["`+p2+`","`+p1+`"]}`), 200, `{"enabled":true,"ip_policies":`+refs+`}`)
		exact(t, call(t, s, "GET", path, s.keyA, ""), 200, `{"enabled":true,"ip_policies":`+refs+`}`)
		before := snapshot(t, s, s.keyA)
		for _, tc := range []struct{ body, field string }{
			{`{}`, "ip_policy_ids"},
			{`{"ip_policy_ids":[]}`, "ip_policy_ids"},
			{`{"ip_policy_ids":["nope"]}`, "ip_policy_ids[0]"},
			{`{"ip_policy_ids":["` + p1 + `","` + p1 + `"]}`, "ip_policy_ids[1]"},
			{`{"ip_policy_ids":["` + p1 + `","ipp_000000000000000000000000000"]}`, "ip_policy_ids[1]"},
			{`{"ip_policies":` + refs + `}`, "ip_policies"}, // response only
		} {
			checkError(t, call(t, s, "PUT", path, s.keyA, tc.body), apiError{status: 400, code: errInvalid, fields: []string{tc.field}})
		}
		unchanged(t, s, s.keyA, before)
	}
	checkError(t, call(t, s, "DELETE", "/ip_policies/"+p1, s.keyA, ""),
		apiError{status: 409, code: errConflict, msg: []string{"ip_restriction module", e.tls, e.tcp}})
}

// compactJSON reports whether s is JSON with no insignificant whitespace.
func compactJSON(s string) bool {
	var b bytes.Buffer
	return json.Compact(&b, []byte(s)) == nil && b.String() == s
}

// Traffic policy (SPEC 2.7): the value is returned re-serialized
// compactly, the same document with keys possibly reordered.
func TestE2EModuleTrafficPolicy(t *testing.T) {
	s := newE2E(t)
	e := newEdges(t, s, s.keyA)
	pol := create(t, s, s.keyA, "/ip_policies", `{}`, "ipp_")
	path := e.tlsPath("traffic_policy")
	doc := `{
	  "inbound": [
	    {
	      "name": "block one address",
	      "expressions": ["conn.client_ip == '203.0.113.9'"],
	      "actions": [ { "type": "deny" } ]
	    },
	    {
	      "actions": [ { "config": { "metadata": { "edge": "tls" } }, "type": "log" } ],
	      "expressions": [ "true" ],
	      "name": "log the rest"
	    },
	    {
	      "name": "office only",
	      "expressions": ["conn.server_port == 443"],
	      "actions": [ { "type": "restrict-ips", "config": { "ip_policies": ["` + pol + `"] } } ]
	    }
	  ]
	}`
	for _, enabled := range []string{"", `"enabled":false,`} {
		r := call(t, s, "PUT", path, s.keyA, `{`+enabled+`"value":`+jsonString(doc)+`}`)
		if r.status != 200 {
			t.Fatalf("PUT: %d %s", r.status, r.body)
		}
		if keys := sortedKeys(r.json); !cmp.Equal(keys, []string{"enabled", "value"}) {
			t.Errorf("module keys %q, want enabled and value", keys)
		}
		if want := enabled == ""; r.json["enabled"] != want {
			t.Errorf("enabled %v, want %v", r.json["enabled"], want)
		}
		value, _ := r.json["value"].(string)
		if !compactJSON(value) {
			t.Errorf("value is not compact JSON: %q", value)
		}
		var got, want any
		json.Unmarshal([]byte(value), &got)
		json.Unmarshal([]byte(doc), &want)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("value is not the document (-want +got):\n%s", diff)
		}
		exact(t, call(t, s, "GET", path, s.keyA, ""), 200, string(r.body))
	}
	// The policy named by restrict-ips cannot be deleted meanwhile.
	checkError(t, call(t, s, "DELETE", "/ip_policies/"+pol, s.keyA, ""), apiError{status: 409, code: errConflict, msg: []string{"traffic_policy", e.tls}})

	before := snapshot(t, s, s.keyA)
	for _, tc := range []struct{ name, body string }{
		{"missing", `{}`},
		{"empty", `{"value":""}`},
		{"not JSON", `{"value":"inbound: []"}`},
		{"not an object", `{"value":"[]"}`},
		{"unknown phase", `{"value":"{\"sideways\":[]}"}`},
		{"HTTP-only action on a connection", `{"value":"{\"inbound\":[{\"actions\":[{\"type\":\"add-headers\",\"config\":{\"headers\":{\"x\":\"y\"}}}]}]}"}`},
		{"HTTP-only variable", `{"value":"{\"inbound\":[{\"expressions\":[\"req.method == 'GET'\"],\"actions\":[{\"type\":\"deny\"}]}]}"}`},
		{"not boolean", `{"value":"{\"inbound\":[{\"expressions\":[\"1\"],\"actions\":[{\"type\":\"deny\"}]}]}"}`},
		{"unknown action", `{"value":"{\"inbound\":[{\"actions\":[{\"type\":\"explode\"}]}]}"}`},
		{"policy not in account", `{"value":"{\"inbound\":[{\"actions\":[{\"type\":\"restrict-ips\",\"config\":{\"ip_policies\":[\"ipp_000000000000000000000000000\"]}}]}]}"}`},
		{"value not a string", `{"value":{"inbound":[]}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := call(t, s, "PUT", path, s.keyA, tc.body)
			if r.status != 400 || r.json["error_code"] != errInvalid {
				t.Fatalf("%d %s, want 400 %s", r.status, r.body, errInvalid)
			}
			vs, _ := r.json["violations"].([]any)
			if len(vs) == 0 {
				t.Fatalf("no violations: %s", r.body)
			}
			for _, v := range vs {
				if f, _ := v.(map[string]any)["field"].(string); f != "value" && !bytes.HasPrefix([]byte(f), []byte("value.")) {
					t.Errorf("violation of %q, want value or value.<path>", f)
				}
			}
		})
	}
	unchanged(t, s, s.keyA, before)
}

// The value keeps the document as sent, but for whitespace and key order
// (SPEC 2.7): a rule's empty expressions list and empty name are part of
// it.
func TestE2EModuleTrafficPolicyKeepsEmptyFields(t *testing.T) {
	s := newE2E(t)
	e := newEdges(t, s, s.keyA)
	doc := `{"inbound":[{"name":"","expressions":[],"actions":[{"type":"log"}]}]}`
	r := call(t, s, "PUT", e.tlsPath("traffic_policy"), s.keyA, `{"value":`+jsonString(doc)+`}`)
	if r.status != 200 {
		t.Fatalf("PUT: %d %s", r.status, r.body)
	}
	var got, want any
	json.Unmarshal([]byte(r.json["value"].(string)), &got)
	json.Unmarshal([]byte(doc), &want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("value is not the document (-want +got):\n%s", diff)
	}
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return sorted(keys...)
}

// TLS termination (SPEC 2.7): terminate_at edge or upstream, min_version
// null when unspecified and required null with upstream; upstream is
// refused while the edge has a traffic policy, and the reverse.
func TestE2EModuleTLSTermination(t *testing.T) {
	s := newE2E(t)
	e := newEdges(t, s, s.keyA)
	path := e.tlsPath("tls_termination")
	exact(t, call(t, s, "PUT", path, s.keyA, `{}`), 200, `{"enabled":true,"terminate_at":"edge","min_version":null}`)
	for _, v := range []string{"1.0", "1.1", "1.2", "1.3"} {
		exact(t, call(t, s, "PUT", path, s.keyA, `{"terminate_at":"edge","min_version":"`+v+`"}`), 200,
			`{"enabled":true,"terminate_at":"edge","min_version":"`+v+`"}`)
	}
	exact(t, call(t, s, "PUT", path, s.keyA, `{"enabled":false,"terminate_at":"upstream"}`), 200,
		`{"enabled":false,"terminate_at":"upstream","min_version":null}`)
	exact(t, call(t, s, "PUT", path, s.keyA, `{"terminate_at":"upstream","min_version":null}`), 200,
		`{"enabled":true,"terminate_at":"upstream","min_version":null}`)
	exact(t, call(t, s, "GET", path, s.keyA, ""), 200, `{"enabled":true,"terminate_at":"upstream","min_version":null}`)

	before := snapshot(t, s, s.keyA)
	for _, tc := range []struct{ body, field string }{
		{`{"terminate_at":"upstream","min_version":"1.2"}`, "min_version"},
		{`{"terminate_at":"middle"}`, "terminate_at"},
		{`{"terminate_at":"EDGE"}`, "terminate_at"},
		{`{"min_version":"1.4"}`, "min_version"},
		{`{"min_version":"TLSv1.2"}`, "min_version"},
		{`{"min_version":1.2}`, "min_version"},
	} {
		checkError(t, call(t, s, "PUT", path, s.keyA, tc.body), apiError{status: 400, code: errInvalid, fields: []string{tc.field}})
	}
	// Upstream termination disallows the traffic policy module.
	const tp = `{"value":"{\"inbound\":[{\"actions\":[{\"type\":\"log\"}]}]}"}`
	checkError(t, call(t, s, "PUT", e.tlsPath("traffic_policy"), s.keyA, tp), apiError{status: 409, code: errConflict})
	unchanged(t, s, s.keyA, before)

	exact(t, call(t, s, "PUT", path, s.keyA, `{"terminate_at":"edge"}`), 200, `{"enabled":true,"terminate_at":"edge","min_version":null}`)
	if r := call(t, s, "PUT", e.tlsPath("traffic_policy"), s.keyA, tp); r.status != 200 {
		t.Fatalf("traffic policy with edge termination: %d %s", r.status, r.body)
	}
	before = snapshot(t, s, s.keyA)
	checkError(t, call(t, s, "PUT", path, s.keyA, `{"terminate_at":"upstream"}`), apiError{status: 409, code: errConflict})
	unchanged(t, s, s.keyA, before)
	// Without a termination module the traffic policy stays allowed.
	noContent(t, call(t, s, "DELETE", path, s.keyA, ""))
	if r := call(t, s, "GET", e.tlsPath("traffic_policy"), s.keyA, ""); r.status != 200 {
		t.Errorf("traffic policy lost: %d %s", r.status, r.body)
	}
}

// A module's references follow it: replacing a module releases what the
// old one named, deleting it releases the rest.
func TestE2EModuleReferencesFollowReplacement(t *testing.T) {
	s := newE2E(t)
	e := newEdges(t, s, s.keyA)
	p1 := create(t, s, s.keyA, "/ip_policies", `{}`, "ipp_")
	p2 := create(t, s, s.keyA, "/ip_policies", `{}`, "ipp_")
	p3 := create(t, s, s.keyA, "/ip_policies", `{}`, "ipp_")
	b1 := create(t, s, s.keyA, "/backends/tunnel_group", `{"labels":{"a":"b"}}`, "bkdtg_")
	b2 := create(t, s, s.keyA, "/backends/tunnel_group", `{"labels":{"a":"b"}}`, "bkdtg_")
	restrict := func(pol string) string {
		return `{"value":"{\"inbound\":[{\"actions\":[{\"type\":\"restrict-ips\",\"config\":{\"ip_policies\":[\"` + pol + `\"]}}]}]}"}`
	}
	put := func(path, body string) {
		t.Helper()
		if r := call(t, s, "PUT", path, s.keyA, body); r.status != 200 {
			t.Fatalf("PUT %s: %d %s", path, r.status, r.body)
		}
	}
	put(e.tlsPath("traffic_policy"), restrict(p1))
	put(e.tlsPath("traffic_policy"), restrict(p2))
	put(e.tcpPath("ip_restriction"), `{"ip_policy_ids":["`+p3+`"]}`)
	put(e.tcpPath("ip_restriction"), `{"ip_policy_ids":["`+p2+`"]}`)
	put(e.routePath("backend"), `{"backend_id":"`+b1+`"}`)
	put(e.routePath("backend"), `{"backend_id":"`+b2+`"}`)

	noContent(t, call(t, s, "DELETE", "/ip_policies/"+p1, s.keyA, ""))
	noContent(t, call(t, s, "DELETE", "/ip_policies/"+p3, s.keyA, ""))
	noContent(t, call(t, s, "DELETE", "/backends/tunnel_group/"+b1, s.keyA, ""))
	checkError(t, call(t, s, "DELETE", "/ip_policies/"+p2, s.keyA, ""),
		apiError{status: 409, code: errConflict, msg: []string{"traffic_policy module", e.tls, "ip_restriction module", e.tcp}})
	checkError(t, call(t, s, "DELETE", "/backends/tunnel_group/"+b2, s.keyA, ""),
		apiError{status: 409, code: errConflict, msg: []string{"backend module", e.route}})

	noContent(t, call(t, s, "DELETE", e.tlsPath("traffic_policy"), s.keyA, ""))
	noContent(t, call(t, s, "DELETE", e.tcpPath("ip_restriction"), s.keyA, ""))
	noContent(t, call(t, s, "DELETE", e.routePath("backend"), s.keyA, ""))
	noContent(t, call(t, s, "DELETE", "/ip_policies/"+p2, s.keyA, ""))
	noContent(t, call(t, s, "DELETE", "/backends/tunnel_group/"+b2, s.keyA, ""))
}
