package domains_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/resource"
	"github.com/google/go-cmp/cmp"
)

const (
	certID = "cert_00000000000000000000000000a"
	ecID   = "ec_00000000000000000000000000a"
)

func ptr[T any](v T) *T { return &v }

func hasViolation(err error, field string) bool {
	for _, v := range apierr.ViolationsOf(err) {
		if v.Field == field {
			return true
		}
	}
	return false
}

// wantViolations fails unless err is invalid-argument with exactly the
// violations of fields (in any order).
func wantViolations(t *testing.T, err error, fields ...string) {
	t.Helper()
	if len(fields) == 0 {
		if err != nil {
			t.Fatalf("unexpected error %v", err)
		}
		return
	}
	if apierr.CodeOf(err) != apierr.InvalidArgument {
		t.Fatalf("error %v: want invalid argument", err)
	}
	got := map[string]bool{}
	for _, v := range apierr.ViolationsOf(err) {
		got[v.Field] = true
		if v.Reason == "" || strings.ToLower(v.Reason[:1]) != v.Reason[:1] {
			t.Errorf("violation %v: reason must be lowercase and non-empty", v)
		}
	}
	want := map[string]bool{}
	for _, f := range fields {
		want[f] = true
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("violated fields of %v (-want +got):\n%s", err, diff)
	}
}

func TestCreateParamsValidate(t *testing.T) {
	cfg := domains.Config{}.WithDefaults()
	policy := &domains.CertPolicyParams{Authority: "letsencrypt"}
	tests := []struct {
		name   string
		params domains.CreateParams
		fields []string
	}{
		{"minimal", domains.CreateParams{Domain: "app.example.com"}, nil},
		{"everything", domains.CreateParams{Domain: "*.Example.com", Region: "eu", Description: strings.Repeat("d", 255),
			Metadata: strings.Repeat("m", 4096), CertificateManagementPolicy: &domains.CertPolicyParams{Authority: "letsencrypt", PrivateKeyType: "ecdsa"}}, nil},
		{"certificate id", domains.CreateParams{Domain: "app.example.com", CertificateID: certID}, nil},
		{"owned subdomain", domains.CreateParams{Domain: "demo.edgeplane.app"}, nil},
		{"wildcard below an owned subdomain", domains.CreateParams{Domain: "*.demo.edgeplane.app"}, nil},
		{"every region", domains.CreateParams{Domain: "a.example.com", Region: "sa"}, nil},

		{"missing domain", domains.CreateParams{}, []string{"domain"}},
		{"bad domain", domains.CreateParams{Domain: "a..b"}, []string{"domain"}},
		{"owned base", domains.CreateParams{Domain: "edgeplane.app"}, []string{"domain"}},
		{"wildcard on owned base", domains.CreateParams{Domain: "*.EDGEPLANE.app"}, []string{"domain"}},
		{"CNAME base", domains.CreateParams{Domain: "edgeplane-cname.com"}, []string{"domain"}},
		{"below CNAME base", domains.CreateParams{Domain: "x.edgeplane-cname.com"}, []string{"domain"}},
		{"bad region", domains.CreateParams{Domain: "a.example.com", Region: "mars"}, []string{"region"}},
		{"upper-case region", domains.CreateParams{Domain: "a.example.com", Region: "EU"}, []string{"region"}},
		{"description 256 bytes", domains.CreateParams{Domain: "a.example.com", Description: strings.Repeat("é", 128)}, []string{"description"}},
		{"metadata 4097 bytes", domains.CreateParams{Domain: "a.example.com", Metadata: strings.Repeat("m", 4097)}, []string{"metadata"}},
		{"malformed certificate id", domains.CreateParams{Domain: "a.example.com", CertificateID: ecID}, []string{"certificate_id"}},
		{"both certificate and policy", domains.CreateParams{Domain: "a.example.com", CertificateID: certID, CertificateManagementPolicy: policy},
			[]string{"certificate_id", "certificate_management_policy"}},
		{"missing authority", domains.CreateParams{Domain: "a.example.com", CertificateManagementPolicy: &domains.CertPolicyParams{}},
			[]string{"certificate_management_policy.authority"}},
		{"other authority", domains.CreateParams{Domain: "a.example.com", CertificateManagementPolicy: &domains.CertPolicyParams{Authority: "zerossl"}},
			[]string{"certificate_management_policy.authority"}},
		{"bad key type", domains.CreateParams{Domain: "a.example.com", CertificateManagementPolicy: &domains.CertPolicyParams{Authority: "letsencrypt", PrivateKeyType: "dsa"}},
			[]string{"certificate_management_policy.private_key_type"}},
		{"every violation at once", domains.CreateParams{Domain: "-x.com", Region: "x", Description: strings.Repeat("d", 256), Metadata: strings.Repeat("m", 4097),
			CertificateID: "nope", CertificateManagementPolicy: &domains.CertPolicyParams{PrivateKeyType: "x"}},
			[]string{"domain", "region", "description", "metadata", "certificate_id", "certificate_management_policy",
				"certificate_management_policy.authority", "certificate_management_policy.private_key_type"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wantViolations(t, tc.params.Validate(cfg), tc.fields...)
		})
	}

	// A host that owns nothing lets edgeplane.app itself be reserved.
	none := domains.Config{OwnedDomains: []string{}}.WithDefaults()
	wantViolations(t, domains.CreateParams{Domain: "edgeplane.app"}.Validate(none))
}

