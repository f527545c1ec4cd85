// Package domains holds edgeplane's reserved domains and the resources
// they reference: the [ReservedDomain] model with its certificate
// management policy and status, the minimal [Certificate] (TLS
// certificates, cert_) and [EndpointConfiguration] (ec_) records, their
// create and update parameters with validation, the DNS-name parser
// [ParseName], the certificate name matcher [Covers], PEM parsing of
// certificate chains and keys, and the service's domain [Config].
//
// The package is a leaf: it holds models and pure logic. Storage,
// identifiers, URIs, timestamps, reference checks and the uniqueness of
// reserved names belong to the edgeplane Service. URI fields, including
// those of Refs, are stored empty and filled by the Service.
//
// # Domain names
//
// [ParseName] accepts a DNS name of at least two labels, at most 253 bytes,
// each label 1 to 63 bytes of ASCII letters, digits and inner hyphens (RFC
// 1123; internationalised names in their xn-- form), whose last label is
// not all digits (so IP addresses are refused). The whole first label may
// be the wildcard "*" ("*.example.com", at least two labels after it); a
// "*" anywhere else is refused. Names are lower-cased and one trailing dot
// is dropped, so "App.Example.COM." and "app.example.com" are the same
// reservation.
//
// # Service-owned domains and CNAME targets
//
// [Config] names the base domains the service owns (default
// "edgeplane.app") and the base of CNAME targets (default
// "edgeplane-cname.com"). A reserved subdomain of an owned base has a null
// cname_target; any other domain gets a fresh target "<label>.<CNAME
// base>", where label is 26 lowercase base32 characters of 128 random bits,
// fixed at creation. The owned bases themselves, wildcards directly on them
// ("*.edgeplane.app") and names at or below the CNAME base cannot be
// reserved. acme_challenge_cname_target is "<label>.acme.<CNAME base>",
// derived from the CNAME target, and is set only for a wildcard domain
// outside the owned bases while a certificate management policy is
// attached.
//
// # Certificates
//
// A certificate is uploaded as PEM: certificate_pem holds CERTIFICATE
// blocks, leaf first, each certificate signed by the next (checked with
// crypto/x509), at most [MaxChainLength] of them; private_key_pem holds one
// unencrypted PKCS #8, PKCS #1 or SEC 1 key (RSA, ECDSA or Ed25519) that
// must match the leaf's public key. A leaf already expired is refused.
// Text outside PEM blocks is ignored. The record shows the chain, the
// leaf's subject common name and alternative names (DNS names and IPs),
// issuer common name, serial number, not_before, not_after and key type;
// never the private key.
//
// A certificate covers a reserved domain by the rules of RFC 6125 ([Covers]):
// only DNS subject alternative names count; "*" matches exactly one whole
// leftmost label; a wildcard reserved domain needs the same wildcard name.
//
// # Certificate management
//
// A [ReservedDomain] with a policy (authority "letsencrypt", key type
// "rsa" by default or "ecdsa") has a status. Its life:
//
//   - attaching a policy (or changing it, or setting it again after a
//     failure) starts a provisioning job: msg says what DNS record the
//     domain needs, started_at is now, renews_at is null;
//   - the host's certificate manager finds due domains
//     ([ReservedDomain.CertificateDue]) and reports: success
//     ([ReservedDomain.CertificateIssued]) makes the new certificate the
//     domain's, ends the job and sets renews_at ([RenewsAt]: after two
//     thirds of the certificate's lifetime, 30 days before expiry for a
//     90-day certificate); failure ([ReservedDomain.CertificateFailed])
//     keeps the job with error_code INTERNAL_ERROR (retried at retries_at)
//     or DNS_ERROR (permanent until the user corrects DNS: retried at
//     retries_at when the manager sets one, on a slow schedule, else not
//     until the user sets the policy again); while the manager works on
//     a job it reports what it does ([ReservedDomain.CertificateProgress]);
//   - when renews_at has passed, the domain is due again and responses
//     show a job ("certificate renewal has started", started_at =
//     renews_at) until the manager reports ([ReservedDomain.ShowRenewal]);
//   - detaching the certificate while a policy is attached starts a new
//     job; attaching a certificate by ID, or detaching the policy, turns
//     management off: policy, status and ACME challenge target become null.
//
// # Validation
//
// Every Validate method reports all broken rules at once as an
// InvalidArgument [apierr.Error] whose violations name fields by JSON path
// (domain, certificate_management_policy.authority). Descriptions are
// limited to 255 bytes and metadata to 4096 bytes (bytes, not characters).
// In update parameters a nil field is absent and leaves the value
// unchanged; a JSON null is the same as absent; for the ID fields an empty
// string detaches.
//
// # Decisions where the specification is silent
//
//   - A reserved domain's description is limited to 255 bytes, like every
//     other description.
//   - error_redirect_url is a *string that is always nil: the
//     specification shows it null everywhere and gives no type.
//   - region is optional; when none is given responses show "". It cannot
//     be changed by an update; neither can domain (both are refused when
//     present).
//   - certificate_management_policy.authority is required (its only value
//     is "letsencrypt"); private_key_type defaults to "rsa".
//   - certificate_id and certificate_management_policy together are
//     refused with a violation of each field, on create and on update.
//     Attaching a certificate by ID turns management off; setting a policy
//     keeps the current certificate until a managed one replaces it.
//   - The certificate named by certificate_id must cover the domain
//     (RFC 6125 matching, above), else a violation of certificate_id.
//   - A wildcard and the names below it are separate reservations: only
//     the exact (canonical) name is unique across accounts.
//   - A certificate that certificate management issued is an ordinary
//     certificate of the account, which remembers the domain it was
//     issued for: one that a renewal replaces is deleted, and so is the
//     domain's when the domain is deleted (unless the user attached it
//     elsewhere meanwhile).
//   - Uploaded chains must be in order and unexpired; certificate_pem is
//     at most 64 KiB, private_key_pem at most 16 KiB.
//   - Endpoint configurations are minimal records (id, uri, created_at,
//     description, metadata, type http or https); type cannot change.
package domains
