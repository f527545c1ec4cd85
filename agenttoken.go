package edgeplane

import (
	"time"

	"github.com/edgeplane/edgeplane/agents"
)

// Agents' resume tokens (a session's cookie, an endpoint's token) are
// the Service's seal of the ID and the time the token was made, bound to
// their purpose, account and credential: package internal/agenttokens
// makes and opens them.

// AgentToken returns the resume token of id (a session's or an
// endpoint's, as purpose says) for an agent of accountID authenticated
// by credentialID, made now; a host operation of tunnel servers.
func (h *Host) AgentToken(purpose agents.TokenPurpose, accountID, credentialID, id string) string {
	return h.s.tokens.Issue(purpose, accountID, credentialID, id)
}

// OpenAgentToken checks that token is the resume token of id for
// purpose, accountID and credentialID, made by a Service of this store
// (one with the same sealing key), and returns when it was made (to the
// second; the zero time for a token made before tokens carried one). Any
// failure is PermissionDenied with one message, naming neither the ID
// nor why.
func (h *Host) OpenAgentToken(purpose agents.TokenPurpose, token, accountID, credentialID, id string) (time.Time, error) {
	return h.s.tokens.Open(purpose, token, accountID, credentialID, id)
}
