// Package delivery keeps, for the edgeplane Service, the state of event
// delivery to each event destination, and makes from it and the store's
// change feed the [webhook.Source] that package webhook's Run delivers
// from (the Service's Host.EventDelivery).
//
// A destination's delivery state is a record of the internal kind
// [kinds.Delivery], a child of the destination under its account, with
// the ID "delivery_" followed by the destination's ID; its document is
// the [webhook.State] as JSON. Its writes report no events.
//
// The Service's kinds (event destinations, subscriptions and sources,
// and how a change is shown in an event) are the root package's: a
// [States] reads them through the [Records] the root gives [New]. It is
// internal to the module and imports leaves (apierr, events, kinds,
// resource, store, webhook) and internal/ids and internal/records;
// never the root package.
package delivery

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/internal/ids"
	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/kinds"
	"github.com/edgeplane/edgeplane/resource"
	"github.com/edgeplane/edgeplane/store"
	"github.com/edgeplane/edgeplane/webhook"
)

// prefix starts the ID of a delivery state; the destination's ID
// follows.
const prefix = "delivery_"

// Kind is the identity of delivery states for the store's errors
// ([records.DB.StoreErr]); they are not an API kind.
var Kind = &records.Kind{StoreKind: kinds.Delivery, Prefix: prefix, Noun: "event delivery state"}

// id is the record ID of a destination's delivery state.
func id(destinationID string) string { return prefix + destinationID }

// Records is what delivery reads through the Service's kinds, which
// this package does not know; the root package implements it.
type Records interface {
	// Destination returns where the event destination of rec (a record
	// of [kinds.EventDestination]) sends to, with its key opened. When
	// the record gives no destination, why says what is wrong (it is
	// logged once, with err when err is not nil) and the destination
	// gets no events.
	Destination(rec store.Record) (d webhook.Destination, why string, err error)
	// Event returns the event type and time of a committed change;
	// false for a change that reports nothing.
	Event(c store.Change) (typ string, at time.Time, ok bool)
	// Object returns what the event of a change Event reports shows,
	// as JSON.
	Object(ctx context.Context, c store.Change) ([]byte, error)
	// SourceType returns the event type of an event source's record (of
	// [kinds.EventSource]).
	SourceType(rec store.Record) (string, error)
}

// States keeps the delivery states of every destination in a store. It
// holds no state of its own, so it is safe for concurrent use.
type States struct {
	store store.Store
	log   *slog.Logger
	recs  Records
}

// New returns the delivery states kept in st (the Service's store),
// reading the Service's kinds through recs and logging to log.
func New(st store.Store, log *slog.Logger, recs Records) *States {
	return &States{store: st, log: log, recs: recs}
}

// Read returns the delivery state of a destination; ok is false, and
// the state zero, when it has none.
func (s *States) Read(ctx context.Context, accountID, destinationID string) (st webhook.State, ok bool, err error) {
	rec, err := s.store.Get(ctx, kinds.Delivery, accountID, id(destinationID))
	if err != nil {
		if apierr.CodeOf(err) == apierr.NotFound {
			return webhook.State{}, false, nil
		}
		return webhook.State{}, false, err
	}
	if err := json.Unmarshal(rec.Data, &st); err != nil {
		return webhook.State{}, false, err
	}
	return st, true, nil
}

// Create stores st as the first delivery state of a destination, and
// returns false, with no error, when the destination has one already
// (that one stands). The store's errors are returned as they are.
func (s *States) Create(ctx context.Context, accountID, destinationID string, st webhook.State) (bool, error) {
	data, err := json.Marshal(st)
	if err != nil {
		return false, err
	}
	err = s.store.Create(ctx, store.Record{Kind: kinds.Delivery, AccountID: accountID, ID: id(destinationID), ParentID: destinationID, Data: data})
	var dup *store.DuplicateError
	if errors.As(err, &dup) && dup.Key == id(destinationID) {
		return false, nil
	}
	return err == nil, err
}

// Save replaces the delivery state of a destination with st. The
// store's errors are returned as they are.
func (s *States) Save(ctx context.Context, accountID, destinationID string, st webhook.State) error {
	data, err := json.Marshal(st)
	if err != nil {
		return err
	}
	_, err = s.store.Update(ctx, kinds.Delivery, accountID, id(destinationID), func(r *store.Record) error {
		r.Data = data
		return nil
	})
	return err
}

// Source returns what package webhook delivers from: every account's
// event destinations with their opened keys, the state of delivery to
// each, and each destination's events read from the change feed after
// a revision. A destination whose record gives no destination is logged
// once per Source.
func (s *States) Source() webhook.Source { return source{s: s, warned: new(sync.Map)} }

// source is [States.Source].
type source struct {
	s *States
	// warned holds the destinations whose unreadable secret or document
	// was logged: once each, not at every rescan.
	warned *sync.Map
}

// warn logs msg about destination id once per source.
func (src source) warn(id, msg string, args ...any) {
	if _, done := src.warned.LoadOrStore(id, true); !done {
		src.s.log.Error(msg, append([]any{"id", id}, args...)...)
	}
}

// Destinations implements [webhook.Source]: every destination whose key
// opens (one that does not is logged and left out).
func (src source) Destinations(ctx context.Context) ([]webhook.Destination, error) {
	s := src.s
	var out []webhook.Destination
	q := store.Query{Kind: kinds.EventDestination, Limit: records.MaxPageSize}
	for {
		recs, err := s.store.List(ctx, q)
		if err != nil {
			return nil, err
		}
		for _, rec := range recs {
			d, why, err := s.recs.Destination(rec)
			switch {
			case why != "" && err != nil:
				src.warn(rec.ID, why, "err", err)
			case why != "":
				src.warn(rec.ID, why)
			default:
				out = append(out, d)
			}
		}
		if len(recs) < q.Limit {
			return out, nil
		}
		q.BeforeID = recs[len(recs)-1].ID
	}
}

