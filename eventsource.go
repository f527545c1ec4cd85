package edgeplane

import (
	"context"
	"errors"
	"strconv"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/filter"
	"github.com/edgeplane/edgeplane/internal/ids"
	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/store"
)

// indexEventType is the secondary index of event sources by type.
const indexEventType = "event_type"

type sourceDoc struct {
	Type string `json:"type"`
}

var eventSourceKind = &records.Kind{StoreKind: KindEventSource, Prefix: events.SourcePrefix, Collection: "sources", Noun: "event source", Event: "event_source", Parent: eventSubscriptionKind, Nested: true}

var eventSourceForm = &kind[events.Source]{Form: records.PlainForm(eventSourceKind,
	func(v *events.Source) *sourceDoc { return &sourceDoc{Type: v.Type} },
	func(d *sourceDoc, _ store.Record) *events.Source { return &events.Source{Type: d.Type} }), present: (*Service).presentSourceRecord, deletedAsShown: true}

// sourceLookup is the store lookup key of a subscription's source.
func sourceLookup(subscriptionID, typ string) string {
	return "event_source:" + subscriptionID + ":" + typ
}

// sourcesPath returns event_subscriptions/<id>/sources.
func sourcesPath(subscriptionID string) string { return eventSourceKind.Path(subscriptionID) }

// presentSourceRecord is presentSource as a kind's present: a source's
// subscription is its record's parent.
func (s *Service) presentSourceRecord(v *events.Source, rec store.Record) {
	s.presentSource(v, rec.ParentID)
}

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
	_, _, err := records.Get(ctx, s.db, p, eventSubscriptionForm.Form, id)
	return err
}

// CreateEventSource adds a source to a subscription of the account (POST
// /event_subscriptions/{subscription_id}/sources). The type must be a
// known event type ([Service.EventTypes]); an unknown one fails with a
// violation of "type" that suggests the closest known type. A source of
// that type that already exists is a conflict.
func (s *Service) CreateEventSource(ctx context.Context, p Principal, subscriptionID string, params events.CreateSourceParams) (*events.Source, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	if !ids.Valid(subscriptionID, events.SubscriptionPrefix) {
		return nil, eventSubscriptionKind.NotFound(subscriptionID)
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
	if err := eventSourceForm.Encode(s.db, v, &rec); err != nil {
		return err
	}
	if err := s.store.Create(ctx, noted(rec, s.db.Note(eventSourceKind.Event, events.Created))); err != nil {
		var (
			miss *store.MissingRefError
			dup  *store.DuplicateError
		)
		switch {
		case errors.As(err, &miss):
			return eventSubscriptionKind.NotFound(subscriptionID)
		case errors.As(err, &dup):
			return &apierr.Error{Code: apierr.Conflict, Err: err,
				Msg: "event subscription " + subscriptionID + " already has a source of type " + strconv.Quote(typ)}
		}
		return s.db.StoreErr(err, eventSourceKind, "")
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
		return store.Record{}, s.db.StoreErr(err, eventSourceKind, "")
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
	v, err := eventSourceForm.Decode(s.db, rec)
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
		return nil, s.db.StoreErr(err, eventSourceKind, "")
	}
	out := &events.SourceList{Sources: make([]events.Source, 0, len(recs)), URI: s.baseURL + "/" + sourcesPath(subscriptionID)}
	for _, rec := range recs {
		v, err := eventSourceForm.Decode(s.db, rec)
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
	note := s.db.Note(eventSourceKind.Event, events.Updated)
	rec, err = s.store.Update(ctx, KindEventSource, p.AccountID, rec.ID, func(r *store.Record) error { r.Note = note; return nil })
	if errors.Is(err, apierr.ErrNotFound) {
		return nil, sourceNotFound(subscriptionID, typ)
	}
	if err != nil {
		return nil, s.db.StoreErr(err, eventSourceKind, "")
	}
	v, err := eventSourceForm.Decode(s.db, rec)
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
	err = s.store.Delete(ctx, KindEventSource, p.AccountID, rec.ID, s.db.Note(eventSourceKind.Event, events.Deleted))
	if errors.Is(err, apierr.ErrNotFound) {
		return sourceNotFound(subscriptionID, typ)
	}
	if err != nil {
		return s.db.StoreErr(err, eventSourceKind, "")
	}
	v := &events.Source{Type: typ}
	s.presentSource(v, subscriptionID)
	return nil
}

// ListEventSourcesMatching returns the sources of a subscription that
// expr matches (GET
// /event_subscriptions/{subscription_id}/sources?filter=...), in the
// order they have without a filter ([Service.ListEventSources]): expr is
// a CEL expression over obj, the source as the API shows it (obj.type,
// obj.uri; see package [filter]). An empty expr matches every source. The
// list is not paged, so no scan bound applies beyond [events.MaxSources].
func (s *Service) ListEventSourcesMatching(ctx context.Context, p Principal, subscriptionID, expr string) (*events.SourceList, error) {
	var match *filter.Filter[events.Source]
	if expr != "" {
		if err := p.Check(); err != nil {
			return nil, err
		}
		m, err := filter.Compile[events.Source](s.filters, expr)
		if err != nil {
			return nil, err
		}
		match = m
	}
	list, err := s.ListEventSources(ctx, p, subscriptionID)
	if err != nil || match == nil {
		return list, err
	}
	kept := list.Sources[:0]
	for i := range list.Sources {
		if match.Match(&list.Sources[i]) {
			kept = append(kept, list.Sources[i])
		}
	}
	list.Sources = kept
	return list, nil
}
