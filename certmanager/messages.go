package certmanager

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/mholt/acmez/v3/acme"

	"github.com/edgeplane/edgeplane/domains"
)

// The messages of failed orders (provisioning_job.msg) say in words what
// happened and what the user must do: for DNS_ERROR the DNS record to
// create, for INTERNAL_ERROR the cause and when the order is retried.
// They never carry an error's text (a Go error chain, or a CA's detail,
// which may be one): the server's log has those.

// cause is why an order failed, as its message says it.
type cause uint8

const (
	// INTERNAL_ERROR causes.
	causeUnreachable cause = iota + 1 // the CA could not be reached (or failed to answer)
	causeRateLimited                  // the CA's rate limit
	causeRefused                      // the CA answered the order with a problem of its own
	causeTimeout                      // the order did not complete in time
	causeNotStored                    // issued, but the certificate could not be recorded
	// DNS_ERROR causes: the CA could not validate the name.
	causeNoName     // it did not resolve (dns, malformed)
	causeNoConnect  // the CA could not connect (connection)
	causeWrongReply // a server answered, not this service (unauthorized, incorrectResponse)
	causeTLS        // the TLS handshake failed (tls)
	causeInvalid    // another validation problem
	causeCAA        // a CAA record forbids the CA
	causeRejected   // the CA's policy refuses the name
)

// errNotStored wraps the error of a certificate that was issued but
// could not be recorded.
var errNotStored = errors.New("the issued certificate could not be recorded")

// validationCauses are the problems of a failed validation that mean the
// name's DNS does not lead to the edge (DNS_ERROR), by type.
var validationCauses = map[string]cause{
	acme.ProblemTypeDNS: causeNoName, acme.ProblemTypeMalformed: causeNoName,
	acme.ProblemTypeConnection:   causeNoConnect,
	acme.ProblemTypeUnauthorized: causeWrongReply, acme.ProblemTypeIncorrectResponse: causeWrongReply,
	acme.ProblemTypeTLS: causeTLS, acme.ProblemTypeCAA: causeCAA, acme.ProblemTypeRejectedIdentifier: causeRejected,
}

// classify returns the error code and cause of an order's error.
func classify(err error) (code string, c cause) {
	if errors.Is(err, errNotStored) {
		return domains.ErrorCodeInternal, causeNotStored
	}
	var p acme.Problem
	if errors.As(err, &p) {
		_, validation := p.Resource.(acme.Authorization)
		if c, ok := validationCauses[p.Type]; ok && validation {
			return domains.ErrorCodeDNS, c
		}
		switch p.Type {
		case acme.ProblemTypeDNS:
			return domains.ErrorCodeDNS, causeNoName
		case acme.ProblemTypeCAA:
			return domains.ErrorCodeDNS, causeCAA
		case acme.ProblemTypeRejectedIdentifier:
			return domains.ErrorCodeDNS, causeRejected
		case acme.ProblemTypeRateLimited:
			return domains.ErrorCodeInternal, causeRateLimited
		}
		return domains.ErrorCodeInternal, causeRefused
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return domains.ErrorCodeInternal, causeTimeout
	}
	return domains.ErrorCodeInternal, causeUnreachable
}

// failedOrder is what the message of a failed order is made from.
type failedOrder struct {
	// Domain is the reserved domain as the order's first report left it
	// (its name, cname_target and acme_challenge_cname_target).
	Domain *domains.ReservedDomain
	// Challenge is the challenge type the order tried, and Next the one
	// its retry tries ("" when the same).
	Challenge, Next string
	// Cause is why it failed; RetriesAt when it is retried.
	Cause     cause
	RetriesAt time.Time
	// CAAIdentity is the CA's name in CAA records ("" when unknown).
	CAAIdentity string
}

// challengeName returns how messages name a challenge type.
func challengeName(typ string) string {
	switch typ {
	case domains.ChallengeHTTP01:
		return "HTTP-01"
	case domains.ChallengeTLSALPN01:
		return "TLS-ALPN-01"
	case domains.ChallengeDNS01:
		return "DNS-01"
	}
	return typ
}

// challengePort returns the port the CA connects to for a challenge
// type, or "" (DNS-01).
func challengePort(typ string) string {
	switch typ {
	case domains.ChallengeHTTP01:
		return "80"
	case domains.ChallengeTLSALPN01:
		return "443"
	}
	return ""
}

