package console_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/console"
	"github.com/edgeplane/edgeplane/domains"
)

// selfSigned returns a certificate for names and its key, in PEM.
func selfSigned(t testing.TB, names ...string) (certPEM, keyPEM string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(42), Subject: pkix.Name{CommonName: names[0]}, DNSNames: names,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(90 * 24 * time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	must(t, err)
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	must(t, err)
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}))
}

// TestCertificates: a certificate is uploaded from its form (a key that
// does not match refused at the field, the key never shown back), shown
// without its key, edited, attached to a reserved domain (then it cannot
// be deleted) and deleted; another account's certificate is not found.
func TestCertificates(t *testing.T) {
	s := newServer(t, console.Options{})
	ctx := context.Background()
	b := s.browser(t)
	token := b.signIn(s.a.key)
	certPEM, keyPEM := selfSigned(t, "app.example.com")
	_, otherKey := selfSigned(t, "app.example.com")

	bad := b.post("/console/tls_certificates", url.Values{"csrf": {token}, "certificate_pem": {certPEM}, "private_key_pem": {otherKey}})
	if bad.status != http.StatusBadRequest || !strings.Contains(bad.body, `id="private_key_pem-error"><p>does not match the public key of the certificate`) || strings.Contains(bad.body, "PRIVATE KEY") {
		t.Fatalf("a key of another certificate: %d, want 400 with the error at a field and the key not shown back:\n%s", bad.status, bad.body)
	}
	if !strings.Contains(bad.body, "BEGIN CERTIFICATE") {
		t.Error("the refused form lost the certificate typed")
	}
	got := b.post("/console/tls_certificates", url.Values{"csrf": {token}, "certificate_pem": {certPEM}, "private_key_pem": {keyPEM}, "description": {"mine"}})
	if got.status != http.StatusSeeOther || !strings.HasPrefix(got.location, "/console/tls_certificates/") {
		t.Fatalf("upload: %d to %q: %s", got.status, got.location, got.body)
	}
	certPage := got.location
	id := strings.TrimPrefix(certPage, "/console/tls_certificates/")
	shown := b.get(certPage)
	if !strings.Contains(shown.body, "app.example.com") || !strings.Contains(shown.body, "ecdsa") || strings.Contains(shown.body, "PRIVATE KEY") {
		t.Errorf("the certificate's page:\n%s", shown.body)
	}
	if got := b.post(certPage+"/edit", url.Values{"csrf": {token}, "description": {"renamed"}, "metadata": {""}}); got.status != http.StatusSeeOther {
		t.Fatalf("edit: %d", got.status)
	}
	if c, err := s.svc.GetTLSCertificate(ctx, s.a.p, id); err != nil || c.Description != "renamed" {
		t.Fatalf("after the edit: %+v %v", c, err)
	}
	if list := b.get("/console/tls_certificates"); !strings.Contains(list.body, id) {
		t.Error("the list lacks the certificate")
	}

	dom, err := s.svc.CreateReservedDomain(ctx, s.a.p, domains.CreateParams{Domain: "app.example.com", CertificateID: id})
	must(t, err)
	if got := b.post(certPage+"/delete", url.Values{"csrf": {token}}); got.status != http.StatusConflict {
		t.Errorf("deleting a certificate in use: %d, want 409", got.status)
	}
	must(t, s.svc.DeleteReservedDomain(ctx, s.a.p, dom.ID))

	theirCert, theirKey := selfSigned(t, "b.example.com")
	theirs, err := s.svc.CreateTLSCertificate(ctx, s.b.p, domains.CreateCertificateParams{CertificatePEM: theirCert, PrivateKeyPEM: theirKey, Description: "secret-b"})
	must(t, err)
	for _, p := range []string{"", "/edit", "/delete"} {
		var res page
		if p == "" {
			res = b.get("/console/tls_certificates/" + theirs.ID)
		} else {
			res = b.post("/console/tls_certificates/"+theirs.ID+p, url.Values{"csrf": {token}, "description": {"mine"}})
		}
		if res.status != http.StatusNotFound || strings.Contains(res.body, "secret-b") {
			t.Errorf("another account's certificate%s: %d", p, res.status)
		}
	}
	if c, err := s.svc.GetTLSCertificate(ctx, s.b.p, theirs.ID); err != nil || c.Description != "secret-b" {
		t.Errorf("another account's certificate after the tries: %+v %v", c, err)
	}
	if got := b.post(certPage+"/delete", url.Values{"csrf": {"wrong"}}); got.status != http.StatusForbidden {
		t.Errorf("without the CSRF token: %d, want 403", got.status)
	}
	if got := b.post(certPage+"/delete", url.Values{"csrf": {token}}); got.status != http.StatusSeeOther {
		t.Fatalf("delete: %d", got.status)
	}
	if _, err := s.svc.GetTLSCertificate(ctx, s.a.p, id); err == nil {
		t.Error("the certificate is still there")
	}
}

// TestCertificateFormBound: the upload form's body bound agrees with the
// API's: a form with every field at the API's largest, each byte one
// that URL-encodes to three, reaches the Service (which refuses it for
// what it holds, not for its size), and one well past them gets 413.
func TestCertificateFormBound(t *testing.T) {
	s := newServer(t, console.Options{})
	b := s.browser(t)
	token := b.signIn(s.a.key)
	form := func(extra int) url.Values {
		return url.Values{"csrf": {token},
			"certificate_pem": {strings.Repeat("\n", domains.MaxCertificatePEMBytes+extra)},
			"private_key_pem": {strings.Repeat("\n", domains.MaxPrivateKeyPEMBytes)},
			"description":     {strings.Repeat("\n", domains.MaxDescriptionBytes)},
			"metadata":        {strings.Repeat("\n", domains.MaxMetadataBytes)}}
	}
	if got := b.post("/console/tls_certificates", form(0)); got.status == http.StatusRequestEntityTooLarge || got.status != http.StatusBadRequest {
		t.Errorf("a form at the API's largest: %d, want the Service's 400 (not 413)", got.status)
	}
	if got := b.post("/console/tls_certificates", form(4<<10)); got.status != http.StatusRequestEntityTooLarge {
		t.Errorf("a form past the API's largest: %d, want 413", got.status)
	}
	if page, err := s.svc.ListTLSCertificates(context.Background(), s.a.p, edgeplaneListAll); err != nil || len(page.Items) != 0 {
		t.Errorf("certificates after the refusals: %+v %v", page, err)
	}
}
