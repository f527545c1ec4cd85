package edgeplane_test

import (
	"context"
	"encoding/json"
	"net/netip"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/credentials"
	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/identity"
	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/resource"
	"github.com/edgeplane/edgeplane/sqlitestore"
	"github.com/edgeplane/edgeplane/store"
)

// agentParams are what a tunnel server knows of a typical agent.
var agentParams = agents.SessionParams{AgentVersion: "3.18.4", OS: "linux/amd64", ClientType: "library/official/go",
	Metadata: `{"host":"laptop"}`, IP: netip.MustParseAddr("203.0.113.7"), Region: "eu", StopSupported: true}

// session opens a tunnel session with token, as a tunnel server does when
// an agent connects, on the env's node (registered by the first session).
func (e *env) session(t testing.TB, token string) *agents.TunnelSession {
	t.Helper()
	ts, err := e.svc.Host().Tunnels().OpenTunnelSession(e.ctx, token, e.params(t))
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// params returns agentParams on the env's node, registering it first.
func (e *env) params(t testing.TB) agents.SessionParams {
	t.Helper()
	if e.node == "" {
		n, err := e.svc.Host().Tunnels().RegisterNode(e.ctx, agents.NodeParams{Addr: "10.0.0.1:4443", Region: "eu", Version: "1.0"})
		if err != nil {
			t.Fatal(err)
		}
		e.node = n.ID
	}
	p := agentParams
	p.Node = e.node
	return p
}

// labeled starts a labeled tunnel in the session of account.
func (e *env) labeled(t testing.TB, account, sessionID string, labels map[string]string) *backends.Tunnel {
	t.Helper()
	tn, err := e.svc.Host().Tunnels().StartLabeledTunnel(e.ctx, account, sessionID, agents.LabeledTunnelParams{Labels: labels, ForwardsTo: "app://laptop/server?pid=1234"})
	if err != nil {
		t.Fatal(err)
	}
	return tn
}

func TestOpenTunnelSession(t *testing.T) {
	e := newEnv(t)
	cred, token := e.token(t, e.user)
	ts := e.session(t, token)
	want := &agents.TunnelSession{
		ID:           ts.ID,
		URI:          "https://api.example.test/tunnel_sessions/" + ts.ID,
		AccountID:    e.user.AccountID, // not shown (json:"-"): the tunnel server's
		AgentVersion: "3.18.4",
		Credential:   resource.Ref{ID: cred.ID, URI: "https://api.example.test/credentials/" + cred.ID},
		IP:           "203.0.113.7",
		Metadata:     `{"host":"laptop"}`,
		OS:           "linux/amd64",
		Region:       "eu",
		StartedAt:    time.Date(2026, 11, 21, 9, 30, 15, 0, time.UTC),
		Transport:    "ngrok/2",
		Node:         e.node,
	}
	if diff := cmp.Diff(want, ts); diff != "" {
		t.Errorf("OpenTunnelSession (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(ts.ID, agents.SessionPrefix) || len(ts.ID) != len(agents.SessionPrefix)+27 {
		t.Errorf("session ID %q", ts.ID)
	}
	got, err := e.svc.GetTunnelSession(e.ctx, e.admin, ts.ID)
	if diff := cmp.Diff(want, got); err != nil || diff != "" {
		t.Errorf("GetTunnelSession (%v) (-want +got):\n%s", err, diff)
	}
	got, err = e.svc.Host().Tunnels().GetTunnelSession(e.ctx, e.user.AccountID, ts.ID)
	if diff := cmp.Diff(want, got); err != nil || diff != "" {
		t.Errorf("TunnelHost.GetTunnelSession (%v) (-want +got):\n%s", err, diff)
	}
	page, err := e.svc.ListTunnelSessions(e.ctx, e.bot, edgeplane.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]agents.TunnelSession{*want}, page.Items); diff != "" {
		t.Errorf("ListTunnelSessions (-want +got):\n%s", diff)
	}
	if page.URI != "https://api.example.test/tunnel_sessions" || page.NextPageURI != nil {
		t.Errorf("list uri %q, next %v", page.URI, page.NextPageURI)
	}

	// What only the tunnel server knows is not shown.
	b, _ := json.Marshal(got)
	var keys []string
	var obj map[string]any
	json.Unmarshal(b, &obj)
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if want := []string{"agent_version", "credential", "id", "ip", "metadata", "node", "os", "region", "started_at", "transport", "uri"}; !slices.Equal(keys, want) {
		t.Errorf("session JSON keys %q, want %q: %s", keys, want, b)
	}

	// Another account sees nothing of it.
	_, err = e.svc.GetTunnelSession(e.ctx, e.other, ts.ID)
	wantNotFoundNaming(t, err, ts.ID)
	_, err = e.svc.Host().Tunnels().GetTunnelSession(e.ctx, e.other.AccountID, ts.ID)
	wantNotFoundNaming(t, err, ts.ID)
	if page, err := e.svc.ListTunnelSessions(e.ctx, e.other, edgeplane.ListOptions{}); err != nil || len(page.Items) != 0 {
		t.Errorf("another account lists %+v, %v", page, err)
	}
	for _, id := range []string{"ts_bad", "", cred.ID} {
		_, err := e.svc.GetTunnelSession(e.ctx, e.user, id)
		wantCode(t, err, apierr.NotFound)
		_, err = e.svc.Host().Tunnels().GetTunnelSession(e.ctx, e.user.AccountID, id)
		wantCode(t, err, apierr.NotFound)
	}
}

// TestListTunnelSessions: newest first, paged, filtered on the fields the
// API shows.
func TestListTunnelSessions(t *testing.T) {
	e := newEnv(t)
	_, token := e.token(t, e.user)
	var want []string
	for range 3 {
		e.clock.Advance(time.Second)
		want = append([]string{e.session(t, token).ID}, want...)
	}
	var got []string
	for ts, err := range edgeplane.AllWith(e.ctx, e.user, e.svc.ListTunnelSessions, edgeplane.ListOptions{Limit: 1}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ts.ID)
	}
	if !slices.Equal(got, want) {
		t.Errorf("walk %q, want %q (newest first)", got, want)
	}
	page, err := e.svc.ListTunnelSessions(e.ctx, e.user, edgeplane.ListOptions{Filter: `obj.os == "linux/amd64" && obj.transport == "ngrok/2" && obj.id == "` + want[1] + `"`})
	if err != nil || len(page.Items) != 1 || page.Items[0].ID != want[1] {
		t.Errorf("filtered: %+v, %v", page, err)
	}
	_, err = e.svc.ListTunnelSessions(e.ctx, e.user, edgeplane.ListOptions{Filter: `obj.client_type == ""`})
	wantViolation(t, err, "filter", "")
}

