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
// cache hit costs no store read, no allocation and no lock (every request
// reads it, on every core: a mutex there was contended).
type authCache struct {
	ttl time.Duration
	m   sync.Map // [sha256.Size]byte -> *authEntry

	mu  sync.Mutex // held by the writers: put, forget, clear
	gen uint64     // bumped by every forget and clear
	n   int        // entries in m
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
	return &authCache{ttl: ttl}
}

// get returns the principal of the secret whose SHA-256 is key, if
// cached and fresh at now.
func (c *authCache) get(key [sha256.Size]byte, now time.Time) (Principal, bool) {
	if c == nil {
		return Principal{}, false
	}
	v, ok := c.m.Load(key)
	if !ok {
		return Principal{}, false
	}
	e := v.(*authEntry)
	if !now.Before(e.expires) {
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
	if c.n >= maxAuthCacheEntries {
		c.m.Range(func(k, v any) bool {
			if !now.Before(v.(*authEntry).expires) {
				c.m.Delete(k)
				c.n--
			}
			return true
		})
		if c.n >= maxAuthCacheEntries {
			c.m.Clear()
			c.n = 0
		}
	}
	if _, had := c.m.Swap(key, &authEntry{p: p, keyID: keyID, expires: now.Add(c.ttl)}); !had {
		c.n++
	}
}

// clear drops every entry.
func (c *authCache) clear() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.m.Clear()
	c.n = 0
}

// forget drops the entries of API key id.
func (c *authCache) forget(id string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.m.Range(func(k, v any) bool {
		if v.(*authEntry).keyID == id {
			c.m.Delete(k)
			c.n--
		}
		return true
	})
}
