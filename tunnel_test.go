package edgeplane_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/credentials"
	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/resource"
	"github.com/edgeplane/edgeplane/store"
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
	tn, err := e.svc.Host().RegisterTunnel(e.ctx, token, backends.RegisterTunnelParams{Labels: labels})
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
		ExpiresAt:  time.Date(2026, 11, 21, 9, 31, 15, 0, time.UTC), // DefaultTunnelLease later
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
			_, err := e.svc.Host().RegisterTunnel(e.ctx, tc.token, backends.RegisterTunnelParams{Labels: tc.labels})
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

	wantCode(t, e.svc.Host().UnregisterTunnel(e.ctx, e.other.AccountID, tn.ID), apierr.NotFound)
	wantCode(t, e.svc.Host().UnregisterTunnel(e.ctx, e.user.AccountID, "tn_bad"), apierr.NotFound)
	if err := e.svc.Host().UnregisterTunnel(e.ctx, e.user.AccountID, tn.ID); err != nil {
		t.Fatal(err)
	}
	_, err := e.svc.GetTunnel(e.ctx, e.user, tn.ID)
	wantCode(t, err, apierr.NotFound)
	err = e.svc.Host().UnregisterTunnel(e.ctx, e.user.AccountID, tn.ID)
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
	_, err = e.svc.Host().RegisterTunnel(e.ctx, t1, backends.RegisterTunnelParams{})
	wantCode(t, err, apierr.Unauthenticated)
}

func TestTunnelForwardsTo(t *testing.T) {
	e := newEnv(t)
	_, token := e.token(t, e.user)
	for _, tc := range []struct {
		name, forwardsTo, json string
	}{
		{"loopback origin", "http://127.0.0.1:3000", `"forwards_to":"http://127.0.0.1:3000"`},
		{"https with a trailing slash, kept as given", "https://app.internal:8443/", `"forwards_to":"https://app.internal:8443/"`},
		{"not given", "", `"forwards_to":""`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tn, err := e.svc.Host().RegisterTunnel(e.ctx, token, backends.RegisterTunnelParams{Labels: map[string]string{"app": "web"}, ForwardsTo: tc.forwardsTo})
			if err != nil {
				t.Fatal(err)
			}
			if tn.ForwardsTo != tc.forwardsTo {
				t.Errorf("register: forwards_to %q", tn.ForwardsTo)
			}
			got, err := e.svc.GetTunnel(e.ctx, e.user, tn.ID)
			if diff := cmp.Diff(tn, got); err != nil || diff != "" {
				t.Errorf("get (%v) (-register +get):\n%s", err, diff)
			}
			page, err := e.svc.ListTunnels(e.ctx, e.user, edgeplane.ListOptions{Limit: 1})
			if err != nil || len(page.Items) != 1 || page.Items[0].ForwardsTo != tc.forwardsTo {
				t.Errorf("list: %+v, %v", page, err)
			}
			b, _ := json.Marshal(got)
			if !strings.Contains(string(b), tc.json) {
				t.Errorf("tunnel JSON %s lacks %s", b, tc.json)
			}
		})
	}

	before, _ := e.svc.ListTunnels(e.ctx, e.user, edgeplane.ListOptions{})
	for _, tc := range []struct{ name, forwardsTo, reason string }{
		{"a path", "http://127.0.0.1:3000/app", `no path beyond "/"`},
		{"another scheme", "ssh://127.0.0.1:22", "absolute http, https, tcp or tls URL"},
		{"no scheme", "127.0.0.1:3000", "absolute http, https, tcp or tls URL"},
		{"tcp without a port", "tcp://127.0.0.1", "must have a port"},
		{"a query", "http://h?x=1", "query or fragment"},
		{"user information", "https://user:secret@h", "user information"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.svc.Host().RegisterTunnel(e.ctx, token, backends.RegisterTunnelParams{ForwardsTo: tc.forwardsTo})
			wantViolation(t, err, "forwards_to", tc.reason)
		})
	}
	// With bad labels too, both are reported; a bad token wins over both.
	_, err := e.svc.Host().RegisterTunnel(e.ctx, token, backends.RegisterTunnelParams{Labels: map[string]string{"k": "a b"}, ForwardsTo: "ftp://h"})
	wantViolation(t, err, "forwards_to", "")
	wantViolation(t, err, `labels["k"]`, "")
	_, err = e.svc.Host().RegisterTunnel(e.ctx, "not-a-token", backends.RegisterTunnelParams{ForwardsTo: "ftp://h"})
	wantCode(t, err, apierr.Unauthenticated)
	after, _ := e.svc.ListTunnels(e.ctx, e.user, edgeplane.ListOptions{})
	if len(after.Items) != len(before.Items) {
		t.Errorf("refused registrations stored tunnels: %d, then %d", len(before.Items), len(after.Items))
	}
}

