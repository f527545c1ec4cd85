package edgeplane

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/identity"
	"github.com/edgeplane/edgeplane/kinds"
	"github.com/edgeplane/edgeplane/store"
)

// Bootstrapped is what [Host.Bootstrap] found or made.
type Bootstrapped struct {
	// Created is true when the store was empty and Bootstrap made the
	// default account, its admin and the admin's API key.
	Created bool
	// AccountID and AdminID name them (empty when Created is false).
	AccountID, AdminID string
	// APIKey is the admin's key, with its Token (the secret) set: shown
	// once. Nil when Created is false.
	APIKey *identity.APIKey
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
	acct, err := s.createAccount(ctx, identity.AccountParams{Name: "default"})
	if err != nil {
		return nil, err
	}
	admin, err := s.createUser(ctx, acct.ID, identity.SubjectParams{Name: "admin", Admin: true})
	if err != nil {
		return nil, err
	}
	key, err := s.createAPIKey(ctx, acct.ID, identity.CreateAPIKeyParams{OwnerID: admin.ID, Description: "bootstrap admin", Secret: secret})
	if err != nil {
		return nil, err
	}
	return &Bootstrapped{Created: true, AccountID: acct.ID, AdminID: admin.ID, APIKey: key}, nil
}

// The sealing check is a record sealed under the Service's sealing key
// when a store is first used, so that a Service given another key finds
// out at start rather than when it needs a private key. It also records
// the format of the store's documents (package internal/records), so that a Service does
// not serve from a store whose documents it would misread.
const (
	kindSealingCheck = kinds.SealingCheck
	sealingCheckID   = "sealing_check"
	sealingCheckText = "edgeplane sealing check"
	// storeFormat is the format of the stored documents. Format 1 (before
	// the stored forms) stored the API's JSON and sealed the bare
	// sealingCheckText.
	storeFormat = 2
)

// sealingCheckPlain returns the sealed text of the sealing check of a
// store whose documents have format.
func sealingCheckPlain(format int) string {
	return sealingCheckText + "; document format " + strconv.Itoa(format)
}

// checkSealingKey is [Host.CheckSealingKey].
func (s *Service) checkSealingKey(ctx context.Context) error {
	aad := []byte(sealingCheckID)
	rec, err := s.store.Get(ctx, kindSealingCheck, sealingCheckID, sealingCheckID)
	if errors.Is(err, apierr.ErrNotFound) {
		err = s.store.Create(ctx, store.Record{Kind: kindSealingCheck, AccountID: sealingCheckID, ID: sealingCheckID,
			Data: s.sealer.Seal([]byte(sealingCheckPlain(storeFormat)), aad)})
		var dup *store.DuplicateError
		if errors.As(err, &dup) { // another process made it first
			return s.checkSealingKey(ctx)
		}
		return s.db.StoreErr(err, accountKind, "")
	}
	if err != nil {
		return s.db.StoreErr(err, accountKind, "")
	}
	plain, err := s.sealer.Open(rec.Data, aad)
	if err != nil || !strings.HasPrefix(string(plain), sealingCheckText) {
		return apierr.New(apierr.FailedPrecondition,
			"the store's secrets are sealed under another sealing key than this server's; start it with the key the store was first used with")
	}
	format := 1
	if rest, ok := strings.CutPrefix(string(plain), sealingCheckText+"; document format "); ok {
		if format, err = strconv.Atoi(rest); err != nil {
			return apierr.New(apierr.FailedPrecondition, "the store's sealing check is malformed")
		}
	}
	switch {
	case format < storeFormat:
		return apierr.New(apierr.FailedPrecondition,
			"the store was written by an earlier development version of edgeplane (document format %d; this version reads format %d only); start on a new store", format, storeFormat)
	case format > storeFormat:
		return apierr.New(apierr.FailedPrecondition,
			"the store was written by a newer version of edgeplane (document format %d; this version reads format %d); upgrade edgeplane", format, storeFormat)
	}
	return nil
}
