package certmanager

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/edgeplane/edgeplane/kinds"
	"github.com/edgeplane/edgeplane/store"
	"github.com/edgeplane/edgeplane/store/follow"
)

// watch follows the store's change feed while [Manager.Run] runs, and
// wakes it when a reserved domain changes: a policy set or changed, a
// domain created with one, a report of another replica. It is the
// [follow.Handler] of its follower.
type watch struct {
	feed store.Feed
	m    *Manager
	wake chan struct{} // one pending wake at most: a burst of changes is one pass
	rev  atomic.Int64  // the revision of the last change that woke it
	f    *follow.Follower
}

// watch starts following the feed after its current revision (the pass
// Run makes first reads what is older); when the revision cannot be
// read, after the one the follower's first Resync reads.
func (m *Manager) watch(ctx context.Context) *watch {
	w := &watch{feed: m.feed, m: m, wake: make(chan struct{}, 1)}
	from, err := m.feed.Revision(ctx)
	if err != nil {
		from = -1
	}
	w.f = follow.Start(m.feed, w, from, follow.Options{Payload: store.WithoutData})
	return w
}

// stop stops the follower.
func (w *watch) stop() { w.f.Stop() }

// woken returns the channel that receives a wake; nil (never) for a nil
// watch.
func (w *watch) woken() <-chan struct{} {
	if w == nil {
		return nil
	}
	return w.wake
}

// revision returns the revision of the last change that woke the
// Manager.
func (w *watch) revision() int64 { return w.rev.Load() }

// signal wakes the Manager for the change at revision rev.
func (w *watch) signal(rev int64) {
	if rev > w.rev.Load() {
		w.rev.Store(rev)
	}
	select {
	case w.wake <- struct{}{}:
	default: // a wake is pending: its pass reads this change too
	}
}

// Resync implements [follow.Handler]: after the feed was compacted past
// the follower, what changed meanwhile is unknown, so it wakes the
// Manager.
func (w *watch) Resync(ctx context.Context) (int64, error) {
	rev, err := w.feed.Revision(ctx)
	if err == nil {
		w.signal(rev)
	}
	return rev, err
}

// Apply implements [follow.Handler]: a change of a reserved domain wakes
// the Manager.
func (w *watch) Apply(_ context.Context, b follow.Batch) error {
	for i := len(b.Changes) - 1; i >= 0; i-- {
		if b.Changes[i].Kind == kinds.ReservedDomain {
			w.signal(b.Changes[i].Revision)
			break
		}
	}
	return nil
}

// Failed implements [follow.Handler]: a feed that cannot be read is
// logged once per run of failures; meanwhile the sweep orders.
func (w *watch) Failed(f follow.Failure) {
	var compacted *store.CompactedError
	if f.Attempt == 1 && !errors.As(f.Err, &compacted) {
		w.m.log.Warn("certificate manager: cannot read the store's change feed; until it answers, certificates are ordered at each sweep (-acme-interval)",
			"err", f.Err, "interval", w.m.interval)
	}
}
