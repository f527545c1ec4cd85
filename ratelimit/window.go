package ratelimit

import "time"

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
// every other counter is zero. total is the sum of the counters.
type entry struct {
	hash   uint64
	base   uint64
	total  uint32
	counts [ringSize]uint32
}

// advance moves the entry's newest slot forward to s, dropping the slots
// that leave the window.
func (e *entry) advance(s, k uint64) {
	if s <= e.base {
		return
	}
	if s-e.base > k {
		e.counts = [ringSize]uint32{}
		e.total = 0
	} else {
		for j := e.base - k; j < s-k; j++ {
			i := j % ringSize
			e.total -= e.counts[i]
			e.counts[i] = 0
		}
	}
	e.base = s
}

// totalAt returns the admissions counted by a window ending in slot s,
// without changing the entry.
func (e *entry) totalAt(s, k uint64) uint32 {
	if s <= e.base {
		return e.total
	}
	if s-e.base > k {
		return 0
	}
	t := e.total
	for j := e.base - k; j < s-k; j++ {
		t -= e.counts[j%ringSize]
	}
	return t
}

// freeSlot returns the first slot at or after s whose window counts fewer
// than capacity admissions, assuming no further admissions.
func (e *entry) freeSlot(s, k uint64, capacity uint32) uint64 {
	s = max(s, e.base)
	t := e.totalAt(s, k)
	if t < capacity {
		return s
	}
	need := t - capacity + 1
	var cum uint32
	i := (s - k) % ringSize
	for j := s - k; j <= e.base; j++ {
		cum += e.counts[i]
		if cum >= need {
			return j + k + 1
		}
		if i++; i == ringSize {
			i = 0
		}
	}
	return e.base + k + 1 // unreachable: the counters sum to t
}

// geometry holds a limiter's precomputed time constants.
type geometry struct {
	width int64  // slot width g in nanoseconds
	k     uint64 // slots per window: k*width == window
}

// newGeometry cuts window into k slots, k the largest divisor of the
// window's nanoseconds not above slotsPerWindow (10 for every multiple of
// 10ns, so for every valid rate).
func newGeometry(window time.Duration) geometry {
	k := int64(slotsPerWindow)
	for window.Nanoseconds()%k != 0 {
		k--
	}
	return geometry{width: window.Nanoseconds() / k, k: uint64(k)}
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
