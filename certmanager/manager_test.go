package certmanager_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/acmedns"
	"github.com/edgeplane/edgeplane/certmanager"
	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/internal/acmetest"
	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/proxy"
)

// wantIssued checks that d has a managed certificate whose renewal is at
// two thirds of its lifetime and no job, that the proxy presents it for
// name (verified against Pebble's roots), and returns the leaf.
func wantIssued(t *testing.T, e *edge, p *acmetest.Pebble, id, name string) *x509.Certificate {
	t.Helper()
	d := e.domain(t, id)
	st := d.CertificateManagementStatus
	if st != nil && st.ProvisioningJob != nil && st.ProvisioningJob.Msg == domains.RenewalMsg && st.RenewsAt != nil && !e.clock.Now().Before(*st.RenewsAt) {
		// Pebble's certificates start at the real now, which the test's
		// clock may have passed by two thirds of their lifetime already:
		// then the renewal is due, and shown as a job at once.
		st.ProvisioningJob = nil
	}
	if d.Certificate == nil || st == nil || st.ProvisioningJob != nil || st.RenewsAt == nil {
		t.Fatalf("after the pass: certificate %v, status %+v; want a certificate, renews_at and no job", d.Certificate, st)
	}
	cert, err := e.svc.GetTLSCertificate(e.ctx, e.p, d.Certificate.ID)
	if err != nil {
		t.Fatal(err)
	}
	if want := domains.RenewsAt(cert.NotBefore, cert.NotAfter); !st.RenewsAt.Equal(want) {
		t.Errorf("renews_at %v, want two thirds of %v..%v = %v", st.RenewsAt, cert.NotBefore, cert.NotAfter, want)
	}
	if cert.PrivateKeyType != d.CertificateManagementPolicy.PrivateKeyType {
		t.Errorf("certificate key %s, policy %s", cert.PrivateKeyType, d.CertificateManagementPolicy.PrivateKeyType)
	}
	e.synced(t)
	leaf, err := e.handshake(t, name, p.Roots)
	if err != nil {
		t.Fatalf("TLS to the proxy for %s, verified with Pebble's root: %v", name, err)
	}
	if leaf.SerialNumber.Text(16) == "" || !strings.EqualFold(leaf.DNSNames[0], name) {
		t.Errorf("the proxy presented %v", leaf.DNSNames)
	}
	return leaf
}

// wantRetryIssued checks that the failed job of domain id is retried at
// its retries_at, and the retry issues the certificate for name.
func wantRetryIssued(t *testing.T, e *edge, p *acmetest.Pebble, m *certmanager.Manager, id, name string) {
	t.Helper()
	job := e.domain(t, id).CertificateManagementStatus.ProvisioningJob
	e.clock.AdvanceTo(*job.RetriesAt)
	if res, err := m.Pass(e.ctx); err != nil || res.Issued != 1 {
		t.Fatalf("pass at retries_at = %+v, %v; want one issued", res, err)
	}
	wantIssued(t, e, p, id, name)
}

