package edgeplane_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/resource"
	"github.com/google/go-cmp/cmp"
)

// backend creates a tunnel group backend with labels for p.
func (e *env) backend(t testing.TB, p edgeplane.Principal, labels map[string]string) *backends.TunnelGroupBackend {
	t.Helper()
	b, err := e.svc.CreateTunnelGroupBackend(e.ctx, p, backends.CreateParams{Labels: labels})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestTunnelGroupBackendCRUD(t *testing.T) {
	e := newEnv(t)
	b, err := e.svc.CreateTunnelGroupBackend(e.ctx, e.user, backends.CreateParams{
		Description: "api servers",
		Metadata:    `{"owner":"edge"}`,
		Labels:      map[string]string{"env": "prod", "app": "api"},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := &backends.TunnelGroupBackend{
		ID:          b.ID,
		URI:         "https://api.example.test/backends/tunnel_group/" + b.ID,
		CreatedAt:   time.Date(2026, 11, 21, 9, 30, 15, 0, time.UTC),
		Description: "api servers",
		Metadata:    `{"owner":"edge"}`,
		Labels:      map[string]string{"env": "prod", "app": "api"},
		Tunnels:     []resource.Ref{},
	}
	if diff := cmp.Diff(want, b); diff != "" {
		t.Errorf("create (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(b.ID, "bkdtg_") || len(b.ID) != 6+27 {
		t.Errorf("ID %q is not bkdtg_ + 27 characters", b.ID)
	}
	js, _ := json.Marshal(b)
	if !strings.Contains(string(js), `"tunnels":[]`) {
		t.Errorf("JSON has no empty tunnels list: %s", js)
	}

	got, err := e.svc.GetTunnelGroupBackend(e.ctx, e.bot, b.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("get (-want +got):\n%s", diff)
	}
	page, err := e.svc.ListTunnelGroupBackends(e.ctx, e.admin, edgeplane.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]backends.TunnelGroupBackend{*want}, page.Items); diff != "" {
		t.Errorf("list (-want +got):\n%s", diff)
	}
	if page.URI != "https://api.example.test/backends/tunnel_group" || page.NextPageURI != nil {
		t.Errorf("list uri %q, next %v", page.URI, page.NextPageURI)
	}

	// PATCH: absent fields stay, present ones replace; labels replace the set.
	upd, err := e.svc.UpdateTunnelGroupBackend(e.ctx, e.user, b.ID, backends.UpdateParams{
		Metadata: ptr(""),
		Labels:   &map[string]string{"env": "staging"},
	})
	if err != nil {
		t.Fatal(err)
	}
	want.Metadata, want.Labels = "", map[string]string{"env": "staging"}
	if diff := cmp.Diff(want, upd); diff != "" {
		t.Errorf("update (-want +got):\n%s", diff)
	}
	got, _ = e.svc.GetTunnelGroupBackend(e.ctx, e.user, b.ID)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("get after update (-want +got):\n%s", diff)
	}

	if err := e.svc.DeleteTunnelGroupBackend(e.ctx, e.user, b.ID); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.GetTunnelGroupBackend(e.ctx, e.user, b.ID)
	wantCode(t, err, apierr.NotFound)
	wantCode(t, e.svc.DeleteTunnelGroupBackend(e.ctx, e.user, b.ID), apierr.NotFound)
}

func TestTunnelGroupBackendValidation(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name   string
		params backends.CreateParams
		field  string
		reason string
	}{
		{"no labels", backends.CreateParams{}, "labels", "at least one label"},
		{"empty label value", backends.CreateParams{Labels: map[string]string{"env": ""}}, `labels["env"]`, "must not be empty"},
		{"bad key", backends.CreateParams{Labels: map[string]string{"e n v": "x"}}, `labels["e n v"]`, "may contain only"},
		{"too many", backends.CreateParams{Labels: labelsN(33)}, "labels", "at most 32 labels"},
		{"description bytes", backends.CreateParams{Description: strings.Repeat("é", 128), Labels: map[string]string{"a": "b"}}, "description", "at most 255 bytes"},
		{"metadata bytes", backends.CreateParams{Metadata: strings.Repeat("m", 4097), Labels: map[string]string{"a": "b"}}, "metadata", "at most 4096 bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.svc.CreateTunnelGroupBackend(e.ctx, e.user, tc.params)
			wantViolation(t, err, tc.field, tc.reason)
		})
	}
	page, _ := e.svc.ListTunnelGroupBackends(e.ctx, e.user, edgeplane.ListOptions{})
	if len(page.Items) != 0 {
		t.Errorf("invalid creates stored %d backends", len(page.Items))
	}

	b := e.backend(t, e.user, map[string]string{"env": "prod"})
	_, err := e.svc.UpdateTunnelGroupBackend(e.ctx, e.user, b.ID, backends.UpdateParams{Description: ptr("x"), Labels: &map[string]string{}})
	wantViolation(t, err, "labels", "at least one label")
	_, err = e.svc.UpdateTunnelGroupBackend(e.ctx, e.user, b.ID, backends.UpdateParams{Labels: &map[string]string{"k": "a=b"}})
	wantViolation(t, err, `labels["k"]`, "may contain only")
	got, _ := e.svc.GetTunnelGroupBackend(e.ctx, e.user, b.ID)
	if got.Description != "" || !cmp.Equal(got.Labels, map[string]string{"env": "prod"}) {
		t.Errorf("rejected updates changed the backend: %+v", got)
	}
}

