// Package faketimer is a timer under a test's control, for code that
// takes its waits as a function (an After option): a test reads each wait
// it asks for and fires it when it chooses, so that no test sleeps for
// time to pass.
package faketimer

import (
	"testing"
	"time"
)

// Timer hands out one channel for every wait. Its After never blocks the
// code under test: the durations asked for queue (up to 1,000).
type Timer struct {
	delays chan time.Duration
	fire   chan time.Time
}

// New returns a Timer.
func New() *Timer {
	return &Timer{delays: make(chan time.Duration, 1000), fire: make(chan time.Time)}
}

// After records that d was asked for and returns the channel Fire sends
// on: the signature of time.After.
func (f *Timer) After(d time.Duration) <-chan time.Time {
	f.delays <- d
	return f.fire
}

// Next returns the next wait asked for, failing t when none is asked for
// within bound.
func (f *Timer) Next(t testing.TB, bound time.Duration) time.Duration {
	t.Helper()
	select {
	case d := <-f.delays:
		return d
	case <-time.After(bound):
		t.Fatalf("no wait was asked for within %v", bound)
		return 0
	}
}

// Fire ends one wait: it blocks until the code under test receives.
func (f *Timer) Fire() { f.fire <- time.Time{} }