// TestHTTP01 issues an RSA certificate validated by HTTP-01 through the
// proxy's HTTP listener, and the proxy presents it at once.
func TestHTTP01(t *testing.T) {
	e := startEdge(t)
	p := e.pebble(t, 0)
	e.resolver.Point("app.example.com", true)
	d := e.managed(t, "app.example.com", domains.KeyTypeRSA)
	m := e.manager(t, p, edgeplane.ChallengeHTTP01)
	if _, err := e.handshake(t, "app.example.com", p.Roots); err == nil {
		t.Fatal("the proxy presented a certificate before one was issued")
	}
	res, err := m.Pass(e.ctx)
	if err != nil || res.Issued != 1 || res.Failed != 0 {
		t.Fatalf("Pass = %+v, %v; want one issued", res, err)
	}
	leaf := wantIssued(t, e, p, d.ID, "app.example.com")
	if _, ok := leaf.PublicKey.(*rsa.PublicKey); !ok {
		t.Errorf("leaf key %T, want RSA", leaf.PublicKey)
	}
	// Nothing is due now; the challenge is gone from the store.
	if res, err := m.Pass(e.ctx); err != nil || res.Issued+res.Failed != 0 {
		t.Errorf("second pass = %+v, %v; want nothing to do", res, err)
	}
	// With a certificate, the challenge is answered on HTTPS too (where
	// a CA follows an operator's redirect from HTTP).
	if err := e.svc.Host().Certificates().PutACMEChallenge(e.ctx, edgeplane.ACMEChallenge{Type: edgeplane.ChallengeHTTP01, Name: "app.example.com", Token: "renew",
		KeyAuthorization: "renew.thumb", ExpiresAt: e.clock.Now().Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: p.Roots},
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "tcp", e.httpsAddr)
		}}}
	if resp, err := hc.Get("https://app.example.com/.well-known/acme-challenge/renew"); err != nil {
		t.Fatal(err)
	} else {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(body) != "renew.thumb" {
			t.Errorf("HTTP-01 over HTTPS: %d %q", resp.StatusCode, body)
		}
	}
	resp, err := http.Get("http://" + e.httpAddr + "/.well-known/acme-challenge/anything")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("an unknown challenge token: %d, want 404 (no edge answers it)", resp.StatusCode)
	}
}

// TestHTTP01Answer: the proxy answers a stored challenge for its host
// and token only.
func TestHTTP01Answer(t *testing.T) {
	e := startEdge(t)
	err := e.svc.Host().Certificates().PutACMEChallenge(e.ctx, edgeplane.ACMEChallenge{Type: edgeplane.ChallengeHTTP01, Name: "app.example.com", Token: "tok",
		KeyAuthorization: "tok.thumb", ExpiresAt: e.clock.Now().Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, host, path string
		status           int
		body             string
	}{
		{"the challenge", "app.example.com", "/.well-known/acme-challenge/tok", 200, "tok.thumb"},
		{"upper-case host with a port", "APP.example.com:80", "/.well-known/acme-challenge/tok", 200, "tok.thumb"},
		{"another host", "other.example.com", "/.well-known/acme-challenge/tok", 404, "no edge serves this host\n"},
		{"another token", "app.example.com", "/.well-known/acme-challenge/tok2", 404, "no edge serves this host\n"},
		{"a bad token", "app.example.com", "/.well-known/acme-challenge/../tok", 404, "no edge serves this host\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, "http://"+e.httpAddr+tc.path, nil)
			req.Host = tc.host
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status || string(body) != tc.body {
				t.Errorf("%d %q, want %d %q", resp.StatusCode, body, tc.status, tc.body)
			}
		})
	}
	// A client beyond the limit (each request above counted) gets 429,
	// with a Retry-After (and causes no store read).
	answered := len(tests)
	for ; answered <= 2*proxy.ACMEChallengeLimit; answered++ {
		req, _ := http.NewRequest(http.MethodGet, "http://"+e.httpAddr+"/.well-known/acme-challenge/tok", nil)
		req.Host = "app.example.com"
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusTooManyRequests {
			if resp.Header.Get("Retry-After") == "" {
				t.Error("429 without Retry-After")
			}
			break
		}
	}
	if answered != proxy.ACMEChallengeLimit {
		t.Errorf("%d requests from one client answered before a 429, want %d", answered, proxy.ACMEChallengeLimit)
	}
}

// TestNew: New refuses options the Manager could not order with.
func TestNew(t *testing.T) {
	svc, err := edgeplane.New(memstore.New(), edgeplane.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close(context.Background()) })
	for _, tc := range []struct {
		name string
		o    certmanager.Options
	}{
		{"no host", certmanager.Options{}},
		{"a directory not http(s)", certmanager.Options{Host: svc.Host().Certificates(), Directory: "ftp://ca.example/dir"}},
		{"a directory longer than the Host takes", certmanager.Options{Host: svc.Host().Certificates(),
			Directory: "https://ca.example/" + strings.Repeat("d", edgeplane.MaxACMEDirectory)}},
		{"an email without @", certmanager.Options{Host: svc.Host().Certificates(), Email: "ops"}},
		{"a wildcard's challenge", certmanager.Options{Host: svc.Host().Certificates(), Challenges: []string{edgeplane.ChallengeDNS01}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := certmanager.New(tc.o); err == nil {
				t.Error("New succeeded")
			}
		})
	}
	if _, err := certmanager.New(certmanager.Options{Host: svc.Host().Certificates(), Directory: "https://ca.example/" + strings.Repeat("d", edgeplane.MaxACMEDirectory-len("https://ca.example/"))}); err != nil {
		t.Errorf("a directory of the longest length: %v", err)
	}
}

