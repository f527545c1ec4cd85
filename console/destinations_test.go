package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane/console"
)

// TestEventDestinations: a destination is made from the form (the API's
// violations at their field), its secret shown once, its delivery state
// on its page and in the list; delete removes it.
func TestEventDestinations(t *testing.T) {
	s := newServer(t, console.Options{})
	b := s.browser(t)
	token := b.signIn(s.a.key)

	cases := []struct {
		name    string
		form    url.Values
		wantErr []string
	}{
		{"no URL", url.Values{}, []string{`id="target-http-url-error"`}},
		{"not allowed", url.Values{"url": {"https://198.51.100.1/hook"}}, []string{`id="target-http-url-error"`, "event destinations may reach"}},
		{"reserved header", url.Values{"url": {"https://192.0.2.10/hook"}, "headers": {"X-Team: edge\nContent-Type: text/plain"}},
			[]string{`id="target-http-headers-error"`, "Content-Type: is set by the delivery"}},
	}
	for _, tc := range cases {
		tc.form.Set("csrf", token)
		got := b.post("/console/event_destinations", tc.form)
		if got.status != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400", tc.name, got.status)
		}
		for _, w := range tc.wantErr {
			if !strings.Contains(got.body, w) {
				t.Errorf("%s: the page lacks %q:\n%s", tc.name, w, got.body)
			}
		}
	}
	got := b.post("/console/event_destinations", url.Values{"csrf": {token}, "url": {"https://192.0.2.10/hook"}, "headers": {"X-Team: edge"}, "description": {"ops"}})
	if got.status != http.StatusSeeOther || !strings.HasPrefix(got.location, "/console/event_destinations/ed_") {
		t.Fatalf("%d to %q: %s", got.status, got.location, got.body)
	}
	first := b.get(got.location)
	if !strings.Contains(first.body, `id="secret"`) || !strings.Contains(first.body, "whsec_") {
		t.Errorf("the new destination's page does not show its secret: %s", first.body)
	}
	for _, want := range []string{`id="delivery"`, `<span class="tag ok">ok</span>`, "X-Team: edge"} {
		if !strings.Contains(first.body, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if again := b.get(got.location); strings.Contains(again.body, "whsec_") {
		t.Error("the secret is shown again")
	}
	list := b.get("/console/event_destinations?" + url.Values{"filter": {`obj.delivery.state == "ok"`}}.Encode())
	if !strings.Contains(list.body, "https://192.0.2.10/hook") || !strings.Contains(list.body, `<span class="tag ok">ok</span>`) {
		t.Errorf("the list: %s", list.body)
	}
	id := strings.TrimPrefix(got.location, "/console/event_destinations/")
	if del := b.post(got.location+"/delete", url.Values{"csrf": {token}}); del.status != http.StatusSeeOther {
		t.Fatalf("delete: %d", del.status)
	}
	if _, err := s.svc.GetEventDestination(context.Background(), s.a.p, id); err == nil {
		t.Error("the destination is still there")
	}
}
