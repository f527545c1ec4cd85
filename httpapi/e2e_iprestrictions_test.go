package httpapi_test

import (
	"net/netip"
	"testing"

	"github.com/edgeplane/edgeplane/httpapi"
	"github.com/edgeplane/edgeplane/ipaccess"
)

// IP restrictions over HTTP (SPEC 2.3 and 4.2): exact shapes with the
// ip_policies Refs, PATCH, type not updatable, delete.
func TestE2EIPRestrictions(t *testing.T) {
	s := newE2E(t)
	p1 := create(t, s, s.keyA, "/ip_policies", `{"description":"office"}`, "ipp_")
	p2 := create(t, s, s.keyA, "/ip_policies", `{"description":"vpn"}`, "ipp_")

	r := call(t, s, "POST", "/ip_restrictions", s.keyA,
		fill(`{"description":"office only","metadata":"{\"team\":\"ops\"}","enforced":true,"type":"dashboard","ip_policy_ids":["{{p1}}","{{p2}}"]}`, "p1", p1, "p2", p2))
	id := wantID(t, r.json["id"], "ipx_")
	one := `{
		"id": "{{id}}", "uri": "` + base + `/ip_restrictions/{{id}}", "created_at": "` + t0 + `",
		"description": "office only", "metadata": "{\"team\":\"ops\"}", "enforced": true, "type": "dashboard",
		"ip_policies": [
			{"id": "{{p1}}", "uri": "` + base + `/ip_policies/{{p1}}"},
			{"id": "{{p2}}", "uri": "` + base + `/ip_policies/{{p2}}"}
		]}`
	vars := []string{"id", id, "p1", p1, "p2", p2}
	exact(t, r, 201, one, vars...)
	exact(t, call(t, s, "GET", "/ip_restrictions/"+id, s.keyA, ""), 200, one, vars...)
	exact(t, call(t, s, "GET", "/ip_restrictions", s.keyA, ""), 200,
		`{"ip_restrictions": [`+one+`], "uri": "`+base+`/ip_restrictions", "next_page_uri": null}`, vars...)

	// PATCH changes only what is present; ip_policy_ids replaces the list.
	patched := `{
		"id": "{{id}}", "uri": "` + base + `/ip_restrictions/{{id}}", "created_at": "` + t0 + `",
		"description": "vpn only", "metadata": "{\"team\":\"ops\"}", "enforced": false, "type": "dashboard",
		"ip_policies": [{"id": "{{p2}}", "uri": "` + base + `/ip_policies/{{p2}}"}]}`
	exact(t, call(t, s, "PATCH", "/ip_restrictions/"+id, s.keyA,
		fill(`{"description":"vpn only","enforced":false,"ip_policy_ids":["{{p2}}"]}`, "p2", p2)), 200, patched, vars...)
	exact(t, call(t, s, "PATCH", "/ip_restrictions/"+id, s.keyA, `{}`), 200, patched, vars...)
	exact(t, call(t, s, "PATCH", "/ip_restrictions/"+id, s.keyA, `{"description":null,"metadata":null,"enforced":null}`), 200, patched, vars...)
	exact(t, call(t, s, "GET", "/ip_restrictions/"+id, s.keyA, ""), 200, patched, vars...)

	// type is not updatable: refused with a violation, nothing changes.
	before := snapshot(t, s, s.keyA)
	checkError(t, call(t, s, "PATCH", "/ip_restrictions/"+id, s.keyA, `{"type":"api"}`),
		apiError{status: 400, code: errInvalid, fields: []string{"type"}})
	checkError(t, call(t, s, "PATCH", "/ip_restrictions/"+id, s.keyA, `{"type":"dashboard","description":"x"}`),
		apiError{status: 400, code: errInvalid, fields: []string{"type"}})
	unchanged(t, s, s.keyA, before)

	// Every type of SPEC 2.3 is accepted; enforced defaults to false.
	for _, typ := range []string{"dashboard", "api", "agent", "endpoints"} {
		r := call(t, s, "POST", "/ip_restrictions", s.keyA, fill(`{"type":"{{t}}","ip_policy_ids":["{{p1}}"]}`, "t", typ, "p1", p1))
		x := wantID(t, r.json["id"], "ipx_")
		exact(t, r, 201, `{
			"id": "{{id}}", "uri": "`+base+`/ip_restrictions/{{id}}", "created_at": "`+t0+`",
			"description": "", "metadata": "", "enforced": false, "type": "{{t}}",
			"ip_policies": [{"id": "{{p1}}", "uri": "`+base+`/ip_policies/{{p1}}"}]}`, "id", x, "t", typ, "p1", p1)
	}

	// A policy named by a restriction cannot be deleted; once the
	// restriction is gone it can.
	checkError(t, call(t, s, "DELETE", "/ip_policies/"+p2, s.keyA, ""), apiError{status: 409, code: errConflict, msg: []string{id}})
	noContent(t, call(t, s, "DELETE", "/ip_restrictions/"+id, s.keyA, ""))
	checkError(t, call(t, s, "GET", "/ip_restrictions/"+id, s.keyA, ""), apiError{status: 404, code: errNotFound, msg: []string{id}})
	checkError(t, call(t, s, "DELETE", "/ip_restrictions/"+id, s.keyA, ""), apiError{status: 404, code: errNotFound})
	checkError(t, call(t, s, "PATCH", "/ip_restrictions/"+id, s.keyA, `{}`), apiError{status: 404, code: errNotFound})
	noContent(t, call(t, s, "DELETE", "/ip_policies/"+p2, s.keyA, ""))

	// References to policies that do not exist name the list entry.
	missing := "ipp_000000000000000000000000000"
	before = snapshot(t, s, s.keyA)
	checkError(t, call(t, s, "POST", "/ip_restrictions", s.keyA, fill(`{"type":"api","ip_policy_ids":["{{p1}}","{{m}}"]}`, "p1", p1, "m", missing)),
		apiError{status: 400, code: errInvalid, fields: []string{"ip_policy_ids[1]"}})
	unchanged(t, s, s.keyA, before)
}