// TestTLSALPN01 issues an ECDSA certificate validated by TLS-ALPN-01 on
// the proxy's HTTPS listener.
func TestTLSALPN01(t *testing.T) {
	e := startEdge(t)
	p := e.pebble(t, 0)
	e.resolver.Point("tls.example.com", true)
	d := e.managed(t, "tls.example.com", domains.KeyTypeECDSA)
	m := e.manager(t, p, edgeplane.ChallengeTLSALPN01)
	res, err := m.Pass(e.ctx)
	if err != nil || res.Issued != 1 {
		t.Fatalf("Pass = %+v, %v; want one issued", res, err)
	}
	leaf := wantIssued(t, e, p, d.ID, "tls.example.com")
	if _, ok := leaf.PublicKey.(*ecdsa.PublicKey); !ok {
		t.Errorf("leaf key %T, want ECDSA", leaf.PublicKey)
	}
}

// TestDNSError: a domain whose name does not lead to the edge fails with
// DNS_ERROR and a slow retry; once its DNS is fixed, the retry issues.
func TestDNSError(t *testing.T) {
	e := startEdge(t)
	p := e.pebble(t, 0)
	d := e.managed(t, "broken.example.com", domains.KeyTypeRSA)
	m := e.manager(t, p, edgeplane.ChallengeHTTP01)
	res, err := m.Pass(e.ctx)
	if err != nil || res.Failed != 1 {
		t.Fatalf("Pass = %+v, %v; want one failed", res, err)
	}
	now := e.clock.Now()
	got := e.domain(t, d.ID)
	job := got.CertificateManagementStatus.ProvisioningJob
	if job == nil || job.ErrorCode == nil || *job.ErrorCode != domains.ErrorCodeDNS || job.RetriesAt == nil {
		t.Fatalf("job %+v; want DNS_ERROR with a retry time", job)
	}
	if lo, hi := now.Add(certmanager.DNSRetryMin*9/10-time.Second), now.Add(certmanager.DNSRetryMin*11/10); job.RetriesAt.Before(lo) || job.RetriesAt.After(hi) {
		t.Errorf("retries_at %v, want within %v..%v (the slow schedule)", job.RetriesAt, lo, hi)
	}
	if !job.StartedAt.Equal(d.CertificateManagementStatus.ProvisioningJob.StartedAt) {
		t.Errorf("job %+v: want the job's start kept", job)
	}
	// The message names the record to create, for the challenge tried;
	// not acme_challenge_cname_target (null for this domain), nor the
	// CA's detail or an error chain.
	want := "the certificate authority could not validate broken.example.com by HTTP-01 (it could not connect to broken.example.com on port 80); " +
		"create the DNS record with name broken.example.com, type CNAME, value " + *d.CNAMETarget +
		" (in place of any A, AAAA or CNAME record of that name), and make sure port 80 of the edge nodes is reachable; " +
		"retried at " + job.RetriesAt.Format(time.RFC3339) + ", or at once when certificate_management_policy is set again"
	if job.Msg != want || got.ACMEChallengeCNAMETarget != nil {
		t.Errorf("msg:\n got %s\nwant %s", job.Msg, want)
	}
	// Not retried before retries_at.
	if res, err := m.Pass(e.ctx); err != nil || res.Issued+res.Failed != 0 {
		t.Fatalf("pass before retries_at = %+v, %v; want nothing", res, err)
	}
	if st := m.Stats(); st != (certmanager.Stats{DNSErrors: 1}) {
		t.Errorf("Stats after the DNS error: %+v", st)
	}
	e.resolver.Point("broken.example.com", true)
	wantRetryIssued(t, e, p, m, d.ID, "broken.example.com")
}

