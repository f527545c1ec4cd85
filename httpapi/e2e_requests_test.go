package httpapi_test

import (
	"strings"
	"testing"
)

// Request framing (httpapi doc): a JSON media type with parameters or in
// another case is JSON; an empty body is the empty object; the body limit
// is 1 MiB inclusive.
func TestE2ERequestFraming(t *testing.T) {
	s := newE2E(t)
	for _, ct := range []string{"application/json; charset=utf-8", "Application/JSON", "application/json;charset=UTF-8"} {
		create(t, s, s.keyA, "/edges/tls", `{}`, "edgtls_")
		r := call(t, s, "POST", "/edges/tcp", s.keyA, `{"description":"x"}`, "Content-Type", ct)
		if r.status != 201 {
			t.Errorf("Content-Type %q: %d %s", ct, r.status, r.body)
		}
	}
	// An empty body, with or without a content type, is {}.
	r := call(t, s, "POST", "/edges/tcp", s.keyA, "")
	if r.status != 201 || r.json["description"] != "" {
		t.Errorf("empty body: %d %s", r.status, r.body)
	}
	e := newEdges(t, s, s.keyA)
	exact(t, call(t, s, "PUT", e.routePath("compression"), s.keyA, ""), 200, `{"enabled":true}`)

	// Exactly 1 MiB is read (and then refused by the field rule); one
	// byte more is 413.
	before := snapshot(t, s, s.keyA)
	pad := 1<<20 - len(`{"description":""}`)
	checkError(t, call(t, s, "POST", "/credentials", s.keyA, `{"description":"`+strings.Repeat("a", pad)+`"}`),
		apiError{status: 400, code: errInvalid, fields: []string{"description"}})
	checkError(t, call(t, s, "POST", "/credentials", s.keyA, `{"description":"`+strings.Repeat("a", pad+1)+`"}`),
		apiError{status: 413, code: errTooLarge})
	unchanged(t, s, s.keyA, before)
}

// A body that is not a JSON object is refused (httpapi doc: wrong types
// are 400), JSON null included: only an empty body stands for {}.
func TestE2ENullBody(t *testing.T) {
	s := newE2E(t)
	before := snapshot(t, s, s.keyA)
	for _, path := range []string{"/credentials", "/ip_policies", "/edges/tls", "/event_subscriptions"} {
		checkError(t, call(t, s, "POST", path, s.keyA, `null`), apiError{status: 400, code: errInvalid})
	}
	unchanged(t, s, s.keyA, before)
}

// Deleting resources in dependency order frees every reference: an edge
// takes its routes and modules along, a subscription its sources; before
// that, the referenced resources are conflicts naming their referrers.
func TestE2ECascadingDeletes(t *testing.T) {
	s := newE2E(t)
	f := newFixture(t, s, s.keyA, "alpha")
	checkError(t, call(t, s, "DELETE", "/backends/tunnel_group/"+f.bk, s.keyA, ""), apiError{status: 409, code: errConflict, msg: []string{f.route, f.tcp}})
	checkError(t, call(t, s, "DELETE", "/ip_policies/"+f.pol, s.keyA, ""), apiError{status: 409, code: errConflict, msg: []string{f.ipx, f.tls, f.tcp}})
	checkError(t, call(t, s, "DELETE", "/tls_certificates/"+f.cert, s.keyA, ""), apiError{status: 409, code: errConflict, msg: []string{f.rd}})
	checkError(t, call(t, s, "DELETE", "/endpoint_configurations/"+f.ec, s.keyA, ""), apiError{status: 409, code: errConflict, msg: []string{f.rd}})

	noContent(t, call(t, s, "DELETE", "/edges/https/"+f.https, s.keyA, ""))
	checkError(t, call(t, s, "GET", "/edges/https/"+f.https+"/routes", s.keyA, ""), apiError{status: 404, code: errNotFound})
	checkError(t, call(t, s, "GET", f.routePath("backend"), s.keyA, ""), apiError{status: 404, code: errNotFound})
	noContent(t, call(t, s, "DELETE", "/edges/tls/"+f.tls, s.keyA, ""))
	noContent(t, call(t, s, "DELETE", "/edges/tcp/"+f.tcp, s.keyA, ""))
	noContent(t, call(t, s, "DELETE", "/backends/tunnel_group/"+f.bk, s.keyA, ""))
	noContent(t, call(t, s, "DELETE", "/ip_restrictions/"+f.ipx, s.keyA, ""))
	noContent(t, call(t, s, "DELETE", "/ip_policies/"+f.pol, s.keyA, ""))
	checkError(t, call(t, s, "GET", "/ip_policy_rules/"+f.rule, s.keyA, ""), apiError{status: 404, code: errNotFound})
	checkError(t, call(t, s, "DELETE", "/event_destinations/"+f.dest, s.keyA, ""), apiError{status: 409, code: errConflict, msg: []string{f.sub}})
	noContent(t, call(t, s, "DELETE", "/event_subscriptions/"+f.sub, s.keyA, ""))
	checkError(t, call(t, s, "GET", "/event_subscriptions/"+f.sub+"/sources/"+f.source, s.keyA, ""), apiError{status: 404, code: errNotFound})
	noContent(t, call(t, s, "DELETE", "/event_destinations/"+f.dest, s.keyA, ""))
	// The agent's endpoint holds its reserved domain until its session
	// goes, here with the credential.
	checkError(t, call(t, s, "DELETE", "/reserved_domains/"+f.rd, s.keyA, ""), apiError{status: 409, code: errConflict, msg: []string{f.endpoint}})
	noContent(t, call(t, s, "DELETE", "/credentials/"+f.cred, s.keyA, ""))
	checkError(t, call(t, s, "GET", "/endpoints/"+f.endpoint, s.keyA, ""), apiError{status: 404, code: errNotFound})
	noContent(t, call(t, s, "DELETE", "/reserved_domains/"+f.rd, s.keyA, ""))
	noContent(t, call(t, s, "DELETE", "/tls_certificates/"+f.cert, s.keyA, ""))
	noContent(t, call(t, s, "DELETE", "/endpoint_configurations/"+f.ec, s.keyA, ""))
	for _, c := range collections {
		if ids := listIDs(t, s, s.keyA, c.path, c.field); len(ids) != 0 {
			t.Errorf("%s still lists %q", c.path, ids)
		}
	}
}