func TestOpenTunnelSessionRefusals(t *testing.T) {
	e := newEnv(t)
	_, token := e.token(t, e.user)
	_, botToken := e.token(t, e.bot)
	if _, err := e.svc.UpdateBotUser(e.ctx, e.admin, e.bot.SubjectID, identity.UpdateBotUserParams{Active: ptr(false)}); err != nil {
		t.Fatal(err)
	}
	long := func(n int) string { return strings.Repeat("x", n) }
	base := e.params(t)
	ended, err := e.svc.Host().Tunnels().RegisterNode(e.ctx, agents.NodeParams{})
	if err != nil {
		t.Fatal(err)
	}
	removed, err := e.svc.Host().Tunnels().RegisterNode(e.ctx, agents.NodeParams{})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.svc.Host().Tunnels().RemoveNode(e.ctx, removed.ID); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(edgeplane.DefaultTunnelLease) // ended's lease ends; renew the env's node
	if _, err := e.svc.Host().Tunnels().RenewNode(e.ctx, e.node); err == nil {
		t.Fatal("a node renewed past its lease")
	}
	base.Node = e.registerNode(t)
	tests := []struct {
		name   string
		token  string
		params func(p *agents.SessionParams)
		code   apierr.Code
		fields []string // violated fields for invalid argument
	}{
		{name: "unknown token", token: "not-a-token", code: apierr.Unauthenticated},
		{name: "no token", token: "", code: apierr.Unauthenticated},
		{name: "a deactivated bot's token", token: botToken, code: apierr.Unauthenticated},
		{name: "bad token wins over bad params", token: "not-a-token", params: func(p *agents.SessionParams) { p.OS = long(1000) }, code: apierr.Unauthenticated},
		{name: "agent version too long", token: token, params: func(p *agents.SessionParams) { p.AgentVersion = long(agents.MaxVersionBytes + 1) },
			code: apierr.InvalidArgument, fields: []string{"agent_version"}},
		{name: "metadata too long", token: token, params: func(p *agents.SessionParams) { p.Metadata = long(agents.MaxMetadataBytes + 1) },
			code: apierr.InvalidArgument, fields: []string{"metadata"}},
		{name: "every field named", token: token, params: func(p *agents.SessionParams) {
			p.OS, p.ClientType, p.Region = long(agents.MaxOSBytes+1), long(agents.MaxClientTypeBytes+1), "\xff"
		}, code: apierr.InvalidArgument, fields: []string{"os", "client_type", "region"}},
		{name: "no node", token: token, params: func(p *agents.SessionParams) { p.Node = "" },
			code: apierr.InvalidArgument, fields: []string{"node"}},
		{name: "a node whose lease ended", token: token, params: func(p *agents.SessionParams) { p.Node = ended.ID },
			code: apierr.InvalidArgument, fields: []string{"node"}},
		{name: "a removed node", token: token, params: func(p *agents.SessionParams) { p.Node = removed.ID },
			code: apierr.InvalidArgument, fields: []string{"node"}},
		{name: "not a node ID", token: token, params: func(p *agents.SessionParams) { p.Node = "ts_1" },
			code: apierr.InvalidArgument, fields: []string{"node"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			params := base
			if tc.params != nil {
				tc.params(&params)
			}
			_, err := e.svc.Host().Tunnels().OpenTunnelSession(e.ctx, tc.token, params)
			wantCode(t, err, tc.code)
			var fields []string
			for _, v := range apierr.ViolationsOf(err) {
				fields = append(fields, v.Field)
			}
			if !slices.Equal(fields, tc.fields) {
				t.Errorf("violations %q, want %q", fields, tc.fields)
			}
			if tc.code == apierr.Unauthenticated && err.Error() != "the authtoken is missing, malformed or unknown" {
				t.Errorf("message %q: every refused token gets the same one", err)
			}
		})
	}
	page, _ := e.svc.ListTunnelSessions(e.ctx, e.user, edgeplane.ListOptions{})
	if len(page.Items) != 0 {
		t.Errorf("refused sessions were stored: %+v", page.Items)
	}
	// At the bounds, and without an address: accepted.
	_, err = e.svc.Host().Tunnels().OpenTunnelSession(e.ctx, token, agents.SessionParams{AgentVersion: long(agents.MaxVersionBytes), Metadata: long(agents.MaxMetadataBytes), Node: base.Node})
	if err != nil {
		t.Errorf("at the bounds: %v", err)
	}
}

