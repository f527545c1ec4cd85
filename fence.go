package edgeplane

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/edgeplane/edgeplane/store"
)

// Reads that see every acknowledged write, on every replica. A read the
// record cache or the authentication cache would answer first makes sure
// the caches have applied every change committed before the read began:
// it reads the store's revision, then waits until the cache's follower
// of the change feed has applied it (Kubernetes' consistent reads from
// cache do the same). The revision reads are coalesced: one round trip
// to the store serves every read that arrived before it was sent, so
// concurrent reads cost one query per round trip, not one each. A read
// the caches cannot answer goes to the store, which is current already.
//
// A store that no other process can write ([store.Exclusive], memstore)
// needs no fence: this Service's own writes invalidate its caches before
// they return.

// revisionBatcher reads a store's revision for many readers at once:
// a reader joins the batch that has not been sent yet, or starts one.
type revisionBatcher struct {
	store store.Store

	mu      sync.Mutex
	next    *revisionCall // the batch that has not been sent yet; nil: none
	running bool          // a goroutine sends batches
}

// revisionCall is one revision read, shared by the readers that joined
// it before it was sent.
type revisionCall struct {
	done    chan struct{} // closed once rev and err are set
	readers int           // joined it (under the batcher's mu)
	rev     int64
	err     error
}

// revision returns a revision of the store read after the call began.
func (b *revisionBatcher) revision(ctx context.Context) (int64, error) {
	b.mu.Lock()
	c := b.next
	if c == nil {
		c = &revisionCall{done: make(chan struct{})}
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
func (b *revisionBatcher) run() {
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

// fencedKey marks a context of [Service.Fence]: its value says whether
// the fence passed (reads may use the caches) or failed (reads go to
// the store).
type fencedKey struct{}

// errFenceFailed is the fence's error under a context whose fence
// failed: its reads go to the store.
var errFenceFailed = errors.New("the fence of this context failed: reads go to the store")

// Fence makes sure the Service's caches reflect every change committed
// to the store before the call (another replica's too), and returns ctx
// marked so that the reads made under it need no fence of their own: a
// transport calls it once per request, before the request's reads (its
// authentication among them), which then cost one coalesced revision
// query together instead of one each. Without it every cached read
// fences itself. When the fence fails (the store cannot say its
// revision, or the caches lag more than maxFenceWait), the reads under
// the returned context go to the store. When the Service needs no fence
// ([store.Exclusive]) it returns ctx as it is.
func (s *Service) Fence(ctx context.Context) context.Context {
	if s.revisions == nil || ctx.Value(fencedKey{}) != nil {
		return ctx
	}
	return context.WithValue(ctx, fencedKey{}, s.fence(ctx) == nil)
}

// fence returns once the Service's caches reflect every change committed
// to the store before the call, or ctx ends, or the store cannot say its
// revision (then the read is answered from the store: the caller sees
// the error as a miss; see records.DB.Fence). Under a context of
// [Service.Fence] it returns at once.
func (s *Service) fence(ctx context.Context) error {
	if s.revisions == nil {
		return nil
	}
	if passed, ok := ctx.Value(fencedKey{}).(bool); ok {
		if passed {
			return nil
		}
		return errFenceFailed
	}
	rev, err := s.revisions.revision(ctx)
	if err != nil {
		return err
	}
	if s.cacheFollow.applied.Load() >= rev {
		return nil // the common case: no wait, no timer
	}
	// A follower that lags (the feed failing and retrying) does not hold
	// reads: past maxFenceWait they go to the store, which is current.
	wctx, cancel := context.WithTimeout(ctx, maxFenceWait)
	defer cancel()
	return s.cacheFollow.waitApplied(wctx, rev)
}

// maxFenceWait bounds a fence's wait for the cache's follower; a read
// whose fence gives up reads the store instead of the caches.
const maxFenceWait = time.Second
