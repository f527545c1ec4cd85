package edgeplane_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/memstore"
)

func TestAgentToken(t *testing.T) {
	e := newEnv(t)
	h := e.svc.Host()
	tok := h.AgentToken(edgeplane.AgentTokenEndpoint, "acct_1", "cr_1", "ep_1")
	if err := h.CheckAgentToken(edgeplane.AgentTokenEndpoint, tok, "acct_1", "cr_1", "ep_1"); err != nil {
		t.Fatalf("the token as made: %v", err)
	}
	other := mustService(edgeplane.New(memstore.New(), edgeplane.Options{})) // another store: another sealing key
	tests := []struct {
		name                     string
		purpose                  edgeplane.AgentTokenPurpose
		token, account, cred, id string
		check                    func(edgeplane.AgentTokenPurpose, string, string, string, string) error
	}{
		{"another ID", edgeplane.AgentTokenEndpoint, tok, "acct_1", "cr_1", "ep_2", h.CheckAgentToken},
		{"another credential", edgeplane.AgentTokenEndpoint, tok, "acct_1", "cr_2", "ep_1", h.CheckAgentToken},
		{"another account", edgeplane.AgentTokenEndpoint, tok, "acct_2", "cr_1", "ep_1", h.CheckAgentToken},
		{"another purpose", edgeplane.AgentTokenSession, tok, "acct_1", "cr_1", "ep_1", h.CheckAgentToken},
		{"another store's key", edgeplane.AgentTokenEndpoint, tok, "acct_1", "cr_1", "ep_1", other.Host().CheckAgentToken},
		{"forged", edgeplane.AgentTokenEndpoint, "AAAA" + tok[4:], "acct_1", "cr_1", "ep_1", h.CheckAgentToken},
		{"not base64", edgeplane.AgentTokenEndpoint, "!!", "acct_1", "cr_1", "ep_1", h.CheckAgentToken},
		{"empty", edgeplane.AgentTokenEndpoint, "", "acct_1", "cr_1", "ep_1", h.CheckAgentToken},
		{"too long", edgeplane.AgentTokenEndpoint, strings.Repeat("A", 600), "acct_1", "cr_1", "ep_1", h.CheckAgentToken},
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
