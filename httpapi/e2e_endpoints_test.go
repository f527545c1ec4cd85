package httpapi_test

import (
	"context"
	"testing"

	"github.com/edgeplane/edgeplane/agents"
)

// Endpoints over the API (the original service's /endpoints, of type
// agent): read-only, since only agents bind them through tunnel servers;
// another account's endpoints do not exist; they go with their session.
func TestE2EEndpoints(t *testing.T) {
	s := newE2E(t)
	ctx := context.Background()
	cr := call(t, s, "POST", "/credentials", s.keyA, `{"acl":["bind:*.example.com"]}`)
	if cr.status != 201 {
		t.Fatalf("POST /credentials: %d %s", cr.status, cr.body)
	}
	cred := cr.json["id"].(string)
	rd := create(t, s, s.keyA, "/reserved_domains", `{"domain":"web.example.com"}`, "rd_")
	session := openSession(t, s, cr.json["token"].(string))
	id := bindEndpoint(t, s, s.keyA, session, "web.example.com")
	acct := principalOf(t, s, fixture{}).AccountID
	tcp, err := s.svc.Host().Tunnels().BindEndpoint(ctx, acct, session, agents.EndpointParams{Proto: "tcp", TCPHost: "tcp.example.test", TCPLow: 20000, TCPHigh: 20000})
	if err == nil {
		t.Fatalf("a restricted credential bound a port the server picks: %+v", tcp)
	}

	endpoint := `{"id":"{{id}}","uri":"` + base + `/endpoints/{{id}}","region":"eu","created_at":"` + t0 + `","updated_at":"` + t0 + `",
		"public_url":"https://web.example.com","url":"https://web.example.com","proto":"https","scheme":"https",
		"hostport":"web.example.com:443","host":"web.example.com","port":443,"type":"agent",
		"metadata":"{\"app\":\"web\"}","description":"the web app",
		"domain":{"id":"{{rd}}","uri":"` + base + `/reserved_domains/{{rd}}"},
		"upstream_url":"http://localhost:3000","traffic_policy":"",
		"tunnel_session":{"id":"{{ts}}","uri":"` + base + `/tunnel_sessions/{{ts}}"},"node":"{{node}}","pooling_enabled":false,"bindings":["public"]}`
	held, err := s.svc.Host().Tunnels().GetTunnelSession(ctx, acct, session)
	if err != nil {
		t.Fatal(err)
	}
	kv := []string{"id", id, "rd", rd, "ts", session, "node", held.Node}
	exact(t, call(t, s, "GET", "/endpoints/"+id, s.keyA, ""), 200, endpoint, kv...)
	exact(t, call(t, s, "GET", "/endpoints", s.keyA, ""), 200,
		`{"endpoints":[`+endpoint+`],"uri":"`+base+`/endpoints","next_page_uri":null}`, kv...)
	exact(t, call(t, s, "GET", `/endpoints?filter=obj.proto=="tcp"`, s.keyA, ""), 200,
		`{"endpoints":[],"uri":"`+base+`/endpoints","next_page_uri":null}`)

	// Another account's endpoint does not exist for it; nor does a
	// missing or malformed one.
	for _, path := range []string{"/endpoints/" + id, "/endpoints/ep_x", "/endpoints/" + session} {
		checkError(t, call(t, s, "GET", path, s.keyB, ""), apiError{status: 404, code: errNotFound})
	}
	if ids := listIDs(t, s, s.keyB, "/endpoints", "endpoints"); len(ids) != 0 {
		t.Errorf("B lists A's endpoints %q", ids)
	}

	// Read-only.
	for _, tc := range []struct{ method, path, allow string }{
		{"POST", "/endpoints", "GET"},
		{"PATCH", "/endpoints/" + id, "GET"},
		{"DELETE", "/endpoints/" + id, "GET"},
	} {
		r := call(t, s, tc.method, tc.path, s.keyA, `{}`)
		checkError(t, r, apiError{status: 405, code: errMethod})
		if r.header.Get("Allow") != tc.allow {
			t.Errorf("%s %s: Allow %q, want %q", tc.method, tc.path, r.header.Get("Allow"), tc.allow)
		}
	}

	// The domain stays reserved while the endpoint is online; deleting
	// the credential removes the session and its endpoint.
	checkError(t, call(t, s, "DELETE", "/reserved_domains/"+rd, s.keyA, ""), apiError{status: 409, code: errConflict, msg: []string{id}})
	noContent(t, call(t, s, "DELETE", "/credentials/"+cred, s.keyA, ""))
	checkError(t, call(t, s, "GET", "/endpoints/"+id, s.keyA, ""), apiError{status: 404, code: errNotFound, msg: []string{"endpoint " + id + " not found"}})
	exact(t, call(t, s, "GET", "/endpoints", s.keyA, ""), 200, `{"endpoints":[],"uri":"`+base+`/endpoints","next_page_uri":null}`)
	noContent(t, call(t, s, "DELETE", "/reserved_domains/"+rd, s.keyA, ""))
}
