package edgeplane

import (
	"context"
	"errors"
	"strings"

	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/internal/storedforms"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/internal/ids"
	"github.com/edgeplane/edgeplane/store"
)

// storedCertificate is a TLS certificate as the Service holds it:
// [storedforms.Certificate].
type storedCertificate = storedforms.Certificate

// The identity of the kind this file declares (see kindList).
var (
	certificateKind = &records.Kind{StoreKind: KindTLSCertificate, Prefix: domains.CertificatePrefix, Collection: "tls_certificates", Noun: "TLS certificate", Event: "tls_certificate"}
)

var certificateForm = &kind[storedCertificate]{Form: storedforms.CertificateForm(certificateKind), present: (*Service).presentStoredCertificate, shown: showCertificate}

func (s *Service) presentStoredCertificate(c *storedCertificate, rec store.Record) {
	s.presentCertificate(&c.Certificate, rec)
}

// showCertificate shows a stored certificate as the API does: without
// its sealed key.
func showCertificate(_ context.Context, _ *Service, c *storedCertificate, _ store.Record) (any, error) {
	return &c.Certificate, nil
}

// keyAAD binds a sealed private key to its certificate record: a sealed
// key copied to another record or account does not open.
func keyAAD(accountID, certID string) []byte { return []byte(accountID + "/" + certID) }

func (s *Service) presentCertificate(c *domains.Certificate, _ store.Record) {
	c.URI = s.uri(certificateKind.Collection, c.ID)
	if c.SubjectAlternativeNames.DNSNames == nil {
		c.SubjectAlternativeNames.DNSNames = []string{}
	}
	if c.SubjectAlternativeNames.IPs == nil {
		c.SubjectAlternativeNames.IPs = []string{}
	}
}

// CreateTLSCertificate uploads a TLS certificate (POST /tls_certificates):
// a PEM chain, leaf first, and the leaf's private key. The chain is parsed
// with crypto/x509; a key that does not match the leaf, a chain out of
// order and an expired leaf are refused (see
// [domains.CreateCertificateParams.Certificate]). The response, like every
// other, never shows the private key.
func (s *Service) CreateTLSCertificate(ctx context.Context, p Principal, params domains.CreateCertificateParams) (*domains.Certificate, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	c, err := params.Certificate(s.now())
	if err != nil {
		return nil, err
	}
	if err := s.storeCertificate(ctx, p.AccountID, &c, params.PrivateKeyPEM, ""); err != nil {
		return nil, err
	}
	return &c, nil
}

// storeCertificate gives c an ID and creation time, stores it with its
// key in the account and presents it. managedFor names the reserved
// domain the certificate manager issued it for, "" for an upload.
func (s *Service) storeCertificate(ctx context.Context, accountID string, c *domains.Certificate, keyPEM, managedFor string) error {
	c.ID, c.CreatedAt = s.ids.New(domains.CertificatePrefix), s.timestamp()
	sealed := s.sealer.Seal([]byte(keyPEM), keyAAD(accountID, c.ID))
	err := records.Create(ctx, s.db, Principal{AccountID: accountID}, certificateForm.Form, c.ID, "",
		&storedCertificate{Certificate: *c, SealedPrivateKey: sealed, ManagedFor: managedFor}, nil)
	if err != nil {
		return err
	}
	s.presentCertificate(c, store.Record{})
	return nil
}

// GetTLSCertificate returns a TLS certificate (GET /tls_certificates/{id}).
func (s *Service) GetTLSCertificate(ctx context.Context, p Principal, id string) (*domains.Certificate, error) {
	c, rec, err := records.Get(ctx, s.db, p, certificateForm.Form, id)
	if err != nil {
		return nil, err
	}
	s.presentCertificate(&c.Certificate, rec)
	return &c.Certificate, nil
}

// ListTLSCertificates returns a page of the account's TLS certificates,
// newest first (GET /tls_certificates).
func (s *Service) ListTLSCertificates(ctx context.Context, p Principal, opts ListOptions) (*Page[domains.Certificate], error) {
	return listAs(ctx, s, p, certificateForm.Form, "", certificateKind.Collection, opts, func(c *storedCertificate, rec store.Record) (*domains.Certificate, error) {
		s.presentStoredCertificate(c, rec)
		return &c.Certificate, nil
	}, records.LateField[domains.Certificate]{})
}

