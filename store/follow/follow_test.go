package follow_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/internal/faketimer"
	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/store"
	"github.com/edgeplane/edgeplane/store/follow"
)

// bound is how long a test waits for the follower before it fails: a
// bound on a hung test, never a wait for time to pass.
const bound = 10 * time.Second

// recorder is a Handler that reports what it is given on channels.
type recorder struct {
	feed     store.Feed
	batches  chan follow.Batch
	failures chan follow.Failure
	resyncs  chan int64

	failResync atomic.Bool
	failApply  atomic.Int32 // how many more Applies fail
}

var errDown = errors.New("connection refused")

func newRecorder(feed store.Feed) *recorder {
	return &recorder{feed: feed, batches: make(chan follow.Batch, 1000), failures: make(chan follow.Failure, 1000), resyncs: make(chan int64, 100)}
}

func (r *recorder) Resync(ctx context.Context) (int64, error) {
	if r.failResync.Load() {
		return 0, errDown
	}
	rev, err := r.feed.Revision(ctx)
	if err == nil {
		r.resyncs <- rev
	}
	return rev, err
}

func (r *recorder) Apply(_ context.Context, b follow.Batch) error {
	r.batches <- b
	if r.failApply.Add(-1) >= 0 {
		return errors.New("cannot compile")
	}
	return nil
}

func (r *recorder) Failed(f follow.Failure) { r.failures <- f }

func (r *recorder) nextBatch(t *testing.T) follow.Batch {
	t.Helper()
	select {
	case b := <-r.batches:
		return b
	case <-time.After(bound):
		t.Fatal("no batch")
		return follow.Batch{}
	}
}

// batchUntil returns the batches up to the first that reaches rev.
func (r *recorder) batchUntil(t *testing.T, rev int64) []follow.Batch {
	t.Helper()
	var out []follow.Batch
	for {
		b := r.nextBatch(t)
		out = append(out, b)
		if b.Revision >= rev {
			return out
		}
	}
}

func (r *recorder) nextFailure(t *testing.T) follow.Failure {
	t.Helper()
	select {
	case f := <-r.failures:
		return f
	case <-time.After(bound):
		t.Fatal("no failure")
		return follow.Failure{}
	}
}

// flaky is a feed whose reads fail while told to.
type flaky struct {
	store.Store
	down atomic.Bool
}

func (f *flaky) Changes(ctx context.Context, after int64, limit int, p store.Payload) ([]store.Change, error) {
	if f.down.Load() {
		return nil, errDown
	}
	return f.Store.Changes(ctx, after, limit, p)
}

func write(t *testing.T, s store.Store, n int) int64 {
	t.Helper()
	ctx := context.Background()
	for range n {
		rev, _ := s.Revision(ctx)
		if err := s.Create(ctx, store.Record{Kind: "k", AccountID: "a", ID: fmt.Sprintf("r_%06d", rev+1), Data: []byte(`{"n":1}`)}); err != nil {
			t.Fatal(err)
		}
	}
	rev, err := s.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return rev
}

func revisions(bs []follow.Batch) [][]int64 {
	var out [][]int64
	for _, b := range bs {
		var revs []int64
		for _, c := range b.Changes {
			revs = append(revs, c.Revision)
		}
		out = append(out, revs)
	}
	return out
}

// TestPaging: the changes after the start come in pages, in order, each
// batch at its last change's revision, the last current; a commit made
// while the follower waits comes next.
func TestPaging(t *testing.T) {
	for _, tc := range []struct {
		name    string
		payload store.Payload
	}{{"with data", store.WithData}, {"without data", store.WithoutData}} {
		t.Run(tc.name, func(t *testing.T) {
			st := memstore.New()
			start := write(t, st, 2)
			end := write(t, st, 7)
			r := newRecorder(st)
			f := follow.Start(st, r, start, follow.Options{Page: 3, Payload: tc.payload})
			defer f.Stop()
			got := r.batchUntil(t, end)
			want := [][]int64{{3, 4, 5}, {6, 7, 8}, {9}}
			if !slices.EqualFunc(revisions(got), want, slices.Equal) {
				t.Fatalf("batches %v, want %v", revisions(got), want)
			}
			for i, b := range got {
				if b.Current != (i == len(got)-1) || b.Revision != b.Changes[len(b.Changes)-1].Revision {
					t.Errorf("batch %d: revision %d current %v", i, b.Revision, b.Current)
				}
				for _, c := range b.Changes {
					if (c.Data != nil) != (tc.payload == store.WithData) {
						t.Errorf("change %d: data %q with payload %v", c.Revision, c.Data, tc.payload)
					}
				}
			}
			next := write(t, st, 1)
			if b := r.nextBatch(t); len(b.Changes) != 1 || b.Revision != next || !b.Current {
				t.Errorf("after a commit: %+v, want the change at %d", b, next)
			}
		})
	}
}

