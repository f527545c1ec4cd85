package edgeplane

import (
	"context"
	"maps"
	"net"
	"net/url"
	"time"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/internal/delivery"
	"github.com/edgeplane/edgeplane/internal/netguard"
	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/internal/storedforms"
	"github.com/edgeplane/edgeplane/store"
	"github.com/edgeplane/edgeplane/webhook"
)

// Event destinations are where subscriptions send their events
// (/event_destinations). A destination's webhook secret is sealed under
// the Service's sealing key, bound to its record; the API shows it once,
// in the response of the write that set it. Each destination has, as a
// child record of an internal kind (package internal/delivery keeps
// it), the state of delivery to it: the cursor (the store revision
// through which its events were delivered) and the counters its API
// representation shows. The cursor is created with the destination, at
// the revision of its create, so that every change after it is
// delivered; deleting the destination deletes it.
//
// A destination may point only where delivery may go: the host of its
// target URL is judged when it is created or its target changed
// (checkTarget), under the networks of Options.Events (public addresses
// only by default). An IP address outside them, or a name that resolves
// only outside them, is refused with a violation of target.http.url that
// names the networks allowed; so is a name that does not resolve within
// Options.Events.ResolveTimeout (3 s by default), since delivery could not
// reach it either: a tenant who has just created the record tries again.
// This is advice at the door, not the guard: delivery checks every
// address it dials (package webhook), since a name can resolve elsewhere
// later.

// guardDestinations sets where destinations may point and how their
// host names are looked up, from opts.
func (s *Service) guardDestinations(opts events.Options) {
	s.destinations = netguard.New(opts.Networks)
	s.lookup = net.DefaultResolver.LookupNetIP
	if opts.Resolver != nil {
		s.lookup = opts.Resolver.LookupNetIP
	}
	if s.resolveTimeout = opts.ResolveTimeout; s.resolveTimeout <= 0 {
		s.resolveTimeout = events.DefaultResolveTimeout
	}
}

// checkTarget returns nil when the target URL raw (validated) points
// where destinations may point, else an InvalidArgument error naming
// target.http.url, the reason and the networks allowed. It looks the
// host name up, within s.resolveTimeout.
func (s *Service) checkTarget(ctx context.Context, raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return apierr.Invalidf("target.http.url", "must be an absolute http or https URL")
	}
	reason := s.destinations.CheckHost(ctx, s.lookup, u.Hostname(), s.resolveTimeout)
	if reason == "" {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return apierr.Invalidf("target.http.url", "%s; event destinations may reach %s on this server: give a URL whose host is such an address or a name that resolves to one",
		reason, s.destinations)
}

// storedDestination is an event destination as the Service holds it:
// [storedforms.Destination].
type storedDestination = storedforms.Destination

// The identity of the kind this file declares (see kindList).
var eventDestinationKind = &records.Kind{StoreKind: KindEventDestination, Prefix: events.DestinationPrefix, Collection: "event_destinations", Noun: "event destination", Event: "event_destination"}

var eventDestinationForm = &kind[storedDestination]{Form: storedforms.DestinationForm(eventDestinationKind), present: (*Service).presentStoredDestination, shown: showDestination}

func (s *Service) presentStoredDestination(v *storedDestination, rec store.Record) {
	s.presentDestination(&v.Destination, rec)
}

func (s *Service) presentDestination(v *events.Destination, _ store.Record) {
	v.URI = s.uri(eventDestinationKind.Collection, v.ID)
	if v.Format == "" {
		v.Format = events.FormatJSON
	}
	if v.Target.HTTP != nil && v.Target.HTTP.Headers == nil {
		v.Target.HTTP.Headers = map[string]string{}
	}
	if v.Delivery.State == "" {
		v.Delivery.State = events.StateOK
	}
}

// showDestination shows a stored destination as the API does: without
// its secret. (An event shows no delivery state: it is read apart.)
func showDestination(_ context.Context, _ *Service, v *storedDestination, _ store.Record) (any, error) {
	return &v.Destination, nil
}

