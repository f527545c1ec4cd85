package edgeplane

import (
	"context"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/identity"
	"github.com/edgeplane/edgeplane/internal/cachesync"
	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/internal/storedforms"
	"github.com/edgeplane/edgeplane/store"
)

// Bot users and API keys over the API (package identity has the models
// and the decisions). Bots are subjects (KindBot records, children of
// their account, stored as package internal/storedforms' subject document); API keys are children of their
// owner, so deleting a bot deletes its keys.

// botRecord is a bot user as the Service holds it: [storedforms.Bot].
type botRecord = storedforms.Bot

// The identity of the kind this file declares (see kindList).
var (
	botKind = &records.Kind{StoreKind: KindBot, Prefix: BotPrefix, Collection: "bot_users", Noun: "bot user", Event: "bot_user", Parent: accountKind}
)

var botUserForm = &kind[botRecord]{Form: storedforms.BotForm(botKind), present: (*Service).presentBotRecord, traits: traits{auth: cachesync.AuthForgetAll}, shown: showBotUser}

// showBotUser shows a bot as the API does: without the admin flag a host
// may give it.
func showBotUser(_ context.Context, _ *Service, b *botRecord, _ store.Record) (any, error) {
	return &b.BotUser, nil
}

func (s *Service) presentBotRecord(b *botRecord, _ store.Record) {
	b.URI = s.uri(botKind.Collection, b.ID)
}

// checkBotAdmin fails unless p is a valid principal of an admin, who alone
// manage bot users.
func checkBotAdmin(p Principal) error {
	if err := p.Check(); err != nil {
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
	if err := checkBotAdmin(p); err != nil {
		return nil, err
	}
	if err := params.Validate(); err != nil {
		return nil, err
	}
	b := &botRecord{BotUser: params.BotUser()}
	b.ID, b.CreatedAt = s.ids.New(BotPrefix), s.timestamp()
	if err := records.Create(ctx, s.db, p, botUserForm.Form, b.ID, p.AccountID, b, nil); err != nil {
		return nil, err
	}
	s.presentBotRecord(b, store.Record{})
	return &b.BotUser, nil
}

// GetBotUser returns a bot user of the account (GET /bot_users/{id}).
func (s *Service) GetBotUser(ctx context.Context, p Principal, id string) (*identity.BotUser, error) {
	b, rec, err := records.Get(ctx, s.db, p, botUserForm.Form, id)
	if err != nil {
		return nil, err
	}
	s.presentBotRecord(b, rec)
	return &b.BotUser, nil
}

// ListBotUsers returns a page of the account's bot users, newest first
// (GET /bot_users).
func (s *Service) ListBotUsers(ctx context.Context, p Principal, opts ListOptions) (*Page[identity.BotUser], error) {
	page, err := list(ctx, s, p, botUserForm.Form, p.AccountID, botKind.Collection, opts, s.presentBotRecord)
	if err != nil {
		return nil, err
	}
	return convertPage(page, func(b *botRecord) identity.BotUser { return b.BotUser }), nil
}

// UpdateBotUser changes the fields present in params (PATCH
// /bot_users/{id}); admins only. Deactivating a bot refuses its API keys
// and credentials from the moment the update returns.
func (s *Service) UpdateBotUser(ctx context.Context, p Principal, id string, params identity.UpdateBotUserParams) (*identity.BotUser, error) {
	if err := checkBotAdmin(p); err != nil {
		return nil, err
	}
	if err := params.Validate(); err != nil {
		return nil, err
	}
	b, err := records.Update(ctx, s.db, p, botUserForm.Form, id, func(b *botRecord, _ *store.Record) error {
		params.Apply(&b.BotUser)
		return nil
	})
	s.auth.Clear() // whatever happened: a deactivation applies at once
	if err != nil {
		return nil, err
	}
	if params.Active != nil && !*params.Active {
		s.agentState.CloseSessionsOfOwner(ctx, p.AccountID, b.ID)
	}
	s.presentBotRecord(b, store.Record{})
	return &b.BotUser, nil
}

// DeleteBotUser deletes a bot user and its API keys (DELETE
// /bot_users/{id}); admins only. A bot that owns credentials cannot be
// deleted: the error is a conflict naming them.
func (s *Service) DeleteBotUser(ctx context.Context, p Principal, id string) error {
	if err := checkBotAdmin(p); err != nil {
		return err
	}
	err := records.Remove(ctx, s.db, p, botKind, id)
	s.auth.Clear()
	return err
}
