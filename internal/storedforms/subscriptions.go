package storedforms

import (
	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/store"
)

// Subscription returns the stored form of event subscriptions, of kind k.
func Subscription(k *records.Kind) records.Form[events.Subscription] {
	return records.PlainForm(k,
		func(v *events.Subscription) *subscriptionDoc {
			return &subscriptionDoc{records.Common{CreatedAt: v.CreatedAt, Description: v.Description, Metadata: v.Metadata}, records.RefIDs(v.Destinations)}
		},
		func(d *subscriptionDoc, rec store.Record) *events.Subscription {
			return &events.Subscription{ID: rec.ID, CreatedAt: d.CreatedAt, Description: d.Description, Metadata: d.Metadata,
				Destinations: records.IDRefs(d.DestinationIDs)}
		})
}

// The stored forms of event subscriptions and sources (see package internal/records). A
// source's subscription is its record's parent.
type subscriptionDoc struct {
	records.Common
	DestinationIDs []string `json:"destination_ids,omitempty"`
}
