package policy

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	"github.com/edgeplane/edgeplane/ratelimit"
)

// limiterKey identifies a limiter in the Engine's pool: everything that
// shapes its counting. enforce is not part of it, so switching enforce
// keeps the counts.
type limiterKey struct {
	scope     string
	name      string
	capacity  uint64
	window    time.Duration
	bucketKey string
	maxKeys   int
}

// limiterPool shares limiters between compilations, so that recompiling
// an unchanged rate-limit config keeps its counts.
//
// It holds each limiter strongly (held) until a sweep finds it idle
// (ratelimit.Limiter.Idle: nothing in it counts for a request at or after
// the engine's time), and only then drops it, so counts never depend on
// the garbage collector. A dropped limiter may still be used by a live
// Policy; so that a recompile never splits a config's counts between two
// limiters, the pool keeps a weak pointer to it (released): get adopts it
// again while anything still holds it, and an action that uses it adopts
// it again before its first request after the drop (the released flag,
// only read per request). So a dropped limiter is only ever replaced by a
// new one once nothing can use it, and it took no request since it was
// idle, so the new one decides as it would have. The weak entry goes when
// the limiter is collected.
//
// Sweeps run at a get at least limiterSweepEvery after the previous one
// (so that compiling many rate-limit actions does not examine the pool
// each time) and at [Engine.ReleaseIdleRateLimiters].
type limiterPool struct {
	mu        sync.Mutex
	held      map[limiterKey]*pooledLimiter
	released  map[limiterKey]weak.Pointer[pooledLimiter]
	lastSweep time.Time
}

// pooledLimiter is one limiter of the pool, shared by the rate-limit
// actions compiled with its key.
type pooledLimiter struct {
	lim  *ratelimit.Limiter
	key  limiterKey
	pool *limiterPool
	// released is set while the pool holds the limiter only weakly; it
	// is written only when the pool drops or adopts it.
	released atomic.Bool
}

// limiterSweepEvery is the least engine time between two sweeps of the
// pool started by compiling.
const limiterSweepEvery = time.Minute

func (p *limiterPool) init() {
	p.held = map[limiterKey]*pooledLimiter{}
	p.released = map[limiterKey]weak.Pointer[pooledLimiter]{}
}

// get returns the pooled limiter for k, adopting a dropped one that is
// still alive, or a new one with options o. now is the engine's time.
func (p *limiterPool) get(k limiterKey, o ratelimit.Options, now time.Time) (*pooledLimiter, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if d := now.Sub(p.lastSweep); d >= limiterSweepEvery || d < 0 {
		p.sweepLocked(now)
	}
	if pl, ok := p.held[k]; ok {
		return pl, nil
	}
	if wp, ok := p.released[k]; ok {
		if pl := wp.Value(); pl != nil {
			p.adoptLocked(pl)
			return pl, nil
		}
	}
	l, err := ratelimit.New(o)
	if err != nil {
		return nil, err
	}
	pl := &pooledLimiter{lim: l, key: k, pool: p}
	p.held[k] = pl
	runtime.AddCleanup(pl, p.forget, k)
	return pl, nil
}

// adopt holds pl strongly again: an action about to use it found it
// released.
func (p *limiterPool) adopt(pl *pooledLimiter) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if pl.released.Load() {
		p.adoptLocked(pl)
	}
}

func (p *limiterPool) adoptLocked(pl *pooledLimiter) {
	// While pl is reachable, get adopts it rather than making another
	// limiter for its key, so held has none for it.
	p.held[pl.key] = pl
	delete(p.released, pl.key)
	pl.released.Store(false)
}

// sweepLocked drops the limiters that are idle at now and returns how
// many.
func (p *limiterPool) sweepLocked(now time.Time) int {
	p.lastSweep = now
	n := 0
	for k, pl := range p.held {
		if !pl.lim.Idle(now) {
			continue
		}
		pl.released.Store(true)
		delete(p.held, k)
		p.released[k] = weak.Make(pl)
		n++
	}
	return n
}

// forget removes the weak entry of a collected limiter.
func (p *limiterPool) forget(k limiterKey) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if wp, ok := p.released[k]; ok && wp.Value() == nil {
		delete(p.released, k)
	}
}

// size returns the number of limiters the pool holds strongly (for tests).
func (p *limiterPool) size() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.held)
}

// ReleaseIdleRateLimiters drops from the Engine's pool the rate limiters
// that hold nothing that counts any more: whose every bucket's latest
// admission, indeed every request time they were given, is at least a
// window before the Engine's clock ([Options].Clock). It returns how many
// it dropped. Compiling sweeps the pool too, at most once a minute of the
// Engine's clock; a host that compiles rarely may call this periodically
// to release the memory of configurations no longer in use. It never
// changes a decision: see the package doc, section Rate limiting.
func (e *Engine) ReleaseIdleRateLimiters() int {
	p := &e.limiters
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sweepLocked(e.clock())
}
