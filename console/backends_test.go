package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/console"
	"github.com/edgeplane/edgeplane/edges"
)

// TestBackends: a tunnel group backend is made from its form (a line
// without "=" named by its line, the API's label rules at the field),
// listed, shown and deleted; it is set as the backend of an HTTPS route
// and of a TCP edge from their pages (an unknown or another account's
// backend refused at the field, nothing changed) and removed again; a
// form without the CSRF token changes nothing.
func TestBackends(t *testing.T) {
	s := newServer(t, console.Options{})
	ctx := context.Background()
	b := s.browser(t)
	token := b.signIn(s.a.key)

	bad := b.post("/console/backends", url.Values{"csrf": {token}, "labels": {"app=web\nnot a label"}})
	if bad.status != http.StatusBadRequest || !strings.Contains(bad.body, `id="labels-error"`) || !strings.Contains(bad.body, "line 2 (not a label): must be KEY=VALUE") {
		t.Fatalf("a label line without =: %d:\n%s", bad.status, bad.body)
	}
	bad = b.post("/console/backends", url.Values{"csrf": {token}, "labels": {"app=web\n\n app = api"}})
	if bad.status != http.StatusBadRequest || !strings.Contains(bad.body, `line 3 (app = api): repeats the key &#34;app&#34; of line 1`) {
		t.Fatalf("a label key given twice: %d:\n%s", bad.status, bad.body)
	}
	bad = b.post("/console/backends", url.Values{"csrf": {token}, "labels": {""}})
	if bad.status != http.StatusBadRequest || !strings.Contains(bad.body, `id="labels-error"`) || !strings.Contains(bad.body, "at least one label") {
		t.Fatalf("no labels: %d:\n%s", bad.status, bad.body)
	}
	if page, err := s.svc.ListTunnelGroupBackends(ctx, s.a.p, edgeplaneListAll); err != nil || len(page.Items) != 0 {
		t.Fatalf("backends after the refusals: %+v %v", page, err)
	}
	got := b.post("/console/backends", url.Values{"csrf": {token}, "labels": {"app=web\n env = prod "}, "description": {"the web app"}})
	if got.status != http.StatusSeeOther || !strings.HasPrefix(got.location, "/console/backends/bkdtg_") {
		t.Fatalf("create: %d to %q: %s", got.status, got.location, got.body)
	}
	id := strings.TrimPrefix(got.location, "/console/backends/")
	bk, err := s.svc.GetTunnelGroupBackend(ctx, s.a.p, id)
	if err != nil || bk.Labels["app"] != "web" || bk.Labels["env"] != "prod" || len(bk.Labels) != 2 {
		t.Fatalf("the backend made: %+v %v", bk, err)
	}
	page := b.get(got.location)
	for _, want := range []string{"app=web", "env=prod", "the web app", "-label app=web -label env=prod", "Created backend " + id} {
		if !strings.Contains(page.body, want) {
			t.Errorf("the backend's page lacks %q:\n%s", want, page.body)
		}
	}
	bad = b.post(got.location+"/edit", url.Values{"csrf": {token}, "labels": {"app=web\nbroken"}, "description": {"the web app"}})
	if bad.status != http.StatusBadRequest || !strings.Contains(bad.body, "line 2 (broken): must be KEY=VALUE") || !strings.Contains(bad.body, `id="edit-backend"`) {
		t.Fatalf("an edit with a broken label line: %d:\n%s", bad.status, bad.body)
	}
	if ed := b.post(got.location+"/edit", url.Values{"csrf": {token}, "labels": {"env=prod\napp=web"}, "description": {"the web app"}}); ed.status != http.StatusSeeOther ||
		!strings.Contains(b.get(got.location).body, "Nothing changed") {
		t.Errorf("an edit of the same labels in another order: %d, want nothing changed", ed.status)
	}
	if ed := b.post(got.location+"/edit", url.Values{"csrf": {token}, "labels": {"app=web\nenv=staging"}, "description": {"the web app"}}); ed.status != http.StatusSeeOther {
		t.Fatalf("edit: %d %s", ed.status, ed.body)
	}
	if bk, err := s.svc.GetTunnelGroupBackend(ctx, s.a.p, id); err != nil || bk.Labels["env"] != "staging" {
		t.Fatalf("after the edit: %+v %v", bk, err)
	}
	if list := b.get("/console/backends?" + url.Values{"filter": {`obj.labels.app == "web"`}}.Encode()); !strings.Contains(list.body, id) {
		t.Errorf("the filtered list lacks the backend:\n%s", list.body)
	}

	e, err := s.svc.CreateHTTPSEdge(ctx, s.a.p, edges.CreateEdgeParams{})
	must(t, err)
	rt, err := s.svc.CreateHTTPSEdgeRoute(ctx, s.a.p, e.ID, edges.CreateRouteParams{MatchType: "path_prefix", Match: "/"})
	must(t, err)
	theirs, err := s.svc.CreateTunnelGroupBackend(ctx, s.b.p, backends.CreateParams{Labels: map[string]string{"app": "b"}})
	must(t, err)
	routePage := "/console/edges/https/" + e.ID + "/routes/" + rt.ID
	for _, wrong := range []string{"bkdtg_nope", theirs.ID, ""} {
		bad = b.post(routePage+"/backend", url.Values{"csrf": {token}, "backend_id": {wrong}})
		if bad.status != http.StatusBadRequest && bad.status != http.StatusNotFound || !strings.Contains(bad.body, `id="backend_id-error"`) || !strings.Contains(bad.body, `id="edit-route"`) {
			t.Errorf("backend %q: %d, want the route's page with the field's error:\n%s", wrong, bad.status, bad.body)
		}
	}
	if r, err := s.svc.GetHTTPSEdgeRoute(ctx, s.a.p, e.ID, rt.ID); err != nil || r.Backend != nil {
		t.Fatalf("the route after the refusals: %+v %v", r, err)
	}
	if got := b.post(routePage+"/backend", url.Values{"csrf": {"wrong"}, "backend_id": {id}}); got.status != http.StatusForbidden {
		t.Errorf("without the CSRF token: %d, want 403", got.status)
	}
	got = b.post(routePage+"/backend", url.Values{"csrf": {token}, "backend_id": {id}})
	if got.status != http.StatusSeeOther || got.location != routePage {
		t.Fatalf("set the route's backend: %d to %q: %s", got.status, got.location, got.body)
	}
	if r, err := s.svc.GetHTTPSEdgeRoute(ctx, s.a.p, e.ID, rt.ID); err != nil || r.Backend == nil || r.Backend.Backend.ID != id {
		t.Fatalf("the route's backend: %+v %v", r, err)
	}
	if page := b.get(routePage); !strings.Contains(page.body, `value="`+id+`"`) || !strings.Contains(page.body, `id="remove-backend"`) {
		t.Errorf("the route's page does not show its backend:\n%s", page.body)
	}
	if inUse := b.post("/console/backends/"+id+"/delete", url.Values{"csrf": {token}}); inUse.status != http.StatusConflict {
		t.Errorf("deleting a backend in use: %d, want 409", inUse.status)
	}
	if got := b.post(routePage+"/backend/delete", url.Values{"csrf": {token}}); got.status != http.StatusSeeOther {
		t.Fatalf("remove the route's backend: %d %s", got.status, got.body)
	}
	if r, err := s.svc.GetHTTPSEdgeRoute(ctx, s.a.p, e.ID, rt.ID); err != nil || r.Backend != nil {
		t.Fatalf("the route after the removal: %+v %v", r, err)
	}

	tcp, err := s.svc.CreateTCPEdge(ctx, s.a.p, edges.CreateTCPEdgeParams{})
	must(t, err)
	tcpPage := "/console/edges/tcp/" + tcp.ID
	bad = b.post(tcpPage+"/backend", url.Values{"csrf": {token}, "backend_id": {"bkdtg_nope"}})
	if !strings.Contains(bad.body, `id="backend_id-error"`) || !strings.Contains(bad.body, `id="edit-edge"`) {
		t.Errorf("a TCP edge's unknown backend: %d:\n%s", bad.status, bad.body)
	}
	if got := b.post(tcpPage+"/backend", url.Values{"csrf": {token}, "backend_id": {id}}); got.status != http.StatusSeeOther || got.location != tcpPage {
		t.Fatalf("set the TCP edge's backend: %d to %q: %s", got.status, got.location, got.body)
	}
	if e, err := s.svc.GetTCPEdge(ctx, s.a.p, tcp.ID); err != nil || e.Backend == nil || e.Backend.Backend.ID != id {
		t.Fatalf("the TCP edge's backend: %+v %v", e, err)
	}
	if got := b.post(tcpPage+"/backend/delete", url.Values{"csrf": {token}}); got.status != http.StatusSeeOther {
		t.Fatalf("remove the TCP edge's backend: %d", got.status)
	}
	if got := b.post("/console/backends/"+id+"/delete", url.Values{"csrf": {token}}); got.status != http.StatusSeeOther || got.location != "/console/backends" {
		t.Fatalf("delete: %d to %q", got.status, got.location)
	}
	if _, err := s.svc.GetTunnelGroupBackend(ctx, s.a.p, id); err == nil {
		t.Error("the backend is still there")
	}
}
