package ratelimit_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/ratelimit"
)

// oracle is an exact sliding-window log of one key's admissions, in the
// limiter's effective time: a request's time never goes behind the newest
// time of the key's requests the limiter recorded (every request of a key
// it tracks; a request it rejects without tracking the key leaves no
// trace).
type oracle struct {
	admitted []time.Time // ascending
	newest   time.Time
}

// effective returns the time the limiter uses for a request at t.
func (o *oracle) effective(t time.Time) time.Time {
	if t.Before(o.newest) {
		return o.newest
	}
	o.newest = t
	return t
}

// last returns the time of the latest admission, or the zero time.
func (o *oracle) last() time.Time {
	if len(o.admitted) == 0 {
		return time.Time{}
	}
	return o.admitted[len(o.admitted)-1]
}

// count returns the admissions in (from, to].
func (o *oracle) count(from, to time.Time) int {
	n := 0
	for i := len(o.admitted) - 1; i >= 0 && o.admitted[i].After(from); i-- {
		if !o.admitted[i].After(to) {
			n++
		}
	}
	return n
}

// exactRetry returns how long after e an exact limiter would first admit,
// with no further traffic.
func (o *oracle) exactRetry(e time.Time, rate time.Duration, capacity int) time.Duration {
	var in []time.Time
	for _, a := range o.admitted {
		if a.After(e.Add(-rate)) && !a.After(e) {
			in = append(in, a)
		}
	}
	if len(in) < capacity {
		return 0
	}
	// The (len-capacity+1)-th oldest must leave the window.
	return in[len(in)-capacity].Add(rate).Sub(e)
}

// TestOracle drives limiters with random keys, capacities, rates and arrival
// times (bursts, bursts at a slot's start or end, slot edges, backward
// steps, long gaps) and checks every decision against an exact log: never
// over-admit; an empty window admits; reject only when the window widened
// by one slot holds capacity admissions; retry-after within the exact value
// plus a slot plus a second, and no later than the moment the latest
// admission leaves the window (so never more than the window for a request
// whose time is not behind); a retry at retry-after admitted.
func TestOracle(t *testing.T) {
	rates := []time.Duration{60 * time.Second, 70 * time.Second, 90 * time.Second, 10 * time.Minute, time.Hour, 90 * time.Minute, 24 * time.Hour}
	capacities := []int{1, 2, 3, 5, 8, 20, 100}
	trials, steps := 300, 400
	if testing.Short() {
		trials = 60
	}
	for trial := range trials {
		rng := rand.New(rand.NewPCG(uint64(trial), 42))
		rate := rates[rng.IntN(len(rates))]
		capacity := capacities[rng.IntN(len(capacities))]
		t.Run(fmt.Sprintf("%d/rate=%v/cap=%d", trial, rate, capacity), func(t *testing.T) {
			runOracle(t, rng, oracleRun{rate: rate, capacity: capacity, steps: steps, maxKeys: 1000, keys: 1 + rng.IntN(5)})
		})
	}
}

// TestOracleClockJumps is TestOracle with a clock that jumps forward by more
// than two windows (for one request or for a while) and then back, several
// keys sharing one shard, and key caps small enough to force reclamation
// and eviction. Taking each request's time as the latest time passed for
// its key so far (a time that goes backwards never reopens a bucket), the
// limiter never admits more than capacity in a window, whatever the clock
// does; evicting a bucket that still holds admissions under key pressure
// is the documented exception, and the oracle forgets such a bucket too.
func TestOracleClockJumps(t *testing.T) {
	rates := []time.Duration{60 * time.Second, 90 * time.Second, 10 * time.Minute, time.Hour, 24 * time.Hour}
	capacities := []int{1, 2, 3, 5, 8}
	maxKeys := []int{1, 2, 3, 4, 6, 8, 16, 1000}
	trials, steps := 400, 600
	if testing.Short() {
		trials = 80
	}
	for trial := range trials {
		rng := rand.New(rand.NewPCG(uint64(trial), 4242))
		r := oracleRun{
			rate:     rates[rng.IntN(len(rates))],
			capacity: capacities[rng.IntN(len(capacities))],
			steps:    steps,
			maxKeys:  maxKeys[rng.IntN(len(maxKeys))],
			keys:     2 + rng.IntN(11),
			jumps:    true,
		}
		t.Run(fmt.Sprintf("%d/rate=%v/cap=%d/keys=%d/max=%d", trial, r.rate, r.capacity, r.keys, r.maxKeys), func(t *testing.T) {
			runOracle(t, rng, r)
		})
	}
}

