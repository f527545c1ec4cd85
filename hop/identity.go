package hop

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"time"
)

// CommonName is the subject common name of the node certificate
// ([Identity]).
const CommonName = "edgeplane node"

// errNotNode fails a handshake whose peer did not present the node
// certificate of this store's key. The peer sees a TLS alert, not this
// text.
var errNotNode = errors.New("hop: the peer's certificate is not this store's node certificate")

// Identity returns the node certificate of key: a self-signed Ed25519
// certificate whose fields are all fixed (serial 1, CommonName, valid
// from 2000-01-01 to 9999-12-31), so that every node holding the same key
// derives the same certificate, byte for byte (Ed25519 signatures are
// deterministic). Both ends of the hop present it and accept only a peer
// that presents a certificate of the same public key.
func Identity(key ed25519.PrivateKey) (tls.Certificate, error) {
	if err := checkKey(key); err != nil {
		return tls.Certificate{}, err
	}
	pub := key.Public().(ed25519.PublicKey)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: CommonName},
		NotBefore:             time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC),
		NotAfter:              time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
	}
	// Ed25519 signing reads no randomness; rand.Reader is only there
	// because CreateCertificate asks for a source.
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("hop: creating the node certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("hop: parsing the node certificate: %w", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}

// checkKey reports whether key is a well-formed Ed25519 private key: of
// the right size, its public half the one its seed derives.
func checkKey(key ed25519.PrivateKey) error {
	if len(key) != ed25519.PrivateKeySize {
		return fmt.Errorf("hop: Key must be an Ed25519 private key of %d bytes, got %d", ed25519.PrivateKeySize, len(key))
	}
	if !ed25519.NewKeyFromSeed(key.Seed()).Equal(key) {
		return errors.New("hop: Key must be an Ed25519 private key whose public half matches its seed")
	}
	return nil
}

// tlsConfigs returns the TLS configurations of both roles: TLS 1.3 only,
// the node certificate presented, and the peer accepted only when its
// leaf certificate's key is pub. The chain is not verified the usual way
// (there is no CA: every node has the same self-signed certificate);
// VerifyConnection is the check, and TLS 1.3's CertificateVerify proves
// the peer holds the private key of the certificate it presents.
func tlsConfigs(cert tls.Certificate, pub ed25519.PublicKey) (client, server *tls.Config) {
	verify := func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errNotNode
		}
		pk, ok := cs.PeerCertificates[0].PublicKey.(ed25519.PublicKey)
		if !ok || len(pk) != ed25519.PublicKeySize || subtle.ConstantTimeCompare(pk, pub) != 1 {
			return errNotNode
		}
		return nil
	}
	client = &tls.Config{
		MinVersion:   tls.VersionTLS13,
		MaxVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{cert},
		ServerName:   "edgeplane-node.invalid",
		// Only together with VerifyConnection: the peer must present
		// the node certificate of this store's key.
		InsecureSkipVerify: true,
		VerifyConnection:   verify,
	}
	server = &tls.Config{
		MinVersion:       tls.VersionTLS13,
		MaxVersion:       tls.VersionTLS13,
		Certificates:     []tls.Certificate{cert},
		ClientAuth:       tls.RequireAnyClientCert,
		VerifyConnection: verify,
	}
	return client, server
}
