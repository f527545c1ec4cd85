package edgeplane

import (
	"context"

	"github.com/edgeplane/edgeplane/domains"
)

// CertificateHost is the Host's role for the certificate manager
// (package certmanager's Host) and the DNS server of DNS-01 challenges
// (package acmedns's Host): certificate orders and their reports, ACME
// account keys and challenges.
type CertificateHost struct{ s *Service }

// Certificates returns the Host's role for the certificate manager and
// the DNS server of DNS-01 challenges.
func (h *Host) Certificates() *CertificateHost { return &CertificateHost{s: h.s} }

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
	return h.s.certificateOrders(ctx, limit)
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
	return h.s.reportCertificateIssued(ctx, accountID, domainID, certPEM, keyPEM)
}

// ReportCertificateFailed records that the certificate manager could not
// obtain a certificate for a reserved domain: with
// [domains.ErrorCodeInternal] the job is retried at f.RetriesAt; with
// [domains.ErrorCodeDNS] at f.RetriesAt when set, else it waits until
// the user sets the policy again.
// It fails with failed-precondition when the domain no longer has a
// policy.
func (h *CertificateHost) ReportCertificateFailed(ctx context.Context, accountID, domainID string, f domains.ProvisioningFailure) (*domains.ReservedDomain, error) {
	return h.s.reportCertificateFailed(ctx, accountID, domainID, f)
}

// ReportCertificateProgress records what the certificate manager is
// doing for a reserved domain it orders a certificate for: the
// provisioning job's msg (1 to 1024 bytes of UTF-8), its error code and
// retry time cleared, its started_at kept (or, for a renewal not yet
// shown as a job, renews_at; or now). Each report is a
// reserved_domain_updated event. It fails with failed-precondition when
// the domain no longer has a policy.
func (h *CertificateHost) ReportCertificateProgress(ctx context.Context, accountID, domainID, msg string) (*domains.ReservedDomain, error) {
	return h.s.reportCertificateProgress(ctx, accountID, domainID, msg)
}

// ACMEAccountKey returns the ACME account key of the directory (an
// absolute URL) stored for the certificate manager, sealed under the
// sealing key: when none is stored, it stores the one generate returns
// (at most [MaxACMEAccountKey] bytes, PEM). Two replicas that store one
// at the same moment both get the one stored first. It is a host
// operation; the key is never shown by the API.
func (h *CertificateHost) ACMEAccountKey(ctx context.Context, directory string, generate func() ([]byte, error)) ([]byte, error) {
	return h.s.acme.AccountKey(ctx, directory, generate)
}

// PutACMEChallenge records a pending ACME challenge (replacing one of
// the same type, name and token), for every edge node to answer until
// c.ExpiresAt: see [ACMEChallenge] for the rules, checked all at once
// (invalid argument naming each field). A host operation of the
// certificate manager.
func (h *CertificateHost) PutACMEChallenge(ctx context.Context, c ACMEChallenge) error {
	return h.s.acme.PutChallenge(ctx, c)
}

// DeleteACMEChallenge removes a challenge once validated or failed; one
// that is gone is no error.
func (h *CertificateHost) DeleteACMEChallenge(ctx context.Context, typ, name, token string) error {
	return h.s.acme.DeleteChallenge(ctx, typ, name, token)
}

// ReapACMEChallenges removes up to limit (1 to [MaxPageSize]) expired
// challenges (left behind by a manager that stopped between presenting
// and cleaning up) and returns how many it removed.
func (h *CertificateHost) ReapACMEChallenges(ctx context.Context, limit int) (int, error) {
	return h.s.acme.ReapChallenges(ctx, limit)
}

// WaitRevision waits until the Service's reads reflect every change of
// the store up to revision (a [store.Change] Revision), or ctx ends. A
// write through this Service is reflected before the write returns; a
// write by another process (another Service on the same store) is
// reflected once the Service's record cache has followed the change feed
// past it. A host that follows the feed itself (an edge proxy) calls it
// before reading what a change names, so that it never reads a cached
// document older than the change. Without a record cache, or once
// [Service.Close] has stopped it (reads then bypass it), it returns nil at
// once.
func (h *CertificateHost) WaitRevision(ctx context.Context, revision int64) error {
	if h.s.cache == nil || h.s.cacheFollow == nil {
		return nil
	}
	return h.s.cacheFollow.waitApplied(ctx, revision)
}

// ACMEChallenge returns the pending challenge of that type, name and
// token (token empty for TLS-ALPN-01 and DNS-01), read from the store;
// one that is missing or expired is not found. Edge nodes answer the
// CA's validation requests with it.
func (h *CertificateHost) ACMEChallenge(ctx context.Context, typ, name, token string) (*ACMEChallenge, error) {
	return h.s.acme.Challenge(ctx, typ, name, token)
}
