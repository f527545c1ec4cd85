package credentials

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"io"
	"strings"
)

// TokenPrefix starts every authtoken, so that a leaked token is easy to
// recognise (by people and secret scanners) and never mistaken for an
// identifier.
const TokenPrefix = "ept_"

// tokenBytes is the number of random bytes in a token: 256 bits.
const tokenBytes = 32

// TokenLen is the length in bytes of every authtoken from [NewToken].
const TokenLen = len(TokenPrefix) + (tokenBytes*8+5)/6

// NewToken returns a fresh authtoken: [TokenPrefix] followed by the
// unpadded URL-safe base64 encoding of 32 bytes from crypto/rand, 256 bits
// of entropy in [TokenLen] characters, safe in URLs, headers and shell
// arguments without quoting. The error is non-nil only if the system's
// random source fails.
func NewToken() (string, error) {
	return newToken(rand.Reader)
}

func newToken(r io.Reader) (string, error) {
	var b [tokenBytes]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return "", err
	}
	var t [TokenLen]byte // the token is built here and copied once
	return string(base64.RawURLEncoding.AppendEncode(append(t[:0], TokenPrefix...), b[:])), nil
}

// WellFormedToken reports whether s has the shape of a token from
// [NewToken]. The Service can refuse a malformed token before hashing and
// looking it up.
func WellFormedToken(s string) bool {
	rest, ok := strings.CutPrefix(s, TokenPrefix)
	if !ok || len(s) != TokenLen {
		return false
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(rest)
	return err == nil && len(b) == tokenBytes
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
	var buf [64]byte // a token fits: its bytes are hashed from the stack
	sum := sha256.Sum256(append(buf[:0], token...))
	return hex.AppendEncode(dst, sum[:])
}
