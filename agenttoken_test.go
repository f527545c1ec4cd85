package edgeplane_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/memstore"
)

// check is h's OpenAgentToken without the time.
func check(h *edgeplane.Host) func(agents.TokenPurpose, string, string, string, string) error {
	return func(p agents.TokenPurpose, token, account, cred, id string) error {
		_, err := h.Tunnels().OpenAgentToken(p, token, account, cred, id)
		return err
	}
}

func TestAgentToken(t *testing.T) {
	e := newEnv(t)
	h := e.svc.Host()
	tok := h.Tunnels().AgentToken(agents.TokenEndpoint, "acct_1", "cr_1", "ep_1")
	made, err := h.Tunnels().OpenAgentToken(agents.TokenEndpoint, tok, "acct_1", "cr_1", "ep_1")
	if err != nil {
		t.Fatalf("the token as made: %v", err)
	}
	if want := e.clock.Now().Truncate(time.Second); !made.Equal(want) {
		t.Errorf("the token was made at %v; want the Service's clock, %v", made, want)
	}
	e.clock.Advance(time.Hour)
	if later := h.Tunnels().AgentToken(agents.TokenEndpoint, "acct_1", "cr_1", "ep_1"); later == tok {
		t.Error("tokens made an hour apart are the same")
	} else if m2, err := h.Tunnels().OpenAgentToken(agents.TokenEndpoint, later, "acct_1", "cr_1", "ep_1"); err != nil || m2.Sub(made) != time.Hour {
		t.Errorf("the later token: made %v, %v; want an hour after the first", m2, err)
	}
	other := mustService(edgeplane.New(memstore.New(), edgeplane.Options{})) // another store: another sealing key
	tests := []struct {
		name                     string
		purpose                  agents.TokenPurpose
		token, account, cred, id string
		check                    func(agents.TokenPurpose, string, string, string, string) error
	}{
		{"another ID", agents.TokenEndpoint, tok, "acct_1", "cr_1", "ep_2", check(h)},
		{"another credential", agents.TokenEndpoint, tok, "acct_1", "cr_2", "ep_1", check(h)},
		{"another account", agents.TokenEndpoint, tok, "acct_2", "cr_1", "ep_1", check(h)},
		{"another purpose", agents.TokenSession, tok, "acct_1", "cr_1", "ep_1", check(h)},
		{"another store's key", agents.TokenEndpoint, tok, "acct_1", "cr_1", "ep_1", check(other.Host())},
		{"forged", agents.TokenEndpoint, "AAAA" + tok[4:], "acct_1", "cr_1", "ep_1", check(h)},
		{"not base64", agents.TokenEndpoint, "!!", "acct_1", "cr_1", "ep_1", check(h)},
		{"empty", agents.TokenEndpoint, "", "acct_1", "cr_1", "ep_1", check(h)},
		{"too long", agents.TokenEndpoint, strings.Repeat("A", 600), "acct_1", "cr_1", "ep_1", check(h)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.check(tt.purpose, tt.token, tt.account, tt.cred, tt.id)
			if !errors.Is(err, apierr.ErrPermissionDenied) {
				t.Fatalf("got %v; want permission denied", err)
			}
			if strings.Contains(err.Error(), tt.id) {
				t.Errorf("the refusal names the ID: %v", err)
			}
		})
	}
}