// TestCAUnreachable: with the CA down the order fails with
// INTERNAL_ERROR and a retry after backoff, growing with the job's age;
// once the CA is back, the retry issues.
func TestCAUnreachable(t *testing.T) {
	e := startEdge(t)
	p := e.pebble(t, 0)
	e.resolver.Point("app.example.com", true)
	d := e.managed(t, "app.example.com", domains.KeyTypeRSA)
	m := e.manager(t, p, edgeplane.ChallengeHTTP01)
	p.SetDown(true)
	started := d.CertificateManagementStatus.ProvisioningJob.StartedAt
	for i, age := range []time.Duration{0, 10 * time.Minute, 5 * time.Hour} {
		e.clock.AdvanceTo(started.Add(age))
		now := e.clock.Now()
		if res, err := m.Pass(e.ctx); err != nil || res.Failed != 1 {
			t.Fatalf("pass %d with the CA down = %+v, %v; want one failed", i, res, err)
		}
		job := e.domain(t, d.ID).CertificateManagementStatus.ProvisioningJob
		if job == nil || job.ErrorCode == nil || *job.ErrorCode != domains.ErrorCodeInternal || job.RetriesAt == nil {
			t.Fatalf("pass %d: job %+v; want INTERNAL_ERROR with a retry time", i, job)
		}
		wait := min(max(now.Sub(started), certmanager.InternalRetryMin), certmanager.InternalRetryMax)
		if lo, hi := now.Add(wait*9/10-time.Second), now.Add(wait*11/10+time.Second); job.RetriesAt.Before(lo) || job.RetriesAt.After(hi) {
			t.Errorf("pass %d (job age %s): retries_at in %s, want %s ±10%%", i, age, job.RetriesAt.Sub(now), wait)
		}
		if !job.StartedAt.Equal(started) {
			t.Errorf("pass %d: started_at %v, want %v kept", i, job.StartedAt, started)
		}
		if want := "the certificate authority could not be reached; retried at " + job.RetriesAt.Format(time.RFC3339); job.Msg != want {
			t.Errorf("pass %d: msg %q, want %q", i, job.Msg, want)
		}
	}
	if st := m.Stats(); st != (certmanager.Stats{InternalErrors: 3}) {
		t.Errorf("Stats with the CA down: %+v", st)
	}
	p.SetDown(false)
	wantRetryIssued(t, e, p, m, d.ID, "app.example.com")
}

// TestRenewal: a short-lived certificate is renewed at two thirds of its
// lifetime, and the proxy presents the new one.
func TestRenewal(t *testing.T) {
	e := startEdge(t)
	p := e.pebble(t, 3*time.Hour)
	e.resolver.Point("app.example.com", true)
	d := e.managed(t, "app.example.com", domains.KeyTypeECDSA)
	m := e.manager(t, p, edgeplane.ChallengeHTTP01)
	if res, err := m.Pass(e.ctx); err != nil || res.Issued != 1 {
		t.Fatalf("Pass = %+v, %v", res, err)
	}
	first := wantIssued(t, e, p, d.ID, "app.example.com")
	renews := *e.domain(t, d.ID).CertificateManagementStatus.RenewsAt
	firstID := e.domain(t, d.ID).Certificate.ID
	if got := renews.Sub(first.NotBefore); got < 2*time.Hour-time.Minute || got > 2*time.Hour+time.Minute {
		t.Fatalf("renews_at %s after not_before, want two thirds of 3h", got)
	}
	e.clock.AdvanceTo(renews.Add(-time.Second))
	if res, err := m.Pass(e.ctx); err != nil || res.Issued+res.Failed != 0 {
		t.Fatalf("pass before renews_at = %+v, %v; want nothing", res, err)
	}
	e.clock.AdvanceTo(renews)
	if res, err := m.Pass(e.ctx); err != nil || res.Issued != 1 {
		t.Fatalf("renewal pass = %+v, %v; want one issued", res, err)
	}
	second := wantIssued(t, e, p, d.ID, "app.example.com")
	if second.SerialNumber.Cmp(first.SerialNumber) == 0 {
		t.Error("the proxy still presents the first certificate")
	}
	if again := e.domain(t, d.ID).Certificate.ID; again == firstID {
		t.Errorf("the domain's certificate is still %s after the renewal", again)
	}
	if _, err := e.svc.GetTLSCertificate(e.ctx, e.p, firstID); err == nil {
		t.Error("the replaced managed certificate is still there")
	}
	// Detaching the policy stops renewals.
	if err := e.svc.DetachReservedDomainCertificateManagementPolicy(e.ctx, e.p, d.ID); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(24 * time.Hour)
	if res, err := m.Pass(e.ctx); err != nil || res.Issued+res.Failed != 0 {
		t.Fatalf("pass after detaching the policy = %+v, %v; want nothing", res, err)
	}
}