func TestTunnelGroupBackendIsolation(t *testing.T) {
	e := newEnv(t)
	b := e.backend(t, e.user, map[string]string{"env": "prod"})
	missing := b.ID[:len(b.ID)-4] + "zzzz"
	for _, id := range []string{b.ID, missing, "bkdtg_short"} {
		_, err := e.svc.GetTunnelGroupBackend(e.ctx, e.other, id)
		wantCode(t, err, apierr.NotFound)
		if err.Error() != "tunnel group backend "+id+" not found" {
			t.Errorf("message %q differs from a missing ID's", err)
		}
		_, err = e.svc.UpdateTunnelGroupBackend(e.ctx, e.other, id, backends.UpdateParams{Description: ptr("x")})
		wantCode(t, err, apierr.NotFound)
		wantCode(t, e.svc.DeleteTunnelGroupBackend(e.ctx, e.other, id), apierr.NotFound)
	}
	page, err := e.svc.ListTunnelGroupBackends(e.ctx, e.other, edgeplane.ListOptions{})
	if err != nil || len(page.Items) != 0 {
		t.Errorf("another account lists %v, %v", page, err)
	}
	if _, err := e.svc.GetTunnelGroupBackend(e.ctx, e.user, b.ID); err != nil {
		t.Errorf("the owner account lost the backend: %v", err)
	}
}

func TestTunnelGroupBackendPaging(t *testing.T) {
	e := newEnv(t)
	var ids []string
	for range 5 {
		ids = append([]string{e.backend(t, e.user, map[string]string{"a": "b"}).ID}, ids...)
	}
	var got []string
	for b, err := range edgeplane.All(e.ctx, e.user, func(ctx context.Context, p edgeplane.Principal, o edgeplane.ListOptions) (*edgeplane.Page[backends.TunnelGroupBackend], error) {
		o.Limit = 2
		return e.svc.ListTunnelGroupBackends(ctx, p, o)
	}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, b.ID)
	}
	if diff := cmp.Diff(ids, got); diff != "" {
		t.Errorf("paging newest first (-want +got):\n%s", diff)
	}
	_, err := e.svc.ListTunnelGroupBackends(e.ctx, e.user, edgeplane.ListOptions{BeforeID: "cr_x"})
	wantViolation(t, err, "before_id", "tunnel group backend ID")
}

