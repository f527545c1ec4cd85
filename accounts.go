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
	"time"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/identity"
	"github.com/edgeplane/edgeplane/internal/ids"
	"github.com/edgeplane/edgeplane/internal/validate"
	"github.com/edgeplane/edgeplane/store"
)

// Identifier prefixes of the records the host manages.
const (
	AccountPrefix = "acct_"
	UserPrefix    = identity.UserPrefix
	BotPrefix     = identity.BotPrefix
	APIKeyPrefix  = identity.APIKeyPrefix
)

// APIKeySecretPrefix starts every API key secret, so that leaked keys are
// easy to recognise in logs and by secret scanners.
const APIKeySecretPrefix = "epk_"

// Account is a tenant: every resource belongs to exactly one account, and a
// caller never sees another account's resources.
type Account struct {
	ID        string    `json:"id"`
	CreatedAt time.Time `json:"created_at"`
	Name      string    `json:"name"`
}

// AccountParams are the fields of a new account.
type AccountParams struct {
	// Name is a display name, 1 to 255 bytes.
	Name string `json:"name" validate:"required,maxbytes=255"`
}

// Subject is a user or a bot of an account: who acts. Its ID tells which
// (usr_ or bot_).
type Subject struct {
	ID        string    `json:"id"`
	AccountID string    `json:"account_id"`
	CreatedAt time.Time `json:"created_at"`
	Name      string    `json:"name"`
	// Admin subjects may, among other things, create credentials owned by
	// another subject of the account.
	Admin bool `json:"admin"`
	// Active is false for a deactivated bot, whose API keys and
	// credentials are refused; users are always active.
	Active bool `json:"active"`
}

// SubjectParams are the fields of a new user or bot.
type SubjectParams struct {
	// Name is a display name, 1 to 255 bytes.
	Name string `json:"name" validate:"required,maxbytes=255"`
	// Admin makes the subject an admin of its account.
	Admin bool `json:"admin"`
}

// APIKeyParams are the fields of a new API key.
type APIKeyParams struct {
	// OwnerID is the user or bot the key acts as. Required.
	OwnerID string `json:"owner_id" validate:"required"`
	// Description says who or what uses the key; at most 255 bytes.
	Description string `json:"description" validate:"maxbytes=255"`
	// Metadata is user-defined data; at most 4096 bytes.
	Metadata string `json:"metadata" validate:"maxbytes=4096"`
	// Secret, when set, is the key's secret instead of a generated one: for
	// hosts that provision a known key (from configuration or the
	// environment). It must start with [APIKeySecretPrefix] and be 36 to
	// 256 bytes long (at least 32 bytes after the prefix). Never read from
	// JSON.
	Secret string `json:"-"`
}

// The stored forms of accounts, users and bots, and API keys (see
// forms.go). A subject's account is its record's; an API key's secret is
// stored only as the hash in its lookup key.
type (
	accountDoc struct {
		CreatedAt time.Time `json:"created_at"`
		Name      string    `json:"name"`
	}
	subjectDoc struct {
		CreatedAt time.Time `json:"created_at"`
		Name      string    `json:"name"`
		Admin     bool      `json:"admin,omitempty"`
		Inactive  bool      `json:"inactive,omitempty"`
	}
	apiKeyDoc struct {
		common
		OwnerID string `json:"owner_id"`
	}
)

var (
	accountForm = plainForm(&accountKind,
		func(a *Account) *accountDoc { return &accountDoc{CreatedAt: a.CreatedAt, Name: a.Name} },
		func(d *accountDoc, rec store.Record) *Account {
			return &Account{ID: rec.ID, CreatedAt: d.CreatedAt, Name: d.Name}
		})
	userForm   = plainForm(&userKind, saveSubject, loadSubject)
	botForm    = plainForm(&botKind, saveSubject, loadSubject)
	apiKeyForm = plainForm(&apiKeyKind,
		func(k *identity.APIKey) *apiKeyDoc {
			return &apiKeyDoc{common: common{k.CreatedAt, k.Description, k.Metadata}, OwnerID: k.OwnerID}
		},
		func(d *apiKeyDoc, rec store.Record) *identity.APIKey {
			return &identity.APIKey{ID: rec.ID, OwnerID: d.OwnerID, CreatedAt: d.CreatedAt, Description: d.Description, Metadata: d.Metadata}
		})
)

func saveSubject(sub *Subject) *subjectDoc {
	return &subjectDoc{CreatedAt: sub.CreatedAt, Name: sub.Name, Admin: sub.Admin, Inactive: !sub.Active}
}

func loadSubject(d *subjectDoc, rec store.Record) *Subject {
	return &Subject{ID: rec.ID, AccountID: rec.AccountID, CreatedAt: d.CreatedAt, Name: d.Name, Admin: d.Admin, Active: !d.Inactive}
}

// createAccount is [Host.CreateAccount].
func (s *Service) createAccount(ctx context.Context, params AccountParams) (*Account, error) {
	if err := validate.Struct(params); err != nil {
		return nil, err
	}
	a := &Account{ID: s.ids.New(AccountPrefix), CreatedAt: s.timestamp(), Name: params.Name}
	rec := store.Record{Kind: KindAccount, AccountID: a.ID, ID: a.ID}
	if err := accountForm.encode(s, a, &rec); err != nil {
		return nil, err
	}
	if err := s.store.Create(ctx, rec); err != nil {
		return nil, s.storeErr(err, accountKind, a.ID)
	}
	return a, nil
}

