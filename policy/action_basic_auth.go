package policy

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"golang.org/x/crypto/bcrypt"

	"github.com/edgeplane/edgeplane/apierr"
)

// ActionBasicAuth is the basic-auth action: HTTP Basic authentication
// (RFC 7617) against salted password hashes in the config.
const ActionBasicAuth = "basic-auth"

// Limits of the basic-auth action.
const (
	// MaxBasicAuthCredentials bounds the credentials of one action.
	MaxBasicAuthCredentials = 100
	// MaxBasicAuthHeaderBytes is the longest Authorization header value
	// basic-auth decodes; a longer one is refused unread.
	MaxBasicAuthHeaderBytes = 4096
	// MaxBcryptCost is the largest bcrypt cost accepted (each verification
	// of a cost-12 hash takes a few hundred milliseconds of CPU).
	MaxBcryptCost = 12
	// MaxPBKDF2Iterations is the largest PBKDF2 iteration count accepted.
	MaxPBKDF2Iterations = 1_000_000
	// MinPBKDF2Iterations is the smallest PBKDF2 iteration count accepted.
	MinPBKDF2Iterations = 10_000
	// basicAuthCacheSize bounds the verified credentials one action
	// remembers, and basicAuthCacheTTL how long.
	basicAuthCacheSize = 1024
	basicAuthCacheTTL  = 5 * time.Minute
)

// Result fields of basic-auth.
const (
	baAuthenticated = "authenticated"
	baUsername      = "username"
)

// basicAuthType is the basic-auth action's registry entry.
var basicAuthType = builtinType{name: ActionBasicAuth, compile: compileBasicAuth, httpOnly: true,
	results: []ResultField{{Name: baAuthenticated, Type: ResultBool, HTTPOnly: true}, {Name: baUsername, Type: ResultString, HTTPOnly: true}}}

type basicAuthConfig struct {
	Realm       *string  `json:"realm"`
	Credentials []string `json:"credentials"`
	Enforce     *bool    `json:"enforce"`
}

// passwordHash is a parsed salted hash.
type passwordHash struct {
	bcrypt []byte // a bcrypt hash, or
	salt   []byte // PBKDF2-SHA256's salt, iterations and key
	iter   int
	key    []byte
}

type basicAuthAction struct {
	realmHeader string // the WWW-Authenticate value
	users       map[string]*passwordHash
	decoy       *passwordHash // a configured hash, verified for unknown usernames
	enforce     bool
	authed      ResultSlot
	username    ResultSlot

	// cache remembers verified credentials by an HMAC of them (never the
	// password), so that a client's every request does not pay a slow
	// hash.
	mu       sync.Mutex
	cacheKey [32]byte
	cache    map[[32]byte]basicAuthEntry
	// hashes counts password hash verifications (for tests).
	hashes atomic.Int64
}

type basicAuthEntry struct {
	user    string
	expires time.Time
}

func compileBasicAuth(c *CompileContext, config []byte) (Action, error) {
	var cfg basicAuthConfig
	if err := c.DecodeConfig(config, &cfg); err != nil {
		return nil, err
	}
	var vs apierr.Violations
	if !needHTTP(c, &vs, ActionBasicAuth) {
		return nil, vs.Err()
	}
	if c.Phase() != Inbound {
		vs.Add("type", "basic-auth is only available in inbound (on_http_request) rules")
		return nil, vs.Err()
	}
	realm := "restricted"
	if cfg.Realm != nil {
		realm = *cfg.Realm
		if !validRealm(realm) {
			vs.Add("config.realm", "must be 1 to 256 printable ASCII characters without '\"' or '\\'")
		}
	}
	switch n := len(cfg.Credentials); {
	case n == 0:
		vs.Add("config.credentials", `is required: a list of "username:salted-hash" entries`)
	case n > MaxBasicAuthCredentials:
		vs.Add("config.credentials", "has %d entries; at most %d are allowed", n, MaxBasicAuthCredentials)
		cfg.Credentials = cfg.Credentials[:MaxBasicAuthCredentials]
	}
	a := &basicAuthAction{
		realmHeader: `Basic realm="` + realm + `", charset="UTF-8"`,
		users:       map[string]*passwordHash{},
		enforce:     cfg.Enforce == nil || *cfg.Enforce,
		cache:       map[[32]byte]basicAuthEntry{},
	}
	for i, cred := range cfg.Credentials {
		f := "config.credentials[" + strconv.Itoa(i) + "]"
		user, hash, ok := strings.Cut(cred, ":")
		switch {
		case !ok || user == "":
			vs.Add(f, `must be "username:salted-hash" with a non-empty username`)
			continue
		case len(user) > 256 || !utf8.ValidString(user) || strings.ContainsAny(user, "\x00\r\n"):
			vs.Add(f, "the username must be valid UTF-8 of at most 256 bytes without control characters")
			continue
		case a.users[user] != nil:
			vs.Add(f, "username %s appears twice", quoteTrunc(user))
			continue
		}
		ph, err := parsePasswordHash(hash)
		if err != nil {
			vs.Add(f, "%s", err.Error())
			continue
		}
		a.users[user] = ph
		if a.decoy == nil {
			a.decoy = ph
		}
	}
	if _, err := rand.Read(a.cacheKey[:]); err != nil {
		return nil, err
	}
	if err := resultSlots(c, map[string]*ResultSlot{baAuthenticated: &a.authed, baUsername: &a.username}); err != nil {
		return nil, err
	}
	return a, vs.Err()
}

