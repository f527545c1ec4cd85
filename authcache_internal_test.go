package edgeplane

import (
	"crypto/sha256"
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestAuthCacheEntries: entries are served until they expire; forget
// drops one key's entries and clear all; a put noted before either is
// refused; the bound holds (expired entries go first, then all).
func TestAuthCacheEntries(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	c := newAuthCache(time.Minute)
	sum := func(s string) [sha256.Size]byte { return sha256.Sum256([]byte(s)) }
	p := Principal{AccountID: "acc_1", SubjectID: "usr_1"}
	c.put(sum("a"), "ak_a", p, now, c.note())
	c.put(sum("b"), "ak_b", p, now, c.note())
	c.put(sum("b2"), "ak_b", p, now, c.note())
	if got, ok := c.get(sum("a"), now.Add(time.Minute-1)); !ok || got != p {
		t.Errorf("fresh entry: %v %v", got, ok)
	}
	if _, ok := c.get(sum("a"), now.Add(time.Minute)); ok {
		t.Error("an expired entry is served")
	}
	stale := c.note()
	c.forget("ak_b")
	for _, s := range []string{"b", "b2"} {
		if _, ok := c.get(sum(s), now); ok {
			t.Errorf("entry %s of a forgotten key is served", s)
		}
	}
	if _, ok := c.get(sum("a"), now); !ok {
		t.Error("forget dropped another key's entry")
	}
	c.put(sum("b"), "ak_b", p, now, stale)
	if _, ok := c.get(sum("b"), now); ok {
		t.Error("a put noted before a forget was cached")
	}
	stale = c.note()
	c.clear()
	c.put(sum("c"), "ak_c", p, now, stale)
	if _, ok := c.get(sum("a"), now); ok || c.n != 0 {
		t.Errorf("after clear: entry a served %v, %d entries", ok, c.n)
	}

	// The bound: expired entries are dropped first; when none has
	// expired, everything.
	half := maxAuthCacheEntries / 2
	for i := range maxAuthCacheEntries {
		at := now // expires at now+1m
		if i >= half {
			at = now.Add(90 * time.Second) // expires at now+2.5m
		}
		c.put(sum(fmt.Sprint(i)), "ak", p, at, c.note())
	}
	at := now.Add(2 * time.Minute)
	c.put(sum("x"), "ak_x", p, at, c.note())
	if c.n != maxAuthCacheEntries-half+1 {
		t.Errorf("%d entries after a put at the bound, want the %d unexpired and the new one", c.n, maxAuthCacheEntries-half)
	}
	if _, ok := c.get(sum(fmt.Sprint(half)), at); !ok {
		t.Error("an unexpired entry was dropped at the bound")
	}
	for i := c.n; i < maxAuthCacheEntries; i++ {
		c.put(sum(fmt.Sprint("y", i)), "ak_y", p, at, c.note())
	}
	c.put(sum("z"), "ak_z", p, at, c.note())
	if _, ok := c.get(sum("x"), at); ok || c.n != 1 {
		t.Errorf("a put at the bound with nothing expired left %d entries (x served: %v), want 1", c.n, ok)
	}
}

// TestAuthCacheConcurrent: reads, puts and forgets at once (run with
// -race) keep the count of entries true.
func TestAuthCacheConcurrent(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	c := newAuthCache(time.Minute)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 500 {
				k := sha256.Sum256([]byte(fmt.Sprint(w, i%50)))
				c.put(k, fmt.Sprint("ak_", i%7), Principal{AccountID: "a"}, now, c.note())
				c.get(k, now)
				if i%97 == 0 {
					c.forget(fmt.Sprint("ak_", i%7))
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
	c := newAuthCache(time.Minute)
	k := sha256.Sum256([]byte("secret"))
	c.put(k, "ak", Principal{AccountID: "a"}, now, c.note())
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, ok := c.get(k, now); !ok {
				b.Fatal("miss")
			}
		}
	})
}
