package edgeplane_test

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"log/slog"
	"math/big"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/store"
	"github.com/google/go-cmp/cmp"
)

// tlsSpec describes a self-signed certificate for tests.
type tlsSpec struct {
	names     []string
	rsa       bool
	notBefore time.Time     // default: the env clock's start minus a day
	lifetime  time.Duration // default: 90 days
}

// tlsRSAKey is generated once: RSA key generation is slow.
var tlsRSAKey = sync.OnceValue(func() *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return k
})

// domainsAPIBase is the env's base URL with a slash.
const domainsAPIBase = "https://api.example.test/"

// wantHidden fails unless err, from acting on another account's id, is
// the not-found error a missing ID gets: errMissing, from missingID.
func wantHidden(t *testing.T, err, errMissing error, id, missingID string) {
	t.Helper()
	wantCode(t, err, apierr.NotFound)
	wantCode(t, errMissing, apierr.NotFound)
	if !strings.Contains(err.Error(), id) || err.Error() != strings.ReplaceAll(errMissing.Error(), missingID, id) {
		t.Fatalf("another account's %s: %q; a missing ID: %q", id, err, errMissing)
	}
}

// envStart is the env clock's start, in UTC.
var envStart = time.Date(2026, 11, 21, 9, 30, 15, 0, time.UTC)

// genTLSCert returns a self-signed certificate and key as PEM.
func genTLSCert(t testing.TB, spec tlsSpec) (certPEM, keyPEM string) {
	t.Helper()
	var key crypto.Signer = tlsRSAKey()
	if !spec.rsa {
		key, _ = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	}
	if spec.notBefore.IsZero() {
		spec.notBefore = envStart.Add(-24 * time.Hour)
	}
	if spec.lifetime == 0 {
		spec.lifetime = 90 * 24 * time.Hour
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(42), Subject: pkix.Name{CommonName: "test"}, DNSNames: spec.names,
		NotBefore: spec.notBefore, NotAfter: spec.notBefore.Add(spec.lifetime),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}))
}

