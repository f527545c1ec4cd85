// Package agenttokens makes and opens agents' resume tokens for the
// edgeplane Service (its TunnelHost.AgentToken and TunnelHost.OpenAgentToken). The
// agent protocol hands an agent opaque values that it sends back when it
// reconnects: the session's cookie (with the session ID it had) and each
// endpoint's token (with the endpoint's ID). They are the Service's seal
// (its sealing key, AES-256-GCM: package internal/seal) of the ID and
// the time the token was made, authenticated with their purpose, account
// and credential, so that only this store's tunnel servers make them,
// and a token is good only for the ID, account and credential it was
// made for: a forged one, or one of another credential, does not open.
// How long a token may take something over is the tunnel server's to
// decide from the time it was made (tunnel.Options.ResumeTokenTTL).
//
// It is internal to the module and imports only leaves (agents, apierr)
// and internal/seal; never the root package, which builds an [Issuer]
// in its New.
package agenttokens

import (
	"encoding/base64"
	"encoding/binary"
	"time"

	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/internal/seal"
)

// maxTokenBytes bounds a token [Issuer.Open] opens: a sealed ID is far
// shorter.
const maxTokenBytes = 512

// tokenVersion opens the sealed text of a token that carries the time it
// was made: the version byte, then the Unix time in seconds (8 bytes,
// big-endian), then the ID. A token made before tokens carried a time
// holds the ID alone (an ID never starts with this byte); it opens as
// made at the zero time, so it has expired.
const tokenVersion = 1

// Issuer makes and opens resume tokens under one sealer, stamping them
// with its clock. It is safe for concurrent use.
type Issuer struct {
	sealer *seal.Sealer
	now    func() time.Time
}

// New returns an Issuer that seals with sealer (the Service's) and
// stamps tokens with now.
func New(sealer *seal.Sealer, now func() time.Time) *Issuer {
	return &Issuer{sealer: sealer, now: now}
}

// Issue returns the resume token of id (a session's or an endpoint's, as
// purpose says) for an agent of accountID authenticated by credentialID,
// made now.
func (i *Issuer) Issue(purpose agents.TokenPurpose, accountID, credentialID, id string) string {
	plain := make([]byte, 9, 9+len(id))
	plain[0] = tokenVersion
	binary.BigEndian.PutUint64(plain[1:9], uint64(i.now().Unix()))
	plain = append(plain, id...)
	sealed := i.sealer.Seal(plain, aad(purpose, accountID, credentialID))
	return base64.RawURLEncoding.EncodeToString(sealed)
}

// Open checks that token is the resume token of id for purpose,
// accountID and credentialID, made by an Issuer with the same sealing
// key, and returns when it was made (to the second; the zero time for a
// token made before tokens carried one). Any failure is
// PermissionDenied with one message, naming neither the ID nor why.
func (i *Issuer) Open(purpose agents.TokenPurpose, token, accountID, credentialID, id string) (time.Time, error) {
	refused := apierr.New(apierr.PermissionDenied, "the %s's resume token is not valid: it was not issued for this %s and credential", purpose.Noun(), purpose.Noun())
	if len(token) > maxTokenBytes {
		return time.Time{}, refused
	}
	sealed, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return time.Time{}, refused
	}
	plain, err := i.sealer.Open(sealed, aad(purpose, accountID, credentialID))
	if err != nil {
		return time.Time{}, refused
	}
	if len(plain) >= 9 && plain[0] == tokenVersion && string(plain[9:]) == id {
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

// aad is the additional data a token is sealed with.
func aad(purpose agents.TokenPurpose, accountID, credentialID string) []byte {
	return []byte("edgeplane agent token\x00" + string(purpose) + "\x00" + accountID + "\x00" + credentialID)
}