func TestUpdateParamsValidate(t *testing.T) {
	tests := []struct {
		name   string
		params domains.UpdateParams
		fields []string
	}{
		{"empty", domains.UpdateParams{}, nil},
		{"all settable fields", domains.UpdateParams{Description: ptr("d"), Metadata: ptr("m"), CertificateID: ptr(certID),
			HTTPEndpointConfigurationID: ptr(ecID), HTTPSEndpointConfigurationID: ptr(ecID)}, nil},
		{"detach with empty IDs", domains.UpdateParams{CertificateID: ptr(""), HTTPEndpointConfigurationID: ptr(""), HTTPSEndpointConfigurationID: ptr("")}, nil},
		{"policy", domains.UpdateParams{CertificateManagementPolicy: &domains.CertPolicyParams{Authority: "letsencrypt"}}, nil},
		{"description too long", domains.UpdateParams{Description: ptr(strings.Repeat("x", 256))}, []string{"description"}},
		{"metadata too long", domains.UpdateParams{Metadata: ptr(strings.Repeat("x", 4097))}, []string{"metadata"}},
		{"both certificate and policy", domains.UpdateParams{CertificateID: ptr(certID), CertificateManagementPolicy: &domains.CertPolicyParams{Authority: "letsencrypt"}},
			[]string{"certificate_id", "certificate_management_policy"}},
		{"bad policy", domains.UpdateParams{CertificateManagementPolicy: &domains.CertPolicyParams{Authority: "x", PrivateKeyType: "y"}},
			[]string{"certificate_management_policy.authority", "certificate_management_policy.private_key_type"}},
		{"malformed IDs", domains.UpdateParams{CertificateID: ptr("cert_x"), HTTPEndpointConfigurationID: ptr(certID), HTTPSEndpointConfigurationID: ptr("ec_")},
			[]string{"certificate_id", "http_endpoint_configuration_id", "https_endpoint_configuration_id"}},
		{"domain cannot change", domains.UpdateParams{Domain: ptr("b.example.com")}, []string{"domain"}},
		{"region cannot change", domains.UpdateParams{Region: ptr("eu")}, []string{"region"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wantViolations(t, tc.params.Validate(), tc.fields...)
		})
	}
}

func TestEndpointConfigurationParams(t *testing.T) {
	wantViolations(t, domains.CreateEndpointConfigurationParams{Type: "https"}.Validate())
	wantViolations(t, domains.CreateEndpointConfigurationParams{}.Validate(), "type")
	wantViolations(t, domains.CreateEndpointConfigurationParams{Type: "tcp", Description: strings.Repeat("x", 256)}.Validate(), "type", "description")
	wantViolations(t, domains.UpdateEndpointConfigurationParams{Type: ptr("http"), Metadata: ptr(strings.Repeat("x", 4097))}.Validate(), "type", "metadata")
	c := domains.CreateEndpointConfigurationParams{Type: "http", Description: "d"}.EndpointConfiguration()
	domains.UpdateEndpointConfigurationParams{Metadata: ptr("m"), Type: ptr("https")}.Apply(&c)
	if c != (domains.EndpointConfiguration{Type: "http", Description: "d", Metadata: "m"}) {
		t.Errorf("apply: %+v", c)
	}
}

