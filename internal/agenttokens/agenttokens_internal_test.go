package agenttokens

import (
	"encoding/base64"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/internal/seal"
)

// TestTokenWithoutTime: a token made before tokens carried their time
// (the sealed ID alone) still opens for its ID, as made at the zero
// time, so that it has expired; another ID's does not open.
func TestTokenWithoutTime(t *testing.T) {
	sealer, err := seal.New(seal.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	tokens := New(sealer, time.Now)
	old := base64.RawURLEncoding.EncodeToString(sealer.Seal([]byte("ep_1"), aad(agents.TokenEndpoint, "acct_1", "cr_1")))
	made, err := tokens.Open(agents.TokenEndpoint, old, "acct_1", "cr_1", "ep_1")
	if err != nil || !made.IsZero() {
		t.Fatalf("an old token opened as made at %v, %v; want the zero time", made, err)
	}
	if _, err := tokens.Open(agents.TokenEndpoint, old, "acct_1", "cr_1", "ep_2"); err == nil {
		t.Fatal("an old token opened for another ID")
	}
}

// TestOpen: a token opens for what it was issued for, with the time it
// was made (to the second), and for nothing else, each refusal with the
// same error.
func TestOpen(t *testing.T) {
	sealer, err := seal.New(seal.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	made := time.Date(2030, 1, 2, 3, 4, 5, 600, time.UTC)
	tokens := New(sealer, func() time.Time { return made })
	tok := tokens.Issue(agents.TokenSession, "acct_1", "cr_1", "ts_1")
	at, err := tokens.Open(agents.TokenSession, tok, "acct_1", "cr_1", "ts_1")
	if err != nil || !at.Equal(made.Truncate(time.Second)) {
		t.Fatalf("Open = %v, %v; want %v", at, err, made.Truncate(time.Second))
	}
	other, err := seal.New(seal.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name                           string
		tokens                         *Issuer
		purpose                        agents.TokenPurpose
		token, account, credential, id string
	}{
		{"another purpose", tokens, agents.TokenEndpoint, tok, "acct_1", "cr_1", "ts_1"},
		{"another account", tokens, agents.TokenSession, tok, "acct_2", "cr_1", "ts_1"},
		{"another credential", tokens, agents.TokenSession, tok, "acct_1", "cr_2", "ts_1"},
		{"another ID", tokens, agents.TokenSession, tok, "acct_1", "cr_1", "ts_2"},
		{"another sealing key", New(other, time.Now), agents.TokenSession, tok, "acct_1", "cr_1", "ts_1"},
		{"not base64url", tokens, agents.TokenSession, tok + "!", "acct_1", "cr_1", "ts_1"},
		{"too long", tokens, agents.TokenSession, tok + string(make([]byte, maxTokenBytes)), "acct_1", "cr_1", "ts_1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.tokens.Open(tc.purpose, tc.token, tc.account, tc.credential, tc.id)
			want := "the session's resume token is not valid: it was not issued for this session and credential"
			if tc.purpose == agents.TokenEndpoint {
				want = "the endpoint's resume token is not valid: it was not issued for this endpoint and credential"
			}
			if apierr.CodeOf(err) != apierr.PermissionDenied || err.Error() != want {
				t.Fatalf("Open = %v; want PermissionDenied %q", err, want)
			}
		})
	}
}
