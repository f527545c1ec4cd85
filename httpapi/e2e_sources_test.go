package httpapi_test

import (
	"strings"
	"testing"
)

// Event sources over HTTP (SPEC 2.6, 4.6 and 6): POST {type} 201 {type,
// uri}; list {sources, uri} newest first without next_page_uri; get;
// PATCH {} 200; delete 204; unknown type 400 naming it; duplicate 409.
func TestE2EEventSources(t *testing.T) {
	s := newE2E(t)
	sub := create(t, s, s.keyA, "/event_subscriptions", `{"description":"audit"}`, "esb_")
	list := "/event_subscriptions/" + sub + "/sources"
	src := func(typ string) string {
		return `{"type":"` + typ + `","uri":"` + base + list + `/` + typ + `"}`
	}

	exact(t, call(t, s, "GET", list, s.keyA, ""), 200, `{"sources":[],"uri":"`+base+list+`"}`)
	exact(t, call(t, s, "POST", list, s.keyA, `{"type":"ip_policy_created.v0"}`), 201, src("ip_policy_created.v0"))
	exact(t, call(t, s, "POST", list, s.keyA, `{"type":"ip_policy_updated.v0"}`), 201, src("ip_policy_updated.v0"))
	exact(t, call(t, s, "GET", list, s.keyA, ""), 200,
		`{"sources":[`+src("ip_policy_updated.v0")+`,`+src("ip_policy_created.v0")+`],"uri":"`+base+list+`"}`)
	exact(t, call(t, s, "GET", list+"/ip_policy_created.v0", s.keyA, ""), 200, src("ip_policy_created.v0"))

	// PATCH with the empty object (or no body, which is the empty
	// object) returns the source unchanged.
	exact(t, call(t, s, "PATCH", list+"/ip_policy_created.v0", s.keyA, `{}`), 200, src("ip_policy_created.v0"))
	exact(t, call(t, s, "PATCH", list+"/ip_policy_created.v0", s.keyA, ``), 200, src("ip_policy_created.v0"))

	before := snapshot(t, s, s.keyA)
	// Duplicate: 409 naming the type.
	checkError(t, call(t, s, "POST", list, s.keyA, `{"type":"ip_policy_created.v0"}`),
		apiError{status: 409, code: errConflict, msg: []string{"ip_policy_created.v0"}})
	// Unknown and malformed types: 400 with a violation of type naming it.
	checkError(t, call(t, s, "POST", list, s.keyA, `{"type":"ip_policy_exploded.v0"}`),
		apiError{status: 400, code: errInvalid, fields: []string{"type"}, msg: []string{"ip_policy_exploded.v0"}})
	for _, typ := range []string{"", "ip_policy_created", "ip_policy_created.v", "IP_POLICY_CREATED.V0", "ip_policy_created.v00",
		"ip policy.v0", strings.Repeat("a", 200) + ".v0"} {
		checkError(t, call(t, s, "POST", list, s.keyA, `{"type":`+jsonString(typ)+`}`),
			apiError{status: 400, code: errInvalid, fields: []string{"type"}})
	}
	checkError(t, call(t, s, "POST", list, s.keyA, `{}`), apiError{status: 400, code: errInvalid, fields: []string{"type"}})
	checkError(t, call(t, s, "POST", list, s.keyA, `{"type":["ip_policy_created.v0"]}`), apiError{status: 400, code: errInvalid, fields: []string{"type"}})
	// The update body is the empty object: any field is unknown.
	checkError(t, call(t, s, "PATCH", list+"/ip_policy_created.v0", s.keyA, `{"type":"ip_policy_deleted.v0"}`),
		apiError{status: 400, code: errInvalid, fields: []string{"type"}})
	// A source the subscription does not have, and a subscription that
	// does not exist, are not found.
	for _, m := range []string{"GET", "PATCH", "DELETE"} {
		body := ""
		if m == "PATCH" {
			body = `{}`
		}
		checkError(t, call(t, s, m, list+"/ip_policy_deleted.v0", s.keyA, body), apiError{status: 404, code: errNotFound, msg: []string{"ip_policy_deleted.v0"}})
		checkError(t, call(t, s, m, "/event_subscriptions/esb_000000000000000000000000000/sources/ip_policy_created.v0", s.keyA, body),
			apiError{status: 404, code: errNotFound})
	}
	checkError(t, call(t, s, "GET", "/event_subscriptions/esb_000000000000000000000000000/sources", s.keyA, ""), apiError{status: 404, code: errNotFound})
	checkError(t, call(t, s, "POST", "/event_subscriptions/esb_000000000000000000000000000/sources", s.keyA, `{"type":"ip_policy_created.v0"}`),
		apiError{status: 404, code: errNotFound})
	unchanged(t, s, s.keyA, before)

	noContent(t, call(t, s, "DELETE", list+"/ip_policy_created.v0", s.keyA, ""))
	checkError(t, call(t, s, "GET", list+"/ip_policy_created.v0", s.keyA, ""), apiError{status: 404, code: errNotFound})
	checkError(t, call(t, s, "DELETE", list+"/ip_policy_created.v0", s.keyA, ""), apiError{status: 404, code: errNotFound})
	exact(t, call(t, s, "GET", list, s.keyA, ""), 200, `{"sources":[`+src("ip_policy_updated.v0")+`],"uri":"`+base+list+`"}`)
	// Removed, the type can be added again.
	exact(t, call(t, s, "POST", list, s.keyA, `{"type":"ip_policy_created.v0"}`), 201, src("ip_policy_created.v0"))

	// Deleting the subscription deletes its sources.
	noContent(t, call(t, s, "DELETE", "/event_subscriptions/"+sub, s.keyA, ""))
	checkError(t, call(t, s, "GET", list, s.keyA, ""), apiError{status: 404, code: errNotFound})
}
