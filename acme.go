package edgeplane

import (
	"context"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/domains"
)

// The certificate manager's state in the store (package certmanager
// orders the certificates): the ACME account key of each directory,
// sealed, and the pending challenges, which every edge node answers,
// whichever node the CA reaches. Package internal/acmestate keeps them
// (the Service's own records: the API does not show them and they
// report no events); the Host's ACME operations delegate to it.

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

// reportCertificateProgress is [CertificateHost.ReportCertificateProgress]. It
// stays here: it updates a reserved domain, a kind of the root.
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
