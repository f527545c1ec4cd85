package edgeplane

import (
	"context"
	"sync"

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

// fencedKey marks a context whose reads are fenced already
// ([Service.Fence]).
type fencedKey struct{}

// Fence makes sure the Service's caches reflect every change committed
// to the store before the call (another replica's too), and returns ctx
// marked so that the reads made under it need no fence of their own: a
// transport calls it once per request, before the request's reads (its
// authentication among them), which then cost one coalesced revision
// query together instead of one each. Without it every cached read
// fences itself. When the store cannot say its revision, or the Service
// needs no fence ([store.Exclusive]), it returns ctx as it is.
func (s *Service) Fence(ctx context.Context) context.Context {
	if s.revisions == nil || ctx.Value(fencedKey{}) != nil {
		return ctx
	}
	if s.fence(ctx) != nil {
		return ctx // each read fences itself, or goes to the store
	}
	return context.WithValue(ctx, fencedKey{}, true)
}

// fence returns once the Service's caches reflect every change committed
// to the store before the call, or ctx ends, or the store cannot say its
// revision (then the read is answered from the store: the caller sees
// the error as a miss; see records.DB.Fence). Under a context of
// [Service.Fence] it returns at once.
func (s *Service) fence(ctx context.Context) error {
	if s.revisions == nil || ctx.Value(fencedKey{}) != nil {
		return nil
	}
	rev, err := s.revisions.revision(ctx)
	if err != nil {
		return err
	}
	return s.cacheFollow.waitApplied(ctx, rev)
}
