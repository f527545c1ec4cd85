package edgeplane

import (
	"context"
	"slices"
	"strings"

	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/internal/storedforms"
	"github.com/edgeplane/edgeplane/resource"
	"github.com/edgeplane/edgeplane/store"
)

// The identity of the kinds this file declares (see kindList).
var eventSubscriptionKind = &records.Kind{StoreKind: KindEventSubscription, Prefix: events.SubscriptionPrefix, Collection: "event_subscriptions", Noun: "event subscription", Event: "event_subscription"}

var eventSubscriptionForm = &kind[events.Subscription]{Form: storedforms.Subscription(eventSubscriptionKind), present: (*Service).presentSubscription}

func (s *Service) presentSubscription(v *events.Subscription, _ store.Record) {
	v.URI = s.uri(eventSubscriptionKind.Collection, v.ID)
	for i := range v.Destinations {
		v.Destinations[i] = s.ref(eventDestinationKind.Collection, v.Destinations[i].ID)
	}
	if v.Destinations == nil {
		v.Destinations = []resource.Ref{}
	}
}

// CreateEventSubscription creates an event subscription with the sources
// params lists (at most [events.MaxCreateSources], each a known event
// type, listed once; violations under sources[i].type). The subscription
// and each source are separate records, written one after the other and
// reported as their own created events; if a source cannot be written,
// the subscription is deleted again (with the sources already written)
// and the error returned. The specification does not show this operation;
// the subscription has a minimal shape ([events.Subscription]), with its
// sources.
func (s *Service) CreateEventSubscription(ctx context.Context, p Principal, params events.CreateSubscriptionParams) (*events.Subscription, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	if err := params.Validate(s.eventTypes); err != nil {
		return nil, err
	}
	v := &events.Subscription{ID: s.ids.New(events.SubscriptionPrefix), CreatedAt: s.timestamp(),
		Description: params.Description, Metadata: params.Metadata, Destinations: records.IDRefs(params.DestinationIDs)}
	if err := records.Create(ctx, s.db, p, eventSubscriptionForm.Form, v.ID, "", v, params.DestinationIDs); err != nil {
		return nil, refViolation(err, "destination_ids", true, params.DestinationIDs)
	}
	v.Sources = make([]events.Source, 0, len(params.Sources))
	for _, src := range params.Sources {
		if err := s.createSource(ctx, p, v.ID, src.Type); err != nil {
			// Undo, whatever happened to ctx: a subscription with some of
			// its sources is not what was asked for.
			undo := context.WithoutCancel(ctx)
			if derr := s.store.Delete(undo, KindEventSubscription, p.AccountID, v.ID, s.db.Note(eventSubscriptionKind.Event, events.Deleted)); derr != nil {
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
	v, rec, err := records.Get(ctx, s.db, p, eventSubscriptionForm.Form, id)
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
	sources := records.LateField[events.Subscription]{Name: "sources", Fill: func(v *events.Subscription) error {
		return s.withSources(ctx, p, v)
	}}
	return listAs(ctx, s, p, eventSubscriptionForm.Form, "", eventSubscriptionKind.Collection, opts, show, sources)
}

// UpdateEventSubscription changes the fields present in params.
func (s *Service) UpdateEventSubscription(ctx context.Context, p Principal, id string, params events.UpdateSubscriptionParams) (*events.Subscription, error) {
	if err := params.Validate(); err != nil {
		return nil, err
	}
	v, err := records.Update(ctx, s.db, p, eventSubscriptionForm.Form, id, func(v *events.Subscription, rec *store.Record) error {
		params.Apply(v)
		rec.Refs = records.RefIDs(v.Destinations)
		return nil
	})
	if err != nil {
		var named []string
		if params.DestinationIDs != nil {
			named = *params.DestinationIDs
		}
		return nil, refViolation(err, "destination_ids", true, named)
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
	return records.Remove(ctx, s.db, p, eventSubscriptionKind, id)
}
