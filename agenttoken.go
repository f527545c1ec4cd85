package edgeplane

import (
	"encoding/base64"

	"github.com/edgeplane/edgeplane/apierr"
)

// Agents' resume tokens. The agent protocol hands an agent opaque values
// that it sends back when it reconnects: the session's cookie (with the
// session ID it had) and each endpoint's token (with the endpoint's ID).
// They are the Service's seal ([Options.SealingKey], AES-256-GCM) of the
// ID, authenticated with their purpose, account and credential, so that
// only this store's tunnel servers make them, and a token is good only
// for the ID, account and credential it was made for: a forged one, or
// one of another credential, does not open.

// AgentTokenPurpose says what an agent's resume token resumes.
type AgentTokenPurpose string

// The purposes of agents' resume tokens.
const (
	// AgentTokenSession is the cookie of a tunnel session.
	AgentTokenSession AgentTokenPurpose = "tunnel_session"
	// AgentTokenEndpoint is the bind token of an endpoint.
	AgentTokenEndpoint AgentTokenPurpose = "endpoint"
)

// maxAgentTokenBytes bounds a token the Host opens: a sealed ID is far
// shorter.
const maxAgentTokenBytes = 512

// AgentToken returns the resume token of id (a session's or an
// endpoint's, as purpose says) for an agent of accountID authenticated
// by credentialID; a host operation of tunnel servers.
func (h *Host) AgentToken(purpose AgentTokenPurpose, accountID, credentialID, id string) string {
	sealed := h.s.sealer.Seal([]byte(id), agentTokenAAD(purpose, accountID, credentialID))
	return base64.RawURLEncoding.EncodeToString(sealed)
}

// CheckAgentToken reports whether token is the resume token of id for
// purpose, accountID and credentialID, made by a Service of this store
// (one with the same sealing key). Any failure is PermissionDenied with
// one message, naming neither the ID nor why.
func (h *Host) CheckAgentToken(purpose AgentTokenPurpose, token, accountID, credentialID, id string) error {
	refused := apierr.New(apierr.PermissionDenied, "the %s's resume token is not valid: it was not issued for this %s and credential", purposeNoun(purpose), purposeNoun(purpose))
	if len(token) > maxAgentTokenBytes {
		return refused
	}
	sealed, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return refused
	}
	plain, err := h.s.sealer.Open(sealed, agentTokenAAD(purpose, accountID, credentialID))
	if err != nil || string(plain) != id {
		return refused
	}
	return nil
}

func agentTokenAAD(purpose AgentTokenPurpose, accountID, credentialID string) []byte {
	return []byte("edgeplane agent token\x00" + string(purpose) + "\x00" + accountID + "\x00" + credentialID)
}

func purposeNoun(p AgentTokenPurpose) string {
	if p == AgentTokenEndpoint {
		return "endpoint"
	}
	return "session"
}
