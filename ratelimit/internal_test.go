package ratelimit

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"time"
	"unsafe"
)

func TestClock(t *testing.T) {
	base := time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC)
	now := base
	tick := make(chan time.Time)
	stopped := false
	c := newClock(func() time.Time { return now }, tick, func() { stopped = true })
	if got := c.Now(); !got.Equal(base) {
		t.Fatalf("Now() = %v, want %v", got, base)
	}
	now = base.Add(time.Second)
	if got := c.Now(); !got.Equal(base) {
		t.Fatalf("Now() = %v before a tick, want %v", got, base)
	}
	tick <- time.Time{}
	tick <- time.Time{} // the second send returns only after the first tick was stored
	if got := c.Now(); !got.Equal(now) {
		t.Fatalf("Now() = %v after a tick, want %v", got, now)
	}
	c.Stop()
	c.Stop() // idempotent
	if !stopped {
		t.Fatal("stop function not called")
	}
	if got := c.Now(); time.Since(got) > time.Minute || got.Equal(now) {
		t.Fatalf("Now() = %v after Stop, want the system time", got)
	}
}

func TestNewClock(t *testing.T) {
	for _, res := range []time.Duration{-1, 0, time.Nanosecond, time.Hour} {
		c := NewClock(res)
		if d := time.Since(c.Now()); d < -time.Second || d > time.Second {
			t.Errorf("resolution %v: Now() is %v off", res, d)
		}
		c.Stop()
	}
}

// check verifies a shard's internal invariants: every live entry is found
// through the index at its own position, the index holds exactly n
// entries, and each ring's counters sum to its total with no counts outside
// the window.
func (sh *shard) check(t *testing.T, tab *table, g *geometry) {
	t.Helper()
	used := 0
	for _, v := range sh.index {
		if v != 0 {
			used++
		}
	}
	if used != sh.n || sh.n > sh.limit {
		t.Fatalf("index holds %d entries, shard %d, limit %d", used, sh.n, sh.limit)
	}
	for i := range sh.n {
		e := sh.at(i)
		if j, _ := sh.find(tab, e.hash); j != i {
			t.Fatalf("entry %d found at %d", i, j)
		}
		var sum uint32
		for j, c := range e.counts {
			sum += c
			inWindow := false
			for s := e.base - g.k; s <= e.base; s++ {
				inWindow = inWindow || s%ringSize == uint64(j)
			}
			if c != 0 && !inWindow {
				t.Fatalf("entry %d: count %d in ring slot %d outside the window ending at %d", i, c, j, e.base)
			}
		}
		if sum != e.total {
			t.Fatalf("entry %d: counts sum to %d, total %d", i, sum, e.total)
		}
	}
	if need := (sh.n + pageSize - 1) >> pageBits; len(sh.pages) > need+1 {
		t.Fatalf("%d pages for %d entries", len(sh.pages), sh.n)
	}
}

// TestTableChurn drives small limiters through inserts, evictions,
// reclamation and index growth and shrinkage, checking every invariant.
func TestTableChurn(t *testing.T) {
	for _, maxKeys := range []int{1, 7, 64, 300, 5000} {
		t.Run(strconv.Itoa(maxKeys), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(maxKeys), 7))
			l, err := New(Options{Capacity: 3, Window: time.Minute, MaxKeys: maxKeys})
			if err != nil {
				t.Fatal(err)
			}
			now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
			for round := range 40 {
				keys := 1 + rng.IntN(3*maxKeys)
				for range 200 + maxKeys {
					now = now.Add(time.Duration(rng.Int64N(int64(time.Second))))
					if rng.IntN(50) == 0 {
						now = now.Add(time.Duration(rng.Int64N(int64(5 * time.Minute))))
					}
					l.AllowAt(strconv.Itoa(round%3)+"/"+strconv.Itoa(rng.IntN(keys)), now)
				}
				for i := range l.tab.shards {
					l.tab.shards[i].check(t, &l.tab, &l.geo)
				}
			}
			if n := l.Len(); n > maxKeys {
				t.Fatalf("tracking %d keys, cap %d", n, maxKeys)
			}
		})
	}
}

// TestShardSize keeps shards on separate cache lines.
func TestShardSize(t *testing.T) {
	if size := unsafe.Sizeof(paddedShard{}); size%128 != 0 {
		t.Fatalf("padded shard size %d is not a multiple of 128", size)
	}
}