func TestReservedDomainJSON(t *testing.T) {
	cfg := domains.Config{}.WithDefaults()
	d := domains.CreateParams{Domain: "demo.edgeplane.app"}.ReservedDomain(cfg, testNow)
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"id": "", "uri": "", "created_at": "0001-01-01T00:00:00Z", "description": "", "metadata": "",
		"domain": "demo.edgeplane.app", "region": "", "cname_target": nil, "certificate": nil,
		"certificate_management_policy": nil, "certificate_management_status": nil,
		"acme_challenge_cname_target": nil, "http_endpoint_configuration": nil,
		"https_endpoint_configuration": nil, "error_redirect_url": nil,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("JSON (-want +got):\n%s", diff)
	}
}

func TestCertificateLifecycle(t *testing.T) {
	cfg := domains.Config{}.WithDefaults()
	t0 := testNow
	policy := &domains.CertPolicyParams{Authority: "letsencrypt"}

	t.Run("custom domain", func(t *testing.T) {
		d := domains.CreateParams{Domain: "app.example.com", CertificateManagementPolicy: policy}.ReservedDomain(cfg, t0)
		if d.CNAMETarget == nil || d.ACMEChallengeCNAMETarget != nil {
			t.Fatalf("targets: cname %v acme %v", d.CNAMETarget, d.ACMEChallengeCNAMETarget)
		}
		want := &domains.CertStatus{ProvisioningJob: &domains.CertJob{StartedAt: t0,
			Msg: "certificate provisioning has started; it needs a CNAME record for app.example.com pointing to " + *d.CNAMETarget}}
		if diff := cmp.Diff(want, d.CertificateManagementStatus); diff != "" {
			t.Errorf("status (-want +got):\n%s", diff)
		}
		if *d.CertificateManagementPolicy != (domains.CertPolicy{Authority: "letsencrypt", PrivateKeyType: "rsa"}) {
			t.Errorf("policy %+v: key type must default to rsa", d.CertificateManagementPolicy)
		}
		if !d.CertificateDue(t0) {
			t.Error("a new job is not due")
		}

		// Temporary failure: retried at retries_at.
		retry := t0.Add(time.Hour)
		d.CertificateFailed(domains.ProvisioningFailure{ErrorCode: "INTERNAL_ERROR", Msg: "ca unavailable", RetriesAt: retry}, t0.Add(time.Minute))
		job := d.CertificateManagementStatus.ProvisioningJob
		if *job.ErrorCode != "INTERNAL_ERROR" || job.Msg != "ca unavailable" || !job.StartedAt.Equal(t0) || !job.RetriesAt.Equal(retry) {
			t.Errorf("failed job %+v", job)
		}
		if d.CertificateDue(retry.Add(-time.Second)) || !d.CertificateDue(retry) {
			t.Error("INTERNAL_ERROR must be due exactly from retries_at")
		}

		// Success.
		nb, na := t0, t0.Add(90*24*time.Hour)
		d.CertificateIssued(resource.Ref{ID: certID}, nb, na)
		renews := na.Add(-30 * 24 * time.Hour)
		want = &domains.CertStatus{RenewsAt: &renews}
		if diff := cmp.Diff(want, d.CertificateManagementStatus); diff != "" {
			t.Errorf("status after issue (-want +got):\n%s", diff)
		}
		if d.Certificate.ID != certID || d.CertificateDue(renews.Add(-time.Second)) || !d.CertificateDue(renews) {
			t.Errorf("after issue: certificate %v, due before renewal or not after", d.Certificate)
		}

		// Renewal due: shown as a job, stored state unchanged.
		shown := d
		shown.ShowRenewal(renews.Add(time.Minute))
		if j := shown.CertificateManagementStatus.ProvisioningJob; j == nil || j.Msg != domains.RenewalMsg || !j.StartedAt.Equal(renews) {
			t.Errorf("renewal job shown %+v", j)
		}
		if d.CertificateManagementStatus.ProvisioningJob != nil {
			t.Error("ShowRenewal changed the stored status")
		}
		before := d
		before.ShowRenewal(renews.Add(-time.Second))
		if before.CertificateManagementStatus.ProvisioningJob != nil {
			t.Error("renewal shown before renews_at")
		}

		// A failing renewal keeps renews_at and starts at renews_at.
		d.CertificateFailed(domains.ProvisioningFailure{ErrorCode: "DNS_ERROR", Msg: "CNAME missing"}, renews.Add(time.Hour))
		job = d.CertificateManagementStatus.ProvisioningJob
		if !job.StartedAt.Equal(renews) || job.RetriesAt != nil || !d.CertificateManagementStatus.RenewsAt.Equal(renews) {
			t.Errorf("renewal failure: %+v, renews_at %v", job, d.CertificateManagementStatus.RenewsAt)
		}
		if d.CertificateDue(renews.Add(1000 * time.Hour)) {
			t.Error("DNS_ERROR must not be due")
		}

		// A DNS_ERROR with a retry time (the manager's slow schedule) is
		// due then, and no earlier; progress clears the error and keeps
		// the job's start.
		slow := renews.Add(7 * time.Hour)
		dns := d
		dns.CertificateFailed(domains.ProvisioningFailure{ErrorCode: "DNS_ERROR", Msg: "CNAME missing", RetriesAt: slow}, renews.Add(time.Hour))
		if j := dns.CertificateManagementStatus.ProvisioningJob; j.RetriesAt == nil || !j.RetriesAt.Equal(slow) {
			t.Errorf("DNS_ERROR with retry: %+v", j)
		}
		if dns.CertificateDue(slow.Add(-time.Second)) || !dns.CertificateDue(slow) {
			t.Error("DNS_ERROR with a retry time must be due at it, not before")
		}
		dns.CertificateProgress("validating", slow)
		if j := dns.CertificateManagementStatus.ProvisioningJob; j.ErrorCode != nil || j.RetriesAt != nil || j.Msg != "validating" || !j.StartedAt.Equal(renews) {
			t.Errorf("progress: %+v", j)
		}

		// Setting the same policy again retries after a failure.
		t1 := renews.Add(2 * time.Hour)
		domains.UpdateParams{CertificateManagementPolicy: policy}.Apply(&d, t1)
		if job := d.CertificateManagementStatus.ProvisioningJob; job == nil || job.ErrorCode != nil || !job.StartedAt.Equal(t1) {
			t.Errorf("re-set policy: job %+v", job)
		}
		if d.Certificate == nil || d.Certificate.ID != certID {
			t.Error("re-set policy dropped the certificate")
		}

		// Setting the same policy while healthy changes nothing.
		d.CertificateIssued(resource.Ref{ID: certID}, nb, na)
		healthy := d.CertificateManagementStatus
		d.SetPolicy(domains.CertPolicy{Authority: "letsencrypt", PrivateKeyType: "rsa"}, t1.Add(time.Hour))
		if d.CertificateManagementStatus != healthy {
			t.Error("same policy restarted a healthy status")
		}
		// A different key type restarts.
		d.SetPolicy(domains.CertPolicy{Authority: "letsencrypt", PrivateKeyType: "ecdsa"}, t1.Add(time.Hour))
		if d.CertificateManagementStatus.ProvisioningJob == nil || d.CertificateManagementStatus.RenewsAt != nil {
			t.Errorf("changed policy: status %+v", d.CertificateManagementStatus)
		}

		// Detaching the certificate with a policy restarts provisioning.
		d.CertificateIssued(resource.Ref{ID: certID}, nb, na)
		d.DetachCertificate(t1)
		if d.Certificate != nil || d.CertificateManagementStatus.ProvisioningJob == nil {
			t.Errorf("detach certificate: %+v", d)
		}

		// Attaching a certificate by ID turns management off.
		domains.UpdateParams{CertificateID: ptr(certID)}.Apply(&d, t1)
		if d.CertificateManagementPolicy != nil || d.CertificateManagementStatus != nil || d.Certificate.ID != certID {
			t.Errorf("attach certificate: %+v", d)
		}
		if d.CertificateDue(t1) {
			t.Error("due without a policy")
		}
		// Detaching then leaves nothing.
		d.DetachCertificate(t1)
		if d.Certificate != nil || d.CertificateManagementStatus != nil {
			t.Errorf("detach without policy: %+v", d)
		}
	})

	t.Run("wildcard custom domain", func(t *testing.T) {
		d := domains.CreateParams{Domain: "*.example.com", CertificateManagementPolicy: policy}.ReservedDomain(cfg, t0)
		if d.ACMEChallengeCNAMETarget == nil || *d.ACMEChallengeCNAMETarget != domains.ACMEChallengeTarget(*d.CNAMETarget) {
			t.Fatalf("acme target %v for cname %v", d.ACMEChallengeCNAMETarget, d.CNAMETarget)
		}
		if msg := d.CertificateManagementStatus.ProvisioningJob.Msg; !strings.Contains(msg, "_acme-challenge.example.com pointing to "+*d.ACMEChallengeCNAMETarget) {
			t.Errorf("msg %q", msg)
		}
		d.DetachPolicy()
		if d.ACMEChallengeCNAMETarget != nil || d.CertificateManagementPolicy != nil || d.CertificateManagementStatus != nil {
			t.Errorf("after detach: %+v", d)
		}
		plain := domains.CreateParams{Domain: "*.example.com"}.ReservedDomain(cfg, t0)
		if plain.ACMEChallengeCNAMETarget != nil || plain.CertificateManagementStatus != nil {
			t.Errorf("wildcard without policy: %+v", plain)
		}
	})

	t.Run("owned subdomain", func(t *testing.T) {
		d := domains.CreateParams{Domain: "*.demo.edgeplane.app", CertificateManagementPolicy: policy}.ReservedDomain(cfg, t0)
		if d.CNAMETarget != nil || d.ACMEChallengeCNAMETarget != nil {
			t.Errorf("owned wildcard: cname %v acme %v", d.CNAMETarget, d.ACMEChallengeCNAMETarget)
		}
		if d.CertificateManagementStatus.ProvisioningJob.Msg != "certificate provisioning has started" {
			t.Errorf("msg %q", d.CertificateManagementStatus.ProvisioningJob.Msg)
		}
	})
}

