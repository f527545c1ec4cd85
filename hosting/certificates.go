package hosting

import (
	"context"
	"time"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/internal/ids"
	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/resource"
	"github.com/edgeplane/edgeplane/store"
)

// CertificateHost is the Host's role for the certificate manager
// (package certmanager's Host) and the DNS server of DNS-01 challenges
// (package acmedns's Host): certificate orders and their reports, ACME
// account keys and challenges.
type CertificateHost struct{ r *Roles }

// CertificateOrders returns up to limit (0 means
// [DefaultCertificateOrders]) reserved domains, across all accounts,
// whose managed certificate needs issuing or renewing now (see
// [domains.ReservedDomain.CertificateDue]), newest domain first.
//
// It is a host operation for the certificate manager, which runs one pass
// at a time: for each order it obtains a certificate and reports the
// outcome with [CertificateHost.ReportCertificateIssued] or
// [CertificateHost.ReportCertificateFailed]. An order not reported stays due and
// is returned again. The call reads only due domains, through the store's
// index of domains by due time, and changes nothing.
func (h *CertificateHost) CertificateOrders(ctx context.Context, limit int) ([]CertificateOrder, error) {
	return h.r.certificateOrders(ctx, limit)
}

// ReportCertificateIssued records that the certificate manager obtained a
// certificate for a reserved domain: certPEM is the chain (leaf first) and
// keyPEM its private key. The certificate must cover the domain and have
// the key type of the domain's policy. The Service creates a TLS
// certificate in the domain's account (it belongs to the account like any
// other, described "managed certificate for <domain>"), makes it the
// domain's certificate, ends the provisioning job and sets renews_at (see
// [domains.RenewsAt]). A managed certificate it replaces (one
// the manager issued for this domain) is deleted, unless another domain
// now uses it; an uploaded one is kept.
//
// It fails with not-found for an unknown domain, invalid-argument for a
// bad chain or key, and failed-precondition when the domain no longer has
// a policy, or its policy now asks for another key type; then nothing is
// stored.
func (h *CertificateHost) ReportCertificateIssued(ctx context.Context, accountID, domainID, certPEM, keyPEM string) (*domains.ReservedDomain, error) {
	return h.r.reportCertificateIssued(ctx, accountID, domainID, certPEM, keyPEM)
}

// ReportCertificateFailed records that the certificate manager could not
// obtain a certificate for a reserved domain: with
// [domains.ErrorCodeInternal] the job is retried at f.RetriesAt; with
// [domains.ErrorCodeDNS] at f.RetriesAt when set, else it waits until
// the user sets the policy again.
// It fails with failed-precondition when the domain no longer has a
// policy.
func (h *CertificateHost) ReportCertificateFailed(ctx context.Context, accountID, domainID string, f domains.ProvisioningFailure) (*domains.ReservedDomain, error) {
	return h.r.reportCertificateFailed(ctx, accountID, domainID, f)
}

// ReportCertificateProgress records what the certificate manager is
// doing for a reserved domain it orders a certificate for: the
// provisioning job's msg (1 to 1024 bytes of UTF-8), its error code and
// retry time cleared, its started_at kept (or, for a renewal not yet
// shown as a job, renews_at; or now). Each report is a
// reserved_domain_updated event. It fails with failed-precondition when
// the domain no longer has a policy.
func (h *CertificateHost) ReportCertificateProgress(ctx context.Context, accountID, domainID, msg string) (*domains.ReservedDomain, error) {
	return h.r.reportCertificateProgress(ctx, accountID, domainID, msg)
}

// ACMEAccountKey returns the ACME account key of the directory (an
// absolute URL) stored for the certificate manager, sealed under the
// sealing key: when none is stored, it stores the one generate returns
// (at most [domains.MaxACMEAccountKey] bytes, PEM). Two replicas that store one
// at the same moment both get the one stored first. It is a host
// operation; the key is never shown by the API.
func (h *CertificateHost) ACMEAccountKey(ctx context.Context, directory string, generate func() ([]byte, error)) ([]byte, error) {
	return h.r.c.ACME.AccountKey(ctx, directory, generate)
}

// PutACMEChallenge records a pending ACME challenge (replacing one of
// the same type, name and token), for every edge node to answer until
// c.ExpiresAt: see [ACMEChallenge] for the rules, checked all at once
// (invalid argument naming each field). A host operation of the
// certificate manager.
func (h *CertificateHost) PutACMEChallenge(ctx context.Context, c ACMEChallenge) error {
	return h.r.c.ACME.PutChallenge(ctx, c)
}

