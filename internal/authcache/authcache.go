package authcache

import (
	"crypto/sha256"
	"sync"
	"time"

	"github.com/edgeplane/edgeplane/identity"
)

// DefaultTTL is the time to live of a cache made with New(0).
const DefaultTTL = time.Minute

// maxEntries bounds the authentication cache. Only successful
// authentications are cached, so its size follows the keys in use, not
// what an attacker sends.
const maxEntries = 10_000

// Cache remembers recent successful authentications by the secret's
// SHA-256 (the store's lookup key is made of it), for at most ttl: a
// cache hit costs no store read, no allocation and no lock (every request
// reads it, on every core: a mutex there was contended).
type Cache struct {
	ttl time.Duration
	m   sync.Map // [sha256.Size]byte -> *entry

	mu  sync.Mutex // held by the writers: put, forget, clear
	gen uint64     // bumped by every forget and clear
	n   int        // entries in m
}

type entry struct {
	p       identity.Principal
	keyID   string
	expires time.Time
}

// New returns a cache whose entries live ttl (0 means [DefaultTTL]), nil
// (off) when ttl is negative. A nil *Cache caches nothing.
func New(ttl time.Duration) *Cache {
	if ttl == 0 {
		ttl = DefaultTTL
	}
	if ttl < 0 {
		return nil
	}
	return &Cache{ttl: ttl}
}

// Get returns the principal of the secret whose SHA-256 is key, if
// cached and fresh at now.
func (c *Cache) Get(key [sha256.Size]byte, now time.Time) (identity.Principal, bool) {
	if c == nil {
		return identity.Principal{}, false
	}
	v, ok := c.m.Load(key)
	if !ok {
		return identity.Principal{}, false
	}
	e := v.(*entry)
	if !now.Before(e.expires) {
		return identity.Principal{}, false
	}
	return e.p, true
}

// Note returns the generation to pass to Put: read it before reading the
// store, so that an authentication read before a revocation is not cached
// after it.
func (c *Cache) Note() uint64 {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

// Put remembers p for key until now+ttl, unless an entry was dropped
// since gen was noted.
func (c *Cache) Put(key [sha256.Size]byte, keyID string, p identity.Principal, now time.Time, gen uint64) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return
	}
	if c.n >= maxEntries {
		c.m.Range(func(k, v any) bool {
			if !now.Before(v.(*entry).expires) {
				c.m.Delete(k)
				c.n--
			}
			return true
		})
		if c.n >= maxEntries {
			c.m.Clear()
			c.n = 0
		}
	}
	if _, had := c.m.Swap(key, &entry{p: p, keyID: keyID, expires: now.Add(c.ttl)}); !had {
		c.n++
	}
}

// Clear drops every entry.
func (c *Cache) Clear() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.m.Clear()
	c.n = 0
}

// Forget drops the entries of API key id.
func (c *Cache) Forget(id string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.m.Range(func(k, v any) bool {
		if v.(*entry).keyID == id {
			c.m.Delete(k)
			c.n--
		}
		return true
	})
}