// TestBackendTunnelsLookup: the data plane's lookup of a backend's
// tunnels gives the same selection as the backend's tunnels field, as
// whole tunnels (with forwards_to), newest first.
func TestBackendTunnelsLookup(t *testing.T) {
	e := newEnv(t)
	acct := e.user.AccountID
	cred, token := e.token(t, e.user)
	_, otherToken := e.token(t, e.other)
	reg := func(token string, labels map[string]string, to string) *backends.Tunnel {
		t.Helper()
		tn, err := e.svc.Host().RegisterTunnel(e.ctx, token, backends.RegisterTunnelParams{Labels: labels, ForwardsTo: to})
		if err != nil {
			t.Fatal(err)
		}
		return tn
	}
	api1 := reg(token, map[string]string{"env": "prod", "app": "api"}, "http://127.0.0.1:3000")
	reg(token, map[string]string{"env": "dev", "app": "api"}, "http://127.0.0.1:3001")
	reg(token, nil, "")
	api2 := reg(token, map[string]string{"env": "prod", "app": "api", "zone": "b"}, "")
	web := reg(token, map[string]string{"env": "prod", "app": "web"}, "https://10.0.0.5")
	reg(otherToken, map[string]string{"env": "prod", "app": "api"}, "http://127.0.0.1:3000") // another account's
	api := e.backend(t, e.user, map[string]string{"env": "prod", "app": "api"})
	prod := e.backend(t, e.user, map[string]string{"env": "prod"})
	empty := e.backend(t, e.user, map[string]string{"env": "staging"})
	foreign := e.backend(t, e.other, map[string]string{"env": "prod"})

	for _, tc := range []struct {
		name    string
		backend string
		want    []*backends.Tunnel
	}{
		{"two labels", api.ID, []*backends.Tunnel{api2, api1}},
		{"one label", prod.ID, []*backends.Tunnel{web, api2, api1}},
		{"none selected", empty.ID, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := e.svc.Host().DataPlane().BackendTunnels(e.ctx, acct, tc.backend)
			if err != nil {
				t.Fatal(err)
			}
			want := []backends.Tunnel{}
			for _, tn := range tc.want {
				want = append(want, *tn)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("BackendTunnels (-want +got):\n%s", diff)
			}
			if got == nil {
				t.Error("BackendTunnels = nil, want an empty list")
			}
			// The same selection, in the same order, as the backend shows.
			b, err := e.svc.GetTunnelGroupBackend(e.ctx, e.user, tc.backend)
			if err != nil {
				t.Fatal(err)
			}
			if len(b.Tunnels) != len(got) {
				t.Fatalf("backend shows %d tunnels, lookup gives %d", len(b.Tunnels), len(got))
			}
			for i, r := range b.Tunnels {
				if got[i].ID != r.ID || got[i].URI != r.URI {
					t.Errorf("tunnel %d: lookup %s, backend shows %s", i, got[i].ID, r.ID)
				}
			}
		})
	}
	if got, _ := e.svc.Host().DataPlane().BackendTunnels(e.ctx, acct, api.ID); got[1].Credential.URI != "https://api.example.test/credentials/"+cred.ID ||
		got[1].URI != "https://api.example.test/tunnels/"+api1.ID || got[1].ForwardsTo != "http://127.0.0.1:3000" {
		t.Errorf("tunnel as presented: %+v", got[1])
	}

	// The other account sees only its own tunnels through its backend.
	got, err := e.svc.Host().DataPlane().BackendTunnels(e.ctx, e.other.AccountID, foreign.ID)
	if err != nil || len(got) != 1 || got[0].AccountID != e.other.AccountID {
		t.Errorf("other account's lookup: %+v, %v", got, err)
	}

	// Not found: a foreign backend reads like a missing one; malformed IDs.
	missing := api.ID[:len(api.ID)-4] + "zzzz"
	_, errForeign := e.svc.Host().DataPlane().BackendTunnels(e.ctx, acct, foreign.ID)
	wantNotFoundNaming(t, errForeign, foreign.ID)
	_, errMissing := e.svc.Host().DataPlane().BackendTunnels(e.ctx, acct, missing)
	wantNotFoundNaming(t, errMissing, missing)
	if a, b := strings.ReplaceAll(errForeign.Error(), foreign.ID, "ID"), strings.ReplaceAll(errMissing.Error(), missing, "ID"); a != b {
		t.Errorf("foreign %q and missing %q read differently", a, b)
	}
	_, err = e.svc.Host().DataPlane().BackendTunnels(e.ctx, e.other.AccountID, api.ID)
	wantNotFoundNaming(t, err, api.ID)
	_, err = e.svc.Host().DataPlane().BackendTunnels(e.ctx, acct, "bkdtg_x")
	wantNotFoundNaming(t, err, "bkdtg_x")
	_, err = e.svc.Host().DataPlane().BackendTunnels(e.ctx, acct, api1.ID)
	wantNotFoundNaming(t, err, api1.ID)
	_, err = e.svc.Host().DataPlane().BackendTunnels(e.ctx, "acct_x", api.ID)
	wantNotFoundNaming(t, err, "acct_x")
	_, err = e.svc.Host().DataPlane().BackendTunnels(e.ctx, "", api.ID)
	wantCode(t, err, apierr.NotFound)

	// Tunnels come and go; the lookup follows at once.
	if err := e.svc.Host().UnregisterTunnel(e.ctx, acct, api2.ID); err != nil {
		t.Fatal(err)
	}
	late := reg(token, map[string]string{"env": "prod", "app": "api"}, "http://127.0.0.1:4000")
	got, err = e.svc.Host().DataPlane().BackendTunnels(e.ctx, acct, api.ID)
	if err != nil || len(got) != 2 || got[0].ID != late.ID || got[1].ID != api1.ID {
		t.Errorf("after changes: %+v, %v", got, err)
	}
	if err := e.svc.DeleteCredential(e.ctx, e.user, cred.ID); err != nil {
		t.Fatal(err)
	}
	if got, err := e.svc.Host().DataPlane().BackendTunnels(e.ctx, acct, api.ID); err != nil || got == nil || len(got) != 0 {
		t.Errorf("after the credential's deletion: %#v, %v", got, err)
	}
}