// DeleteACMEChallenge removes a challenge once validated or failed; one
// that is gone is no error.
func (h *CertificateHost) DeleteACMEChallenge(ctx context.Context, typ, name, token string) error {
	return h.r.c.ACME.DeleteChallenge(ctx, typ, name, token)
}

// ReapACMEChallenges removes up to limit (1 to [github.com/edgeplane/edgeplane.MaxPageSize]) expired
// challenges (left behind by a manager that stopped between presenting
// and cleaning up) and returns how many it removed.
func (h *CertificateHost) ReapACMEChallenges(ctx context.Context, limit int) (int, error) {
	return h.r.c.ACME.ReapChallenges(ctx, limit)
}

// WaitRevision is [Roles.WaitRevision].
func (h *CertificateHost) WaitRevision(ctx context.Context, revision int64) error {
	return h.r.WaitRevision(ctx, revision)
}

// ACMEChallenge returns the pending challenge of that type, name and
// token (token empty for TLS-ALPN-01 and DNS-01), read from the store;
// one that is missing or expired is not found. Edge nodes answer the
// CA's validation requests with it.
func (h *CertificateHost) ACMEChallenge(ctx context.Context, typ, name, token string) (*ACMEChallenge, error) {
	return h.r.c.ACME.Challenge(ctx, typ, name, token)
}

// DefaultCertificateOrders is how many orders [CertificateHost.CertificateOrders]
// returns at most when asked for 0.
const DefaultCertificateOrders = 100

// certificateOrders is [CertificateHost.CertificateOrders].
func (r *Roles) certificateOrders(ctx context.Context, limit int) ([]CertificateOrder, error) {
	switch {
	case limit == 0:
		limit = DefaultCertificateOrders
	case limit < 0:
		return nil, apierr.Invalidf("limit", "must not be negative, got %d", limit)
	}
	now := r.c.DB.Now()
	out := []CertificateOrder{}
	q := store.Query{Kind: r.c.Domains.StoreKind, Index: r.c.CertificateDueIndex, Value: store.IndexTime(now.Add(time.Nanosecond)), Below: true,
		Limit: min(limit, records.MaxPageSize)}
	for {
		recs, err := r.c.DB.Store.List(ctx, q)
		if err != nil {
			return nil, r.c.DB.StoreErr(err, r.c.Domains.Kind, "")
		}
		for _, rec := range recs {
			d, err := r.c.Domains.Decode(r.c.DB, rec)
			if err != nil {
				return nil, err
			}
			if !d.CertificateDue(now) { // the index said so; the document decides
				continue
			}
			o := CertificateOrder{AccountID: rec.AccountID, ReservedDomainID: d.ID, Domain: d.Domain,
				Authority: d.CertificateManagementPolicy.Authority, PrivateKeyType: d.CertificateManagementPolicy.PrivateKeyType,
				Renewal: d.CertificateManagementStatus.RenewsAt != nil}
			if d.ACMEChallengeCNAMETarget != nil {
				o.ACMEChallengeCNAMETarget = *d.ACMEChallengeCNAMETarget
			}
			if out = append(out, o); len(out) == limit {
				return out, nil
			}
		}
		if len(recs) < q.Limit {
			return out, nil
		}
		q.BeforeID = recs[len(recs)-1].ID
	}
}

// reportCertificateIssued is [CertificateHost.ReportCertificateIssued].
func (r *Roles) reportCertificateIssued(ctx context.Context, accountID, domainID, certPEM, keyPEM string) (*domains.ReservedDomain, error) {
	d, err := r.hostDomain(ctx, accountID, domainID)
	if err != nil {
		return nil, err
	}
	c, err := domains.CreateCertificateParams{Description: "managed certificate for " + d.Domain,
		CertificatePEM: certPEM, PrivateKeyPEM: keyPEM}.Certificate(r.c.DB.Now())
	if err != nil {
		return nil, err
	}
	if !domains.Covers(c.SubjectAlternativeNames.DNSNames, d.Domain) {
		return nil, apierr.Invalidf("certificate_pem", "does not cover %s; its DNS names are %v", d.Domain, c.SubjectAlternativeNames.DNSNames)
	}
	if err := managedKeyMatches(d, c.PrivateKeyType); err != nil {
		return nil, err
	}
	if err := r.c.Records.StoreCertificate(ctx, accountID, &c, keyPEM, domainID); err != nil {
		return nil, err
	}
	var replaced string
	d, err = r.hostUpdateDomain(ctx, accountID, domainID, func(d *domains.ReservedDomain) error {
		if err := managedKeyMatches(d, c.PrivateKeyType); err != nil {
			return err
		}
		replaced = ""
		if d.Certificate != nil {
			replaced = d.Certificate.ID
		}
		d.CertificateIssued(resource.Ref{ID: c.ID}, c.NotBefore, c.NotAfter)
		return nil
	})
	if err != nil {
		if derr := r.c.DB.Store.Delete(ctx, r.c.Certificates.StoreKind, accountID, c.ID, store.Note{}); derr != nil {
			r.c.DB.Log.Error("certificate manager: cannot delete an unused managed certificate", "id", c.ID, "err", derr)
		}
		return nil, err
	}
	if replaced != "" {
		r.c.Records.DeleteManagedCertificate(ctx, accountID, replaced, domainID)
	}
	return d, nil
}

