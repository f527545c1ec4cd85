package credentials

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"strings"

	"github.com/edgeplane/edgeplane/internal/ids"
)

// TokenPrefix starts every authtoken, so that a leaked token is easy to
// recognise (by people and secret scanners) and never mistaken for an
// identifier.
const TokenPrefix = "ept_"

// tokenBytes is the number of random bytes in a token: 256 bits.
const tokenBytes = 32

// secretLen is the length of a token's secret: tokenBytes in unpadded
// base64url.
const secretLen = (tokenBytes*8 + 5) / 6

// TokenLen is the length in bytes of every authtoken from [NewToken]:
// [TokenPrefix], the 27 characters of the credential's ID after
// [IDPrefix], '_' and the secret.
const TokenLen = len(TokenPrefix) + ids.Len + 1 + secretLen

// LegacyTokenLen is the length of the authtokens edgeplane made before
// they carried their credential's ID: [TokenPrefix] and the secret. They
// still authenticate (see [TokenCredentialID]).
const LegacyTokenLen = len(TokenPrefix) + secretLen

// NewToken returns a fresh authtoken for the credential credentialID
// (which must be [IDPrefix] followed by 27 base62 characters):
// [TokenPrefix], the ID's characters after the prefix, '_' and the
// unpadded URL-safe base64 encoding of 32 bytes from crypto/rand: 256
// bits of entropy in [TokenLen] characters, safe in URLs, headers and
// shell arguments without quoting. The error is non-nil if the ID is
// not a credential's or the system's random source fails.
//
// The ID's part is there so that the Service's lookup key of a token
// starts with it: credential IDs are made in time order, so the keys of
// new credentials are added at one end of the store's index instead of
// on a random page of it (one page rewritten per credential created, a
// cost that grew with the store), and a leaked token names the
// credential to revoke. It is not secret (the ID is shown by the API)
// and adds nothing to guess: only the secret is random.
func NewToken(credentialID string) (string, error) {
	return newToken(credentialID, rand.Reader)
}

func newToken(id string, r io.Reader) (string, error) {
	if !ids.Valid(id, IDPrefix) {
		return "", fmt.Errorf("credentials: %q is not a credential ID", id)
	}
	var b [tokenBytes]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return "", err
	}
	var t [TokenLen]byte // the token is built here and copied once
	out := append(append(append(t[:0], TokenPrefix...), id[len(IDPrefix):]...), '_')
	return string(base64.RawURLEncoding.AppendEncode(out, b[:])), nil
}

// TokenCredentialID returns the ID of the credential a token of
// [NewToken]'s form names, and false for anything else (a legacy token
// of [LegacyTokenLen] names none). A malformed or forged token may name
// any ID: only the Service's lookup of the whole token's hash says
// whether it is one.
func TokenCredentialID(token string) (string, bool) {
	if len(token) != TokenLen || !strings.HasPrefix(token, TokenPrefix) || token[TokenLen-secretLen-1] != '_' {
		return "", false
	}
	id := IDPrefix + token[len(TokenPrefix):TokenLen-secretLen-1]
	if !ids.Valid(id, IDPrefix) || !validSecret(token[TokenLen-secretLen:]) {
		return "", false
	}
	return id, true
}

// WellFormedToken reports whether s has the shape of a token from
// [NewToken], or of a legacy token. The Service can refuse a malformed
// token before hashing and looking it up.
func WellFormedToken(s string) bool {
	if _, ok := TokenCredentialID(s); ok {
		return true
	}
	rest, ok := strings.CutPrefix(s, TokenPrefix)
	return ok && len(s) == LegacyTokenLen && validSecret(rest)
}

// validSecret reports whether s is the canonical unpadded base64url
// encoding of tokenBytes bytes.
func validSecret(s string) bool {
	if len(s) != secretLen {
		return false
	}
	var b [tokenBytes + 2]byte
	n, err := base64.RawURLEncoding.Strict().Decode(b[:], []byte(s))
	return err == nil && n == tokenBytes
}

// HashToken returns the SHA-256 digest of token as 64 lowercase hex
// characters. The Service stores only this digest and finds a credential by
// the digest of the token an agent presents.
//
// A fast hash is the right choice here: a slow password hash (bcrypt,
// argon2) exists to make guessing low-entropy secrets expensive, but a token
// carries 256 random bits, so no amount of guessing recovers one from its
// digest. A fast, unsalted, deterministic digest also lets the Service look a
// token up by its digest in one indexed read on every agent connection,
// without per-request CPU cost.
func HashToken(token string) string {
	var b [2 * sha256.Size]byte
	return string(AppendTokenHash(b[:0], token))
}

// AppendTokenHash appends [HashToken] of token to dst: for a caller that
// builds a lookup key around it in one allocation.
func AppendTokenHash(dst []byte, token string) []byte {
	var buf [TokenLen]byte // a token fits: its bytes are hashed from the stack
	sum := sha256.Sum256(append(buf[:0], token...))
	return hex.AppendEncode(dst, sum[:])
}
