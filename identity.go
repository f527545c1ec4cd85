package edgeplane

import (
	"context"
	"errors"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/identity"
	"github.com/edgeplane/edgeplane/store"
)

// Bot users and API keys over the API (package identity has the models
// and the decisions). Bots are subjects (KindBot records, children of
// their account, stored as subjectDoc); API keys are children of their
// owner, so deleting a bot deletes its keys.

// botRecord is a bot user as the Service holds it: the API model and the
// admin flag a host may give a bot ([Host.CreateBot]), which the API
// neither shows nor changes.
type botRecord struct {
	identity.BotUser
	Admin bool
}

var botUserForm = plainForm(&botKind,
	func(b *botRecord) *subjectDoc {
		return &subjectDoc{CreatedAt: b.CreatedAt, Name: b.Name, Admin: b.Admin, Inactive: !b.Active}
	},
	func(d *subjectDoc, rec store.Record) *botRecord {
		return &botRecord{BotUser: identity.BotUser{ID: rec.ID, CreatedAt: d.CreatedAt, Name: d.Name, Active: !d.Inactive}, Admin: d.Admin}
	})

func (s *Service) presentBotRecord(b *botRecord, _ store.Record) {
	b.URI = s.uri(botKind.collection, b.ID)
}

func (s *Service) presentAPIKey(k *identity.APIKey, _ store.Record) {
	k.URI = s.uri(apiKeyKind.collection, k.ID)
	k.Token = nil
}

// checkBotAdmin fails unless p is a valid principal of an admin, who alone
// manage bot users.
func (p Principal) checkBotAdmin() error {
	if err := p.check(); err != nil {
		return err
	}
	if !p.Admin {
		return apierr.New(apierr.PermissionDenied, "only an admin of the account may manage bot users")
	}
	return nil
}

// CreateBotUser creates a bot user (POST /bot_users); admins only. It is
// active unless params say otherwise.
func (s *Service) CreateBotUser(ctx context.Context, p Principal, params identity.CreateBotUserParams) (*identity.BotUser, error) {
	if err := p.checkBotAdmin(); err != nil {
		return nil, err
	}
	if err := params.Validate(); err != nil {
		return nil, err
	}
	b := &botRecord{BotUser: params.BotUser()}
	b.ID, b.CreatedAt = s.ids.New(BotPrefix), s.timestamp()
	if err := create(ctx, s, p, botUserForm, b.ID, p.AccountID, b, nil); err != nil {
		return nil, err
	}
	s.presentBotRecord(b, store.Record{})
	return &b.BotUser, nil
}

// GetBotUser returns a bot user of the account (GET /bot_users/{id}).
func (s *Service) GetBotUser(ctx context.Context, p Principal, id string) (*identity.BotUser, error) {
	b, rec, err := get(ctx, s, p, botUserForm, id)
	if err != nil {
		return nil, err
	}
	s.presentBotRecord(b, rec)
	return &b.BotUser, nil
}

// ListBotUsers returns a page of the account's bot users, newest first
// (GET /bot_users).
func (s *Service) ListBotUsers(ctx context.Context, p Principal, opts ListOptions) (*Page[identity.BotUser], error) {
	page, err := list(ctx, s, p, botUserForm, p.AccountID, botKind.collection, opts, s.presentBotRecord)
	if err != nil {
		return nil, err
	}
	return pageOf(page, func(b *botRecord) identity.BotUser { return b.BotUser }), nil
}

// UpdateBotUser changes the fields present in params (PATCH
// /bot_users/{id}); admins only. Deactivating a bot refuses its API keys
// and credentials from the moment the update returns.
func (s *Service) UpdateBotUser(ctx context.Context, p Principal, id string, params identity.UpdateBotUserParams) (*identity.BotUser, error) {
	if err := p.checkBotAdmin(); err != nil {
		return nil, err
	}
	if err := params.Validate(); err != nil {
		return nil, err
	}
	b, err := update(ctx, s, p, botUserForm, id, func(b *botRecord, _ *store.Record) error {
		params.Apply(&b.BotUser)
		return nil
	})
	s.auth.clear() // whatever happened: a deactivation applies at once
	if err != nil {
		return nil, err
	}
	s.presentBotRecord(b, store.Record{})
	return &b.BotUser, nil
}