// FuzzOracle runs the oracle check on fuzzer-chosen seeds, rates and
// capacities (any rate from 1s to 24h in whole seconds), with and without
// clock jumps and key pressure.
func FuzzOracle(f *testing.F) {
	f.Add(uint64(1), uint32(60), uint32(1), false)
	f.Add(uint64(2), uint32(86400), uint32(3), false)
	f.Add(uint64(3), uint32(7), uint32(100), false)
	f.Add(uint64(4), uint32(86400), uint32(3), true)
	f.Add(uint64(5), uint32(60), uint32(2), true)
	f.Fuzz(func(t *testing.T, seed uint64, rateSeconds, capacity uint32, jumps bool) {
		rng := rand.New(rand.NewPCG(seed, 42))
		r := oracleRun{
			rate:     time.Duration(1+rateSeconds%86400) * time.Second,
			capacity: 1 + int(capacity%200),
			steps:    300,
			maxKeys:  1000,
			keys:     1 + rng.IntN(5),
		}
		if jumps {
			r.jumps, r.maxKeys, r.keys = true, 1+rng.IntN(16), 2+rng.IntN(11)
		}
		runOracle(t, rng, r)
	})
}

// slotStart returns the start of t's slot of width g; slots are aligned on
// the Unix epoch (time.Truncate aligns on year 1, which differs for widths
// such as 7s).
func slotStart(t time.Time, g time.Duration) time.Time {
	return time.Unix(0, t.UnixNano()-t.UnixNano()%int64(g)).UTC()
}

// oracleRun is one oracle run's parameters.
type oracleRun struct {
	rate     time.Duration
	capacity int
	steps    int
	maxKeys  int
	keys     int
	// jumps makes the clock jump forward by more than two windows, for one
	// request or for a while, and then back.
	jumps bool
}

