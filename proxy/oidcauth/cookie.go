package oidcauth

import (
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"unicode/utf8"

	"golang.org/x/crypto/chacha20poly1305"
)

// Additional data of the two cookie kinds, so that a value sealed as one
// never opens as the other. (Cookies of other routes, issuers or clients
// do not open at all: the key is bound to them.)
var (
	adSession = []byte("s")
	adLogin   = []byte("l")
)

// Payload versions.
const (
	sessionVersion byte = 1
	loginVersion   byte = 1
)

// Sizes of the random values of a pending login.
const (
	stateBytes    = 16
	nonceBytes    = 16
	verifierBytes = 32
)

// sealedOverhead is what sealing adds to a payload: the XChaCha20-Poly1305
// nonce and tag.
const sealedOverhead = chacha20poly1305.NonceSizeX + chacha20poly1305.Overhead

// errMalformed is returned by the payload parsers for any input they
// refuse; callers treat it as "no cookie".
var errMalformed = errors.New("malformed cookie payload")

// seal encrypts and authenticates plain under aead, binding ad, and returns
// the cookie value: base64url (no padding) of nonce || ciphertext || tag.
func seal(aead cipher.AEAD, ad, plain []byte) string {
	buf := make([]byte, chacha20poly1305.NonceSizeX, sealedOverhead+len(plain))
	rand.Read(buf) // never fails (crypto/rand)
	buf = aead.Seal(buf, buf[:chacha20poly1305.NonceSizeX], plain, ad)
	return base64.RawURLEncoding.EncodeToString(buf)
}

// open reverses seal. It refuses (false) any value longer than
// [MaxCookieBytes], not base64url, too short, or that does not
// authenticate under aead with ad. scratch, when large enough, is used
// for decoding so the common case does not allocate; the returned
// plaintext aliases it.
func open(aead cipher.AEAD, ad []byte, value string, scratch []byte) ([]byte, bool) {
	if len(value) > MaxCookieBytes || len(value) < base64.RawURLEncoding.EncodedLen(sealedOverhead) {
		return nil, false
	}
	n := base64.RawURLEncoding.DecodedLen(len(value))
	buf := scratch
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	m, err := base64.RawURLEncoding.Decode(buf, []byte(value))
	if err != nil || m < sealedOverhead {
		return nil, false
	}
	buf = buf[:m]
	nonce, ct := buf[:chacha20poly1305.NonceSizeX], buf[chacha20poly1305.NonceSizeX:]
	plain, err := aead.Open(ct[:0], nonce, ct, ad)
	if err != nil {
		return nil, false
	}
	return plain, true
}

// session is the content of a session cookie.
type session struct {
	// loginAt is when the user signed in; lastSeen when the session was
	// last refreshed; both Unix seconds.
	loginAt, lastSeen int64
	subject           string
	email             string
	emailVerified     bool
	name              string
	preferredUsername string
}

// appendSession encodes s: version, loginAt, lastSeen (8 bytes each, big
// endian), a flags byte (bit 0: email verified), then subject, email,
// name and preferred username, each as one length byte and its bytes.
// Every string must be at most [MaxClaimBytes].
func appendSession(b []byte, s *session) []byte {
	b = append(b, sessionVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(s.loginAt))
	b = binary.BigEndian.AppendUint64(b, uint64(s.lastSeen))
	var flags byte
	if s.emailVerified {
		flags |= 1
	}
	b = append(b, flags)
	for _, f := range [...]string{s.subject, s.email, s.name, s.preferredUsername} {
		b = append(b, byte(len(f)))
		b = append(b, f...)
	}
	return b
}

