package edgeplane

import (
	"encoding/base64"
	"testing"

	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/memstore"
)

// TestAgentTokenWithoutTime: a token made before tokens carried their
// time (the sealed ID alone) still opens for its ID, as made at the zero
// time, so that it has expired; another ID's does not open.
func TestAgentTokenWithoutTime(t *testing.T) {
	s := mustService(New(memstore.New(), Options{}))
	old := base64.RawURLEncoding.EncodeToString(s.sealer.Seal([]byte("ep_1"), agentTokenAAD(agents.TokenEndpoint, "acct_1", "cr_1")))
	made, err := s.Host().OpenAgentToken(agents.TokenEndpoint, old, "acct_1", "cr_1", "ep_1")
	if err != nil || !made.IsZero() {
		t.Fatalf("an old token opened as made at %v, %v; want the zero time", made, err)
	}
	if _, err := s.Host().OpenAgentToken(agents.TokenEndpoint, old, "acct_1", "cr_1", "ep_2"); err == nil {
		t.Fatal("an old token opened for another ID")
	}
}
