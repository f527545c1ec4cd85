package edgeplane_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/credentials"
	"github.com/edgeplane/edgeplane/resource"
	"github.com/google/go-cmp/cmp"
)

// token creates a credential with acl for p and returns it and its token.
func (e *env) token(t testing.TB, p edgeplane.Principal, acl ...string) (*credentials.Credential, string) {
	t.Helper()
	c, err := e.svc.CreateCredential(e.ctx, p, credentials.CreateParams{ACL: acl})
	if err != nil {
		t.Fatal(err)
	}
	return c, *c.Token
}

// tunnel registers a tunnel with labels under token.
func (e *env) tunnel(t testing.TB, token string, labels map[string]string) *backends.Tunnel {
	t.Helper()
	tn, err := e.svc.RegisterTunnel(e.ctx, token, backends.RegisterTunnelParams{Labels: labels})
	if err != nil {
		t.Fatal(err)
	}
	return tn
}

func TestRegisterTunnel(t *testing.T) {
	e := newEnv(t)
	cred, token := e.token(t, e.user, "bind:env=prod", "bind:app=*")
	tn := e.tunnel(t, token, map[string]string{"env": "prod", "app": "api"})
	want := &backends.Tunnel{
		ID:         tn.ID,
		URI:        "https://api.example.test/tunnels/" + tn.ID,
		AccountID:  e.user.AccountID,
		StartedAt:  time.Date(2026, 11, 21, 9, 30, 15, 0, time.UTC),
		Labels:     map[string]string{"env": "prod", "app": "api"},
		Credential: resource.Ref{ID: cred.ID, URI: "https://api.example.test/credentials/" + cred.ID},
	}
	if diff := cmp.Diff(want, tn); diff != "" {
		t.Errorf("RegisterTunnel (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(tn.ID, "tn_") || len(tn.ID) != 3+27 {
		t.Errorf("tunnel ID %q", tn.ID)
	}
	got, err := e.svc.GetTunnel(e.ctx, e.admin, tn.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GetTunnel (-want +got):\n%s", diff)
	}
	page, err := e.svc.ListTunnels(e.ctx, e.bot, edgeplane.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]backends.Tunnel{*want}, page.Items); diff != "" {
		t.Errorf("ListTunnels (-want +got):\n%s", diff)
	}
	if page.URI != "https://api.example.test/tunnels" {
		t.Errorf("list uri %q", page.URI)
	}

	// A tunnel without labels is online; its labels are {} not null.
	bare := e.tunnel(t, token, nil)
	b, _ := json.Marshal(bare)
	if !strings.Contains(string(b), `"labels":{}`) {
		t.Errorf("tunnel JSON %s", b)
	}

	// Another account sees neither.
	_, err = e.svc.GetTunnel(e.ctx, e.other, tn.ID)
	wantCode(t, err, apierr.NotFound)
	page, _ = e.svc.ListTunnels(e.ctx, e.other, edgeplane.ListOptions{})
	if len(page.Items) != 0 {
		t.Errorf("another account lists %d tunnels", len(page.Items))
	}
}

func TestRegisterTunnelRefusals(t *testing.T) {
	e := newEnv(t)
	_, open := e.token(t, e.user)
	_, restricted := e.token(t, e.user, "bind:env=prod", "bind:*=shared", "bind:*.example.com")
	tests := []struct {
		name   string
		token  string
		labels map[string]string
		code   apierr.Code
		field  string // for invalid argument
		msg    string // substring of the message otherwise
	}{
		{name: "unknown token", token: "not-a-token", labels: map[string]string{"env": "prod"}, code: apierr.Unauthenticated},
		{name: "bad token wins over bad labels", token: "", labels: map[string]string{"": ""}, code: apierr.Unauthenticated},
		{name: "invalid label", token: open, labels: map[string]string{"env": "a b"}, code: apierr.InvalidArgument, field: `labels["env"]`},
		{name: "too many labels", token: open, labels: labelsN(33), code: apierr.InvalidArgument, field: "labels"},
		{name: "label the ACL does not permit", token: restricted, labels: map[string]string{"env": "dev"},
			code: apierr.PermissionDenied, msg: "does not permit binding the labels env=dev"},
		{name: "every denied label is named, sorted", token: restricted, labels: map[string]string{"z": "1", "env": "prod", "a": "2", "team": "shared"},
			code: apierr.PermissionDenied, msg: "labels a=2, z=1;"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.svc.RegisterTunnel(e.ctx, tc.token, backends.RegisterTunnelParams{Labels: tc.labels})
			if tc.field != "" {
				wantViolation(t, err, tc.field, "")
				return
			}
			wantCode(t, err, tc.code)
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q lacks %q", err, tc.msg)
			}
		})
	}
	page, _ := e.svc.ListTunnels(e.ctx, e.user, edgeplane.ListOptions{})
	if len(page.Items) != 0 {
		t.Errorf("refused registrations stored %d tunnels", len(page.Items))
	}
	// What the ACL permits goes through.
	e.tunnel(t, restricted, map[string]string{"env": "prod", "team": "shared"})
	e.tunnel(t, open, map[string]string{"anything": "goes"})
}

func labelsN(n int) map[string]string {
	m := make(map[string]string, n)
	for i := range n {
		m["k"+strings.Repeat("x", i)] = "v"
	}
	return m
}

func TestUnregisterTunnel(t *testing.T) {
	e := newEnv(t)
	_, token := e.token(t, e.user)
	tn := e.tunnel(t, token, map[string]string{"env": "prod"})

	wantCode(t, e.svc.UnregisterTunnel(e.ctx, e.other.AccountID, tn.ID), apierr.NotFound)
	wantCode(t, e.svc.UnregisterTunnel(e.ctx, e.user.AccountID, "tn_bad"), apierr.NotFound)
	if err := e.svc.UnregisterTunnel(e.ctx, e.user.AccountID, tn.ID); err != nil {
		t.Fatal(err)
	}
	_, err := e.svc.GetTunnel(e.ctx, e.user, tn.ID)
	wantCode(t, err, apierr.NotFound)
	err = e.svc.UnregisterTunnel(e.ctx, e.user.AccountID, tn.ID)
	wantCode(t, err, apierr.NotFound)
	if !strings.Contains(err.Error(), "tunnel "+tn.ID+" not found") {
		t.Errorf("message %q", err)
	}
}

func TestDeletingACredentialTakesItsTunnelsOffline(t *testing.T) {
	e := newEnv(t)
	c1, t1 := e.token(t, e.user)
	_, t2 := e.token(t, e.user)
	e.tunnel(t, t1, map[string]string{"env": "prod"})
	e.tunnel(t, t1, map[string]string{"env": "dev"})
	keep := e.tunnel(t, t2, map[string]string{"env": "prod"})
	if err := e.svc.DeleteCredential(e.ctx, e.user, c1.ID); err != nil {
		t.Fatal(err)
	}
	page, err := e.svc.ListTunnels(e.ctx, e.user, edgeplane.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 1 || page.Items[0].ID != keep.ID {
		t.Errorf("tunnels after deleting the credential: %+v", page.Items)
	}
	_, err = e.svc.RegisterTunnel(e.ctx, t1, backends.RegisterTunnelParams{})
	wantCode(t, err, apierr.Unauthenticated)
}
