package edgeplane

import (
	"context"
	"encoding/json"
	"time"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/internal/eventfeed"
	"github.com/edgeplane/edgeplane/internal/ids"
	"github.com/edgeplane/edgeplane/store"
)

// Events are read from the store's change feed by package
// internal/eventfeed, which the Service starts when a sink is
// configured (startEvents): it asks the Service which event a committed
// change reports (eventOf) and what the event shows (changeObject),
// through deliveryRecords (eventdelivery.go). Unlabelled writes report
// nothing, except deletes: a record removed with its parent (a route
// with its edge, tunnels with their credential, sources with their
// subscription) is reported as "<kind>_deleted.v0" like a deleted one.

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
		s.queue = events.NewQueue(opts, eventfeed.Expand(s.store, s.ids, KindEventSource, indexEventType, MaxPageSize), s.log)
		s.follow = eventfeed.Start(s.store, s.queue, s.log, deliveryRecords{s})
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
