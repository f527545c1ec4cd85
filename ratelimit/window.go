package ratelimit

import (
	"math/bits"
	"time"
)

// Sliding-window geometry. Time is cut into slots of width g aligned on the
// Unix epoch; a window of k slots (k*g = Window) plus the slot it partly
// overlaps are counted, in a ring of ringSize counters per key.
const (
	// slotsPerWindow is N: a window is cut into at most N slots.
	slotsPerWindow = 10
	// ringSize is the number of counters per key: the k slots of a window
	// plus the oldest, partly overlapped, slot.
	ringSize = slotsPerWindow + 1
	// slotOffset is added to every slot number so that slot arithmetic
	// (base-k, M-2(k+1)) never underflows, even for times near 1970.
	slotOffset = 4 * ringSize
)

// entry is the state of one bucket: 64 bytes, no pointers.
//
// counts[j%ringSize] holds the admissions of slot j for j in base-k..base;
// every other counter is zero. base is the newest slot the bucket has seen.
//
// last is the time of the bucket's latest admission, kept exactly as ago,
// its distance in nanoseconds before the end of slot base: last =
// slotStart(base+1) - ago, 1 <= ago <= agoMax. ago = agoMax stands for
// "before slot base-k": the bucket's admissions all left its window (every
// counter is zero). The slot number and ago together need about 66 bits
// whatever the slot width (a wide slot makes slot numbers small and ago
// large), so they share 96: base in the low baseBits bits of word, ago's
// low 32 bits in agoLo and its high bits in word above base.
//
// An admission counted in slot j never has a later time than last, and
// last is never before the start of slot j; both follow from how allow
// records an admission at max(its time, the start of its slot).
type entry struct {
	hash   uint64
	word   uint64 // base, then ago>>32 above bit baseBits
	agoLo  uint32 // ago & (1<<32 - 1)
	counts [ringSize]uint32
}

// base returns the newest slot the entry has seen.
func (e *entry) base(g *geometry) uint64 { return e.word & g.baseMask }

// ago returns how long before the end of slot base the latest admission
// was, or agoMax if it was before slot base-k.
func (e *entry) ago(g *geometry) uint64 {
	return e.word>>(g.baseBits&63)<<32 | uint64(e.agoLo)
}

// set stores the newest slot and the latest admission's ago.
func (e *entry) set(g *geometry, base, ago uint64) {
	e.word = base | ago>>32<<(g.baseBits&63)
	e.agoLo = uint32(ago)
}

// last returns the time of the latest admission in Unix nanoseconds (a
// time before slot base-k when ago is agoMax).
func (e *entry) last(g *geometry) int64 {
	return g.slotStart(e.base(g)+1) - int64(e.ago(g))
}

// sum returns the admissions in the ring.
func (e *entry) sum() uint32 {
	c := &e.counts
	return (c[0] + c[1] + c[2] + c[3]) + (c[4] + c[5] + c[6] + c[7]) + (c[8] + c[9] + c[10])
}

// advance moves the entry's newest slot from b forward to s > b,
// dropping the slots that leave the window.
func (e *entry) advance(b, s uint64, g *geometry) {
	ago := e.ago(g)
	if s-b > g.k {
		e.counts = [ringSize]uint32{}
		ago = g.agoMax
	} else {
		for j := b - g.k; j < s-g.k; j++ {
			e.counts[j%ringSize] = 0
		}
		ago = min(ago+(s-b)*uint64(g.width), g.agoMax)
	}
	e.set(g, s, ago)
}

// countAt returns the admissions counted by a window ending in slot s,
// without changing the entry.
func (e *entry) countAt(s uint64, g *geometry) uint32 {
	b := e.base(g)
	if s <= b {
		return e.sum()
	}
	if s-b > g.k {
		return 0
	}
	var t uint32
	for j := s - g.k; j <= b; j++ {
		t += e.counts[j%ringSize]
	}
	return t
}

// freeSlot returns the first slot at or after s >= base whose window
// counts fewer than capacity admissions, assuming no further admissions;
// t is the count of the window ending in s.
func (e *entry) freeSlot(s uint64, t uint32, g *geometry, capacity uint32) uint64 {
	if t < capacity {
		return s
	}
	b, k := e.base(g), g.k
	need := t - capacity + 1
	var cum uint32
	i := (s - k) % ringSize
	for j := s - k; j <= b; j++ {
		cum += e.counts[i]
		if cum >= need {
			return j + k + 1
		}
		if i++; i == ringSize {
			i = 0
		}
	}
	return b + k + 1 // unreachable: the counters sum to t
}

// freeAt returns the first time, not before ns, from which the entry
// admits again (its window, ending in slot s >= base or later, counts fewer
// than capacity admissions), assuming no further admissions; t is the count
// of the window ending in s. That is when its oldest counted slots leave
// the window or when its latest admission does, whichever comes first.
func (e *entry) freeAt(s uint64, t uint32, ns int64, g *geometry, capacity uint32) int64 {
	return max(ns, min(g.slotStart(e.freeSlot(s, t, g, capacity)), e.last(g)+g.window))
}

// geometry holds a limiter's precomputed time constants.
type geometry struct {
	width  int64  // slot width g in nanoseconds
	window int64  // the window in nanoseconds, k*width
	k      uint64 // slots per window
	// agoMax is the largest ago, for an admission before slot base-k.
	agoMax uint64
	// baseBits is the number of bits of a slot number; baseMask has them.
	baseBits uint
	baseMask uint64
}

// newGeometry cuts window into k slots, k the largest divisor of the
// window's nanoseconds not above slotsPerWindow (10 for every multiple of
// 10ns, so for every valid rate).
func newGeometry(window time.Duration) geometry {
	k := int64(slotsPerWindow)
	for window.Nanoseconds()%k != 0 {
		k--
	}
	w := window.Nanoseconds() / k
	g := geometry{width: w, window: k * w, k: uint64(k)}
	// An admission at least ago = (k+1)w+1 before the end of slot base is
	// before slot base-k.
	g.agoMax = uint64(k+1)*uint64(w) + 1
	g.baseBits = uint(bits.Len64(uint64(maxNanos)/uint64(w) + slotOffset))
	g.baseMask = 1<<g.baseBits - 1
	if g.baseBits+uint(bits.Len64(g.agoMax)) > 96 {
		panic("ratelimit: slot number and last admission do not fit in 96 bits") // unreachable for windows of 1ms to a year
	}
	return g
}

// maxNanos is the latest time the limiter distinguishes, in Unix
// nanoseconds (early 2116); it leaves room for slot arithmetic a window or
// more beyond it.
const maxNanos = 1 << 62

// nanos returns t as Unix nanoseconds clamped to [0, maxNanos]: times
// before 1970 count as 1970 and times after early 2116 as early 2116.
func nanos(t time.Time) int64 {
	sec := t.Unix()
	if sec < 0 {
		return 0
	}
	if sec >= maxNanos/int64(time.Second) {
		return maxNanos
	}
	return sec*int64(time.Second) + int64(t.Nanosecond())
}

// slotOf returns the slot of a Unix nanosecond time.
func (g *geometry) slotOf(ns int64) uint64 { return uint64(ns)/uint64(g.width) + slotOffset }

// slotStart returns the Unix nanosecond time at which slot s starts.
func (g *geometry) slotStart(s uint64) int64 { return int64(s-slotOffset) * g.width }
