package storedforms

import (
	"maps"
	"slices"

	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/store"
)

// DestinationForm returns the stored form of event destinations, of kind k.
func DestinationForm(k *records.Kind) records.Form[Destination] {
	return records.PlainForm(k,
		func(v *Destination) *destinationDoc {
			d := &destinationDoc{Common: records.Common{CreatedAt: v.CreatedAt, Description: v.Description, Metadata: v.Metadata},
				Format: v.Format, SealedSecret: v.SealedSecret}
			if v.Target.HTTP != nil {
				d.URL, d.Headers = v.Target.HTTP.URL, v.Target.HTTP.Headers
			}
			return d
		},
		func(d *destinationDoc, rec store.Record) *Destination {
			return &Destination{Destination: events.Destination{ID: rec.ID, CreatedAt: d.CreatedAt, Description: d.Description, Metadata: d.Metadata,
				Format: d.Format, Target: events.Target{HTTP: &events.HTTPTarget{URL: d.URL, Headers: maps.Clone(d.Headers)}}},
				SealedSecret: slices.Clone(d.SealedSecret)}
		})
}

// Destination is an event destination as the Service holds it:
// the API model and, beside it, the sealed webhook secret.
type Destination struct {
	events.Destination
	SealedSecret []byte
}

// destinationDoc is the stored form of an event destination.
type destinationDoc struct {
	records.Common
	Format       string            `json:"format"`
	URL          string            `json:"url"`
	Headers      map[string]string `json:"headers,omitempty"`
	SealedSecret []byte            `json:"sealed_secret"`
}
