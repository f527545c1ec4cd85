package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane/console"
	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/edges"
)

// TestEdges: each kind of edge is created from its form (the API's
// violations at their field, a hostport's at its line), listed, shown and
// deleted.
func TestEdges(t *testing.T) {
	s := newServer(t, console.Options{})
	if _, err := s.svc.CreateReservedDomain(context.Background(), s.a.p, domains.CreateParams{Domain: "app.example.com"}); err != nil {
		t.Fatal(err)
	}
	b := s.browser(t)
	token := b.signIn(s.a.key)
	for _, kind := range []string{"https", "tls", "tcp"} {
		t.Run(kind, func(t *testing.T) {
			base := "/console/edges/" + kind
			bad := b.post(base, url.Values{"csrf": {token}, "hostports": {"app.example.com:443\n\nnot-a-hostport"}})
			if bad.status != http.StatusBadRequest || !strings.Contains(bad.body, `id="hostports-error"`) || !strings.Contains(bad.body, "line 3 (not-a-hostport): ") {
				t.Fatalf("%d, want 400 with the hostport's line:\n%s", bad.status, bad.body)
			}
			port := "443"
			if kind == "tcp" {
				port = "20001"
			}
			got := b.post(base, url.Values{"csrf": {token}, "hostports": {"app.example.com:" + port}, "description": {kind + " edge"}})
			if got.status != http.StatusSeeOther || !strings.HasPrefix(got.location, base+"/edg") {
				t.Fatalf("%d to %q: %s", got.status, got.location, got.body)
			}
			id := strings.TrimPrefix(got.location, base+"/")
			page := b.get(got.location)
			if page.status != http.StatusOK || !strings.Contains(page.body, "app.example.com:"+port) || !strings.Contains(page.body, kind+" edge") {
				t.Errorf("the edge's page: %d %s", page.status, page.body)
			}
			if hasEditor := strings.Contains(page.body, `id="policy-form"`); hasEditor != (kind == "tls") {
				t.Errorf("traffic-policy editor on the page: %v", hasEditor)
			}
			if list := b.get(base); !strings.Contains(list.body, id) {
				t.Errorf("the list lacks %s", id)
			}
			if del := b.post(got.location+"/delete", url.Values{"csrf": {token}}); del.status != http.StatusSeeOther || del.location != base {
				t.Fatalf("delete: %d to %q: %s", del.status, del.location, del.body)
			}
			if page := b.get(got.location); page.status != http.StatusNotFound {
				t.Errorf("after delete: %d, want 404", page.status)
			}
		})
	}
}

// TestRoutes: a route is added to an HTTPS edge from the edge's page
// (the API's violations at their field), shown and deleted.
func TestRoutes(t *testing.T) {
	s := newServer(t, console.Options{})
	e, err := s.svc.CreateHTTPSEdge(context.Background(), s.a.p, edges.CreateEdgeParams{})
	if err != nil {
		t.Fatal(err)
	}
	b := s.browser(t)
	token := b.signIn(s.a.key)
	base := "/console/edges/https/" + e.ID
	bad := b.post(base+"/routes", url.Values{"csrf": {token}, "match_type": {"path_prefix"}, "match": {"no-slash"}})
	if bad.status != http.StatusBadRequest || !strings.Contains(bad.body, `id="match-error"`) || !strings.Contains(bad.body, `value="no-slash"`) {
		t.Fatalf("%d, want 400 with the match's error:\n%s", bad.status, bad.body)
	}
	got := b.post(base+"/routes", url.Values{"csrf": {token}, "match_type": {"path_prefix"}, "match": {"/api"}, "description": {"the API"}})
	if got.status != http.StatusSeeOther || !strings.HasPrefix(got.location, base+"/routes/edghtsrt_") {
		t.Fatalf("%d to %q: %s", got.status, got.location, got.body)
	}
	if page := b.get(base); !strings.Contains(page.body, "/api") || !strings.Contains(page.body, "the API") {
		t.Errorf("the edge's page does not list the route: %s", page.body)
	}
	if page := b.get(got.location); page.status != http.StatusOK || !strings.Contains(page.body, `id="policy-form"`) {
		t.Errorf("the route's page: %d %s", page.status, page.body)
	}
	if del := b.post(got.location+"/delete", url.Values{"csrf": {token}}); del.status != http.StatusSeeOther || del.location != base {
		t.Fatalf("delete: %d to %q", del.status, del.location)
	}
	if page := b.get(got.location); page.status != http.StatusNotFound {
		t.Errorf("after delete: %d, want 404", page.status)
	}
}

