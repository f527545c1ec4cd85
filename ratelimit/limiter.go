package ratelimit

import (
	"hash/maphash"
	"sync"
	"time"

	"github.com/edgeplane/edgeplane/apierr"
)

// DefaultMaxKeys is the cap on tracked keys when [Options.MaxKeys] is 0.
const DefaultMaxKeys = 1 << 20

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

// Window bounds accepted by [New].
const (
	MinWindow = time.Millisecond
	MaxWindow = 8760 * time.Hour
)

// Decision is the outcome of one request.
type Decision struct {
	// Allowed reports whether the request was admitted.
	Allowed bool
	// RetryAfter is, for a rejected request, how long to wait before a
	// retry is admitted if the bucket sees no other traffic; 0 when
	// allowed.
	RetryAfter time.Duration
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
	maxKeys  int
	seed     maphash.Seed

	mu      sync.Mutex
	entries map[uint64]*entry
}

// New returns a limiter for o, or an [*apierr.Error] with code
// [apierr.InvalidArgument] listing every invalid option.
func New(o Options) (*Limiter, error) {
	var vs apierr.Violations
	if o.Capacity < 1 || o.Capacity > MaxCapacity {
		vs.Add("capacity", "must be between 1 and %d, got %d", MaxCapacity, o.Capacity)
	}
	if o.Window < MinWindow || o.Window > MaxWindow {
		vs.Add("window", "must be between %v and %v, got %v", MinWindow, MaxWindow, o.Window)
	}
	if o.MaxKeys < 0 {
		vs.Add("max_keys", "must not be negative (0 means the default, %d), got %d", DefaultMaxKeys, o.MaxKeys)
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
		maxKeys:  o.MaxKeys,
		seed:     maphash.MakeSeed(),
		entries:  make(map[uint64]*entry),
	}, nil
}

// AllowAt decides whether a request of bucket key at time now is admitted,
// and records it if so.
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
	g := &l.geo
	s := g.slotOf(ns)
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.entries[h]
	if e == nil {
		e = &entry{hash: h, base: s}
		l.entries[h] = e
	}
	if s < e.base {
		s = e.base
	} else {
		e.advance(s, g.k)
	}
	if e.total < l.capacity {
		e.counts[s%ringSize]++
		e.total++
		return Decision{Allowed: true}
	}
	free := e.freeSlot(s, g.k, l.capacity)
	return Decision{RetryAfter: time.Duration(g.slotStart(free) - ns)}
}
