package ratelimit

import (
	"sync"
	"sync/atomic"
	"time"
)

// Clock is a cheap, coarse wall clock for callers that have no timestamp
// at hand: one goroutine stores the time every resolution, and [Clock.Now]
// is a single atomic load. Its reading lags the system clock by less than
// the resolution, which is immaterial to a [Limiter] whose slots are
// seconds wide. A Clock is safe for concurrent use.
//
// Stop the clock when done with it to release its goroutine; after
// [Clock.Stop], Now reads the system clock on every call.
type Clock struct {
	ns   atomic.Int64 // unix nanoseconds; 0 once stopped
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// Clock resolution bounds.
const (
	// DefaultClockResolution is the resolution of NewClock(0).
	DefaultClockResolution = time.Millisecond
	// MinClockResolution is the finest resolution NewClock accepts; finer
	// requests are raised to it.
	MinClockResolution = 100 * time.Microsecond
)

// NewClock starts a clock that refreshes every resolution
// ([DefaultClockResolution] when resolution is 0 or negative, at least
// [MinClockResolution]).
func NewClock(resolution time.Duration) *Clock {
	if resolution <= 0 {
		resolution = DefaultClockResolution
	}
	resolution = max(resolution, MinClockResolution)
	t := time.NewTicker(resolution)
	return newClock(time.Now, t.C, t.Stop)
}

// newClock starts a clock that reads now on every tick and calls stop
// when stopped; tests drive it with their own tick channel.
func newClock(now func() time.Time, tick <-chan time.Time, stop func()) *Clock {
	c := &Clock{stop: make(chan struct{}), done: make(chan struct{})}
	c.ns.Store(unixNano(now()))
	go func() {
		defer close(c.done)
		defer stop()
		for {
			select {
			case <-tick:
				c.ns.Store(unixNano(now()))
			case <-c.stop:
				c.ns.Store(0)
				return
			}
		}
	}()
	return c
}

// unixNano returns t as unix nanoseconds, never 0 (0 marks a stopped clock).
func unixNano(t time.Time) int64 {
	if n := t.UnixNano(); n != 0 {
		return n
	}
	return 1
}

// Now returns the clock's latest reading, without a monotonic component.
// After [Clock.Stop] it returns [time.Now].
func (c *Clock) Now() time.Time {
	if n := c.ns.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Now()
}

// Stop stops the clock's goroutine and waits for it to exit. It is safe to
// call more than once.
func (c *Clock) Stop() {
	c.once.Do(func() { close(c.stop) })
	<-c.done
}
