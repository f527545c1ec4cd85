package storedforms

import (
	"slices"
	"time"

	"github.com/edgeplane/edgeplane/internal/records"

	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/store"
)

// CertificateForm returns the stored form of TLS certificates, of kind k.
func CertificateForm(k *records.Kind) records.Form[Certificate] {
	return records.PlainForm(k,
		func(c *Certificate) *certificateDoc {
			return &certificateDoc{Common: records.Common{CreatedAt: c.CreatedAt, Description: c.Description, Metadata: c.Metadata}, CertificatePEM: c.CertificatePEM,
				SubjectCommonName: c.SubjectCommonName, DNSNames: c.SubjectAlternativeNames.DNSNames, IPs: c.SubjectAlternativeNames.IPs,
				IssuerCommonName: c.IssuerCommonName, SerialNumber: c.SerialNumber, NotBefore: c.NotBefore, NotAfter: c.NotAfter,
				PrivateKeyType: c.PrivateKeyType, SealedPrivateKey: c.SealedPrivateKey, ManagedFor: c.ManagedFor}
		},
		func(d *certificateDoc, rec store.Record) *Certificate {
			return &Certificate{Certificate: domains.Certificate{ID: rec.ID, CreatedAt: d.CreatedAt, Description: d.Description,
				Metadata: d.Metadata, CertificatePEM: d.CertificatePEM, SubjectCommonName: d.SubjectCommonName,
				SubjectAlternativeNames: domains.SubjectAlternativeNames{DNSNames: slices.Clone(d.DNSNames), IPs: slices.Clone(d.IPs)},
				IssuerCommonName:        d.IssuerCommonName, SerialNumber: d.SerialNumber, NotBefore: d.NotBefore, NotAfter: d.NotAfter,
				PrivateKeyType: d.PrivateKeyType}, SealedPrivateKey: slices.Clone(d.SealedPrivateKey), ManagedFor: d.ManagedFor}
		})
}

// Certificate is a TLS certificate as the Service holds it: the API
// model and, beside it, the private key sealed under the Service's
// sealing key ([github.com/edgeplane/edgeplane.Options.SealingKey]), which no API response shows.
type Certificate struct {
	domains.Certificate
	SealedPrivateKey []byte
	// ManagedFor is the reserved domain whose certificate manager issued
	// it; deleting the domain deletes it while it is the domain's
	// certificate.
	ManagedFor string
}

// The stored form of a TLS certificate (see package internal/records).
type (
	certificateDoc struct {
		records.Common
		CertificatePEM    string    `json:"certificate_pem"`
		SubjectCommonName string    `json:"subject_common_name,omitempty"`
		DNSNames          []string  `json:"dns_names,omitempty"`
		IPs               []string  `json:"ips,omitempty"`
		IssuerCommonName  string    `json:"issuer_common_name,omitempty"`
		SerialNumber      string    `json:"serial_number"`
		NotBefore         time.Time `json:"not_before"`
		NotAfter          time.Time `json:"not_after"`
		PrivateKeyType    string    `json:"private_key_type"`
		SealedPrivateKey  []byte    `json:"sealed_private_key"`
		ManagedFor        string    `json:"managed_for,omitempty"`
	}
)