// TestStartWithResync: a follower given no revision resyncs first and
// follows after what Resync returns, Apply called before it waits.
func TestStartWithResync(t *testing.T) {
	st := memstore.New()
	rev := write(t, st, 4)
	r := newRecorder(st)
	f := follow.Start(st, r, -1, follow.Options{})
	defer f.Stop()
	if got := <-r.resyncs; got != rev {
		t.Fatalf("resynced at %d, want %d", got, rev)
	}
	if b := r.nextBatch(t); len(b.Changes) != 0 || b.Revision != rev || !b.Current {
		t.Errorf("first batch %+v, want none at %d", b, rev)
	}
	next := write(t, st, 1)
	if b := r.nextBatch(t); len(b.Changes) != 1 || b.Changes[0].Revision != next {
		t.Errorf("batch %+v, want the change at %d", b, next)
	}
}

// TestCompactionResyncs: a follower behind a compaction is told so
// (Failed, no backoff) and resyncs at once; the compacted changes are
// never applied.
func TestCompactionResyncs(t *testing.T) {
	st := memstore.New()
	start := write(t, st, 1)
	gate := newGated(st)
	r := newRecorder(gate)
	timer := faketimer.New()
	f := follow.Start(gate, r, start, follow.Options{After: timer.After})
	defer f.Stop()
	<-gate.reading // the follower reads after start, held
	end := write(t, st, 5)
	if err := st.Compact(context.Background(), end-1); err != nil {
		t.Fatal(err)
	}
	close(gate.open)
	fl := r.nextFailure(t)
	var compacted *store.CompactedError
	if fl.Step != follow.StepRead || !errors.As(fl.Err, &compacted) || fl.Backoff != 0 || fl.Attempt != 0 {
		t.Fatalf("failure %+v, want a compacted read without backoff", fl)
	}
	if got := <-r.resyncs; got != end {
		t.Errorf("resynced at %d, want %d", got, end)
	}
	if b := r.nextBatch(t); len(b.Changes) != 0 || b.Revision != end {
		t.Errorf("after the resync: %+v, want no changes at %d", b, end)
	}
}

// gated holds the first read of the feed until open is closed; reading
// is closed when the read begins.
type gated struct {
	store.Store
	open, reading chan struct{}
	once          atomic.Bool
}

func newGated(s store.Store) *gated {
	return &gated{Store: s, open: make(chan struct{}), reading: make(chan struct{})}
}

func (g *gated) Changes(ctx context.Context, after int64, limit int, p store.Payload) ([]store.Change, error) {
	if g.once.CompareAndSwap(false, true) {
		close(g.reading)
		<-g.open
	}
	return g.Store.Changes(ctx, after, limit, p)
}

