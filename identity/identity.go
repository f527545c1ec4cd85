// Package identity holds the models of who calls the management API, as
// the API shows them: bot users (service accounts of an account) and the
// API keys that authenticate users and bots. Their parameters validate
// themselves; the edgeplane Service stores them, checks who may manage
// which, and authenticates keys.
//
// # Decisions where the specification is silent
//
//   - A bot user is active when created unless the request says
//     "active": false. While a bot is inactive, its API keys and the tunnel
//     authtokens (credentials) it owns are refused exactly as unknown ones
//     are; activating it again lets them in again. Deleting a bot deletes
//     its API keys; a bot that still owns credentials cannot be deleted
//     (a conflict naming them): delete them first, or deactivate the bot.
//   - Only admins create, update and delete bot users; every subject of
//     the account may list and read them.
//   - Any subject may create API keys for itself (owner_id empty or its
//     own ID) and list, read, update and delete its own keys. Admins may
//     name any user or bot of the account as owner_id and manage every key
//     of the account. A non-admin's list shows only its own keys; a key of
//     another owner is, for it, not found.
//   - Deleting an API key revokes it at once on the Service that deleted
//     it and, on every other process sharing the store, as soon as that
//     process reads the deletion from the store's change feed.
//   - The key's secret (token) is returned by the create call only, and
//     is stored only as a SHA-256 hash.
package identity

import (
	"time"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/internal/ids"
	"github.com/edgeplane/edgeplane/internal/validate"
)

// Identifier prefixes.
const (
	// UserPrefix starts the identifier of a user.
	UserPrefix = "usr_"
	// BotPrefix starts the identifier of a bot user.
	BotPrefix = "bot_"
	// APIKeyPrefix starts the identifier of an API key.
	APIKeyPrefix = "ak_"
)

// BotUser is a bot user: an identity of an account that is not a person,
// for automation. It owns API keys and credentials like a user does.
type BotUser struct {
	// ID is the bot's identifier, BotPrefix followed by an opaque string.
	ID string `json:"id"`
	// URI locates the bot user, {base_url}/bot_users/<id>; filled by the
	// Service.
	URI string `json:"uri"`
	// CreatedAt is when the bot user was created.
	CreatedAt time.Time `json:"created_at"`
	// Name is a human-readable name for the bot.
	Name string `json:"name"`
	// Active is false when the bot is deactivated: its API keys and
	// credentials are then refused.
	Active bool `json:"active"`
}

// CreateBotUserParams are the parameters of creating a bot user.
type CreateBotUserParams struct {
	// Name is required: 1 to 255 bytes.
	Name string `json:"name" validate:"required,maxbytes=255"`
	// Active defaults to true when absent.
	Active *bool `json:"active"`
}

// Validate reports every broken rule of p. It returns nil or an
// InvalidArgument [*apierr.Error].
func (p CreateBotUserParams) Validate() error { return validate.Struct(p) }

// BotUser returns the bot user p describes, without the fields the
// Service assigns (ID, URI, CreatedAt).
func (p CreateBotUserParams) BotUser() BotUser {
	return BotUser{Name: p.Name, Active: p.Active == nil || *p.Active}
}

// UpdateBotUserParams are the parameters of updating a bot user; a nil
// field is absent and keeps its value.
type UpdateBotUserParams struct {
	// Name replaces the name: 1 to 255 bytes.
	Name *string `json:"name" validate:"omitnil,maxbytes=255"`
	// Active activates or deactivates the bot.
	Active *bool `json:"active"`
}

// Validate reports every broken rule of p. It returns nil or an
// InvalidArgument [*apierr.Error].
func (p UpdateBotUserParams) Validate() error {
	var vs apierr.Violations
	validate.Into(&vs, "", p)
	if p.Name != nil && *p.Name == "" {
		vs.Add("name", "must not be empty")
	}
	return vs.Err()
}

// Apply sets the fields of b that p carries.
func (p UpdateBotUserParams) Apply(b *BotUser) {
	if p.Name != nil {
		b.Name = *p.Name
	}
	if p.Active != nil {
		b.Active = *p.Active
	}
}

// APIKey is an API key: a secret that authenticates calls to the
// management API as its owner.
type APIKey struct {
	// ID is the key's identifier, APIKeyPrefix followed by an opaque
	// string.
	ID string `json:"id"`
	// URI locates the key, {base_url}/api_keys/<id>; filled by the
	// Service.
	URI string `json:"uri"`
	// CreatedAt is when the key was created.
	CreatedAt time.Time `json:"created_at"`
	// Description says what the key is for.
	Description string `json:"description"`
	// Metadata is arbitrary user-defined machine-readable data.
	Metadata string `json:"metadata"`
	// OwnerID is the user or bot the key authenticates as.
	OwnerID string `json:"owner_id"`
	// Token is the secret, set only in the response to creation and null
	// in every other response.
	Token *string `json:"token"`
}

// CreateAPIKeyParams are the parameters of creating an API key. Every
// field is optional.
type CreateAPIKeyParams struct {
	// Description says what the key is for; at most 255 bytes.
	Description string `json:"description" validate:"maxbytes=255"`
	// Metadata is user-defined data; at most 4096 bytes.
	Metadata string `json:"metadata" validate:"maxbytes=4096"`
	// OwnerID names the user or bot the key acts as. Empty means the
	// caller; only an admin may name another subject. A host creating a
	// key must name its owner.
	OwnerID string `json:"owner_id" openapi:"omitempty,id=usr_|bot_"`
	// Secret, when set, is the key's secret instead of a generated one:
	// for hosts that provision a known key (from configuration or the
	// environment), through the Service's Host only. It must start with
	// [APIKeySecretPrefix] and be 36 to 256 bytes long (at least 32 bytes
	// after the prefix). Never read from JSON.
	Secret string `json:"-"`
}

// Validate reports every broken rule of p. It returns nil or an
// InvalidArgument [*apierr.Error].
func (p CreateAPIKeyParams) Validate() error {
	var vs apierr.Violations
	validate.Into(&vs, "", p)
	if p.OwnerID != "" && !ValidSubjectID(p.OwnerID) {
		vs.Add("owner_id", "must be a user ID (%s followed by %d base62 characters) or a bot ID (%s followed by %d base62 characters)",
			UserPrefix, ids.Len, BotPrefix, ids.Len)
	}
	return vs.Err()
}

// UpdateAPIKeyParams are the parameters of updating an API key; a nil
// field is absent and keeps its value, a present empty string clears it.
// The owner never changes.
type UpdateAPIKeyParams struct {
	// Description replaces the description; at most 255 bytes.
	Description *string `json:"description" validate:"omitnil,maxbytes=255"`
	// Metadata replaces the metadata; at most 4096 bytes.
	Metadata *string `json:"metadata" validate:"omitnil,maxbytes=4096"`
}

// Validate reports every broken rule of p. It returns nil or an
// InvalidArgument [*apierr.Error].
func (p UpdateAPIKeyParams) Validate() error { return validate.Struct(p) }

// Apply sets the fields of k that p carries.
func (p UpdateAPIKeyParams) Apply(k *APIKey) {
	if p.Description != nil {
		k.Description = *p.Description
	}
	if p.Metadata != nil {
		k.Metadata = *p.Metadata
	}
}

// ValidSubjectID reports whether id looks like a user or bot identifier.
func ValidSubjectID(id string) bool {
	return ids.Valid(id, UserPrefix) || ids.Valid(id, BotPrefix)
}
