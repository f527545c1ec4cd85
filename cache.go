package edgeplane

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
	"sync"
	"time"

	"github.com/edgeplane/edgeplane/internal/authcache"
	"github.com/edgeplane/edgeplane/internal/recordcache"
	"github.com/edgeplane/edgeplane/internal/revwait"
	"github.com/edgeplane/edgeplane/store"
	"github.com/edgeplane/edgeplane/store/follow"
)

// The record cache (package recordcache) is kept true to writes by
// other processes sharing the store by a goroutine that follows the
// store's change feed: it invalidates each record another process
// (another replica, edgeplane admin) wrote as soon as the feed shows it
// (PostgreSQL: at its NOTIFY; a SQLite file written by another process:
// within its 100 ms poll), and at most followGather (1 ms) later, which
// lets a burst of commits be read as one batch. It drops the cached
// authentications a change may end, too.

// DefaultCacheBytes is the default of [Options.CacheBytes].
const DefaultCacheBytes = recordcache.DefaultBytes

// cacheFollower reads the change feed and invalidates what it shows: it
// is the [follow.Handler] of its follower. It holds what it needs, never
// the Service: a Service dropped without Close is collected, and its
// cleanup (startCache) stops the follower.
type cacheFollower struct {
	store    store.Store
	cache    *recordcache.Cache // nil when off
	auth     *authcache.Cache   // nil when off
	access   *accessCache       // nil when off
	log      *slog.Logger
	follower *follow.Follower
	once     sync.Once
	done     chan struct{} // closed once stopped and the cache flushed
	applied  revwait.Mark  // every change up to it is applied
}

// waitApplied waits until every change up to rev is applied, or ctx ends,
// or the follower stops (the cache is bypassed from then on, so reads
// reflect every change).
func (f *cacheFollower) waitApplied(ctx context.Context, rev int64) error {
	if err := f.applied.Wait(ctx, rev, f.done); err != nil && !errors.Is(err, revwait.ErrStopped) {
		return err
	}
	return nil
}

// startCache starts the goroutine that keeps the record cache and the
// authentication cache true to writes made by other processes. It stops
// with [Service.Close], or when the Service is garbage collected without
// one (a test or a short-lived host that never closes it leaks nothing).
func (s *Service) startCache() {
	if s.cache == nil && s.auth == nil {
		return
	}
	f := &cacheFollower{store: s.store, cache: s.cache, auth: s.auth, access: s.access, log: s.log, done: make(chan struct{})}
	s.cacheFollow = f
	// From the revision the follower reads (Resync), without the changes'
	// documents: invalidation needs only which records changed.
	f.follower = follow.Start(s.store, f, -1, follow.Options{Payload: store.WithoutData, Gather: followGather})
	runtime.AddCleanup(s, func(f *cacheFollower) { go f.stop() }, f)
}

// stop stops the follower and waits for it; the cache is bypassed from
// then on. It may be called more than once.
func (f *cacheFollower) stop() {
	f.once.Do(func() {
		f.follower.Stop()
		if f.cache != nil {
			f.cache.Flush()
		}
		close(f.done)
	})
}

// stopCache stops the cache's follower and waits for it; the cache is
// bypassed from then on.
func (s *Service) stopCache() {
	if f := s.cacheFollow; f != nil {
		f.stop()
	}
}

// followGather is how long the cache's follower lets commits gather
// after it wakes for one, before it reads them: under a stream of writes
// it reads a batch per followGather instead of waking (a goroutine
// switch, a feed read, a new wait) for every commit. It delays the
// invalidation of another process's write by as much; a write through
// this Service invalidates its own records before it returns.
const followGather = time.Millisecond

// Resync implements [follow.Handler]: the cache was emptied when the feed
// failed (Failed), and is bypassed until the follower is current.
func (f *cacheFollower) Resync(ctx context.Context) (int64, error) { return f.store.Revision(ctx) }

// Apply implements [follow.Handler]: it invalidates what each change may
// have made stale, and once the follower is current uses the cache again.
func (f *cacheFollower) Apply(_ context.Context, b follow.Batch) error {
	c := f.cache
	for _, ch := range b.Changes {
		d, known := declOf(ch.Kind)
		if !known && isInternal(ch.Kind) {
			continue // nothing of it is cached, nor authenticates
		}
		if !known {
			// What a change of a kind this Service does not declare
			// means is unknown: it is logged, and drops every cached
			// authentication and IP restriction.
			f.log.Error("record cache: a change of an unknown kind in the feed", "kind", string(ch.Kind), "id", ch.ID, "revision", ch.Revision)
			f.auth.Clear()
			f.access.clear()
		}
		if accessKind(ch.Kind) {
			// A restriction, policy or rule created changes what the
			// account's restrictions decide as much as one changed.
			f.access.forget(ch.AccountID)
		}
		if ch.Op == store.OpCreate {
			// Nothing is cached of a record before it exists (IDs are
			// never reused): invalidating would only make concurrent
			// fills fail.
			continue
		}
		if c != nil {
			c.ApplyChange(ch)
		}
		if known {
			f.forgetAuth(ch, d.traitsOf())
		}
	}
	if b.Current {
		if c != nil {
			c.SetReady() // current: every change up to b.Revision is applied
		}
		f.applied.Advance(b.Revision)
	}
	return nil
}

// Failed implements [follow.Handler]. Behind what the feed holds
// (compacted) or the store unreachable: what other processes wrote
// meanwhile is unknown, so nothing cached can be trusted, and reads go to
// the store until the follower is current again.
func (f *cacheFollower) Failed(fl follow.Failure) {
	if fl.Step != follow.StepRead {
		return
	}
	if f.cache != nil {
		f.cache.Flush()
	}
	f.auth.Clear()
	f.access.clear()
	var compacted *store.CompactedError
	if !errors.As(fl.Err, &compacted) {
		f.log.Warn("record cache: cannot read the change feed; reads go to the store until it answers", "err", fl.Err)
	}
}

// forgetAuth drops the cached authentications a change may end, as its
// kind's traits t say: those of a changed or deleted API key, and all of
// them when a user, bot or account changes (rare: an admin flag or a
// deactivation).
func (f *cacheFollower) forgetAuth(ch store.Change, t traits) {
	switch t.auth {
	case authForgetRecord:
		f.auth.Forget(ch.ID)
	case authForgetAll:
		f.auth.Clear()
	}
}
