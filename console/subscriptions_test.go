package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane/console"
	"github.com/edgeplane/edgeplane/events"
)

// TestSubscriptions: an event subscription is made from its form (an
// unknown event type and another account's destination refused at
// their line, nothing made), shown, its destinations edited, a source
// added (an unknown type refused at the field) and removed, and deleted;
// another account's subscription is not found; a form without the CSRF
// token changes nothing.
func TestSubscriptions(t *testing.T) {
	s := newServer(t, console.Options{})
	ctx := context.Background()
	b := s.browser(t)
	token := b.signIn(s.a.key)
	target := &events.TargetParams{HTTP: &events.HTTPTargetParams{URL: "https://192.0.2.10/hook"}}
	dest, err := s.svc.CreateEventDestination(ctx, s.a.p, events.CreateDestinationParams{Target: target})
	must(t, err)
	other, err := s.svc.CreateEventDestination(ctx, s.a.p, events.CreateDestinationParams{Target: target})
	must(t, err)
	theirs, err := s.svc.CreateEventDestination(ctx, s.b.p, events.CreateDestinationParams{Target: target, Description: "secret-b"})
	must(t, err)

	bad := b.post("/console/event_subscriptions", url.Values{"csrf": {token}, "sources": {"credential_created.v0\ncredential_eaten.v0"},
		"destination_ids": {dest.ID + "\n" + theirs.ID}})
	if bad.status != http.StatusBadRequest && bad.status != http.StatusNotFound || !strings.Contains(bad.body, `id="sources-error"`) ||
		!strings.Contains(bad.body, "line 2 (credential_eaten.v0)") {
		t.Fatalf("an unknown event type: %d:\n%s", bad.status, bad.body)
	}
	if strings.Contains(bad.body, "secret-b") {
		t.Error("the page shows another account's destination")
	}
	bad = b.post("/console/event_subscriptions", url.Values{"csrf": {token}, "sources": {"credential_created.v0"}, "destination_ids": {dest.ID + "\n" + theirs.ID}})
	if !strings.Contains(bad.body, `id="destination_ids-error"`) || !strings.Contains(bad.body, "line 2 ("+theirs.ID+")") {
		t.Fatalf("another account's destination: %d:\n%s", bad.status, bad.body)
	}
	if page, err := s.svc.ListEventSubscriptions(ctx, s.a.p, edgeplaneListAll); err != nil || len(page.Items) != 0 {
		t.Fatalf("subscriptions after the refusals: %+v %v", page, err)
	}
	if got := b.post("/console/event_subscriptions", url.Values{"csrf": {"wrong"}, "sources": {"credential_created.v0"}}); got.status != http.StatusForbidden {
		t.Errorf("without the CSRF token: %d, want 403", got.status)
	}

	got := b.post("/console/event_subscriptions", url.Values{"csrf": {token}, "sources": {"credential_created.v0\ncredential_deleted.v0"},
		"destination_ids": {dest.ID}, "description": {"ops"}})
	if got.status != http.StatusSeeOther || !strings.HasPrefix(got.location, "/console/event_subscriptions/") {
		t.Fatalf("create: %d to %q: %s", got.status, got.location, got.body)
	}
	page := got.location
	id := strings.TrimPrefix(page, "/console/event_subscriptions/")
	shown := b.get(page)
	for _, want := range []string{"credential_created.v0", "credential_deleted.v0", dest.ID, "ops"} {
		if !strings.Contains(shown.body, want) {
			t.Errorf("the subscription's page lacks %q", want)
		}
	}

	if got := b.post(page+"/edit", url.Values{"csrf": {token}, "description": {"ops"}, "metadata": {""}, "destination_ids": {dest.ID + "\n" + other.ID}}); got.status != http.StatusSeeOther {
		t.Fatalf("edit: %d %s", got.status, got.body)
	}
	sub, err := s.svc.GetEventSubscription(ctx, s.a.p, id)
	if err != nil || len(sub.Destinations) != 2 || sub.Destinations[1].ID != other.ID {
		t.Fatalf("the destinations after the edit: %+v %v", sub, err)
	}

	bad = b.post(page+"/sources", url.Values{"csrf": {token}, "type": {"nothing.v9"}})
	if bad.status != http.StatusBadRequest || !strings.Contains(bad.body, `id="type-error"`) {
		t.Fatalf("an unknown source: %d:\n%s", bad.status, bad.body)
	}
	if got := b.post(page+"/sources", url.Values{"csrf": {token}, "type": {"ip_policy_created.v0"}}); got.status != http.StatusSeeOther {
		t.Fatalf("add a source: %d %s", got.status, got.body)
	}
	if got := b.post(page+"/sources/credential_deleted.v0/delete", url.Values{"csrf": {token}}); got.status != http.StatusSeeOther {
		t.Fatalf("remove a source: %d %s", got.status, got.body)
	}
	sub, err = s.svc.GetEventSubscription(ctx, s.a.p, id)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, src := range sub.Sources {
		types = append(types, src.Type)
	}
	if strings.Join(types, " ") != "credential_created.v0 ip_policy_created.v0" {
		t.Errorf("sources %v", types)
	}

	theirSub, err := s.svc.CreateEventSubscription(ctx, s.b.p, events.CreateSubscriptionParams{Description: "secret-b", DestinationIDs: []string{theirs.ID},
		Sources: []events.CreateSourceParams{{Type: "credential_created.v0"}}})
	must(t, err)
	theirPage := "/console/event_subscriptions/" + theirSub.ID
	if got := b.get(theirPage); got.status != http.StatusNotFound || strings.Contains(got.body, "secret-b") {
		t.Errorf("another account's subscription: %d", got.status)
	}
	for _, f := range []string{"/edit", "/sources", "/sources/credential_created.v0/delete", "/delete"} {
		if got := b.post(theirPage+f, url.Values{"csrf": {token}, "description": {"mine"}, "type": {"ip_policy_created.v0"}}); got.status != http.StatusNotFound {
			t.Errorf("POST %s%s: %d, want 404", theirPage, f, got.status)
		}
	}
	if got, err := s.svc.GetEventSubscription(ctx, s.b.p, theirSub.ID); err != nil || got.Description != "secret-b" || len(got.Sources) != 1 {
		t.Errorf("another account's subscription after the tries: %+v %v", got, err)
	}

	if got := b.post(page+"/delete", url.Values{"csrf": {token}}); got.status != http.StatusSeeOther || got.location != "/console/event_subscriptions" {
		t.Fatalf("delete: %d to %q", got.status, got.location)
	}
	if _, err := s.svc.GetEventSubscription(ctx, s.a.p, id); err == nil {
		t.Error("the subscription is still there")
	}
}
