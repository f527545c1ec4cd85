package certmanager

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/edgeplane/edgeplane/domains"
	"github.com/mholt/acmez/v3/acme"
)

// solver presents a challenge by storing it for every edge node to
// answer ([Host.PutACMEChallenge]), and removes it after.
type solver struct {
	m   *Manager
	o   domains.CertificateOrder
	typ string
}

// dnsName returns where the DNS-01 TXT record of o is served: the
// domain's ACME challenge CNAME target, which the user's
// _acme-challenge CNAME record points to; without one (a wildcard of a
// service-owned domain, whose zone the service's DNS server serves),
// _acme-challenge.<base> itself.
func dnsName(o domains.CertificateOrder) string {
	if o.ACMEChallengeCNAMETarget != "" {
		return o.ACMEChallengeCNAMETarget
	}
	return "_acme-challenge." + strings.TrimPrefix(o.Domain, "*.")
}

// record returns the challenge record of chal.
func (s *solver) record(chal acme.Challenge) domains.ACMEChallenge {
	c := domains.ACMEChallenge{Type: s.typ, Name: strings.ToLower(chal.Identifier.Value), KeyAuthorization: chal.KeyAuthorization,
		ExpiresAt: s.m.clock().Add(ChallengeTTL)}
	switch s.typ {
	case domains.ChallengeHTTP01:
		c.Token = chal.Token
	case domains.ChallengeDNS01:
		c.Name, c.KeyAuthorization = dnsName(s.o), chal.DNS01KeyAuthorization()
	}
	return c
}

// Present stores the challenge and tells the domain's job what the CA
// is about to check.
func (s *solver) Present(ctx context.Context, chal acme.Challenge) error {
	c := s.record(chal)
	if err := s.m.host.PutACMEChallenge(ctx, c); err != nil {
		return fmt.Errorf("storing the %s challenge: %w", s.typ, err)
	}
	var msg string
	switch s.typ {
	case domains.ChallengeHTTP01:
		msg = fmt.Sprintf("the CA is validating %s by HTTP-01: http://%s/.well-known/acme-challenge/%s must reach this service on port 80", s.o.Domain, c.Name, c.Token)
	case domains.ChallengeTLSALPN01:
		msg = fmt.Sprintf("the CA is validating %s by TLS-ALPN-01: %s must reach this service on port 443", s.o.Domain, c.Name)
	default:
		msg = fmt.Sprintf("the CA is validating %s by DNS-01: _acme-challenge.%s must lead to the TXT record at %s", s.o.Domain, strings.TrimPrefix(s.o.Domain, "*."), c.Name)
	}
	if _, err := s.m.progress(ctx, s.o, msg); err != nil {
		return fmt.Errorf("reporting progress: %w", err)
	}
	return nil
}

// CleanUp removes the challenge, also when the order's context has
// ended (within cleanUpTimeout; one left behind expires and is reaped).
func (s *solver) CleanUp(ctx context.Context, chal acme.Challenge) error {
	c := s.record(chal)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanUpTimeout)
	defer cancel()
	return s.m.host.DeleteACMEChallenge(ctx, c.Type, c.Name, c.Token)
}

// cleanUpTimeout bounds the removal of a challenge.
const cleanUpTimeout = 10 * time.Second
