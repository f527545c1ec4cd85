package domains_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"sync"
	"testing"
	"time"
)

// Fixed validity of generated certificates: tests run with a clock inside
// it.
var (
	certNotBefore = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	certNotAfter  = certNotBefore.Add(90 * 24 * time.Hour)
	testNow       = certNotBefore.Add(24 * time.Hour)
)

// rsaKey is generated once per test binary: RSA generation is slow.
var rsaKey = sync.OnceValue(func() *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return k
})

// certSpec describes a generated certificate.
type certSpec struct {
	names     []string // DNS SANs
	ips       []net.IP
	keyType   string // "ecdsa" (default), "rsa", "ed25519"
	notAfter  time.Time
	withCA    bool   // signed by a generated CA, which follows in the chain
	keyFormat string // "pkcs8" (default), "pkcs1" (rsa), "sec1" (ecdsa)
}

// genCert returns a certificate chain and key PEM per spec.
func genCert(t testing.TB, spec certSpec) (chainPEM, keyPEM string) {
	t.Helper()
	var key crypto.Signer
	switch spec.keyType {
	case "", "ecdsa":
		key, _ = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case "rsa":
		key = rsaKey()
	case "ed25519":
		_, key, _ = ed25519.GenerateKey(rand.Reader)
	default:
		t.Fatalf("key type %q", spec.keyType)
	}
	notAfter := spec.notAfter
	if notAfter.IsZero() {
		notAfter = certNotAfter
	}
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(0x1234),
		Subject:      pkix.Name{CommonName: first(spec.names)},
		DNSNames:     spec.names,
		IPAddresses:  spec.ips,
		NotBefore:    certNotBefore,
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	parent, signer := leaf, key
	var caDER []byte
	if spec.withCA {
		caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		ca := &x509.Certificate{
			SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "Test CA"},
			NotBefore: certNotBefore, NotAfter: certNotAfter.Add(time.Hour),
			IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
		}
		var err error
		if caDER, err = x509.CreateCertificate(rand.Reader, ca, ca, caKey.Public(), caKey); err != nil {
			t.Fatal(err)
		}
		parent, _ = x509.ParseCertificate(caDER)
		signer = caKey
	}
	der, err := x509.CreateCertificate(rand.Reader, leaf, parent, key.Public(), signer)
	if err != nil {
		t.Fatal(err)
	}
	chainPEM = string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	if caDER != nil {
		chainPEM += string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}))
	}
	return chainPEM, keyToPEM(t, key, spec.keyFormat)
}

func keyToPEM(t testing.TB, key crypto.Signer, format string) string {
	t.Helper()
	var block *pem.Block
	switch format {
	case "", "pkcs8":
		der, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		block = &pem.Block{Type: "PRIVATE KEY", Bytes: der}
	case "pkcs1":
		block = &pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key.(*rsa.PrivateKey))}
	case "sec1":
		der, err := x509.MarshalECPrivateKey(key.(*ecdsa.PrivateKey))
		if err != nil {
			t.Fatal(err)
		}
		block = &pem.Block{Type: "EC PRIVATE KEY", Bytes: der}
	}
	return string(pem.EncodeToMemory(block))
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}
