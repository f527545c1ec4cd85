package follow

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edgeplane/edgeplane/store"
)

// Defaults of [Options].
const (
	// DefaultPage is how many changes a follower reads at a time.
	DefaultPage = 256
	// MinBackoff is the wait after a first failure, and MaxBackoff the
	// longest wait after many.
	MinBackoff = 100 * time.Millisecond
	MaxBackoff = 10 * time.Second
)

// Handler is what a [Follower] keeps true to the store: it reads the
// state afresh, applies changes, and hears of failures. The follower
// calls it from its own goroutine, one call at a time.
type Handler interface {
	// Resync reads afresh what the handler keeps and returns the revision
	// it reflects (take [store.Feed.Revision] before reading): the
	// follower continues after it. It is called first when [Start] is
	// given no revision, and whenever the feed has been compacted past
	// the follower. The changes the follower did not read meanwhile are
	// never handed to Apply.
	Resync(ctx context.Context) (int64, error)
	// Apply applies a batch of changes. The follower calls it after every
	// read of the feed, even one that found no changes (after a Resync:
	// the place to do the work the Resync left pending). An error says
	// that work is left: the follower has moved past the batch all the
	// same, and calls Apply again after a backoff, with the changes read
	// since, until it succeeds; the handler keeps what it still owes.
	Apply(ctx context.Context, b Batch) error
	// Failed is told of every failure, before the follower backs off
	// (see [Failure]). It must not block.
	Failed(f Failure)
}

// Batch is what a [Follower] hands [Handler.Apply].
type Batch struct {
	// Changes are those read, in revision order; there may be none.
	Changes []store.Change
	// Revision is where the batch brings the follower: every change up to
	// it has now been handed to Apply (this batch's last, or the
	// follower's revision when there are none).
	Revision int64
	// Current reports that the batch reaches the end of the feed as it
	// was when read: the follower waits for a commit next.
	Current bool
}

// Step names what a [Follower] was doing when it failed.
type Step uint8

// The steps of a [Failure].
const (
	// StepResync: [Handler.Resync] failed.
	StepResync Step = iota + 1
	// StepRead: reading the feed failed ([store.Feed.Changes]).
	StepRead
	// StepApply: [Handler.Apply] failed.
	StepApply
)

// String returns "resync", "read" or "apply".
func (s Step) String() string {
	switch s {
	case StepResync:
		return "resync"
	case StepRead:
		return "read"
	case StepApply:
		return "apply"
	}
	return "step?"
}

// Failure is one failure of a [Follower], as [Handler.Failed] hears of it.
type Failure struct {
	// Step is what failed, and Err why.
	Step Step
	Err  error
	// Attempt counts the consecutive failures, this one included; a
	// successful Apply starts the count again. Zero for a compacted feed,
	// which is not retried but resynced.
	Attempt int
	// Backoff is how long the follower waits before it tries again; zero
	// for a compacted feed (Err is a [*store.CompactedError]), which it
	// resyncs at once.
	Backoff time.Duration
}

// Backoff is the retry policy of a [Follower]: the first retry after a
// failure waits Min, each next consecutive one twice as long, up to Max.
// A zero field means its default, [MinBackoff] or [MaxBackoff].
type Backoff struct {
	Min, Max time.Duration
}

// Delay returns the wait after the attempt-th consecutive failure
// (attempt counts from 1).
func (b Backoff) Delay(attempt int) time.Duration {
	lo, hi := b.Min, b.Max
	if lo <= 0 {
		lo = MinBackoff
	}
	if hi <= 0 {
		hi = MaxBackoff
	}
	d := lo
	for i := 1; i < attempt && d < hi; i++ {
		d *= 2
	}
	return min(d, hi)
}

// Options configures a [Follower]. The zero value means the documented
// defaults.
type Options struct {
	// Page is how many changes the follower reads at a time. Zero means
	// [DefaultPage].
	Page int
	// Payload says whether the changes carry their Data: the zero value
	// is [store.WithoutData], for a handler that only needs to know which
	// records changed.
	Payload store.Payload
	// Backoff is the retry policy after failures.
	Backoff Backoff
	// Gather is how long the follower lets commits gather after a commit
	// woke it, before it reads them: under a stream of writes it reads a
	// page per Gather instead of one per commit, at the cost of applying
	// a change up to Gather later. Zero reads at once.
	Gather time.Duration
	// After returns a channel that receives once d has passed: the timer
	// of backoffs and gathering. Nil means a timer of the runtime. Tests
	// give one they fire by hand.
	After func(d time.Duration) <-chan time.Time
}

