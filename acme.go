package edgeplane

import (
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
