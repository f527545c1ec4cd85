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
// entries, every ring counts at least one admission and at most capacity,
// none outside its window, and the latest admission is neither after the
// end of the newest slot (ago >= 1) nor before the start of the newest
// slot with a count.
func (sh *shard) check(t *testing.T, tab *table, g *geometry, capacity uint32) {
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
		base, ago := e.base(g), e.ago(g)
		if base > sh.maxSlot || ago < 1 || ago > g.agoMax {
			t.Fatalf("entry %d: base %d (shard's newest %d), ago %d (max %d)", i, base, sh.maxSlot, ago, g.agoMax)
		}
		var sum uint32
		newest := uint64(0) // newest slot with a count, plus one
		for s := base - g.k; s <= base; s++ {
			if c := e.counts[s%ringSize]; c != 0 {
				sum += c
				newest = s + 1
			}
		}
		if sum != e.sum() {
			t.Fatalf("entry %d: counts outside the window ending at %d: %v", i, base, e.counts)
		}
		if sum > capacity {
			t.Fatalf("entry %d: %d admissions counted, capacity %d", i, sum, capacity)
		}
		if newest == 0 {
			t.Fatalf("entry %d: no admission counted", i) // every call that keeps an entry admits or finds it full
		}
		if e.last(g) < g.slotStart(newest-1) {
			t.Fatalf("entry %d: latest admission at %d, before slot %d (start %d) which counts one", i, e.last(g), newest-1, g.slotStart(newest-1))
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
					l.tab.shards[i].check(t, &l.tab, &l.geo, l.capacity)
				}
			}
			if n := l.Len(); n > maxKeys {
				t.Fatalf("tracking %d keys, cap %d", n, maxKeys)
			}
		})
	}
}

// TestEntryPacking checks that an entry is 64 bytes and that its slot
// number and latest admission round-trip at their extremes, for windows
// from 1ms to a year, including ones cut into fewer than 10 slots.
func TestEntryPacking(t *testing.T) {
	if size := unsafe.Sizeof(entry{}); size != 64 {
		t.Fatalf("entry is %d bytes, want 64", size)
	}
	for _, w := range []time.Duration{MinWindow, MinWindow + 1, time.Minute, 70 * time.Second, 24 * time.Hour, MaxWindow - 1, MaxWindow} {
		g := newGeometry(w)
		if g.window != w.Nanoseconds() || g.k*uint64(g.width) != uint64(g.window) {
			t.Fatalf("window %v: %d slots of %d ns", w, g.k, g.width)
		}
		for _, base := range []uint64{slotOffset, (slotOffset+g.slotOf(maxNanos))/2 + 1, g.slotOf(maxNanos)} {
			for _, ago := range []uint64{1, 1<<32 - 1, 1 << 32, uint64(g.width), g.agoMax - 1, g.agoMax} {
				e := entry{hash: ^uint64(0), counts: [ringSize]uint32{1, 2, 3}}
				e.set(&g, base, ago)
				if e.base(&g) != base || e.ago(&g) != ago || e.hash != ^uint64(0) || e.counts[2] != 3 {
					t.Fatalf("window %v (%d slots): set(%d, %d) reads back base %d, ago %d", w, g.k, base, ago, e.base(&g), e.ago(&g))
				}
			}
		}
	}
}

// TestShardSize keeps shards on separate cache lines.
func TestShardSize(t *testing.T) {
	if size := unsafe.Sizeof(paddedShard{}); size%128 != 0 {
		t.Fatalf("padded shard size %d is not a multiple of 128", size)
	}
}