// createUser is [Host.CreateUser].
func (s *Service) createUser(ctx context.Context, accountID string, params SubjectParams) (*Subject, error) {
	return s.createSubject(ctx, accountID, userForm, params)
}

// createBot is [Host.CreateBot].
func (s *Service) createBot(ctx context.Context, accountID string, params SubjectParams) (*Subject, error) {
	return s.createSubject(ctx, accountID, botForm, params)
}

func (s *Service) createSubject(ctx context.Context, accountID string, f form[Subject], params SubjectParams) (*Subject, error) {
	if err := validate.Struct(params); err != nil {
		return nil, err
	}
	if !ids.Valid(accountID, AccountPrefix) {
		return nil, accountKind.notFound(accountID)
	}
	sub := &Subject{ID: s.ids.New(f.prefix), AccountID: accountID, CreatedAt: s.timestamp(), Name: params.Name, Admin: params.Admin, Active: true}
	rec := store.Record{Kind: f.kind, AccountID: accountID, ID: sub.ID, ParentID: accountID}
	if err := f.encode(s, sub, &rec); err != nil {
		return nil, err
	}
	err := s.store.Create(ctx, rec)
	var miss *store.MissingRefError
	if errors.As(err, &miss) {
		return nil, accountKind.notFound(accountID)
	}
	if err != nil {
		return nil, s.storeErr(err, *f.kindInfo, sub.ID)
	}
	return sub, nil
}

// subjectForm returns the form of a subject ID, or false.
func subjectForm(id string) (form[Subject], bool) {
	switch {
	case ids.Valid(id, UserPrefix):
		return userForm, true
	case ids.Valid(id, BotPrefix):
		return botForm, true
	}
	return form[Subject]{}, false
}

// getSubject is [Host.GetSubject].
func (s *Service) getSubject(ctx context.Context, accountID, id string) (*Subject, error) {
	f, ok := subjectForm(id)
	if !ok {
		return nil, apierr.NotFoundf("user or bot %s not found", echoID(id))
	}
	sub, _, err := f.read(ctx, s, accountID, id)
	if err != nil {
		return nil, s.storeErr(err, *f.kindInfo, id)
	}
	return sub, nil
}

// createAPIKey is [Host.CreateAPIKey].
func (s *Service) createAPIKey(ctx context.Context, accountID string, params APIKeyParams) (*identity.APIKey, error) {
	if err := validate.Struct(params); err != nil {
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
		secret = newSecret(APIKeySecretPrefix)
	} else if !strings.HasPrefix(secret, APIKeySecretPrefix) || len(secret) < len(APIKeySecretPrefix)+32 || len(secret) > 256 {
		return nil, apierr.Invalidf("secret", "must start with %s followed by 32 to %d bytes", APIKeySecretPrefix, 256-len(APIKeySecretPrefix))
	}
	k := &identity.APIKey{ID: s.ids.New(APIKeyPrefix), OwnerID: params.OwnerID, CreatedAt: s.timestamp(),
		Description: params.Description, Metadata: params.Metadata}
	rec := store.Record{Kind: KindAPIKey, AccountID: accountID, ID: k.ID, ParentID: params.OwnerID, Keys: []string{apiKeyLookup(secret)}}
	if err := apiKeyForm.encode(s, k, &rec); err != nil {
		return nil, err
	}
	if err := s.store.Create(s.reporting(ctx, apiKeyKind.event, events.Created), rec); err != nil {
		return nil, s.storeErr(err, apiKeyKind, k.ID)
	}
	s.presentAPIKey(k, rec)
	k.Token = &secret
	return k, nil
}

// deleteAPIKey is [Host.DeleteAPIKey].
func (s *Service) deleteAPIKey(ctx context.Context, accountID, id string) error {
	if !ids.Valid(id, APIKeyPrefix) {
		return apiKeyKind.notFound(id)
	}
	err := s.storeErr(s.store.Delete(s.reporting(ctx, apiKeyKind.event, events.Deleted), KindAPIKey, accountID, id), apiKeyKind, id)
	s.auth.forget(id) // revoked here: at once; on other Services when they read the feed
	return err
}

// errBadKey is the one answer to every failed authentication, so that a
// caller cannot tell an unknown key from a revoked owner.
var errBadKey = apierr.New(apierr.Unauthenticated, "the API key is missing, malformed or unknown")

// Authenticate resolves a presented API key secret to the [Principal] it
// acts for. Any failure is [apierr.Unauthenticated] with the same message.
// The secret is hashed and the stored hash compared in constant time.
func (s *Service) Authenticate(ctx context.Context, secret string) (Principal, error) {
	if !strings.HasPrefix(secret, APIKeySecretPrefix) || len(secret) > 256 {
		return Principal{}, errBadKey
	}
	sum := sha256.Sum256([]byte(secret))
	now := s.now()
	if p, ok := s.auth.get(sum, now); ok {
		return p, nil
	}
	key := "api_key:" + hex.EncodeToString(sum[:]) // apiKeyLookup(secret)
	gen := s.auth.note()
	rec, err := s.store.Lookup(ctx, KindAPIKey, key)
	if err != nil {
		if errors.Is(err, apierr.ErrNotFound) {
			return Principal{}, errBadKey
		}
		return Principal{}, s.storeErr(err, apiKeyKind, "")
	}
	if len(rec.Keys) != 1 || subtle.ConstantTimeCompare([]byte(rec.Keys[0]), []byte(key)) != 1 {
		return Principal{}, errBadKey
	}
	k, err := apiKeyForm.decode(s, rec)
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
	s.auth.put(sum, k.ID, p, now, gen)
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