func TestProvisioningFailureValidate(t *testing.T) {
	now := testNow
	tests := []struct {
		name   string
		f      domains.ProvisioningFailure
		fields []string
	}{
		{"internal", domains.ProvisioningFailure{ErrorCode: "INTERNAL_ERROR", Msg: "x", RetriesAt: now.Add(time.Second)}, nil},
		{"dns", domains.ProvisioningFailure{ErrorCode: "DNS_ERROR", Msg: "x"}, nil},
		{"internal without retry", domains.ProvisioningFailure{ErrorCode: "INTERNAL_ERROR", Msg: "x"}, []string{"retries_at"}},
		{"internal retry in the past", domains.ProvisioningFailure{ErrorCode: "INTERNAL_ERROR", Msg: "x", RetriesAt: now}, []string{"retries_at"}},
		{"dns with retry", domains.ProvisioningFailure{ErrorCode: "DNS_ERROR", Msg: "x", RetriesAt: now.Add(time.Hour)}, nil},
		{"dns retry in the past", domains.ProvisioningFailure{ErrorCode: "DNS_ERROR", Msg: "x", RetriesAt: now}, []string{"retries_at"}},
		{"unknown code, no msg", domains.ProvisioningFailure{ErrorCode: "OOPS"}, []string{"error_code", "msg"}},
		{"msg too long", domains.ProvisioningFailure{ErrorCode: "DNS_ERROR", Msg: strings.Repeat("x", 1025)}, []string{"msg"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wantViolations(t, tc.f.Validate(now), tc.fields...)
		})
	}
}

