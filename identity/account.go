package identity

import (
	"time"

	"github.com/edgeplane/edgeplane/internal/validate"
)

// APIKeySecretPrefix starts every API key secret, so that leaked keys are
// easy to recognise in logs and by secret scanners.
const APIKeySecretPrefix = "epk_"

// Account is a tenant: every resource belongs to exactly one account, and a
// caller never sees another account's resources. Accounts are the host's:
// the API has no routes of them.
type Account struct {
	// ID is the account's identifier, [AccountPrefix] followed by an
	// opaque string.
	ID string `json:"id"`
	// CreatedAt is when the account was created.
	CreatedAt time.Time `json:"created_at"`
	// Name is the account's display name.
	Name string `json:"name"`
}

// AccountParams are the fields of a new account.
type AccountParams struct {
	// Name is a display name, 1 to 255 bytes.
	Name string `json:"name" validate:"required,maxbytes=255"`
}

// Validate reports every broken rule of p. It returns nil or an
// InvalidArgument error.
func (p AccountParams) Validate() error { return validate.Struct(p) }

// Subject is a user or a bot of an account: who acts. Its ID tells which
// (usr_ or bot_).
type Subject struct {
	// ID is the subject's identifier ([UserPrefix] or [BotPrefix]
	// followed by an opaque string).
	ID string `json:"id"`
	// AccountID is the subject's account.
	AccountID string `json:"account_id"`
	// CreatedAt is when the subject was created.
	CreatedAt time.Time `json:"created_at"`
	// Name is the subject's display name.
	Name string `json:"name"`
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

// Validate reports every broken rule of p. It returns nil or an
// InvalidArgument error.
func (p SubjectParams) Validate() error { return validate.Struct(p) }
