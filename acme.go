package edgeplane

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/url"
	"time"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/kinds"
	"github.com/edgeplane/edgeplane/store"
)

// The certificate manager's state in the store (package certmanager
// orders the certificates): the ACME account key of each directory,
// sealed, and the pending challenges, which every edge node answers
// (HTTP-01 on its HTTP listener, TLS-ALPN-01 on its HTTPS listener,
// DNS-01 from its DNS server), whichever node the CA reaches.
//
// Both are the Service's own records (internal kinds, stored under the
// pseudo-account acmeAccount): the API does not show them and they
// report no events.

const (
	// kindACMEAccount is the store kind of ACME account keys.
	kindACMEAccount = kinds.ACMEAccount
	// kindACMEChallenge is the store kind of pending ACME challenges.
	kindACMEChallenge = kinds.ACMEChallenge
	// acmeAccount is the account ID the ACME records are stored under.
	acmeAccount = "acme"
	// acmeAccountPrefix and acmeChallengePrefix start the records' IDs;
	// a hash of what identifies them follows.
	acmeAccountPrefix   = "acmeacct_"
	acmeChallengePrefix = "acmech_"
	// indexACMEChallengeEnd indexes challenges by expiry, for
	// [Host.ReapACMEChallenges].
	indexACMEChallengeEnd = "acme_challenge_end"
)

// The ACME records' types and bounds, declared in package domains (the
// certificate manager, the proxy and the DNS server share them).
const (
	ChallengeHTTP01         = domains.ChallengeHTTP01
	ChallengeTLSALPN01      = domains.ChallengeTLSALPN01
	ChallengeDNS01          = domains.ChallengeDNS01
	MaxACMEDirectory        = domains.MaxACMEDirectory
	MaxACMEAccountKey       = domains.MaxACMEAccountKey
	MaxACMEToken            = domains.MaxACMEToken
	MaxACMEKeyAuthorization = domains.MaxACMEKeyAuthorization
	MaxACMEChallengeTTL     = domains.MaxACMEChallengeTTL
)

// ACMEChallenge is a pending ACME challenge: [domains.ACMEChallenge].
type ACMEChallenge = domains.ACMEChallenge

type acmeChallengeDoc struct {
	Type             string    `json:"type"`
	Name             string    `json:"name"`
	Token            string    `json:"token,omitempty"`
	KeyAuthorization string    `json:"key_authorization"`
	ExpiresAt        time.Time `json:"expires_at"`
}

type acmeAccountDoc struct {
	Directory string    `json:"directory"`
	SealedKey []byte    `json:"sealed_key"`
	CreatedAt time.Time `json:"created_at"`
}

// The identities of the ACME records for the store's errors; they are
// not API kinds.
var (
	acmeChallengeKind = &records.Kind{StoreKind: kindACMEChallenge, Prefix: acmeChallengePrefix, Noun: "ACME challenge"}
	acmeAccountKind   = &records.Kind{StoreKind: kindACMEAccount, Prefix: acmeAccountPrefix, Noun: "ACME account"}
)

// hashID returns prefix and 32 hex digits of the SHA-256 of parts.
func hashID(prefix string, parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return prefix + hex.EncodeToString(h.Sum(nil)[:16])
}

func acmeChallengeID(typ, name, token string) string {
	return hashID(acmeChallengePrefix, typ, name, token)
}

