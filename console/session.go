package console

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"sync"
	"time"
)

// sessionIDBytes is the size of a session's random identifier, the value
// of its cookie before encoding.
const sessionIDBytes = 32

// session is a signed-in browser as the server keeps it. It holds no
// secret in the clear: the API key and a credential's token waiting to
// be shown are sealed under a key derived from the session's cookie
// value, which the server keeps only hashed (see [sessions]).
type session struct {
	sealedKey []byte    // the API key, sealed
	csrf      string    // the token every form of the session carries
	created   time.Time // when it was signed in
	expires   time.Time // created + the lifetime

	// What the next page shows once: a message, and the token of a
	// credential just made (sealed) with that credential's ID.
	notice      string
	sealedToken []byte
	tokenFor    string
}

// sessions maps the hashes of session cookies to sessions. It holds at
// most max of them, each for at most lifetime: signing in beyond max
// ends the session that would expire first. It is safe for concurrent
// use.
//
// A session's API key is sealed (AES-256-GCM) under a key derived from
// the cookie value, and the map is keyed by another hash of that value:
// what the server holds in memory cannot be opened without the cookie
// the browser holds, and a leaked cookie ends with its session (sign
// out, the lifetime, or the key's revocation).
type sessions struct {
	mu       sync.Mutex
	m        map[[sha256.Size]byte]*session
	max      int
	lifetime time.Duration
}

func newSessions(max int, lifetime time.Duration) *sessions {
	return &sessions{m: make(map[[sha256.Size]byte]*session), max: max, lifetime: lifetime}
}

// derive returns the map key and the sealing key of a cookie value.
func derive(raw []byte) (id [sha256.Size]byte, seal cipher.AEAD) {
	id = sha256.Sum256(append([]byte("edgeplane console session id\x00"), raw...))
	k := sha256.Sum256(append([]byte("edgeplane console session seal\x00"), raw...))
	block, _ := aes.NewCipher(k[:]) // a 32-byte key never fails
	seal, _ = cipher.NewGCM(block)
	return id, seal
}

func sealWith(aead cipher.AEAD, plain string) []byte {
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plain)+aead.Overhead())
	rand.Read(nonce) // never fails
	return aead.Seal(nonce, nonce, []byte(plain), nil)
}

func openWith(aead cipher.AEAD, sealed []byte) (string, bool) {
	n := aead.NonceSize()
	if len(sealed) < n {
		return "", false
	}
	plain, err := aead.Open(nil, sealed[:n], sealed[n:], nil)
	return string(plain), err == nil
}

// randomToken returns 256 random bits, base64url-encoded.
func randomToken() string {
	var b [sessionIDBytes]byte
	rand.Read(b[:]) // never fails
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// add starts a session for apiKey at now and returns its cookie value.
func (ss *sessions) add(apiKey string, now time.Time) (cookie string, s *session) {
	cookie = randomToken()
	raw, _ := base64.RawURLEncoding.DecodeString(cookie)
	id, aead := derive(raw)
	s = &session{sealedKey: sealWith(aead, apiKey), csrf: randomToken(), created: now, expires: now.Add(ss.lifetime)}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if len(ss.m) >= ss.max {
		ss.sweepLocked(now)
	}
	for len(ss.m) >= ss.max {
		var first [sha256.Size]byte
		var at time.Time
		for k, v := range ss.m {
			if at.IsZero() || v.expires.Before(at) {
				first, at = k, v.expires
			}
		}
		delete(ss.m, first)
	}
	ss.m[id] = s
	return cookie, s
}

// sweepLocked drops the sessions expired at now.
func (ss *sessions) sweepLocked(now time.Time) {
	for k, v := range ss.m {
		if !now.Before(v.expires) {
			delete(ss.m, k)
		}
	}
}

var errNoSession = errors.New("no session")

// get returns the session of cookie at now and its API key, or
// errNoSession when there is none (malformed, unknown, ended or
// expired).
func (ss *sessions) get(cookie string, now time.Time) (*session, string, error) {
	raw, err := base64.RawURLEncoding.DecodeString(cookie)
	if err != nil || len(raw) != sessionIDBytes {
		return nil, "", errNoSession
	}
	id, aead := derive(raw)
	ss.mu.Lock()
	s, ok := ss.m[id]
	if ok && !now.Before(s.expires) {
		delete(ss.m, id)
		ok = false
	}
	ss.mu.Unlock()
	if !ok {
		return nil, "", errNoSession
	}
	key, ok := openWith(aead, s.sealedKey)
	if !ok {
		return nil, "", errNoSession
	}
	return s, key, nil
}

// end removes the session of cookie, if any.
func (ss *sessions) end(cookie string) {
	raw, err := base64.RawURLEncoding.DecodeString(cookie)
	if err != nil || len(raw) != sessionIDBytes {
		return
	}
	id, _ := derive(raw)
	ss.mu.Lock()
	delete(ss.m, id)
	ss.mu.Unlock()
}

// len returns the number of sessions held, expired ones included.
func (ss *sessions) len() int {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return len(ss.m)
}

// setNotice keeps msg for the next page of s.
func (ss *sessions) setNotice(s *session, msg string) {
	ss.mu.Lock()
	s.notice = msg
	ss.mu.Unlock()
}

// takeNotice returns and forgets the message kept for s.
func (ss *sessions) takeNotice(s *session) string {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	msg := s.notice
	s.notice = ""
	return msg
}

// setToken keeps the token of credential id, sealed, for the one page
// that shows it.
func (ss *sessions) setToken(cookie string, s *session, id, token string) {
	raw, _ := base64.RawURLEncoding.DecodeString(cookie)
	_, aead := derive(raw)
	sealed := sealWith(aead, token)
	ss.mu.Lock()
	s.sealedToken, s.tokenFor = sealed, id
	ss.mu.Unlock()
}

// takeToken returns the token kept for credential id and forgets it:
// it is shown once. ok is false when none is kept for id.
func (ss *sessions) takeToken(cookie string, s *session, id string) (token string, ok bool) {
	ss.mu.Lock()
	sealed, forID := s.sealedToken, s.tokenFor
	if forID == id {
		s.sealedToken, s.tokenFor = nil, ""
	}
	ss.mu.Unlock()
	if forID != id || sealed == nil {
		return "", false
	}
	raw, _ := base64.RawURLEncoding.DecodeString(cookie)
	_, aead := derive(raw)
	return openWith(aead, sealed)
}