// parseSession decodes what appendSession encoded. It accepts exactly
// that shape (the version, known flags only, a non-empty subject, every
// string a valid [claimValue], no trailing bytes) and refuses everything
// else with errMalformed; it never panics.
func parseSession(b []byte) (session, error) {
	var s session
	if len(b) < 1+8+8+1 || b[0] != sessionVersion {
		return s, errMalformed
	}
	s.loginAt = int64(binary.BigEndian.Uint64(b[1:]))
	s.lastSeen = int64(binary.BigEndian.Uint64(b[9:]))
	flags := b[17]
	if flags&^1 != 0 {
		return s, errMalformed
	}
	s.emailVerified = flags&1 != 0
	b = b[18:]
	var fields [4]string
	for i := range fields {
		if len(b) < 1 || len(b)-1 < int(b[0]) {
			return s, errMalformed
		}
		n := int(b[0])
		f := b[1 : 1+n]
		if !claimValue(f) {
			return s, errMalformed
		}
		fields[i] = string(f)
		b = b[1+n:]
	}
	if len(b) != 0 || fields[0] == "" {
		return s, errMalformed
	}
	s.subject, s.email, s.name, s.preferredUsername = fields[0], fields[1], fields[2], fields[3]
	return s, nil
}

// login is the content of a pending login's cookie.
type login struct {
	// created is when the login started, Unix seconds.
	created  int64
	state    [stateBytes]byte
	nonce    [nonceBytes]byte
	verifier [verifierBytes]byte
	// returnTo is the same-host relative URL to go back to.
	returnTo string
}

// appendLogin encodes l: version, created (8 bytes), state, nonce,
// verifier, then returnTo as a 2-byte length and its bytes. returnTo must
// be at most [MaxReturnPathBytes].
func appendLogin(b []byte, l *login) []byte {
	b = append(b, loginVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(l.created))
	b = append(b, l.state[:]...)
	b = append(b, l.nonce[:]...)
	b = append(b, l.verifier[:]...)
	b = binary.BigEndian.AppendUint16(b, uint16(len(l.returnTo)))
	return append(b, l.returnTo...)
}

// parseLogin decodes what appendLogin encoded, refusing with errMalformed
// any other shape, and any returnTo that is not a [safeReturnPath] of at
// most [MaxReturnPathBytes]; it never panics.
func parseLogin(b []byte) (login, error) {
	var l login
	const fixed = 1 + 8 + stateBytes + nonceBytes + verifierBytes + 2
	if len(b) < fixed || b[0] != loginVersion {
		return l, errMalformed
	}
	l.created = int64(binary.BigEndian.Uint64(b[1:]))
	p := b[9:]
	p = p[copy(l.state[:], p):]
	p = p[copy(l.nonce[:], p):]
	p = p[copy(l.verifier[:], p):]
	n := int(binary.BigEndian.Uint16(p))
	p = p[2:]
	if n != len(p) || n > MaxReturnPathBytes || !safeReturnPath(string(p)) {
		return l, errMalformed
	}
	l.returnTo = string(p)
	return l, nil
}

// claimValue reports whether b may be carried in a session and forwarded
// in a header: at most [MaxClaimBytes], valid UTF-8, no control
// characters (so no CR, LF or NUL).
func claimValue(b []byte) bool {
	return len(b) <= MaxClaimBytes && noControl(b) && utf8.Valid(b)
}

// claimString is [claimValue] for a string.
func claimString(s string) bool {
	return len(s) <= MaxClaimBytes && noControl(s) && utf8.ValidString(s)
}

// noControl reports whether b holds no ASCII control character.
func noControl[T string | []byte](b T) bool {
	for i := 0; i < len(b); i++ {
		if c := b[i]; c < 0x20 || c == 0x7f {
			return false
		}
	}
	return true
}

// safeReturnPath reports whether p is a URL to send a browser back to
// after sign-in without ever leaving the host: it starts with one '/', is
// not "//..." or "/\..." (which browsers read as another host), and holds
// only printable ASCII other than '\'.
func safeReturnPath(p string) bool {
	if len(p) == 0 || len(p) > MaxReturnPathBytes || p[0] != '/' {
		return false
	}
	if len(p) > 1 && (p[1] == '/' || p[1] == '\\') {
		return false
	}
	for i := 0; i < len(p); i++ {
		if c := p[i]; c <= 0x20 || c >= 0x7f || c == '\\' {
			return false
		}
	}
	return true
}
