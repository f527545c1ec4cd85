package domains

import "time"

// The certificate manager's state that the edge nodes share: the ACME
// challenges pending (which every node answers, HTTP-01 on its HTTP
// listener, TLS-ALPN-01 on its HTTPS listener, DNS-01 from its DNS
// server) and the orders of reserved domains whose managed certificates
// need issuing. The Service stores them (edgeplane.Host's ACME
// operations); package certmanager orders the certificates.

// ACME challenge types ([ACMEChallenge.Type]).
const (
	ChallengeHTTP01    = "http-01"
	ChallengeTLSALPN01 = "tls-alpn-01"
	ChallengeDNS01     = "dns-01"
)

// Bounds of the ACME records.
const (
	// MaxACMEDirectory is the longest ACME directory URL, in bytes.
	MaxACMEDirectory = 2048
	// MaxACMEAccountKey is the longest account key PEM, in bytes.
	MaxACMEAccountKey = 16 << 10
	// MaxACMEToken is the longest HTTP-01 token, in bytes (Let's Encrypt's
	// are 43).
	MaxACMEToken = 128
	// MaxACMEKeyAuthorization is the longest key authorization or TXT
	// value, in bytes.
	MaxACMEKeyAuthorization = 512
	// MaxACMEChallengeTTL is the longest a challenge is kept.
	MaxACMEChallengeTTL = 24 * time.Hour
)

// ACMEChallenge is a pending ACME challenge, as the certificate manager
// presents it and the edge nodes answer it.
type ACMEChallenge struct {
	// Type is [ChallengeHTTP01], [ChallengeTLSALPN01] or
	// [ChallengeDNS01].
	Type string
	// Name is the domain being validated (HTTP-01, TLS-ALPN-01), or the
	// DNS name of the TXT record (DNS-01): lower case, no trailing dot,
	// at most 253 bytes of a-z, 0-9, '-', '_' and '.'.
	Name string
	// Token is the HTTP-01 token (base64url, at most [MaxACMEToken]
	// bytes); empty for the other types.
	Token string
	// KeyAuthorization is the key authorization (HTTP-01, TLS-ALPN-01) or
	// the TXT record's value (DNS-01): printable ASCII, at most
	// [MaxACMEKeyAuthorization] bytes.
	KeyAuthorization string
	// ExpiresAt is when the challenge is no longer answered: after now,
	// at most [MaxACMEChallengeTTL] from now.
	ExpiresAt time.Time
}

// CertificateOrder is a reserved domain whose managed certificate needs
// issuing or renewing: what the host's certificate manager (an ACME
// client) needs to obtain one.
type CertificateOrder struct {
	// AccountID is the account the reserved domain belongs to.
	AccountID string
	// ReservedDomainID identifies the reserved domain; report the outcome
	// with it.
	ReservedDomainID string
	// Domain is the name to certify, possibly a wildcard ("*.example.com").
	Domain string
	// Authority is the certificate authority to ask
	// ([AuthorityLetsEncrypt]).
	Authority string
	// PrivateKeyType is the key the certificate must have
	// ([KeyTypeRSA] or [KeyTypeECDSA]).
	PrivateKeyType string
	// Renewal is true when a managed certificate was issued before and is
	// due for renewal.
	Renewal bool
	// ACMEChallengeCNAMETarget, when not empty, is where the user's
	// _acme-challenge CNAME record points: publish DNS-01 challenge
	// records there.
	ACMEChallengeCNAMETarget string
}