func TestRenewsAt(t *testing.T) {
	nb := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		life, want time.Duration
	}{
		{90 * 24 * time.Hour, 60 * 24 * time.Hour},
		{45 * 24 * time.Hour, 30 * 24 * time.Hour},
		{6 * 24 * time.Hour, 4 * 24 * time.Hour},
	} {
		if got := domains.RenewsAt(nb, nb.Add(tc.life)); !got.Equal(nb.Add(tc.want)) {
			t.Errorf("RenewsAt for a %v certificate = %v, want %v", tc.life, got, nb.Add(tc.want))
		}
	}
}

func TestRefIDs(t *testing.T) {
	var d domains.ReservedDomain
	if ids := d.RefIDs(); len(ids) != 0 {
		t.Errorf("no references: %v", ids)
	}
	other := "ec_00000000000000000000000000b"
	domains.UpdateParams{CertificateID: ptr(certID), HTTPEndpointConfigurationID: ptr(ecID), HTTPSEndpointConfigurationID: ptr(other)}.Apply(&d, testNow)
	if diff := cmp.Diff([]string{certID, ecID, other}, d.RefIDs()); diff != "" {
		t.Errorf("RefIDs (-want +got):\n%s", diff)
	}
	domains.UpdateParams{HTTPEndpointConfigurationID: ptr("")}.Apply(&d, testNow)
	if diff := cmp.Diff([]string{certID, other}, d.RefIDs()); diff != "" {
		t.Errorf("RefIDs after detaching http (-want +got):\n%s", diff)
	}
}
