package authcache

import (
	"crypto/sha256"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/identity"
)

// TestAuthCacheEntries: entries are served until they expire; forget
// drops one key's entries and clear all; a put noted before either is
// refused; the bound holds (expired entries go first, then all).
func TestAuthCacheEntries(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	c := New(time.Minute)
	sum := func(s string) [sha256.Size]byte { return sha256.Sum256([]byte(s)) }
	p := identity.Principal{AccountID: "acc_1", SubjectID: "usr_1"}
	c.Put(sum("a"), "ak_a", p, now, c.Note())
	c.Put(sum("b"), "ak_b", p, now, c.Note())
	c.Put(sum("b2"), "ak_b", p, now, c.Note())
	if got, ok := c.Get(sum("a"), now.Add(time.Minute-1)); !ok || got != p {
		t.Errorf("fresh entry: %v %v", got, ok)
	}
	if _, ok := c.Get(sum("a"), now.Add(time.Minute)); ok {
		t.Error("an expired entry is served")
	}
	stale := c.Note()
	c.Forget("ak_b")
	for _, s := range []string{"b", "b2"} {
		if _, ok := c.Get(sum(s), now); ok {
			t.Errorf("entry %s of a forgotten key is served", s)
		}
	}
	if _, ok := c.Get(sum("a"), now); !ok {
		t.Error("forget dropped another key's entry")
	}
	c.Put(sum("b"), "ak_b", p, now, stale)
	if _, ok := c.Get(sum("b"), now); ok {
		t.Error("a put noted before a forget was cached")
	}
	stale = c.Note()
	c.Clear()
	c.Put(sum("c"), "ak_c", p, now, stale)
	if _, ok := c.Get(sum("a"), now); ok || c.n != 0 {
		t.Errorf("after clear: entry a served %v, %d entries", ok, c.n)
	}

	// The bound: expired entries are dropped first; when none has
	// expired, everything.
	half := maxEntries / 2
	for i := range maxEntries {
		at := now // expires at now+1m
		if i >= half {
			at = now.Add(90 * time.Second) // expires at now+2.5m
		}
		c.Put(sum(fmt.Sprint(i)), "ak", p, at, c.Note())
	}
	at := now.Add(2 * time.Minute)
	c.Put(sum("x"), "ak_x", p, at, c.Note())
	if c.n != maxEntries-half+1 {
		t.Errorf("%d entries after a put at the bound, want the %d unexpired and the new one", c.n, maxEntries-half)
	}
	if _, ok := c.Get(sum(fmt.Sprint(half)), at); !ok {
		t.Error("an unexpired entry was dropped at the bound")
	}
	for i := c.n; i < maxEntries; i++ {
		c.Put(sum(fmt.Sprint("y", i)), "ak_y", p, at, c.Note())
	}
	c.Put(sum("z"), "ak_z", p, at, c.Note())
	if _, ok := c.Get(sum("x"), at); ok || c.n != 1 {
		t.Errorf("a put at the bound with nothing expired left %d entries (x served: %v), want 1", c.n, ok)
	}
}

// TestAuthCacheConcurrent: reads, puts and forgets at once (run with
// -race) keep the count of entries true.
func TestAuthCacheConcurrent(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	c := New(time.Minute)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 500 {
				k := sha256.Sum256([]byte(fmt.Sprint(w, i%50)))
				c.Put(k, fmt.Sprint("ak_", i%7), identity.Principal{AccountID: "a"}, now, c.Note())
				c.Get(k, now)
				if i%97 == 0 {
					c.Forget(fmt.Sprint("ak_", i%7))
				}
			}
		})
	}
	wg.Wait()
	n := 0
	c.m.Range(func(any, any) bool { n++; return true })
	if n != c.n {
		t.Errorf("%d entries, counted %d", n, c.n)
	}
}

// BenchmarkAuthCacheGet measures a hit, from both cores at once.
func BenchmarkAuthCacheGet(b *testing.B) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	c := New(time.Minute)
	k := sha256.Sum256([]byte("secret"))
	c.Put(k, "ak", identity.Principal{AccountID: "a"}, now, c.Note())
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, ok := c.Get(k, now); !ok {
				b.Fatal("miss")
			}
		}
	})
}
