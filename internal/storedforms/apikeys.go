package storedforms

import (
	"github.com/edgeplane/edgeplane/identity"
	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/store"
)

// APIKey returns the stored form of API keys, of kind k.
func APIKey(k *records.Kind) records.Form[identity.APIKey] {
	return records.PlainForm(k,
		func(k *identity.APIKey) *apiKeyDoc {
			return &apiKeyDoc{Common: records.Common{CreatedAt: k.CreatedAt, Description: k.Description, Metadata: k.Metadata}, OwnerID: k.OwnerID}
		},
		func(d *apiKeyDoc, rec store.Record) *identity.APIKey {
			return &identity.APIKey{ID: rec.ID, OwnerID: d.OwnerID, CreatedAt: d.CreatedAt, Description: d.Description, Metadata: d.Metadata}
		})
}

type apiKeyDoc struct {
	records.Common
	OwnerID string `json:"owner_id"`
}
