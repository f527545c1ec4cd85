package hop_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/x509"
	"math/big"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/hop"
)

func TestIdentity(t *testing.T) {
	one, err := hop.Identity(storeKey)
	if err != nil {
		t.Fatal(err)
	}
	again, err := hop.Identity(storeKey)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(one.Certificate[0], again.Certificate[0]) {
		t.Error("two derivations from one key differ")
	}
	other, err := hop.Identity(otherKey)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(one.Certificate[0], other.Certificate[0]) {
		t.Error("two keys derive the same certificate")
	}
	leaf, err := x509.ParseCertificate(one.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if pk, ok := leaf.PublicKey.(ed25519.PublicKey); !ok || !pk.Equal(storeKey.Public()) {
		t.Errorf("the certificate's key is %v, want the store key's public half", leaf.PublicKey)
	}
	if leaf.Subject.CommonName != hop.CommonName || leaf.SerialNumber.Cmp(big.NewInt(1)) != 0 ||
		!leaf.NotBefore.Equal(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)) || leaf.NotAfter.Year() != 9999 {
		t.Errorf("subject %q, serial %v, valid %v to %v", leaf.Subject, leaf.SerialNumber, leaf.NotBefore, leaf.NotAfter)
	}
	if err := leaf.CheckSignature(leaf.SignatureAlgorithm, leaf.RawTBSCertificate, leaf.Signature); err != nil {
		t.Errorf("not self-signed: %v", err)
	}
	if !bytes.Equal(one.Leaf.Raw, leaf.Raw) {
		t.Error("Leaf is not the certificate")
	}

	for _, key := range []ed25519.PrivateKey{nil, storeKey[:10], append(append(ed25519.PrivateKey(nil), storeKey.Seed()...), make([]byte, 32)...)} {
		if _, err := hop.Identity(key); err == nil {
			t.Errorf("Identity(%d bytes, not a key) succeeded", len(key))
		}
	}
}