// TestReadFailuresBackOff: failed reads are retried after a backoff that
// doubles, each failure reported with its attempt; once the feed answers
// the changes are applied, and the next failure starts over.
func TestReadFailuresBackOff(t *testing.T) {
	st := memstore.New()
	fl := &flaky{Store: st}
	start := write(t, st, 1)
	fl.down.Store(true)
	r := newRecorder(fl)
	timer := faketimer.New()
	f := follow.Start(fl, r, start, follow.Options{After: timer.After})
	defer f.Stop()
	for i, want := range []time.Duration{follow.MinBackoff, 2 * follow.MinBackoff, 4 * follow.MinBackoff} {
		if d := timer.Next(t, bound); d != want {
			t.Errorf("backoff %d: %v, want %v", i, d, want)
		}
		if got := r.nextFailure(t); got.Step != follow.StepRead || got.Attempt != i+1 || got.Backoff != want || !errors.Is(got.Err, errDown) {
			t.Errorf("failure %d: %+v", i, got)
		}
		timer.Fire()
	}
	if d := timer.Next(t, bound); d != 8*follow.MinBackoff {
		t.Errorf("backoff 3: %v", d)
	}
	r.nextFailure(t)
	end := write(t, st, 2)
	fl.down.Store(false)
	timer.Fire()
	if got := r.batchUntil(t, end); len(got) != 1 || len(got[0].Changes) != 2 {
		t.Errorf("after the feed came back: %v, want the 2 changes", revisions(got))
	}
	fl.down.Store(true)
	write(t, st, 1)
	if d := timer.Next(t, bound); d != follow.MinBackoff {
		t.Errorf("the first backoff after a success: %v, want %v", d, follow.MinBackoff)
	}
}

// TestApplyFailuresRetry: an Apply that fails is called again, after a
// backoff, with the changes read since (none here) and not the same ones
// again, until it succeeds.
func TestApplyFailuresRetry(t *testing.T) {
	st := memstore.New()
	start := write(t, st, 1)
	r := newRecorder(st)
	r.failApply.Store(2)
	timer := faketimer.New()
	end := write(t, st, 3)
	f := follow.Start(st, r, start, follow.Options{After: timer.After})
	defer f.Stop()
	if b := r.nextBatch(t); len(b.Changes) != 3 || b.Revision != end {
		t.Fatalf("first batch %v", revisions([]follow.Batch{b}))
	}
	for i, want := range []time.Duration{follow.MinBackoff, 2 * follow.MinBackoff} {
		if d := timer.Next(t, bound); d != want {
			t.Errorf("backoff %d: %v, want %v", i, d, want)
		}
		if got := r.nextFailure(t); got.Step != follow.StepApply || got.Attempt != i+1 {
			t.Errorf("failure %d: %+v", i, got)
		}
		timer.Fire()
		if b := r.nextBatch(t); len(b.Changes) != 0 || b.Revision != end {
			t.Errorf("retry %d: %+v, want no changes at %d", i, b, end)
		}
	}
	next := write(t, st, 1)
	if b := r.nextBatch(t); len(b.Changes) != 1 || b.Revision != next {
		t.Errorf("after the retries: %+v, want the change at %d", b, next)
	}
}

// TestResyncFailuresBackOff: a failing Resync is retried with the same
// backoff.
func TestResyncFailuresBackOff(t *testing.T) {
	st := memstore.New()
	r := newRecorder(st)
	r.failResync.Store(true)
	timer := faketimer.New()
	f := follow.Start(st, r, -1, follow.Options{After: timer.After})
	defer f.Stop()
	for i, want := range []time.Duration{follow.MinBackoff, 2 * follow.MinBackoff} {
		if d := timer.Next(t, bound); d != want {
			t.Errorf("backoff %d: %v, want %v", i, d, want)
		}
		if got := r.nextFailure(t); got.Step != follow.StepResync || got.Attempt != i+1 {
			t.Errorf("failure %d: %+v", i, got)
		}
		if i == 1 {
			r.failResync.Store(false)
		}
		timer.Fire()
	}
	rev := write(t, st, 0)
	if got := <-r.resyncs; got != rev {
		t.Errorf("resynced at %d, want %d", got, rev)
	}
}

// TestGather: after a commit wakes it, the follower waits Gather before
// it reads, and reads what gathered as one batch.
func TestGather(t *testing.T) {
	st := memstore.New()
	start := write(t, st, 1)
	r := newRecorder(st)
	timer := faketimer.New()
	f := follow.Start(st, r, start, follow.Options{Gather: time.Millisecond, After: timer.After})
	defer f.Stop()
	r.nextBatch(t) // current: the follower waits
	write(t, st, 1)
	if d := timer.Next(t, bound); d != time.Millisecond {
		t.Fatalf("gathered %v, want 1ms", d)
	}
	end := write(t, st, 2)
	timer.Fire()
	if b := r.nextBatch(t); len(b.Changes) != 3 || b.Revision != end {
		t.Errorf("batch %v, want the 3 gathered changes", revisions([]follow.Batch{b}))
	}
}

