package httpapi_test

import (
	"strings"
	"testing"
)

// The original client's edge calls: hostports on HTTPS, TLS and TCP
// edges (POST /edges/https {"hostports":["app.example.com:443"]}), as raw
// HTTP.
func TestE2EEdgeHostports(t *testing.T) {
	s := newE2E(t)
	app := create(t, s, s.keyA, "/reserved_domains", `{"domain":"app.example.com"}`, "rd_")
	create(t, s, s.keyA, "/reserved_domains", `{"domain":"*.wild.example.com"}`, "rd_")
	create(t, s, s.keyB, "/reserved_domains", `{"domain":"b.example.com"}`, "rd_")

	r := call(t, s, "POST", "/edges/https", s.keyA, `{"hostports":["app.example.com:443"]}`)
	id := wantID(t, r.json["id"], "edghts_")
	const httpsEdge = `{"id":"{{id}}","uri":"` + base + `/edges/https/{{id}}","created_at":"` + t0 + `",
		"description":"","metadata":"","hostports":{{hostports}}}`
	exact(t, r, 201, httpsEdge, "id", id, "hostports", `["app.example.com:443"]`)
	exact(t, call(t, s, "GET", "/edges/https/"+id, s.keyA, ""), 200, httpsEdge, "id", id, "hostports", `["app.example.com:443"]`)

	t.Run("clash across kinds", func(t *testing.T) {
		checkError(t, call(t, s, "POST", "/edges/tls", s.keyA, `{"hostports":["App.Example.com:443"]}`),
			apiError{status: 409, code: errConflict, msg: []string{"the hostport app.example.com:443 is already used"}})
	})
	t.Run("clash across accounts", func(t *testing.T) {
		tls := create(t, s, s.keyA, "/edges/tls", `{"hostports":["x.wild.example.com:443"]}`, "edgtls_")
		create(t, s, s.keyB, "/reserved_domains", `{"domain":"x.wild.example.com"}`, "rd_")
		r := call(t, s, "POST", "/edges/https", s.keyB, `{"hostports":["x.wild.example.com:443"]}`)
		checkError(t, r, apiError{status: 409, code: errConflict, msg: []string{"x.wild.example.com:443"}})
		if strings.Contains(string(r.body), tls) {
			t.Errorf("the conflict names account A's edge: %s", r.body)
		}
	})
	t.Run("not the account's domain", func(t *testing.T) {
		checkError(t, call(t, s, "POST", "/edges/tcp", s.keyA, `{"hostports":["app.example.com:22","b.example.com:22"]}`),
			apiError{status: 400, code: errInvalid, fields: []string{"hostports[1]"}, msg: []string{"b.example.com is not a reserved domain of this account"}})
	})
	t.Run("bad hostports", func(t *testing.T) {
		for _, c := range []struct{ path, body, field string }{
			{"/edges/https", `{"hostports":["app.example.com:8443"]}`, "hostports[0]"},
			{"/edges/tls", `{"hostports":["app.example.com"]}`, "hostports[0]"},
			{"/edges/tcp", `{"hostports":["app.example.com:0"]}`, "hostports[0]"},
			{"/edges/tcp", `{"hostports":["app.example.com:65536"]}`, "hostports[0]"},
			{"/edges/tcp", `{"hostports":["app.example.com:22","APP.example.com:22"]}`, "hostports[1]"},
			{"/edges/https", `{"hostports":["a.wild.example.com:443","b.wild.example.com:443","c.wild.example.com:443","d.wild.example.com:443",
				"e.wild.example.com:443","f.wild.example.com:443","g.wild.example.com:443","h.wild.example.com:443","i.wild.example.com:443",
				"j.wild.example.com:443","k.wild.example.com:443"]}`, "hostports"},
			{"/edges/https", `{"hostports":"app.example.com:443"}`, "hostports"},
		} {
			checkError(t, call(t, s, "POST", c.path, s.keyA, c.body), apiError{status: 400, code: errInvalid, fields: []string{c.field}})
		}
	})
	t.Run("tcp edge", func(t *testing.T) {
		r := call(t, s, "POST", "/edges/tcp", s.keyA, `{"hostports":["app.example.com:5432"],"description":"db"}`)
		tcp := wantID(t, r.json["id"], "edgtcp_")
		exact(t, r, 201, `{"id":"{{id}}","uri":"`+base+`/edges/tcp/{{id}}","created_at":"`+t0+`","description":"db","metadata":"",
			"hostports":["app.example.com:5432"],"ip_restriction":null,"backend":null}`, "id", tcp)
		noContent(t, call(t, s, "DELETE", "/edges/tcp/"+tcp, s.keyA, ""))
	})
	t.Run("domain in use", func(t *testing.T) {
		checkError(t, call(t, s, "DELETE", "/reserved_domains/"+app, s.keyA, ""),
			apiError{status: 409, code: errConflict, msg: []string{"the hostports of HTTPS edge " + id}})
		exact(t, call(t, s, "PATCH", "/edges/https/"+id, s.keyA, `{"hostports":["y.wild.example.com:443"]}`), 200, httpsEdge,
			"id", id, "hostports", `["y.wild.example.com:443"]`)
		exact(t, call(t, s, "PATCH", "/edges/https/"+id, s.keyA, `{"description":"web"}`), 200,
			strings.Replace(httpsEdge, `"description":""`, `"description":"web"`, 1), "id", id, "hostports", `["y.wild.example.com:443"]`)
		noContent(t, call(t, s, "DELETE", "/reserved_domains/"+app, s.keyA, ""))
		exact(t, call(t, s, "PATCH", "/edges/https/"+id, s.keyA, `{"hostports":[]}`), 200,
			strings.Replace(httpsEdge, `"description":""`, `"description":"web"`, 1), "id", id, "hostports", `[]`)
	})
}