func TestBackendTunnels(t *testing.T) {
	e := newEnv(t)
	cred, token := e.token(t, e.user)
	_, otherToken := e.token(t, e.other)
	prodAPI := e.tunnel(t, token, map[string]string{"env": "prod", "app": "api"})
	prodWeb := e.tunnel(t, token, map[string]string{"env": "prod", "app": "web", "region": "eu"})
	e.tunnel(t, token, map[string]string{"env": "dev", "app": "api"})
	e.tunnel(t, token, nil)
	e.tunnel(t, otherToken, map[string]string{"env": "prod", "app": "api"}) // another account's

	ref := func(tn *backends.Tunnel) resource.Ref {
		return resource.Ref{ID: tn.ID, URI: "https://api.example.test/tunnels/" + tn.ID}
	}
	prod := e.backend(t, e.user, map[string]string{"env": "prod"})
	if diff := cmp.Diff([]resource.Ref{ref(prodWeb), ref(prodAPI)}, prod.Tunnels); diff != "" {
		t.Errorf("create: tunnels, newest first (-want +got):\n%s", diff)
	}
	api := e.backend(t, e.user, map[string]string{"env": "prod", "app": "api"})
	if diff := cmp.Diff([]resource.Ref{ref(prodAPI)}, api.Tunnels); diff != "" {
		t.Errorf("two labels (-want +got):\n%s", diff)
	}
	none := e.backend(t, e.user, map[string]string{"env": "PROD"})
	if none.Tunnels == nil || len(none.Tunnels) != 0 {
		t.Errorf("no match: tunnels = %#v, want []", none.Tunnels)
	}

	// Read time: a tunnel registered later shows up; an unregistered one goes.
	late := e.tunnel(t, token, map[string]string{"env": "prod", "app": "api", "v": "2"})
	if err := e.svc.Host().UnregisterTunnel(e.ctx, e.user.AccountID, prodAPI.ID); err != nil {
		t.Fatal(err)
	}
	got, err := e.svc.GetTunnelGroupBackend(e.ctx, e.user, api.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]resource.Ref{ref(late)}, got.Tunnels); diff != "" {
		t.Errorf("get after changes (-want +got):\n%s", diff)
	}
	page, err := e.svc.ListTunnelGroupBackends(e.ctx, e.user, edgeplane.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantList := map[string][]resource.Ref{prod.ID: {ref(late), ref(prodWeb)}, api.ID: {ref(late)}, none.ID: {}}
	for _, b := range page.Items {
		if diff := cmp.Diff(wantList[b.ID], b.Tunnels); diff != "" {
			t.Errorf("list: backend %v tunnels (-want +got):\n%s", b.Labels, diff)
		}
	}
	// An update that changes labels changes the selection at once.
	upd, err := e.svc.UpdateTunnelGroupBackend(e.ctx, e.user, none.ID, backends.UpdateParams{Labels: &map[string]string{"region": "eu"}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]resource.Ref{ref(prodWeb)}, upd.Tunnels); diff != "" {
		t.Errorf("update (-want +got):\n%s", diff)
	}
	// Deleting the credential takes its tunnels offline.
	if err := e.svc.DeleteCredential(e.ctx, e.user, cred.ID); err != nil {
		t.Fatal(err)
	}
	got, _ = e.svc.GetTunnelGroupBackend(e.ctx, e.user, prod.ID)
	if len(got.Tunnels) != 0 {
		t.Errorf("tunnels of a deleted credential still listed: %v", got.Tunnels)
	}
	// The stored record holds no tunnels: they are computed at read time.
	rec, err := e.store.Get(e.ctx, edgeplane.KindTunnelGroupBackend, e.user.AccountID, upd.ID)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(rec.Data), "tn_") {
		t.Errorf("stored backend holds tunnels: %s", rec.Data)
	}
}

