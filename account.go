package edgeplane

import (
	"context"

	"github.com/edgeplane/edgeplane/identity"
	"github.com/edgeplane/edgeplane/internal/cachesync"
	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/internal/storedforms"
	"github.com/edgeplane/edgeplane/store"
)

// Identifier prefixes of the records the host manages.
const (
	AccountPrefix = identity.AccountPrefix
	UserPrefix    = identity.UserPrefix
	BotPrefix     = identity.BotPrefix
	APIKeyPrefix  = identity.APIKeyPrefix
)

// The identity of the kinds this file declares (see kindList).
var accountKind = &records.Kind{StoreKind: KindAccount, Prefix: AccountPrefix, Collection: "accounts", Noun: "account"}

var accountForm = &kind[identity.Account]{Form: storedforms.Account(accountKind), traits: traits{auth: cachesync.AuthForgetAll}}

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