// DeleteBotUser deletes a bot user and its API keys (DELETE
// /bot_users/{id}); admins only. A bot that owns credentials cannot be
// deleted: the error is a conflict naming them.
func (s *Service) DeleteBotUser(ctx context.Context, p Principal, id string) error {
	if err := p.checkBotAdmin(); err != nil {
		return err
	}
	err := s.remove(ctx, p, botKind, id)
	s.auth.clear()
	return err
}

// CreateAPIKey creates an API key (POST /api_keys). The result is the only
// one that carries the secret (token): only its hash is stored. owner_id
// defaults to the caller; only an admin may name another user or bot of
// the account.
func (s *Service) CreateAPIKey(ctx context.Context, p Principal, params identity.CreateAPIKeyParams) (*identity.APIKey, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	if err := params.Validate(); err != nil {
		return nil, err
	}
	owner, err := s.ownerFor(ctx, p, params.OwnerID)
	if err != nil {
		return nil, err
	}
	return s.createAPIKey(ctx, p.AccountID, APIKeyParams{OwnerID: owner, Description: params.Description, Metadata: params.Metadata})
}

// ownedKey fails with not-found unless p may manage the key k: an admin
// any key of the account, anyone else their own.
func ownedKey(p Principal, k *identity.APIKey) error {
	if !p.Admin && k.OwnerID != p.SubjectID {
		return apiKeyKind.notFound(k.ID)
	}
	return nil
}

// GetAPIKey returns an API key (GET /api_keys/{id}); its token is always
// nil.
func (s *Service) GetAPIKey(ctx context.Context, p Principal, id string) (*identity.APIKey, error) {
	k, rec, err := get(ctx, s, p, apiKeyForm, id)
	if err != nil {
		return nil, err
	}
	if err := ownedKey(p, k); err != nil {
		return nil, err
	}
	s.presentAPIKey(k, rec)
	return k, nil
}

// ListAPIKeys returns a page of API keys, newest first (GET /api_keys,
// list field "keys"): every key of the account for an admin, the caller's
// own for anyone else.
func (s *Service) ListAPIKeys(ctx context.Context, p Principal, opts ListOptions) (*Page[identity.APIKey], error) {
	owner := ""
	if !p.Admin {
		owner = p.SubjectID
	}
	return list(ctx, s, p, apiKeyForm, owner, apiKeyKind.collection, opts, s.presentAPIKey)
}

// UpdateAPIKey changes the description and metadata present in params
// (PATCH /api_keys/{id}); the owner and secret never change.
func (s *Service) UpdateAPIKey(ctx context.Context, p Principal, id string, params identity.UpdateAPIKeyParams) (*identity.APIKey, error) {
	if err := params.Validate(); err != nil {
		return nil, err
	}
	var refused error
	k, err := update(ctx, s, p, apiKeyForm, id, func(k *identity.APIKey, _ *store.Record) error {
		if refused = ownedKey(p, k); refused != nil {
			return refused
		}
		params.Apply(k)
		return nil
	})
	if refused != nil {
		return nil, refused
	}
	if err != nil {
		return nil, err
	}
	s.presentAPIKey(k, store.Record{})
	return k, nil
}

// DeleteAPIKey deletes an API key (DELETE /api_keys/{id}): it stops
// authenticating at once on this Service, and on others sharing the store
// as soon as they read the deletion from the change feed.
func (s *Service) DeleteAPIKey(ctx context.Context, p Principal, id string) error {
	k, rec, err := get(ctx, s, p, apiKeyForm, id)
	if err != nil {
		return err
	}
	if err := ownedKey(p, k); err != nil {
		return err
	}
	// Delete the version read, so that the ownership checked is the
	// ownership of what is deleted.
	err = s.store.DeleteIf(s.reporting(ctx, apiKeyKind.event, events.Deleted), KindAPIKey, p.AccountID, id, rec.Version)
	s.auth.forget(id)
	var ve *store.VersionError
	if errors.As(err, &ve) {
		return apierr.New(apierr.Conflict, "API key %s changed while it was being deleted; try again", id)
	}
	return s.storeErr(err, apiKeyKind, id)
}

// pageOf returns page with its items converted by conv.
func pageOf[A, B any](page *Page[A], conv func(*A) B) *Page[B] {
	out := &Page[B]{Items: make([]B, len(page.Items)), URI: page.URI, NextPageURI: page.NextPageURI, NextBeforeID: page.NextBeforeID}
	for i := range page.Items {
		out.Items[i] = conv(&page.Items[i])
	}
	return out
}
