package edgeplane

import (
	"context"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/store"
)

// listAccounts is [Host.ListAccounts].
func (s *Service) listAccounts(ctx context.Context, opts ListOptions) ([]Account, string, error) {
	limit := opts.Limit
	switch {
	case limit == 0:
		limit = MaxPageSize
	case limit < 1 || limit > MaxPageSize:
		return nil, "", apierr.Invalidf("limit", "must be between 1 and %d, got %d", MaxPageSize, limit)
	}
	recs, err := s.store.List(ctx, store.Query{Kind: KindAccount, BeforeID: opts.BeforeID, Limit: limit + 1})
	if err != nil {
		return nil, "", s.storeErr(err, accountKind, "")
	}
	out := make([]Account, 0, min(len(recs), limit))
	next := ""
	for i, rec := range recs {
		if i == limit {
			next = recs[limit-1].ID
			break
		}
		a, err := decode[Account](rec)
		if err != nil {
			return nil, "", err
		}
		out = append(out, *a)
	}
	return out, next, nil
}

// Bootstrapped is what [Host.Bootstrap] found or made.
type Bootstrapped struct {
	// Created is true when the store was empty and Bootstrap made the
	// default account, its admin and the admin's API key.
	Created bool
	// AccountID and AdminID name them (empty when Created is false).
	AccountID, AdminID string
	// APIKey is the admin's key, with its Token (the secret) set: shown
	// once. Nil when Created is false.
	APIKey *APIKey
}

// bootstrap is [Host.Bootstrap].
func (s *Service) bootstrap(ctx context.Context, secret string) (*Bootstrapped, error) {
	accounts, _, err := s.listAccounts(ctx, ListOptions{Limit: 1})
	if err != nil {
		return nil, err
	}
	if len(accounts) > 0 {
		return &Bootstrapped{}, nil
	}
	acct, err := s.createAccount(ctx, AccountParams{Name: "default"})
	if err != nil {
		return nil, err
	}
	admin, err := s.createUser(ctx, acct.ID, SubjectParams{Name: "admin", Admin: true})
	if err != nil {
		return nil, err
	}
	key, err := s.createAPIKey(ctx, acct.ID, APIKeyParams{OwnerID: admin.ID, Description: "bootstrap admin", Secret: secret})
	if err != nil {
		return nil, err
	}
	return &Bootstrapped{Created: true, AccountID: acct.ID, AdminID: admin.ID, APIKey: key}, nil
}
