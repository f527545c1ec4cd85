// Package acmestate keeps the certificate manager's state in the store
// for the edgeplane Service (its Host's ACME operations; package
// certmanager orders the certificates): the ACME account key of each
// directory, sealed, and the pending challenges, which every edge node
// answers (HTTP-01 on its HTTP listener, TLS-ALPN-01 on its HTTPS
// listener, DNS-01 from its DNS server), whichever node the CA reaches.
//
// Both are the Service's own records (the internal kinds
// [kinds.ACMEAccount] and [kinds.ACMEChallenge], stored under the
// pseudo-account "acme"): the API does not show them and they report no
// events. A record's ID is a hash of what identifies it (a challenge's
// type, name and token; an account key's directory), so that every
// replica finds the same record.
//
// It is internal to the module and imports leaves (apierr, domains,
// kinds, resource, store) and internal/records and internal/seal; never
// the root package, which builds a [State] in its New.
package acmestate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"net/url"
	"time"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/internal/seal"
	"github.com/edgeplane/edgeplane/kinds"
	"github.com/edgeplane/edgeplane/resource"
	"github.com/edgeplane/edgeplane/store"
)

const (
	// account is the account ID the ACME records are stored under.
	account = "acme"
	// accountPrefix and challengePrefix start the records' IDs; a hash
	// of what identifies them follows.
	accountPrefix   = "acmeacct_"
	challengePrefix = "acmech_"
	// indexChallengeEnd indexes challenges by expiry, for
	// [State.ReapChallenges].
	indexChallengeEnd = "acme_challenge_end"
)

// challengeDoc is the stored form of a pending challenge.
type challengeDoc struct {
	Type             string    `json:"type"`
	Name             string    `json:"name"`
	Token            string    `json:"token,omitempty"`
	KeyAuthorization string    `json:"key_authorization"`
	ExpiresAt        time.Time `json:"expires_at"`
}

// accountDoc is the stored form of an ACME account key.
type accountDoc struct {
	Directory string    `json:"directory"`
	SealedKey []byte    `json:"sealed_key"`
	CreatedAt time.Time `json:"created_at"`
}

// The identities of the ACME records for the store's errors; they are
// not API kinds.
var (
	challengeKind = &records.Kind{StoreKind: kinds.ACMEChallenge, Prefix: challengePrefix, Noun: "ACME challenge"}
	accountKind   = &records.Kind{StoreKind: kinds.ACMEAccount, Prefix: accountPrefix, Noun: "ACME account"}
)

// State is the ACME state of one Service: its store, the record
// machinery that maps the store's errors, the sealer of account keys,
// its clock and its log. It holds nothing else, so it is safe for
// concurrent use, and every replica's State over one store sees the
// same challenges and keys.
type State struct {
	store  store.Store
	db     *records.DB
	sealer *seal.Sealer
	now    func() time.Time
	log    *slog.Logger
}

// New returns the ACME state kept in st (the Service's store, through
// its record cache), mapping store errors with db, sealing account keys
// with sealer, reading the time from now and logging to log.
func New(st store.Store, db *records.DB, sealer *seal.Sealer, now func() time.Time, log *slog.Logger) *State {
	return &State{store: st, db: db, sealer: sealer, now: now, log: log}
}

// hashID returns prefix and 32 hex digits of the SHA-256 of parts.
func hashID(prefix string, parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return prefix + hex.EncodeToString(h.Sum(nil)[:16])
}

func challengeID(typ, name, token string) string {
	return hashID(challengePrefix, typ, name, token)
}

// checkChallengeKey validates what identifies a challenge.
func checkChallengeKey(vs *apierr.Violations, typ, name, token string) {
	switch typ {
	case domains.ChallengeHTTP01:
		switch {
		case token == "":
			vs.Add("token", "is required for %s", domains.ChallengeHTTP01)
		case len(token) > domains.MaxACMEToken:
			vs.Add("token", "must be at most %d bytes", domains.MaxACMEToken)
		default:
			for _, r := range token {
				if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
					vs.Add("token", "may hold only base64url characters (A-Z, a-z, 0-9, '-', '_')")
					break
				}
			}
		}
	case domains.ChallengeTLSALPN01, domains.ChallengeDNS01:
		if token != "" {
			vs.Add("token", "must be empty for %s", typ)
		}
	default:
		vs.Add("type", "must be %s, %s or %s", domains.ChallengeHTTP01, domains.ChallengeTLSALPN01, domains.ChallengeDNS01)
	}
	if !validDNSName(name) {
		vs.Add("name", "must be a DNS name in lower case without a trailing dot: at most %d bytes of labels of 1 to %d characters a-z, 0-9, '-' and '_'", domains.MaxNameBytes, domains.MaxLabelBytes)
	}
}

