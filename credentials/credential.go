package credentials

import (
	"slices"
	"time"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/internal/ids"
	"github.com/edgeplane/edgeplane/internal/validate"
)

// IDPrefix is the prefix of every credential identifier.
const IDPrefix = "cr_"

// Owner identifier prefixes: a credential belongs to a user or a bot.
const (
	UserPrefix = "usr_"
	BotPrefix  = "bot_"
)

// Credential is a tunnel authtoken credential.
type Credential struct {
	// ID is the credential's identifier, IDPrefix followed by an opaque string.
	ID string `json:"id"`
	// URI locates the credential; filled by the Service when it returns one.
	URI string `json:"uri"`
	// CreatedAt is when the credential was created.
	CreatedAt time.Time `json:"created_at"`
	// Description says who or what uses the credential.
	Description string `json:"description"`
	// Metadata is arbitrary user-defined machine-readable data.
	Metadata string `json:"metadata"`
	// Token is the authtoken, set only in the response to creation and
	// null in every other response.
	Token *string `json:"token"`
	// ACL lists the bind rules as the user wrote them; always a non-nil
	// slice in responses (empty when there are none).
	ACL []string `json:"acl"`
	// OwnerID is the user or bot that owns the credential.
	OwnerID string `json:"owner_id"`
}

// Clone returns a deep copy of c: the copy shares no slice or pointer with
// c. The ACL of the copy is never nil.
func (c Credential) Clone() Credential {
	c.ACL = cloneRules(c.ACL)
	if c.Token != nil {
		t := *c.Token
		c.Token = &t
	}
	return c
}

// CreateParams are the parameters of creating a credential. Every field is
// optional.
type CreateParams struct {
	// Description says who or what uses the credential; at most 255 bytes.
	Description string `json:"description" validate:"maxbytes=255"`
	// Metadata is user-defined data; at most 4096 bytes.
	Metadata string `json:"metadata" validate:"maxbytes=4096"`
	// ACL lists bind rules (see the package documentation); empty means
	// no restriction.
	ACL []string `json:"acl"`
	// OwnerID names the owning user (usr_) or bot (bot_). Empty means the
	// authenticated caller; whether the caller may name another owner is
	// the Service's decision.
	OwnerID string `json:"owner_id" openapi:"omitempty,id=usr_|bot_"`
}

// Validate reports every broken rule of p at once: the description and
// metadata byte limits, every ACL rule (as [ParseACL] does) and the shape of
// owner_id. It returns nil or an InvalidArgument [*apierr.Error].
func (p CreateParams) Validate() error {
	var vs apierr.Violations
	validate.Into(&vs, "", p)
	vs = append(vs, checkACL(p.ACL)...)
	if p.OwnerID != "" && !ValidOwnerID(p.OwnerID) {
		vs.Add("owner_id", "must be a user ID (usr_ followed by %d base62 characters) or a bot ID (bot_ followed by %d base62 characters)", ids.Len, ids.Len)
	}
	return vs.Err()
}

// Credential returns the credential that p describes, without the fields
// the Service assigns (ID, URI, CreatedAt, Token). Its ACL is a copy of
// p.ACL, never nil; OwnerID is p.OwnerID, which the Service replaces by the
// caller when empty. Call it after [CreateParams.Validate].
func (p CreateParams) Credential() Credential {
	return Credential{
		Description: p.Description,
		Metadata:    p.Metadata,
		ACL:         cloneRules(p.ACL),
		OwnerID:     p.OwnerID,
	}
}

// ValidOwnerID reports whether id looks like a user or bot identifier.
func ValidOwnerID(id string) bool {
	return ids.Valid(id, UserPrefix) || ids.Valid(id, BotPrefix)
}

// UpdateParams are the parameters of updating a credential. A nil field is
// absent and leaves the credential's value unchanged; a present empty
// string clears it. A JSON null is the same as absent.
type UpdateParams struct {
	// Description replaces the description; at most 255 bytes.
	Description *string `json:"description" validate:"omitnil,maxbytes=255"`
	// Metadata replaces the metadata; at most 4096 bytes.
	Metadata *string `json:"metadata" validate:"omitnil,maxbytes=4096"`
	// ACL replaces the whole rule list; an empty list removes every
	// restriction.
	ACL *[]string `json:"acl"`
	// OwnerID is never allowed: the owner cannot be changed by an update.
	// It exists so that a request naming it is refused rather than
	// silently ignored.
	OwnerID *string `json:"owner_id" openapi:"absent"`
}

// Validate reports every broken rule of p at once: the byte limits, every
// ACL rule and the presence of owner_id. It returns nil or an
// InvalidArgument [*apierr.Error].
func (p UpdateParams) Validate() error {
	var vs apierr.Violations
	validate.Into(&vs, "", p)
	if p.ACL != nil {
		vs = append(vs, checkACL(*p.ACL)...)
	}
	if p.OwnerID != nil {
		vs.Add("owner_id", "cannot be changed by update")
	}
	return vs.Err()
}

// Apply sets the fields of c that p carries: description, metadata and ACL
// (copied; a present nil list becomes the empty list). OwnerID is never
// applied. Call it after [UpdateParams.Validate].
func (p UpdateParams) Apply(c *Credential) {
	if p.Description != nil {
		c.Description = *p.Description
	}
	if p.Metadata != nil {
		c.Metadata = *p.Metadata
	}
	if p.ACL != nil {
		c.ACL = cloneRules(*p.ACL)
	}
}

// cloneRules copies rules into a new non-nil slice.
func cloneRules(rules []string) []string {
	if rules == nil {
		return []string{}
	}
	return slices.Clone(rules)
}
