package ratelimit

import (
	"hash/maphash"
	"math"
	"time"

	"github.com/edgeplane/edgeplane/apierr"
)

// Options configures a [Limiter]. See [Config.Options] to derive them from a
// validated action config.
type Options struct {
	// Capacity is the number of requests a bucket admits within Window:
	// 1 to MaxCapacity.
	Capacity uint64
	// Window is the rate: the sliding window over which Capacity applies,
	// from 1ms to 8760h (a year). Every valid [Config.Rate] fits.
	Window time.Duration
	// MaxKeys caps the number of tracked keys; 0 means [DefaultMaxKeys].
	MaxKeys int
}

// Bounds of [Options.Window].
const (
	// MinWindow is the shortest accepted window.
	MinWindow = time.Millisecond
	// MaxWindow is the longest accepted window, a year.
	MaxWindow = 8760 * time.Hour
)

// Decision is the outcome of one request.
type Decision struct {
	// Allowed reports whether the request was admitted.
	Allowed bool
	// RetryAfter is, for a rejected request, how long to wait before a
	// retry is admitted if the bucket sees no other traffic; 0 when
	// allowed. It is never more than the window, unless the request's
	// time is behind the bucket's newest (then by at most the difference)
	// or, for a key the limiter does not track, behind the newest time its
	// shard has seen (then it is at most the difference); see the package
	// doc, Semantics.
	RetryAfter time.Duration
	// Limit is the limiter's capacity: the requests a bucket admits within
	// a window.
	Limit uint64
	// Remaining is how many more requests at the same time the bucket
	// would admit after this one: the capacity minus the admissions the
	// limiter counts in the window (with the oldest, partly overlapping
	// slot counted in full, so never more than an exact sliding window
	// would leave). 0 for a rejected request.
	Remaining uint64
	// Reset is how long, with no further traffic on the bucket, until
	// Remaining grows: until the oldest counted admissions leave the
	// window (or the latest one does, whichever comes first). For a
	// rejected request it equals RetryAfter. It is never more than the
	// window, unless the request's time is behind the bucket's newest (see
	// RetryAfter).
	Reset time.Duration
}

// ResetSeconds returns Reset in whole seconds rounded up, at least 1, for a
// rate-limit response header (the t parameter of the IETF RateLimit header,
// or X-RateLimit-Reset).
func (d Decision) ResetSeconds() int64 {
	s := int64((d.Reset + time.Second - 1) / time.Second)
	return max(s, 1)
}

// RetryAfterSeconds returns RetryAfter in whole seconds rounded up, at least
// 1, for a retry-after header; 0 when the request was allowed.
func (d Decision) RetryAfterSeconds() int64 {
	if d.Allowed {
		return 0
	}
	s := int64((d.RetryAfter + time.Second - 1) / time.Second)
	return max(s, 1)
}

// Limiter is a keyed sliding-window rate limiter; see the package doc for
// its guarantees. A Limiter is safe for concurrent use. Create one with
// [New].
type Limiter struct {
	capacity uint32
	geo      geometry
	seed     maphash.Seed
	tab      table
	// onEvict, when set (by tests), is called under the shard's lock with
	// the hash of every evicted bucket and whether it still held
	// admissions in the window (the one documented way to forget them).
	onEvict func(h uint64, busy bool)
}

// Bounds of [Options.MaxKeys].
const (
	// DefaultMaxKeys is the cap on tracked keys when MaxKeys is 0.
	DefaultMaxKeys = 1 << 20
	// MaxMaxKeys is the largest accepted MaxKeys.
	MaxMaxKeys = 1 << 30
)

// New returns a limiter for o, or an [*apierr.Error] with code
// [apierr.InvalidArgument] listing every invalid option. A new limiter holds
// a few kilobytes; its memory grows with the number of tracked keys.
func New(o Options) (*Limiter, error) {
	var vs apierr.Violations
	if o.Capacity < 1 || o.Capacity > MaxCapacity {
		vs.Add("capacity", "must be between 1 and %d, got %d", MaxCapacity, o.Capacity)
	}
	if o.Window < MinWindow || o.Window > MaxWindow {
		vs.Add("window", "must be between %v and %v, got %v", MinWindow, MaxWindow, o.Window)
	}
	if o.MaxKeys < 0 || o.MaxKeys > MaxMaxKeys {
		vs.Add("max_keys", "must be between 0 (the default, %d) and %d, got %d", DefaultMaxKeys, MaxMaxKeys, o.MaxKeys)
	}
	if err := vs.Err(); err != nil {
		return nil, err
	}
	if o.MaxKeys == 0 {
		o.MaxKeys = DefaultMaxKeys
	}
	return &Limiter{
		capacity: uint32(o.Capacity),
		geo:      newGeometry(o.Window),
		seed:     maphash.MakeSeed(),
		tab:      newTable(o.MaxKeys),
	}, nil
}

