package edgeplane

import (
	"crypto/sha256"
	"sync"
	"time"
)

// DefaultAuthCacheTTL is the default of [Options.AuthCacheTTL].
const DefaultAuthCacheTTL = time.Minute

// maxAuthCacheEntries bounds the authentication cache. Only successful
// authentications are cached, so its size follows the keys in use, not
// what an attacker sends.
const maxAuthCacheEntries = 10_000

// authCache remembers recent successful authentications by the secret's
// SHA-256 (the store's lookup key is made of it), for at most ttl: a
// cache hit costs no store read, and no allocation.
type authCache struct {
	ttl time.Duration
	mu  sync.Mutex
	gen uint64                          // bumped by every forget and clear
	m   map[[sha256.Size]byte]authEntry // by the SHA-256 of the secret
}

type authEntry struct {
	p       Principal
	keyID   string
	expires time.Time
}

func newAuthCache(ttl time.Duration) *authCache {
	if ttl == 0 {
		ttl = DefaultAuthCacheTTL
	}
	if ttl < 0 {
		return nil
	}
	return &authCache{ttl: ttl, m: make(map[[sha256.Size]byte]authEntry)}
}

// get returns the principal of the secret whose SHA-256 is key, if
// cached and fresh at now.
func (c *authCache) get(key [sha256.Size]byte, now time.Time) (Principal, bool) {
	if c == nil {
		return Principal{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	if !ok || !now.Before(e.expires) {
		return Principal{}, false
	}
	return e.p, true
}

// note returns the generation to pass to put: read it before reading the
// store, so that an authentication read before a revocation is not cached
// after it.
func (c *authCache) note() uint64 {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

// put remembers p for key until now+ttl, unless an entry was dropped
// since gen was noted.
func (c *authCache) put(key [sha256.Size]byte, keyID string, p Principal, now time.Time, gen uint64) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return
	}
	if len(c.m) >= maxAuthCacheEntries {
		for k, e := range c.m {
			if !now.Before(e.expires) {
				delete(c.m, k)
			}
		}
		if len(c.m) >= maxAuthCacheEntries {
			clear(c.m)
		}
	}
	c.m[key] = authEntry{p: p, keyID: keyID, expires: now.Add(c.ttl)}
}

// clear drops every entry.
func (c *authCache) clear() {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.gen++
	clear(c.m)
	c.mu.Unlock()
}

// forget drops the entries of API key id.
func (c *authCache) forget(id string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	for k, e := range c.m {
		if e.keyID == id {
			delete(c.m, k)
		}
	}
}
