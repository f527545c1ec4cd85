package edgeplane

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/internal/ids"
	"github.com/edgeplane/edgeplane/store"
)

// indexEventType is the secondary index of event sources by type.
const indexEventType = "event_type"

// The stored forms of event subscriptions and sources (see forms.go). A
// source's subscription is its record's parent.
type (
	subscriptionDoc struct {
		common
	}
	sourceDoc struct {
		Type string `json:"type"`
	}
)

var (
	eventSubscriptionForm = plainForm(&eventSubscriptionKind,
		func(v *events.Subscription) *subscriptionDoc {
			return &subscriptionDoc{common{v.CreatedAt, v.Description, v.Metadata}}
		},
		func(d *subscriptionDoc, rec store.Record) *events.Subscription {
			return &events.Subscription{ID: rec.ID, CreatedAt: d.CreatedAt, Description: d.Description, Metadata: d.Metadata}
		})
	eventSourceForm = plainForm(&eventSourceKind,
		func(v *events.Source) *sourceDoc { return &sourceDoc{Type: v.Type} },
		func(d *sourceDoc, _ store.Record) *events.Source { return &events.Source{Type: d.Type} })
)

// startEvents sets up the event type registry and, when a sink is
// configured, the delivery queue and the goroutine that follows the
// store's change feed into it.
func (s *Service) startEvents(opts events.Options) {
	s.eventTypes = opts.Registry
	if s.eventTypes == nil {
		reg, err := events.NewRegistry(DefaultEventTypes()...)
		if err != nil {
			panic(err) // only on a programming error in the kinds table
		}
		s.eventTypes = reg
	}
	if opts.Sink != nil {
		s.queue = events.NewQueue(opts, s.expandChange, s.log)
		s.startFollowing()
	}
}