// SlotWidth returns g, the width of the limiter's sub-window slots: a tenth
// of the window for every window that is a multiple of 10ns. It bounds how
// early the limiter may reject and how long retry-after may overstate; see
// the package doc.
func (l *Limiter) SlotWidth() time.Duration { return time.Duration(l.geo.width) }

// Len returns the number of keys the limiter currently tracks. It locks
// every shard in turn, so it is meant for metrics and tests, not the
// request path.
func (l *Limiter) Len() int {
	n := 0
	for i := range l.tab.shards {
		sh := &l.tab.shards[i].shard
		sh.mu.Lock()
		n += sh.n
		sh.mu.Unlock()
	}
	return n
}

// Idle reports whether the limiter holds nothing that counts for a request
// stamped at or after now: every time it has been given, and so every
// bucket's latest admission, is at least a window before now (the newest
// time counted to the end of its slot). A pool of limiters may then drop
// it and later start a new one with the same options, losing no
// admission: the new one decides requests stamped at or after now as this
// one would (as long as the keys fit under the key cap; under key
// pressure, limiters with different histories may evict differently). It
// locks every shard in turn, so it is meant for occasional sweeps, not the
// request path, which pays nothing for it.
func (l *Limiter) Idle(now time.Time) bool {
	g := &l.geo
	horizon := nanos(now) - g.window
	for i := range l.tab.shards {
		sh := &l.tab.shards[i].shard
		sh.mu.Lock()
		end := g.slotStart(sh.maxSlot + 1)
		sh.mu.Unlock()
		if end > horizon {
			return false
		}
	}
	return true
}

// AllowAt decides whether a request of bucket key at time now is admitted,
// and records it if so. It does not allocate for a tracked key.
func (l *Limiter) AllowAt(key string, now time.Time) Decision {
	return l.allow(maphash.String(l.seed, key), nanos(now))
}

// AllowBytesAt is [Limiter.AllowAt] for a key held in a byte slice, such as
// one built with [AppendKeyPart]. It does not allocate for a tracked key
// and does not retain key.
func (l *Limiter) AllowBytesAt(key []byte, now time.Time) Decision {
	return l.allow(maphash.Bytes(l.seed, key), nanos(now))
}

func (l *Limiter) allow(h uint64, ns int64) Decision {
	t := &l.tab
	g := &l.geo
	sh := t.shardOf(h)
	sh.mu.Lock()
	var s uint64
	if uint64(ns-sh.curStart) < uint64(g.width) {
		s = sh.curSlot
	} else {
		s = g.slotOf(ns)
		sh.curSlot, sh.curStart = s, g.slotStart(s)
	}
	sh.maxSlot = max(sh.maxSlot, s)
	sh.ops++
	if sh.ops%sweepEvery == 0 {
		sh.sweepOne(t, g)
	}
	var e *entry
	if i, _ := sh.find(t, h); i >= 0 {
		e = sh.at(i)
		if b := e.base(g); s < b {
			s = b
		} else if s > b {
			e.advance(b, s, g)
		}
	} else {
		var d Decision
		if e, d = l.newEntry(sh, h, s, ns); e == nil {
			sh.mu.Unlock()
			d.Limit, d.Reset = uint64(l.capacity), d.RetryAfter
			return d
		}
	}
	// The request counts as arriving a before end, the end of slot s: at
	// its own time, or at the start of s if its slot was raised (its time
	// is behind the bucket's newest slot).
	end, a := sh.curStart+g.width, g.width
	if s == sh.curSlot {
		a = end - ns
	} else {
		end = g.slotStart(s + 1)
	}
	ago := e.ago(g)
	if ago >= uint64(g.window+a) {
		// The latest admission is a window or more before the request:
		// none is in its window.
		e.counts = [ringSize]uint32{}
	}
	total := e.sum()
	if total < l.capacity {
		e.counts[s%ringSize]++
		// The latest admission becomes this one unless it is later. (A
		// branch rather than min, so that the stored value does not
		// depend on the loaded one.)
		if uint64(a) < ago {
			e.set(g, s, uint64(a))
			ago = uint64(a)
		}
		// Remaining grows when the window counts fewer than total+1, the
		// admissions counted now.
		free := e.freeSlot(s, total+1, g, total+1)
		sh.mu.Unlock()
		reset := end - ns + min(int64(free-s-1)*g.width, g.window-int64(ago))
		return Decision{Allowed: true, Limit: uint64(l.capacity), Remaining: uint64(l.capacity - total - 1), Reset: time.Duration(reset)}
	}
	// Retry when the oldest counted slots leave the window or when the
	// latest admission does (as freeAt, from the values at hand). Both
	// are after ns: the slot free > s, and the latest admission is less
	// than a window before the request.
	free := e.freeSlot(s, total, g, l.capacity)
	sh.mu.Unlock()
	wait := time.Duration(end - ns + min(int64(free-s-1)*g.width, g.window-int64(ago)))
	return Decision{RetryAfter: wait, Limit: uint64(l.capacity), Reset: wait}
}