func TestStartLabeledTunnel(t *testing.T) {
	e := newEnv(t)
	acct := e.user.AccountID
	cred, token := e.token(t, e.user, "bind:env=prod", "bind:app=*", "bind:*=shared")
	ts := e.session(t, token)
	e.clock.Advance(10 * time.Second)
	tn, err := e.svc.Host().Tunnels().StartLabeledTunnel(e.ctx, acct, ts.ID, agents.LabeledTunnelParams{
		Labels: map[string]string{"env": "prod", "app": "api"}, ForwardsTo: "app://laptop/server?pid=1234", Metadata: "m"})
	if err != nil {
		t.Fatal(err)
	}
	want := &backends.Tunnel{
		ID:            tn.ID,
		URI:           "https://api.example.test/tunnels/" + tn.ID,
		AccountID:     acct,
		StartedAt:     time.Date(2026, 11, 21, 9, 30, 25, 0, time.UTC),
		Labels:        map[string]string{"env": "prod", "app": "api"},
		Credential:    resource.Ref{ID: cred.ID, URI: "https://api.example.test/credentials/" + cred.ID},
		ForwardsTo:    "app://laptop/server?pid=1234",
		TunnelSession: &resource.Ref{ID: ts.ID, URI: "https://api.example.test/tunnel_sessions/" + ts.ID},
		Node:          ts.Node, // online while its node's lease is: no lease of its own
		Metadata:      "m",
	}
	if diff := cmp.Diff(want, tn); diff != "" {
		t.Errorf("StartLabeledTunnel (-want +got):\n%s", diff)
	}
	got, err := e.svc.GetTunnel(e.ctx, e.user, tn.ID)
	if diff := cmp.Diff(want, got); err != nil || diff != "" {
		t.Errorf("GetTunnel (%v) (-want +got):\n%s", err, diff)
	}
	b, _ := json.Marshal(got)
	if !strings.Contains(string(b), `"tunnel_session":{"id":"`+ts.ID+`"`) || !strings.Contains(string(b), `"metadata":"m"`) {
		t.Errorf("tunnel JSON %s", b)
	}

	// The ACL as it is now: narrowing it applies to the next tunnel.
	if _, err := e.svc.UpdateCredential(e.ctx, e.user, cred.ID, credentials.UpdateParams{ACL: &[]string{"bind:env=prod"}}); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.Host().Tunnels().StartLabeledTunnel(e.ctx, acct, ts.ID, agents.LabeledTunnelParams{Labels: map[string]string{"env": "prod", "app": "api"}})
	wantCode(t, err, apierr.PermissionDenied)
	if !strings.Contains(err.Error(), "does not permit binding the labels app=api;") {
		t.Errorf("message %q", err)
	}

	// Each ACL, with labels it permits and does not.
	for _, tc := range []struct {
		name   string
		acl    []string
		labels map[string]string
		denied string // "" for allowed; else the labels the error names
	}{
		{"exact rule", []string{"bind:env=prod"}, map[string]string{"env": "prod"}, ""},
		{"exact rule, other value", []string{"bind:env=prod"}, map[string]string{"env": "dev"}, "env=dev"},
		{"wildcard value", []string{"bind:env=*"}, map[string]string{"env": "anything"}, ""},
		{"wildcard value, other key", []string{"bind:env=*"}, map[string]string{"env": "x", "team": "a", "app": "b"}, "app=b, team=a"},
		{"wildcard key", []string{"bind:*=shared"}, map[string]string{"any": "shared"}, ""},
		{"empty ACL", nil, map[string]string{"any": "thing"}, ""},
		{"star", []string{"*"}, map[string]string{"any": "thing"}, ""},
		{"domain rules only", []string{"bind:*.example.com"}, map[string]string{"env": "prod"}, "env=prod"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, token := e.token(t, e.user, tc.acl...)
			ts := e.session(t, token)
			tn, err := e.svc.Host().Tunnels().StartLabeledTunnel(e.ctx, acct, ts.ID, agents.LabeledTunnelParams{Labels: tc.labels})
			if tc.denied == "" {
				if err != nil || tn.TunnelSession.ID != ts.ID {
					t.Fatalf("StartLabeledTunnel = %+v, %v", tn, err)
				}
				return
			}
			wantCode(t, err, apierr.PermissionDenied)
			if !strings.Contains(err.Error(), "labels "+tc.denied+";") {
				t.Errorf("message %q does not name %s", err, tc.denied)
			}
		})
	}

	// Invalid params, each named; forwards_to is any text within its bound.
	_, open := e.token(t, e.user)
	live := e.session(t, open)
	for _, tc := range []struct {
		name   string
		params agents.LabeledTunnelParams
		fields []string
	}{
		{"no labels", agents.LabeledTunnelParams{}, []string{"labels"}},
		{"invalid label", agents.LabeledTunnelParams{Labels: map[string]string{"env": "a b"}}, []string{`labels["env"]`}},
		{"too many labels", agents.LabeledTunnelParams{Labels: labelsN(33)}, []string{"labels"}},
		{"forwards_to too long", agents.LabeledTunnelParams{Labels: map[string]string{"a": "b"}, ForwardsTo: strings.Repeat("x", agents.MaxForwardsToBytes+1)},
			[]string{"forwards_to"}},
		{"everything", agents.LabeledTunnelParams{Labels: map[string]string{"": "b"}, ForwardsTo: "\xff", Metadata: strings.Repeat("m", agents.MaxMetadataBytes+1)},
			[]string{`labels[""]`, "forwards_to", "metadata"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.svc.Host().Tunnels().StartLabeledTunnel(e.ctx, acct, live.ID, tc.params)
			wantCode(t, err, apierr.InvalidArgument)
			var fields []string
			for _, v := range apierr.ViolationsOf(err) {
				fields = append(fields, v.Field)
			}
			if !slices.Equal(fields, tc.fields) {
				t.Errorf("violations %q, want %q", fields, tc.fields)
			}
		})
	}
	for _, to := range []string{"", "http://localhost:3000/app?x=1", "app://laptop/server?pid=1234", "日本語", strings.Repeat("x", agents.MaxForwardsToBytes)} {
		tn, err := e.svc.Host().Tunnels().StartLabeledTunnel(e.ctx, acct, live.ID, agents.LabeledTunnelParams{Labels: map[string]string{"a": "b"}, ForwardsTo: to})
		if err != nil || tn.ForwardsTo != to {
			t.Errorf("forwards_to %q: %+v, %v", to, tn, err)
		}
	}

	// A session that is gone, or never was, or is another account's.
	closed := e.session(t, open)
	if err := e.svc.Host().Tunnels().CloseTunnelSession(e.ctx, acct, closed.ID); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, account, session string }{
		{"closed", acct, closed.ID},
		{"another account's", e.other.AccountID, live.ID},
		{"malformed", acct, "ts_x"},
		{"a tunnel's ID", acct, tn.ID},
		{"malformed account", "acct_x", live.ID},
	} {
		t.Run("gone: "+tc.name, func(t *testing.T) {
			_, err := e.svc.Host().Tunnels().StartLabeledTunnel(e.ctx, tc.account, tc.session, agents.LabeledTunnelParams{Labels: map[string]string{"a": "b"}})
			wantNotFoundNaming(t, err, tc.session)
			if !strings.Contains(err.Error(), "tunnel session") {
				t.Errorf("message %q does not say what is not found", err)
			}
		})
	}

	// A session whose lease ended (not reaped yet) starts no tunnel.
	e.clock.Advance(2 * edgeplane.DefaultTunnelLease)
	_, err = e.svc.Host().Tunnels().StartLabeledTunnel(e.ctx, acct, live.ID, agents.LabeledTunnelParams{Labels: map[string]string{"a": "b"}})
	wantCode(t, err, apierr.FailedPrecondition)
}