func validRealm(s string) bool {
	if s == "" || len(s) > 256 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

var errNotSaltedHash = errors.New(`the password must be a salted hash: bcrypt ("$2b$10$...", as htpasswd -B makes) or PBKDF2-SHA256 ("$pbkdf2-sha256$<iterations>$<salt>$<key>", salt and key in unpadded standard base64); a plain password is refused`)

// parsePasswordHash parses a bcrypt or PBKDF2-SHA256 hash.
func parsePasswordHash(s string) (*passwordHash, error) {
	switch {
	case strings.HasPrefix(s, "$2a$") || strings.HasPrefix(s, "$2b$") || strings.HasPrefix(s, "$2y$"):
		cost, err := bcrypt.Cost([]byte(s))
		if err != nil {
			return nil, errors.New("invalid bcrypt hash: " + strings.TrimPrefix(err.Error(), "crypto/bcrypt: "))
		}
		if cost > MaxBcryptCost {
			return nil, errors.New("bcrypt cost " + strconv.Itoa(cost) + " is over the limit of " + strconv.Itoa(MaxBcryptCost) + " (every verification would take too long)")
		}
		return &passwordHash{bcrypt: []byte(s)}, nil
	case strings.HasPrefix(s, "$pbkdf2-sha256$"):
		parts := strings.Split(s[len("$pbkdf2-sha256$"):], "$")
		if len(parts) != 3 {
			return nil, errNotSaltedHash
		}
		iter, err := strconv.Atoi(parts[0])
		if err != nil || iter < MinPBKDF2Iterations || iter > MaxPBKDF2Iterations {
			return nil, errors.New("PBKDF2 iterations must be a number from " + strconv.Itoa(MinPBKDF2Iterations) + " to " + strconv.Itoa(MaxPBKDF2Iterations))
		}
		salt, err1 := base64.RawStdEncoding.DecodeString(parts[1])
		key, err2 := base64.RawStdEncoding.DecodeString(parts[2])
		switch {
		case err1 != nil || err2 != nil:
			return nil, errors.New("PBKDF2 salt and key must be unpadded standard base64")
		case len(salt) < 8 || len(salt) > 64:
			return nil, errors.New("the PBKDF2 salt must be 8 to 64 bytes")
		case len(key) < 16 || len(key) > 64:
			return nil, errors.New("the PBKDF2 key must be 16 to 64 bytes")
		}
		return &passwordHash{salt: salt, iter: iter, key: key}, nil
	}
	return nil, errNotSaltedHash
}

// verify reports whether password matches the hash.
func (h *passwordHash) verify(password string) bool {
	if h.bcrypt != nil {
		return bcrypt.CompareHashAndPassword(h.bcrypt, []byte(password)) == nil
	}
	k, err := pbkdf2.Key(sha256.New, password, h.salt, h.iter, len(h.key))
	return err == nil && subtle.ConstantTimeCompare(k, h.key) == 1
}

// parseBasicAuth decodes the credentials of an Authorization header value
// "Basic <base64(user:password)>" (scheme case-insensitive).
func parseBasicAuth(v string) (user, password string, ok bool) {
	if len(v) > MaxBasicAuthHeaderBytes {
		return "", "", false
	}
	scheme, rest, found := strings.Cut(v, " ")
	if !found || !strings.EqualFold(scheme, "Basic") {
		return "", "", false
	}
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(rest))
	if err != nil {
		return "", "", false
	}
	user, password, ok = strings.Cut(string(b), ":")
	return user, password, ok
}

// authenticate returns the username the request authenticates as.
func (a *basicAuthAction) authenticate(r *RunContext) (string, bool) {
	v := r.Header("authorization")
	if len(v) != 1 {
		return "", false
	}
	user, password, ok := parseBasicAuth(v[0])
	if !ok {
		return "", false
	}
	h := a.users[user]
	if h == nil {
		// An unknown username costs a hash verification like a known one,
		// so the response time does not tell which usernames exist.
		if a.decoy != nil {
			a.verify(a.decoy, password)
		}
		return "", false
	}
	mac := hmac.New(sha256.New, a.cacheKey[:])
	mac.Write([]byte(user))
	mac.Write([]byte{0})
	mac.Write([]byte(password))
	var k [32]byte
	mac.Sum(k[:0])
	now := r.Time()
	a.mu.Lock()
	e, hit := a.cache[k]
	a.mu.Unlock()
	if hit && now.Before(e.expires) {
		return e.user, true
	}
	if !a.verify(h, password) {
		return "", false
	}
	a.mu.Lock()
	if len(a.cache) >= basicAuthCacheSize {
		for old, oe := range a.cache { // drop expired entries, else any one
			if !now.Before(oe.expires) || len(a.cache) >= basicAuthCacheSize {
				delete(a.cache, old)
			}
			if len(a.cache) < basicAuthCacheSize/2 {
				break
			}
		}
	}
	a.cache[k] = basicAuthEntry{user: user, expires: now.Add(basicAuthCacheTTL)}
	a.mu.Unlock()
	return user, true
}

// verify checks password against h, counting the verification.
func (a *basicAuthAction) verify(h *passwordHash, password string) bool {
	a.hashes.Add(1)
	return h.verify(password)
}

// Run refuses a request without valid credentials with 401 and a Basic
// challenge, unless enforce is off (shadow mode); either way it sets the
// authenticated and username result variables.
func (a *basicAuthAction) Run(r *RunContext) {
	user, ok := a.authenticate(r)
	r.SetBool(a.authed, ok)
	r.SetString(a.username, user)
	if !ok && a.enforce {
		r.Respond(http.StatusUnauthorized, http.Header{"Www-Authenticate": {a.realmHeader}}, "")
	}
}
