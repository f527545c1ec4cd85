package storedforms

import (
	"time"

	"github.com/edgeplane/edgeplane/identity"
	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/store"
)

// Account returns the stored form of accounts, of kind k.
func Account(k *records.Kind) records.Form[identity.Account] {
	return records.PlainForm(k,
		func(a *identity.Account) *accountDoc { return &accountDoc{CreatedAt: a.CreatedAt, Name: a.Name} },
		func(d *accountDoc, rec store.Record) *identity.Account {
			return &identity.Account{ID: rec.ID, CreatedAt: d.CreatedAt, Name: d.Name}
		})
}

// The stored forms of accounts, users and bots, and API keys (see
// package internal/records). A subject's account is its record's; an API key's secret is
// stored only as the hash in its lookup key.
type accountDoc struct {
	CreatedAt time.Time `json:"created_at"`
	Name      string    `json:"name"`
}