// An IP restriction of type api, through the real listener (the test's
// client connects from 127.0.0.1): an enforced one that would refuse the
// request writing it is refused (400 naming enforced, nothing written);
// one that is not enforced lets requests through, counted as warned; an
// enforced one, written through a trusted proxy on behalf of an allowed
// client, refuses the next request from 127.0.0.1 with 403 naming it and
// changes nothing, lets the allowed client through, leaves the other
// account alone, and stops refusing as soon as the rule that refused is
// deleted.
func TestE2EAPIIPRestrictions(t *testing.T) {
	s := newServer(t, httpapi.Options{RateLimit: -1, TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
	pol := create(t, s, s.keyA, "/ip_policies", `{"description":"no loopback"}`, "ipp_")
	rule := create(t, s, s.keyA, "/ip_policy_rules", fill(`{"cidr":"127.0.0.0/8","action":"deny","ip_policy_id":"{{p}}"}`, "p", pol), "ipr_")
	counts := func() ipaccess.TypeCount { return s.svc.IPRestrictionCounts()[1] }
	if ipaccess.Types[1] != ipaccess.TypeAPI {
		t.Fatal("ipaccess.Types changed order")
	}

	// The self-lockout, at create and at update.
	before := snapshot(t, s, s.keyA)
	checkError(t, call(t, s, "POST", "/ip_restrictions", s.keyA, fill(`{"type":"api","enforced":true,"ip_policy_ids":["{{p}}"]}`, "p", pol)),
		apiError{status: 400, code: errInvalid, fields: []string{"enforced"}, msg: []string{"127.0.0.1", "lock the account out", "enforced: false"}})
	unchanged(t, s, s.keyA, before)
	x := create(t, s, s.keyA, "/ip_restrictions", fill(`{"type":"api","enforced":false,"ip_policy_ids":["{{p}}"]}`, "p", pol), "ipx_")
	before = snapshot(t, s, s.keyA)
	checkError(t, call(t, s, "PATCH", "/ip_restrictions/"+x, s.keyA, `{"enforced":true}`),
		apiError{status: 400, code: errInvalid, fields: []string{"enforced"}, msg: []string{"127.0.0.1"}})
	unchanged(t, s, s.keyA, before)
	if c := counts(); c.Warned == 0 || c.Refused != 0 {
		t.Errorf("api decisions %+v; want warnings only, while the restriction is not enforced", c)
	}

	// Enforced on behalf of 198.51.100.7 through the trusted proxy.
	allowed := []string{"X-Forwarded-For", "198.51.100.7"}
	r := call(t, s, "PATCH", "/ip_restrictions/"+x, s.keyA, `{"enforced":true}`, allowed...)
	if r.status != 200 {
		t.Fatalf("enforcing from an allowed client: %d %s", r.status, r.body)
	}
	before = snapshotFrom(t, s, s.keyA, allowed...)
	for _, req := range []struct{ method, path, body string }{
		{"GET", "/credentials", ""},
		{"POST", "/credentials", `{"description":"from a refused address"}`},
		{"DELETE", "/ip_restrictions/" + x, ""},
	} {
		checkError(t, call(t, s, req.method, req.path, s.keyA, req.body),
			apiError{status: 403, code: "ERR_SERVICE_104", msg: []string{x, "127.0.0.1"}})
		// An X-Forwarded-For from a proxy that is not trusted, or past the
		// trusted one, names no one but the untrusted hop.
		checkError(t, call(t, s, req.method, req.path, s.keyA, req.body, "X-Forwarded-For", "198.51.100.7, 127.0.0.9"),
			apiError{status: 403, code: "ERR_SERVICE_104", msg: []string{"127.0.0.9"}})
	}
	if got := snapshotFrom(t, s, s.keyA, allowed...); got != before {
		t.Errorf("refused requests changed the account:\n%s\nwant\n%s", got, before)
	}
	if r := call(t, s, "GET", "/credentials", s.keyB, ""); r.status != 200 {
		t.Errorf("account B from 127.0.0.1: %d; another account's restriction must not apply", r.status)
	}
	if c := counts(); c.Refused != 6 {
		t.Errorf("api decisions %+v; want 6 refused", c)
	}

	// The rule that refused is deleted (on behalf of the allowed client):
	// the next request from 127.0.0.1 goes through.
	noContent(t, call(t, s, "DELETE", "/ip_policy_rules/"+rule, s.keyA, "", allowed...))
	if r := call(t, s, "GET", "/credentials", s.keyA, ""); r.status != 200 {
		t.Errorf("after the rule was deleted: %d %s", r.status, r.body)
	}
}