// TestStop: Stop ends a waiting follower and closes Done; calling it again
// is harmless.
func TestStop(t *testing.T) {
	st := memstore.New()
	r := newRecorder(st)
	f := follow.Start(st, r, 0, follow.Options{})
	r.nextBatch(t)
	f.Stop()
	select {
	case <-f.Done():
	default:
		t.Fatal("Done is open after Stop")
	}
	f.Stop()
	write(t, st, 1)
	select {
	case b := <-r.batches:
		t.Errorf("a stopped follower applied %+v", b)
	default:
	}
}

// TestDrain: Drain applies the changes up to its revision, not those
// after, and returns; one whose context ends stops the follower at once.
func TestDrain(t *testing.T) {
	t.Run("applies up to through", func(t *testing.T) {
		st := memstore.New()
		deaf := &deaf{Store: st}
		r := newRecorder(deaf)
		f := follow.Start(deaf, r, 0, follow.Options{Page: 2})
		if b := r.nextBatch(t); len(b.Changes) != 0 || !b.Current {
			t.Fatalf("first batch %+v, want none", b)
		}
		// The follower waits, deaf to commits, until Drain ends the wait.
		through := write(t, st, 5)
		write(t, st, 2) // after the drain's revision
		if err := f.Drain(context.Background(), through); err != nil {
			t.Fatal(err)
		}
		close(r.batches)
		var got []follow.Batch
		for b := range r.batches {
			got = append(got, b)
		}
		if want := [][]int64{{1, 2}, {3, 4}, {5}}; !slices.EqualFunc(revisions(got), want, slices.Equal) {
			t.Errorf("drained %v, want %v", revisions(got), want)
		}
	})
	t.Run("context ends", func(t *testing.T) {
		st := memstore.New()
		r := &blocking{recorder: newRecorder(st), entered: make(chan struct{})}
		f := follow.Start(st, r, 0, follow.Options{})
		write(t, st, 1)
		<-r.entered // Apply holds until its context ends
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := f.Drain(ctx, 1); !errors.Is(err, context.Canceled) {
			t.Errorf("Drain: %v, want context.Canceled", err)
		}
		select {
		case <-f.Done():
		default:
			t.Error("the follower runs on after Drain gave up")
		}
	})
	t.Run("unknown revision", func(t *testing.T) {
		st := memstore.New()
		r := newRecorder(st)
		r.failResync.Store(true)
		never := func(time.Duration) <-chan time.Time { return nil } // a backoff only Drain ends
		f := follow.Start(st, r, -1, follow.Options{After: never})
		r.nextFailure(t)
		if err := f.Drain(context.Background(), 10); err != nil {
			t.Errorf("Drain: %v", err)
		}
	})
}

// deaf is a feed whose Wait wakes only when its context ends.
type deaf struct{ store.Store }

func (d *deaf) Wait(ctx context.Context, _ int64) error {
	<-ctx.Done()
	return ctx.Err()
}

// blocking is a recorder whose Apply of a change waits for its context.
type blocking struct {
	*recorder
	entered chan struct{}
	once    atomic.Bool
}

func (b *blocking) Apply(ctx context.Context, batch follow.Batch) error {
	if len(batch.Changes) > 0 && b.once.CompareAndSwap(false, true) {
		close(b.entered)
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

// TestBackoffDelay: the backoff doubles from Min up to Max; zero fields
// mean the defaults.
func TestBackoffDelay(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name string
		b    follow.Backoff
		want []time.Duration
	}{
		{"defaults", follow.Backoff{}, []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, 1600 * ms, 3200 * ms, 6400 * ms, follow.MaxBackoff, follow.MaxBackoff, follow.MaxBackoff}},
		{"custom", follow.Backoff{Min: time.Second, Max: 3 * time.Second}, []time.Duration{time.Second, 2 * time.Second, 3 * time.Second, 3 * time.Second}},
		{"min above max", follow.Backoff{Min: time.Minute, Max: time.Second}, []time.Duration{time.Second, time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []time.Duration
			for a := 1; a <= len(tc.want); a++ {
				got = append(got, tc.b.Delay(a))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("delays %v, want %v", got, tc.want)
			}
		})
	}
}
