// Package certmanager obtains the managed certificates of a Service's
// reserved domains (those with a certificate management policy) from an
// ACME certificate authority, Let's Encrypt by default.
//
// It is built on github.com/mholt/acmez/v3, a library ACME client (RFC
// 8555, RFC 8737) that leaves storage, locking and the answering of
// challenges to its user: everything the Manager keeps lives in the
// Service's store, so any replica can take over, and every edge node
// answers the CA.
//
// # Orders
//
// A [Manager] makes passes ([Manager.Pass]): each pass reads the domains
// that are due ([Host.CertificateOrders]: a new policy, a
// failed job whose retry time has come, a certificate at two thirds of
// its lifetime) and orders one certificate at a time, for the domain's
// name alone, with a new private key of the policy's type (RSA 2048 or
// ECDSA P-256). Run one Manager per store: under a lease (package
// internal/elect), so that exactly one replica orders and another takes
// over when it dies.
//
// # When it orders
//
// [Manager.Run] makes a pass when it starts, and then:
//
//   - as soon as a reserved domain changes ([Options.Feed], the store's
//     change feed, followed with package store/follow as the edge
//     proxies follow it): a policy set or changed, a domain created with
//     one, on any replica of the store, starts its order within a moment
//     of the commit (PostgreSQL: at its NOTIFY; SQLite: within its poll);
//   - when a retry this Manager reported comes due (its retries_at), so
//     that a failed job is retried at the time its message gives;
//   - every [Options.Interval] whatever happens ([DefaultInterval], a
//     minute): a sweep, the safety net for renewals, for retries another
//     replica reported, and for changes the feed could not show (it
//     failed, or the store was written behind its back).
//
// Renewals and retries keep their schedule: a change wakes a pass, and a
// pass orders only what is due. The Manager's own reports change the
// domains it orders for, and wake a pass that finds them no longer due;
// a domain whose failure could not be reported (it is still due) is left
// to the next sweep, so that its writes do not make orders follow each
// other at once.
//
// The ACME account key is an ECDSA P-256 key made on first use and kept
// sealed in the store, one per directory
// ([Host.ACMEAccountKey]); registering it again gives back the
// same account.
//
// # Challenges
//
// A domain that is not a wildcard is validated by HTTP-01 or TLS-ALPN-01
// ([Options.Challenges]), a wildcard by DNS-01. An order tries one
// challenge type, so that a failed order costs one failed validation at
// the CA (acmez would try every type it has a solver for, in an order of
// its own): a job's first order tries the first configured type, each
// order after a failure the next one, in turn (remembered by the Manager
// while it runs; a replica that takes over starts from the first). Each
// challenge is stored
// ([Host.PutACMEChallenge]) before the CA is told to validate,
// and deleted after; the edge proxies (package proxy) answer them from
// the store: HTTP-01 at /.well-known/acme-challenge/<token> on their HTTP
// listener, before edge routing; TLS-ALPN-01 to a ClientHello that offers
// acme-tls/1 on their HTTPS listener. A DNS-01 TXT record is served at
// the domain's acme_challenge_cname_target, where the user's
// _acme-challenge CNAME points. A challenge left behind by a manager that
// stopped expires after [ChallengeTTL] and is removed by the next pass.
//
// # Status
//
// The domain's certificate_management_status says what happens:
//
//   - while ordering, provisioning_job has started_at (when the job
//     began) and msg (what is happening: the order, then what the CA is
//     validating and what must reach the service);
//   - on success, certificate is the new managed certificate (its key
//     sealed), provisioning_job is null and renews_at is at two thirds
//     of the certificate's lifetime; the proxies present it from their
//     next handshake;
//   - when the CA could not validate the domain because its DNS does not
//     lead to the service (a validation problem of type dns, connection,
//     unauthorized, incorrectResponse, tls, malformed or caa; or a CAA
//     record or the CA's policy refusing the name), error_code is
//     DNS_ERROR, and the order is retried on a slow schedule (the job's
//     age, between [DNSRetryMin] and [DNSRetryMax]) so that a fixed DNS
//     record is picked up; setting the policy again retries at once. The
//     msg names the challenge tried and what went wrong in words, and the
//     DNS record to create (name, type CNAME, value: the domain's
//     cname_target for HTTP-01 and TLS-ALPN-01; _acme-challenge.<name>
//     to its acme_challenge_cname_target for DNS-01), or, for a name of
//     the service itself, that its operator keeps its DNS; then when it
//     is retried, and with which challenge;
//   - every other failure (the CA unreachable or failing, a rate limit,
//     a timeout) is INTERNAL_ERROR, retried after the job's age between
//     [InternalRetryMin] and [InternalRetryMax]: the waits double; the
//     msg gives the cause in a few words and the retry time ("the
//     certificate authority could not be reached; retried at ...");
//   - no msg carries an error's text (a Go error chain, or the CA's
//     detail, which may be one): the server's log has it, with the
//     domain, the challenge and the error code;
//   - retry times carry ±10% jitter, and are whole seconds (as shown).
//
// Each report changes the reserved domain, so each transition is a
// reserved_domain_updated event. Detaching the policy stops renewals.
//
// # Imports
//
// The Manager asks the Service for what it needs through [Host], declared
// here: *edgeplane.Host implements it, and cmd/edgeplane wires one in. The
// package imports the leaves domains, kinds, apierr and store (and
// store/follow), never the root package or the policy engine;
// internal/layering's tests keep it so.
package certmanager
