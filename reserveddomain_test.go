package edgeplane_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/hosting"
	"github.com/edgeplane/edgeplane/identity"
	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/resource"
	"github.com/edgeplane/edgeplane/store"
	"github.com/google/go-cmp/cmp"
)

var letsEncrypt = &domains.CertPolicyParams{Authority: "letsencrypt"}

// reservedDomain reserves name for p.
func (e *env) reservedDomain(t testing.TB, p edgeplane.Principal, params domains.CreateParams) *domains.ReservedDomain {
	t.Helper()
	d, err := e.svc.CreateReservedDomain(e.ctx, p, params)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// endpointConfig creates an endpoint configuration of type typ for p.
func (e *env) endpointConfig(t testing.TB, p edgeplane.Principal, typ string) *domains.EndpointConfiguration {
	t.Helper()
	c, err := e.svc.CreateEndpointConfiguration(e.ctx, p, domains.CreateEndpointConfigurationParams{Type: typ})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func certRef(id string) *resource.Ref {
	return &resource.Ref{ID: id, URI: domainsAPIBase + "tls_certificates/" + id}
}

func ecRef(id string) *resource.Ref {
	return &resource.Ref{ID: id, URI: domainsAPIBase + "endpoint_configurations/" + id}
}

func TestReservedDomainCRUD(t *testing.T) {
	e := newEnv(t)
	d, err := e.svc.CreateReservedDomain(e.ctx, e.user, domains.CreateParams{
		Domain: "Demo.EDGEPLANE.app.", Region: "eu", Description: "demo", Metadata: `{"team":"web"}`,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := &domains.ReservedDomain{
		ID: d.ID, URI: domainsAPIBase + "reserved_domains/" + d.ID, CreatedAt: envStart,
		Description: "demo", Metadata: `{"team":"web"}`, Domain: "demo.edgeplane.app", Region: "eu",
	}
	if diff := cmp.Diff(want, d); diff != "" {
		t.Errorf("create (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(d.ID, "rd_") {
		t.Errorf("ID %q", d.ID)
	}
	got, err := e.svc.GetReservedDomain(e.ctx, e.admin, d.ID)
	if diff := cmp.Diff(want, got); err != nil || diff != "" {
		t.Errorf("get (%v) (-want +got):\n%s", err, diff)
	}

	// The JSON shape: every field of SPEC 2.4, nulls where nothing is set.
	b, _ := json.Marshal(got)
	var shape map[string]any
	json.Unmarshal(b, &shape)
	wantShape := map[string]any{
		"id": d.ID, "uri": want.URI, "created_at": "2026-11-21T09:30:15Z", "description": "demo",
		"metadata": `{"team":"web"}`, "domain": "demo.edgeplane.app", "region": "eu", "cname_target": nil,
		"certificate": nil, "certificate_management_policy": nil, "certificate_management_status": nil,
		"acme_challenge_cname_target": nil, "http_endpoint_configuration": nil,
		"https_endpoint_configuration": nil, "error_redirect_url": nil,
	}
	if diff := cmp.Diff(wantShape, shape); diff != "" {
		t.Errorf("JSON (-want +got):\n%s", diff)
	}

	e.clock.Advance(time.Minute)
	upd, err := e.svc.UpdateReservedDomain(e.ctx, e.user, d.ID, domains.UpdateParams{Description: ptr("")})
	want.Description = ""
	if diff := cmp.Diff(want, upd); err != nil || diff != "" {
		t.Errorf("update (%v) (-want +got):\n%s", err, diff)
	}
	page, err := e.svc.ListReservedDomains(e.ctx, e.user, edgeplane.ListOptions{})
	if err != nil || page.URI != domainsAPIBase+"reserved_domains" || page.NextPageURI != nil || len(page.Items) != 1 || !cmp.Equal(*want, page.Items[0]) {
		t.Errorf("list = %+v, %v", page, err)
	}

	// Region is "" when not given.
	plain := e.reservedDomain(t, e.user, domains.CreateParams{Domain: "plain.edgeplane.app"})
	if plain.Region != "" {
		t.Errorf("region %q, want empty", plain.Region)
	}
	page, _ = e.svc.ListReservedDomains(e.ctx, e.user, edgeplane.ListOptions{Limit: 1})
	if len(page.Items) != 1 || page.Items[0].ID != plain.ID || page.NextPageURI == nil {
		t.Errorf("first page of one: %+v", page)
	}

	if err := e.svc.DeleteReservedDomain(e.ctx, e.user, d.ID); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.GetReservedDomain(e.ctx, e.user, d.ID)
	wantCode(t, err, apierr.NotFound)
	wantCode(t, e.svc.DeleteReservedDomain(e.ctx, e.user, d.ID), apierr.NotFound)
	// Released: any account may reserve it now.
	e.reservedDomain(t, e.other, domains.CreateParams{Domain: "demo.edgeplane.app"})
}

func TestReservedDomainValidation(t *testing.T) {
	e := newEnv(t)
	cert := e.tlsCert(t, e.user, "a.example.com")
	tests := []struct {
		name        string
		params      domains.CreateParams
		field, want string
	}{
		{"missing domain", domains.CreateParams{}, "domain", "is required"},
		{"bad label", domains.CreateParams{Domain: "a_b.example.com"}, "domain", "letters, digits, hyphens"},
		{"too long", domains.CreateParams{Domain: strings.Repeat("a.", 127) + "com"}, "domain", "at most 253 bytes"},
		{"long label", domains.CreateParams{Domain: strings.Repeat("a", 64) + ".com"}, "domain", "at most 63 bytes"},
		{"inner wildcard", domains.CreateParams{Domain: "a.*.example.com"}, "domain", "wildcard only as the whole first label"},
		{"IP address", domains.CreateParams{Domain: "192.0.2.1"}, "domain", "IP addresses"},
		{"owned base", domains.CreateParams{Domain: "edgeplane.app"}, "domain", "owned by the service"},
		{"wildcard on owned base", domains.CreateParams{Domain: "*.edgeplane.app"}, "domain", "owned by the service"},
		{"under the CNAME base", domains.CreateParams{Domain: "x.edgeplane-cname.com"}, "domain", "CNAME targets"},
		{"region", domains.CreateParams{Domain: "a.example.com", Region: "eu-west"}, "region", "one of: au, eu, ap, us, jp, in, sa"},
		{"description bytes", domains.CreateParams{Domain: "a.example.com", Description: strings.Repeat("é", 128)}, "description", "at most 255 bytes"},
		{"metadata bytes", domains.CreateParams{Domain: "a.example.com", Metadata: strings.Repeat("x", 4097)}, "metadata", "at most 4096 bytes"},
		{"both certificate and policy (certificate_id)", domains.CreateParams{Domain: "a.example.com", CertificateID: cert.ID, CertificateManagementPolicy: letsEncrypt},
			"certificate_id", "cannot be combined with certificate_management_policy"},
		{"both certificate and policy (policy)", domains.CreateParams{Domain: "a.example.com", CertificateID: cert.ID, CertificateManagementPolicy: letsEncrypt},
			"certificate_management_policy", "cannot be combined with certificate_id"},
		{"authority", domains.CreateParams{Domain: "a.example.com", CertificateManagementPolicy: &domains.CertPolicyParams{Authority: "digicert"}},
			"certificate_management_policy.authority", "one of: letsencrypt"},
		{"key type", domains.CreateParams{Domain: "a.example.com", CertificateManagementPolicy: &domains.CertPolicyParams{Authority: "letsencrypt", PrivateKeyType: "ed25519"}},
			"certificate_management_policy.private_key_type", "one of: rsa, ecdsa"},
		{"malformed certificate id", domains.CreateParams{Domain: "a.example.com", CertificateID: "cert_1"}, "certificate_id", "TLS certificate ID"},
		{"missing certificate", domains.CreateParams{Domain: "a.example.com", CertificateID: flipLast(cert.ID)}, "certificate_id", "not found in this account"},
		{"another account's certificate", domains.CreateParams{Domain: "b.example.com", CertificateID: e.tlsCert(t, e.other, "b.example.com").ID}, "certificate_id", "not found in this account"},
		{"certificate does not cover", domains.CreateParams{Domain: "b.example.com", CertificateID: cert.ID}, "certificate_id", "does not cover b.example.com"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.svc.CreateReservedDomain(e.ctx, e.user, tc.params)
			wantViolation(t, err, tc.field, tc.want)
		})
	}
	if page, _ := e.svc.ListReservedDomains(e.ctx, e.user, edgeplane.ListOptions{}); len(page.Items) != 0 {
		t.Errorf("invalid creates stored %d domains", len(page.Items))
	}
	_, err := e.svc.CreateReservedDomain(e.ctx, edgeplane.Principal{}, domains.CreateParams{Domain: "a.example.com"})
	wantCode(t, err, apierr.Unauthenticated)

	d := e.reservedDomain(t, e.user, domains.CreateParams{Domain: "a.example.com"})
	for _, tc := range []struct {
		name        string
		params      domains.UpdateParams
		field, want string
	}{
		{"domain", domains.UpdateParams{Domain: ptr("b.example.com")}, "domain", "cannot be changed"},
		{"region", domains.UpdateParams{Region: ptr("us")}, "region", "cannot be changed"},
		{"both", domains.UpdateParams{CertificateID: ptr(cert.ID), CertificateManagementPolicy: letsEncrypt}, "certificate_management_policy", "cannot be combined"},
		{"description", domains.UpdateParams{Description: ptr(strings.Repeat("x", 256))}, "description", "255 bytes"},
		{"policy", domains.UpdateParams{CertificateManagementPolicy: &domains.CertPolicyParams{}}, "certificate_management_policy.authority", "is required"},
		{"malformed endpoint configuration", domains.UpdateParams{HTTPEndpointConfigurationID: ptr("x")}, "http_endpoint_configuration_id", "endpoint configuration ID"},
	} {
		t.Run("update "+tc.name, func(t *testing.T) {
			_, err := e.svc.UpdateReservedDomain(e.ctx, e.user, d.ID, tc.params)
			wantViolation(t, err, tc.field, tc.want)
		})
	}
	if got, _ := e.svc.GetReservedDomain(e.ctx, e.user, d.ID); !cmp.Equal(d, got) {
		t.Errorf("invalid updates changed the domain: %+v", got)
	}
}

func TestReservedDomainUniqueAcrossAccounts(t *testing.T) {
	e := newEnv(t)
	e.reservedDomain(t, e.user, domains.CreateParams{Domain: "app.example.com"})
	for _, tc := range []struct {
		name string
		p    edgeplane.Principal
		in   string
	}{
		{"same account", e.admin, "app.example.com"},
		{"other account", e.other, "app.example.com"},
		{"case and trailing dot", e.other, "APP.example.com."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.svc.CreateReservedDomain(e.ctx, tc.p, domains.CreateParams{Domain: tc.in})
			wantCode(t, err, apierr.Conflict)
			if err.Error() != "the domain app.example.com is already reserved" {
				t.Errorf("message %q", err)
			}
		})
	}
	// A wildcard and the names below it are separate reservations.
	e.reservedDomain(t, e.other, domains.CreateParams{Domain: "*.example.com"})

	// Concurrent reservations of one name: exactly one wins.
	var (
		wg              sync.WaitGroup
		mu              sync.Mutex
		wins, conflicts int
	)
	for i := range 8 {
		p := e.user
		if i%2 == 1 {
			p = e.other
		}
		wg.Go(func() {
			_, err := e.svc.CreateReservedDomain(e.ctx, p, domains.CreateParams{Domain: "race.example.com"})
			mu.Lock()
			defer mu.Unlock()
			switch apierr.CodeOf(err) {
			case 0:
				wins++
			case apierr.Conflict:
				conflicts++
			default:
				t.Errorf("unexpected error %v", err)
			}
		})
	}
	wg.Wait()
	if wins != 1 || conflicts != 7 {
		t.Errorf("%d wins and %d conflicts; want 1 and 7", wins, conflicts)
	}
}

func TestReservedDomainIsolation(t *testing.T) {
	e := newEnv(t)
	d := e.reservedDomain(t, e.user, domains.CreateParams{Domain: "app.example.com"})
	missing := flipLast(d.ID)
	_, err := e.svc.GetReservedDomain(e.ctx, e.other, d.ID)
	_, errMissing := e.svc.GetReservedDomain(e.ctx, e.user, missing)
	wantHidden(t, err, errMissing, d.ID, missing)
	_, err = e.svc.UpdateReservedDomain(e.ctx, e.other, d.ID, domains.UpdateParams{Description: ptr("x")})
	_, errMissing = e.svc.UpdateReservedDomain(e.ctx, e.user, missing, domains.UpdateParams{Description: ptr("x")})
	wantHidden(t, err, errMissing, d.ID, missing)
	wantHidden(t, e.svc.DeleteReservedDomain(e.ctx, e.other, d.ID), e.svc.DeleteReservedDomain(e.ctx, e.user, missing), d.ID, missing)
	wantHidden(t, e.svc.DetachReservedDomainCertificate(e.ctx, e.other, d.ID), e.svc.DetachReservedDomainCertificate(e.ctx, e.user, missing), d.ID, missing)
	wantHidden(t, e.svc.DetachReservedDomainCertificateManagementPolicy(e.ctx, e.other, d.ID),
		e.svc.DetachReservedDomainCertificateManagementPolicy(e.ctx, e.user, missing), d.ID, missing)
	if page, _ := e.svc.ListReservedDomains(e.ctx, e.other, edgeplane.ListOptions{}); len(page.Items) != 0 {
		t.Errorf("another account lists %d domains", len(page.Items))
	}
	if got, _ := e.svc.GetReservedDomain(e.ctx, e.user, d.ID); !cmp.Equal(d, got) {
		t.Errorf("another account changed the domain: %+v", got)
	}
	_, err = e.svc.GetReservedDomain(e.ctx, e.user, "rd_bad")
	wantCode(t, err, apierr.NotFound)
}

func TestReservedDomainCNAMETargets(t *testing.T) {
	e := newEnv(t)
	custom := e.reservedDomain(t, e.user, domains.CreateParams{Domain: "app.example.com"})
	wild := e.reservedDomain(t, e.user, domains.CreateParams{Domain: "*.example.net"})
	owned := e.reservedDomain(t, e.user, domains.CreateParams{Domain: "*.demo.edgeplane.app", CertificateManagementPolicy: letsEncrypt})
	for _, d := range []*domains.ReservedDomain{custom, wild} {
		if d.CNAMETarget == nil || !strings.HasSuffix(*d.CNAMETarget, "."+domains.DefaultCNAMEBase) {
			t.Errorf("%s: cname_target %v, want one under %s", d.Domain, d.CNAMETarget, domains.DefaultCNAMEBase)
		}
		if d.ACMEChallengeCNAMETarget != nil {
			t.Errorf("%s: acme target without a policy", d.Domain)
		}
	}
	if *custom.CNAMETarget == *wild.CNAMETarget {
		t.Error("two domains share a CNAME target")
	}
	if owned.CNAMETarget != nil || owned.ACMEChallengeCNAMETarget != nil {
		t.Errorf("owned subdomain: cname %v, acme %v; want both null", owned.CNAMETarget, owned.ACMEChallengeCNAMETarget)
	}

	// Stable: updates and reads keep the target.
	upd, _ := e.svc.UpdateReservedDomain(e.ctx, e.user, custom.ID, domains.UpdateParams{CertificateManagementPolicy: letsEncrypt})
	if *upd.CNAMETarget != *custom.CNAMETarget || upd.ACMEChallengeCNAMETarget != nil {
		t.Errorf("after update: cname %v (was %v), acme %v (non-wildcard: want null)", *upd.CNAMETarget, *custom.CNAMETarget, upd.ACMEChallengeCNAMETarget)
	}
	// A managed wildcard outside the owned bases gets an ACME challenge
	// target, and loses it with the policy.
	upd, _ = e.svc.UpdateReservedDomain(e.ctx, e.user, wild.ID, domains.UpdateParams{CertificateManagementPolicy: letsEncrypt})
	if upd.ACMEChallengeCNAMETarget == nil || *upd.ACMEChallengeCNAMETarget != domains.ACMEChallengeTarget(*wild.CNAMETarget) {
		t.Errorf("managed wildcard: acme target %v", upd.ACMEChallengeCNAMETarget)
	}
	if err := e.svc.DetachReservedDomainCertificateManagementPolicy(e.ctx, e.user, wild.ID); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.svc.GetReservedDomain(e.ctx, e.user, wild.ID); got.ACMEChallengeCNAMETarget != nil || *got.CNAMETarget != *wild.CNAMETarget {
		t.Errorf("after detach: %+v", got)
	}

	// A configured Service.
	svc, err := edgeplane.New(memstore.New(), edgeplane.Options{Domains: domains.Config{
		OwnedDomains: []string{"Tunnels.Example.org"}, CNAMEBase: "cname.example.org",
	}})
	if err != nil {
		t.Fatal(err)
	}
	acct, _ := svc.Host().CreateAccount(e.ctx, identity.AccountParams{Name: "x"})
	u, _ := svc.Host().CreateUser(e.ctx, acct.ID, identity.SubjectParams{Name: "u"})
	p := edgeplane.Principal{AccountID: acct.ID, SubjectID: u.ID}
	d, err := svc.CreateReservedDomain(e.ctx, p, domains.CreateParams{Domain: "x.tunnels.example.org"})
	if err != nil || d.CNAMETarget != nil {
		t.Errorf("configured owned subdomain: %+v, %v", d, err)
	}
	d, err = svc.CreateReservedDomain(e.ctx, p, domains.CreateParams{Domain: "demo.edgeplane.app"})
	if err != nil || d.CNAMETarget == nil || !strings.HasSuffix(*d.CNAMETarget, ".cname.example.org") {
		t.Errorf("edgeplane.app is not owned by this service: %+v, %v", d, err)
	}
	_, err = svc.CreateReservedDomain(e.ctx, p, domains.CreateParams{Domain: "*.tunnels.example.org"})
	wantViolation(t, err, "domain", "tunnels.example.org is owned by the service")

	bad, err := edgeplane.New(memstore.New(), edgeplane.Options{Domains: domains.Config{OwnedDomains: []string{"*.bad"}}})
	if bad != nil || apierr.CodeOf(err) != apierr.InvalidArgument || !strings.Contains(fmt.Sprint(err), "owned_domains[0]") {
		t.Errorf("New with an invalid Options.Domains = %v, %v; want an invalid-argument error naming owned_domains[0]", bad, err)
	}
}

func TestReservedDomainCertificate(t *testing.T) {
	e := newEnv(t)
	cert := e.tlsCert(t, e.user, "*.example.com")
	d, err := e.svc.CreateReservedDomain(e.ctx, e.user, domains.CreateParams{Domain: "app.example.com", CertificateID: cert.ID})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(certRef(cert.ID), d.Certificate); diff != "" {
		t.Errorf("certificate (-want +got):\n%s", diff)
	}
	if d.CertificateManagementPolicy != nil || d.CertificateManagementStatus != nil {
		t.Errorf("user certificate with management: %+v", d)
	}

	// A referenced certificate cannot be deleted; the conflict names the
	// domain.
	err = e.svc.DeleteTLSCertificate(e.ctx, e.user, cert.ID)
	wantCode(t, err, apierr.Conflict)
	for _, part := range []string{cert.ID, d.ID, "app.example.com"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("conflict %q does not name %s", err, part)
		}
	}

	// Detach: 204, certificate null, and the certificate can go.
	if err := e.svc.DetachReservedDomainCertificate(e.ctx, e.user, d.ID); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.svc.GetReservedDomain(e.ctx, e.user, d.ID); got.Certificate != nil || got.CertificateManagementStatus != nil {
		t.Errorf("after detach: %+v", got)
	}
	if err := e.svc.DetachReservedDomainCertificate(e.ctx, e.user, d.ID); err != nil {
		t.Errorf("detaching again: %v", err)
	}

	// Attach by update; a certificate by ID replaces management.
	upd, err := e.svc.UpdateReservedDomain(e.ctx, e.user, d.ID, domains.UpdateParams{CertificateManagementPolicy: letsEncrypt})
	if err != nil || upd.CertificateManagementPolicy == nil {
		t.Fatalf("set policy: %+v, %v", upd, err)
	}
	upd, err = e.svc.UpdateReservedDomain(e.ctx, e.user, d.ID, domains.UpdateParams{CertificateID: ptr(cert.ID)})
	if err != nil || !cmp.Equal(certRef(cert.ID), upd.Certificate) || upd.CertificateManagementPolicy != nil || upd.CertificateManagementStatus != nil {
		t.Fatalf("attach certificate: %+v, %v", upd, err)
	}
	// "" detaches.
	upd, err = e.svc.UpdateReservedDomain(e.ctx, e.user, d.ID, domains.UpdateParams{CertificateID: ptr("")})
	if err != nil || upd.Certificate != nil {
		t.Fatalf("detach by update: %+v, %v", upd, err)
	}
	_, err = e.svc.UpdateReservedDomain(e.ctx, e.user, d.ID, domains.UpdateParams{CertificateID: ptr(e.tlsCert(t, e.user, "other.example.com").ID)})
	wantViolation(t, err, "certificate_id", "does not cover app.example.com")
	_, err = e.svc.UpdateReservedDomain(e.ctx, e.user, d.ID, domains.UpdateParams{CertificateID: ptr(e.tlsCert(t, e.other, "*.example.com").ID)})
	wantViolation(t, err, "certificate_id", "not found in this account")

	// A wildcard domain needs a wildcard certificate.
	_, err = e.svc.CreateReservedDomain(e.ctx, e.user, domains.CreateParams{Domain: "*.example.com", CertificateID: e.tlsCert(t, e.user, "a.example.com").ID})
	wantViolation(t, err, "certificate_id", "does not cover *.example.com")
	e.reservedDomain(t, e.user, domains.CreateParams{Domain: "*.example.com", CertificateID: cert.ID})

	if err := e.svc.DeleteReservedDomain(e.ctx, e.user, d.ID); err != nil {
		t.Fatal(err)
	}
}

// TestReservedDomainCertificateDeleteRace checks that the reference check
// and the write are atomic: a certificate deleted after the coverage
// check is reported as a violation of certificate_id, never stored as a
// dangling reference.
func TestReservedDomainCertificateDeleteRace(t *testing.T) {
	e := newEnv(t)
	for i := range 20 {
		cert := e.tlsCert(t, e.user, "*.example.com")
		var wg sync.WaitGroup
		var created *domains.ReservedDomain
		var createErr, deleteErr error
		wg.Go(func() {
			created, createErr = e.svc.CreateReservedDomain(e.ctx, e.user, domains.CreateParams{Domain: fmt.Sprintf("r%d.example.com", i), CertificateID: cert.ID})
		})
		wg.Go(func() { deleteErr = e.svc.DeleteTLSCertificate(e.ctx, e.user, cert.ID) })
		wg.Wait()
		switch {
		case createErr == nil && deleteErr == nil:
			t.Fatalf("both the domain %s (certificate %v) and the deletion of its certificate succeeded", created.ID, created.Certificate)
		case createErr != nil && deleteErr != nil:
			t.Fatalf("both failed: %v; %v", createErr, deleteErr)
		case createErr != nil:
			wantViolation(t, createErr, "certificate_id", "not found")
		default:
			wantCode(t, deleteErr, apierr.Conflict)
		}
	}
}

// interferingStore runs before (when set) ahead of every Create and
// Update of a reserved domain: another writer acting between the
// Service's checks and its write.
type interferingStore struct {
	store.Store
	before func(rec store.Record) error
}

func (s *interferingStore) Create(ctx context.Context, rec store.Record) error {
	if s.before != nil && rec.Kind == edgeplane.KindReservedDomain {
		if err := s.before(rec); err != nil {
			return err
		}
	}
	return s.Store.Create(ctx, rec)
}

func (s *interferingStore) Update(ctx context.Context, kind store.Kind, acct, id string, fn func(*store.Record) error) (store.Record, error) {
	if s.before != nil && kind == edgeplane.KindReservedDomain {
		if err := s.before(store.Record{Kind: kind, AccountID: acct, ID: id}); err != nil {
			return store.Record{}, err
		}
	}
	return s.Store.Update(ctx, kind, acct, id, fn)
}

func TestReservedDomainReferencesCheckedAtWrite(t *testing.T) {
	st := &interferingStore{Store: memstore.New()}
	e := newEnvWithStore(t, st)
	d := e.reservedDomain(t, e.user, domains.CreateParams{Domain: "app.example.com"})
	deleteFirst := func(del func() error) {
		st.before = func(store.Record) error {
			st.before = nil
			if err := del(); err != nil {
				t.Fatal(err)
			}
			return nil
		}
	}
	cert := e.tlsCert(t, e.user, "*.example.com")
	deleteFirst(func() error { return e.svc.DeleteTLSCertificate(e.ctx, e.user, cert.ID) })
	_, err := e.svc.CreateReservedDomain(e.ctx, e.user, domains.CreateParams{Domain: "new.example.com", CertificateID: cert.ID})
	wantViolation(t, err, "certificate_id", cert.ID+" not found in this account")

	for _, tc := range []struct{ typ, field string }{{"http", "http_endpoint_configuration_id"}, {"https", "https_endpoint_configuration_id"}} {
		ec := e.endpointConfig(t, e.user, tc.typ)
		deleteFirst(func() error { return e.svc.DeleteEndpointConfiguration(e.ctx, e.user, ec.ID) })
		params := domains.UpdateParams{HTTPEndpointConfigurationID: ptr(ec.ID)}
		if tc.typ == "https" {
			params = domains.UpdateParams{HTTPSEndpointConfigurationID: ptr(ec.ID)}
		}
		_, err := e.svc.UpdateReservedDomain(e.ctx, e.user, d.ID, params)
		wantViolation(t, err, tc.field, ec.ID+" not found in this account")
	}
	if got, _ := e.svc.GetReservedDomain(e.ctx, e.user, d.ID); !cmp.Equal(d, got) {
		t.Errorf("refused updates changed the domain: %+v", got)
	}

	// A CNAME target clash (another writer holding the key) draws a new
	// target; a domain clash does not retry.
	clashes := 0
	st.before = func(rec store.Record) error {
		if clashes++; clashes <= 2 {
			return &store.DuplicateError{Key: rec.Keys[1]}
		}
		return nil
	}
	got, err := e.svc.CreateReservedDomain(e.ctx, e.user, domains.CreateParams{Domain: "clash.example.com"})
	if err != nil || clashes != 3 || got.CNAMETarget == nil {
		t.Fatalf("after two CNAME clashes: %+v, %v (%d attempts)", got, err, clashes)
	}
	st.before = func(rec store.Record) error { return &store.DuplicateError{Key: rec.Keys[1]} }
	_, err = e.svc.CreateReservedDomain(e.ctx, e.user, domains.CreateParams{Domain: "stuck.example.com"})
	wantCode(t, err, apierr.Conflict)
	st.before = nil
}

func TestReservedDomainEndpointConfigurations(t *testing.T) {
	e := newEnv(t)
	d := e.reservedDomain(t, e.user, domains.CreateParams{Domain: "app.example.com"})
	httpEC, httpsEC := e.endpointConfig(t, e.user, "http"), e.endpointConfig(t, e.user, "https")
	upd, err := e.svc.UpdateReservedDomain(e.ctx, e.user, d.ID, domains.UpdateParams{
		HTTPEndpointConfigurationID: ptr(httpEC.ID), HTTPSEndpointConfigurationID: ptr(httpsEC.ID),
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ecRef(httpEC.ID), upd.HTTPEndpointConfiguration); diff != "" {
		t.Errorf("http (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(ecRef(httpsEC.ID), upd.HTTPSEndpointConfiguration); diff != "" {
		t.Errorf("https (-want +got):\n%s", diff)
	}
	if got, _ := e.svc.GetReservedDomain(e.ctx, e.user, d.ID); !cmp.Equal(upd, got) {
		t.Errorf("get after update: %+v", got)
	}

	for _, tc := range []struct {
		name        string
		params      domains.UpdateParams
		field, want string
	}{
		{"https configuration as http", domains.UpdateParams{HTTPEndpointConfigurationID: ptr(httpsEC.ID)}, "http_endpoint_configuration_id", "of type http; " + httpsEC.ID + " is of type https"},
		{"http configuration as https", domains.UpdateParams{HTTPSEndpointConfigurationID: ptr(httpEC.ID)}, "https_endpoint_configuration_id", "of type https"},
		{"missing", domains.UpdateParams{HTTPEndpointConfigurationID: ptr(flipLast(httpEC.ID))}, "http_endpoint_configuration_id", "not found in this account"},
		{"another account's", domains.UpdateParams{HTTPSEndpointConfigurationID: ptr(e.endpointConfig(t, e.other, "https").ID)}, "https_endpoint_configuration_id", "not found in this account"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.svc.UpdateReservedDomain(e.ctx, e.user, d.ID, tc.params)
			wantViolation(t, err, tc.field, tc.want)
		})
	}

	err = e.svc.DeleteEndpointConfiguration(e.ctx, e.user, httpsEC.ID)
	wantCode(t, err, apierr.Conflict)
	if !strings.Contains(err.Error(), d.ID+" (app.example.com)") {
		t.Errorf("conflict %q does not name the domain", err)
	}
	upd, err = e.svc.UpdateReservedDomain(e.ctx, e.user, d.ID, domains.UpdateParams{HTTPSEndpointConfigurationID: ptr("")})
	if err != nil || upd.HTTPSEndpointConfiguration != nil || upd.HTTPEndpointConfiguration == nil {
		t.Fatalf("detach https: %+v, %v", upd, err)
	}
	if err := e.svc.DeleteEndpointConfiguration(e.ctx, e.user, httpsEC.ID); err != nil {
		t.Errorf("delete after detach: %v", err)
	}
	// Deleting the domain releases its references.
	if err := e.svc.DeleteReservedDomain(e.ctx, e.user, d.ID); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.DeleteEndpointConfiguration(e.ctx, e.user, httpEC.ID); err != nil {
		t.Errorf("delete after the domain is gone: %v", err)
	}
}

func TestCertificateManagement(t *testing.T) {
	e := newEnv(t)
	t0 := envStart
	d, err := e.svc.CreateReservedDomain(e.ctx, e.user, domains.CreateParams{
		Domain: "*.example.com", CertificateManagementPolicy: &domains.CertPolicyParams{Authority: "letsencrypt", PrivateKeyType: "ecdsa"},
	})
	if err != nil {
		t.Fatal(err)
	}
	acme := domains.ACMEChallengeTarget(*d.CNAMETarget)
	wantStatus := &domains.CertStatus{ProvisioningJob: &domains.CertJob{StartedAt: t0,
		Msg: "certificate provisioning has started; it needs a CNAME record for _acme-challenge.example.com pointing to " + acme}}
	if diff := cmp.Diff(wantStatus, d.CertificateManagementStatus); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
	if *d.CertificateManagementPolicy != (domains.CertPolicy{Authority: "letsencrypt", PrivateKeyType: "ecdsa"}) || *d.ACMEChallengeCNAMETarget != acme {
		t.Errorf("policy %+v, acme %v", d.CertificateManagementPolicy, d.ACMEChallengeCNAMETarget)
	}
	// Another account's domain without a policy, and one with a policy.
	e.reservedDomain(t, e.other, domains.CreateParams{Domain: "plain.example.org"})
	otherManaged := e.reservedDomain(t, e.other, domains.CreateParams{Domain: "shop.example.org", CertificateManagementPolicy: letsEncrypt})

	orders, err := e.svc.Host().Certificates().CertificateOrders(e.ctx, 0)
	wantOrders := []hosting.CertificateOrder{
		{AccountID: e.other.AccountID, ReservedDomainID: otherManaged.ID, Domain: "shop.example.org", Authority: "letsencrypt", PrivateKeyType: "rsa"},
		{AccountID: e.user.AccountID, ReservedDomainID: d.ID, Domain: "*.example.com", Authority: "letsencrypt", PrivateKeyType: "ecdsa", ACMEChallengeCNAMETarget: acme},
	}
	if diff := cmp.Diff(wantOrders, orders); err != nil || diff != "" {
		t.Fatalf("orders (%v) (-want +got):\n%s", err, diff)
	}
	if orders, _ := e.svc.Host().Certificates().CertificateOrders(e.ctx, 1); len(orders) != 1 {
		t.Errorf("limit 1 gave %d orders", len(orders))
	}
	_, err = e.svc.Host().Certificates().CertificateOrders(e.ctx, -1)
	wantViolation(t, err, "limit", "negative")

	// A temporary failure: retried at retries_at.
	e.clock.Advance(time.Minute)
	retry := t0.Add(time.Hour)
	got, err := e.svc.Host().Certificates().ReportCertificateFailed(e.ctx, e.user.AccountID, d.ID, domains.ProvisioningFailure{ErrorCode: "INTERNAL_ERROR", Msg: "rate limited by the CA", RetriesAt: retry})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus = &domains.CertStatus{ProvisioningJob: &domains.CertJob{ErrorCode: ptr("INTERNAL_ERROR"), Msg: "rate limited by the CA", StartedAt: t0, RetriesAt: &retry}}
	if diff := cmp.Diff(wantStatus, got.CertificateManagementStatus); diff != "" {
		t.Errorf("after failure (-want +got):\n%s", diff)
	}
	if orders, _ := e.svc.Host().Certificates().CertificateOrders(e.ctx, 0); len(orders) != 1 || orders[0].ReservedDomainID != otherManaged.ID {
		t.Errorf("orders before retries_at: %+v", orders)
	}
	e.clock.Advance(time.Hour)
	if orders, _ := e.svc.Host().Certificates().CertificateOrders(e.ctx, 0); len(orders) != 2 {
		t.Errorf("orders after retries_at: %+v", orders)
	}

	// Reports that do not fit are refused and change nothing.
	certPEM, keyPEM := genTLSCert(t, tlsSpec{names: []string{"*.example.com"}, notBefore: t0})
	rsaPEM, rsaKeyPEM := genTLSCert(t, tlsSpec{names: []string{"*.example.com"}, rsa: true, notBefore: t0})
	narrowPEM, narrowKey := genTLSCert(t, tlsSpec{names: []string{"a.example.com"}, notBefore: t0})
	_, err = e.svc.Host().Certificates().ReportCertificateIssued(e.ctx, e.user.AccountID, d.ID, narrowPEM, narrowKey)
	wantViolation(t, err, "certificate_pem", "does not cover *.example.com")
	_, err = e.svc.Host().Certificates().ReportCertificateIssued(e.ctx, e.user.AccountID, d.ID, rsaPEM, rsaKeyPEM)
	wantCode(t, err, apierr.FailedPrecondition)
	_, err = e.svc.Host().Certificates().ReportCertificateIssued(e.ctx, e.user.AccountID, d.ID, certPEM, "nope")
	wantViolation(t, err, "private_key_pem", "")
	_, err = e.svc.Host().Certificates().ReportCertificateIssued(e.ctx, e.other.AccountID, d.ID, certPEM, keyPEM)
	wantCode(t, err, apierr.NotFound)
	_, err = e.svc.Host().Certificates().ReportCertificateFailed(e.ctx, e.user.AccountID, "rd_x", domains.ProvisioningFailure{ErrorCode: "DNS_ERROR", Msg: "x"})
	wantCode(t, err, apierr.NotFound)
	_, err = e.svc.Host().Certificates().ReportCertificateFailed(e.ctx, e.user.AccountID, d.ID, domains.ProvisioningFailure{ErrorCode: "INTERNAL_ERROR", Msg: "x"})
	wantViolation(t, err, "retries_at", "required")
	if page, _ := e.svc.ListTLSCertificates(e.ctx, e.user, edgeplane.ListOptions{}); len(page.Items) != 0 {
		t.Fatalf("refused reports stored %d certificates", len(page.Items))
	}

	// Success: a certificate of the account, the job ends, renews_at set.
	got, err = e.svc.Host().Certificates().ReportCertificateIssued(e.ctx, e.user.AccountID, d.ID, certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	certs, _ := e.svc.ListTLSCertificates(e.ctx, e.user, edgeplane.ListOptions{})
	if len(certs.Items) != 1 || certs.Items[0].Description != "managed certificate for *.example.com" || certs.Items[0].PrivateKeyType != "ecdsa" {
		t.Fatalf("certificates after issue: %+v", certs.Items)
	}
	issued := certs.Items[0]
	renews := t0.Add(60 * 24 * time.Hour)
	if diff := cmp.Diff(certRef(issued.ID), got.Certificate); diff != "" {
		t.Errorf("certificate (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(&domains.CertStatus{RenewsAt: &renews}, got.CertificateManagementStatus); diff != "" {
		t.Errorf("status after issue (-want +got):\n%s", diff)
	}
	if orders, _ := e.svc.Host().Certificates().CertificateOrders(e.ctx, 0); len(orders) != 1 || orders[0].ReservedDomainID != otherManaged.ID {
		t.Errorf("orders after issue: %+v", orders)
	}
	err = e.svc.DeleteTLSCertificate(e.ctx, e.user, issued.ID)
	wantCode(t, err, apierr.Conflict)
	if _, key, err := e.svc.Host().TLSCertificateKeyPair(e.ctx, e.user.AccountID, issued.ID); err != nil || key != keyPEM {
		t.Errorf("key pair of the issued certificate: %v", err)
	}

	// Renewal: due at renews_at, shown as a job until reported.
	e.clock.now = renews.Add(time.Hour)
	got, _ = e.svc.GetReservedDomain(e.ctx, e.user, d.ID)
	wantStatus = &domains.CertStatus{RenewsAt: &renews, ProvisioningJob: &domains.CertJob{Msg: domains.RenewalMsg, StartedAt: renews}}
	if diff := cmp.Diff(wantStatus, got.CertificateManagementStatus); diff != "" {
		t.Errorf("due renewal (-want +got):\n%s", diff)
	}
	orders, _ = e.svc.Host().Certificates().CertificateOrders(e.ctx, 0)
	if len(orders) != 2 || orders[1].ReservedDomainID != d.ID || !orders[1].Renewal {
		t.Errorf("renewal orders: %+v", orders)
	}
	// A permanent failure: not retried until the user sets the policy
	// again.
	got, err = e.svc.Host().Certificates().ReportCertificateFailed(e.ctx, e.user.AccountID, d.ID, domains.ProvisioningFailure{ErrorCode: "DNS_ERROR", Msg: "_acme-challenge CNAME missing"})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus = &domains.CertStatus{RenewsAt: &renews, ProvisioningJob: &domains.CertJob{ErrorCode: ptr("DNS_ERROR"), Msg: "_acme-challenge CNAME missing", StartedAt: renews}}
	if diff := cmp.Diff(wantStatus, got.CertificateManagementStatus); diff != "" {
		t.Errorf("DNS_ERROR (-want +got):\n%s", diff)
	}
	if got.Certificate == nil || got.Certificate.ID != issued.ID {
		t.Error("a failed renewal dropped the current certificate")
	}
	e.clock.Advance(1000 * time.Hour)
	if orders, _ := e.svc.Host().Certificates().CertificateOrders(e.ctx, 0); len(orders) != 1 {
		t.Errorf("DNS_ERROR domain is ordered: %+v", orders)
	}
	got, _ = e.svc.UpdateReservedDomain(e.ctx, e.user, d.ID, domains.UpdateParams{CertificateManagementPolicy: &domains.CertPolicyParams{Authority: "letsencrypt", PrivateKeyType: "ecdsa"}})
	if job := got.CertificateManagementStatus.ProvisioningJob; job == nil || job.ErrorCode != nil || got.Certificate == nil {
		t.Errorf("policy set again: %+v", got)
	}
	if orders, _ := e.svc.Host().Certificates().CertificateOrders(e.ctx, 0); len(orders) != 2 {
		t.Errorf("orders after the user retried: %+v", orders)
	}

	// Detaching the policy: policy, status and ACME target null; the
	// certificate stays; late reports are refused.
	if err := e.svc.DetachReservedDomainCertificateManagementPolicy(e.ctx, e.user, d.ID); err != nil {
		t.Fatal(err)
	}
	got, _ = e.svc.GetReservedDomain(e.ctx, e.user, d.ID)
	if got.CertificateManagementPolicy != nil || got.CertificateManagementStatus != nil || got.ACMEChallengeCNAMETarget != nil || got.Certificate == nil {
		t.Errorf("after detaching the policy: %+v", got)
	}
	_, err = e.svc.Host().Certificates().ReportCertificateFailed(e.ctx, e.user.AccountID, d.ID, domains.ProvisioningFailure{ErrorCode: "DNS_ERROR", Msg: "x"})
	wantCode(t, err, apierr.FailedPrecondition)
	late, lateKey := genTLSCert(t, tlsSpec{names: []string{"*.example.com"}, notBefore: e.clock.Now().Add(-time.Hour)})
	_, err = e.svc.Host().Certificates().ReportCertificateIssued(e.ctx, e.user.AccountID, d.ID, late, lateKey)
	wantCode(t, err, apierr.FailedPrecondition)
	if certs, _ := e.svc.ListTLSCertificates(e.ctx, e.user, edgeplane.ListOptions{}); len(certs.Items) != 1 {
		t.Errorf("late report stored a certificate: %d", len(certs.Items))
	}
	if orders, _ := e.svc.Host().Certificates().CertificateOrders(e.ctx, 0); len(orders) != 1 {
		t.Errorf("orders after detach: %+v", orders)
	}

	// Detaching the certificate while managed restarts provisioning.
	if _, err := e.svc.UpdateReservedDomain(e.ctx, e.user, d.ID, domains.UpdateParams{CertificateManagementPolicy: letsEncrypt}); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.DetachReservedDomainCertificate(e.ctx, e.user, d.ID); err != nil {
		t.Fatal(err)
	}
	got, _ = e.svc.GetReservedDomain(e.ctx, e.user, d.ID)
	if got.Certificate != nil || got.CertificateManagementStatus.ProvisioningJob == nil || got.CertificateManagementStatus.RenewsAt != nil {
		t.Errorf("detach certificate while managed: %+v", got.CertificateManagementStatus)
	}
}

func TestCertificateOrdersPaging(t *testing.T) {
	e := newEnv(t)
	for i := range edgeplane.MaxPageSize + 20 {
		params := domains.CreateParams{Domain: fmt.Sprintf("d%d.example.com", i)}
		if i%3 == 0 {
			params.CertificateManagementPolicy = letsEncrypt
		}
		e.reservedDomain(t, e.user, params)
	}
	orders, err := e.svc.Host().Certificates().CertificateOrders(e.ctx, 1000)
	if err != nil || len(orders) != (edgeplane.MaxPageSize+20+2)/3 {
		t.Fatalf("%d orders, %v; want %d", len(orders), err, (edgeplane.MaxPageSize+20+2)/3)
	}
	seen := map[string]bool{}
	for _, o := range orders {
		if seen[o.ReservedDomainID] {
			t.Fatalf("%s ordered twice", o.Domain)
		}
		seen[o.ReservedDomainID] = true
	}
}

func TestReservedDomainEvents(t *testing.T) {
	rec := &eventRecorder{}
	e, _ := newEventEnv(t, memstore.New(), events.Options{Sink: rec})
	types := []string{"reserved_domain_created.v0", "reserved_domain_updated.v0", "reserved_domain_deleted.v0",
		"tls_certificate_created.v0", "tls_certificate_updated.v0", "tls_certificate_deleted.v0",
		"endpoint_configuration_created.v0", "endpoint_configuration_updated.v0", "endpoint_configuration_deleted.v0"}
	sub := e.subscribe(t, e.admin, types...)
	cert := e.tlsCert(t, e.user, "app.example.com")
	ec := e.endpointConfig(t, e.user, "http")
	d := e.reservedDomain(t, e.user, domains.CreateParams{Domain: "app.example.com", CertificateID: cert.ID})
	steps := []error{
		second(e.svc.UpdateTLSCertificate(e.ctx, e.user, cert.ID, domains.UpdateCertificateParams{Description: ptr("x")})),
		second(e.svc.UpdateEndpointConfiguration(e.ctx, e.user, ec.ID, domains.UpdateEndpointConfigurationParams{Description: ptr("x")})),
		second(e.svc.UpdateReservedDomain(e.ctx, e.user, d.ID, domains.UpdateParams{HTTPEndpointConfigurationID: ptr(ec.ID)})),
		e.svc.DetachReservedDomainCertificate(e.ctx, e.user, d.ID),
		second(e.svc.UpdateReservedDomain(e.ctx, e.user, d.ID, domains.UpdateParams{CertificateManagementPolicy: letsEncrypt})),
		e.svc.DetachReservedDomainCertificateManagementPolicy(e.ctx, e.user, d.ID),
		e.svc.DeleteReservedDomain(e.ctx, e.user, d.ID),
		e.svc.DeleteTLSCertificate(e.ctx, e.user, cert.ID),
		e.svc.DeleteEndpointConfiguration(e.ctx, e.user, ec.ID),
	}
	for i, err := range steps {
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	// The certificate manager's reports are events of the account too.
	managed := e.reservedDomain(t, e.user, domains.CreateParams{Domain: "m.example.com", CertificateManagementPolicy: letsEncrypt})
	certPEM, keyPEM := genTLSCert(t, tlsSpec{names: []string{"m.example.com"}, rsa: true})
	if _, err := e.svc.Host().Certificates().ReportCertificateIssued(e.ctx, e.user.AccountID, managed.ID, certPEM, keyPEM); err != nil {
		t.Fatal(err)
	}
	e.closeEvents(t)

	var got []delivery
	for _, ev := range rec.events() {
		var obj struct {
			ID string `json:"id"`
		}
		json.Unmarshal(ev.Object, &obj)
		got = append(got, delivery{ev.SubscriptionID, ev.Type, obj.ID})
	}
	issued := got[len(got)-2].ObjectID
	want := []delivery{
		{sub.ID, "tls_certificate_created.v0", cert.ID},
		{sub.ID, "endpoint_configuration_created.v0", ec.ID},
		{sub.ID, "reserved_domain_created.v0", d.ID},
		{sub.ID, "tls_certificate_updated.v0", cert.ID},
		{sub.ID, "endpoint_configuration_updated.v0", ec.ID},
		{sub.ID, "reserved_domain_updated.v0", d.ID},
		{sub.ID, "reserved_domain_updated.v0", d.ID},
		{sub.ID, "reserved_domain_updated.v0", d.ID},
		{sub.ID, "reserved_domain_updated.v0", d.ID},
		{sub.ID, "reserved_domain_deleted.v0", d.ID},
		{sub.ID, "tls_certificate_deleted.v0", cert.ID},
		{sub.ID, "endpoint_configuration_deleted.v0", ec.ID},
		{sub.ID, "reserved_domain_created.v0", managed.ID},
		{sub.ID, "tls_certificate_created.v0", issued},
		{sub.ID, "reserved_domain_updated.v0", managed.ID},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("deliveries (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(issued, "cert_") {
		t.Errorf("issued certificate event names %q", issued)
	}
}

// Reserve a custom domain with automatic certificate management, then play
// the host's certificate manager.
func ExampleService_CreateReservedDomain() {
	ctx := context.Background()
	svc, p := setup()
	d, err := svc.CreateReservedDomain(ctx, p, domains.CreateParams{
		Domain:                      "App.Example.com",
		CertificateManagementPolicy: &domains.CertPolicyParams{Authority: "letsencrypt"},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(d.Domain)
	fmt.Println("needs a CNAME record:", d.CNAMETarget != nil)
	fmt.Println("provisioning:", d.CertificateManagementStatus.ProvisioningJob != nil)

	orders, _ := svc.Host().Certificates().CertificateOrders(ctx, 0)
	fmt.Println("order:", orders[0].Domain, orders[0].PrivateKeyType)
	d, _ = svc.Host().Certificates().ReportCertificateFailed(ctx, orders[0].AccountID, orders[0].ReservedDomainID, domains.ProvisioningFailure{
		ErrorCode: domains.ErrorCodeDNS, Msg: "app.example.com has no CNAME record",
	})
	job := d.CertificateManagementStatus.ProvisioningJob
	fmt.Println(*job.ErrorCode+":", job.Msg)

	_, err = svc.CreateReservedDomain(ctx, p, domains.CreateParams{Domain: "app.example.com"})
	fmt.Println(err)
	// Output:
	// app.example.com
	// needs a CNAME record: true
	// provisioning: true
	// order: app.example.com rsa
	// DNS_ERROR: app.example.com has no CNAME record
	// the domain app.example.com is already reserved
}

// countingStore counts the records List hands out.
type countingStore struct {
	store.Store
	listed atomic.Int64
}

func (s *countingStore) List(ctx context.Context, q store.Query) ([]store.Record, error) {
	recs, err := s.Store.List(ctx, q)
	s.listed.Add(int64(len(recs)))
	return recs, err
}

// TestCertificateOrdersReadOnlyDue: the certificate manager's pass reads
// the due domains through the store's index, not every domain, and sees a
// domain leave and join the index as its state changes.
func TestCertificateOrdersReadOnlyDue(t *testing.T) {
	st := &countingStore{Store: memstore.New()}
	e := newEnvWithStore(t, st)
	for i := range 300 {
		e.reservedDomain(t, e.user, domains.CreateParams{Domain: fmt.Sprintf("plain%d.example.com", i)})
	}
	managed := e.reservedDomain(t, e.user, domains.CreateParams{Domain: "managed.example.com", CertificateManagementPolicy: letsEncrypt})
	st.listed.Store(0)
	orders, err := e.svc.Host().Certificates().CertificateOrders(e.ctx, 0)
	if err != nil || len(orders) != 1 || orders[0].ReservedDomainID != managed.ID {
		t.Fatalf("orders = %+v, %v; want the one managed domain", orders, err)
	}
	if n := st.listed.Load(); n != 1 {
		t.Errorf("the pass read %d records, want only the 1 due domain", n)
	}
	// A DNS failure takes the domain out of the index; detaching the policy too.
	if _, err := e.svc.Host().Certificates().ReportCertificateFailed(e.ctx, e.user.AccountID, managed.ID, domains.ProvisioningFailure{ErrorCode: domains.ErrorCodeDNS, Msg: "no CNAME"}); err != nil {
		t.Fatal(err)
	}
	st.listed.Store(0)
	if orders, err := e.svc.Host().Certificates().CertificateOrders(e.ctx, 0); err != nil || len(orders) != 0 || st.listed.Load() != 0 {
		t.Errorf("after a DNS failure: %d orders, %d records read, %v", len(orders), st.listed.Load(), err)
	}
}
