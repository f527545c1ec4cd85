package edgeplane

import (
	"context"
	"time"

	"github.com/edgeplane/edgeplane/identity"
	"github.com/edgeplane/edgeplane/internal/cachesync"
	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/store"
)

// Identifier prefixes of the records the host manages.
const (
	AccountPrefix = identity.AccountPrefix
	UserPrefix    = identity.UserPrefix
	BotPrefix     = identity.BotPrefix
	APIKeyPrefix  = identity.APIKeyPrefix
)

// The stored forms of accounts, users and bots, and API keys (see
// package internal/records). A subject's account is its record's; an API key's secret is
// stored only as the hash in its lookup key.
type accountDoc struct {
	CreatedAt time.Time `json:"created_at"`
	Name      string    `json:"name"`
}

// The identity of the kinds this file declares (see kindList).
var accountKind = &records.Kind{StoreKind: KindAccount, Prefix: AccountPrefix, Collection: "accounts", Noun: "account"}

var accountForm = &kind[identity.Account]{Form: records.PlainForm(accountKind,
	func(a *identity.Account) *accountDoc { return &accountDoc{CreatedAt: a.CreatedAt, Name: a.Name} },
	func(d *accountDoc, rec store.Record) *identity.Account {
		return &identity.Account{ID: rec.ID, CreatedAt: d.CreatedAt, Name: d.Name}
	}), traits: traits{auth: cachesync.AuthForgetAll}}

// createAccount is [Host.CreateAccount].
func (s *Service) createAccount(ctx context.Context, params identity.AccountParams) (*identity.Account, error) {
	if err := params.Validate(); err != nil {
		return nil, err
	}
	a := &identity.Account{ID: s.ids.New(AccountPrefix), CreatedAt: s.timestamp(), Name: params.Name}
	rec := store.Record{Kind: KindAccount, AccountID: a.ID, ID: a.ID}
	if err := accountForm.Encode(s.db, a, &rec); err != nil {
		return nil, err
	}
	if err := s.store.Create(ctx, rec); err != nil {
		return nil, s.db.StoreErr(err, accountKind, a.ID)
	}
	return a, nil
}

// listAccounts is [Host.ListAccounts].
func (s *Service) listAccounts(ctx context.Context, opts ListOptions) ([]identity.Account, string, error) {
	return records.HostList(ctx, s.db, accountKind, listQuery(opts), func(rec store.Record) (identity.Account, error) {
		a, err := accountForm.Decode(s.db, rec)
		if err != nil {
			return identity.Account{}, err
		}
		return *a, nil
	})
}
