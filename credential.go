package edgeplane

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"

	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/internal/storedforms"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/credentials"
	"github.com/edgeplane/edgeplane/internal/ids"
	"github.com/edgeplane/edgeplane/store"
)

// tokenLookup is the store lookup key of a tunnel token:
// "credential_token:", then for a token that names its credential
// ([credentials.TokenCredentialID]) that ID and ':', then the token's
// hash. Credential IDs are made in time order, so the keys of new
// credentials sort after the keys before them: the store adds each at
// the end of its key index rather than on a random page of it, the cost
// that made creating credentials the slowest write of the durable
// stores. A legacy token's key is the hash alone, as it was stored.
func tokenLookup(token string) string {
	const prefix = "credential_token:"
	var b [len(prefix) + len(credentials.IDPrefix) + ids.Len + 1 + 2*sha256.Size]byte
	key := append(b[:0], prefix...)
	if id, ok := credentials.TokenCredentialID(token); ok {
		key = append(append(key, id...), ':')
	}
	return string(credentials.AppendTokenHash(key, token))
}

// The identity of the kind this file declares (see kindList).
var (
	credentialKind = &records.Kind{StoreKind: KindCredential, Prefix: credentials.IDPrefix, Collection: "credentials", Noun: "credential", Event: "credential"}
)

var credentialForm = &kind[credentials.Credential]{Form: storedforms.Credential(credentialKind), present: (*Service).presentCredential}

func (s *Service) presentCredential(c *credentials.Credential, _ store.Record) {
	c.URI = s.uri(credentialKind.Collection, c.ID)
	c.Token = nil
	if c.ACL == nil {
		c.ACL = []string{}
	}
}

// CreateCredential creates a tunnel authtoken credential (POST
// /credentials). The result is the only one that carries the token: only
// its hash is stored. owner_id defaults to the caller; only an admin may
// name another user or bot of the account.
func (s *Service) CreateCredential(ctx context.Context, p Principal, params credentials.CreateParams) (*credentials.Credential, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	if err := params.Validate(); err != nil {
		return nil, err
	}
	owner, err := s.ownerFor(ctx, p, params.OwnerID)
	if err != nil {
		return nil, err
	}
	cred := params.Credential()
	c := &cred
	c.ID, c.CreatedAt, c.OwnerID = s.ids.New(credentials.IDPrefix), s.timestamp(), owner
	token, err := credentials.NewToken(c.ID)
	if err != nil {
		return nil, apierr.Wrap(apierr.Internal, err, "internal error")
	}
	// The owner is a reference: a bot that owns credentials cannot be
	// deleted from under them.
	if err := records.Create(ctx, s.db, p, credentialForm.Form, c.ID, "", c, []string{owner}, tokenLookup(token)); err != nil {
		return nil, refViolation(err, "owner_id", false, nil)
	}
	s.presentCredential(c, store.Record{})
	c.Token = &token
	return c, nil
}

// GetCredential returns a credential (GET /credentials/{id}); its token is
// always nil.
func (s *Service) GetCredential(ctx context.Context, p Principal, id string) (*credentials.Credential, error) {
	c, rec, err := records.Get(ctx, s.db, p, credentialForm.Form, id)
	if err != nil {
		return nil, err
	}
	s.presentCredential(c, rec)
	return c, nil
}

// ListCredentials returns a page of the account's credentials, newest
// first (GET /credentials).
func (s *Service) ListCredentials(ctx context.Context, p Principal, opts ListOptions) (*Page[credentials.Credential], error) {
	return list(ctx, s, p, credentialForm.Form, "", credentialKind.Collection, opts, s.presentCredential)
}

// UpdateCredential changes the fields present in params (PATCH
// /credentials/{id}); owner_id cannot be changed.
func (s *Service) UpdateCredential(ctx context.Context, p Principal, id string, params credentials.UpdateParams) (*credentials.Credential, error) {
	if err := params.Validate(); err != nil {
		return nil, err
	}
	c, err := records.Update(ctx, s.db, p, credentialForm.Form, id, func(c *credentials.Credential, _ *store.Record) error {
		params.Apply(c)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if params.ACL != nil {
		// The ACL applies to what agents hold (internal/agentstate).
		if acl, err := credentials.ParseACL(c.ACL); err == nil {
			s.agentState.UnbindDisallowed(ctx, p.AccountID, c.ID, acl)
		}
	}
	s.presentCredential(c, store.Record{})
	return c, nil
}

// DeleteCredential deletes a credential (DELETE /credentials/{id}); its
// token stops working at once.
func (s *Service) DeleteCredential(ctx context.Context, p Principal, id string) error {
	return records.Remove(ctx, s.db, p, credentialKind, id)
}

// ownerFor returns the owner of what p creates when the request names
// requested as owner_id: p's subject when requested is empty or p's own,
// else requested, which only an admin may name and which must be a user
// or bot of the account.
func (s *Service) ownerFor(ctx context.Context, p Principal, requested string) (string, error) {
	if requested == "" || requested == p.SubjectID {
		return p.SubjectID, nil
	}
	if !p.Admin {
		return "", apierr.New(apierr.PermissionDenied, "only an admin may set owner_id to another user or bot")
	}
	if _, err := s.getSubject(ctx, p.AccountID, requested); err != nil {
		if errors.Is(err, apierr.ErrNotFound) {
			return "", apierr.Invalidf("owner_id", "must name a user or bot of the account; %s not found", requested)
		}
		return "", err
	}
	return requested, nil
}

// TunnelAuth is what a tunnel server learns from a valid authtoken.
type TunnelAuth struct {
	// AccountID is the account the credential belongs to.
	AccountID string
	// Credential is the credential, token nil.
	Credential *credentials.Credential
	// ACL is the credential's parsed ACL: ask it whether the agent may
	// bind a domain, address or label set.
	ACL *credentials.ACL
}

var errBadToken = apierr.New(apierr.Unauthenticated, "the authtoken is missing, malformed or unknown")

// authenticateTunnelToken is [Host.AuthenticateTunnelToken].
func (s *Service) authenticateTunnelToken(ctx context.Context, token string) (*TunnelAuth, error) {
	if token == "" || len(token) > 256 {
		return nil, errBadToken
	}
	key := tokenLookup(token)
	rec, err := s.store.Lookup(ctx, KindCredential, key)
	if err != nil {
		if errors.Is(err, apierr.ErrNotFound) {
			return nil, errBadToken
		}
		return nil, s.db.StoreErr(err, credentialKind, "")
	}
	if len(rec.Keys) != 1 || subtle.ConstantTimeCompare([]byte(rec.Keys[0]), []byte(key)) != 1 {
		return nil, errBadToken
	}
	c, err := credentialForm.Decode(s.db, rec)
	if err != nil {
		return nil, err
	}
	if ids.Valid(c.OwnerID, BotPrefix) {
		bot, err := s.getSubject(ctx, rec.AccountID, c.OwnerID)
		switch {
		case errors.Is(err, apierr.ErrNotFound):
			return nil, errBadToken
		case err != nil:
			return nil, err
		case !bot.Active:
			return nil, errBadToken // a deactivated bot's authtokens are refused
		}
	}
	acl, err := credentials.ParseACL(c.ACL)
	if err != nil {
		// Stored ACLs were validated on write; a failure here is corruption.
		return nil, apierr.Wrap(apierr.Internal, err, "internal error")
	}
	s.presentCredential(c, rec)
	return &TunnelAuth{AccountID: rec.AccountID, Credential: c, ACL: acl}, nil
}