// TestTrafficPolicyEditor: a document the engine refuses is not saved,
// and the page shows it as typed with each error at its line and path
// next to the editor; a valid one is saved, and shown indented.
func TestTrafficPolicyEditor(t *testing.T) {
	s := newServer(t, console.Options{})
	ctx := context.Background()
	e, err := s.svc.CreateHTTPSEdge(ctx, s.a.p, edges.CreateEdgeParams{})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := s.svc.CreateHTTPSEdgeRoute(ctx, s.a.p, e.ID, edges.CreateRouteParams{MatchType: "path_prefix", Match: "/"})
	if err != nil {
		t.Fatal(err)
	}
	tls, err := s.svc.CreateTLSEdge(ctx, s.a.p, edges.CreateTLSEdgeParams{})
	if err != nil {
		t.Fatal(err)
	}
	b := s.browser(t)
	token := b.signIn(s.a.key)
	targets := []struct {
		name, page string
		get        func() (*edges.TrafficPolicy, error)
		valid      string
	}{
		{"route", "/console/edges/https/" + e.ID + "/routes/" + rt.ID,
			func() (*edges.TrafficPolicy, error) { return s.svc.GetHTTPSRouteTrafficPolicy(ctx, s.a.p, e.ID, rt.ID) },
			`{"on_http_request": [{"actions": [{"type": "deny", "config": {"status_code": 403}}]}]}`},
		{"tls edge", "/console/edges/tls/" + tls.ID,
			func() (*edges.TrafficPolicy, error) { return s.svc.GetTLSEdgeTrafficPolicy(ctx, s.a.p, tls.ID) },
			`{"on_tcp_connect": [{"actions": [{"type": "deny"}]}]}`},
	}
	cases := []struct {
		name, doc string
		want      []string
	}{
		{"bad status", "{\n  \"inbound\": [\n    {\n      \"actions\": [\n        {\"type\": \"deny\",\n         \"config\": {\"status_code\": 200}}\n      ]\n    }\n  ]\n}",
			[]string{"line 6 (inbound[0].actions[0].config.status_code): "}},
		{"bad expression", "{\"inbound\": [\n {\"expressions\": [\"nope.x\"],\n  \"actions\": [{\"type\": \"deny\"}]}]}",
			[]string{"line 2 (inbound[0].expressions[0]): 1:1: undeclared reference to &#39;nope&#39;"}},
		{"unknown phase", "{\n\"sideways\": []\n}", []string{"line 2 (sideways): unknown phase"}},
		{"syntax", "{\n  \"inbound\": [\n    {\"actions\": [}\n  ]\n}", []string{"line 3: document must be a JSON object"}},
	}
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			for _, tc := range cases {
				got := b.post(tg.page+"/traffic_policy", url.Values{"csrf": {token}, "value": {tc.doc}, "enabled": {"on"}})
				if got.status != http.StatusBadRequest {
					t.Fatalf("%s: %d, want 400: %s", tc.name, got.status, got.body)
				}
				for _, w := range append(tc.want, `id="value-error"`, `aria-describedby="value-error"`, htmlEscape(tc.doc)) {
					if !strings.Contains(got.body, w) {
						t.Errorf("%s: the page lacks %q:\n%s", tc.name, w, got.body)
					}
				}
				if m, err := tg.get(); err == nil {
					t.Errorf("%s: a refused policy was saved: %+v", tc.name, m)
				}
			}
			got := b.post(tg.page+"/traffic_policy", url.Values{"csrf": {token}, "value": {tg.valid}, "enabled": {"on"}})
			if got.status != http.StatusSeeOther || got.location != tg.page {
				t.Fatalf("save: %d to %q: %s", got.status, got.location, got.body)
			}
			m, err := tg.get()
			if err != nil || !m.Enabled {
				t.Fatalf("after saving: %+v %v", m, err)
			}
			page := b.get(tg.page)
			if !strings.Contains(page.body, "Saved the traffic policy.") || !strings.Contains(page.body, "\n  &#34;") {
				t.Errorf("the page after saving: %s", page.body)
			}
			if got := b.post(tg.page+"/traffic_policy/delete", url.Values{"csrf": {token}}); got.status != http.StatusSeeOther {
				t.Fatalf("remove: %d", got.status)
			}
			if _, err := tg.get(); err == nil {
				t.Error("the policy is still set after its removal")
			}
		})
	}
}

// TestTrafficPolicyBound: the editor's form takes a document as large as
// the API's bound, beyond MaxBodyBytes (the API then says what is too
// large, next to the editor); a form beyond its own bound is 413.
func TestTrafficPolicyBound(t *testing.T) {
	s := newServer(t, console.Options{MaxBodyBytes: 1024})
	tls, err := s.svc.CreateTLSEdge(context.Background(), s.a.p, edges.CreateTLSEdgeParams{})
	must(t, err)
	b := s.browser(t)
	token := b.signIn(s.a.key)
	page := "/console/edges/tls/" + tls.ID
	big := `{"on_tcp_connect": [{"name": "` + strings.Repeat("n", edges.MaxTrafficPolicyBytes) + `", "actions": [{"type": "deny"}]}]}`
	got := b.post(page+"/traffic_policy", url.Values{"csrf": {token}, "value": {big}})
	if got.status != http.StatusBadRequest || !strings.Contains(got.body, `id="value-error"`) || !strings.Contains(got.body, "must be at most 131072 bytes") {
		t.Errorf("a document over the API's bound: %d, want 400 with the API's message at the editor", got.status)
	}
	huge := strings.Repeat("x", 3*edges.MaxTrafficPolicyBytes+8<<10)
	if got := b.post(page+"/traffic_policy", url.Values{"csrf": {token}, "value": {huge}}); got.status != http.StatusRequestEntityTooLarge {
		t.Errorf("a form over its bound: %d, want 413", got.status)
	}
	if got := b.post("/console/edges/tls", url.Values{"csrf": {token}, "description": {strings.Repeat("d", 2000)}}); got.status != http.StatusRequestEntityTooLarge {
		t.Errorf("another form over MaxBodyBytes: %d, want 413", got.status)
	}
	if e, _ := s.svc.GetTLSEdge(context.Background(), s.a.p, tls.ID); e.TrafficPolicy != nil {
		t.Error("a policy was saved")
	}
}
