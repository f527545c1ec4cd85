package httpapi_test

import (
	"testing"
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
