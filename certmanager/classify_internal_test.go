package certmanager

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mholt/acmez/v3/acme"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/domains"
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
		name string
		err  error
		code string
	}{
		{"validation: DNS", authz(acme.ProblemTypeDNS), domains.ErrorCodeDNS},
		{"validation: connection", authz(acme.ProblemTypeConnection), domains.ErrorCodeDNS},
		{"validation: unauthorized", authz(acme.ProblemTypeUnauthorized), domains.ErrorCodeDNS},
		{"validation: incorrect response", authz(acme.ProblemTypeIncorrectResponse), domains.ErrorCodeDNS},
		{"validation: TLS", authz(acme.ProblemTypeTLS), domains.ErrorCodeDNS},
		{"validation: CAA", authz(acme.ProblemTypeCAA), domains.ErrorCodeDNS},
		{"validation: malformed (unresolvable)", authz(acme.ProblemTypeMalformed), domains.ErrorCodeDNS},
		{"validation: the CA's internal error", authz(acme.ProblemTypeServerInternal), domains.ErrorCodeInternal},
		{"validation: rate limited", authz(acme.ProblemTypeRateLimited), domains.ErrorCodeInternal},
		{"order: CAA forbids", order(acme.ProblemTypeCAA), domains.ErrorCodeDNS},
		{"order: rejected identifier", order(acme.ProblemTypeRejectedIdentifier), domains.ErrorCodeDNS},
		{"order: rate limited", order(acme.ProblemTypeRateLimited), domains.ErrorCodeInternal},
		{"order: bad nonce", order(acme.ProblemTypeBadNonce), domains.ErrorCodeInternal},
		{"order: malformed", order(acme.ProblemTypeMalformed), domains.ErrorCodeInternal},
		{"order: server internal", order(acme.ProblemTypeServerInternal), domains.ErrorCodeInternal},
		{"CA unreachable", errors.New("provisioning client: dial tcp 127.0.0.1:1: connect: connection refused"), domains.ErrorCodeInternal},
		{"timeout", fmt.Errorf("polling: %w", context.DeadlineExceeded), domains.ErrorCodeInternal},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, msg := classify("app.example.com", tc.err)
			if code != tc.code {
				t.Errorf("code %s, want %s (msg %q)", code, tc.code, msg)
			}
			if msg == "" {
				t.Error("no message")
			}
			if strings.Contains(tc.name, "rate limited") && !strings.Contains(msg, "rate limit") {
				t.Errorf("msg %q does not say a rate limit was reached", msg)
			}
			var p acme.Problem
			if errors.As(tc.err, &p) && !strings.Contains(msg, p.Detail) {
				t.Errorf("msg %q does not say the CA's detail %q", msg, p.Detail)
			}
		})
	}
}

// TestFailureSchedule: retries wait the job's age within each code's
// bounds, with ±10% jitter, and messages fit the Host's bound.
func TestFailureSchedule(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	m := &Manager{clock: func() time.Time { return now }}
	o := edgeplane.CertificateOrder{Domain: "app.example.com"}
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
				f := m.failure(o, tc.err, now.Add(-tc.age))
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