// message returns the job's message of a failed order.
func (f failedOrder) message() string {
	at := f.RetriesAt.UTC().Truncate(time.Second).Format(time.RFC3339)
	switch f.Cause {
	case causeUnreachable:
		return "the certificate authority could not be reached; retried at " + at
	case causeRateLimited:
		return "the certificate authority's rate limit was reached; retried at " + at
	case causeRefused:
		return "the certificate authority could not complete the order; retried at " + at
	case causeTimeout:
		return fmt.Sprintf("the certificate authority did not complete the order within %s; retried at %s", orderTimeout, at)
	case causeNotStored:
		return "the certificate was issued but could not be stored; retried at " + at
	}
	name := f.Domain.Domain
	retry := "retried at " + at
	if f.Next != "" && f.Next != f.Challenge {
		retry = fmt.Sprintf("retried with %s at %s", challengeName(f.Next), at)
	}
	retry += ", or at once when certificate_management_policy is set again"
	switch f.Cause {
	case causeCAA:
		allow := "the certificate authority"
		if f.CAAIdentity != "" {
			allow = f.CAAIdentity
		}
		return fmt.Sprintf("a CAA record of %s or of a parent domain does not allow the certificate authority to issue for it; remove that CAA record or add one with name %s, type CAA, value 0 issue \"%s\"; %s",
			name, strings.TrimPrefix(name, "*."), allow, retry)
	case causeRejected:
		return fmt.Sprintf("the certificate authority refuses to issue certificates for %s (its policy forbids the name); remove certificate_management_policy or upload a certificate for it", name)
	}
	what := fmt.Sprintf("the certificate authority could not validate %s by %s", name, challengeName(f.Challenge))
	port := challengePort(f.Challenge)
	switch {
	case f.Challenge == domains.ChallengeDNS01:
		what += fmt.Sprintf(" (it found no TXT record of this service at _acme-challenge.%s)", strings.TrimPrefix(name, "*."))
	case f.Cause == causeNoName:
		what += fmt.Sprintf(" (%s did not resolve)", name)
	case f.Cause == causeNoConnect:
		what += fmt.Sprintf(" (it could not connect to %s on port %s)", name, port)
	case f.Cause == causeWrongReply:
		what += fmt.Sprintf(" (a server other than this service answered on port %s)", port)
	case f.Cause == causeTLS:
		what += fmt.Sprintf(" (the TLS handshake on port %s failed)", port)
	}
	return what + "; " + f.record() + "; " + retry
}

// record says which DNS record the user must create for the challenge
// tried, or whom to ask when the name is the service's own.
func (f failedOrder) record() string {
	d := f.Domain
	if f.Challenge == domains.ChallengeDNS01 {
		base := strings.TrimPrefix(d.Domain, "*.")
		if d.ACMEChallengeCNAMETarget != nil {
			return fmt.Sprintf("create the DNS record with name _acme-challenge.%s, type CNAME, value %s (in place of any other record of that name)",
				base, *d.ACMEChallengeCNAMETarget)
		}
		return fmt.Sprintf("_acme-challenge.%s is a name of this service, whose DNS its operator keeps: ask the operator to delegate it to the service's DNS server (edgeplane proxy -dns-addr)", base)
	}
	if d.CNAMETarget != nil {
		return fmt.Sprintf("create the DNS record with name %s, type CNAME, value %s (in place of any A, AAAA or CNAME record of that name), and make sure port %s of the edge nodes is reachable",
			d.Domain, *d.CNAMETarget, challengePort(f.Challenge))
	}
	return fmt.Sprintf("%s is a name of this service, whose DNS its operator keeps: ask the operator to point it (or a wildcard record of its parent domain) at the edge nodes, with port %s open",
		d.Domain, challengePort(f.Challenge))
}

// caaIdentity returns the name a CAA record gives the CA of directory:
// letsencrypt.org for Let's Encrypt's directories, else "" (unknown).
func caaIdentity(directory string) string {
	if u, err := url.Parse(directory); err == nil && (u.Hostname() == "letsencrypt.org" || strings.HasSuffix(u.Hostname(), ".letsencrypt.org")) {
		return "letsencrypt.org"
	}
	return ""
}