// TestBackendTunnelsStoreFailure: a failing store is an internal error,
// whether reading the backend or scanning the tunnels.
func TestBackendTunnelsStoreFailure(t *testing.T) {
	e := newEnv(t)
	_, token := e.token(t, e.user)
	e.tunnel(t, token, map[string]string{"env": "prod"})
	b := e.backend(t, e.user, map[string]string{"env": "prod"})
	broken, err := edgeplane.New(listFails{e.store, edgeplane.KindTunnel}, edgeplane.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = broken.Host().DataPlane().BackendTunnels(e.ctx, e.user.AccountID, b.ID)
	wantCode(t, err, apierr.Internal)
	_, err = mustService(edgeplane.New(failingStore{e.store}, edgeplane.Options{})).Host().DataPlane().BackendTunnels(e.ctx, e.user.AccountID, b.ID)
	wantCode(t, err, apierr.Internal)
}

// TestTunnelLeases: a tunnel is online while its lease runs; renewal
// extends it; once it ends no backend selects the tunnel, it cannot be
// renewed, and the reaper removes it with an event.
func TestTunnelLeases(t *testing.T) {
	rec := &eventRecorder{}
	e, _ := newEventEnv(t, memstore.New(), events.Options{Sink: rec})
	e.subscribe(t, e.user, "tunnel_deleted.v0")
	_, token := e.token(t, e.user)
	tn := e.tunnel(t, token, map[string]string{"env": "prod"})
	b := e.backend(t, e.user, map[string]string{"env": "prod"})
	selected := func() int {
		t.Helper()
		got, err := e.svc.GetTunnelGroupBackend(e.ctx, e.user, b.ID)
		if err != nil {
			t.Fatal(err)
		}
		served, err := e.svc.Host().DataPlane().BackendTunnels(e.ctx, e.user.AccountID, b.ID)
		if err != nil || len(served) != len(got.Tunnels) {
			t.Fatalf("BackendTunnels: %d, %v; the backend shows %d", len(served), err, len(got.Tunnels))
		}
		return len(got.Tunnels)
	}
	if n := selected(); n != 1 {
		t.Fatalf("a fresh tunnel: %d selected", n)
	}

	e.clock.Advance(edgeplane.DefaultTunnelLease - 10*time.Second)
	renewed, err := e.svc.Host().RenewTunnel(e.ctx, e.user.AccountID, tn.ID)
	if err != nil || !renewed.ExpiresAt.Equal(e.clock.Now().UTC().Truncate(time.Second).Add(edgeplane.DefaultTunnelLease)) {
		t.Fatalf("RenewTunnel = %v, %v", renewed, err)
	}
	e.clock.Advance(30 * time.Second) // past the first lease, within the renewed one
	if n := selected(); n != 1 {
		t.Fatalf("a renewed tunnel: %d selected", n)
	}
	if n, err := e.svc.Host().ReapTunnels(e.ctx, 10); n != 0 || err != nil {
		t.Fatalf("reaped %d live tunnels, %v", n, err)
	}

	e.clock.Advance(edgeplane.DefaultTunnelLease)
	if n := selected(); n != 0 {
		t.Fatalf("an expired tunnel is still selected (%d)", n)
	}
	_, err = e.svc.Host().RenewTunnel(e.ctx, e.user.AccountID, tn.ID)
	wantCode(t, err, apierr.FailedPrecondition)
	if n, err := e.svc.Host().ReapTunnels(e.ctx, 10); n != 1 || err != nil {
		t.Fatalf("ReapTunnels = %d, %v; want 1", n, err)
	}
	_, err = e.svc.GetTunnel(e.ctx, e.user, tn.ID)
	wantCode(t, err, apierr.NotFound)
	e.closeEvents(t)
	if evs := rec.events(); len(evs) != 1 || evs[0].Type != "tunnel_deleted.v0" {
		t.Errorf("events: %+v", evs)
	}
	_, err = e.svc.Host().ReapTunnels(e.ctx, 0)
	wantViolation(t, err, "limit", "positive")
}

// renewingStore renews (rewrites) a tunnel just before the reaper's
// conditional delete reaches the store.
type renewingStore struct {
	store.Store
}

func (s *renewingStore) DeleteIf(ctx context.Context, kind store.Kind, acct, id string, version int64, note store.Note) error {
	if _, err := s.Store.Update(ctx, kind, acct, id, func(*store.Record) error { return nil }); err != nil {
		return err
	}
	return s.Store.DeleteIf(ctx, kind, acct, id, version, note)
}

// TestReapKeepsARenewedTunnel: a tunnel renewed between the reaper's read
// and its delete is kept (the delete is conditional on the version read).
func TestReapKeepsARenewedTunnel(t *testing.T) {
	e := newEnvWithStore(t, &renewingStore{Store: memstore.New()})
	_, token := e.token(t, e.user)
	tn := e.tunnel(t, token, nil)
	e.clock.Advance(2 * edgeplane.DefaultTunnelLease)
	if n, err := e.svc.Host().ReapTunnels(e.ctx, 10); n != 0 || err != nil {
		t.Fatalf("ReapTunnels = %d, %v; want the renewed tunnel kept", n, err)
	}
	if _, err := e.svc.GetTunnel(e.ctx, e.user, tn.ID); err != nil {
		t.Errorf("the tunnel renewed during the reap is gone: %v", err)
	}
}

func TestTunnelLeaseOption(t *testing.T) {
	st := memstore.New()
	clock := &fakeClock{now: time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)}
	svc, err := edgeplane.New(st, edgeplane.Options{Clock: clock.Now, TunnelLease: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{svc: svc, store: st, clock: clock, ctx: context.Background(), logs: new(bytes.Buffer)}
	a := e.account(t, "a")
	e.user = e.subject(t, a, false, false)
	_, token := e.token(t, e.user)
	tn := e.tunnel(t, token, nil)
	if want := clock.Now().Add(5 * time.Minute); !tn.ExpiresAt.Equal(want) {
		t.Errorf("expires_at %v, want %v", tn.ExpiresAt, want)
	}
}