// The original client's inline modules: a route created with its modules
// ({"match":"/","match_type":"path_prefix","backend":{...},
// "compression":{...}}), and TLS and TCP edges with theirs, as raw HTTP.
func TestE2EInlineModules(t *testing.T) {
	s := newE2E(t)
	bk := create(t, s, s.keyA, "/backends/tunnel_group", `{"labels":{"app":"web"}}`, "bkdtg_")
	pol := create(t, s, s.keyA, "/ip_policies", `{}`, "ipp_")
	edge := create(t, s, s.keyA, "/edges/https", `{}`, "edghts_")
	bkRef := `{"id":"` + bk + `","uri":"` + base + `/backends/tunnel_group/` + bk + `"}`
	polRef := `{"id":"` + pol + `","uri":"` + base + `/ip_policies/` + pol + `"}`

	routes := "/edges/https/" + edge + "/routes"
	r := call(t, s, "POST", routes, s.keyA, `{"match":"/","match_type":"path_prefix","backend":{"backend_id":"`+bk+`"},"compression":{"enabled":true}}`)
	route := wantID(t, r.json["id"], "edghtsrt_")
	const routeJSON = `{"id":"{{id}}","uri":"` + base + `/edges/https/{{edge}}/routes/{{id}}","edge_id":"{{edge}}","created_at":"` + t0 + `",
		"description":"","metadata":"","match_type":"path_prefix","match":"/",
		"oidc":null,"backend":{"enabled":true,"backend":{{bk}}},"response_headers":{{rh}},"compression":{"enabled":true},"traffic_policy":null}`
	exact(t, r, 201, routeJSON, "id", route, "edge", edge, "bk", bkRef, "rh", "null")
	exact(t, call(t, s, "GET", routes+"/"+route, s.keyA, ""), 200, routeJSON, "id", route, "edge", edge, "bk", bkRef, "rh", "null")
	exact(t, call(t, s, "GET", routes+"/"+route+"/backend", s.keyA, ""), 200, `{"enabled":true,"backend":`+bkRef+`}`)

	// An update replaces the modules it gives and keeps the others.
	exact(t, call(t, s, "PATCH", routes+"/"+route, s.keyA, `{"response_headers":{"add":{"X-Frame-Options":"DENY"}}}`), 200, routeJSON,
		"id", route, "edge", edge, "bk", bkRef, "rh", `{"enabled":true,"add":{"x-frame-options":"DENY"},"remove":[]}`)

	// One validation: the per-module rules, named under the module.
	checkError(t, call(t, s, "POST", routes, s.keyA, `{"match":"/x","match_type":"exact_path","backend":{"backend_id":"nope"},"compression":{"enabled":"yes"}}`),
		apiError{status: 400, code: errInvalid, fields: []string{"compression.enabled"}})
	checkError(t, call(t, s, "POST", routes, s.keyA, `{"match":"/x","match_type":"exact_path","backend":{"backend_id":"nope"},"oidc":{"issuer":"http://id.example.com"}}`),
		apiError{status: 400, code: errInvalid, fields: []string{"backend.backend_id", "oidc.issuer", "oidc.client_id", "oidc.client_secret"}})
	checkError(t, call(t, s, "POST", routes, s.keyA, `{"match":"/x","match_type":"exact_path","backend":{"backend_id":"bkdtg_`+strings.Repeat("0", 27)+`"}}`),
		apiError{status: 400, code: errInvalid, fields: []string{"backend.backend_id"}, msg: []string{"not found in this account"}})
	checkError(t, call(t, s, "PATCH", routes+"/"+route, s.keyA, `{"backend":{"backend_id":"x","bogus":1}}`),
		apiError{status: 400, code: errInvalid, fields: []string{"backend.bogus"}})

	// TLS and TCP edges.
	r = call(t, s, "POST", "/edges/tls", s.keyA, `{"ip_restriction":{"ip_policy_ids":["`+pol+`"]},"tls_termination":{"terminate_at":"upstream"}}`)
	tls := wantID(t, r.json["id"], "edgtls_")
	exact(t, r, 201, `{"id":"{{id}}","uri":"`+base+`/edges/tls/{{id}}","created_at":"`+t0+`","description":"","metadata":"","hostports":[],
		"ip_restriction":{"enabled":true,"ip_policies":[`+polRef+`]},"traffic_policy":null,
		"tls_termination":{"enabled":true,"terminate_at":"upstream","min_version":null},"backend":null}`, "id", tls)
	// The TLS edge's backend module (edgeplane's addition to SPEC 2.7): set
	// by its own operation or inline, read back, and it keeps the backend
	// from being deleted, as a TCP edge's does.
	exact(t, call(t, s, "PUT", "/edges/tls/"+tls+"/backend", s.keyA, `{"backend_id":"`+bk+`"}`), 200, `{"enabled":true,"backend":`+bkRef+`}`)
	exact(t, call(t, s, "GET", "/edges/tls/"+tls+"/backend", s.keyA, ""), 200, `{"enabled":true,"backend":`+bkRef+`}`)
	checkError(t, call(t, s, "DELETE", "/backends/tunnel_group/"+bk, s.keyA, ""),
		apiError{status: 409, code: errConflict, msg: []string{"the backend module of TLS edge " + tls}})
	if r := call(t, s, "DELETE", "/edges/tls/"+tls+"/backend", s.keyA, ""); r.status != 204 {
		t.Fatalf("DELETE the TLS edge's backend module: %d %s", r.status, r.body)
	}
	checkError(t, call(t, s, "GET", "/edges/tls/"+tls+"/backend", s.keyA, ""), apiError{status: 404, code: errNotFound})
	r = call(t, s, "POST", "/edges/tls", s.keyA, `{"backend":{"backend_id":"`+bk+`"}}`)
	tls2 := wantID(t, r.json["id"], "edgtls_")
	exact(t, r, 201, `{"id":"{{id}}","uri":"`+base+`/edges/tls/{{id}}","created_at":"`+t0+`","description":"","metadata":"","hostports":[],
		"ip_restriction":null,"traffic_policy":null,"tls_termination":null,"backend":{"enabled":true,"backend":`+bkRef+`}}`, "id", tls2)
	checkError(t, call(t, s, "PATCH", "/edges/tls/"+tls2, s.keyA, `{"backend":{"backend_id":"nope"}}`),
		apiError{status: 400, code: errInvalid, fields: []string{"backend.backend_id"}})
	if r := call(t, s, "DELETE", "/edges/tls/"+tls2, s.keyA, ""); r.status != 204 {
		t.Fatalf("DELETE the second TLS edge: %d %s", r.status, r.body)
	}
	checkError(t, call(t, s, "PATCH", "/edges/tls/"+tls, s.keyA, `{"traffic_policy":{"value":"{\"inbound\":[{\"actions\":[{\"type\":\"deny\"}]}]}"}}`),
		apiError{status: 409, code: errConflict, msg: []string{"terminate_at upstream"}})
	checkError(t, call(t, s, "POST", "/edges/tls", s.keyA, `{"traffic_policy":{"value":"{\"inbound\":[{\"expressions\":[\"(\"],\"actions\":[{\"type\":\"deny\"}]}]}"}}`),
		apiError{status: 400, code: errInvalid, fields: []string{"traffic_policy.value.inbound[0].expressions[0]"}})
	r = call(t, s, "POST", "/edges/tcp", s.keyA, `{"backend":{"backend_id":"`+bk+`"}}`)
	tcp := wantID(t, r.json["id"], "edgtcp_")
	exact(t, r, 201, `{"id":"{{id}}","uri":"`+base+`/edges/tcp/{{id}}","created_at":"`+t0+`","description":"","metadata":"","hostports":[],
		"ip_restriction":null,"backend":{"enabled":true,"backend":`+bkRef+`}}`, "id", tcp)
	checkError(t, call(t, s, "DELETE", "/backends/tunnel_group/"+bk, s.keyA, ""),
		apiError{status: 409, code: errConflict, msg: []string{"the backend module of TCP edge " + tcp}})
}