// TestDNS01Wildcard issues a certificate for a wildcard outside the
// service's base domains by DNS-01: the user's _acme-challenge CNAME
// leads the CA's resolver to the domain's acme_challenge_cname_target,
// which the edge's DNS server (package acmedns) answers from the store.
func TestDNS01Wildcard(t *testing.T) {
	e := startEdge(t)
	p := e.pebble(t, 0)
	authority, err := acmedns.New(acmedns.Options{Host: e.svc.Host().Certificates(), Zones: []string{"acme." + domains.DefaultCNAMEBase}})
	if err != nil {
		t.Fatal(err)
	}
	addr, err := authority.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { authority.Close() })
	d := e.managed(t, "*.example.org", domains.KeyTypeECDSA)
	if d.ACMEChallengeCNAMETarget == nil {
		t.Fatalf("no acme_challenge_cname_target: %+v", d)
	}
	if job := d.CertificateManagementStatus.ProvisioningJob; !strings.Contains(job.Msg, *d.ACMEChallengeCNAMETarget) {
		t.Errorf("the job's msg %q does not name the CNAME target %s", job.Msg, *d.ACMEChallengeCNAMETarget)
	}
	m := e.manager(t, p)
	// Without the user's CNAME record: DNS_ERROR.
	if res, err := m.Pass(e.ctx); err != nil || res.Failed != 1 {
		t.Fatalf("pass without the CNAME = %+v, %v; want one failed", res, err)
	}
	job := e.domain(t, d.ID).CertificateManagementStatus.ProvisioningJob
	if job.ErrorCode == nil || *job.ErrorCode != domains.ErrorCodeDNS {
		t.Fatalf("job %+v, want DNS_ERROR", job)
	}
	// The user adds it; setting the policy again retries at once.
	e.resolver.CNAME("_acme-challenge.example.org", *d.ACMEChallengeCNAMETarget, addr)
	if _, err := e.svc.UpdateReservedDomain(e.ctx, e.p, d.ID, domains.UpdateParams{CertificateManagementPolicy: &domains.CertPolicyParams{Authority: "letsencrypt", PrivateKeyType: domains.KeyTypeECDSA}}); err != nil {
		t.Fatal(err)
	}
	if res, err := m.Pass(e.ctx); err != nil || res.Issued != 1 {
		t.Fatalf("pass with the CNAME = %+v, %v; want one issued", res, err)
	}
	got := e.domain(t, d.ID)
	c, err := e.svc.GetTLSCertificate(e.ctx, e.p, got.Certificate.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.SubjectAlternativeNames.DNSNames) != 1 || c.SubjectAlternativeNames.DNSNames[0] != "*.example.org" {
		t.Errorf("certificate names %v, want *.example.org", c.SubjectAlternativeNames.DNSNames)
	}
	// The challenge is gone: the DNS server no longer answers it.
	if _, err := e.svc.Host().Certificates().ACMEChallenge(e.ctx, edgeplane.ChallengeDNS01, *d.ACMEChallengeCNAMETarget, ""); err == nil {
		t.Error("the DNS-01 challenge is still stored after the order")
	}
}