// LoadState implements [webhook.Source]. A destination without a state
// (written by an older version, or by a create not yet done) starts at
// the current revision; if the create writes its state first, that one
// is read.
func (src source) LoadState(ctx context.Context, d webhook.Destination) (webhook.State, error) {
	st, ok, err := src.s.Read(ctx, d.AccountID, d.ID)
	if err != nil || ok {
		return st, err
	}
	rev, err := src.s.store.Revision(ctx)
	if err != nil {
		return st, err
	}
	st = webhook.State{Cursor: rev}
	created, err := src.s.Create(ctx, d.AccountID, d.ID, st)
	if err != nil {
		return webhook.State{}, err
	}
	if !created {
		st, _, err = src.s.Read(ctx, d.AccountID, d.ID)
		return st, err
	}
	return st, nil
}

// SaveState implements [webhook.Source].
func (src source) SaveState(ctx context.Context, d webhook.Destination, st webhook.State) error {
	return src.s.Save(ctx, d.AccountID, d.ID, st)
}

// Revision implements [webhook.Source].
func (src source) Revision(ctx context.Context) (int64, error) {
	return src.s.store.Revision(ctx)
}

// Wait implements [webhook.Source].
func (src source) Wait(ctx context.Context, after int64) error {
	return src.s.store.Wait(ctx, after)
}

// Events implements [webhook.Source]: the changes after revision after
// (at most limit) that subscriptions sending to d have a source of, one
// event per change and subscription, shown as the API shows the record
// (what [events.Event] holds). The subscriptions are read once per call:
// a source or destination_ids changed between two calls decides from the
// next one on.
func (src source) Events(ctx context.Context, d webhook.Destination, after int64, limit int) (webhook.Batch, error) {
	s := src.s
	changes, err := s.store.Changes(ctx, after, limit, store.WithData)
	var compacted *store.CompactedError
	if errors.As(err, &compacted) {
		return webhook.Batch{Through: compacted.Oldest - 1, Skipped: max(compacted.Oldest-1-after, 0)}, nil
	}
	if err != nil {
		return webhook.Batch{}, err
	}
	b := webhook.Batch{Through: after}
	if len(changes) == 0 {
		return b, nil
	}
	b.Through = changes[len(changes)-1].Revision
	var subs map[string][]string // event type -> subscriptions, read at the first change of d's account
	for _, c := range changes {
		if c.AccountID != d.AccountID {
			continue
		}
		typ, at, ok := s.recs.Event(c)
		if !ok {
			continue
		}
		if subs == nil {
			if subs, err = src.subscriptions(ctx, d); err != nil {
				return webhook.Batch{}, err
			}
		}
		to := subs[typ]
		if len(to) == 0 {
			continue
		}
		obj, err := s.recs.Object(ctx, c)
		if err != nil {
			s.log.Error("event delivery: cannot show a changed record; the change is not delivered", "type", typ, "id", c.ID, "err", err)
			continue
		}
		created := resource.Timestamp(at)
		for _, sub := range to {
			ev := events.Event{ID: eventID(d.ID, sub, c.Revision), Type: typ, CreatedAt: created, AccountID: c.AccountID, SubscriptionID: sub, Object: obj}
			body, err := json.Marshal(ev)
			if err != nil {
				return webhook.Batch{}, err
			}
			b.Events = append(b.Events, webhook.Event{ID: ev.ID, Revision: c.Revision, CreatedAt: created, Body: body})
		}
	}
	return b, nil
}

// subscriptions returns, by event type, the subscriptions that send to d
// and have a source of that type, each list sorted.
func (src source) subscriptions(ctx context.Context, d webhook.Destination) (map[string][]string, error) {
	s := src.s
	out := map[string][]string{}
	q := store.Query{Kind: kinds.EventSubscription, AccountID: d.AccountID, RefersTo: d.ID, Limit: records.MaxPageSize}
	for {
		recs, err := s.store.List(ctx, q)
		if err != nil {
			return nil, err
		}
		for _, rec := range recs {
			sources, err := s.store.List(ctx, store.Query{Kind: kinds.EventSource, AccountID: d.AccountID, ParentID: rec.ID, Limit: events.MaxSources})
			if err != nil {
				return nil, err
			}
			for _, source := range sources {
				typ, err := s.recs.SourceType(source)
				if err != nil {
					return nil, err
				}
				out[typ] = append(out[typ], rec.ID)
			}
		}
		if len(recs) < q.Limit {
			break
		}
		q.BeforeID = recs[len(recs)-1].ID
	}
	for _, list := range out {
		slices.Sort(list)
	}
	return out, nil
}

// eventID is the ID of the event of the change at revision rev for
// subscription sub and destination dest: the same on every read and
// every replica, so that a retry or a redelivery after a restart carries
// the webhook-id the receiver saw.
func eventID(dest, sub string, rev int64) string {
	const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	h := sha256.Sum256([]byte(dest + "/" + sub + "/" + strconv.FormatInt(rev, 10)))
	b := make([]byte, len(events.EventPrefix)+ids.Len)
	copy(b, events.EventPrefix)
	for i := range ids.Len {
		b[len(events.EventPrefix)+i] = alphabet[int(h[i])%len(alphabet)]
	}
	return string(b)
}