// checkACMEChallengeKey validates what identifies a challenge.
func checkACMEChallengeKey(vs *apierr.Violations, typ, name, token string) {
	switch typ {
	case ChallengeHTTP01:
		switch {
		case token == "":
			vs.Add("token", "is required for %s", ChallengeHTTP01)
		case len(token) > MaxACMEToken:
			vs.Add("token", "must be at most %d bytes", MaxACMEToken)
		default:
			for _, r := range token {
				if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
					vs.Add("token", "may hold only base64url characters (A-Z, a-z, 0-9, '-', '_')")
					break
				}
			}
		}
	case ChallengeTLSALPN01, ChallengeDNS01:
		if token != "" {
			vs.Add("token", "must be empty for %s", typ)
		}
	default:
		vs.Add("type", "must be %s, %s or %s", ChallengeHTTP01, ChallengeTLSALPN01, ChallengeDNS01)
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

// putACMEChallenge is [Host.PutACMEChallenge].
func (s *Service) putACMEChallenge(ctx context.Context, c ACMEChallenge) error {
	now := s.now()
	var vs apierr.Violations
	checkACMEChallengeKey(&vs, c.Type, c.Name, c.Token)
	switch {
	case c.KeyAuthorization == "":
		vs.Add("key_authorization", "is required")
	case len(c.KeyAuthorization) > MaxACMEKeyAuthorization:
		vs.Add("key_authorization", "must be at most %d bytes", MaxACMEKeyAuthorization)
	default:
		for i := 0; i < len(c.KeyAuthorization); i++ {
			if b := c.KeyAuthorization[i]; b < 0x21 || b > 0x7e {
				vs.Add("key_authorization", "may hold only printable ASCII without spaces")
				break
			}
		}
	}
	if !c.ExpiresAt.After(now) || c.ExpiresAt.Sub(now) > MaxACMEChallengeTTL {
		vs.Add("expires_at", "must be after now and at most %s from now", MaxACMEChallengeTTL)
	}
	if err := vs.Err(); err != nil {
		return err
	}
	id := acmeChallengeID(c.Type, c.Name, c.Token)
	data, err := json.Marshal(acmeChallengeDoc{Type: c.Type, Name: c.Name, Token: c.Token, KeyAuthorization: c.KeyAuthorization, ExpiresAt: c.ExpiresAt.UTC()})
	if err != nil {
		return apierr.Wrap(apierr.Internal, err, "internal error")
	}
	idx := []store.IndexEntry{{Name: indexACMEChallengeEnd, Value: store.IndexTime(c.ExpiresAt)}}
	err = s.store.Create(ctx, store.Record{Kind: kindACMEChallenge, AccountID: acmeAccount, ID: id, Data: data, Indexes: idx})
	var dup *store.DuplicateError
	if errors.As(err, &dup) {
		_, err = s.store.Update(ctx, kindACMEChallenge, acmeAccount, id, func(rec *store.Record) error {
			rec.Data, rec.Indexes = data, idx
			return nil
		})
	}
	if err != nil {
		return s.db.StoreErr(err, acmeChallengeKind, id)
	}
	return nil
}

// acmeChallenge is [Host.ACMEChallenge].
func (s *Service) acmeChallenge(ctx context.Context, typ, name, token string) (*ACMEChallenge, error) {
	var vs apierr.Violations
	checkACMEChallengeKey(&vs, typ, name, token)
	if err := vs.Err(); err != nil {
		return nil, err
	}
	id := acmeChallengeID(typ, name, token)
	rec, err := s.store.Get(ctx, kindACMEChallenge, acmeAccount, id)
	if err != nil {
		return nil, s.db.StoreErr(err, acmeChallengeKind, id)
	}
	var d acmeChallengeDoc
	if err := json.Unmarshal(rec.Data, &d); err != nil {
		return nil, apierr.Wrap(apierr.Internal, err, "internal error")
	}
	if d.Type != typ || d.Name != name || d.Token != token || !s.now().Before(d.ExpiresAt) {
		return nil, acmeChallengeKind.NotFound(id)
	}
	return &ACMEChallenge{Type: d.Type, Name: d.Name, Token: d.Token, KeyAuthorization: d.KeyAuthorization, ExpiresAt: d.ExpiresAt}, nil
}

// deleteACMEChallenge is [Host.DeleteACMEChallenge].
func (s *Service) deleteACMEChallenge(ctx context.Context, typ, name, token string) error {
	var vs apierr.Violations
	checkACMEChallengeKey(&vs, typ, name, token)
	if err := vs.Err(); err != nil {
		return err
	}
	id := acmeChallengeID(typ, name, token)
	err := s.store.Delete(ctx, kindACMEChallenge, acmeAccount, id, store.Note{})
	if err != nil && !errors.Is(err, apierr.ErrNotFound) {
		return s.db.StoreErr(err, acmeChallengeKind, id)
	}
	return nil
}

// reapACMEChallenges is [Host.ReapACMEChallenges].
func (s *Service) reapACMEChallenges(ctx context.Context, limit int) (int, error) {
	if limit <= 0 || limit > MaxPageSize {
		return 0, apierr.Invalidf("limit", "must be from 1 to %d, got %d", MaxPageSize, limit)
	}
	recs, err := s.store.List(ctx, store.Query{Kind: kindACMEChallenge, AccountID: acmeAccount, Index: indexACMEChallengeEnd,
		Value: store.IndexTime(s.now().Add(time.Nanosecond)), Below: true, Limit: limit})
	if err != nil {
		return 0, s.db.StoreErr(err, acmeChallengeKind, "")
	}
	n := 0
	for _, rec := range recs {
		err := s.store.DeleteIf(ctx, kindACMEChallenge, acmeAccount, rec.ID, rec.Version, store.Note{})
		var ve *store.VersionError
		switch {
		case err == nil:
			n++
		case errors.Is(err, apierr.ErrNotFound), errors.As(err, &ve):
			// gone, or presented again meanwhile
		default:
			return n, s.db.StoreErr(err, acmeChallengeKind, rec.ID)
		}
	}
	return n, nil
}

// acmeAccountKey is [Host.ACMEAccountKey].
func (s *Service) acmeAccountKey(ctx context.Context, directory string, generate func() ([]byte, error)) ([]byte, error) {
	if u, err := url.Parse(directory); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || len(directory) > MaxACMEDirectory {
		return nil, apierr.Invalidf("directory", "must be an absolute http or https URL of at most %d bytes", MaxACMEDirectory)
	}
	id := hashID(acmeAccountPrefix, directory)
	aad := []byte(acmeAccount + "/" + id)
	for range 2 {
		rec, err := s.store.Get(ctx, kindACMEAccount, acmeAccount, id)
		if err == nil {
			var d acmeAccountDoc
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
			return nil, s.db.StoreErr(err, acmeAccountKind, id)
		}
		key, err := generate()
		if err != nil {
			return nil, apierr.Wrap(apierr.Internal, err, "internal error")
		}
		if len(key) == 0 || len(key) > MaxACMEAccountKey {
			return nil, apierr.Invalidf("key", "must be 1 to %d bytes", MaxACMEAccountKey)
		}
		data, err := json.Marshal(acmeAccountDoc{Directory: directory, SealedKey: s.sealer.Seal(key, aad), CreatedAt: s.timestamp()})
		if err != nil {
			return nil, apierr.Wrap(apierr.Internal, err, "internal error")
		}
		err = s.store.Create(ctx, store.Record{Kind: kindACMEAccount, AccountID: acmeAccount, ID: id, Data: data})
		var dup *store.DuplicateError
		if errors.As(err, &dup) {
			continue // another replica stored one first: use it
		}
		if err != nil {
			return nil, s.db.StoreErr(err, acmeAccountKind, id)
		}
		return key, nil
	}
	return nil, apierr.New(apierr.Conflict, "the ACME account key of %s changes too fast to read; try again", directory)
}

// reportCertificateProgress is [Host.ReportCertificateProgress].
func (s *Service) reportCertificateProgress(ctx context.Context, accountID, domainID, msg string) (*domains.ReservedDomain, error) {
	var vs apierr.Violations
	if msg == "" {
		vs.Add("msg", "is required")
	}
	vs.CheckText("msg", msg, domains.MaxJobMsgBytes)
	if err := vs.Err(); err != nil {
		return nil, err
	}
	now := s.timestamp()
	return s.hostUpdateDomain(ctx, accountID, domainID, func(d *domains.ReservedDomain) error {
		if d.CertificateManagementPolicy == nil {
			return apierr.New(apierr.FailedPrecondition, "reserved domain %s no longer has a certificate management policy", d.ID)
		}
		d.CertificateProgress(msg, now)
		return nil
	})
}
