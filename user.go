package edgeplane

import (
	"context"
	"errors"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/identity"
	"github.com/edgeplane/edgeplane/internal/cachesync"
	"github.com/edgeplane/edgeplane/internal/ids"
	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/internal/storedforms"
	"github.com/edgeplane/edgeplane/store"
)

var userKind = &records.Kind{StoreKind: KindUser, Prefix: UserPrefix, Collection: "users", Noun: "user", Parent: accountKind}

var userForm = &kind[identity.Subject]{Form: storedforms.Subject(userKind), traits: traits{auth: cachesync.AuthForgetAll}}

var botForm = storedforms.Subject(botKind)

// createUser is [Host.CreateUser].
func (s *Service) createUser(ctx context.Context, accountID string, params identity.SubjectParams) (*identity.Subject, error) {
	return s.createSubject(ctx, accountID, userForm.Form, params)
}

// createBot is [Host.CreateBot].
func (s *Service) createBot(ctx context.Context, accountID string, params identity.SubjectParams) (*identity.Subject, error) {
	return s.createSubject(ctx, accountID, botForm, params)
}

func (s *Service) createSubject(ctx context.Context, accountID string, f records.Form[identity.Subject], params identity.SubjectParams) (*identity.Subject, error) {
	if err := params.Validate(); err != nil {
		return nil, err
	}
	if !ids.Valid(accountID, AccountPrefix) {
		return nil, accountKind.NotFound(accountID)
	}
	sub := &identity.Subject{ID: s.ids.New(f.Prefix), AccountID: accountID, CreatedAt: s.timestamp(), Name: params.Name, Admin: params.Admin, Active: true}
	rec := store.Record{Kind: f.StoreKind, AccountID: accountID, ID: sub.ID, ParentID: accountID}
	if err := f.Encode(s.db, sub, &rec); err != nil {
		return nil, err
	}
	err := s.store.Create(ctx, rec)
	var miss *store.MissingRefError
	if errors.As(err, &miss) {
		return nil, accountKind.NotFound(accountID)
	}
	if err != nil {
		return nil, s.db.StoreErr(err, f.Kind, sub.ID)
	}
	return sub, nil
}

// subjectForm returns the form of a subject ID, or false.
func subjectForm(id string) (records.Form[identity.Subject], bool) {
	switch {
	case ids.Valid(id, UserPrefix):
		return userForm.Form, true
	case ids.Valid(id, BotPrefix):
		return botForm, true
	}
	return records.Form[identity.Subject]{}, false
}

// getSubject is [Host.GetSubject].
func (s *Service) getSubject(ctx context.Context, accountID, id string) (*identity.Subject, error) {
	f, ok := subjectForm(id)
	if !ok {
		return nil, apierr.NotFoundf("user or bot %s not found", records.EchoID(id))
	}
	sub, _, err := f.Read(ctx, s.db, accountID, id)
	if err != nil {
		return nil, s.db.StoreErr(err, f.Kind, id)
	}
	return sub, nil
}
