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
// time seen for the key.
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
			runOracle(t, rng, rate, capacity, steps)
		})
	}
}

// FuzzOracle runs the oracle check on fuzzer-chosen seeds, rates and
// capacities (any rate from 1s to 24h in whole seconds).
func FuzzOracle(f *testing.F) {
	f.Add(uint64(1), uint32(60), uint32(1))
	f.Add(uint64(2), uint32(86400), uint32(3))
	f.Add(uint64(3), uint32(7), uint32(100))
	f.Fuzz(func(t *testing.T, seed uint64, rateSeconds, capacity uint32) {
		rate := time.Duration(1+rateSeconds%86400) * time.Second
		runOracle(t, rand.New(rand.NewPCG(seed, 42)), rate, 1+int(capacity%200), 300)
	})
}

// slotStart returns the start of t's slot of width g; slots are aligned on
// the Unix epoch (time.Truncate aligns on year 1, which differs for widths
// such as 7s).
func slotStart(t time.Time, g time.Duration) time.Time {
	return time.Unix(0, t.UnixNano()-t.UnixNano()%int64(g)).UTC()
}

func runOracle(t *testing.T, rng *rand.Rand, rate time.Duration, capacity, steps int) {
	l, err := ratelimit.New(ratelimit.Options{Capacity: uint64(capacity), Window: rate, MaxKeys: 1000})
	if err != nil {
		t.Fatal(err)
	}
	g := l.SlotWidth()
	if g > max(10*time.Second, rate/10) {
		t.Fatalf("slot width %v exceeds max(10s, rate/10)", g)
	}
	keys := make([]string, 1+rng.IntN(5))
	oracles := make([]oracle, len(keys))
	for i := range keys {
		keys[i] = fmt.Sprintf("key-%d", i)
	}
	now := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(rng.Int64N(int64(24 * time.Hour))))
	if rng.IntN(2) == 0 {
		now = slotStart(now, g)
	}
	burst := 0 // requests left in a burst at one instant
	for step := range steps {
		switch r := rng.IntN(100); {
		case burst > 0: // burst at a slot's start or end: same instant
			burst--
		case r < 30: // burst: same instant
		case r < 55:
			now = now.Add(time.Duration(rng.Int64N(int64(g))))
		case r < 65: // exactly on, just before or just after a slot edge
			now = slotStart(now, g).Add(g).Add(time.Duration(rng.IntN(3)-1) * time.Nanosecond)
		case r < 70: // a burst of capacity or more at a slot's start or at its last nanosecond
			now = slotStart(now, g).Add(g).Add(-time.Duration(rng.IntN(2)) * time.Nanosecond)
			burst = capacity + rng.IntN(3)
		case r < 80: // near a window edge
			now = now.Add(rate - g + time.Duration(rng.Int64N(int64(2*g))))
		case r < 85: // a long gap
			now = now.Add(time.Duration(rng.Int64N(int64(3 * rate))))
		default:
			now = now.Add(time.Duration(rng.Int64N(int64(time.Second))))
		}
		at := now
		if rng.IntN(8) == 0 { // a clock that went backwards, up to two slots
			at = now.Add(-time.Duration(rng.Int64N(int64(2 * g))))
		}
		k := rng.IntN(len(keys))
		o := &oracles[k]
		d := l.AllowAt(keys[k], at)
		e := o.effective(at)
		where := fmt.Sprintf("step %d key %d at %v (effective %v)", step, k, at.Format(time.RFC3339Nano), e.Format(time.RFC3339Nano))
		if !d.Allowed && at.Equal(e) && o.count(e.Add(-rate), e) == 0 {
			t.Fatalf("%s: rejected with no admission in (t-rate, t] (latest %v)", where, o.last().Format(time.RFC3339Nano))
		}
		if d.Allowed {
			if d.RetryAfter != 0 || d.RetryAfterSeconds() != 0 {
				t.Fatalf("%s: allowed with retry-after %v", where, d.RetryAfter)
			}
			o.admitted = append(o.admitted, e)
			if n := o.count(e.Add(-rate), e); n > capacity {
				t.Fatalf("%s: over-admitted: %d admissions in (t-rate, t], capacity %d", where, n, capacity)
			}
			continue
		}
		if n := o.count(e.Add(-rate-g), e); n < capacity {
			t.Fatalf("%s: rejected with only %d admissions in (t-rate-g, t], capacity %d", where, n, capacity)
		}
		if d.RetryAfter <= 0 || d.RetryAfterSeconds() < 1 {
			t.Fatalf("%s: rejected with retry-after %v (%ds)", where, d.RetryAfter, d.RetryAfterSeconds())
		}
		// Every admission leaves the window by last+rate: for a request
		// not behind the key's newest time, within the window.
		if leave := o.last().Add(rate).Sub(at); d.RetryAfter > leave || (at.Equal(e) && d.RetryAfter > rate) {
			t.Fatalf("%s: retry-after %v, but the latest admission (%v) leaves the window in %v (rate %v)", where, d.RetryAfter, o.last().Format(time.RFC3339Nano), leave, rate)
		}
		exact := e.Sub(at) + o.exactRetry(e, rate, capacity)
		if got := time.Duration(d.RetryAfterSeconds()) * time.Second; got > exact+g+time.Second {
			t.Fatalf("%s: retry-after %v (%v) exceeds exact %v + slot %v + 1s", where, got, d.RetryAfter, exact, g)
		}
		if rng.IntN(3) == 0 { // honour retry-after, to the nanosecond or the header's second
			retry := at.Add(d.RetryAfter)
			if rng.IntN(2) == 0 {
				retry = at.Add(time.Duration(d.RetryAfterSeconds()) * time.Second)
			}
			if !l.AllowAt(keys[k], retry).Allowed {
				t.Fatalf("%s: retry at +%v (retry-after %v) rejected", where, retry.Sub(at), d.RetryAfter)
			}
			e := o.effective(retry)
			o.admitted = append(o.admitted, e)
			if n := o.count(e.Add(-rate), e); n > capacity {
				t.Fatalf("%s: retry over-admitted: %d admissions, capacity %d", where, n, capacity)
			}
			if retry.After(now) {
				now = retry
			}
		}
	}
}
