package edgeplane

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/identity"
	"github.com/edgeplane/edgeplane/internal/cachesync"
	"github.com/edgeplane/edgeplane/internal/ids"
	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/internal/storedforms"
	"github.com/edgeplane/edgeplane/store"
)

var apiKeyKind = &records.Kind{StoreKind: KindAPIKey, Prefix: APIKeyPrefix, Collection: "api_keys", Noun: "API key", Event: "api_key"}

var apiKeyForm = &kind[identity.APIKey]{Form: storedforms.APIKey(apiKeyKind), present: (*Service).presentAPIKey, traits: traits{auth: cachesync.AuthForgetRecord}}

// createAPIKey is [Host.CreateAPIKey].
func (s *Service) createAPIKey(ctx context.Context, accountID string, params identity.CreateAPIKeyParams) (*identity.APIKey, error) {
	if params.OwnerID == "" {
		return nil, apierr.Invalidf("owner_id", "is required")
	}
	if err := params.Validate(); err != nil {
		return nil, err
	}
	if _, err := s.getSubject(ctx, accountID, params.OwnerID); err != nil {
		if errors.Is(err, apierr.ErrNotFound) {
			return nil, apierr.Invalidf("owner_id", "must name a user or bot of the account; %s not found", params.OwnerID)
		}
		return nil, err
	}
	secret := params.Secret
	if secret == "" {
		secret = newSecret(identity.APIKeySecretPrefix)
	} else if !strings.HasPrefix(secret, identity.APIKeySecretPrefix) || len(secret) < len(identity.APIKeySecretPrefix)+32 || len(secret) > 256 {
		return nil, apierr.Invalidf("secret", "must start with %s followed by 32 to %d bytes", identity.APIKeySecretPrefix, 256-len(identity.APIKeySecretPrefix))
	}
	k := &identity.APIKey{ID: s.ids.New(APIKeyPrefix), OwnerID: params.OwnerID, CreatedAt: s.timestamp(),
		Description: params.Description, Metadata: params.Metadata}
	rec := store.Record{Kind: KindAPIKey, AccountID: accountID, ID: k.ID, ParentID: params.OwnerID, Keys: []string{apiKeyLookup(secret)}}
	if err := apiKeyForm.Encode(s.db, k, &rec); err != nil {
		return nil, err
	}
	if err := s.store.Create(ctx, noted(rec, s.db.Note(apiKeyKind.Event, events.Created))); err != nil {
		return nil, s.db.StoreErr(err, apiKeyKind, k.ID)
	}
	s.presentAPIKey(k, rec)
	k.Token = &secret
	return k, nil
}

// deleteAPIKey is [Host.DeleteAPIKey].
func (s *Service) deleteAPIKey(ctx context.Context, accountID, id string) error {
	if !ids.Valid(id, APIKeyPrefix) {
		return apiKeyKind.NotFound(id)
	}
	err := s.db.StoreErr(s.store.Delete(ctx, KindAPIKey, accountID, id, s.db.Note(apiKeyKind.Event, events.Deleted)), apiKeyKind, id)
	s.auth.Forget(id) // revoked here: at once; on other Services when they read the feed
	return err
}

// errBadKey is the one answer to every failed authentication, so that a
// caller cannot tell an unknown key from a revoked owner.
var errBadKey = apierr.New(apierr.Unauthenticated, "the API key is missing, malformed or unknown")