// secretAAD binds a sealed secret to its destination record.
func secretAAD(accountID, id string) []byte {
	return []byte("event_destination/" + accountID + "/" + id)
}

// CreateEventDestination creates an event destination (POST
// /event_destinations). Its webhook secret is generated when params do
// not give one, and returned in this response only. An account has at
// most [events.MaxDestinationsPerAccount] destinations: one more is a
// failed precondition. The target URL's host must be an address the
// server's networks allow (public addresses by default; see
// [events.Options.Networks]), or a name that resolves, within the
// server's resolve timeout ([events.Options.ResolveTimeout]), to at least
// one such address; else the create is refused with a violation of
// target.http.url that says why and names the networks allowed.
func (s *Service) CreateEventDestination(ctx context.Context, p Principal, params events.CreateDestinationParams) (*events.Destination, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	if err := params.Validate(); err != nil {
		return nil, err
	}
	h := params.Target.HTTP
	if err := s.checkTarget(ctx, h.URL); err != nil {
		return nil, err
	}
	secret := events.NewSecret()
	if h.Secret != nil {
		secret = *h.Secret
	}
	v := &storedDestination{Destination: events.Destination{ID: s.ids.New(events.DestinationPrefix), CreatedAt: s.timestamp(),
		Description: params.Description, Metadata: params.Metadata, Format: events.FormatJSON,
		Target: events.Target{HTTP: &events.HTTPTarget{URL: h.URL, Headers: maps.Clone(h.Headers)}}}}
	v.SealedSecret = s.sealer.Seal([]byte(secret), secretAAD(p.AccountID, v.ID))
	full := func() error {
		return apierr.New(apierr.FailedPrecondition, "the account already has %d event destinations, the most one account may have; delete one first",
			events.MaxDestinationsPerAccount)
	}
	// The cursor starts at the revision before the destination's create:
	// every change after it is delivered (those before the create go to
	// no subscription of this destination, which did not exist).
	rev, err := s.store.Revision(ctx)
	if err != nil {
		return nil, s.db.StoreErr(err, eventDestinationKind, "")
	}
	if err := records.CreateInSlot(ctx, s.db, p, eventDestinationForm.Form, v.ID, "", v, nil, events.MaxDestinationsPerAccount, full); err != nil {
		return nil, err
	}
	// Delivery may have listed the destination first and created its
	// state itself (at a later revision, when still no subscription could
	// send to it): that one stands.
	if _, err := s.delivery.Create(ctx, p.AccountID, v.ID, webhook.State{Cursor: rev}); err != nil {
		undo := context.WithoutCancel(ctx)
		if derr := s.store.Delete(undo, KindEventDestination, p.AccountID, v.ID, s.db.Note(eventDestinationKind.Event, events.Deleted)); derr != nil {
			s.log.Error("cannot delete an event destination whose delivery state failed", "id", v.ID, "err", derr)
		}
		return nil, s.db.StoreErr(err, delivery.Kind, "")
	}
	out := v.Destination
	s.presentDestination(&out, store.Record{})
	if err := s.withDelivery(ctx, p.AccountID, &out); err != nil {
		return nil, err
	}
	out.Target.HTTP.Secret = &secret
	return &out, nil
}

// withDelivery fills the delivery state of a destination as the API
// shows it.
func (s *Service) withDelivery(ctx context.Context, accountID string, v *events.Destination) error {
	d, _, err := s.delivery.Read(ctx, accountID, v.ID)
	if err != nil {
		return s.db.StoreErr(err, delivery.Kind, "")
	}
	v.Delivery = showDelivery(d, s.now())
	return nil
}

