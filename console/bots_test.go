package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane/console"
	"github.com/edgeplane/edgeplane/identity"
)

// TestBots: a bot user is made from its form (a name too long refused
// at the field), shown, deactivated from its edit form, its API keys
// linked by filter, and deleted; another account's bot is not found.
func TestBots(t *testing.T) {
	s := newServer(t, console.Options{})
	ctx := context.Background()
	b := s.browser(t)
	token := b.signIn(s.a.key)

	bad := b.post("/console/bot_users", url.Values{"csrf": {token}, "name": {strings.Repeat("x", 256)}, "active": {"on"}})
	if bad.status != http.StatusBadRequest || !strings.Contains(bad.body, `id="name-error"`) {
		t.Fatalf("a name of 256 bytes: %d:\n%s", bad.status, bad.body)
	}
	got := b.post("/console/bot_users", url.Values{"csrf": {token}, "name": {"ci"}, "active": {"on"}})
	if got.status != http.StatusSeeOther || !strings.HasPrefix(got.location, "/console/bot_users/bot_") {
		t.Fatalf("create: %d to %q: %s", got.status, got.location, got.body)
	}
	botPage := got.location
	id := strings.TrimPrefix(botPage, "/console/bot_users/")
	if p := b.get(botPage); !strings.Contains(p.body, "ci") || !strings.Contains(p.body, "/console/api_keys?filter=") {
		t.Errorf("the bot's page:\n%s", p.body)
	}
	if got := b.post(botPage+"/edit", url.Values{"csrf": {token}, "name": {"ci"}}); got.status != http.StatusSeeOther {
		t.Fatalf("deactivate: %d %s", got.status, got.body)
	}
	if bot, err := s.svc.GetBotUser(ctx, s.a.p, id); err != nil || bot.Active || bot.Name != "ci" {
		t.Fatalf("after the edit: %+v %v", bot, err)
	}
	if _, err := s.svc.CreateAPIKey(ctx, s.a.p, identity.CreateAPIKeyParams{OwnerID: id, Description: "bot key"}); err != nil {
		t.Fatal(err)
	}
	if keys := b.get("/console/api_keys?" + url.Values{"filter": {`obj.owner_id == "` + id + `"`}}.Encode()); keys.status != http.StatusOK || !strings.Contains(keys.body, "bot key") {
		t.Errorf("the bot's API keys by the page's link: %d", keys.status)
	}

	theirs, err := s.svc.CreateBotUser(ctx, s.b.p, identity.CreateBotUserParams{Name: "secret-b"})
	must(t, err)
	if got := b.get("/console/bot_users/" + theirs.ID); got.status != http.StatusNotFound || strings.Contains(got.body, "secret-b") {
		t.Errorf("another account's bot: %d", got.status)
	}
	for _, f := range []string{"/edit", "/delete"} {
		if got := b.post("/console/bot_users/"+theirs.ID+f, url.Values{"csrf": {token}, "name": {"mine"}}); got.status != http.StatusNotFound {
			t.Errorf("POST another account's bot%s: %d", f, got.status)
		}
	}
	if bot, err := s.svc.GetBotUser(ctx, s.b.p, theirs.ID); err != nil || bot.Name != "secret-b" || !bot.Active {
		t.Errorf("another account's bot after the tries: %+v %v", bot, err)
	}
	if got := b.post(botPage+"/delete", url.Values{"csrf": {"wrong"}}); got.status != http.StatusForbidden {
		t.Errorf("without the CSRF token: %d", got.status)
	}
	if got := b.post(botPage+"/delete", url.Values{"csrf": {token}}); got.status != http.StatusSeeOther {
		t.Fatalf("delete: %d %s", got.status, got.body)
	}
	if _, err := s.svc.GetBotUser(ctx, s.a.p, id); err == nil {
		t.Error("the bot is still there")
	}
}