// TestSessionTunnelsSelected: a backend selects the labeled tunnels of
// agents' sessions as it selects tunnels a host registered, through the
// label index and within their leases.
func TestSessionTunnelsSelected(t *testing.T) {
	e := newEnv(t)
	acct := e.user.AccountID
	_, token := e.token(t, e.user)
	ts := e.session(t, token)
	registered := e.tunnel(t, token, map[string]string{"app": "web"})
	agent := e.labeled(t, acct, ts.ID, map[string]string{"app": "web", "env": "prod"})
	e.labeled(t, acct, ts.ID, map[string]string{"app": "api"})
	b := e.backend(t, e.user, map[string]string{"app": "web"})
	got, err := e.svc.Host().DataPlane().BackendTunnels(e.ctx, acct, b.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]backends.Tunnel{*agent, *registered}, got); diff != "" {
		t.Errorf("BackendTunnels (-want +got):\n%s", diff)
	}
	shown, err := e.svc.GetTunnelGroupBackend(e.ctx, e.user, b.ID)
	if err != nil || len(shown.Tunnels) != 2 || shown.Tunnels[0].ID != agent.ID {
		t.Errorf("the backend shows %+v, %v", shown, err)
	}
	// Once the lease of the session's node ends, its tunnels are no
	// longer selected.
	e.clock.Advance(edgeplane.DefaultTunnelLease - 10*time.Second)
	if _, err := e.svc.Host().RenewTunnel(e.ctx, acct, registered.ID); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(20 * time.Second)
	got, err = e.svc.Host().DataPlane().BackendTunnels(e.ctx, acct, b.ID)
	if err != nil || len(got) != 1 || got[0].ID != registered.ID {
		t.Errorf("after the node's lease: %+v, %v", got, err)
	}
}