func runOracle(t *testing.T, rng *rand.Rand, r oracleRun) {
	rate, capacity := r.rate, r.capacity
	l, err := ratelimit.New(ratelimit.Options{Capacity: uint64(capacity), Window: rate, MaxKeys: r.maxKeys})
	if err != nil {
		t.Fatal(err)
	}
	g := l.SlotWidth()
	if g > max(10*time.Second, rate/10) {
		t.Fatalf("slot width %v exceeds max(10s, rate/10)", g)
	}
	keys := make([]string, r.keys)
	oracles := make([]oracle, len(keys))
	byHash := map[uint64]int{}
	for i := range keys {
		keys[i] = fmt.Sprintf("key-%d", i)
		byHash[ratelimit.HashString(l, keys[i])] = i
	}
	// A bucket evicted while it still holds admissions forgets them (the
	// documented exception, under key pressure only): so does the oracle.
	var busyEvicted []int
	ratelimit.SetOnEvict(l, func(h uint64, busy bool) {
		if busy {
			busyEvicted = append(busyEvicted, byHash[h])
		}
	})
	wall := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(rng.Int64N(int64(24 * time.Hour))))
	if rng.IntN(2) == 0 {
		wall = slotStart(wall, g)
	}
	// The clock reads wall+skew: skew is 0, or a forward jump of more than
	// two windows for jumpLeft more requests, after which it is back.
	var skew time.Duration
	jumpLeft := 0
	burst := 0 // requests left in a burst at one instant
	for step := range r.steps {
		switch rr := rng.IntN(100); {
		case burst > 0: // burst at a slot's start or end: same instant
			burst--
		case rr < 30: // burst: same instant
		case rr < 55:
			wall = wall.Add(time.Duration(rng.Int64N(int64(g))))
		case rr < 65: // exactly on, just before or just after a slot edge
			wall = slotStart(wall, g).Add(g).Add(time.Duration(rng.IntN(3)-1) * time.Nanosecond)
		case rr < 70: // a burst of capacity or more at a slot's start or at its last nanosecond
			wall = slotStart(wall, g).Add(g).Add(-time.Duration(rng.IntN(2)) * time.Nanosecond)
			burst = capacity + rng.IntN(3)
		case rr < 80: // near a window edge
			wall = wall.Add(rate - g + time.Duration(rng.Int64N(int64(2*g))))
		case rr < 85: // a long gap
			wall = wall.Add(time.Duration(rng.Int64N(int64(3 * rate))))
		default:
			wall = wall.Add(time.Duration(rng.Int64N(int64(time.Second))))
		}
		if r.jumps {
			switch {
			case jumpLeft > 0:
				if jumpLeft--; jumpLeft == 0 {
					skew = 0 // back
				} else if rng.IntN(4) == 0 {
					skew += time.Duration(rng.Int64N(int64(rate))) // the jumped clock moves on
				}
			case rng.IntN(25) == 0: // jump forward by more than two windows
				skew = 2*rate + g + time.Duration(rng.Int64N(int64(4*rate)))
				jumpLeft = 1 + rng.IntN(3)
				if rng.IntN(2) == 0 {
					jumpLeft += rng.IntN(60)
				}
			}
		}
		at := wall.Add(skew)
		if rng.IntN(8) == 0 { // a clock that went backwards, up to two slots
			at = at.Add(-time.Duration(rng.Int64N(int64(2 * g))))
		}
		k := rng.IntN(len(keys))
		o := &oracles[k]
		busyEvicted = busyEvicted[:0]
		d := l.AllowAt(keys[k], at)
		for _, v := range busyEvicted {
			oracles[v] = oracle{}
		}
		tracked := ratelimit.Tracks(l, keys[k])
		forgot := ratelimit.ForgotUntil(l, keys[k])
		e := at
		if tracked {
			e = o.effective(at)
		} else if e.Before(o.newest) {
			e = o.newest // for messages only: nothing is admitted
		}
		where := fmt.Sprintf("step %d key %d at %v (effective %v, skew %v)", step, k, at.Format(time.RFC3339Nano), e.Format(time.RFC3339Nano), skew)
		if d.Limit != uint64(capacity) {
			t.Fatalf("%s: Limit %d, want the capacity %d", where, d.Limit, capacity)
		}
		if d.Allowed {
			if d.RetryAfter != 0 || d.RetryAfterSeconds() != 0 {
				t.Fatalf("%s: allowed with retry-after %v", where, d.RetryAfter)
			}
			o.admitted = append(o.admitted, e)
			n := o.count(e.Add(-rate), e)
			if n > capacity {
				t.Fatalf("%s: over-admitted: %d admissions in (t-rate, t], capacity %d", where, n, capacity)
			}
			// Remaining never overstates what an exact window leaves, and
			// understates it by at most the admissions of one slot.
			if wide := max(0, capacity-o.count(e.Add(-rate-g), e)); d.Remaining > uint64(capacity-n) || d.Remaining < uint64(wide) {
				t.Fatalf("%s: Remaining %d, exact %d, with the widened window %d", where, d.Remaining, capacity-n, wide)
			}
			// Reset: the remaining quota grows by then, not before, and never
			// later than the latest admission's leaving the window.
			if d.Reset <= 0 || d.Reset > o.last().Add(rate).Sub(at) {
				t.Fatalf("%s: Reset %v, the latest admission leaves in %v", where, d.Reset, o.last().Add(rate).Sub(at))
			}
			continue
		}
		if d.Remaining != 0 || d.Reset != d.RetryAfter {
			t.Fatalf("%s: rejected with Remaining %d, Reset %v (RetryAfter %v)", where, d.Remaining, d.Reset, d.RetryAfter)
		}
		if d.RetryAfter <= 0 || d.RetryAfterSeconds() < 1 {
			t.Fatalf("%s: rejected with retry-after %v (%ds)", where, d.RetryAfter, d.RetryAfterSeconds())
		}
		if !tracked {
			// A key the limiter does not track is rejected only while a
			// bucket its shard forgot may be its own, or when its shard is
			// full of buckets at capacity.
			if at.Before(forgot) {
				if want := forgot.Sub(at); d.RetryAfter != want {
					t.Fatalf("%s: untracked key rejected with retry-after %v, want %v (until %v)", where, d.RetryAfter, want, forgot.Format(time.RFC3339Nano))
				}
				continue
			}
			if !ratelimit.ShardFull(l, keys[k]) {
				t.Fatalf("%s: untracked key rejected (retry-after %v) though its shard has room", where, d.RetryAfter)
			}
		} else {
			if at.Equal(e) && o.count(e.Add(-rate), e) == 0 {
				t.Fatalf("%s: rejected with no admission in (t-rate, t] (latest %v)", where, o.last().Format(time.RFC3339Nano))
			}
			if n := o.count(e.Add(-rate-g), e); n < capacity {
				t.Fatalf("%s: rejected with only %d admissions in (t-rate-g, t], capacity %d", where, n, capacity)
			}
			// Every admission leaves the window by last+rate: for a
			// request not behind the key's newest time, within the window.
			if leave := o.last().Add(rate).Sub(at); d.RetryAfter > leave || (at.Equal(e) && d.RetryAfter > rate) {
				t.Fatalf("%s: retry-after %v, but the latest admission (%v) leaves the window in %v (rate %v)", where, d.RetryAfter, o.last().Format(time.RFC3339Nano), leave, rate)
			}
			exact := e.Sub(at) + o.exactRetry(e, rate, capacity)
			if got := time.Duration(d.RetryAfterSeconds()) * time.Second; got > exact+g+time.Second {
				t.Fatalf("%s: retry-after %v (%v) exceeds exact %v + slot %v + 1s", where, got, d.RetryAfter, exact, g)
			}
		}
		if rng.IntN(3) == 0 { // honour retry-after, to the nanosecond or the header's second
			retry := at.Add(d.RetryAfter)
			if rng.IntN(2) == 0 {
				retry = at.Add(time.Duration(d.RetryAfterSeconds()) * time.Second)
			}
			busyEvicted = busyEvicted[:0]
			d2 := l.AllowAt(keys[k], retry)
			for _, v := range busyEvicted {
				oracles[v] = oracle{}
			}
			if !d2.Allowed {
				t.Fatalf("%s: retry at +%v (retry-after %v) rejected: %+v", where, retry.Sub(at), d.RetryAfter, d2)
			}
			e := o.effective(retry)
			o.admitted = append(o.admitted, e)
			if n := o.count(e.Add(-rate), e); n > capacity {
				t.Fatalf("%s: retry over-admitted: %d admissions, capacity %d", where, n, capacity)
			}
			if retry.After(wall.Add(skew)) {
				wall = retry.Add(-skew)
			}
		}
	}
}