// Authenticate resolves a presented API key secret to the [Principal] it
// acts for. Any failure is [apierr.Unauthenticated] with the same message.
// The secret is hashed and the stored hash compared in constant time.
func (s *Service) Authenticate(ctx context.Context, secret string) (Principal, error) {
	if !strings.HasPrefix(secret, identity.APIKeySecretPrefix) || len(secret) > 256 {
		return Principal{}, errBadKey
	}
	sum := sha256.Sum256([]byte(secret))
	now := s.now()
	if _, ok := s.auth.Get(sum, now); ok {
		// Only once the cache reflects every change committed before
		// this call (a key revoked, or its owner deactivated, through
		// another replica): see package internal/fence.
		if s.fence.Wait(ctx) == nil {
			if p, ok := s.auth.Get(sum, now); ok {
				return p, nil
			}
		}
	}
	key := "api_key:" + hex.EncodeToString(sum[:]) // apiKeyLookup(secret)
	gen := s.auth.Note()
	rec, err := s.store.Lookup(ctx, KindAPIKey, key)
	if err != nil {
		if errors.Is(err, apierr.ErrNotFound) {
			return Principal{}, errBadKey
		}
		return Principal{}, s.db.StoreErr(err, apiKeyKind, "")
	}
	if len(rec.Keys) != 1 || subtle.ConstantTimeCompare([]byte(rec.Keys[0]), []byte(key)) != 1 {
		return Principal{}, errBadKey
	}
	k, err := apiKeyForm.Decode(s.db, rec)
	if err != nil {
		return Principal{}, err
	}
	sub, err := s.getSubject(ctx, rec.AccountID, k.OwnerID)
	if err != nil {
		if errors.Is(err, apierr.ErrNotFound) {
			return Principal{}, errBadKey
		}
		return Principal{}, err
	}
	if !sub.Active {
		return Principal{}, errBadKey // a deactivated bot
	}
	p := Principal{AccountID: sub.AccountID, SubjectID: sub.ID, Admin: sub.Admin}
	s.auth.Put(sum, k.ID, p, now, gen)
	return p, nil
}

func apiKeyLookup(secret string) string { return "api_key:" + hashSecret(secret) }

func hashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// newSecret returns prefix followed by 256 random bits, base64url-encoded.
func newSecret(prefix string) string {
	var b [32]byte
	rand.Read(b[:]) // never fails
	return prefix + base64.RawURLEncoding.EncodeToString(b[:])
}

func (s *Service) presentAPIKey(k *identity.APIKey, _ store.Record) {
	k.URI = s.uri(apiKeyKind.Collection, k.ID)
	k.Token = nil
}

// CreateAPIKey creates an API key (POST /api_keys). The result is the only
// one that carries the secret (token): only its hash is stored. owner_id
// defaults to the caller; only an admin may name another user or bot of
// the account.
func (s *Service) CreateAPIKey(ctx context.Context, p Principal, params identity.CreateAPIKeyParams) (*identity.APIKey, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	if err := params.Validate(); err != nil {
		return nil, err
	}
	if params.Secret != "" {
		return nil, apierr.Invalidf("secret", "only the host may choose a key's secret (Host.CreateAPIKey)")
	}
	owner, err := s.ownerFor(ctx, p, params.OwnerID)
	if err != nil {
		return nil, err
	}
	return s.createAPIKey(ctx, p.AccountID, identity.CreateAPIKeyParams{OwnerID: owner, Description: params.Description, Metadata: params.Metadata})
}

// ownedKey fails with not-found unless p may manage the key k: an admin
// any key of the account, anyone else their own.
func ownedKey(p Principal, k *identity.APIKey) error {
	if !p.Admin && k.OwnerID != p.SubjectID {
		return apiKeyKind.NotFound(k.ID)
	}
	return nil
}

// GetAPIKey returns an API key (GET /api_keys/{id}); its token is always
// nil.
func (s *Service) GetAPIKey(ctx context.Context, p Principal, id string) (*identity.APIKey, error) {
	k, rec, err := records.Get(ctx, s.db, p, apiKeyForm.Form, id)
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
	return list(ctx, s, p, apiKeyForm.Form, owner, apiKeyKind.Collection, opts, s.presentAPIKey)
}

// UpdateAPIKey changes the description and metadata present in params
// (PATCH /api_keys/{id}); the owner and secret never change.
func (s *Service) UpdateAPIKey(ctx context.Context, p Principal, id string, params identity.UpdateAPIKeyParams) (*identity.APIKey, error) {
	if err := params.Validate(); err != nil {
		return nil, err
	}
	var refused error
	k, err := records.Update(ctx, s.db, p, apiKeyForm.Form, id, func(k *identity.APIKey, _ *store.Record) error {
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
	k, rec, err := records.Get(ctx, s.db, p, apiKeyForm.Form, id)
	if err != nil {
		return err
	}
	if err := ownedKey(p, k); err != nil {
		return err
	}
	// Delete the version read, so that the ownership checked is the
	// ownership of what is deleted.
	err = s.store.DeleteIf(ctx, KindAPIKey, p.AccountID, id, rec.Version, s.db.Note(apiKeyKind.Event, events.Deleted))
	s.auth.Forget(id)
	var ve *store.VersionError
	if errors.As(err, &ve) {
		return apierr.New(apierr.Conflict, "API key %s changed while it was being deleted; try again", id)
	}
	return s.db.StoreErr(err, apiKeyKind, id)
}