// Follower follows a feed in a goroutine of its own, for a [Handler],
// until it is stopped. Its methods are safe for concurrent use.
type Follower struct {
	feed store.Feed
	h    Handler
	opts Options

	stop    context.CancelFunc // ends the follower
	endWait context.CancelFunc // ends waiting for commits: draining
	through atomic.Int64       // the last revision to apply once draining
	drain   atomic.Bool        // set once through is
	once    sync.Once
	done    chan struct{}

	timer *time.Timer // of the follower's goroutine, when opts.After is nil
}

// Start starts following feed for h after revision from, or, when from is
// negative, after the revision h's Resync returns. It returns at once.
func Start(feed store.Feed, h Handler, from int64, opts Options) *Follower {
	if opts.Page <= 0 {
		opts.Page = DefaultPage
	}
	ctx, stop := context.WithCancel(context.Background())
	waitCtx, endWait := context.WithCancel(ctx)
	f := &Follower{feed: feed, h: h, opts: opts, stop: stop, endWait: endWait, done: make(chan struct{})}
	go f.run(ctx, waitCtx, from)
	return f
}

// Stop ends the follower, cancelling the handler call in progress, and
// waits for its goroutine to return. It may be called more than once.
func (f *Follower) Stop() {
	f.stop()
	<-f.done
}

// Drain makes the follower stop waiting for commits, apply every change
// up to revision through (from the call on, none after it), and return;
// Drain waits for that, or until ctx ends, when it stops the follower as
// Stop does and returns ctx's error. The first call's through holds; a
// later call only waits. A follower whose revision is unknown when it
// drains (its Resync failing) has nothing it knows to apply, and returns.
func (f *Follower) Drain(ctx context.Context, through int64) error {
	f.once.Do(func() {
		f.through.Store(through)
		f.drain.Store(true)
		f.endWait()
	})
	select {
	case <-f.done:
		return nil
	case <-ctx.Done():
		f.Stop()
		return ctx.Err()
	}
}

// Done returns a channel that is closed when the follower has returned.
func (f *Follower) Done() <-chan struct{} { return f.done }

// run is the follower's goroutine: it follows after rev (unknown when
// negative) until ctx ends, or, once waitCtx ends (draining), until it
// has applied the changes up to f.through.
func (f *Follower) run(ctx, waitCtx context.Context, rev int64) {
	defer close(f.done)
	defer func() {
		if f.timer != nil {
			f.timer.Stop()
		}
	}()
	attempt := 0
	fail := func(step Step, err error, pause context.Context) {
		attempt++
		d := f.opts.Backoff.Delay(attempt)
		f.h.Failed(Failure{Step: step, Err: err, Attempt: attempt, Backoff: d})
		f.sleep(pause, d)
	}
	owed := false // Apply is owed a call before the follower waits or drains
	for ctx.Err() == nil {
		draining := f.drain.Load()
		through := f.through.Load()
		if rev < 0 {
			r, err := f.h.Resync(ctx)
			if err != nil {
				if ctx.Err() != nil || draining {
					return // draining: nothing is known to apply
				}
				fail(StepResync, err, waitCtx) // a drain ends the wait
				continue
			}
			rev, owed = r, true
		}
		if draining && rev >= through && !owed {
			return
		}
		changes, err := f.feed.Changes(ctx, rev, f.opts.Page, f.opts.Payload)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			var compacted *store.CompactedError
			if errors.As(err, &compacted) {
				f.h.Failed(Failure{Step: StepRead, Err: err})
				rev = -1
				continue
			}
			fail(StepRead, err, ctx) // draining too: what committed before is still owed
			continue
		}
		b := Batch{Changes: changes, Revision: rev, Current: len(changes) < f.opts.Page}
		if draining {
			for i, c := range changes {
				if c.Revision > through {
					b.Changes, b.Current = changes[:i], true
					break
				}
			}
		}
		if n := len(b.Changes); n > 0 {
			b.Revision = b.Changes[n-1].Revision
		}
		rev = b.Revision
		if err := f.h.Apply(ctx, b); err != nil {
			owed = true
			if ctx.Err() != nil {
				return
			}
			fail(StepApply, err, ctx)
			continue
		}
		owed, attempt = false, 0
		switch {
		case draining && b.Current:
			return // every change up to through is applied: it committed before the read
		case !b.Current:
			continue
		}
		if f.feed.Wait(waitCtx, rev) == nil && f.opts.Gather > 0 {
			f.sleep(waitCtx, f.opts.Gather)
		}
	}
}

// sleep waits d, or until ctx ends.
func (f *Follower) sleep(ctx context.Context, d time.Duration) {
	var c <-chan time.Time
	if f.opts.After != nil {
		c = f.opts.After(d)
	} else {
		if f.timer == nil {
			f.timer = time.NewTimer(d)
		} else {
			f.timer.Reset(d)
		}
		c = f.timer.C
	}
	select {
	case <-c:
	case <-ctx.Done():
	}
}
