// Package eventfeed reports an edgeplane Service's changes as events:
// a goroutine follows the store's change feed ([Start]) and hands the
// event of each committed change to the delivery queue (package events'
// Queue), waiting while the queue is full. Events are read from the
// change feed, so a change is reported if and only if its write
// committed, in commit order, even across a crash between the write and
// the report. Each write that reports a change carries, as its store
// note, the event type and the time of the change; the root package says
// which event a change reports and what it shows of the record
// ([Records]). [Expand] makes the events of a change, one per
// subscription of the account with a source of its type.
//
// The root package wires it in its New when a sink is configured; it
// does not import the root.
package eventfeed

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/internal/ids"
	"github.com/edgeplane/edgeplane/resource"
	"github.com/edgeplane/edgeplane/store"
	"github.com/edgeplane/edgeplane/store/follow"
)

// Records is what the root says of a committed change: the event type
// and time it reports (ok false when it reports nothing), and the
// object the event shows, as JSON.
type Records interface {
	Event(c store.Change) (typ string, at time.Time, ok bool)
	Object(ctx context.Context, c store.Change) ([]byte, error)
}

// Follower reads the change feed and reports the changes.
type Follower struct {
	store   store.Store
	f       *follow.Follower
	once    sync.Once
	through int64 // the last revision to report once stopping; set in once
}

// feed is the follower's handler: it reports every change it is given.
type feed struct {
	store store.Store
	queue *events.Queue
	log   *slog.Logger
	recs  Records
}

// Resync implements [follow.Handler]: the changes the feed no longer holds
// are lost (Failed said so); reporting resumes at the current revision.
func (h feed) Resync(ctx context.Context) (int64, error) { return h.store.Revision(ctx) }

// Apply implements [follow.Handler].
func (h feed) Apply(ctx context.Context, b follow.Batch) error {
	for _, c := range b.Changes {
		h.report(ctx, c)
	}
	return nil
}

// Failed implements [follow.Handler].
func (h feed) Failed(f follow.Failure) {
	var compacted *store.CompactedError
	switch {
	case errors.As(f.Err, &compacted):
		h.log.Error("event delivery: the change feed moved past the changes not yet reported; they are lost",
			"after", compacted.After, "oldest", compacted.Oldest)
	case f.Step == follow.StepRead:
		h.log.Error("event delivery: cannot read the change feed; retrying", "err", f.Err)
	}
}

// Start starts reporting the changes of st committed after now into
// queue.
func Start(st store.Store, queue *events.Queue, log *slog.Logger, recs Records) *Follower {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	rev, err := st.Revision(ctx)
	cancel()
	if err != nil {
		log.Error("event delivery: cannot read the store's revision; changes before the store answers are not reported", "err", err)
		rev = -1 // the follower reads it (Resync)
	}
	h := feed{store: st, queue: queue, log: log, recs: recs}
	return &Follower{store: st, f: follow.Start(st, h, rev, follow.Options{Payload: store.WithData})}
}

// report hands the event of one committed change to the delivery queue,
// waiting while it is full, until ctx ends. A change the root cannot
// show is logged, never reported.
func (h feed) report(ctx context.Context, c store.Change) {
	typ, at, ok := h.recs.Event(c)
	if !ok {
		return
	}
	obj, err := h.recs.Object(ctx, c)
	if err != nil {
		h.log.Error("event delivery: cannot show a changed record; the change is not reported", "type", typ, "id", c.ID, "err", err)
		return
	}
	h.queue.Put(ctx, events.Change{AccountID: c.AccountID, Type: typ, CreatedAt: resource.Timestamp(at), Object: obj})
}

// Stop makes the follower report the changes committed up to now and
// return, and waits for it or for ctx (then it stops it).
func (f *Follower) Stop(ctx context.Context) error {
	f.once.Do(func() {
		rev, err := f.store.Revision(ctx)
		if err != nil {
			rev = 0 // report nothing more
		}
		f.through = rev
	})
	return f.f.Drain(ctx, f.through)
}

// Expand returns the queue's expansion of a change: it finds the
// subscriptions of c's account that have a source of c's type and makes
// one event for each. It runs on the delivery worker, never on a
// caller's goroutine, and reads only the sources of c's type, through
// the store's index of sources by type (index of kind sources), pages
// of pageSize.
func Expand(st store.Store, gen *ids.Generator, sources store.Kind, index string, pageSize int) func(context.Context, events.Change) ([]events.Event, error) {
	return func(ctx context.Context, c events.Change) ([]events.Event, error) {
		var out []events.Event
		q := store.Query{Kind: sources, AccountID: c.AccountID, Index: index, Value: c.Type, Limit: pageSize}
		for {
			recs, err := st.List(ctx, q)
			if err != nil {
				return nil, err
			}
			for _, rec := range recs {
				out = append(out, events.Event{ID: gen.New(events.EventPrefix), Type: c.Type, CreatedAt: c.CreatedAt,
					AccountID: c.AccountID, SubscriptionID: rec.ParentID, Object: c.Object})
			}
			if len(recs) < q.Limit {
				return out, nil
			}
			q.BeforeID = recs[len(recs)-1].ID
		}
	}
}
