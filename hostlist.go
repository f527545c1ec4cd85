package edgeplane

import (
	"context"

	"github.com/edgeplane/edgeplane/identity"
	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/store"
)

// AccountAPIKey is an API key and the account it belongs to, as
// [Host.ListAPIKeys] lists it. Its Token is always nil: only the
// secret's hash is stored.
type AccountAPIKey struct {
	// AccountID owns the key.
	AccountID string
	identity.APIKey
}

// ListUsers returns up to opts.Limit users (0 means [MaxPageSize]) of
// every account, newest first, and the cursor of the next page ("" on
// the last), for operators recovering access (edgeplane admin
// list-users). opts.Filter is not applied. A host operation.
func (h *Host) ListUsers(ctx context.Context, opts ListOptions) ([]identity.Subject, string, error) {
	return h.s.listSubjects(ctx, userForm.Form, opts)
}

// ListBots is [Host.ListUsers] for bot users.
func (h *Host) ListBots(ctx context.Context, opts ListOptions) ([]identity.Subject, string, error) {
	return h.s.listSubjects(ctx, botForm, opts)
}

func (s *Service) listSubjects(ctx context.Context, f records.Form[identity.Subject], opts ListOptions) ([]identity.Subject, string, error) {
	return records.HostList(ctx, s.db, f.Kind, listQuery(opts), func(rec store.Record) (identity.Subject, error) {
		sub, err := f.Decode(s.db, rec)
		if err != nil {
			return identity.Subject{}, err
		}
		return *sub, nil
	})
}

// ListAPIKeys returns up to opts.Limit API keys (0 means [MaxPageSize])
// of every account, newest first, and the cursor of the next page (""
// on the last), for operators recovering access (edgeplane admin
// list-api-keys): IDs, descriptions and owners, never a secret.
// opts.Filter is not applied. A host operation.
func (h *Host) ListAPIKeys(ctx context.Context, opts ListOptions) ([]AccountAPIKey, string, error) {
	s := h.s
	return records.HostList(ctx, s.db, apiKeyKind, listQuery(opts), func(rec store.Record) (AccountAPIKey, error) {
		k, err := apiKeyForm.Decode(s.db, rec)
		if err != nil {
			return AccountAPIKey{}, err
		}
		s.presentAPIKey(k, rec)
		return AccountAPIKey{AccountID: rec.AccountID, APIKey: *k}, nil
	})
}
