// Package cachesync keeps an edgeplane Service's caches true to the
// writes of other processes that share its store (another replica,
// edgeplane admin): a goroutine follows the store's change feed
// ([Start]) and invalidates each record another process wrote as soon
// as the feed shows it (PostgreSQL: at its NOTIFY; a SQLite file written
// by another process: within its 100 ms poll), and at most [Gather]
// (1 ms) later, which lets a burst of commits be read as one batch. It
// invalidates the record cache (package internal/recordcache), drops
// the cached authentications a change may end (package
// internal/authcache) and the compiled IP restrictions of an account
// whose restrictions, IP policies or rules changed (package
// internal/dataplane's access cache), and marks the revision every
// change up to which is applied, which the read fence (package
// internal/fence) and the root's WaitRevision wait for.
//
// The root package wires it in its New, with what each of its kinds
// means to the caches ([KindOf]); it does not import the root.
package cachesync

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/edgeplane/edgeplane/internal/authcache"
	"github.com/edgeplane/edgeplane/internal/dataplane"
	"github.com/edgeplane/edgeplane/internal/recordcache"
	"github.com/edgeplane/edgeplane/internal/revwait"
	"github.com/edgeplane/edgeplane/store"
	"github.com/edgeplane/edgeplane/store/follow"
)

// AuthEffect is what a change of a kind does to cached authentications.
type AuthEffect uint8

const (
	// AuthUnaffected: authentications do not depend on the kind.
	AuthUnaffected AuthEffect = iota
	// AuthForgetRecord: the changed record's (an API key's) are dropped.
	AuthForgetRecord
	// AuthForgetAll: all are dropped (a user, bot or account may change
	// any key's principal).
	AuthForgetAll
)

// KindOf says what a change of kind k means to the caches: known for a
// kind the Service declares, internal for one it stores for itself
// (nothing of it is cached, nor authenticates), and what a change of it
// does to cached authentications.
type KindOf func(k store.Kind) (known, internal bool, auth AuthEffect)

// Config is what a Follower keeps true: the store whose change feed it
// follows and the caches (each nil when off).
type Config struct {
	Store  store.Store
	Cache  *recordcache.Cache
	Auth   *authcache.Cache
	Access *dataplane.AccessCache
	Log    *slog.Logger
	KindOf KindOf
}

// Start starts the goroutine that keeps the caches of c true to writes
// made by other processes, from the revision it reads first, without
// the changes' documents: invalidation needs only which records
// changed. Stop it with [Follower.Stop].
func Start(c Config) *Follower {
	f := &Follower{store: c.Store, cache: c.Cache, auth: c.Auth, access: c.Access, log: c.Log, kindOf: c.KindOf, done: make(chan struct{})}
	f.follower = follow.Start(c.Store, f, -1, follow.Options{Payload: store.WithoutData, Gather: Gather})
	return f
}

// Applied is the mark of the revision every change up to which is
// applied.
func (f *Follower) Applied() *revwait.Mark { return &f.applied }

// Done is closed once the follower has stopped (and the cache is
// bypassed).
func (f *Follower) Done() <-chan struct{} { return f.done }

// Follower reads the change feed and invalidates what it shows: it is
// the [follow.Handler] of its follower. It holds what it needs, never
// the Service: a Service dropped without Close is collected, and its
// cleanup stops the follower.
type Follower struct {
	store    store.Store
	cache    *recordcache.Cache     // nil when off
	auth     *authcache.Cache       // nil when off
	access   *dataplane.AccessCache // nil when off
	log      *slog.Logger
	kindOf   KindOf
	follower *follow.Follower
	once     sync.Once
	done     chan struct{} // closed once stopped and the cache flushed
	applied  revwait.Mark  // every change up to it is applied
}

// WaitApplied waits until every change up to rev is applied, or ctx ends,
// or the follower stops (the cache is bypassed from then on, so reads
// reflect every change).
func (f *Follower) WaitApplied(ctx context.Context, rev int64) error {
	if err := f.applied.Wait(ctx, rev, f.done); err != nil && !errors.Is(err, revwait.ErrStopped) {
		return err
	}
	return nil
}

// Stop stops the follower and waits for it; the cache is bypassed from
// then on. It may be called more than once.
func (f *Follower) Stop() {
	f.once.Do(func() {
		f.follower.Stop()
		if f.cache != nil {
			f.cache.Flush()
		}
		close(f.done)
	})
}

// Gather is how long the cache's follower lets commits gather
// after it wakes for one, before it reads them: under a stream of writes
// it reads a batch per followGather instead of waking (a goroutine
// switch, a feed read, a new wait) for every commit. It delays the
// invalidation of another process's write by as much; a write through
// this Service invalidates its own records before it returns.
const Gather = time.Millisecond

// Resync implements [follow.Handler]: the cache was emptied when the feed
// failed (Failed), and is bypassed until the follower is current.
func (f *Follower) Resync(ctx context.Context) (int64, error) { return f.store.Revision(ctx) }

// Apply implements [follow.Handler]: it invalidates what each change may
// have made stale, and once the follower is current uses the cache again.
func (f *Follower) Apply(_ context.Context, b follow.Batch) error {
	c := f.cache
	for _, ch := range b.Changes {
		known, internal, auth := f.kindOf(ch.Kind)
		if !known && internal {
			continue // nothing of it is cached, nor authenticates
		}
		if !known {
			// What a change of a kind this Service does not declare
			// means is unknown: it is logged, and drops every cached
			// authentication and IP restriction.
			f.log.Error("record cache: a change of an unknown kind in the feed", "kind", string(ch.Kind), "id", ch.ID, "revision", ch.Revision)
			f.auth.Clear()
			f.access.Clear()
		}
		if dataplane.AccessKind(ch.Kind) {
			// A restriction, policy or rule created changes what the
			// account's restrictions decide as much as one changed.
			f.access.Forget(ch.AccountID)
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
			f.forgetAuth(ch, auth)
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
func (f *Follower) Failed(fl follow.Failure) {
	if fl.Step != follow.StepRead {
		return
	}
	if f.cache != nil {
		f.cache.Flush()
	}
	f.auth.Clear()
	f.access.Clear()
	var compacted *store.CompactedError
	if !errors.As(fl.Err, &compacted) {
		f.log.Warn("record cache: cannot read the change feed; reads go to the store until it answers", "err", fl.Err)
	}
}

// forgetAuth drops the cached authentications a change may end, as its
// kind's effect e says: those of a changed or deleted API key, and all of
// them when a user, bot or account changes (rare: an admin flag or a
// deactivation).
func (f *Follower) forgetAuth(ch store.Change, e AuthEffect) {
	switch e {
	case AuthForgetRecord:
		f.auth.Forget(ch.ID)
	case AuthForgetAll:
		f.auth.Clear()
	}
}
