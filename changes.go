package edgeplane

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/internal/ids"
	"github.com/edgeplane/edgeplane/resource"
	"github.com/edgeplane/edgeplane/store"
	"github.com/edgeplane/edgeplane/store/follow"
)

// Events are read from the store's change feed, so a change is reported
// if and only if its write committed, in commit order, even across a
// crash between the write and the report. Each write that reports a change
// carries, as its store note, the event type and the time of the change
// ([records.DB.Note]); the follower goroutine reads the feed, makes the object
// each event shows from the change's data, and hands it to the delivery
// queue, waiting while the queue is full. Unlabelled writes report
// nothing, except deletes: a record removed with its parent (a route with
// its edge, tunnels with their credential, sources with their
// subscription) is reported as "<kind>_deleted.v0" like a deleted one.

// follower reads the change feed and reports the changes.
type follower struct {
	f       *follow.Follower
	once    sync.Once
	through int64 // the last revision to report once stopping; set in once
}

// eventFeed is the follower's handler: it reports every change it is
// given.
type eventFeed struct{ s *Service }

// Resync implements [follow.Handler]: the changes the feed no longer holds
// are lost (Failed said so); reporting resumes at the current revision.
func (h eventFeed) Resync(ctx context.Context) (int64, error) { return h.s.store.Revision(ctx) }

// Apply implements [follow.Handler].
func (h eventFeed) Apply(ctx context.Context, b follow.Batch) error {
	for _, c := range b.Changes {
		h.s.report(ctx, c)
	}
	return nil
}

// Failed implements [follow.Handler].
func (h eventFeed) Failed(f follow.Failure) {
	var compacted *store.CompactedError
	switch {
	case errors.As(f.Err, &compacted):
		h.s.log.Error("event delivery: the change feed moved past the changes not yet reported; they are lost",
			"after", compacted.After, "oldest", compacted.Oldest)
	case f.Step == follow.StepRead:
		h.s.log.Error("event delivery: cannot read the change feed; retrying", "err", f.Err)
	}
}

// startFollowing starts reporting the changes committed after now.
func (s *Service) startFollowing() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	rev, err := s.store.Revision(ctx)
	cancel()
	if err != nil {
		s.log.Error("event delivery: cannot read the store's revision; changes before the store answers are not reported", "err", err)
		rev = -1 // the follower reads it (Resync)
	}
	s.follow = &follower{f: follow.Start(s.store, eventFeed{s}, rev, follow.Options{Payload: store.WithData})}
}

// report hands the event of one committed change to the delivery queue,
// waiting while it is full, until ctx ends. A change of a kind the
// Service does not declare is logged, never reported.
func (s *Service) report(ctx context.Context, c store.Change) {
	typ, at, d, ok := s.eventOf(c)
	if !ok {
		return
	}
	obj, err := s.changeObject(ctx, c, d)
	if err != nil {
		s.log.Error("event delivery: cannot show a changed record; the change is not reported", "type", typ, "id", c.ID, "err", err)
		return
	}
	s.queue.Put(ctx, events.Change{AccountID: c.AccountID, Type: typ, CreatedAt: resource.Timestamp(at), Object: obj})
}

// eventOf returns the event type and time a committed change reports and
// the declaration of its kind; false for a change that reports nothing.
// A change of a kind the Service does not declare is logged.
func (s *Service) eventOf(c store.Change) (typ string, at time.Time, d declared, ok bool) {
	d, known := declOf(c.Kind)
	if !known && isInternal(c.Kind) {
		return "", time.Time{}, nil, false // the Service's own record: no event
	}
	if !known {
		s.log.Error("event delivery: a change of an unknown kind in the feed; it is not reported", "kind", string(c.Kind), "id", c.ID, "revision", c.Revision)
		return "", time.Time{}, nil, false
	}
	k := d.info()
	typ, at = c.Note.Event, c.Note.At
	if typ == "" {
		if c.Op != store.OpDelete || k.Event == "" {
			return "", time.Time{}, nil, false // a write that reports nothing
		}
		typ, at = k.EventType(events.Deleted), s.now()
	}
	if !s.eventTypes.Known(typ) {
		return "", time.Time{}, nil, false
	}
	return typ, at, d, true
}