func TestBackendInUseByEdgeModules(t *testing.T) {
	e := newEnv(t)
	b := e.backend(t, e.user, map[string]string{"env": "prod"})
	tcp, err := e.svc.CreateTCPEdge(e.ctx, e.user, edges.CreateTCPEdgeParams{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.ReplaceTCPEdgeBackend(e.ctx, e.user, tcp.ID, edges.BackendParams{BackendID: b.ID}); err != nil {
		t.Fatal(err)
	}
	https, err := e.svc.CreateHTTPSEdge(e.ctx, e.user, edges.CreateEdgeParams{})
	if err != nil {
		t.Fatal(err)
	}
	route, err := e.svc.CreateHTTPSEdgeRoute(e.ctx, e.user, https.ID, edges.CreateRouteParams{MatchType: "path_prefix", Match: "/"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.ReplaceHTTPSRouteBackend(e.ctx, e.user, https.ID, route.ID, edges.BackendParams{BackendID: b.ID}); err != nil {
		t.Fatal(err)
	}

	err = e.svc.DeleteTunnelGroupBackend(e.ctx, e.user, b.ID)
	wantCode(t, err, apierr.Conflict)
	for _, want := range []string{"tunnel group backend " + b.ID, "TCP edge " + tcp.ID, route.ID} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("conflict %q does not name %q", err, want)
		}
	}
	if err := e.svc.DeleteTCPEdgeBackend(e.ctx, e.user, tcp.ID); err != nil {
		t.Fatal(err)
	}
	err = e.svc.DeleteTunnelGroupBackend(e.ctx, e.user, b.ID)
	wantCode(t, err, apierr.Conflict)
	if strings.Contains(err.Error(), tcp.ID) || !strings.Contains(err.Error(), route.ID) {
		t.Errorf("conflict after releasing the TCP edge: %q", err)
	}
	if err := e.svc.DeleteHTTPSRouteBackend(e.ctx, e.user, https.ID, route.ID); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.DeleteTunnelGroupBackend(e.ctx, e.user, b.ID); err != nil {
		t.Errorf("delete after every module released it: %v", err)
	}
}

func BenchmarkGetTunnelGroupBackend1000Tunnels(b *testing.B) {
	e := newEnv(b)
	_, token := e.token(b, e.user)
	for i := range 1000 {
		labels := map[string]string{"env": "prod", "n": strings.Repeat("x", i%7+1)}
		if _, err := e.svc.Host().RegisterTunnel(e.ctx, token, backends.RegisterTunnelParams{Labels: labels}); err != nil {
			b.Fatal(err)
		}
	}
	be, err := e.svc.CreateTunnelGroupBackend(e.ctx, e.user, backends.CreateParams{Labels: map[string]string{"n": "xxx"}})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		got, err := e.svc.GetTunnelGroupBackend(e.ctx, e.user, be.ID)
		if err != nil || len(got.Tunnels) == 0 {
			b.Fatal(err)
		}
	}
}

// TestBackendTunnelsByIndex: a backend's tunnels are found through the
// label index (tunnels without the backend's labels are never read), and
// at most MaxBackendTunnels, the newest, are shown.
func TestBackendTunnelsByIndex(t *testing.T) {
	st := &countingStore{Store: memstore.New()}
	e := newEnvWithStore(t, st)
	_, token := e.token(t, e.user)
	first := e.tunnel(t, token, map[string]string{"env": "prod", "app": "api"}) // the oldest: beyond the bound
	for i := range edgeplane.MaxBackendTunnels {
		e.tunnel(t, token, map[string]string{"env": "prod", "app": "api", "n": strconv.Itoa(i)})
	}
	for range 300 {
		e.tunnel(t, token, map[string]string{"env": "dev", "app": "api"}) // app=api, but not env=prod
		e.tunnel(t, token, map[string]string{"zone": "eu"})               // no label of the backend
	}
	b := e.backend(t, e.user, map[string]string{"env": "prod", "app": "api"})
	st.listed.Store(0)
	got, err := e.svc.GetTunnelGroupBackend(e.ctx, e.user, b.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Tunnels) != edgeplane.MaxBackendTunnels {
		t.Fatalf("%d tunnels shown, want the bound %d", len(got.Tunnels), edgeplane.MaxBackendTunnels)
	}
	for _, r := range got.Tunnels {
		if r.ID == first.ID {
			t.Fatal("the oldest tunnel, beyond the bound, is shown")
		}
	}
	// The index of the first label key (app=api) holds the 1,001 selected
	// tunnels and the 300 dev ones; the reads stop once past the bound.
	if n := st.listed.Load(); n > int64(edgeplane.MaxBackendTunnels+300+1) {
		t.Errorf("showing the backend read %d tunnel records; the zone=eu ones must never be read", n)
	}
	if !strings.Contains(e.logs.String(), "more online tunnels than are shown") {
		t.Error("the bound was not logged")
	}
	// The data plane's lookup has the same bound and order.
	tunnels, err := e.svc.Host().DataPlane().BackendTunnels(e.ctx, e.user.AccountID, b.ID)
	if err != nil || len(tunnels) != edgeplane.MaxBackendTunnels {
		t.Fatalf("BackendTunnels gave %d tunnels (%v), want the bound %d", len(tunnels), err, edgeplane.MaxBackendTunnels)
	}
	if tunnels[0].ID != got.Tunnels[0].ID || tunnels[len(tunnels)-1].ID != got.Tunnels[len(got.Tunnels)-1].ID {
		t.Error("BackendTunnels differs from the backend's tunnels at the bound")
	}
}
