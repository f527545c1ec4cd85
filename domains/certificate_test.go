package domains_test

import (
	"encoding/pem"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/domains"
	"github.com/google/go-cmp/cmp"
)

func TestCertificateParse(t *testing.T) {
	chain, key := genCert(t, certSpec{names: []string{"app.example.com", "*.example.com"}, ips: []net.IP{net.ParseIP("192.0.2.1")}, withCA: true})
	c, err := domains.CreateCertificateParams{Description: "d", Metadata: "m", CertificatePEM: "subject=CN = app\n" + chain, PrivateKeyPEM: key}.Certificate(testNow)
	if err != nil {
		t.Fatal(err)
	}
	want := domains.Certificate{
		Description: "d", Metadata: "m", CertificatePEM: chain,
		SubjectCommonName:       "app.example.com",
		SubjectAlternativeNames: domains.SubjectAlternativeNames{DNSNames: []string{"app.example.com", "*.example.com"}, IPs: []string{"192.0.2.1"}},
		IssuerCommonName:        "Test CA", SerialNumber: "1234",
		NotBefore: certNotBefore, NotAfter: certNotAfter, PrivateKeyType: "ecdsa",
	}
	if diff := cmp.Diff(want, c); diff != "" {
		t.Errorf("certificate (-want +got):\n%s", diff)
	}
	if c.NotAfter.Location() != time.UTC {
		t.Errorf("not_after not in UTC: %v", c.NotAfter)
	}

	for _, tc := range []struct {
		name string
		spec certSpec
		want string
	}{
		{"rsa pkcs1", certSpec{names: []string{"a.example.com"}, keyType: "rsa", keyFormat: "pkcs1"}, "rsa"},
		{"rsa pkcs8", certSpec{names: []string{"a.example.com"}, keyType: "rsa"}, "rsa"},
		{"ecdsa sec1", certSpec{names: []string{"a.example.com"}, keyFormat: "sec1"}, "ecdsa"},
		{"ed25519", certSpec{names: []string{"a.example.com"}, keyType: "ed25519"}, "ed25519"},
		{"no SANs", certSpec{}, "ecdsa"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			chain, key := genCert(t, tc.spec)
			c, err := domains.CreateCertificateParams{CertificatePEM: chain, PrivateKeyPEM: key}.Certificate(testNow)
			if err != nil {
				t.Fatal(err)
			}
			if c.PrivateKeyType != tc.want || c.SubjectAlternativeNames.DNSNames == nil || c.SubjectAlternativeNames.IPs == nil {
				t.Errorf("certificate %+v: want key type %s and non-nil name lists", c, tc.want)
			}
		})
	}

	// An EC PARAMETERS block before the key, as openssl ecparam writes it.
	ecChain, ecKey := genCert(t, certSpec{names: []string{"a.example.com"}, keyFormat: "sec1"})
	params := string(pem.EncodeToMemory(&pem.Block{Type: "EC PARAMETERS", Bytes: []byte{6, 8, 42, 134, 72, 206, 61, 3, 1, 7}}))
	if _, err := (domains.CreateCertificateParams{CertificatePEM: ecChain, PrivateKeyPEM: params + ecKey}).Certificate(testNow); err != nil {
		t.Errorf("EC PARAMETERS block refused: %v", err)
	}
}

func TestCertificateParseInvalid(t *testing.T) {
	chain, key := genCert(t, certSpec{names: []string{"app.example.com"}, withCA: true})
	otherChain, otherKey := genCert(t, certSpec{names: []string{"app.example.com"}})
	expired, expiredKey := genCert(t, certSpec{names: []string{"app.example.com"}, notAfter: testNow.Add(-time.Second)})
	blocks := strings.SplitAfter(chain, "-----END CERTIFICATE-----\n")
	leafPEM, caPEM := blocks[0], blocks[1]
	encrypted := strings.Replace(key, "-----BEGIN PRIVATE KEY-----\n", "-----BEGIN PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,00000000000000000000000000000000\n\n", 1)
	garbage := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("not DER")}))
	garbageKey := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte("not DER")}))
	long := strings.Repeat(otherChain, domains.MaxChainLength+1)

	tests := []struct {
		name        string
		chain, key  string
		field, want string
	}{
		{"missing both", "", "", "certificate_pem", "is required"},
		{"missing key", chain, "", "private_key_pem", "is required"},
		{"chain too large", strings.Repeat("x", domains.MaxCertificatePEMBytes+1), key, "certificate_pem", "at most 65536 bytes"},
		{"key too large", chain, strings.Repeat("x", domains.MaxPrivateKeyPEMBytes+1), "private_key_pem", "at most 16384 bytes"},
		{"key does not match the leaf", chain, otherKey, "private_key_pem", "does not match"},
		{"key of the CA, not the leaf", caPEM, key, "private_key_pem", "does not match"},
		{"chain out of order", caPEM + leafPEM, key, "certificate_pem", "certificate 1 is not signed by certificate 2"},
		{"unrelated second certificate", leafPEM + otherChain, key, "certificate_pem", "not signed"},
		{"expired", expired, expiredKey, "certificate_pem", "expired at"},
		{"no PEM at all", "hello", key, "certificate_pem", "at least one PEM CERTIFICATE block"},
		{"key in certificate_pem", chain + key, key, "certificate_pem", `"PRIVATE KEY" block`},
		{"not DER", garbage, key, "certificate_pem", "block 1 is not a valid X.509 certificate"},
		{"truncated block", chain + "-----BEGIN CERTIFICATE-----\nMIIB", key, "certificate_pem", "block 3 is not valid PEM"},
		{"chain too long", long, otherKey, "certificate_pem", "at most 10 certificates"},
		{"no key block", chain, "hello", "private_key_pem", "must contain one PEM private key block"},
		{"two keys", chain, key + otherKey, "private_key_pem", "exactly one"},
		{"encrypted key", chain, encrypted, "private_key_pem", "must not be encrypted"},
		{"certificate as key", chain, leafPEM, "private_key_pem", `"CERTIFICATE" block`},
		{"key not DER", chain, garbageKey, "private_key_pem", "is not a valid private key"},
		{"truncated key", chain, "-----BEGIN PRIVATE KEY-----\nMIIB", "private_key_pem", "is not valid PEM"},
		{"metadata too long", "", "", "metadata", "4096 bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := domains.CreateCertificateParams{CertificatePEM: tc.chain, PrivateKeyPEM: tc.key}
			if tc.field == "metadata" {
				p = domains.CreateCertificateParams{CertificatePEM: chain, PrivateKeyPEM: key, Metadata: strings.Repeat("m", 4097)}
			}
			_, err := p.Certificate(testNow)
			if err == nil || p.Validate(testNow) == nil {
				t.Fatal("accepted")
			}
			for _, v := range apierr.ViolationsOf(err) {
				if v.Field == tc.field && strings.Contains(v.Reason, tc.want) {
					return
				}
			}
			t.Fatalf("error %v: want a violation of %s containing %q", err, tc.field, tc.want)
		})
	}
}

func TestUpdateCertificateParams(t *testing.T) {
	wantViolations(t, domains.UpdateCertificateParams{Description: ptr(strings.Repeat("x", 256))}.Validate(), "description")
	c := domains.Certificate{Description: "a", Metadata: "b"}
	domains.UpdateCertificateParams{Metadata: ptr("")}.Apply(&c)
	if c.Description != "a" || c.Metadata != "" {
		t.Errorf("apply: %+v", c)
	}
}