// Close shuts event delivery down: changes committed after it are no
// longer reported, and it waits until every change committed before it is
// delivered or ctx ends (then the delivery in progress is cancelled, the
// rest is dropped and counted, and ctx.Err() is returned). Management
// operations keep working after Close; only delivery stops. Without a
// sink, Close does nothing. It may be called more than once.
func (s *Service) Close(ctx context.Context) error {
	s.stopCache()
	if s.queue == nil {
		return nil
	}
	if err := s.stopFollowing(ctx); err != nil {
		_ = s.queue.Close(ctx) // ctx has ended: drops what waits, stops the worker
		return err
	}
	return s.queue.Close(ctx)
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

// sourceLookup is the store lookup key of a subscription's source.
func sourceLookup(subscriptionID, typ string) string {
	return "event_source:" + subscriptionID + ":" + typ
}

func (s *Service) presentSubscription(v *events.Subscription, _ store.Record) {
	v.URI = s.uri(eventSubscriptionKind.collection, v.ID)
}

// CreateEventSubscription creates an event subscription with the sources
// params lists (at most [events.MaxCreateSources], each a known event
// type, listed once; violations under sources[i].type). The subscription
// and each source are separate records, written one after the other and
// reported as their own created events; if a source cannot be written,
// the subscription is deleted again (with the sources already written)
// and the error returned. The specification does not show this operation;
// the subscription has the minimal shape of [events.Subscription], with
// its sources.
func (s *Service) CreateEventSubscription(ctx context.Context, p Principal, params events.CreateSubscriptionParams) (*events.Subscription, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	if err := params.Validate(s.eventTypes); err != nil {
		return nil, err
	}
	v := &events.Subscription{ID: s.ids.New(events.SubscriptionPrefix), CreatedAt: s.timestamp(),
		Description: params.Description, Metadata: params.Metadata}
	if err := create(ctx, s, p, eventSubscriptionForm, v.ID, "", v, nil); err != nil {
		return nil, err
	}
	v.Sources = make([]events.Source, 0, len(params.Sources))
	for _, src := range params.Sources {
		if err := s.createSource(ctx, p, v.ID, src.Type); err != nil {
			// Undo, whatever happened to ctx: a subscription with some of
			// its sources is not what was asked for.
			undo := context.WithoutCancel(ctx)
			if derr := s.store.Delete(s.reporting(undo, eventSubscriptionKind.event, events.Deleted), KindEventSubscription, p.AccountID, v.ID); derr != nil {
				s.log.Error("cannot delete a subscription whose sources failed", "id", v.ID, "err", derr)
			}
			return nil, err
		}
		source := events.Source{Type: src.Type}
		s.presentSource(&source, v.ID)
		v.Sources = append(v.Sources, source)
	}
	sortSources(v.Sources)
	s.presentSubscription(v, store.Record{})
	return v, nil
}

// sortSources orders a subscription's sources by type.
func sortSources(list []events.Source) {
	slices.SortFunc(list, func(a, b events.Source) int { return strings.Compare(a.Type, b.Type) })
}

// withSources fills the sources of a subscription of p's account from its
// source records.
func (s *Service) withSources(ctx context.Context, p Principal, v *events.Subscription) error {
	list, err := s.sources(ctx, p, v.ID)
	if err != nil {
		return err
	}
	v.Sources = list.Sources
	sortSources(v.Sources)
	return nil
}

// GetEventSubscription returns an event subscription with its sources.
func (s *Service) GetEventSubscription(ctx context.Context, p Principal, id string) (*events.Subscription, error) {
	v, rec, err := get(ctx, s, p, eventSubscriptionForm, id)
	if err != nil {
		return nil, err
	}
	s.presentSubscription(v, rec)
	if err := s.withSources(ctx, p, v); err != nil {
		return nil, err
	}
	return v, nil
}

// ListEventSubscriptions returns a page of the account's event
// subscriptions, newest first, each with its sources (one more store read
// per subscription).
func (s *Service) ListEventSubscriptions(ctx context.Context, p Principal, opts ListOptions) (*Page[events.Subscription], error) {
	show := func(v *events.Subscription, rec store.Record) (*events.Subscription, error) {
		s.presentSubscription(v, rec)
		return v, nil
	}
	// Sources are read from their own records: before a filter that reads
	// obj.sources, else only for the subscriptions that match.
	sources := lateField[events.Subscription]{name: "sources", fill: func(v *events.Subscription) error {
		return s.withSources(ctx, p, v)
	}}
	return listAs(ctx, s, p, eventSubscriptionForm, "", eventSubscriptionKind.collection, opts, show, sources)
}

// UpdateEventSubscription changes the fields present in params.
func (s *Service) UpdateEventSubscription(ctx context.Context, p Principal, id string, params events.UpdateSubscriptionParams) (*events.Subscription, error) {
	if err := params.Validate(); err != nil {
		return nil, err
	}
	v, err := update(ctx, s, p, eventSubscriptionForm, id, func(v *events.Subscription, _ *store.Record) error {
		params.Apply(v)
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.presentSubscription(v, store.Record{})
	if err := s.withSources(ctx, p, v); err != nil {
		return nil, err
	}
	return v, nil
}

// DeleteEventSubscription deletes an event subscription and, in the same
// atomic step, its sources. Only the subscription's deletion is reported
// as an event.
func (s *Service) DeleteEventSubscription(ctx context.Context, p Principal, id string) error {
	return s.remove(ctx, p, eventSubscriptionKind, id)
}

// sourcesPath returns event_subscriptions/<id>/sources.
func sourcesPath(subscriptionID string) string { return eventSourceKind.path(subscriptionID) }

func (s *Service) presentSource(v *events.Source, subscriptionID string) {
	v.URI = s.baseURL + "/" + sourcesPath(subscriptionID) + "/" + v.Type
}

// sourceNotFound is the error for a type the subscription has no source
// of. A type too long to be valid is shortened in the message.
func sourceNotFound(subscriptionID, typ string) error {
	if len(typ) > events.MaxTypeBytes {
		typ = typ[:events.MaxTypeBytes] + "..."
	}
	return apierr.NotFoundf("event subscription %s has no source of type %s", subscriptionID, strconv.Quote(typ))
}

// checkSubscription fails with not-found unless id is an event
// subscription of p's account.
func (s *Service) checkSubscription(ctx context.Context, p Principal, id string) error {
	_, _, err := get(ctx, s, p, eventSubscriptionForm, id)
	return err
}

// CreateEventSource adds a source to a subscription of the account (POST
// /event_subscriptions/{subscription_id}/sources). The type must be a
// known event type ([Service.EventTypes]); an unknown one fails with a
// violation of "type" that suggests the closest known type. A source of
// that type that already exists is a conflict.
func (s *Service) CreateEventSource(ctx context.Context, p Principal, subscriptionID string, params events.CreateSourceParams) (*events.Source, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	if !ids.Valid(subscriptionID, events.SubscriptionPrefix) {
		return nil, eventSubscriptionKind.notFound(subscriptionID)
	}
	if err := params.Validate(s.eventTypes); err != nil {
		return nil, err
	}
	if err := s.createSource(ctx, p, subscriptionID, params.Type); err != nil {
		return nil, err
	}
	v := &events.Source{Type: params.Type}
	s.presentSource(v, subscriptionID)
	return v, nil
}

// createSource writes the source record of a known type typ in a
// subscription of p's account.
func (s *Service) createSource(ctx context.Context, p Principal, subscriptionID, typ string) error {
	v := &events.Source{Type: typ}
	rec := store.Record{Kind: KindEventSource, AccountID: p.AccountID, ID: s.ids.New(events.SourcePrefix), ParentID: subscriptionID,
		Keys: []string{sourceLookup(subscriptionID, typ)}, Indexes: []store.IndexEntry{{Name: indexEventType, Value: typ}}}
	if err := eventSourceForm.encode(s, v, &rec); err != nil {
		return err
	}
	if err := s.store.Create(s.reporting(ctx, eventSourceKind.event, events.Created), rec); err != nil {
		var (
			miss *store.MissingRefError
			dup  *store.DuplicateError
		)
		switch {
		case errors.As(err, &miss):
			return eventSubscriptionKind.notFound(subscriptionID)
		case errors.As(err, &dup):
			return &apierr.Error{Code: apierr.Conflict, Err: err,
				Msg: "event subscription " + subscriptionID + " already has a source of type " + strconv.Quote(typ)}
		}
		return s.storeErr(err, eventSourceKind, "")
	}
	return nil
}

// getSource returns the source record of typ in a subscription of p's
// account.
func (s *Service) getSource(ctx context.Context, p Principal, subscriptionID, typ string) (store.Record, error) {
	if err := s.checkSubscription(ctx, p, subscriptionID); err != nil {
		return store.Record{}, err
	}
	if len(typ) > events.MaxTypeBytes {
		return store.Record{}, sourceNotFound(subscriptionID, typ)
	}
	rec, err := s.store.Lookup(ctx, KindEventSource, sourceLookup(subscriptionID, typ))
	if errors.Is(err, apierr.ErrNotFound) || (err == nil && (rec.AccountID != p.AccountID || rec.ParentID != subscriptionID)) {
		return store.Record{}, sourceNotFound(subscriptionID, typ)
	}
	if err != nil {
		return store.Record{}, s.storeErr(err, eventSourceKind, "")
	}
	return rec, nil
}

// GetEventSource returns the source of type typ of a subscription (GET
// /event_subscriptions/{subscription_id}/sources/{type}).
func (s *Service) GetEventSource(ctx context.Context, p Principal, subscriptionID, typ string) (*events.Source, error) {
	rec, err := s.getSource(ctx, p, subscriptionID, typ)
	if err != nil {
		return nil, err
	}
	v, err := eventSourceForm.decode(s, rec)
	if err != nil {
		return nil, err
	}
	s.presentSource(v, subscriptionID)
	return v, nil
}

// ListEventSources returns the sources of a subscription, newest first
// (GET /event_subscriptions/{subscription_id}/sources). The list is not
// paged: a subscription has at most one source per known event type, and
// at most [events.MaxSources] are returned.
func (s *Service) ListEventSources(ctx context.Context, p Principal, subscriptionID string) (*events.SourceList, error) {
	if err := s.checkSubscription(ctx, p, subscriptionID); err != nil {
		return nil, err
	}
	return s.sources(ctx, p, subscriptionID)
}

// sources reads the sources of a subscription of p's account, newest
// first.
func (s *Service) sources(ctx context.Context, p Principal, subscriptionID string) (*events.SourceList, error) {
	recs, err := s.store.List(ctx, store.Query{Kind: KindEventSource, AccountID: p.AccountID, ParentID: subscriptionID, Limit: events.MaxSources})
	if err != nil {
		return nil, s.storeErr(err, eventSourceKind, "")
	}
	out := &events.SourceList{Sources: make([]events.Source, 0, len(recs)), URI: s.baseURL + "/" + sourcesPath(subscriptionID)}
	for _, rec := range recs {
		v, err := eventSourceForm.decode(s, rec)
		if err != nil {
			return nil, err
		}
		s.presentSource(v, subscriptionID)
		out.Sources = append(out.Sources, *v)
	}
	return out, nil
}

// UpdateEventSource updates the source of type typ of a subscription
// (PATCH /event_subscriptions/{subscription_id}/sources/{type}). The body
// is the empty object, so nothing changes; the result is the source, and
// the update is reported like any other.
func (s *Service) UpdateEventSource(ctx context.Context, p Principal, subscriptionID, typ string, params events.UpdateSourceParams) (*events.Source, error) {
	if err := params.Validate(); err != nil {
		return nil, err
	}
	rec, err := s.getSource(ctx, p, subscriptionID, typ)
	if err != nil {
		return nil, err
	}
	// An atomic no-op write: it fails if the source was removed meanwhile.
	rec, err = s.store.Update(s.reporting(ctx, eventSourceKind.event, events.Updated), KindEventSource, p.AccountID, rec.ID, func(*store.Record) error { return nil })
	if errors.Is(err, apierr.ErrNotFound) {
		return nil, sourceNotFound(subscriptionID, typ)
	}
	if err != nil {
		return nil, s.storeErr(err, eventSourceKind, "")
	}
	v, err := eventSourceForm.decode(s, rec)
	if err != nil {
		return nil, err
	}
	s.presentSource(v, subscriptionID)
	return v, nil
}

// DeleteEventSource removes the source of type typ from a subscription
// (DELETE /event_subscriptions/{subscription_id}/sources/{type}). The
// deletion is reported with the source ({type, uri}) as the object, since a
// source has no ID of its own.
func (s *Service) DeleteEventSource(ctx context.Context, p Principal, subscriptionID, typ string) error {
	rec, err := s.getSource(ctx, p, subscriptionID, typ)
	if err != nil {
		return err
	}
	err = s.store.Delete(s.reporting(ctx, eventSourceKind.event, events.Deleted), KindEventSource, p.AccountID, rec.ID)
	if errors.Is(err, apierr.ErrNotFound) {
		return sourceNotFound(subscriptionID, typ)
	}
	if err != nil {
		return s.storeErr(err, eventSourceKind, "")
	}
	v := &events.Source{Type: typ}
	s.presentSource(v, subscriptionID)
	return nil
}
