package certmanager

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/mholt/acmez/v3/acme"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/identity"
	"github.com/edgeplane/edgeplane/memstore"
)

// TestClassify: each way an order fails maps to its error code; a
// mapping set wrong fails a case.
func TestClassify(t *testing.T) {
	authz := func(typ string) error {
		// As acmez reports a failed validation: the problem of the
		// authorization's challenge, wrapped.
		return fmt.Errorf("solving challenge: app.example.com: [app.example.com] authorization failed: %w",
			acme.Problem{Type: typ, Detail: "detail of " + typ, Resource: acme.Authorization{}})
	}
	order := func(typ string) error {
		return fmt.Errorf("creating new order: %w", acme.Problem{Type: typ, Detail: "detail of " + typ})
	}
	tests := []struct {
		name  string
		err   error
		code  string
		cause cause
	}{
		{"validation: DNS", authz(acme.ProblemTypeDNS), domains.ErrorCodeDNS, causeNoName},
		{"validation: connection", authz(acme.ProblemTypeConnection), domains.ErrorCodeDNS, causeNoConnect},
		{"validation: unauthorized", authz(acme.ProblemTypeUnauthorized), domains.ErrorCodeDNS, causeWrongReply},
		{"validation: incorrect response", authz(acme.ProblemTypeIncorrectResponse), domains.ErrorCodeDNS, causeWrongReply},
		{"validation: TLS", authz(acme.ProblemTypeTLS), domains.ErrorCodeDNS, causeTLS},
		{"validation: CAA", authz(acme.ProblemTypeCAA), domains.ErrorCodeDNS, causeCAA},
		{"validation: malformed (unresolvable)", authz(acme.ProblemTypeMalformed), domains.ErrorCodeDNS, causeNoName},
		{"validation: the CA's internal error", authz(acme.ProblemTypeServerInternal), domains.ErrorCodeInternal, causeRefused},
		{"validation: rate limited", authz(acme.ProblemTypeRateLimited), domains.ErrorCodeInternal, causeRateLimited},
		{"order: CAA forbids", order(acme.ProblemTypeCAA), domains.ErrorCodeDNS, causeCAA},
		{"order: rejected identifier", order(acme.ProblemTypeRejectedIdentifier), domains.ErrorCodeDNS, causeRejected},
		{"order: rate limited", order(acme.ProblemTypeRateLimited), domains.ErrorCodeInternal, causeRateLimited},
		{"order: bad nonce", order(acme.ProblemTypeBadNonce), domains.ErrorCodeInternal, causeRefused},
		{"order: malformed", order(acme.ProblemTypeMalformed), domains.ErrorCodeInternal, causeRefused},
		{"order: server internal", order(acme.ProblemTypeServerInternal), domains.ErrorCodeInternal, causeRefused},
		{"CA unreachable", errors.New("provisioning client: dial tcp 127.0.0.1:1: connect: connection refused"), domains.ErrorCodeInternal, causeUnreachable},
		{"timeout", fmt.Errorf("polling: %w", context.DeadlineExceeded), domains.ErrorCodeInternal, causeTimeout},
		{"not stored", fmt.Errorf("%w: %w", errNotStored, errors.New("store: disk full")), domains.ErrorCodeInternal, causeNotStored},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, c := classify(tc.err)
			if code != tc.code || c != tc.cause {
				t.Errorf("classify = %s, cause %d; want %s, cause %d", code, c, tc.code, tc.cause)
			}
		})
	}
}

