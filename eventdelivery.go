package edgeplane

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/store"
	"github.com/edgeplane/edgeplane/webhook"
)

// EventDelivery returns what package webhook delivers from: every
// account's event destinations with their opened keys, the state of
// delivery to each (kept in the store), and each destination's events
// read from the change feed after a revision. Run webhook.Run with it on
// one replica at a time (internal/elect).
func (h *Host) EventDelivery() webhook.Source { return h.s.delivery.Source() }

// deliveryRecords is what package internal/delivery reads through the
// Service's kinds (its Records): event destinations, subscriptions'
// sources and the events of changes, whose stored forms and
// presentation are the root's.
type deliveryRecords struct{ s *Service }

// Destination implements delivery.Records.
func (r deliveryRecords) Destination(rec store.Record) (webhook.Destination, string, error) {
	s := r.s
	v, err := eventDestinationForm.Decode(s.db, rec)
	if err != nil {
		return webhook.Destination{}, "event delivery: cannot read a destination; it gets no events", err
	}
	secret, err := s.sealer.Open(v.SealedSecret, secretAAD(rec.AccountID, rec.ID))
	if err != nil {
		return webhook.Destination{}, "event delivery: cannot open a destination's secret (another sealing key?); it gets no events", err
	}
	key, err := events.ParseSecret(string(secret))
	if err != nil || v.Target.HTTP == nil {
		return webhook.Destination{}, "event delivery: a destination's secret or target is malformed; it gets no events", nil
	}
	return webhook.Destination{AccountID: rec.AccountID, ID: rec.ID, URL: v.Target.HTTP.URL, Headers: v.Target.HTTP.Headers, Key: key}, "", nil
}

// Event implements delivery.Records.
func (r deliveryRecords) Event(c store.Change) (string, time.Time, bool) {
	typ, at, _, ok := r.s.eventOf(c)
	return typ, at, ok
}

// Object implements delivery.Records.
func (r deliveryRecords) Object(ctx context.Context, c store.Change) ([]byte, error) {
	d, ok := declOf(c.Kind)
	if !ok {
		return nil, errors.New("a change of a kind the Service does not declare")
	}
	return r.s.changeObject(ctx, c, d)
}

// SourceType implements delivery.Records.
func (r deliveryRecords) SourceType(rec store.Record) (string, error) {
	var doc sourceDoc
	if err := json.Unmarshal(rec.Data, &doc); err != nil {
		return "", err
	}
	return doc.Type, nil
}