// UpdateTLSCertificate changes the description and metadata present in
// params (PATCH /tls_certificates/{id}); the chain and key never change.
func (s *Service) UpdateTLSCertificate(ctx context.Context, p Principal, id string, params domains.UpdateCertificateParams) (*domains.Certificate, error) {
	if err := params.Validate(); err != nil {
		return nil, err
	}
	v, err := records.Update(ctx, s.db, p, certificateForm.Form, id, func(v *storedCertificate, _ *store.Record) error {
		params.Apply(&v.Certificate)
		return nil
	})
	if err != nil {
		return nil, err
	}
	c := &v.Certificate
	s.presentCertificate(c, store.Record{})
	return c, nil
}

// DeleteTLSCertificate deletes a TLS certificate (DELETE
// /tls_certificates/{id}). While a reserved domain uses it, it cannot be
// deleted: the error is a conflict naming the domain.
func (s *Service) DeleteTLSCertificate(ctx context.Context, p Principal, id string) error {
	return s.inUseByDomains(ctx, p, records.Remove(ctx, s.db, p, certificateKind, id))
}

// inUseByDomains rewrites an in-use error so that reserved domains among
// the referrers are named by their domain too: "TLS certificate cert_… is
// used by reserved domain rd_… (app.example.com)". Other errors pass
// through.
func (s *Service) inUseByDomains(ctx context.Context, p Principal, err error) error {
	var use *store.InUseError
	if !errors.As(err, &use) {
		return err
	}
	names := make([]string, len(use.Referrers))
	for i, id := range use.Referrers {
		names[i] = describeID(id)
		if !ids.Valid(id, domains.ReservedDomainPrefix) {
			continue
		}
		if d, _, err := records.Get(ctx, s.db, p, reservedDomainForm.Form, id); err == nil {
			names[i] += " (" + d.Domain + ")"
		}
	}
	return &apierr.Error{Code: apierr.Conflict, Err: err,
		Msg: describeID(use.ID) + " is used by " + strings.Join(names, ", ") + "; detach it first"}
}

// tlsCertificateKeyPair is [Host.TLSCertificateKeyPair].
func (s *Service) tlsCertificateKeyPair(ctx context.Context, accountID, id string) (certPEM, keyPEM string, err error) {
	if !ids.Valid(id, domains.CertificatePrefix) {
		return "", "", certificateKind.NotFound(id)
	}
	rec, err := s.store.Get(ctx, KindTLSCertificate, accountID, id)
	if err != nil {
		return "", "", s.db.StoreErr(err, certificateKind, id)
	}
	c, err := certificateForm.Decode(s.db, rec)
	if err != nil {
		return "", "", err
	}
	key, err := s.sealer.Open(c.SealedPrivateKey, keyAAD(accountID, id))
	if err != nil {
		s.log.Error("cannot open the private key of a TLS certificate", "id", id, "err", err)
		return "", "", apierr.Wrap(apierr.Internal, err, "internal error")
	}
	return c.CertificatePEM, string(key), nil
}

// deleteManagedCertificate deletes certificate id of the account if the
// certificate manager issued it for the reserved domain domainID and no
// domain uses it any more (reported as its tls_certificate_deleted
// event); a certificate uploaded by the user, or one still in use, is
// kept. Failures are logged: the certificate stays, an ordinary one.
func (s *Service) deleteManagedCertificate(ctx context.Context, accountID, id, domainID string) {
	rec, err := s.store.Get(ctx, KindTLSCertificate, accountID, id)
	if err != nil {
		return // gone already
	}
	c, err := certificateForm.Decode(s.db, rec)
	if err != nil || c.ManagedFor != domainID {
		return // the user's own
	}
	err = s.store.DeleteIf(ctx, KindTLSCertificate, accountID, id, rec.Version, s.db.Note(certificateKind.Event, events.Deleted))
	var use *store.InUseError
	if err != nil && !errors.As(err, &use) && !errors.Is(err, apierr.ErrNotFound) {
		s.log.Warn("cannot delete a managed certificate no longer in use", "certificate", id, "reserved_domain", domainID, "err", err)
	}
}
