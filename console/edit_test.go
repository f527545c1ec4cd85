package console_test

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane/console"
	"github.com/edgeplane/edgeplane/credentials"
)

// TestEditCredential: a valid edit changes exactly what was typed
// differently (an untouched field stays as it was); an invalid one shows
// the API's message next to its field, a bad ACL rule at its line, and
// changes nothing; another account's credential is not found.
func TestEditCredential(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name       string
		form       url.Values // description, metadata, acl as typed
		status     int
		want       credentials.Credential // Description, Metadata, ACL after
		wantInBody []string
	}{
		{"description only", url.Values{"description": {"laptop"}, "metadata": {"m"}, "acl": {"bind:a.example.com"}},
			http.StatusSeeOther, credentials.Credential{Description: "laptop", Metadata: "m", ACL: []string{"bind:a.example.com"}}, nil},
		{"acl replaced", url.Values{"description": {"d"}, "metadata": {"m"}, "acl": {"bind:a.example.com\n\nbind:*.b.example.com"}},
			http.StatusSeeOther, credentials.Credential{Description: "d", Metadata: "m", ACL: []string{"bind:a.example.com", "bind:*.b.example.com"}}, nil},
		{"acl cleared, metadata cleared", url.Values{"description": {"d"}, "metadata": {""}, "acl": {""}},
			http.StatusSeeOther, credentials.Credential{Description: "d", Metadata: "", ACL: nil}, nil},
		{"bad acl rule", url.Values{"description": {"changed"}, "metadata": {"m"}, "acl": {"bind:a.example.com\n\nnot-a-rule"}},
			http.StatusBadRequest, credentials.Credential{Description: "d", Metadata: "m", ACL: []string{"bind:a.example.com"}},
			[]string{`id="acl-error"`, "line 3 (not-a-rule): must be", "not-a-rule</textarea>"}},
		{"description too long", url.Values{"description": {strings.Repeat("x", 256)}, "metadata": {"m"}, "acl": {"bind:a.example.com"}},
			http.StatusBadRequest, credentials.Credential{Description: "d", Metadata: "m", ACL: []string{"bind:a.example.com"}},
			[]string{`id="description-error"`, `aria-invalid="true"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t, console.Options{})
			b := s.browser(t)
			token := b.signIn(s.a.key)
			c, err := s.svc.CreateCredential(ctx, s.a.p, credentials.CreateParams{Description: "d", Metadata: "m", ACL: []string{"bind:a.example.com"}})
			if err != nil {
				t.Fatal(err)
			}
			page := b.get("/console/credentials/" + c.ID)
			for _, want := range []string{`id="edit-credential"`, `value="d"`, "bind:a.example.com</textarea>"} {
				if !strings.Contains(page.body, want) {
					t.Fatalf("the edit form is not pre-filled (%q):\n%s", want, page.body)
				}
			}
			form := url.Values{"csrf": {token}}
			for k, v := range tt.form {
				form[k] = v
			}
			got := b.post("/console/credentials/"+c.ID+"/edit", form)
			if got.status != tt.status {
				t.Fatalf("%d, want %d:\n%s", got.status, tt.status, got.body)
			}
			for _, want := range tt.wantInBody {
				if !strings.Contains(got.body, want) {
					t.Errorf("the page lacks %q:\n%s", want, got.body)
				}
			}
			after, err := s.svc.GetCredential(ctx, s.a.p, c.ID)
			if err != nil {
				t.Fatal(err)
			}
			if after.Description != tt.want.Description || after.Metadata != tt.want.Metadata || !slices.Equal(after.ACL, tt.want.ACL) {
				t.Errorf("after: %q %q %q, want %q %q %q", after.Description, after.Metadata, after.ACL, tt.want.Description, tt.want.Metadata, tt.want.ACL)
			}
		})
	}
}

// TestEditCredentialOtherAccount: another account's credential, by ID in
// the edit form's URL, is not found and is not changed.
func TestEditCredentialOtherAccount(t *testing.T) {
	ctx := context.Background()
	s := newServer(t, console.Options{})
	b := s.browser(t)
	token := b.signIn(s.a.key)
	c, err := s.svc.CreateCredential(ctx, s.b.p, credentials.CreateParams{Description: "theirs"})
	if err != nil {
		t.Fatal(err)
	}
	got := b.post("/console/credentials/"+c.ID+"/edit", url.Values{"csrf": {token}, "description": {"mine"}})
	if got.status != http.StatusNotFound {
		t.Fatalf("%d, want 404", got.status)
	}
	after, err := s.svc.GetCredential(ctx, s.b.p, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if after.Description != "theirs" {
		t.Errorf("another account's credential changed: %q", after.Description)
	}
	// Without the CSRF token, nothing changes either.
	mine, err := s.svc.CreateCredential(ctx, s.a.p, credentials.CreateParams{Description: "mine"})
	if err != nil {
		t.Fatal(err)
	}
	if got := b.post("/console/credentials/"+mine.ID+"/edit", url.Values{"description": {"x"}}); got.status != http.StatusForbidden {
		t.Fatalf("no CSRF token: %d, want 403", got.status)
	}
	if after, _ := s.svc.GetCredential(ctx, s.a.p, mine.ID); after.Description != "mine" {
		t.Errorf("a form without its CSRF token changed the credential: %q", after.Description)
	}
}
