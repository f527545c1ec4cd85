package domains

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"strings"
	"time"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/internal/validate"
	"github.com/edgeplane/edgeplane/resource"
)

// Limits of certificate uploads.
const (
	// MaxCertificatePEMBytes bounds certificate_pem.
	MaxCertificatePEMBytes = 64 << 10
	// MaxPrivateKeyPEMBytes bounds private_key_pem.
	MaxPrivateKeyPEMBytes = 16 << 10
	// MaxChainLength is the most certificates certificate_pem may hold.
	MaxChainLength = 10
)

// Certificate is a TLS certificate of an account: a chain and its private
// key, uploaded by a user or issued by certificate management. The
// private key is never part of it: the Service keeps the key beside it.
type Certificate struct {
	// ID is the identifier, CertificatePrefix followed by an opaque
	// string.
	ID string `json:"id"`
	// URI locates the certificate; filled by the Service.
	URI string `json:"uri"`
	// CreatedAt is when the certificate was uploaded or issued.
	CreatedAt time.Time `json:"created_at"`
	// Description says what the certificate is for.
	Description string `json:"description"`
	// Metadata is arbitrary user-defined machine-readable data.
	Metadata string `json:"metadata"`
	// CertificatePEM is the chain, leaf first, re-encoded as PEM.
	CertificatePEM string `json:"certificate_pem"`
	// SubjectCommonName is the leaf's subject common name ("" when none).
	SubjectCommonName string `json:"subject_common_name"`
	// SubjectAlternativeNames are the leaf's subject alternative names.
	SubjectAlternativeNames SubjectAlternativeNames `json:"subject_alternative_names"`
	// IssuerCommonName is the leaf issuer's common name.
	IssuerCommonName string `json:"issuer_common_name"`
	// SerialNumber is the leaf's serial number in lowercase hex.
	SerialNumber string `json:"serial_number"`
	// NotBefore is when the leaf becomes valid.
	NotBefore time.Time `json:"not_before"`
	// NotAfter is when the leaf expires.
	NotAfter time.Time `json:"not_after"`
	// PrivateKeyType is [KeyTypeRSA], [KeyTypeECDSA] or [KeyTypeEd25519].
	PrivateKeyType string `json:"private_key_type" openapi:"oneof=rsa ecdsa ed25519"`
}

// SubjectAlternativeNames are a certificate's subject alternative names.
type SubjectAlternativeNames struct {
	// DNSNames are the DNS names, as written in the certificate; never
	// nil.
	DNSNames []string `json:"dns_names"`
	// IPs are the IP addresses; never nil.
	IPs []string `json:"ips"`
}

// CreateCertificateParams are the parameters of uploading a TLS
// certificate.
type CreateCertificateParams struct {
	// Description is optional, at most 255 bytes.
	Description string `json:"description" validate:"maxbytes=255"`
	// Metadata is optional, at most 4096 bytes.
	Metadata string `json:"metadata" validate:"maxbytes=4096"`
	// CertificatePEM is required: the chain as PEM CERTIFICATE blocks,
	// leaf first, each certificate signed by the next; at most 64 KiB and
	// [MaxChainLength] certificates.
	CertificatePEM string `json:"certificate_pem" validate:"required,maxbytes=65536"`
	// PrivateKeyPEM is required: the leaf's private key as one PEM block
	// (PKCS #8 "PRIVATE KEY", PKCS #1 "RSA PRIVATE KEY" or SEC 1 "EC
	// PRIVATE KEY", unencrypted); at most 16 KiB.
	PrivateKeyPEM string `json:"private_key_pem" validate:"required,maxbytes=16384"`
}

// Validate reports every broken rule of p at time now, parsing the chain
// and key as [CreateCertificateParams.Certificate] does. It returns nil or
// an InvalidArgument [*apierr.Error].
func (p CreateCertificateParams) Validate(now time.Time) error {
	_, err := p.Certificate(now)
	return err
}

// Certificate parses p at time now and returns the certificate it
// describes, without the fields the Service assigns (ID, URI, CreatedAt).
// It fails with every broken rule: the byte limits; a chain that is not
// only PEM CERTIFICATE blocks (and whitespace), does not parse, is too
// long, or is out of order; a leaf that expired before now; a key that
// does not parse, is of an unsupported type, or does not match the leaf.
func (p CreateCertificateParams) Certificate(now time.Time) (Certificate, error) {
	var vs apierr.Violations
	validate.Into(&vs, "", p)
	if len(vs) > 0 {
		return Certificate{}, vs.Err()
	}
	chain, reason := parseChain(p.CertificatePEM)
	if reason != "" {
		vs.Add("certificate_pem", "%s", reason)
	} else if leaf := chain[0]; now.After(leaf.NotAfter) {
		vs.Add("certificate_pem", "the certificate expired at %s", leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	key, reason := parseKey(p.PrivateKeyPEM)
	if reason != "" {
		vs.Add("private_key_pem", "%s", reason)
	}
	if len(vs) > 0 {
		return Certificate{}, vs.Err()
	}
	leaf := chain[0]
	if pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool }); !ok || !pub.Equal(leaf.PublicKey) {
		return Certificate{}, apierr.Invalidf("private_key_pem", "does not match the public key of the certificate (the first block of certificate_pem)")
	}
	var buf bytes.Buffer
	for _, c := range chain {
		pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw}) // writes to a bytes.Buffer never fail
	}
	sans := SubjectAlternativeNames{DNSNames: append([]string{}, leaf.DNSNames...), IPs: []string{}}
	for _, ip := range leaf.IPAddresses {
		sans.IPs = append(sans.IPs, ip.String())
	}
	return Certificate{
		Description:             p.Description,
		Metadata:                p.Metadata,
		CertificatePEM:          buf.String(),
		SubjectCommonName:       leaf.Subject.CommonName,
		SubjectAlternativeNames: sans,
		IssuerCommonName:        leaf.Issuer.CommonName,
		SerialNumber:            hex.EncodeToString(leaf.SerialNumber.Bytes()),
		NotBefore:               resource.Timestamp(leaf.NotBefore),
		NotAfter:                resource.Timestamp(leaf.NotAfter),
		PrivateKeyType:          keyType(key),
	}, nil
}

