package fence

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/edgeplane/edgeplane/internal/revwait"
	"github.com/edgeplane/edgeplane/store"
)

// maxWait bounds a fence's wait for the caches' follower; a read whose
// fence gives up reads the store instead of the caches.
const maxWait = time.Second

// Fence waits, for a read, until the caches of a Service reflect every
// change committed to the store before the read began. It is safe for
// concurrent use. A nil *Fence is the fence of a store that needs none:
// it passes at once.
type Fence struct {
	revisions batcher
	applied   *revwait.Mark   // the revision up to which the caches' follower applied the feed
	stopped   <-chan struct{} // closed once the follower stopped (the caches are bypassed)
}

// New returns the Fence of the caches whose follower of st's change feed
// advances applied as it applies changes, and closes stopped once it
// stops (the caches are bypassed from then on, so every read reflects
// every change).
func New(st store.Store, applied *revwait.Mark, stopped <-chan struct{}) *Fence {
	return &Fence{revisions: batcher{store: st}, applied: applied, stopped: stopped}
}

// contextKey marks a context of [Fence.Context]: its value says whether
// the fence passed (reads may use the caches) or failed (reads go to the
// store).
type contextKey struct{}

// errFailed is the fence's error under a context whose fence failed: its
// reads go to the store.
var errFailed = errors.New("the fence of this context failed: reads go to the store")

// Context fences once ([Fence.Wait]) and returns ctx marked so that the
// reads made under it need no fence of their own: under it, Wait returns
// at once, nil when this fence passed and an error when it failed (the
// store cannot say its revision, or the caches lag more than maxWait),
// so that the reads go to the store. A ctx marked already, or a nil
// Fence, gives ctx as it is.
func (f *Fence) Context(ctx context.Context) context.Context {
	if f == nil || ctx.Value(contextKey{}) != nil {
		return ctx
	}
	return context.WithValue(ctx, contextKey{}, f.Wait(ctx) == nil)
}

// Wait returns once the caches reflect every change committed to the
// store before the call, or ctx ends, or the store cannot say its
// revision, or the caches lag more than maxWait: then the read is
// answered from the store (the caller sees the error as a miss; see
// records.DB.Fence). Under a context of [Fence.Context] it returns at
// once.
func (f *Fence) Wait(ctx context.Context) error {
	if f == nil {
		return nil
	}
	if passed, ok := ctx.Value(contextKey{}).(bool); ok {
		if passed {
			return nil
		}
		return errFailed
	}
	rev, err := f.revisions.revision(ctx)
	if err != nil {
		return err
	}
	if f.applied.Load() >= rev {
		return nil // the common case: no wait, no timer
	}
	// A follower that lags (the feed failing and retrying) does not hold
	// reads: past maxWait they go to the store, which is current.
	wctx, cancel := context.WithTimeout(ctx, maxWait)
	defer cancel()
	if err := f.applied.Wait(wctx, rev, f.stopped); err != nil && !errors.Is(err, revwait.ErrStopped) {
		return err
	}
	return nil // applied, or the follower stopped: the caches are bypassed
}

// batcher reads a store's revision for many readers at once: a reader
// joins the batch that has not been sent yet, or starts one.
type batcher struct {
	store store.Store

	mu      sync.Mutex
	next    *call // the batch that has not been sent yet; nil: none
	running bool  // a goroutine sends batches
}

// call is one revision read, shared by the readers that joined it before
// it was sent.
type call struct {
	done    chan struct{} // closed once rev and err are set
	readers int           // joined it (under the batcher's mu)
	rev     int64
	err     error
}

// revision returns a revision of the store read after the call began.
func (b *batcher) revision(ctx context.Context) (int64, error) {
	b.mu.Lock()
	c := b.next
	if c == nil {
		c = &call{done: make(chan struct{})}
		b.next = c
		if !b.running {
			b.running = true
			go b.run()
		}
	}
	c.readers++
	b.mu.Unlock()
	select {
	case <-c.done:
		return c.rev, c.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// run sends the pending batch, one at a time, until none is pending.
// The read is not bound by any one reader's context: each reader stops
// waiting at its own.
func (b *batcher) run() {
	for {
		b.mu.Lock()
		c := b.next
		b.next = nil
		if c == nil {
			b.running = false
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		c.rev, c.err = b.store.Revision(context.Background())
		close(c.done)
	}
}