// validDNSName reports whether name is lower case labels of a-z, 0-9,
// '-' and '_' (an _acme-challenge name), 1 to domains.MaxLabelBytes
// bytes each, at most domains.MaxNameBytes in all (the bounds of a
// reserved domain's name, so every domain's challenge fits).
func validDNSName(name string) bool {
	if name == "" || len(name) > domains.MaxNameBytes {
		return false
	}
	label := 0
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '.':
			if label == 0 {
				return false
			}
			label = 0
		case c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_':
			if label++; label > domains.MaxLabelBytes {
				return false
			}
		default:
			return false
		}
	}
	return label > 0
}

// PutChallenge records a pending challenge, replacing one of the same
// type, name and token; every violation of the rules of
// [domains.ACMEChallenge] is reported at once (invalid argument naming
// each field).
func (s *State) PutChallenge(ctx context.Context, c domains.ACMEChallenge) error {
	now := s.now()
	var vs apierr.Violations
	checkChallengeKey(&vs, c.Type, c.Name, c.Token)
	switch {
	case c.KeyAuthorization == "":
		vs.Add("key_authorization", "is required")
	case len(c.KeyAuthorization) > domains.MaxACMEKeyAuthorization:
		vs.Add("key_authorization", "must be at most %d bytes", domains.MaxACMEKeyAuthorization)
	default:
		for i := 0; i < len(c.KeyAuthorization); i++ {
			if b := c.KeyAuthorization[i]; b < 0x21 || b > 0x7e {
				vs.Add("key_authorization", "may hold only printable ASCII without spaces")
				break
			}
		}
	}
	if !c.ExpiresAt.After(now) || c.ExpiresAt.Sub(now) > domains.MaxACMEChallengeTTL {
		vs.Add("expires_at", "must be after now and at most %s from now", domains.MaxACMEChallengeTTL)
	}
	if err := vs.Err(); err != nil {
		return err
	}
	id := challengeID(c.Type, c.Name, c.Token)
	data, err := json.Marshal(challengeDoc{Type: c.Type, Name: c.Name, Token: c.Token, KeyAuthorization: c.KeyAuthorization, ExpiresAt: c.ExpiresAt.UTC()})
	if err != nil {
		return apierr.Wrap(apierr.Internal, err, "internal error")
	}
	idx := []store.IndexEntry{{Name: indexChallengeEnd, Value: store.IndexTime(c.ExpiresAt)}}
	err = s.store.Create(ctx, store.Record{Kind: kinds.ACMEChallenge, AccountID: account, ID: id, Data: data, Indexes: idx})
	var dup *store.DuplicateError
	if errors.As(err, &dup) {
		_, err = s.store.Update(ctx, kinds.ACMEChallenge, account, id, func(rec *store.Record) error {
			rec.Data, rec.Indexes = data, idx
			return nil
		})
	}
	if err != nil {
		return s.db.StoreErr(err, challengeKind, id)
	}
	return nil
}

// Challenge returns the pending challenge of that type, name and token,
// read from the store; one that is missing or expired is not found.
func (s *State) Challenge(ctx context.Context, typ, name, token string) (*domains.ACMEChallenge, error) {
	var vs apierr.Violations
	checkChallengeKey(&vs, typ, name, token)
	if err := vs.Err(); err != nil {
		return nil, err
	}
	id := challengeID(typ, name, token)
	rec, err := s.store.Get(ctx, kinds.ACMEChallenge, account, id)
	if err != nil {
		return nil, s.db.StoreErr(err, challengeKind, id)
	}
	var d challengeDoc
	if err := json.Unmarshal(rec.Data, &d); err != nil {
		return nil, apierr.Wrap(apierr.Internal, err, "internal error")
	}
	if d.Type != typ || d.Name != name || d.Token != token || !s.now().Before(d.ExpiresAt) {
		return nil, challengeKind.NotFound(id)
	}
	return &domains.ACMEChallenge{Type: d.Type, Name: d.Name, Token: d.Token, KeyAuthorization: d.KeyAuthorization, ExpiresAt: d.ExpiresAt}, nil
}