// managedKeyMatches fails with failed-precondition unless d has a policy
// asking for keys of type keyType.
func managedKeyMatches(d *domains.ReservedDomain, keyType string) error {
	pol := d.CertificateManagementPolicy
	if pol == nil {
		return apierr.New(apierr.FailedPrecondition, "reserved domain %s no longer has a certificate management policy", d.ID)
	}
	if pol.PrivateKeyType != keyType {
		return apierr.New(apierr.FailedPrecondition, "the certificate management policy of reserved domain %s asks for a %s key, the certificate has a %s key", d.ID, pol.PrivateKeyType, keyType)
	}
	return nil
}

// reportCertificateFailed is [CertificateHost.ReportCertificateFailed].
func (r *Roles) reportCertificateFailed(ctx context.Context, accountID, domainID string, f domains.ProvisioningFailure) (*domains.ReservedDomain, error) {
	now := r.c.DB.Timestamp()
	if err := f.Validate(now); err != nil {
		return nil, err
	}
	d, err := r.hostUpdateDomain(ctx, accountID, domainID, func(d *domains.ReservedDomain) error {
		if d.CertificateManagementPolicy == nil {
			return apierr.New(apierr.FailedPrecondition, "reserved domain %s no longer has a certificate management policy", d.ID)
		}
		d.CertificateFailed(f, now)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return d, nil
}

// hostDomain loads a reserved domain of an account for a host operation.
func (r *Roles) hostDomain(ctx context.Context, accountID, id string) (*domains.ReservedDomain, error) {
	if !ids.Valid(id, domains.ReservedDomainPrefix) {
		return nil, r.c.Domains.Kind.NotFound(id)
	}
	rec, err := r.c.DB.Store.Get(ctx, r.c.Domains.StoreKind, accountID, id)
	if err != nil {
		return nil, r.c.DB.StoreErr(err, r.c.Domains.Kind, id)
	}
	return r.c.Domains.Decode(r.c.DB, rec)
}

// hostUpdateDomain is the root's update for host operations, which act for no
// principal. fn sees the stored domain; the result is presented.
func (r *Roles) hostUpdateDomain(ctx context.Context, accountID, id string, fn func(*domains.ReservedDomain) error) (*domains.ReservedDomain, error) {
	if !ids.Valid(id, domains.ReservedDomainPrefix) {
		return nil, r.c.Domains.Kind.NotFound(id)
	}
	var out *domains.ReservedDomain
	note := r.c.DB.Note(r.c.Domains.Kind.Event, events.Updated)
	_, err := r.c.DB.Store.Update(ctx, r.c.Domains.StoreKind, accountID, id, func(rec *store.Record) error {
		rec.Note = note
		d, err := r.c.Domains.Decode(r.c.DB, *rec)
		if err != nil {
			return err
		}
		if err := fn(d); err != nil {
			return err
		}
		if err := r.c.Domains.Encode(r.c.DB, d, rec); err != nil {
			return err
		}
		r.c.Records.DomainFacts(rec, d)
		out = d
		return nil
	})
	if err != nil {
		return nil, r.c.DB.StoreErr(err, r.c.Domains.Kind, id)
	}
	r.c.Records.PresentDomain(out)
	return out, nil
}

// reportCertificateProgress is [CertificateHost.ReportCertificateProgress].
func (r *Roles) reportCertificateProgress(ctx context.Context, accountID, domainID, msg string) (*domains.ReservedDomain, error) {
	var vs apierr.Violations
	if msg == "" {
		vs.Add("msg", "is required")
	}
	vs.CheckText("msg", msg, domains.MaxJobMsgBytes)
	if err := vs.Err(); err != nil {
		return nil, err
	}
	now := r.c.DB.Timestamp()
	return r.hostUpdateDomain(ctx, accountID, domainID, func(d *domains.ReservedDomain) error {
		if d.CertificateManagementPolicy == nil {
			return apierr.New(apierr.FailedPrecondition, "reserved domain %s no longer has a certificate management policy", d.ID)
		}
		d.CertificateProgress(msg, now)
		return nil
	})
}
