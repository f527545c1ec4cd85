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

// member adds a user who is not an admin to account a, with an API key.
func (s *server) member(a account, name string) account {
	s.t.Helper()
	ctx := context.Background()
	u, err := s.svc.Host().CreateUser(ctx, a.p.AccountID, identity.SubjectParams{Name: name})
	if err != nil {
		s.t.Fatal(err)
	}
	k, err := s.svc.Host().CreateAPIKey(ctx, a.p.AccountID, identity.CreateAPIKeyParams{OwnerID: u.ID, Description: name + "'s key"})
	if err != nil {
		s.t.Fatal(err)
	}
	p, err := s.svc.Authenticate(ctx, *k.Token)
	if err != nil {
		s.t.Fatal(err)
	}
	return account{key: *k.Token, p: p}
}

// TestAPIKeys: an admin sees and manages every key of the account, and
// may make one for another user; anyone else sees and manages only their
// own (another's is not found, as in the API); a key's token is shown
// once.
func TestAPIKeys(t *testing.T) {
	s := newServer(t, console.Options{})
	ctx := context.Background()
	m := s.member(s.a, "mia")
	adminKeys, err := s.svc.ListAPIKeys(ctx, s.a.p, edgeplaneListAll)
	if err != nil {
		t.Fatal(err)
	}
	var adminKey string
	for _, k := range adminKeys.Items {
		if k.OwnerID == s.a.p.SubjectID {
			adminKey = k.ID
		}
	}

	admin := s.browser(t)
	at := admin.signIn(s.a.key)
	list := admin.get("/console/api_keys")
	if !strings.Contains(list.body, "mia&#39;s key") || !strings.Contains(list.body, adminKey) || !strings.Contains(list.body, `id="owner_id"`) {
		t.Errorf("the admin's list: %s", list.body)
	}
	bad := admin.post("/console/api_keys", url.Values{"csrf": {at}, "owner_id": {"usr_nope"}})
	if bad.status != http.StatusBadRequest || !strings.Contains(bad.body, `id="owner_id-error"`) {
		t.Errorf("a bad owner: %d:\n%s", bad.status, bad.body)
	}
	got := admin.post("/console/api_keys", url.Values{"csrf": {at}, "owner_id": {m.p.SubjectID}, "description": {"for mia"}})
	if got.status != http.StatusSeeOther || !strings.HasPrefix(got.location, "/console/api_keys/ak_") {
		t.Fatalf("%d to %q: %s", got.status, got.location, got.body)
	}
	first := admin.get(got.location)
	if !strings.Contains(first.body, `id="token"`) || !strings.Contains(first.body, "epk_") || !strings.Contains(first.body, m.p.SubjectID) {
		t.Errorf("the new key's page: %s", first.body)
	}
	if again := admin.get(got.location); strings.Contains(again.body, "epk_") || !strings.Contains(again.body, `id="token-gone"`) {
		t.Error("the token is shown again")
	}
	forMia := strings.TrimPrefix(got.location, "/console/api_keys/")

	member := s.browser(t)
	mt := member.signIn(m.key)
	own := member.get("/console/api_keys")
	if !strings.Contains(own.body, forMia) || strings.Contains(own.body, adminKey) || strings.Contains(own.body, `id="owner_id"`) {
		t.Errorf("the member's list: %s", own.body)
	}
	if got := member.get("/console/api_keys/" + adminKey); got.status != http.StatusNotFound {
		t.Errorf("the member reads the admin's key: %d, want 404", got.status)
	}
	if got := member.post("/console/api_keys/"+adminKey+"/delete", url.Values{"csrf": {mt}}); got.status != http.StatusNotFound {
		t.Errorf("the member deletes the admin's key: %d, want 404", got.status)
	}
	if _, err := s.svc.GetAPIKey(ctx, s.a.p, adminKey); err != nil {
		t.Errorf("the admin's key: %v", err)
	}
	crafted := member.post("/console/api_keys", url.Values{"csrf": {mt}, "owner_id": {s.a.p.SubjectID}})
	if crafted.status != http.StatusForbidden || !strings.Contains(crafted.body, "only an admin may set owner_id") {
		t.Errorf("a member naming another owner: %d:\n%s", crafted.status, crafted.body)
	}
	if got := member.post("/console/api_keys/"+forMia+"/delete", url.Values{"csrf": {mt}}); got.status != http.StatusSeeOther {
		t.Errorf("the member deletes their own key: %d", got.status)
	}
	if _, err := s.svc.GetAPIKey(ctx, s.a.p, forMia); err == nil {
		t.Error("the key is still there")
	}
}