// TestCloseTunnelSession: closing a session removes it and its tunnels,
// and only those, reported as the session's and the tunnels' deletion.
func TestCloseTunnelSession(t *testing.T) {
	rec := &eventRecorder{}
	e, _ := newEventEnv(t, memstore.New(), events.Options{Sink: rec})
	e.subscribe(t, e.user, "tunnel_session_created.v0", "tunnel_session_deleted.v0", "tunnel_created.v0", "tunnel_deleted.v0")
	acct := e.user.AccountID
	_, token := e.token(t, e.user)
	ts := e.session(t, token)
	other := e.session(t, token)
	t1 := e.labeled(t, acct, ts.ID, map[string]string{"app": "web"})
	t2 := e.labeled(t, acct, ts.ID, map[string]string{"app": "api"})
	kept := e.labeled(t, acct, other.ID, map[string]string{"app": "web"})
	registered := e.tunnel(t, token, map[string]string{"app": "web"})

	// A session tunnel can be unregistered alone.
	if err := e.svc.Host().UnregisterTunnel(e.ctx, acct, t2.ID); err != nil {
		t.Fatal(err)
	}
	wantCode(t, e.svc.Host().Tunnels().CloseTunnelSession(e.ctx, e.other.AccountID, ts.ID), apierr.NotFound)
	if err := e.svc.Host().Tunnels().CloseTunnelSession(e.ctx, acct, ts.ID); err != nil {
		t.Fatal(err)
	}
	_, err := e.svc.Host().Tunnels().GetTunnelSession(e.ctx, acct, ts.ID)
	wantNotFoundNaming(t, err, ts.ID)
	_, err = e.svc.GetTunnel(e.ctx, e.user, t1.ID)
	wantCode(t, err, apierr.NotFound)
	page, err := e.svc.ListTunnels(e.ctx, e.user, edgeplane.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, tn := range page.Items {
		left = append(left, tn.ID)
	}
	if want := []string{registered.ID, kept.ID}; !slices.Equal(left, want) {
		t.Errorf("tunnels after closing the session: %q, want %q", left, want)
	}
	err = e.svc.Host().Tunnels().CloseTunnelSession(e.ctx, acct, ts.ID)
	wantNotFoundNaming(t, err, ts.ID)
	wantCode(t, e.svc.Host().Tunnels().CloseTunnelSession(e.ctx, acct, "ts_x"), apierr.NotFound)

	e.closeEvents(t)
	var got []delivery
	for _, ev := range rec.events() {
		var obj struct{ ID, URI string }
		json.Unmarshal(ev.Object, &obj)
		got = append(got, delivery{Type: ev.Type, ObjectID: obj.ID})
		if strings.HasPrefix(ev.Type, "tunnel_session_") && obj.URI != "https://api.example.test/tunnel_sessions/"+obj.ID {
			t.Errorf("%s shows uri %q", ev.Type, obj.URI)
		}
	}
	want := []delivery{
		{Type: "tunnel_session_created.v0", ObjectID: ts.ID},
		{Type: "tunnel_session_created.v0", ObjectID: other.ID},
		{Type: "tunnel_created.v0", ObjectID: t1.ID},
		{Type: "tunnel_created.v0", ObjectID: t2.ID},
		{Type: "tunnel_created.v0", ObjectID: kept.ID},
		{Type: "tunnel_created.v0", ObjectID: registered.ID},
		{Type: "tunnel_deleted.v0", ObjectID: t2.ID},
		{Type: "tunnel_deleted.v0", ObjectID: t1.ID}, // the cascade: children first
		{Type: "tunnel_session_deleted.v0", ObjectID: ts.ID},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// TestDeletingACredentialRemovesItsSessions: on each store, deleting a
// credential removes its sessions and their tunnels in one step, and the
// change feed shows each removal, the session's among them.
func TestDeletingACredentialRemovesItsSessions(t *testing.T) {
	for _, tc := range []struct {
		name  string
		store func(t *testing.T) store.Store
	}{
		{"memstore", func(*testing.T) store.Store { return memstore.New() }},
		{"sqlitestore", func(t *testing.T) store.Store {
			st, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "store.db"), sqlitestore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &eventRecorder{}
			e, _ := newEventEnv(t, tc.store(t), events.Options{Sink: rec})
			e.subscribe(t, e.user, "tunnel_session_deleted.v0", "tunnel_deleted.v0")
			acct := e.user.AccountID
			cred, token := e.token(t, e.user)
			_, keepToken := e.token(t, e.user)
			ts := e.session(t, token)
			tn := e.labeled(t, acct, ts.ID, map[string]string{"app": "web"})
			registered := e.tunnel(t, token, map[string]string{"app": "web"})
			keep := e.session(t, keepToken)
			rev, err := e.store.Revision(e.ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := e.svc.DeleteCredential(e.ctx, e.user, cred.ID); err != nil {
				t.Fatal(err)
			}
			_, err = e.svc.GetTunnelSession(e.ctx, e.user, ts.ID)
			wantCode(t, err, apierr.NotFound)
			_, err = e.svc.GetTunnel(e.ctx, e.user, tn.ID)
			wantCode(t, err, apierr.NotFound)
			_, err = e.svc.Host().Tunnels().StartLabeledTunnel(e.ctx, acct, ts.ID, agents.LabeledTunnelParams{Labels: map[string]string{"a": "b"}})
			wantNotFoundNaming(t, err, ts.ID)
			_, err = e.svc.Host().Tunnels().OpenTunnelSession(e.ctx, token, e.params(t))
			wantCode(t, err, apierr.Unauthenticated)
			if _, err := e.svc.Host().Tunnels().GetTunnelSession(e.ctx, acct, keep.ID); err != nil {
				t.Errorf("another credential's session: %v", err)
			}

			changes, err := e.store.Changes(e.ctx, rev, 100, store.WithData)
			if err != nil {
				t.Fatal(err)
			}
			deleted := map[store.Kind][]string{}
			for _, c := range changes {
				if c.Op != store.OpDelete {
					t.Errorf("change %+v: want deletes only", c)
				}
				deleted[c.Kind] = append(deleted[c.Kind], c.ID)
				if c.Kind == edgeplane.KindTunnelSession && (c.ParentID != cred.ID || !strings.Contains(string(c.Data), `"agent_version":"3.18.4"`)) {
					t.Errorf("the session's change %+v: want its parent and document", c)
				}
			}
			slices.Sort(deleted[edgeplane.KindTunnel])
			wantTunnels := []string{tn.ID, registered.ID}
			slices.Sort(wantTunnels)
			if diff := cmp.Diff(map[store.Kind][]string{
				edgeplane.KindCredential: {cred.ID}, edgeplane.KindTunnelSession: {ts.ID}, edgeplane.KindTunnel: wantTunnels,
			}, deleted); diff != "" {
				t.Errorf("deletes in the change feed (-want +got):\n%s", diff)
			}

			e.closeEvents(t)
			var got []string
			for _, ev := range rec.events() {
				got = append(got, ev.Type)
			}
			slices.Sort(got)
			if want := []string{"tunnel_deleted.v0", "tunnel_deleted.v0", "tunnel_session_deleted.v0"}; !slices.Equal(got, want) {
				t.Errorf("events %q, want %q", got, want)
			}
		})
	}
}

// registerNode registers another node and returns its ID.
func (e *env) registerNode(t testing.TB) string {
	t.Helper()
	n, err := e.svc.Host().Tunnels().RegisterNode(e.ctx, agents.NodeParams{})
	if err != nil {
		t.Fatal(err)
	}
	return n.ID
}

// TestRenewNode: one renewal extends the node's lease, and with it every
// session, tunnel and endpoint the node holds, in one write; a lease that
// ended is not renewed.
func TestRenewNode(t *testing.T) {
	e := newEnv(t)
	acct := e.user.AccountID
	_, token := e.token(t, e.user)
	var sessions []string
	for range 3 {
		ts := e.session(t, token)
		e.labeled(t, acct, ts.ID, map[string]string{"app": "web"})
		sessions = append(sessions, ts.ID)
	}
	registered, err := e.svc.Host().Nodes().GetNode(e.ctx, e.node)
	if err != nil {
		t.Fatal(err)
	}
	wantNode := &agents.Node{ID: e.node, Addr: "10.0.0.1:4443", Region: "eu", Version: "1.0",
		StartedAt: time.Date(2026, 11, 21, 9, 30, 15, 0, time.UTC), ExpiresAt: time.Date(2026, 11, 21, 9, 31, 15, 0, time.UTC)}
	if diff := cmp.Diff(wantNode, registered); diff != "" {
		t.Errorf("GetNode (-want +got):\n%s", diff)
	}

	e.clock.Advance(edgeplane.DefaultTunnelLease - 10*time.Second)
	rev, err := e.store.Revision(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	renewed, err := e.svc.Host().Tunnels().RenewNode(e.ctx, e.node)
	if err != nil {
		t.Fatal(err)
	}
	want := e.clock.Now().UTC().Truncate(time.Second).Add(edgeplane.DefaultTunnelLease)
	if !renewed.ExpiresAt.Equal(want) {
		t.Errorf("RenewNode = %+v; want expires_at %v", renewed, want)
	}
	changes, err := e.store.Changes(e.ctx, rev, 100, store.WithoutData)
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 1 || changes[0].ID != e.node {
		t.Errorf("a renewal wrote %+v; want the node's record alone", changes)
	}
	// Past the first lease, within the renewed one: nothing is reaped.
	e.clock.Advance(30 * time.Second)
	if n, err := e.svc.Host().ReapTunnels(e.ctx, 10); n != 0 || err != nil {
		t.Errorf("ReapTunnels = %d, %v; want none", n, err)
	}
	for _, id := range sessions {
		if _, err := e.svc.Host().Tunnels().GetTunnelSession(e.ctx, acct, id); err != nil {
			t.Errorf("session %s: %v", id, err)
		}
	}
	// Once the renewed lease ends.
	e.clock.Advance(edgeplane.DefaultTunnelLease)
	_, err = e.svc.Host().Tunnels().RenewNode(e.ctx, e.node)
	wantCode(t, err, apierr.FailedPrecondition)
	for _, id := range []string{"nd_x", "", sessions[0]} {
		_, err := e.svc.Host().Tunnels().RenewNode(e.ctx, id)
		wantCode(t, err, apierr.NotFound)
	}
	nodes, err := e.svc.Host().Nodes().ListNodes(e.ctx)
	if err != nil || len(nodes) != 1 || nodes[0].ID != e.node {
		t.Errorf("ListNodes = %+v, %v", nodes, err)
	}
}

// TestRegisterNodeRefusals: every broken rule of a node's params is named.
func TestRegisterNodeRefusals(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name   string
		params agents.NodeParams
		fields []string
	}{
		{"no port", agents.NodeParams{Addr: "10.0.0.1"}, []string{"addr"}},
		{"port 0", agents.NodeParams{Addr: "10.0.0.1:0"}, []string{"addr"}},
		{"no host", agents.NodeParams{Addr: ":4443"}, []string{"addr"}},
		{"too long", agents.NodeParams{Addr: strings.Repeat("a", agents.MaxNodeAddrBytes) + ":1"}, []string{"addr"}},
		{"every field", agents.NodeParams{Addr: "x", Region: "\xff", Version: strings.Repeat("v", agents.MaxVersionBytes+1)}, []string{"addr", "region", "version"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.svc.Host().Tunnels().RegisterNode(e.ctx, tc.params)
			var fields []string
			for _, v := range apierr.ViolationsOf(err) {
				fields = append(fields, v.Field)
			}
			if !slices.Equal(fields, tc.fields) {
				t.Errorf("violations %q (%v), want %q", fields, err, tc.fields)
			}
		})
	}
	if nodes, err := e.svc.Host().Nodes().ListNodes(e.ctx); err != nil || len(nodes) != 0 {
		t.Errorf("refused nodes were stored: %+v, %v", nodes, err)
	}
}

// TestReapTunnelSessions: the reaper removes the sessions of a node whose
// lease ended, with their tunnels and endpoints, then the node, and keeps
// a live node's; registered tunnels as before. A node that shuts down
// removes itself and its sessions at once.
func TestReapTunnelSessions(t *testing.T) {
	rec := &eventRecorder{}
	e, _ := newEventEnv(t, memstore.New(), events.Options{Sink: rec})
	e.subscribe(t, e.user, "tunnel_session_deleted.v0", "tunnel_deleted.v0")
	acct := e.user.AccountID
	_, token := e.token(t, e.user)
	expired := e.session(t, token) // on e.node
	t1 := e.labeled(t, acct, expired.ID, map[string]string{"app": "web"})
	t2 := e.labeled(t, acct, expired.ID, map[string]string{"app": "api"})
	registered := e.tunnel(t, token, nil)

	e.clock.Advance(edgeplane.DefaultTunnelLease - 10*time.Second)
	dead := e.node
	e.node = e.registerNode(t)
	live := e.session(t, token)
	t3 := e.labeled(t, acct, live.ID, map[string]string{"app": "web"})
	e.clock.Advance(20 * time.Second) // past the first node's lease and the tunnel's, within the second node's

	if n, err := e.svc.Host().ReapTunnels(e.ctx, 1); n != 1 || err != nil {
		t.Fatalf("ReapTunnels(1) = %d, %v", n, err) // the session (with its tunnels) first
	}
	if _, err := e.svc.GetTunnel(e.ctx, e.user, registered.ID); err != nil {
		t.Errorf("the registered tunnel is gone before its turn: %v", err)
	}
	if _, err := e.svc.Host().Nodes().GetNode(e.ctx, dead); err != nil {
		t.Errorf("the dead node went before the call that found it holds no more sessions: %v", err)
	}
	if n, err := e.svc.Host().ReapTunnels(e.ctx, 10); n != 1 || err != nil {
		t.Fatalf("ReapTunnels(10) = %d, %v; want the registered tunnel", n, err)
	}
	for _, id := range []string{t1.ID, t2.ID, registered.ID} {
		_, err := e.svc.GetTunnel(e.ctx, e.user, id)
		wantCode(t, err, apierr.NotFound)
	}
	_, err := e.svc.Host().Tunnels().GetTunnelSession(e.ctx, acct, expired.ID)
	wantCode(t, err, apierr.NotFound)
	_, err = e.svc.Host().Nodes().GetNode(e.ctx, dead)
	wantCode(t, err, apierr.NotFound)
	if _, err := e.svc.Host().Tunnels().GetTunnelSession(e.ctx, acct, live.ID); err != nil {
		t.Errorf("the live session: %v", err)
	}
	if _, err := e.svc.GetTunnel(e.ctx, e.user, t3.ID); err != nil {
		t.Errorf("the live session's tunnel: %v", err)
	}
	if n, err := e.svc.Host().ReapTunnels(e.ctx, 10); n != 0 || err != nil {
		t.Errorf("ReapTunnels again = %d, %v", n, err)
	}
	// The live node shuts down: its session goes with it.
	if err := e.svc.Host().Tunnels().RemoveNode(e.ctx, e.node); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.Host().Tunnels().GetTunnelSession(e.ctx, acct, live.ID)
	wantCode(t, err, apierr.NotFound)
	wantCode(t, e.svc.Host().Tunnels().RemoveNode(e.ctx, e.node), apierr.NotFound)

	e.closeEvents(t)
	var got []string
	for _, ev := range rec.events() {
		got = append(got, ev.Type)
	}
	if want := []string{"tunnel_deleted.v0", "tunnel_deleted.v0", "tunnel_session_deleted.v0", "tunnel_deleted.v0",
		"tunnel_deleted.v0", "tunnel_session_deleted.v0"}; !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
}

// TestStopTunnelSession: a stop request marks the session, which its
// tunnel server reads (the API does not show it), as an update in the
// change feed and an event; another account's session is not found.
func TestStopTunnelSession(t *testing.T) {
	rec := &eventRecorder{}
	e, _ := newEventEnv(t, memstore.New(), events.Options{Sink: rec})
	e.subscribe(t, e.user, "tunnel_session_updated.v0")
	acct := e.user.AccountID
	_, token := e.token(t, e.user)
	ts := e.session(t, token)
	if got, err := e.svc.Host().Tunnels().GetTunnelSession(e.ctx, acct, ts.ID); err != nil || got.StopRequested {
		t.Fatalf("a new session: %+v, %v", got, err)
	}
	rev, err := e.store.Revision(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantNotFoundNaming(t, e.svc.StopTunnelSession(e.ctx, e.other, ts.ID), ts.ID)
	wantCode(t, e.svc.StopTunnelSession(e.ctx, e.user, "ts_x"), apierr.NotFound)
	if got, err := e.svc.Host().Tunnels().GetTunnelSession(e.ctx, acct, ts.ID); err != nil || got.StopRequested {
		t.Fatalf("after another account's request: %+v, %v", got, err)
	}
	if err := e.svc.StopTunnelSession(e.ctx, e.user, ts.ID); err != nil {
		t.Fatal(err)
	}
	got, err := e.svc.Host().Tunnels().GetTunnelSession(e.ctx, acct, ts.ID)
	if err != nil || !got.StopRequested {
		t.Fatalf("after the stop request: %+v, %v", got, err)
	}
	if shown, err := e.svc.GetTunnelSession(e.ctx, e.admin, ts.ID); err != nil || !shown.StopRequested {
		t.Errorf("Service.GetTunnelSession: %+v, %v", shown, err)
	}
	changes, err := e.store.Changes(e.ctx, rev, 100, store.WithData)
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) == 0 || changes[0].Kind != edgeplane.KindTunnelSession || changes[0].Op != store.OpUpdate || changes[0].ID != ts.ID ||
		changes[0].Note.Event != "tunnel_session_updated.v0" || !strings.Contains(string(changes[0].Data), `"stop_requested":true`) {
		t.Errorf("the change feed after the stop request: %+v", changes)
	}
	if err := e.svc.StopTunnelSession(e.ctx, e.user, ts.ID); err != nil {
		t.Errorf("asking again: %v", err)
	}
	e.closeEvents(t)
	if evs := rec.events(); len(evs) != 2 || evs[0].Type != "tunnel_session_updated.v0" || strings.Contains(string(evs[0].Object), "stop") {
		t.Errorf("events: %+v", evs)
	}
}

// TestTunnelSessionEventTypes: the kind's changes are known event types.
func TestTunnelSessionEventTypes(t *testing.T) {
	types := edgeplane.DefaultEventTypes()
	for _, typ := range []string{"tunnel_session_created.v0", "tunnel_session_updated.v0", "tunnel_session_deleted.v0"} {
		if !slices.Contains(types, typ) {
			t.Errorf("DefaultEventTypes lacks %s", typ)
		}
	}
}

// BenchmarkRenewNode is what a tunnel server pays every RenewInterval
// for all its sessions: one write, whatever it holds.
func BenchmarkRenewNode(b *testing.B) {
	for _, n := range []int{0, 100} {
		b.Run(strconv.Itoa(n)+" sessions", func(b *testing.B) {
			e := newEnv(b)
			e.params(b) // registers the node, which renews with no session too
			_, token := e.token(b, e.user)
			for range n {
				e.session(b, token)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := e.svc.Host().Tunnels().RenewNode(e.ctx, e.node); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
