package storedforms

import (
	"github.com/edgeplane/edgeplane/internal/records"

	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/store"
)

// EndpointConfiguration returns the stored form of endpoint configurations, of kind k.
func EndpointConfiguration(k *records.Kind) records.Form[domains.EndpointConfiguration] {
	return records.PlainForm(k,
		func(c *domains.EndpointConfiguration) *endpointConfigDoc {
			return &endpointConfigDoc{Common: records.Common{CreatedAt: c.CreatedAt, Description: c.Description, Metadata: c.Metadata}, Type: c.Type}
		},
		func(d *endpointConfigDoc, rec store.Record) *domains.EndpointConfiguration {
			return &domains.EndpointConfiguration{ID: rec.ID, CreatedAt: d.CreatedAt, Description: d.Description, Metadata: d.Metadata, Type: d.Type}
		})
}

// endpointConfigDoc is the stored form of an endpoint configuration (see
// package internal/records).
type endpointConfigDoc struct {
	records.Common
	Type string `json:"type"`
}
