package edgeplane_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/store"
)

func TestACMEChallenges(t *testing.T) {
	e := newEnv(t)
	h := e.svc.Host()
	exp := e.clock.Now().Add(10 * time.Minute)
	c := edgeplane.ACMEChallenge{Type: edgeplane.ChallengeHTTP01, Name: "app.example.com", Token: "tok-1_A", KeyAuthorization: "tok-1_A.thumb", ExpiresAt: exp}
	if err := h.Certificates().PutACMEChallenge(e.ctx, c); err != nil {
		t.Fatal(err)
	}
	got, err := h.Certificates().ACMEChallenge(e.ctx, edgeplane.ChallengeHTTP01, "app.example.com", "tok-1_A")
	if err != nil || got.KeyAuthorization != c.KeyAuthorization || !got.ExpiresAt.Equal(exp) {
		t.Fatalf("ACMEChallenge = %+v, %v; want %+v", got, err, c)
	}
	// Another name, token or type is not found.
	for _, k := range [][3]string{
		{edgeplane.ChallengeHTTP01, "other.example.com", "tok-1_A"},
		{edgeplane.ChallengeHTTP01, "app.example.com", "tok-2"},
		{edgeplane.ChallengeTLSALPN01, "app.example.com", ""},
	} {
		if _, err := h.Certificates().ACMEChallenge(e.ctx, k[0], k[1], k[2]); !errors.Is(err, apierr.ErrNotFound) {
			t.Errorf("ACMEChallenge(%v) = %v, want not found", k, err)
		}
	}
	// Put again replaces.
	c.KeyAuthorization = "tok-1_A.other"
	if err := h.Certificates().PutACMEChallenge(e.ctx, c); err != nil {
		t.Fatal(err)
	}
	if got, err := h.Certificates().ACMEChallenge(e.ctx, c.Type, c.Name, c.Token); err != nil || got.KeyAuthorization != "tok-1_A.other" {
		t.Fatalf("after a second put: %+v, %v", got, err)
	}
	// A TLS-ALPN-01 and a DNS-01 one, by name only.
	alpn := edgeplane.ACMEChallenge{Type: edgeplane.ChallengeTLSALPN01, Name: "app.example.com", KeyAuthorization: "x.y", ExpiresAt: exp.Add(time.Hour)}
	txt := edgeplane.ACMEChallenge{Type: edgeplane.ChallengeDNS01, Name: "abc.acme.edgeplane-cname.com", KeyAuthorization: "digest", ExpiresAt: exp.Add(time.Hour)}
	for _, c := range []edgeplane.ACMEChallenge{alpn, txt} {
		if err := h.Certificates().PutACMEChallenge(e.ctx, c); err != nil {
			t.Fatal(err)
		}
		if got, err := h.Certificates().ACMEChallenge(e.ctx, c.Type, c.Name, ""); err != nil || got.KeyAuthorization != c.KeyAuthorization {
			t.Fatalf("%s: %+v, %v", c.Type, got, err)
		}
	}
	// Expired: not answered, and reaped; the others stay.
	e.clock.Advance(10 * time.Minute)
	if _, err := h.Certificates().ACMEChallenge(e.ctx, c.Type, c.Name, c.Token); !errors.Is(err, apierr.ErrNotFound) {
		t.Fatalf("expired challenge answered: %v", err)
	}
	if n, err := h.Certificates().ReapACMEChallenges(e.ctx, 10); err != nil || n != 1 {
		t.Fatalf("ReapACMEChallenges = %d, %v; want 1", n, err)
	}
	if n, err := h.Certificates().ReapACMEChallenges(e.ctx, 10); err != nil || n != 0 {
		t.Fatalf("second ReapACMEChallenges = %d, %v; want 0", n, err)
	}
	if _, err := h.Certificates().ACMEChallenge(e.ctx, alpn.Type, alpn.Name, ""); err != nil {
		t.Fatalf("a live challenge was reaped: %v", err)
	}
	// Delete; deleting again is no error.
	for range 2 {
		if err := h.Certificates().DeleteACMEChallenge(e.ctx, alpn.Type, alpn.Name, ""); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.Certificates().ACMEChallenge(e.ctx, alpn.Type, alpn.Name, ""); !errors.Is(err, apierr.ErrNotFound) {
		t.Fatalf("deleted challenge answered: %v", err)
	}
}

func TestACMEChallengeValidation(t *testing.T) {
	e := newEnv(t)
	h := e.svc.Host()
	exp := e.clock.Now().Add(time.Minute)
	ok := edgeplane.ACMEChallenge{Type: edgeplane.ChallengeHTTP01, Name: "app.example.com", Token: "t", KeyAuthorization: "t.k", ExpiresAt: exp}
	tests := []struct {
		name   string
		change func(*edgeplane.ACMEChallenge)
		fields []string
	}{
		{"unknown type", func(c *edgeplane.ACMEChallenge) { c.Type = "dns-account-01" }, []string{"type"}},
		{"no token", func(c *edgeplane.ACMEChallenge) { c.Token = "" }, []string{"token"}},
		{"token not base64url", func(c *edgeplane.ACMEChallenge) { c.Token = "../etc" }, []string{"token"}},
		{"token too long", func(c *edgeplane.ACMEChallenge) { c.Token = strings.Repeat("a", edgeplane.MaxACMEToken+1) }, []string{"token"}},
		{"token on tls-alpn-01", func(c *edgeplane.ACMEChallenge) { c.Type = edgeplane.ChallengeTLSALPN01 }, []string{"token"}},
		{"upper-case name", func(c *edgeplane.ACMEChallenge) { c.Name = "App.example.com" }, []string{"name"}},
		{"trailing dot", func(c *edgeplane.ACMEChallenge) { c.Name = "app.example.com." }, []string{"name"}},
		{"empty label", func(c *edgeplane.ACMEChallenge) { c.Name = "app..com" }, []string{"name"}},
		{"long label", func(c *edgeplane.ACMEChallenge) { c.Name = strings.Repeat("a", 64) + ".com" }, []string{"name"}},
		{"no key authorization", func(c *edgeplane.ACMEChallenge) { c.KeyAuthorization = "" }, []string{"key_authorization"}},
		{"key authorization with a space", func(c *edgeplane.ACMEChallenge) { c.KeyAuthorization = "a b" }, []string{"key_authorization"}},
		{"key authorization too long", func(c *edgeplane.ACMEChallenge) {
			c.KeyAuthorization = strings.Repeat("a", edgeplane.MaxACMEKeyAuthorization+1)
		}, []string{"key_authorization"}},
		{"expired", func(c *edgeplane.ACMEChallenge) { c.ExpiresAt = e.clock.Now() }, []string{"expires_at"}},
		{"too far", func(c *edgeplane.ACMEChallenge) {
			c.ExpiresAt = e.clock.Now().Add(edgeplane.MaxACMEChallengeTTL + time.Second)
		}, []string{"expires_at"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.change(&c)
			err := h.Certificates().PutACMEChallenge(e.ctx, c)
			var ae *apierr.Error
			if !errors.As(err, &ae) || ae.Code != apierr.InvalidArgument {
				t.Fatalf("PutACMEChallenge = %v, want invalid argument", err)
			}
			var fields []string
			for _, v := range ae.Violations {
				fields = append(fields, v.Field)
			}
			if !slices.Equal(fields, tc.fields) {
				t.Errorf("violations %v, want fields %v", ae.Violations, tc.fields)
			}
		})
	}
	if err := h.Certificates().PutACMEChallenge(e.ctx, ok); err != nil {
		t.Fatalf("the valid challenge: %v", err)
	}
}

func TestACMEAccountKey(t *testing.T) {
	st := memstore.New()
	key := bytes.Repeat([]byte{7}, 32)
	newSvc := func(k []byte) *edgeplane.Service {
		return mustService(edgeplane.New(st, edgeplane.Options{BaseURL: "https://api.example.test", SealingKey: k}))
	}
	svc := newSvc(key)
	ctx := context.Background()
	const dir = "https://acme.example.test/directory"
	calls := 0
	gen := func(pem string) func() ([]byte, error) {
		return func() ([]byte, error) { calls++; return []byte(pem), nil }
	}
	got, err := svc.Host().Certificates().ACMEAccountKey(ctx, dir, gen("KEY ONE"))
	if err != nil || string(got) != "KEY ONE" || calls != 1 {
		t.Fatalf("first ACMEAccountKey = %q, %v (%d calls); want the generated key", got, err, calls)
	}
	// Stored: the next call (another replica) gets it, generating nothing.
	other := newSvc(key)
	if got, err := other.Host().Certificates().ACMEAccountKey(ctx, dir, gen("KEY TWO")); err != nil || string(got) != "KEY ONE" || calls != 1 {
		t.Fatalf("second ACMEAccountKey = %q, %v (%d calls); want the stored key", got, err, calls)
	}
	// Another directory has its own.
	if got, err := svc.Host().Certificates().ACMEAccountKey(ctx, "https://staging.example.test/dir", gen("KEY THREE")); err != nil || string(got) != "KEY THREE" {
		t.Fatalf("another directory: %q, %v", got, err)
	}
	// Sealed: the store holds no plain key, and another sealing key
	// cannot open it.
	recs, err := st.List(ctx, store.Query{Kind: "acme_account", Limit: 10})
	if err != nil || len(recs) != 2 {
		t.Fatalf("stored account keys: %d, %v", len(recs), err)
	}
	for _, r := range recs {
		if bytes.Contains(r.Data, []byte("KEY")) {
			t.Errorf("the account key is stored in the clear: %s", r.Data)
		}
	}
	if _, err := newSvc(bytes.Repeat([]byte{8}, 32)).Host().Certificates().ACMEAccountKey(ctx, dir, gen("x")); apierr.CodeOf(err) != apierr.Internal {
		t.Errorf("another sealing key opened the account key: %v", err)
	}
	for _, bad := range []string{"", "ftp://x/y", "/relative", "https://" + strings.Repeat("a", edgeplane.MaxACMEDirectory)} {
		if _, err := svc.Host().Certificates().ACMEAccountKey(ctx, bad, gen("x")); apierr.CodeOf(err) != apierr.InvalidArgument {
			t.Errorf("directory %.20q: %v, want invalid argument", bad, err)
		}
	}
}

func TestReportCertificateProgress(t *testing.T) {
	e := newEnv(t)
	d, err := e.svc.CreateReservedDomain(e.ctx, e.user, domains.CreateParams{Domain: "app.example.com",
		CertificateManagementPolicy: &domains.CertPolicyParams{Authority: "letsencrypt"}})
	if err != nil {
		t.Fatal(err)
	}
	started := d.CertificateManagementStatus.ProvisioningJob.StartedAt
	e.clock.Advance(time.Minute)
	h := e.svc.Host()
	if _, err := h.Certificates().ReportCertificateFailed(e.ctx, e.user.AccountID, d.ID, domains.ProvisioningFailure{ErrorCode: domains.ErrorCodeInternal,
		Msg: "CA down", RetriesAt: e.clock.Now().Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	got, err := h.Certificates().ReportCertificateProgress(e.ctx, e.user.AccountID, d.ID, "validating app.example.com by HTTP-01")
	if err != nil {
		t.Fatal(err)
	}
	job := got.CertificateManagementStatus.ProvisioningJob
	if job == nil || job.Msg != "validating app.example.com by HTTP-01" || job.ErrorCode != nil || job.RetriesAt != nil || !job.StartedAt.Equal(started) {
		t.Fatalf("job after progress: %+v, want the message, no error, started %v", job, started)
	}
	for _, msg := range []string{"", strings.Repeat("x", domains.MaxJobMsgBytes+1), "\xff"} {
		if _, err := h.Certificates().ReportCertificateProgress(e.ctx, e.user.AccountID, d.ID, msg); apierr.CodeOf(err) != apierr.InvalidArgument {
			t.Errorf("msg %.10q: %v, want invalid argument", msg, err)
		}
	}
	if err := e.svc.DetachReservedDomainCertificateManagementPolicy(e.ctx, e.user, d.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Certificates().ReportCertificateProgress(e.ctx, e.user.AccountID, d.ID, "x"); apierr.CodeOf(err) != apierr.FailedPrecondition {
		t.Errorf("progress without a policy: %v, want failed precondition", err)
	}
	if _, err := h.Certificates().ReportCertificateProgress(e.ctx, e.other.AccountID, d.ID, "x"); !errors.Is(err, apierr.ErrNotFound) {
		t.Errorf("progress from another account: %v, want not found", err)
	}
}

// TestDeleteDomainDeletesManagedCertificate: the managed certificate
// goes with its domain; an uploaded one stays.
func TestDeleteDomainDeletesManagedCertificate(t *testing.T) {
	e := newEnv(t)
	policy := &domains.CertPolicyParams{Authority: "letsencrypt", PrivateKeyType: domains.KeyTypeECDSA}
	managed, err := e.svc.CreateReservedDomain(e.ctx, e.user, domains.CreateParams{Domain: "app.example.com", CertificateManagementPolicy: policy})
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM := genTLSCert(t, tlsSpec{names: []string{"app.example.com"}})
	d, err := e.svc.Host().Certificates().ReportCertificateIssued(e.ctx, e.user.AccountID, managed.ID, certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	issued := d.Certificate.ID
	// An uploaded certificate on another domain stays when it goes.
	up := e.tlsCert(t, e.user, "up.example.com")
	upDomain := e.reservedDomain(t, e.user, domains.CreateParams{Domain: "up.example.com", CertificateID: up.ID})
	if err := e.svc.DeleteReservedDomain(e.ctx, e.user, upDomain.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.GetTLSCertificate(e.ctx, e.user, up.ID); err != nil {
		t.Errorf("the uploaded certificate went with its domain: %v", err)
	}
	// Another account cannot delete the domain (nor its certificate).
	if err := e.svc.DeleteReservedDomain(e.ctx, e.other, managed.ID); !errors.Is(err, apierr.ErrNotFound) {
		t.Fatalf("another account's delete: %v", err)
	}
	if err := e.svc.DeleteReservedDomain(e.ctx, e.user, managed.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.GetTLSCertificate(e.ctx, e.user, issued); !errors.Is(err, apierr.ErrNotFound) {
		t.Errorf("the managed certificate outlived its domain: %v", err)
	}
}

// TestCertificateTransitionsAreEvents: each report of the certificate
// manager (progress, failure, issue) is a reserved_domain_updated event
// showing the new status; the issued certificate is a
// tls_certificate_created event, and deleting the domain reports the
// certificate's deletion.
func TestCertificateTransitionsAreEvents(t *testing.T) {
	rec := &eventRecorder{}
	e, _ := newEventEnv(t, memstore.New(), events.Options{Sink: rec})
	e.subscribe(t, e.user, "reserved_domain_updated.v0", "tls_certificate_created.v0", "tls_certificate_deleted.v0", "reserved_domain_deleted.v0")
	d, err := e.svc.CreateReservedDomain(e.ctx, e.user, domains.CreateParams{Domain: "app.example.com",
		CertificateManagementPolicy: &domains.CertPolicyParams{Authority: "letsencrypt", PrivateKeyType: domains.KeyTypeECDSA}})
	if err != nil {
		t.Fatal(err)
	}
	h := e.svc.Host()
	if _, err := h.Certificates().ReportCertificateProgress(e.ctx, e.user.AccountID, d.ID, "ordering"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Certificates().ReportCertificateFailed(e.ctx, e.user.AccountID, d.ID, domains.ProvisioningFailure{ErrorCode: domains.ErrorCodeDNS,
		Msg: "no CNAME", RetriesAt: e.clock.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM := genTLSCert(t, tlsSpec{names: []string{"app.example.com"}})
	issued, err := h.Certificates().ReportCertificateIssued(e.ctx, e.user.AccountID, d.ID, certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.svc.DeleteReservedDomain(e.ctx, e.user, d.ID); err != nil {
		t.Fatal(err)
	}
	e.closeEvents(t)
	type seen struct{ typ, id, state string }
	var got []seen
	for _, ev := range rec.events() {
		var obj struct {
			ID     string `json:"id"`
			Status *struct {
				Job *struct {
					Msg       string  `json:"msg"`
					ErrorCode *string `json:"error_code"`
				} `json:"provisioning_job"`
			} `json:"certificate_management_status"`
		}
		if err := json.Unmarshal(ev.Object, &obj); err != nil {
			t.Fatal(err)
		}
		state := ""
		if obj.Status != nil && obj.Status.Job != nil {
			state = obj.Status.Job.Msg
			if obj.Status.Job.ErrorCode != nil {
				state += " " + *obj.Status.Job.ErrorCode
			}
		} else if obj.Status != nil {
			state = "issued"
		}
		got = append(got, seen{ev.Type, obj.ID, state})
	}
	cert := issued.Certificate.ID
	want := []seen{
		{"reserved_domain_updated.v0", d.ID, "ordering"},
		{"reserved_domain_updated.v0", d.ID, "no CNAME DNS_ERROR"},
		{"tls_certificate_created.v0", cert, ""},
		{"reserved_domain_updated.v0", d.ID, "issued"},
		{"reserved_domain_deleted.v0", d.ID, ""},
		{"tls_certificate_deleted.v0", cert, ""},
	}
	if !slices.Equal(got, want) {
		t.Errorf("events:\n got %v\nwant %v", got, want)
	}
}

// FuzzACMEChallenge: whatever the type, name, token and value, a put is
// either refused as invalid (and then stores nothing) or reads back as
// written; a read never fails otherwise.
func FuzzACMEChallenge(f *testing.F) {
	f.Add("http-01", "app.example.com", "tok_-1", "tok.k")
	f.Add("dns-01", "_acme-challenge.x.example", "", "v")
	f.Add("tls-alpn-01", "A..b", "x", "a b")
	e := newEnv(f)
	h := e.svc.Host()
	f.Fuzz(func(t *testing.T, typ, name, token, value string) {
		c := edgeplane.ACMEChallenge{Type: typ, Name: name, Token: token, KeyAuthorization: value, ExpiresAt: e.clock.Now().Add(time.Minute)}
		err := h.Certificates().PutACMEChallenge(e.ctx, c)
		got, gerr := h.Certificates().ACMEChallenge(e.ctx, typ, name, token)
		switch {
		case err == nil:
			if gerr != nil || got.KeyAuthorization != value {
				t.Fatalf("put %+v, read %+v, %v", c, got, gerr)
			}
			if err := h.Certificates().DeleteACMEChallenge(e.ctx, typ, name, token); err != nil {
				t.Fatal(err)
			}
		case apierr.CodeOf(err) != apierr.InvalidArgument:
			t.Fatalf("put: %v, want nil or invalid argument", err)
		case gerr == nil:
			t.Fatalf("a refused put is read back: %+v", got)
		case apierr.CodeOf(gerr) != apierr.InvalidArgument && !errors.Is(gerr, apierr.ErrNotFound):
			t.Fatalf("read: %v", gerr)
		}
	})
}

// TestRenewalDeletesReplacedManagedCertificate: a renewal deletes the
// managed certificate it replaces; an uploaded certificate a managed one
// replaces stays.
func TestRenewalDeletesReplacedManagedCertificate(t *testing.T) {
	e := newEnv(t)
	up := e.tlsCert(t, e.user, "app.example.com")
	d := e.reservedDomain(t, e.user, domains.CreateParams{Domain: "app.example.com", CertificateID: up.ID})
	policy := &domains.CertPolicyParams{Authority: "letsencrypt", PrivateKeyType: domains.KeyTypeECDSA}
	if _, err := e.svc.UpdateReservedDomain(e.ctx, e.user, d.ID, domains.UpdateParams{CertificateManagementPolicy: policy}); err != nil {
		t.Fatal(err)
	}
	issue := func() string {
		t.Helper()
		certPEM, keyPEM := genTLSCert(t, tlsSpec{names: []string{"app.example.com"}})
		got, err := e.svc.Host().Certificates().ReportCertificateIssued(e.ctx, e.user.AccountID, d.ID, certPEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		return got.Certificate.ID
	}
	first := issue()
	if _, err := e.svc.GetTLSCertificate(e.ctx, e.user, up.ID); err != nil {
		t.Errorf("the uploaded certificate a managed one replaced was deleted: %v", err)
	}
	second := issue()
	if _, err := e.svc.GetTLSCertificate(e.ctx, e.user, first); !errors.Is(err, apierr.ErrNotFound) {
		t.Errorf("the managed certificate a renewal replaced is still there: %v", err)
	}
	if _, err := e.svc.GetTLSCertificate(e.ctx, e.user, second); err != nil {
		t.Errorf("the renewed certificate: %v", err)
	}
}