// newEntry adds an entry at slot s, the request's, for a key the shard
// does not track, making room if the shard is full, and returns it, or
// nil and the rejection. The key may be one whose bucket the shard forgot
// (reclaimed, or evicted while idle): its admissions are then at or
// before sh.forgot minus the window, and its newest time before
// sh.forgot (see shard.forget). A request at or after sh.forgot finds none
// of them in its window, so a fresh entry at its own time is exact; one
// before it is rejected until sh.forgot (fail closed), since the limiter
// cannot tell whether that key held admissions in its window. It is also
// rejected if every entry the shard may evict is at capacity.
func (l *Limiter) newEntry(sh *shard, h, s uint64, ns int64) (*entry, Decision) {
	t, g := &l.tab, &l.geo
	for range sweepOnInsert {
		sh.sweepOne(t, g)
	}
	if ns < sh.forgot {
		return nil, Decision{RetryAfter: time.Duration(sh.forgot - ns)}
	}
	if sh.n >= sh.limit {
		d, victim, busy, ok := sh.evictOne(t, g, l.capacity, s, ns)
		if !ok {
			return nil, d
		}
		if l.onEvict != nil {
			l.onEvict(victim, busy)
		}
	}
	return sh.at(sh.insert(t, h, s, g)), Decision{}
}

// forget records that the shard dropped the entry e, which it reclaimed
// or evicted while idle: a request of e's key before its latest admission
// plus the window could have found admissions in its window, or had a
// time behind e's newest, so until then a key the shard does not track is
// rejected (see newEntry). An entry's latest admission is less than a
// window before its key's newest time (a request finds an admission in
// its window, or is admitted), so that newest time is before the moment
// too.
func (sh *shard) forget(e *entry, g *geometry) {
	sh.forgot = max(sh.forgot, e.last(g)+g.window)
}

// sweepOne examines the entry at the reclamation cursor and removes it if
// it is fully expired: its newest slot is two windows and two slots behind
// the slot of the shard's latest call. That is the latest call's, not the
// newest the shard has seen, so that after a clock that jumped forward
// comes back, entries in use are not reclaimed against the time it jumped
// to. The entry's latest admission left the window more than a window and
// a slot before the latest call's slot, so forgetting it affects only
// requests stamped that far behind it (see forget).
func (sh *shard) sweepOne(t *table, g *geometry) {
	if sh.n == 0 {
		return
	}
	if int(sh.sweep) >= sh.n {
		sh.sweep = 0
	}
	if e := sh.at(int(sh.sweep)); e.base(g)+2*(g.k+1) <= sh.curSlot {
		sh.forget(e, g)
		sh.remove(t, int(sh.sweep)) // the last entry moves in: examine it next
		return
	}
	sh.sweep++
}

// evictOne makes room in a full shard by evicting one of evictSample
// entries from the eviction cursor: an idle one (no admissions in the
// window) if any, else the one with the fewest admissions in the window,
// but never one that is at or over capacity. The window is the one ending
// at the request's time ns, in slot s (or at an entry's newest slot, if
// later: then all its counted admissions count). If every examined entry
// is at capacity it evicts nothing and returns a rejection whose
// RetryAfter is the time until the first of them drops below capacity;
// the cursor stays, so a retry then finds it. Otherwise it returns the
// evicted entry's hash and whether it held admissions in the window; an
// idle one is forgotten (see forget).
func (sh *shard) evictOne(t *table, g *geometry, capacity uint32, s uint64, ns int64) (d Decision, victim uint64, busy, ok bool) {
	best, bestTotal := -1, capacity
	free := int64(math.MaxInt64)
	for j := range min(evictSample, sh.n) {
		i := (int(sh.evict) + j) % sh.n
		e := sh.at(i)
		es := max(s, e.base(g))
		var tot uint32
		if ns-e.last(g) < g.window { // else every admission left the window
			tot = e.countAt(es, g)
		}
		if tot < bestTotal {
			best, bestTotal = i, tot
			if tot == 0 {
				break
			}
		} else if best < 0 {
			free = min(free, e.freeAt(es, tot, ns, g, capacity))
		}
	}
	if best < 0 {
		return Decision{RetryAfter: time.Duration(free - ns)}, 0, false, false
	}
	e := sh.at(best)
	victim = e.hash
	if bestTotal == 0 {
		sh.forget(e, g)
	}
	sh.remove(t, best)
	sh.evict = int32(best)
	return Decision{}, victim, bestTotal > 0, true
}
