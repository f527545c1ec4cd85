package httpapi_test

import (
	"context"
	"testing"

	"github.com/edgeplane/edgeplane/agents"
)

// Tunnel sessions over the API, as the original service's client uses
// them (tunnel_sessions/client.go: List, Get, and Stop, a POST of {}
// answered without a body): read-only but for stop, and another
// account's sessions do not exist.
func TestE2ETunnelSessions(t *testing.T) {
	s := newE2E(t)
	ctx := context.Background()
	cr := call(t, s, "POST", "/credentials", s.keyA, `{"acl":["bind:app=*"]}`)
	if cr.status != 201 {
		t.Fatalf("POST /credentials: %d %s", cr.status, cr.body)
	}
	cred := cr.json["id"].(string)
	id := openSession(t, s, cr.json["token"].(string))
	acct := principalOf(t, s, fixture{}).AccountID
	tn, err := s.svc.Host().Tunnels().StartLabeledTunnel(ctx, acct, id, agents.LabeledTunnelParams{Labels: map[string]string{"app": "web"}, ForwardsTo: "app://laptop"})
	if err != nil {
		t.Fatal(err)
	}
	held, err := s.svc.Host().Tunnels().GetTunnelSession(ctx, acct, id)
	if err != nil {
		t.Fatal(err)
	}
	node := held.Node

	session := `{"id":"{{id}}","uri":"` + base + `/tunnel_sessions/{{id}}","agent_version":"3.18.4",
		"credential":{"id":"{{cred}}","uri":"` + base + `/credentials/{{cred}}"},"ip":"203.0.113.7","metadata":"","os":"linux/amd64",
		"region":"eu","started_at":"` + t0 + `","transport":"ngrok/2","node":"{{node}}"}`
	exact(t, call(t, s, "GET", "/tunnel_sessions/"+id, s.keyA, ""), 200, session, "id", id, "cred", cred, "node", node)
	exact(t, call(t, s, "GET", "/tunnel_sessions", s.keyA, ""), 200,
		`{"tunnel_sessions":[`+session+`],"uri":"`+base+`/tunnel_sessions","next_page_uri":null}`, "id", id, "cred", cred, "node", node)
	exact(t, call(t, s, "GET", "/tunnels/"+tn.ID, s.keyA, ""), 200, `{"id":"{{tn}}","uri":"`+base+`/tunnels/{{tn}}","account_id":"{{acct}}",
		"started_at":"`+t0+`","labels":{"app":"web"},"credential":{"id":"{{cred}}","uri":"`+base+`/credentials/{{cred}}"},
		"forwards_to":"app://laptop",
		"tunnel_session":{"id":"{{id}}","uri":"`+base+`/tunnel_sessions/{{id}}"},"node":"{{node}}"}`, "tn", tn.ID, "acct", acct, "id", id, "cred", cred, "node", node)

	// Another account's session does not exist for it; nor does a
	// missing or malformed one.
	for _, path := range []string{"/tunnel_sessions/" + id, "/tunnel_sessions/ts_x", "/tunnel_sessions/" + cred} {
		checkError(t, call(t, s, "GET", path, s.keyB, ""), apiError{status: 404, code: errNotFound})
		checkError(t, call(t, s, "POST", path+"/stop", s.keyB, `{}`), apiError{status: 404, code: errNotFound})
	}
	if ids := listIDs(t, s, s.keyB, "/tunnel_sessions", "tunnel_sessions"); len(ids) != 0 {
		t.Errorf("B lists A's sessions %q", ids)
	}
	stopped := func() bool {
		t.Helper()
		ts, err := s.svc.Host().Tunnels().GetTunnelSession(ctx, acct, id)
		if err != nil {
			t.Fatal(err)
		}
		return ts.StopRequested
	}
	if stopped() {
		t.Fatal("B's stop request marked A's session")
	}

	// Read-only but for stop; stop takes {} or nothing, strictly.
	for _, tc := range []struct{ method, path, allow string }{
		{"POST", "/tunnel_sessions", "GET"},
		{"PATCH", "/tunnel_sessions/" + id, "GET"},
		{"DELETE", "/tunnel_sessions/" + id, "GET"},
		{"GET", "/tunnel_sessions/" + id + "/stop", "POST"},
	} {
		r := call(t, s, tc.method, tc.path, s.keyA, "")
		checkError(t, r, apiError{status: 405, code: errMethod})
		if r.header.Get("Allow") != tc.allow {
			t.Errorf("%s %s: Allow %q, want %q", tc.method, tc.path, r.header.Get("Allow"), tc.allow)
		}
	}
	checkError(t, call(t, s, "POST", "/tunnel_sessions/"+id+"/stop", s.keyA, `{"id":"`+id+`"}`),
		apiError{status: 400, code: errInvalid, fields: []string{"id"}})
	if stopped() {
		t.Fatal("a refused stop request marked the session")
	}
	r := call(t, s, "POST", "/tunnel_sessions/"+id+"/stop", s.keyA, `{}`)
	noContent(t, r)
	if r.header.Get("Connection") == "close" {
		t.Error("the stop request's body was left unread (Connection: close)")
	}
	if !stopped() {
		t.Error("the stop request did not mark the session")
	}
	noContent(t, call(t, s, "POST", "/tunnel_sessions/"+id+"/stop", s.keyA, ""))
	// The mark is not shown.
	exact(t, call(t, s, "GET", "/tunnel_sessions/"+id, s.keyA, ""), 200, session, "id", id, "cred", cred, "node", node)

	// Deleting the credential removes the session and its tunnel.
	noContent(t, call(t, s, "DELETE", "/credentials/"+cred, s.keyA, ""))
	checkError(t, call(t, s, "GET", "/tunnel_sessions/"+id, s.keyA, ""), apiError{status: 404, code: errNotFound, msg: []string{"tunnel session " + id + " not found"}})
	checkError(t, call(t, s, "GET", "/tunnels/"+tn.ID, s.keyA, ""), apiError{status: 404, code: errNotFound})
	checkError(t, call(t, s, "POST", "/tunnel_sessions/"+id+"/stop", s.keyA, `{}`), apiError{status: 404, code: errNotFound})
	exact(t, call(t, s, "GET", "/tunnel_sessions", s.keyA, ""), 200, `{"tunnel_sessions":[],"uri":"`+base+`/tunnel_sessions","next_page_uri":null}`)
}
