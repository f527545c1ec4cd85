package httpapi_test

import (
	"context"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane/backends"
)

// Tunnel group backends over HTTP (SPEC 2.5 and 4.4): exact shapes with
// labels and tunnels [], the list field "backends", PATCH replacing the
// label set, delete; and tunnels as Refs once an agent is online.
func TestE2ETunnelGroupBackends(t *testing.T) {
	s := newE2E(t)
	shape := `{
		"id": "{{id}}", "uri": "` + base + `/backends/tunnel_group/{{id}}", "created_at": "` + t0 + `",
		"description": {{desc}}, "metadata": {{meta}}, "labels": {{labels}}, "tunnels": {{tunnels}}}`

	r := call(t, s, "POST", "/backends/tunnel_group", s.keyA, `{"description":"web tier","metadata":"{\"tier\":1}","labels":{"env":"prod","app":"web"}}`)
	id := wantID(t, r.json["id"], "bkdtg_")
	one := fill(shape, "id", id, "desc", `"web tier"`, "meta", `"{\"tier\":1}"`, "labels", `{"env":"prod","app":"web"}`, "tunnels", `[]`)
	exact(t, r, 201, one)
	exact(t, call(t, s, "GET", "/backends/tunnel_group/"+id, s.keyA, ""), 200, one)

	r = call(t, s, "POST", "/backends/tunnel_group", s.keyA, `{"labels":{"env":"dev"}}`)
	dev := wantID(t, r.json["id"], "bkdtg_")
	devOne := fill(shape, "id", dev, "desc", `""`, "meta", `""`, "labels", `{"env":"dev"}`, "tunnels", `[]`)
	exact(t, r, 201, devOne)
	exact(t, call(t, s, "GET", "/backends/tunnel_group", s.keyA, ""), 200,
		`{"backends": [`+devOne+`,`+one+`], "uri": "`+base+`/backends/tunnel_group", "next_page_uri": null}`)

	// PATCH: fields absent keep their value; labels replace the whole set.
	one = fill(shape, "id", id, "desc", `"web"`, "meta", `"{\"tier\":1}"`, "labels", `{"env":"prod","app":"web"}`, "tunnels", `[]`)
	exact(t, call(t, s, "PATCH", "/backends/tunnel_group/"+id, s.keyA, `{"description":"web"}`), 200, one)
	one = fill(shape, "id", id, "desc", `"web"`, "meta", `"{\"tier\":1}"`, "labels", `{"app":"web"}`, "tunnels", `[]`)
	exact(t, call(t, s, "PATCH", "/backends/tunnel_group/"+id, s.keyA, `{"labels":{"app":"web"}}`), 200, one)
	exact(t, call(t, s, "PATCH", "/backends/tunnel_group/"+id, s.keyA, `{"labels":null,"metadata":null}`), 200, one)

	// An agent comes online with matching labels: the backend lists it as
	// a Ref under /tunnels/.
	cr := call(t, s, "POST", "/credentials", s.keyA, `{"acl":["bind:app=web","bind:zone=*"]}`)
	token, _ := cr.json["token"].(string)
	tn, err := s.svc.Host().RegisterTunnel(context.Background(), token, backends.RegisterTunnelParams{Labels: map[string]string{"app": "web", "zone": "a"}})
	if err != nil {
		t.Fatal(err)
	}
	wantID(t, tn.ID, "tn_")
	withTunnel := fill(shape, "id", id, "desc", `"web"`, "meta", `"{\"tier\":1}"`, "labels", `{"app":"web"}`,
		"tunnels", `[{"id": "`+tn.ID+`", "uri": "`+base+`/tunnels/`+tn.ID+`"}]`)
	exact(t, call(t, s, "GET", "/backends/tunnel_group/"+id, s.keyA, ""), 200, withTunnel)
	exact(t, call(t, s, "GET", "/backends/tunnel_group/"+dev, s.keyA, ""), 200, devOne) // env=dev selects nothing
	if err := s.svc.Host().UnregisterTunnel(context.Background(), tn.AccountID, tn.ID); err != nil {
		t.Fatal(err)
	}
	exact(t, call(t, s, "GET", "/backends/tunnel_group/"+id, s.keyA, ""), 200, one)

	// Label rules: at least one label; key and value characters.
	before := snapshot(t, s, s.keyA)
	for _, tc := range []struct{ method, path, body, field string }{
		{"POST", "/backends/tunnel_group", `{}`, "labels"},
		{"POST", "/backends/tunnel_group", `{"labels":{}}`, "labels"},
		{"POST", "/backends/tunnel_group", `{"labels":{"bad key":"v"}}`, `labels["bad key"]`},
		{"POST", "/backends/tunnel_group", `{"labels":{"k":""}}`, `labels["k"]`},
		{"POST", "/backends/tunnel_group", `{"labels":{"` + strings.Repeat("k", 64) + `":"v"}}`, `labels["` + strings.Repeat("k", 64) + `"]`},
		{"POST", "/backends/tunnel_group", `{"labels":{"k":"` + strings.Repeat("v", 256) + `"}}`, `labels["k"]`},
		{"PATCH", "/backends/tunnel_group/" + id, `{"labels":{}}`, "labels"},
		{"PATCH", "/backends/tunnel_group/" + id, `{"labels":{"k":"a b"}}`, `labels["k"]`},
	} {
		checkError(t, call(t, s, tc.method, tc.path, s.keyA, tc.body), apiError{status: 400, code: errInvalid, fields: []string{tc.field}})
	}
	unchanged(t, s, s.keyA, before)

	noContent(t, call(t, s, "DELETE", "/backends/tunnel_group/"+id, s.keyA, ""))
	checkError(t, call(t, s, "GET", "/backends/tunnel_group/"+id, s.keyA, ""), apiError{status: 404, code: errNotFound, msg: []string{id}})
	checkError(t, call(t, s, "DELETE", "/backends/tunnel_group/"+id, s.keyA, ""), apiError{status: 404, code: errNotFound})
	checkError(t, call(t, s, "PATCH", "/backends/tunnel_group/"+id, s.keyA, `{}`), apiError{status: 404, code: errNotFound})
}
