package storedforms

import (
	"time"

	"github.com/edgeplane/edgeplane/internal/records"

	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/store"
)

// ReservedDomain returns the stored form of reserved domains, of kind k.
func ReservedDomain(k *records.Kind) records.Form[domains.ReservedDomain] {
	return records.PlainForm(k, saveReservedDomain, loadReservedDomain)
}

// The stored form of a reserved domain (see package internal/records): references are
// bare IDs; error_redirect_url, always null, is not stored.
type reservedDomainDoc struct {
	records.Common
	Domain                       string         `json:"domain"`
	Region                       string         `json:"region,omitempty"`
	CNAMETarget                  *string        `json:"cname_target,omitempty"`
	CertificateID                string         `json:"certificate_id,omitempty"`
	CertPolicy                   *certPolicyDoc `json:"cert_policy,omitempty"`
	CertStatus                   *certStatusDoc `json:"cert_status,omitempty"`
	ACMEChallengeCNAMETarget     *string        `json:"acme_challenge_cname_target,omitempty"`
	HTTPEndpointConfigurationID  string         `json:"http_endpoint_configuration_id,omitempty"`
	HTTPSEndpointConfigurationID string         `json:"https_endpoint_configuration_id,omitempty"`
}

type certPolicyDoc struct {
	Authority      string `json:"authority"`
	PrivateKeyType string `json:"private_key_type"`
}

type certStatusDoc struct {
	RenewsAt *time.Time  `json:"renews_at,omitempty"`
	Job      *certJobDoc `json:"job,omitempty"`
}

type certJobDoc struct {
	ErrorCode *string    `json:"error_code,omitempty"`
	Msg       string     `json:"msg"`
	StartedAt time.Time  `json:"started_at"`
	RetriesAt *time.Time `json:"retries_at,omitempty"`
}

func saveReservedDomain(d *domains.ReservedDomain) *reservedDomainDoc {
	doc := &reservedDomainDoc{Common: records.Common{CreatedAt: d.CreatedAt, Description: d.Description, Metadata: d.Metadata}, Domain: d.Domain,
		Region: d.Region, CNAMETarget: d.CNAMETarget, CertificateID: records.RefID(d.Certificate),
		ACMEChallengeCNAMETarget: d.ACMEChallengeCNAMETarget, HTTPEndpointConfigurationID: records.RefID(d.HTTPEndpointConfiguration),
		HTTPSEndpointConfigurationID: records.RefID(d.HTTPSEndpointConfiguration)}
	if pol := d.CertificateManagementPolicy; pol != nil {
		doc.CertPolicy = &certPolicyDoc{Authority: pol.Authority, PrivateKeyType: pol.PrivateKeyType}
	}
	if st := d.CertificateManagementStatus; st != nil {
		doc.CertStatus = &certStatusDoc{RenewsAt: st.RenewsAt}
		if j := st.ProvisioningJob; j != nil {
			doc.CertStatus.Job = &certJobDoc{ErrorCode: j.ErrorCode, Msg: j.Msg, StartedAt: j.StartedAt, RetriesAt: j.RetriesAt}
		}
	}
	return doc
}

func loadReservedDomain(doc *reservedDomainDoc, rec store.Record) *domains.ReservedDomain {
	d := &domains.ReservedDomain{ID: rec.ID, CreatedAt: doc.CreatedAt, Description: doc.Description, Metadata: doc.Metadata,
		Domain: doc.Domain, Region: doc.Region, CNAMETarget: records.ClonePtr(doc.CNAMETarget), Certificate: records.IDRef(doc.CertificateID),
		ACMEChallengeCNAMETarget: records.ClonePtr(doc.ACMEChallengeCNAMETarget), HTTPEndpointConfiguration: records.IDRef(doc.HTTPEndpointConfigurationID),
		HTTPSEndpointConfiguration: records.IDRef(doc.HTTPSEndpointConfigurationID)}
	if pol := doc.CertPolicy; pol != nil {
		d.CertificateManagementPolicy = &domains.CertPolicy{Authority: pol.Authority, PrivateKeyType: pol.PrivateKeyType}
	}
	if st := doc.CertStatus; st != nil {
		d.CertificateManagementStatus = &domains.CertStatus{RenewsAt: records.ClonePtr(st.RenewsAt)}
		if j := st.Job; j != nil {
			d.CertificateManagementStatus.ProvisioningJob = &domains.CertJob{ErrorCode: records.ClonePtr(j.ErrorCode), Msg: j.Msg, StartedAt: j.StartedAt,
				RetriesAt: records.ClonePtr(j.RetriesAt)}
		}
	}
	return d
}
