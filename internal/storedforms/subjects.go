package storedforms

import (
	"time"

	"github.com/edgeplane/edgeplane/identity"
	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/store"
)

// Subject returns the stored form of users and bots as subjects, of
// kind k (the root's user or bot kind).
func Subject(k *records.Kind) records.Form[identity.Subject] {
	return records.PlainForm(k, saveSubject, loadSubject)
}

// BotForm returns the stored form of bot users with their admin flag, of
// kind k.
func BotForm(k *records.Kind) records.Form[Bot] {
	return records.PlainForm(k,
		func(b *Bot) *subjectDoc {
			return &subjectDoc{CreatedAt: b.CreatedAt, Name: b.Name, Admin: b.Admin, Inactive: !b.Active}
		},
		func(d *subjectDoc, rec store.Record) *Bot {
			return &Bot{BotUser: identity.BotUser{ID: rec.ID, CreatedAt: d.CreatedAt, Name: d.Name, Active: !d.Inactive}, Admin: d.Admin}
		})
}

// Bot is a bot user as the Service holds it: the API model and the
// admin flag a host may give a bot ([github.com/edgeplane/edgeplane.Host.CreateBot]), which the API
// neither shows nor changes.
type Bot struct {
	identity.BotUser
	Admin bool
}

type subjectDoc struct {
	CreatedAt time.Time `json:"created_at"`
	Name      string    `json:"name"`
	Admin     bool      `json:"admin,omitempty"`
	Inactive  bool      `json:"inactive,omitempty"`
}

func saveSubject(sub *identity.Subject) *subjectDoc {
	return &subjectDoc{CreatedAt: sub.CreatedAt, Name: sub.Name, Admin: sub.Admin, Inactive: !sub.Active}
}

func loadSubject(d *subjectDoc, rec store.Record) *identity.Subject {
	return &identity.Subject{ID: rec.ID, AccountID: rec.AccountID, CreatedAt: d.CreatedAt, Name: d.Name, Admin: d.Admin, Active: !d.Inactive}
}
