package storedforms

import (
	"maps"

	"github.com/edgeplane/edgeplane/internal/records"

	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/store"
)

// Backend returns the stored form of tunnel group backends, of kind k.
func Backend(k *records.Kind) records.Form[backends.TunnelGroupBackend] {
	return records.PlainForm(k,
		func(b *backends.TunnelGroupBackend) *backendDoc {
			return &backendDoc{Common: records.Common{CreatedAt: b.CreatedAt, Description: b.Description, Metadata: b.Metadata}, Labels: b.Labels}
		},
		func(d *backendDoc, rec store.Record) *backends.TunnelGroupBackend {
			return &backends.TunnelGroupBackend{ID: rec.ID, CreatedAt: d.CreatedAt, Description: d.Description, Metadata: d.Metadata, Labels: maps.Clone(d.Labels)}
		})
}

// backendDoc is the stored form of a tunnel group backend (see package internal/records):
// its tunnels are computed when it is read, never stored.
type backendDoc struct {
	records.Common
	Labels map[string]string `json:"labels"`
}