// DeleteChallenge removes a challenge; one that is gone is no error.
func (s *State) DeleteChallenge(ctx context.Context, typ, name, token string) error {
	var vs apierr.Violations
	checkChallengeKey(&vs, typ, name, token)
	if err := vs.Err(); err != nil {
		return err
	}
	id := challengeID(typ, name, token)
	err := s.store.Delete(ctx, kinds.ACMEChallenge, account, id, store.Note{})
	if err != nil && !errors.Is(err, apierr.ErrNotFound) {
		return s.db.StoreErr(err, challengeKind, id)
	}
	return nil
}

// ReapChallenges removes up to limit (1 to [records.MaxPageSize])
// expired challenges, read through the store's index of challenges by
// expiry, and returns how many it removed; one presented again between
// the read and the removal is kept.
func (s *State) ReapChallenges(ctx context.Context, limit int) (int, error) {
	if limit <= 0 || limit > records.MaxPageSize {
		return 0, apierr.Invalidf("limit", "must be from 1 to %d, got %d", records.MaxPageSize, limit)
	}
	recs, err := s.store.List(ctx, store.Query{Kind: kinds.ACMEChallenge, AccountID: account, Index: indexChallengeEnd,
		Value: store.IndexTime(s.now().Add(time.Nanosecond)), Below: true, Limit: limit})
	if err != nil {
		return 0, s.db.StoreErr(err, challengeKind, "")
	}
	n := 0
	for _, rec := range recs {
		err := s.store.DeleteIf(ctx, kinds.ACMEChallenge, account, rec.ID, rec.Version, store.Note{})
		var ve *store.VersionError
		switch {
		case err == nil:
			n++
		case errors.Is(err, apierr.ErrNotFound), errors.As(err, &ve):
			// gone, or presented again meanwhile
		default:
			return n, s.db.StoreErr(err, challengeKind, rec.ID)
		}
	}
	return n, nil
}

// AccountKey returns the ACME account key of directory (an absolute
// http or https URL of at most [domains.MaxACMEDirectory] bytes), opened
// from its sealed record; when none is stored, it stores the one
// generate returns (1 to [domains.MaxACMEAccountKey] bytes). Of two
// replicas that store one at the same moment, the second finds the
// first's record and returns that key.
func (s *State) AccountKey(ctx context.Context, directory string, generate func() ([]byte, error)) ([]byte, error) {
	if u, err := url.Parse(directory); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || len(directory) > domains.MaxACMEDirectory {
		return nil, apierr.Invalidf("directory", "must be an absolute http or https URL of at most %d bytes", domains.MaxACMEDirectory)
	}
	id := hashID(accountPrefix, directory)
	aad := []byte(account + "/" + id)
	for range 2 {
		rec, err := s.store.Get(ctx, kinds.ACMEAccount, account, id)
		if err == nil {
			var d accountDoc
			if err := json.Unmarshal(rec.Data, &d); err != nil {
				return nil, apierr.Wrap(apierr.Internal, err, "internal error")
			}
			key, err := s.sealer.Open(d.SealedKey, aad)
			if err != nil {
				s.log.Error("cannot open the ACME account key", "directory", directory, "err", err)
				return nil, apierr.Wrap(apierr.Internal, err, "internal error")
			}
			return key, nil
		}
		if !errors.Is(err, apierr.ErrNotFound) {
			return nil, s.db.StoreErr(err, accountKind, id)
		}
		key, err := generate()
		if err != nil {
			return nil, apierr.Wrap(apierr.Internal, err, "internal error")
		}
		if len(key) == 0 || len(key) > domains.MaxACMEAccountKey {
			return nil, apierr.Invalidf("key", "must be 1 to %d bytes", domains.MaxACMEAccountKey)
		}
		data, err := json.Marshal(accountDoc{Directory: directory, SealedKey: s.sealer.Seal(key, aad), CreatedAt: resource.Timestamp(s.now())})
		if err != nil {
			return nil, apierr.Wrap(apierr.Internal, err, "internal error")
		}
		err = s.store.Create(ctx, store.Record{Kind: kinds.ACMEAccount, AccountID: account, ID: id, Data: data})
		var dup *store.DuplicateError
		if errors.As(err, &dup) {
			continue // another replica stored one first: use it
		}
		if err != nil {
			return nil, s.db.StoreErr(err, accountKind, id)
		}
		return key, nil
	}
	return nil, apierr.New(apierr.Conflict, "the ACME account key of %s changes too fast to read; try again", directory)
}
