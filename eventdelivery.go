package edgeplane

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"sync"

	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/internal/ids"
	"github.com/edgeplane/edgeplane/resource"
	"github.com/edgeplane/edgeplane/store"
	"github.com/edgeplane/edgeplane/webhook"
)

// EventDelivery returns what package webhook delivers from: every
// account's event destinations with their opened keys, the state of
// delivery to each (kept in the store), and each destination's events
// read from the change feed after a revision. Run webhook.Run with it on
// one replica at a time (internal/elect).
func (h *Host) EventDelivery() webhook.Source { return deliverySource{s: h.s, warned: new(sync.Map)} }

// deliverySource is [Host.EventDelivery].
type deliverySource struct {
	s *Service
	// warned holds the destinations whose unreadable secret or document
	// was logged: once each, not at every rescan.
	warned *sync.Map
}

// warn logs msg about destination id once per source.
func (src deliverySource) warn(id, msg string, args ...any) {
	if _, done := src.warned.LoadOrStore(id, true); !done {
		src.s.log.Error(msg, append([]any{"id", id}, args...)...)
	}
}

// Destinations implements [webhook.Source]: every destination whose key
// opens (one that does not is logged and left out).
func (src deliverySource) Destinations(ctx context.Context) ([]webhook.Destination, error) {
	s := src.s
	var out []webhook.Destination
	q := store.Query{Kind: KindEventDestination, Limit: MaxPageSize}
	for {
		recs, err := s.store.List(ctx, q)
		if err != nil {
			return nil, err
		}
		for _, rec := range recs {
			v, err := eventDestinationForm.Decode(s.db, rec)
			if err != nil {
				src.warn(rec.ID, "event delivery: cannot read a destination; it gets no events", "err", err)
				continue
			}
			secret, err := s.sealer.Open(v.SealedSecret, secretAAD(rec.AccountID, rec.ID))
			if err != nil {
				src.warn(rec.ID, "event delivery: cannot open a destination's secret (another sealing key?); it gets no events", "err", err)
				continue
			}
			key, err := events.ParseSecret(string(secret))
			if err != nil || v.Target.HTTP == nil {
				src.warn(rec.ID, "event delivery: a destination's secret or target is malformed; it gets no events")
				continue
			}
			out = append(out, webhook.Destination{AccountID: rec.AccountID, ID: rec.ID, URL: v.Target.HTTP.URL, Headers: v.Target.HTTP.Headers, Key: key})
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
func (src deliverySource) LoadState(ctx context.Context, d webhook.Destination) (webhook.State, error) {
	st, ok, err := src.s.readDelivery(ctx, d.AccountID, d.ID)
	if err != nil || ok {
		return st, err
	}
	rev, err := src.s.store.Revision(ctx)
	if err != nil {
		return st, err
	}
	st = webhook.State{Cursor: rev}
	if err := src.s.writeDelivery(ctx, d.AccountID, d.ID, st, true); isDuplicate(err, deliveryID(d.ID)) {
		st, _, err = src.s.readDelivery(ctx, d.AccountID, d.ID)
		return st, err
	} else if err != nil {
		return webhook.State{}, err
	}
	return st, nil
}

// SaveState implements [webhook.Source].
func (src deliverySource) SaveState(ctx context.Context, d webhook.Destination, st webhook.State) error {
	return src.s.writeDelivery(ctx, d.AccountID, d.ID, st, false)
}

// Revision implements [webhook.Source].
func (src deliverySource) Revision(ctx context.Context) (int64, error) {
	return src.s.store.Revision(ctx)
}

// Wait implements [webhook.Source].
func (src deliverySource) Wait(ctx context.Context, after int64) error {
	return src.s.store.Wait(ctx, after)
}

// Events implements [webhook.Source]: the changes after revision after
// (at most limit) that subscriptions sending to d have a source of, one
// event per change and subscription, shown as the API shows the record
// (what [events.Event] holds). The subscriptions are read once per call:
// a source or destination_ids changed between two calls decides from the
// next one on.
func (src deliverySource) Events(ctx context.Context, d webhook.Destination, after int64, limit int) (webhook.Batch, error) {
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
		typ, at, decl, ok := s.eventOf(c)
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
		obj, err := s.changeObject(ctx, c, decl)
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
func (src deliverySource) subscriptions(ctx context.Context, d webhook.Destination) (map[string][]string, error) {
	s := src.s
	out := map[string][]string{}
	q := store.Query{Kind: KindEventSubscription, AccountID: d.AccountID, RefersTo: d.ID, Limit: MaxPageSize}
	for {
		recs, err := s.store.List(ctx, q)
		if err != nil {
			return nil, err
		}
		for _, rec := range recs {
			sources, err := s.store.List(ctx, store.Query{Kind: KindEventSource, AccountID: d.AccountID, ParentID: rec.ID, Limit: events.MaxSources})
			if err != nil {
				return nil, err
			}
			for _, src := range sources {
				var doc sourceDoc
				if err := json.Unmarshal(src.Data, &doc); err != nil {
					return nil, err
				}
				out[doc.Type] = append(out[doc.Type], rec.ID)
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