// tlsCert uploads a certificate for names to p's account.
func (e *env) tlsCert(t testing.TB, p edgeplane.Principal, names ...string) *domains.Certificate {
	t.Helper()
	certPEM, keyPEM := genTLSCert(t, tlsSpec{names: names})
	c, err := e.svc.CreateTLSCertificate(e.ctx, p, domains.CreateCertificateParams{CertificatePEM: certPEM, PrivateKeyPEM: keyPEM})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestTLSCertificates(t *testing.T) {
	e := newEnv(t)
	certPEM, keyPEM := genTLSCert(t, tlsSpec{names: []string{"app.example.com", "*.example.com"}})
	c, err := e.svc.CreateTLSCertificate(e.ctx, e.user, domains.CreateCertificateParams{
		Description: "wildcard", Metadata: "m", CertificatePEM: certPEM, PrivateKeyPEM: keyPEM,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := &domains.Certificate{
		ID: c.ID, URI: domainsAPIBase + "tls_certificates/" + c.ID, CreatedAt: envStart,
		Description: "wildcard", Metadata: "m", CertificatePEM: certPEM, SubjectCommonName: "test",
		SubjectAlternativeNames: domains.SubjectAlternativeNames{DNSNames: []string{"app.example.com", "*.example.com"}, IPs: []string{}},
		IssuerCommonName:        "test", SerialNumber: "2a",
		NotBefore: envStart.Add(-24 * time.Hour), NotAfter: envStart.Add(89 * 24 * time.Hour), PrivateKeyType: "ecdsa",
	}
	if diff := cmp.Diff(want, c); diff != "" {
		t.Errorf("create (-want +got):\n%s", diff)
	}
	got, err := e.svc.GetTLSCertificate(e.ctx, e.admin, c.ID)
	if diff := cmp.Diff(want, got); err != nil || diff != "" {
		t.Errorf("get (%v) (-want +got):\n%s", err, diff)
	}
	for _, v := range []any{c, got} {
		b, _ := json.Marshal(v)
		if strings.Contains(string(b), "PRIVATE KEY") || strings.Contains(string(b), "private_key_pem") {
			t.Errorf("a response shows the private key: %s", b)
		}
	}

	upd, err := e.svc.UpdateTLSCertificate(e.ctx, e.user, c.ID, domains.UpdateCertificateParams{Description: ptr("renamed")})
	if err != nil || upd.Description != "renamed" || upd.Metadata != "m" || upd.CertificatePEM != certPEM {
		t.Errorf("update = %+v, %v", upd, err)
	}
	_, err = e.svc.UpdateTLSCertificate(e.ctx, e.user, c.ID, domains.UpdateCertificateParams{Metadata: ptr(strings.Repeat("x", 4097))})
	wantViolation(t, err, "metadata", "4096 bytes")

	// The host reads the key pair; the update kept the key.
	gotCert, gotKey, err := e.svc.Host().TLSCertificateKeyPair(e.ctx, e.user.AccountID, c.ID)
	if err != nil || gotCert != certPEM || gotKey != keyPEM {
		t.Errorf("TLSCertificateKeyPair = %v; want the uploaded pair", err)
	}
	_, _, err = e.svc.Host().TLSCertificateKeyPair(e.ctx, e.other.AccountID, c.ID)
	wantCode(t, err, apierr.NotFound)
	_, _, err = e.svc.Host().TLSCertificateKeyPair(e.ctx, e.user.AccountID, "cert_nope")
	wantCode(t, err, apierr.NotFound)

	page, err := e.svc.ListTLSCertificates(e.ctx, e.user, edgeplane.ListOptions{})
	if err != nil || len(page.Items) != 1 || page.URI != domainsAPIBase+"tls_certificates" || page.Items[0].Description != "renamed" {
		t.Errorf("list = %+v, %v", page, err)
	}

	// Another account sees nothing, with the message of a missing ID.
	_, err = e.svc.GetTLSCertificate(e.ctx, e.other, c.ID)
	missing := flipLast(c.ID)
	_, errMissing := e.svc.GetTLSCertificate(e.ctx, e.user, missing)
	wantHidden(t, err, errMissing, c.ID, missing)
	_, err = e.svc.UpdateTLSCertificate(e.ctx, e.other, c.ID, domains.UpdateCertificateParams{})
	wantCode(t, err, apierr.NotFound)
	wantCode(t, e.svc.DeleteTLSCertificate(e.ctx, e.other, c.ID), apierr.NotFound)
	if page, _ := e.svc.ListTLSCertificates(e.ctx, e.other, edgeplane.ListOptions{}); len(page.Items) != 0 {
		t.Errorf("other account lists %d certificates", len(page.Items))
	}

	if err := e.svc.DeleteTLSCertificate(e.ctx, e.user, c.ID); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.GetTLSCertificate(e.ctx, e.user, c.ID)
	wantCode(t, err, apierr.NotFound)
}

func TestTLSCertificateInvalid(t *testing.T) {
	e := newEnv(t)
	certPEM, keyPEM := genTLSCert(t, tlsSpec{names: []string{"a.example.com"}})
	_, otherKey := genTLSCert(t, tlsSpec{names: []string{"a.example.com"}})
	expired, expiredKey := genTLSCert(t, tlsSpec{names: []string{"a.example.com"}, notBefore: envStart.Add(-48 * time.Hour), lifetime: 24 * time.Hour})
	tests := []struct {
		name        string
		params      domains.CreateCertificateParams
		field, want string
	}{
		{"no certificate", domains.CreateCertificateParams{PrivateKeyPEM: keyPEM}, "certificate_pem", "is required"},
		{"no key", domains.CreateCertificateParams{CertificatePEM: certPEM}, "private_key_pem", "is required"},
		{"key does not match", domains.CreateCertificateParams{CertificatePEM: certPEM, PrivateKeyPEM: otherKey}, "private_key_pem", "does not match"},
		{"expired (by the injected clock)", domains.CreateCertificateParams{CertificatePEM: expired, PrivateKeyPEM: expiredKey}, "certificate_pem", "expired"},
		{"not PEM", domains.CreateCertificateParams{CertificatePEM: "x", PrivateKeyPEM: "y"}, "certificate_pem", "PEM"},
		{"description too long", domains.CreateCertificateParams{CertificatePEM: certPEM, PrivateKeyPEM: keyPEM, Description: strings.Repeat("é", 128)}, "description", "255 bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.svc.CreateTLSCertificate(e.ctx, e.user, tc.params)
			wantViolation(t, err, tc.field, tc.want)
		})
	}
	if page, _ := e.svc.ListTLSCertificates(e.ctx, e.user, edgeplane.ListOptions{}); len(page.Items) != 0 {
		t.Errorf("invalid uploads stored %d certificates", len(page.Items))
	}
	_, err := e.svc.CreateTLSCertificate(e.ctx, edgeplane.Principal{}, domains.CreateCertificateParams{CertificatePEM: certPEM, PrivateKeyPEM: keyPEM})
	wantCode(t, err, apierr.Unauthenticated)
}

func TestEndpointConfigurations(t *testing.T) {
	e := newEnv(t)
	c, err := e.svc.CreateEndpointConfiguration(e.ctx, e.user, domains.CreateEndpointConfigurationParams{Type: "https", Description: "d"})
	if err != nil {
		t.Fatal(err)
	}
	want := &domains.EndpointConfiguration{ID: c.ID, URI: domainsAPIBase + "endpoint_configurations/" + c.ID, CreatedAt: envStart, Description: "d", Type: "https"}
	if diff := cmp.Diff(want, c); diff != "" {
		t.Errorf("create (-want +got):\n%s", diff)
	}
	if got, err := e.svc.GetEndpointConfiguration(e.ctx, e.admin, c.ID); err != nil || !cmp.Equal(want, got) {
		t.Errorf("get = %+v, %v", got, err)
	}
	upd, err := e.svc.UpdateEndpointConfiguration(e.ctx, e.user, c.ID, domains.UpdateEndpointConfigurationParams{Metadata: ptr("m")})
	if err != nil || upd.Metadata != "m" || upd.Description != "d" || upd.Type != "https" {
		t.Errorf("update = %+v, %v", upd, err)
	}
	_, err = e.svc.UpdateEndpointConfiguration(e.ctx, e.user, c.ID, domains.UpdateEndpointConfigurationParams{Type: ptr("http")})
	wantViolation(t, err, "type", "cannot be changed")
	_, err = e.svc.CreateEndpointConfiguration(e.ctx, e.user, domains.CreateEndpointConfigurationParams{Type: "tcp"})
	wantViolation(t, err, "type", "one of: http, https")
	page, err := e.svc.ListEndpointConfigurations(e.ctx, e.user, edgeplane.ListOptions{})
	if err != nil || len(page.Items) != 1 || page.URI != domainsAPIBase+"endpoint_configurations" {
		t.Errorf("list = %+v, %v", page, err)
	}
	_, err = e.svc.GetEndpointConfiguration(e.ctx, e.other, c.ID)
	_, errMissing := e.svc.GetEndpointConfiguration(e.ctx, e.user, flipLast(c.ID))
	wantHidden(t, err, errMissing, c.ID, flipLast(c.ID))
	wantCode(t, e.svc.DeleteEndpointConfiguration(e.ctx, e.other, c.ID), apierr.NotFound)
	if page, _ := e.svc.ListEndpointConfigurations(e.ctx, e.other, edgeplane.ListOptions{}); len(page.Items) != 0 {
		t.Error("another account lists the endpoint configuration")
	}
	if err := e.svc.DeleteEndpointConfiguration(e.ctx, e.user, c.ID); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.GetEndpointConfiguration(e.ctx, e.user, c.ID)
	wantCode(t, err, apierr.NotFound)
}

// TestPrivateKeysSealedAtRest: the store never holds a private key in the
// clear; the Service with the sealing key reads it back; a Service with
// another key, or a sealed key moved to another record, gets an error,
// never the key.
func TestPrivateKeysSealedAtRest(t *testing.T) {
	st := memstore.New()
	key := bytes.Repeat([]byte{0x42}, edgeplane.SealingKeySize)
	e := newEnvWithStore(t, st)
	e.svc = mustService(edgeplane.New(st, edgeplane.Options{SealingKey: key, Clock: e.clock.Now}))
	certPEM, keyPEM := genTLSCert(t, tlsSpec{names: []string{"app.example.com"}})
	c, err := e.svc.CreateTLSCertificate(e.ctx, e.user, domains.CreateCertificateParams{CertificatePEM: certPEM, PrivateKeyPEM: keyPEM})
	if err != nil {
		t.Fatal(err)
	}
	other, err := e.svc.CreateTLSCertificate(e.ctx, e.user, domains.CreateCertificateParams{CertificatePEM: certPEM, PrivateKeyPEM: keyPEM})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := st.Get(e.ctx, edgeplane.KindTLSCertificate, e.user.AccountID, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(rec.Data, []byte("PRIVATE KEY")) || bytes.Contains(rec.Data, []byte(strings.Split(keyPEM, "\n")[1])) {
		t.Fatalf("the stored record holds the private key in the clear: %s", rec.Data)
	}
	changes, err := st.Changes(e.ctx, 0, 10000, store.WithData)
	if err != nil {
		t.Fatal(err)
	}
	for _, ch := range changes {
		if bytes.Contains(ch.Data, []byte("PRIVATE KEY")) {
			t.Fatal("the change feed holds the private key in the clear")
		}
	}

	// Another Service with the same key (a restart, a replica) reads it.
	same, err := edgeplane.New(st, edgeplane.Options{SealingKey: bytes.Clone(key)})
	if err != nil {
		t.Fatal(err)
	}
	if _, gotKey, err := same.Host().TLSCertificateKeyPair(e.ctx, e.user.AccountID, c.ID); err != nil || gotKey != keyPEM {
		t.Fatalf("same key: %v", err)
	}
	// Another key: an internal error, never the key.
	logs := new(bytes.Buffer)
	wrong, err := edgeplane.New(st, edgeplane.Options{SealingKey: bytes.Repeat([]byte{7}, edgeplane.SealingKeySize), Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	_, gotKey, err := wrong.Host().TLSCertificateKeyPair(e.ctx, e.user.AccountID, c.ID)
	if apierr.CodeOf(err) != apierr.Internal || gotKey != "" || strings.Contains(err.Error(), "another key") {
		t.Errorf("another key: %q, %v; want a generic internal error", gotKey, err)
	}
	if !strings.Contains(logs.String(), "sealed under another key") {
		t.Errorf("the cause is not logged: %s", logs)
	}
	// A sealed key copied into another certificate record does not open there.
	_, err = st.Update(e.ctx, edgeplane.KindTLSCertificate, e.user.AccountID, other.ID, func(r *store.Record) error {
		r.Data = bytes.Replace(rec.Data, []byte(c.ID), []byte(other.ID), 1)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, k, err := e.svc.Host().TLSCertificateKeyPair(e.ctx, e.user.AccountID, other.ID); err == nil || k != "" {
		t.Errorf("a sealed key moved to another record opened: %v", err)
	}

	defer func() {
		if recover() == nil {
			t.Error("New accepted a 16-byte sealing key")
		}
	}()
	mustService(edgeplane.New(st, edgeplane.Options{SealingKey: make([]byte, 16)}))
}