// changeObject returns what an event shows of a change, as JSON: the
// record as the API shows it after a create or update; for a delete, its
// Ref, or the record as shown for a kind whose records have no ID of
// their own (an event source: its type and URI).
func (s *Service) changeObject(ctx context.Context, c store.Change, d declared) ([]byte, error) {
	rec := store.Record{Kind: c.Kind, AccountID: c.AccountID, ID: c.ID, ParentID: c.ParentID, Data: c.Data, Version: c.Revision}
	var obj any
	var err error
	if c.Op == store.OpDelete && !d.shownWhenDeleted() {
		obj = s.ref(d.info().Path(c.ParentID), c.ID)
	} else {
		obj, err = d.showRecord(ctx, s, rec)
	}
	if err != nil {
		return nil, err
	}
	return json.Marshal(obj)
}

// stopFollowing makes the follower report the changes committed up to
// now and return, and waits for it or for ctx (then it stops it).
func (s *Service) stopFollowing(ctx context.Context) error {
	f := s.follow
	f.once.Do(func() {
		rev, err := s.store.Revision(ctx)
		if err != nil {
			rev = 0 // report nothing more
		}
		f.through = rev
	})
	return f.f.Drain(ctx, f.through)
}

// publish is [Host.Publish].
func (s *Service) publish(ctx context.Context, accountID, typ string, obj any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if !ids.Valid(accountID, AccountPrefix) {
		return apierr.Invalidf("account_id", "must be an account ID (%s followed by %d base62 characters)", AccountPrefix, ids.Len)
	}
	if err := s.eventTypes.Check(typ); err != nil {
		return err
	}
	if s.queue == nil {
		return nil
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return apierr.Invalidf("object", "cannot be encoded as JSON")
	}
	s.queue.Enqueue(events.Change{AccountID: accountID, Type: typ, CreatedAt: s.timestamp(), Object: data})
	return nil
}

// startEvents sets up, when a sink is configured, the delivery queue and
// the goroutine that follows the store's change feed into it.
func (s *Service) startEvents(opts events.Options) {
	if opts.Sink != nil {
		s.queue = events.NewQueue(opts, s.expandChange, s.log)
		s.startFollowing()
	}
}

// EventStats returns the counters of event delivery: changes accepted and
// dropped, events delivered and failed. All zero without a sink.
func (s *Service) EventStats() events.Stats {
	if s.queue == nil {
		return events.Stats{}
	}
	return s.queue.Stats()
}

// EventTypes returns the registry of event types that sources may name.
func (s *Service) EventTypes() *events.Registry { return s.eventTypes }

// expandChange finds the subscriptions of c's account that have a source
// of c's type and makes one event for each. It runs on the delivery
// worker, never on a caller's goroutine, and reads only the sources of
// c's type, through the store's index of sources by type.
func (s *Service) expandChange(ctx context.Context, c events.Change) ([]events.Event, error) {
	var out []events.Event
	q := store.Query{Kind: KindEventSource, AccountID: c.AccountID, Index: indexEventType, Value: c.Type, Limit: MaxPageSize}
	for {
		recs, err := s.store.List(ctx, q)
		if err != nil {
			return nil, err
		}
		for _, rec := range recs {
			out = append(out, events.Event{ID: s.ids.New(events.EventPrefix), Type: c.Type, CreatedAt: c.CreatedAt,
				AccountID: c.AccountID, SubscriptionID: rec.ParentID, Object: c.Object})
		}
		if len(recs) < q.Limit {
			return out, nil
		}
		q.BeforeID = recs[len(recs)-1].ID
	}
}