// parseChain parses PEM CERTIFICATE blocks, leaf first. Text outside PEM
// blocks is ignored (tools such as openssl write "subject=" lines there),
// but a block that does not decode is an error, so a truncated chain is
// never taken for a shorter one.
func parseChain(s string) ([]*x509.Certificate, string) {
	rest := []byte(s)
	var chain []*x509.Certificate
	for {
		block, r := pem.Decode(rest)
		if block == nil {
			break
		}
		rest = r
		n := len(chain) + 1
		if block.Type != "CERTIFICATE" {
			return nil, fmt.Sprintf("block %d is a PEM %q block; only CERTIFICATE blocks are allowed (the private key goes in private_key_pem)", n, block.Type)
		}
		if n > MaxChainLength {
			return nil, fmt.Sprintf("must hold at most %d certificates", MaxChainLength)
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Sprintf("block %d is not a valid X.509 certificate", n)
		}
		chain = append(chain, c)
	}
	if bytes.Contains(rest, []byte("-----BEGIN")) {
		return nil, fmt.Sprintf("block %d is not valid PEM", len(chain)+1)
	}
	if len(chain) == 0 {
		return nil, "must contain at least one PEM CERTIFICATE block, the leaf certificate first"
	}
	for i := 0; i+1 < len(chain); i++ {
		if err := chain[i].CheckSignatureFrom(chain[i+1]); err != nil {
			return nil, fmt.Sprintf("certificate %d is not signed by certificate %d; list the leaf first, then each issuer in order", i+1, i+2)
		}
	}
	return chain, ""
}

// parseKey parses one unencrypted PEM private key of a supported type. An
// "EC PARAMETERS" block (as openssl ecparam writes before the key) and
// text outside blocks are ignored.
func parseKey(s string) (crypto.Signer, string) {
	var keyBlock *pem.Block
	rest := []byte(s)
	for {
		block, r := pem.Decode(rest)
		if block == nil {
			break
		}
		rest = r
		if block.Type == "EC PARAMETERS" {
			continue
		}
		if keyBlock != nil {
			return nil, "must contain exactly one PEM private key block"
		}
		keyBlock = block
	}
	switch {
	case bytes.Contains(rest, []byte("-----BEGIN")):
		return nil, "is not valid PEM"
	case keyBlock == nil:
		return nil, "must contain one PEM private key block"
	case len(keyBlock.Headers) > 0 || strings.Contains(keyBlock.Type, "ENCRYPTED"):
		return nil, "must not be encrypted"
	}
	var (
		key any
		err error
	)
	switch keyBlock.Type {
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(keyBlock.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(keyBlock.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(keyBlock.Bytes)
	default:
		return nil, fmt.Sprintf("is a PEM %q block; want PRIVATE KEY, RSA PRIVATE KEY or EC PRIVATE KEY", keyBlock.Type)
	}
	if err != nil {
		return nil, fmt.Sprintf("is not a valid %s", strings.ToLower(keyBlock.Type))
	}
	switch k := key.(type) {
	case *rsa.PrivateKey:
		return k, ""
	case *ecdsa.PrivateKey:
		return k, ""
	case ed25519.PrivateKey:
		return k, ""
	}
	return nil, "must be an RSA, ECDSA or Ed25519 key"
}

func keyType(k crypto.Signer) string {
	switch k.(type) {
	case *rsa.PrivateKey:
		return KeyTypeRSA
	case *ecdsa.PrivateKey:
		return KeyTypeECDSA
	}
	return KeyTypeEd25519
}

// UpdateCertificateParams are the parameters of updating a TLS
// certificate; nil fields are left unchanged. The chain and key cannot be
// changed: upload a new certificate instead.
type UpdateCertificateParams struct {
	// Description replaces the description; at most 255 bytes.
	Description *string `json:"description" validate:"omitnil,maxbytes=255"`
	// Metadata replaces the metadata; at most 4096 bytes.
	Metadata *string `json:"metadata" validate:"omitnil,maxbytes=4096"`
}

// Validate reports every broken rule of p. It returns nil or an
// InvalidArgument [*apierr.Error].
func (p UpdateCertificateParams) Validate() error { return validate.Struct(p) }

// Apply sets the fields of c that p carries.
func (p UpdateCertificateParams) Apply(c *Certificate) {
	setString(&c.Description, p.Description)
	setString(&c.Metadata, p.Metadata)
}

// HostCertificate is the TLS certificate an edge server presents for a
// host: that of the reserved domain that serves the host.
type HostCertificate struct {
	// DomainID is the reserved domain that serves the host: the domain
	// named host, else the wildcard domain that covers it.
	DomainID string
	// CertificateID is the domain's TLS certificate.
	CertificateID string
	// CertificatePEM is the chain, leaf first; KeyPEM its private key.
	CertificatePEM, KeyPEM string
}