// TestRunStartsAtOnce: with the default Interval (a sweep a minute),
// Run follows the store's change feed and orders at once: a domain
// created with a policy, and a policy set on a domain that had none, are
// issued within 15 s, long before the next sweep.
func TestRunStartsAtOnce(t *testing.T) {
	e := startEdge(t)
	p := e.pebble(t, 0)
	for _, n := range []string{"first.example.com", "created.example.com", "later.example.com"} {
		e.resolver.Point(n, true)
	}
	first := e.managed(t, "first.example.com", domains.KeyTypeECDSA)
	later, err := e.svc.CreateReservedDomain(e.ctx, e.p, domains.CreateParams{Domain: "later.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	m := e.manager(t, p)
	e.run(t, m)
	// Run's first pass issues the domain that was due when it started;
	// the next sweep is a minute away.
	e.waitIssued(t, first.ID, 15*time.Second)
	created := e.managed(t, "created.example.com", domains.KeyTypeECDSA)
	took := e.waitIssued(t, created.ID, 15*time.Second)
	t.Logf("a domain created with a policy: issued in %s", took.Round(time.Millisecond))
	if _, err := e.svc.UpdateReservedDomain(e.ctx, e.p, later.ID, domains.UpdateParams{
		CertificateManagementPolicy: &domains.CertPolicyParams{Authority: "letsencrypt", PrivateKeyType: domains.KeyTypeECDSA}}); err != nil {
		t.Fatal(err)
	}
	took = e.waitIssued(t, later.ID, 15*time.Second)
	t.Logf("a policy set on an existing domain: issued in %s", took.Round(time.Millisecond))
	// The manager counts an issue once the certificate's write returned,
	// a moment after the test saw the write: wait for the count (3 s at
	// most), then want exactly it.
	deadline := time.Now().Add(3 * time.Second)
	for m.Stats().Issued < 3 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if st := m.Stats(); st != (certmanager.Stats{Issued: 3}) {
		t.Errorf("Stats %+v, want 3 issued and nothing else", st)
	}
}

// TestOneValidationPerOrder: with the default challenges, an order for a
// name that does not lead to the edge tries HTTP-01 only, one
// validation at the CA, and its message names the DNS record to create;
// the retry tries TLS-ALPN-01, again once.
func TestOneValidationPerOrder(t *testing.T) {
	e := startEdge(t)
	p := e.pebble(t, 0)
	d := e.managed(t, "nowhere.example.com", domains.KeyTypeECDSA)
	m := e.manager(t, p)
	if res, err := m.Pass(e.ctx); err != nil || res.Failed != 1 {
		t.Fatalf("Pass = %+v, %v; want one failed", res, err)
	}
	if n := p.Validations(); n != 1 {
		t.Errorf("the failed order made %d validations at the CA, want 1", n)
	}
	job := e.domain(t, d.ID).CertificateManagementStatus.ProvisioningJob
	at := job.RetriesAt.Format(time.RFC3339)
	want := "the certificate authority could not validate nowhere.example.com by HTTP-01 (it could not connect to nowhere.example.com on port 80); " +
		"create the DNS record with name nowhere.example.com, type CNAME, value " + *d.CNAMETarget +
		" (in place of any A, AAAA or CNAME record of that name), and make sure port 80 of the edge nodes is reachable; " +
		"retried with TLS-ALPN-01 at " + at + ", or at once when certificate_management_policy is set again"
	if job.Msg != want {
		t.Errorf("msg:\n got %s\nwant %s", job.Msg, want)
	}
	e.clock.AdvanceTo(*job.RetriesAt)
	if res, err := m.Pass(e.ctx); err != nil || res.Failed != 1 {
		t.Fatalf("retry = %+v, %v; want one failed", res, err)
	}
	if n := p.Validations(); n != 2 {
		t.Errorf("after the retry: %d validations at the CA, want 2", n)
	}
	job = e.domain(t, d.ID).CertificateManagementStatus.ProvisioningJob
	if !strings.Contains(job.Msg, "by TLS-ALPN-01 (") || !strings.Contains(job.Msg, "retried with HTTP-01 at "+job.RetriesAt.Format(time.RFC3339)) {
		t.Errorf("the retry's msg %q: want TLS-ALPN-01 tried and HTTP-01 next", job.Msg)
	}
}