// TestFailureMessages: a failed order's message says what happened and
// what to do in words: for DNS_ERROR the DNS record of the challenge
// tried (name, type, value), for INTERNAL_ERROR the cause and the retry
// time; never an error's text.
func TestFailureMessages(t *testing.T) {
	at := time.Date(2026, 11, 28, 13, 0, 0, 0, time.UTC)
	str := func(s string) *string { return &s }
	custom := &domains.ReservedDomain{Domain: "app.example.com", CNAMETarget: str("k3j.edgeplane-cname.com")}
	owned := &domains.ReservedDomain{Domain: "app.edgeplane.app"}
	wild := &domains.ReservedDomain{Domain: "*.example.org", CNAMETarget: str("w9.edgeplane-cname.com"), ACMEChallengeCNAMETarget: str("w9.acme.edgeplane-cname.com")}
	const again = ", or at once when certificate_management_policy is set again"
	tests := []struct {
		name string
		f    failedOrder
		want string
	}{
		{"HTTP-01 unresolved, custom domain", failedOrder{Domain: custom, Challenge: edgeplane.ChallengeHTTP01, Next: edgeplane.ChallengeTLSALPN01, Cause: causeNoConnect},
			"the certificate authority could not validate app.example.com by HTTP-01 (it could not connect to app.example.com on port 80); " +
				"create the DNS record with name app.example.com, type CNAME, value k3j.edgeplane-cname.com (in place of any A, AAAA or CNAME record of that name), " +
				"and make sure port 80 of the edge nodes is reachable; retried with TLS-ALPN-01 at 2026-11-28T13:00:00Z" + again},
		{"TLS-ALPN-01, another server answered", failedOrder{Domain: custom, Challenge: edgeplane.ChallengeTLSALPN01, Next: edgeplane.ChallengeTLSALPN01, Cause: causeWrongReply},
			"the certificate authority could not validate app.example.com by TLS-ALPN-01 (a server other than this service answered on port 443); " +
				"create the DNS record with name app.example.com, type CNAME, value k3j.edgeplane-cname.com (in place of any A, AAAA or CNAME record of that name), " +
				"and make sure port 443 of the edge nodes is reachable; retried at 2026-11-28T13:00:00Z" + again},
		{"service-owned name", failedOrder{Domain: owned, Challenge: edgeplane.ChallengeHTTP01, Cause: causeNoName},
			"the certificate authority could not validate app.edgeplane.app by HTTP-01 (app.edgeplane.app did not resolve); " +
				"app.edgeplane.app is a name of this service, whose DNS its operator keeps: ask the operator to point it (or a wildcard record of its parent domain) at the edge nodes, with port 80 open; " +
				"retried at 2026-11-28T13:00:00Z" + again},
		{"wildcard by DNS-01", failedOrder{Domain: wild, Challenge: edgeplane.ChallengeDNS01, Next: edgeplane.ChallengeDNS01, Cause: causeWrongReply},
			"the certificate authority could not validate *.example.org by DNS-01 (it found no TXT record of this service at _acme-challenge.example.org); " +
				"create the DNS record with name _acme-challenge.example.org, type CNAME, value w9.acme.edgeplane-cname.com (in place of any other record of that name); " +
				"retried at 2026-11-28T13:00:00Z" + again},
		{"CAA", failedOrder{Domain: custom, Challenge: edgeplane.ChallengeHTTP01, Cause: causeCAA, CAAIdentity: "letsencrypt.org"},
			`a CAA record of app.example.com or of a parent domain does not allow the certificate authority to issue for it; remove that CAA record or add one with name app.example.com, type CAA, value 0 issue "letsencrypt.org"; retried at 2026-11-28T13:00:00Z` + again},
		{"CA unreachable", failedOrder{Domain: custom, Challenge: edgeplane.ChallengeHTTP01, Cause: causeUnreachable},
			"the certificate authority could not be reached; retried at 2026-11-28T13:00:00Z"},
		{"rate limit", failedOrder{Domain: custom, Challenge: edgeplane.ChallengeHTTP01, Cause: causeRateLimited},
			"the certificate authority's rate limit was reached; retried at 2026-11-28T13:00:00Z"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.f.RetriesAt = at
			if got := tc.f.message(); got != tc.want {
				t.Errorf("message:\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

// TestFailureHidesErrors: whatever the error, the message carries none
// of its text (the CA's detail, a Go error chain): the log does.
func TestFailureHidesErrors(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	m := &Manager{clock: func() time.Time { return now }, directory: LetsEncryptProduction}
	d := &domains.ReservedDomain{Domain: "app.example.com"}
	for _, err := range []error{
		fmt.Errorf("creating new order: fetching new nonce from server: performing request: Head \"https://ca.example/nonce\": %w",
			&net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}),
		fmt.Errorf("solving challenge: app.example.com: [app.example.com] %w", acme.Problem{Type: acme.ProblemTypeConnection,
			Detail: `Get "http://app.example.com/.well-known/acme-challenge/x": dial tcp: lookup app.example.com: no such host`, Resource: acme.Authorization{}}),
		fmt.Errorf("creating new order: %w", acme.Problem{Type: acme.ProblemTypeServerInternal, Detail: "boom: database is locked"}),
	} {
		f := m.failure(d, err, now, edgeplane.ChallengeHTTP01, edgeplane.ChallengeHTTP01)
		for _, leak := range []string{"dial", "tcp", "lookup", "Head", "nonce", "boom", "refused", "solving", `"`} {
			if strings.Contains(f.Msg, leak) {
				t.Errorf("msg %q shows %q of the error %v", f.Msg, leak, err)
			}
		}
	}
}

// TestFailureSchedule: retries wait the job's age within each code's
// bounds, with ±10% jitter, and messages fit the Host's bound.
func TestFailureSchedule(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	m := &Manager{clock: func() time.Time { return now }}
	d := &domains.ReservedDomain{Domain: "app.example.com"}
	dnsErr := fmt.Errorf("x: %w", acme.Problem{Type: acme.ProblemTypeDNS, Detail: strings.Repeat("é", 2000), Resource: acme.Authorization{}})
	tests := []struct {
		name string
		err  error
		age  time.Duration
		code string
		wait time.Duration
	}{
		{"internal, new job", errors.New("down"), 0, domains.ErrorCodeInternal, InternalRetryMin},
		{"internal, 20 minutes old", errors.New("down"), 20 * time.Minute, domains.ErrorCodeInternal, 20 * time.Minute},
		{"internal, a day old", errors.New("down"), 24 * time.Hour, domains.ErrorCodeInternal, InternalRetryMax},
		{"dns, new job", dnsErr, 0, domains.ErrorCodeDNS, DNSRetryMin},
		{"dns, 5 hours old", dnsErr, 5 * time.Hour, domains.ErrorCodeDNS, 5 * time.Hour},
		{"dns, a week old", dnsErr, 7 * 24 * time.Hour, domains.ErrorCodeDNS, DNSRetryMax},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for range 20 {
				f := m.failure(d, tc.err, now.Add(-tc.age), edgeplane.ChallengeHTTP01, edgeplane.ChallengeHTTP01)
				if f.ErrorCode != tc.code {
					t.Fatalf("code %s, want %s", f.ErrorCode, tc.code)
				}
				if got := f.RetriesAt.Sub(now); got < tc.wait*9/10 || got > tc.wait*11/10 {
					t.Fatalf("waits %s, want %s ±10%%", got, tc.wait)
				}
				if err := f.Validate(now); err != nil {
					t.Fatalf("the Host would refuse the failure: %v", err)
				}
			}
		})
	}
}

// TestHeldUntilSweep: a domain whose last order could not be reported
// (it is still due) is left out of the passes the feed wakes, and ordered
// by the next sweep; once that order is reported, the feed's passes
// order it again.
func TestHeldUntilSweep(t *testing.T) {
	ctx := context.Background()
	svc, err := edgeplane.New(memstore.New(), edgeplane.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close(ctx) })
	acct, err := svc.Host().CreateAccount(ctx, identity.AccountParams{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	user, err := svc.Host().CreateUser(ctx, acct.ID, identity.SubjectParams{Name: "ops", Admin: true})
	if err != nil {
		t.Fatal(err)
	}
	p := edgeplane.Principal{AccountID: acct.ID, SubjectID: user.ID, Admin: true}
	d, err := svc.CreateReservedDomain(ctx, p, domains.CreateParams{Domain: "app.example.com",
		CertificateManagementPolicy: &domains.CertPolicyParams{Authority: "letsencrypt"}})
	if err != nil {
		t.Fatal(err)
	}
	// A CA that cannot be reached: every order fails at once.
	m, err := New(Options{Host: svc.Host().Certificates(), Directory: "http://127.0.0.1:1/directory"})
	if err != nil {
		t.Fatal(err)
	}
	m.setJob(d.ID, &job{started: d.CertificateManagementStatus.ProvisioningJob.StartedAt, held: true, ordered: time.Now()})
	if res, err := m.pass(ctx, false); err != nil || res != (PassResult{}) {
		t.Fatalf("a pass the feed woke = %+v, %v; want the held domain left out", res, err)
	}
	if res, err := m.pass(ctx, true); err != nil || res.Failed != 1 {
		t.Fatalf("a sweep = %+v, %v; want the held domain ordered (and failed)", res, err)
	}
	if m.held(d.ID) {
		t.Error("still held after an order whose failure was reported")
	}
	got, err := svc.GetReservedDomain(ctx, p, d.ID)
	if err != nil {
		t.Fatal(err)
	}
	if j := got.CertificateManagementStatus.ProvisioningJob; j.ErrorCode == nil || *j.ErrorCode != domains.ErrorCodeInternal ||
		j.Msg != "the certificate authority could not be reached; retried at "+j.RetriesAt.Format(time.RFC3339) {
		t.Errorf("job %+v", j)
	}
}