// The original client's subscription create with its sources, as raw
// HTTP.
func TestE2ESubscriptionSources(t *testing.T) {
	s := newE2E(t)
	r := call(t, s, "POST", "/event_subscriptions", s.keyA, `{"sources":[{"type":"ip_policy_created.v0"}]}`)
	id := wantID(t, r.json["id"], "esb_")
	const sub = `{"id":"{{id}}","uri":"` + base + `/event_subscriptions/{{id}}","created_at":"` + t0 + `","description":"","metadata":"",
		"sources":[{"type":"ip_policy_created.v0","uri":"` + base + `/event_subscriptions/{{id}}/sources/ip_policy_created.v0"}],"destinations":[]}`
	exact(t, r, 201, sub, "id", id)
	exact(t, call(t, s, "GET", "/event_subscriptions/"+id, s.keyA, ""), 200, sub, "id", id)
	exact(t, call(t, s, "GET", "/event_subscriptions/"+id+"/sources", s.keyA, ""), 200,
		`{"sources":[{"type":"ip_policy_created.v0","uri":"`+base+`/event_subscriptions/{{id}}/sources/ip_policy_created.v0"}],
		  "uri":"`+base+`/event_subscriptions/{{id}}/sources"}`, "id", id)
	exact(t, call(t, s, "GET", "/event_subscriptions", s.keyA, ""), 200,
		`{"event_subscriptions":[`+sub+`],"uri":"`+base+`/event_subscriptions","next_page_uri":null}`, "id", id)

	checkError(t, call(t, s, "POST", "/event_subscriptions", s.keyA, `{"sources":[{"type":"ip_policy_created.v0"},{"type":"ip_policy_creatd.v0"}]}`),
		apiError{status: 400, code: errInvalid, fields: []string{"sources[1].type"}, msg: []string{`did you mean "ip_policy_created.v0"`}})
	checkError(t, call(t, s, "POST", "/event_subscriptions", s.keyA, `{"sources":[{"type":"ip_policy_created.v0"},{"type":"ip_policy_created.v0"}]}`),
		apiError{status: 400, code: errInvalid, fields: []string{"sources[1].type"}})
	checkError(t, call(t, s, "POST", "/event_subscriptions", s.keyA, `{"sources":[{"kind":"x"}]}`),
		apiError{status: 400, code: errInvalid, fields: []string{"sources[0].kind"}})
	exact(t, call(t, s, "GET", "/event_subscriptions", s.keyA, ""), 200,
		`{"event_subscriptions":[`+sub+`],"uri":"`+base+`/event_subscriptions","next_page_uri":null}`, "id", id)
}
