package edgeplane

import (
	"encoding/base64"
	"encoding/binary"
	"time"

	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/apierr"
)

// Agents' resume tokens. The agent protocol hands an agent opaque values
// that it sends back when it reconnects: the session's cookie (with the
// session ID it had) and each endpoint's token (with the endpoint's ID).
// They are the Service's seal ([Options.SealingKey], AES-256-GCM) of the
// ID and the time the token was made, authenticated with their purpose,
// account and credential, so that only this store's tunnel servers make
// them, and a token is good only for the ID, account and credential it
// was made for: a forged one, or one of another credential, does not
// open. How long a token may take something over is the tunnel server's
// to decide from the time it was made (tunnel.Options.ResumeTokenTTL).

// maxAgentTokenBytes bounds a token the Host opens: a sealed ID is far
// shorter.
const maxAgentTokenBytes = 512

// agentTokenVersion opens the sealed text of a token that carries the
// time it was made: the version byte, then the Unix time in seconds
// (8 bytes, big-endian), then the ID. A token made before tokens carried
// a time holds the ID alone (an ID never starts with this byte); it opens
// as made at the zero time, so it has expired.
const agentTokenVersion = 1

// AgentToken returns the resume token of id (a session's or an
// endpoint's, as purpose says) for an agent of accountID authenticated
// by credentialID, made now; a host operation of tunnel servers.
func (h *Host) AgentToken(purpose agents.TokenPurpose, accountID, credentialID, id string) string {
	plain := make([]byte, 9, 9+len(id))
	plain[0] = agentTokenVersion
	binary.BigEndian.PutUint64(plain[1:9], uint64(h.s.now().Unix()))
	plain = append(plain, id...)
	sealed := h.s.sealer.Seal(plain, agentTokenAAD(purpose, accountID, credentialID))
	return base64.RawURLEncoding.EncodeToString(sealed)
}

// OpenAgentToken checks that token is the resume token of id for
// purpose, accountID and credentialID, made by a Service of this store
// (one with the same sealing key), and returns when it was made (to the
// second; the zero time for a token made before tokens carried one). Any
// failure is PermissionDenied with one message, naming neither the ID
// nor why.
func (h *Host) OpenAgentToken(purpose agents.TokenPurpose, token, accountID, credentialID, id string) (time.Time, error) {
	refused := apierr.New(apierr.PermissionDenied, "the %s's resume token is not valid: it was not issued for this %s and credential", purpose.Noun(), purpose.Noun())
	if len(token) > maxAgentTokenBytes {
		return time.Time{}, refused
	}
	sealed, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return time.Time{}, refused
	}
	plain, err := h.s.sealer.Open(sealed, agentTokenAAD(purpose, accountID, credentialID))
	if err != nil {
		return time.Time{}, refused
	}
	if len(plain) >= 9 && plain[0] == agentTokenVersion && string(plain[9:]) == id {
		secs := binary.BigEndian.Uint64(plain[1:9])
		if secs > 1<<62 { // sealed by this store, so never; bounded all the same
			return time.Time{}, refused
		}
		return time.Unix(int64(secs), 0).UTC(), nil
	}
	if string(plain) == id { // made before tokens carried their time
		return time.Time{}, nil
	}
	return time.Time{}, refused
}

func agentTokenAAD(purpose agents.TokenPurpose, accountID, credentialID string) []byte {
	return []byte("edgeplane agent token\x00" + string(purpose) + "\x00" + accountID + "\x00" + credentialID)
}