// showDelivery is the API's view of a delivery state at time now. It
// shows no store revision, neither the cursor nor how many revisions it
// is behind, nor the revisions compacted away: every account's writes
// advance them, so they would tell the destination's owner how much the
// other accounts write. The lag is time only (lag_seconds), and losses
// are counted as the times they happened (Gaps; a state written before
// Gaps existed shows 1 when it lost any).
func showDelivery(d webhook.State, now time.Time) events.DeliveryStatus {
	st := events.DeliveryStatus{State: d.State, Attempts: d.Attempts,
		LastError: d.LastError, LastDeliveredAt: d.LastDeliveredAt, Delivered: d.Delivered, Dropped: d.Dropped, Skipped: d.Gaps}
	if d.Skipped > 0 && d.Gaps == 0 {
		st.Skipped = 1
	}
	if st.State == "" {
		st.State = events.StateOK
	}
	if d.PendingSince != nil {
		st.LagSeconds = max(now.Sub(*d.PendingSince).Seconds(), 0)
	}
	return st
}

// GetEventDestination returns an event destination with the state of
// delivery to it (GET /event_destinations/{id}).
func (s *Service) GetEventDestination(ctx context.Context, p Principal, id string) (*events.Destination, error) {
	v, rec, err := records.Get(ctx, s.db, p, eventDestinationForm.Form, id)
	if err != nil {
		return nil, err
	}
	out := v.Destination
	s.presentDestination(&out, rec)
	if err := s.withDelivery(ctx, p.AccountID, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListEventDestinations returns a page of the account's event
// destinations, newest first, each with the state of delivery to it
// (GET /event_destinations).
func (s *Service) ListEventDestinations(ctx context.Context, p Principal, opts ListOptions) (*Page[events.Destination], error) {
	show := func(v *storedDestination, rec store.Record) (*events.Destination, error) {
		out := v.Destination
		s.presentDestination(&out, rec)
		return &out, nil
	}
	// The delivery state is read from its own record: before a filter
	// that reads obj.delivery, else only for the destinations that match.
	status := records.LateField[events.Destination]{Name: "delivery", Fill: func(v *events.Destination) error {
		return s.withDelivery(ctx, p.AccountID, v)
	}}
	return listAs(ctx, s, p, eventDestinationForm.Form, "", eventDestinationKind.Collection, opts, show, status)
}

// UpdateEventDestination changes the fields present in params (PATCH
// /event_destinations/{id}). A target replaces the old one; an http
// target without a secret keeps the old secret, one with a secret
// replaces it and the response shows it. A new target URL is judged as
// at create: one whose host the server's networks do not allow is
// refused with a violation of target.http.url.
func (s *Service) UpdateEventDestination(ctx context.Context, p Principal, id string, params events.UpdateDestinationParams) (*events.Destination, error) {
	if err := params.Validate(); err != nil {
		return nil, err
	}
	if params.Target != nil {
		if err := p.Check(); err != nil {
			return nil, err
		}
		if err := s.checkTarget(ctx, params.Target.HTTP.URL); err != nil {
			return nil, err
		}
	}
	var secret *string
	v, err := records.Update(ctx, s.db, p, eventDestinationForm.Form, id, func(v *storedDestination, rec *store.Record) error {
		if params.Description != nil {
			v.Description = *params.Description
		}
		if params.Metadata != nil {
			v.Metadata = *params.Metadata
		}
		if params.Format != nil {
			v.Format = *params.Format
		}
		if params.Target != nil {
			h := params.Target.HTTP
			v.Target.HTTP = &events.HTTPTarget{URL: h.URL, Headers: maps.Clone(h.Headers)}
			secret = h.Secret
			if h.Secret != nil {
				v.SealedSecret = s.sealer.Seal([]byte(*h.Secret), secretAAD(rec.AccountID, rec.ID))
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := v.Destination
	s.presentDestination(&out, store.Record{})
	if err := s.withDelivery(ctx, p.AccountID, &out); err != nil {
		return nil, err
	}
	out.Target.HTTP.Secret = secret
	return &out, nil
}

// DeleteEventDestination deletes an event destination and the state of
// delivery to it (DELETE /event_destinations/{id}). It fails with a
// conflict naming the subscriptions while any sends to it.
func (s *Service) DeleteEventDestination(ctx context.Context, p Principal, id string) error {
	return records.Remove(ctx, s.db, p, eventDestinationKind, id)
}
