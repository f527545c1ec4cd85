package domains

import (
	"fmt"
	"time"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/internal/ids"
	"github.com/edgeplane/edgeplane/internal/validate"
	"github.com/edgeplane/edgeplane/resource"
)

// Identifier prefixes.
const (
	// ReservedDomainPrefix starts every reserved domain identifier.
	ReservedDomainPrefix = "rd_"
	// CertificatePrefix starts every TLS certificate identifier.
	CertificatePrefix = "cert_"
	// EndpointConfigurationPrefix starts every endpoint configuration
	// identifier.
	EndpointConfigurationPrefix = "ec_"
)

// Regions are the allowed values of a reserved domain's deprecated region.
var Regions = []string{"au", "eu", "ap", "us", "jp", "in", "sa"}

// Certificate management values.
const (
	// AuthorityLetsEncrypt is the only supported certificate authority.
	AuthorityLetsEncrypt = "letsencrypt"
	// KeyTypeRSA is an RSA private key, the default key type.
	KeyTypeRSA = "rsa"
	// KeyTypeECDSA is an ECDSA private key.
	KeyTypeECDSA = "ecdsa"
	// KeyTypeEd25519 is an Ed25519 private key; uploaded certificates may
	// have one, managed ones never do.
	KeyTypeEd25519 = "ed25519"
)

// Provisioning error codes of a [CertJob].
const (
	// ErrorCodeInternal is a temporary failure; the job is retried at its
	// RetriesAt.
	ErrorCodeInternal = "INTERNAL_ERROR"
	// ErrorCodeDNS is a permanent failure that the user must correct in
	// DNS; the job is retried at its RetriesAt when the certificate
	// manager set one (a slow schedule, so that a fix is picked up), and
	// at once when the user sets the policy again.
	ErrorCodeDNS = "DNS_ERROR"
)

// Limits of reserved domain fields.
const (
	// MaxDescriptionBytes bounds every description of this package.
	MaxDescriptionBytes = 255
	// MaxMetadataBytes bounds every metadata of this package.
	MaxMetadataBytes = 4096
	// MaxJobMsgBytes bounds a provisioning failure message.
	MaxJobMsgBytes = 1024
)

// ReservedDomain is a domain name an account has reserved for its
// endpoints.
type ReservedDomain struct {
	// ID is the identifier, ReservedDomainPrefix followed by an opaque
	// string.
	ID string `json:"id"`
	// URI locates the reserved domain; filled by the Service.
	URI string `json:"uri"`
	// CreatedAt is when the domain was reserved.
	CreatedAt time.Time `json:"created_at"`
	// Description says what the domain is used for.
	Description string `json:"description"`
	// Metadata is arbitrary user-defined machine-readable data.
	Metadata string `json:"metadata"`
	// Domain is the canonical name (see [ParseName]), possibly a
	// wildcard such as "*.example.com". It never changes.
	Domain string `json:"domain"`
	// Region is the deprecated region as given at creation, or "".
	Region string `json:"region" openapi:"omitempty,oneof=au eu ap us jp in sa"`
	// CNAMETarget is the name the domain's CNAME record must point to; nil
	// for a subdomain of a service-owned base domain.
	CNAMETarget *string `json:"cname_target"`
	// Certificate is the TLS certificate served for the domain: one the
	// user attached, the last one certificate management issued, or nil.
	Certificate *resource.Ref `json:"certificate"`
	// CertificateManagementPolicy is nil when automatic certificate
	// management is off.
	CertificateManagementPolicy *CertPolicy `json:"certificate_management_policy"`
	// CertificateManagementStatus is nil exactly when
	// CertificateManagementPolicy is.
	CertificateManagementStatus *CertStatus `json:"certificate_management_status"`
	// ACMEChallengeCNAMETarget is the target of the CNAME record for
	// _acme-challenge.<domain>: set only for a wildcard domain outside the
	// service-owned bases while a certificate management policy is
	// attached, else nil.
	ACMEChallengeCNAMETarget *string `json:"acme_challenge_cname_target"`
	// HTTPEndpointConfiguration is the attached endpoint configuration of
	// type http, or nil.
	HTTPEndpointConfiguration *resource.Ref `json:"http_endpoint_configuration"`
	// HTTPSEndpointConfiguration is the attached endpoint configuration of
	// type https, or nil.
	HTTPSEndpointConfiguration *resource.Ref `json:"https_endpoint_configuration"`
	// ErrorRedirectURL is always nil: the specification shows the field
	// as null in every shape and gives neither its type nor its meaning.
	// A *string keeps it null on the wire and leaves room for a URL.
	ErrorRedirectURL *string `json:"error_redirect_url"`
}

// CertPolicy is a reserved domain's certificate management policy.
type CertPolicy struct {
	// Authority is the certificate authority: [AuthorityLetsEncrypt].
	Authority string `json:"authority" openapi:"oneof=letsencrypt"`
	// PrivateKeyType is [KeyTypeRSA] or [KeyTypeECDSA].
	PrivateKeyType string `json:"private_key_type" openapi:"oneof=rsa ecdsa"`
}

// CertStatus is the state of a reserved domain's certificate management.
type CertStatus struct {
	// RenewsAt is when the managed certificate will next be renewed; nil
	// until one has been issued.
	RenewsAt *time.Time `json:"renews_at"`
	// ProvisioningJob is the certificate being provisioned or renewed, or
	// nil when none is.
	ProvisioningJob *CertJob `json:"provisioning_job"`
}

// CertJob is a certificate provisioning or renewal in progress.
type CertJob struct {
	// ErrorCode is nil while nothing has failed, else [ErrorCodeInternal]
	// or [ErrorCodeDNS].
	ErrorCode *string `json:"error_code" openapi:"oneof=INTERNAL_ERROR DNS_ERROR"`
	// Msg describes the current state or the error.
	Msg string `json:"msg"`
	// StartedAt is when the job started.
	StartedAt time.Time `json:"started_at"`
	// RetriesAt is when a failed job will be retried; nil when it will not
	// be retried on its own.
	RetriesAt *time.Time `json:"retries_at"`
}

// CertPolicyParams is a certificate management policy as a request gives
// it.
type CertPolicyParams struct {
	// Authority is required and must be [AuthorityLetsEncrypt].
	Authority string `json:"authority" validate:"required,oneof=letsencrypt"`
	// PrivateKeyType is [KeyTypeRSA] (the default when empty) or
	// [KeyTypeECDSA].
	PrivateKeyType string `json:"private_key_type" validate:"omitempty,oneof=rsa ecdsa"`
}

// Policy returns the policy p describes, its key type defaulted.
func (p CertPolicyParams) Policy() CertPolicy {
	kt := p.PrivateKeyType
	if kt == "" {
		kt = KeyTypeRSA
	}
	return CertPolicy{Authority: p.Authority, PrivateKeyType: kt}
}

// CreateParams are the parameters of reserving a domain.
type CreateParams struct {
	// Domain is required: see [ParseName].
	Domain string `json:"domain" openapi:"required,maxbytes=253"`
	// Region is optional and deprecated: one of [Regions].
	Region string `json:"region" validate:"omitempty,oneof=au eu ap us jp in sa"`
	// Description is optional, at most 255 bytes.
	Description string `json:"description" validate:"maxbytes=255"`
	// Metadata is optional, at most 4096 bytes.
	Metadata string `json:"metadata" validate:"maxbytes=4096"`
	// CertificateID optionally names a TLS certificate of the account that
	// covers the domain. Mutually exclusive with
	// CertificateManagementPolicy.
	CertificateID string `json:"certificate_id" openapi:"omitempty,id=cert_"`
	// CertificateManagementPolicy optionally turns on automatic
	// certificate management. Mutually exclusive with CertificateID.
	CertificateManagementPolicy *CertPolicyParams `json:"certificate_management_policy"`
}

// Validate reports every broken rule of p under the service configuration
// cfg (which [Config.WithDefaults] has filled): the field rules, the
// domain's syntax and whether cfg lets it be reserved. Whether the
// certificate exists and covers the domain is the Service's check. It
// returns nil or an InvalidArgument [*apierr.Error].
func (p CreateParams) Validate(cfg Config) error {
	var vs apierr.Violations
	validate.Into(&vs, "", p)
	if name, err := ParseName(p.Domain); err != nil {
		vs.Add("domain", "%s", err)
	} else {
		cfg.checkReservable(&vs, "domain", name)
	}
	if p.CertificateID != "" {
		checkID(&vs, "certificate_id", p.CertificateID, CertificatePrefix, "a TLS certificate")
	}
	if p.CertificateID != "" && p.CertificateManagementPolicy != nil {
		exclusive(&vs)
	}
	return vs.Err()
}

// ReservedDomain returns the reserved domain p describes under the
// configuration cfg (filled by [Config.WithDefaults]), without the fields
// the Service assigns (ID, URI, CreatedAt): its name canonical, a fresh
// CNAME target ([Config.CNAMETarget]), its certificate a Ref with the ID
// only, and, when a policy is given, a provisioning job started at now.
// Call it after [CreateParams.Validate].
func (p CreateParams) ReservedDomain(cfg Config, now time.Time) ReservedDomain {
	name, err := ParseName(p.Domain)
	if err != nil {
		name = p.Domain
	}
	d := ReservedDomain{Description: p.Description, Metadata: p.Metadata, Domain: name, Region: p.Region,
		CNAMETarget: cfg.CNAMETarget(name), Certificate: idRef(p.CertificateID)}
	if p.CertificateManagementPolicy != nil {
		d.SetPolicy(p.CertificateManagementPolicy.Policy(), now)
	}
	return d
}

// UpdateParams are the parameters of updating a reserved domain. A nil
// field is absent and leaves the value unchanged (a JSON null is the same
// as absent).
type UpdateParams struct {
	// Description replaces the description; at most 255 bytes.
	Description *string `json:"description" validate:"omitnil,maxbytes=255"`
	// Metadata replaces the metadata; at most 4096 bytes.
	Metadata *string `json:"metadata" validate:"omitnil,maxbytes=4096"`
	// CertificateID attaches a TLS certificate of the account that covers
	// the domain, turning certificate management off; "" detaches the
	// certificate. Mutually exclusive with CertificateManagementPolicy.
	CertificateID *string `json:"certificate_id" openapi:"omitempty,id=cert_"`
	// CertificateManagementPolicy sets the certificate management policy
	// (see [ReservedDomain.SetPolicy]). Mutually exclusive with
	// CertificateID.
	CertificateManagementPolicy *CertPolicyParams `json:"certificate_management_policy"`
	// HTTPEndpointConfigurationID attaches an endpoint configuration of
	// type http; "" detaches it.
	HTTPEndpointConfigurationID *string `json:"http_endpoint_configuration_id" openapi:"omitempty,id=ec_"`
	// HTTPSEndpointConfigurationID attaches an endpoint configuration of
	// type https; "" detaches it.
	HTTPSEndpointConfigurationID *string `json:"https_endpoint_configuration_id" openapi:"omitempty,id=ec_"`
	// Domain is never allowed: a reserved domain's name cannot change. It
	// exists so that a request naming it is refused rather than silently
	// ignored.
	Domain *string `json:"domain" openapi:"absent"`
	// Region is never allowed, for the same reason.
	Region *string `json:"region" openapi:"absent"`
}

// Validate reports every broken rule of p. It returns nil or an
// InvalidArgument [*apierr.Error].
func (p UpdateParams) Validate() error {
	var vs apierr.Violations
	validate.Into(&vs, "", p)
	if p.CertificateID != nil && *p.CertificateID != "" {
		checkID(&vs, "certificate_id", *p.CertificateID, CertificatePrefix, "a TLS certificate")
	}
	if p.CertificateID != nil && p.CertificateManagementPolicy != nil {
		exclusive(&vs)
	}
	for _, f := range []struct {
		name string
		v    *string
	}{{"http_endpoint_configuration_id", p.HTTPEndpointConfigurationID}, {"https_endpoint_configuration_id", p.HTTPSEndpointConfigurationID}} {
		if f.v != nil && *f.v != "" {
			checkID(&vs, f.name, *f.v, EndpointConfigurationPrefix, "an endpoint configuration")
		}
	}
	if p.Domain != nil {
		vs.Add("domain", "cannot be changed by update; reserve another domain instead")
	}
	if p.Region != nil {
		vs.Add("region", "cannot be changed by update")
	}
	return vs.Err()
}

// Apply sets the fields of d that p carries, at time now: description and
// metadata; the certificate (see [ReservedDomain.SetCertificate]); the
// policy (see [ReservedDomain.SetPolicy]); the endpoint configurations
// (Refs with the ID only, nil for ""). Call it after
// [UpdateParams.Validate].
func (p UpdateParams) Apply(d *ReservedDomain, now time.Time) {
	setString(&d.Description, p.Description)
	setString(&d.Metadata, p.Metadata)
	if p.CertificateID != nil {
		d.SetCertificate(idRef(*p.CertificateID))
	}
	if p.CertificateManagementPolicy != nil {
		d.SetPolicy(p.CertificateManagementPolicy.Policy(), now)
	}
	if p.HTTPEndpointConfigurationID != nil {
		d.HTTPEndpointConfiguration = idRef(*p.HTTPEndpointConfigurationID)
	}
	if p.HTTPSEndpointConfigurationID != nil {
		d.HTTPSEndpointConfiguration = idRef(*p.HTTPSEndpointConfigurationID)
	}
}

// RefIDs returns the IDs of the resources d references: its certificate
// and endpoint configurations.
func (d *ReservedDomain) RefIDs() []string {
	var out []string
	for _, r := range []*resource.Ref{d.Certificate, d.HTTPEndpointConfiguration, d.HTTPSEndpointConfiguration} {
		if r != nil {
			out = append(out, r.ID)
		}
	}
	return out
}

// SetCertificate attaches the certificate ref (nil detaches it). A
// certificate chosen by the user replaces automatic management, so a
// non-nil ref also removes the policy and status.
func (d *ReservedDomain) SetCertificate(ref *resource.Ref) {
	d.Certificate = ref
	if ref != nil {
		d.DetachPolicy()
	}
}

// DetachCertificate removes the certificate at time now. With a policy
// attached, a new managed certificate is needed: provisioning restarts.
func (d *ReservedDomain) DetachCertificate(now time.Time) {
	d.Certificate = nil
	if d.CertificateManagementPolicy != nil {
		d.startJob(now)
	}
}

// SetPolicy attaches pol at time now. Provisioning starts when there was
// no policy, when pol differs from the current one, or when the current
// job has failed (setting the policy again is how a user retries after
// fixing DNS); otherwise nothing changes. The current certificate, if
// any, stays until a managed one replaces it.
func (d *ReservedDomain) SetPolicy(pol CertPolicy, now time.Time) {
	cur, st := d.CertificateManagementPolicy, d.CertificateManagementStatus
	failed := st != nil && st.ProvisioningJob != nil && st.ProvisioningJob.ErrorCode != nil
	if cur != nil && *cur == pol && st != nil && !failed {
		return
	}
	d.CertificateManagementPolicy = &pol
	d.startJob(now)
}

// DetachPolicy turns certificate management off: policy, status and ACME
// challenge target become nil. The certificate stays.
func (d *ReservedDomain) DetachPolicy() {
	d.CertificateManagementPolicy = nil
	d.CertificateManagementStatus = nil
	d.ACMEChallengeCNAMETarget = nil
}

// startJob records a new provisioning job started at now.
func (d *ReservedDomain) startJob(now time.Time) {
	d.CertificateManagementStatus = &CertStatus{ProvisioningJob: &CertJob{Msg: d.pendingMsg(), StartedAt: now}}
	d.ACMEChallengeCNAMETarget = nil
	if IsWildcard(d.Domain) && d.CNAMETarget != nil {
		t := ACMEChallengeTarget(*d.CNAMETarget)
		d.ACMEChallengeCNAMETarget = &t
	}
}

// pendingMsg describes a job that has not been reported on yet, with the
// DNS record the user needs.
func (d *ReservedDomain) pendingMsg() string {
	const msg = "certificate provisioning has started"
	switch {
	case d.CNAMETarget == nil:
		return msg
	case IsWildcard(d.Domain):
		return fmt.Sprintf("%s; it needs a CNAME record for _acme-challenge.%s pointing to %s",
			msg, d.Domain[2:], ACMEChallengeTarget(*d.CNAMETarget))
	default:
		return fmt.Sprintf("%s; it needs a CNAME record for %s pointing to %s", msg, d.Domain, *d.CNAMETarget)
	}
}

// RenewalMsg is the message of the provisioning job shown while a due
// renewal has not been reported on.
const RenewalMsg = "certificate renewal has started"

// ShowRenewal fills in, for display at time now, the provisioning job of a
// renewal that is due but not yet reported on: a job with [RenewalMsg]
// started at RenewsAt. Stored state is never changed by it.
func (d *ReservedDomain) ShowRenewal(now time.Time) {
	st := d.CertificateManagementStatus
	if st == nil || st.ProvisioningJob != nil || st.RenewsAt == nil || now.Before(*st.RenewsAt) {
		return
	}
	d.CertificateManagementStatus = &CertStatus{RenewsAt: st.RenewsAt, ProvisioningJob: &CertJob{Msg: RenewalMsg, StartedAt: *st.RenewsAt}}
}

// CertificateDue reports whether, at time now, d's managed certificate
// needs issuing or renewing: a policy is attached and either a job has
// not failed, or it failed and its retry time has come, or no job runs
// and the renewal time has come. A job failed with [ErrorCodeDNS]
// without a retry time waits for the user.
func (d *ReservedDomain) CertificateDue(now time.Time) bool {
	at, ok := d.CertificateDueAt()
	return ok && !now.Before(at)
}

// CertificateDueAt returns when d's managed certificate becomes due (see
// [ReservedDomain.CertificateDue]): the zero time when it is due now
// whatever the time, and false when no time makes it due (no policy, or
// a failed job without a retry time). Stores index domains by it, so that the due ones
// are found without reading the others.
func (d *ReservedDomain) CertificateDueAt() (time.Time, bool) {
	st := d.CertificateManagementStatus
	if d.CertificateManagementPolicy == nil || st == nil {
		return time.Time{}, false
	}
	if job := st.ProvisioningJob; job != nil {
		switch {
		case job.ErrorCode == nil:
			return time.Time{}, true
		case job.RetriesAt != nil:
			return *job.RetriesAt, true
		}
		return time.Time{}, false
	}
	if st.RenewsAt == nil {
		return time.Time{}, true
	}
	return *st.RenewsAt, true
}

// RenewsAt returns when a certificate valid from notBefore to notAfter is
// renewed: after two thirds of its lifetime (for a 90-day certificate, 30
// days before it expires), truncated to the second.
func RenewsAt(notBefore, notAfter time.Time) time.Time {
	return resource.Timestamp(notBefore.Add(notAfter.Sub(notBefore) * 2 / 3))
}

// CertificateIssued records that certificate management issued cert, valid
// from notBefore to notAfter: it becomes the domain's certificate, the job
// ends, and renews_at is [RenewsAt] of its validity.
func (d *ReservedDomain) CertificateIssued(cert resource.Ref, notBefore, notAfter time.Time) {
	d.Certificate = &cert
	r := RenewsAt(notBefore, notAfter)
	d.CertificateManagementStatus = &CertStatus{RenewsAt: &r}
}

// ProvisioningFailure is what a certificate manager reports when issuing
// or renewing a managed certificate fails.
type ProvisioningFailure struct {
	// ErrorCode is [ErrorCodeInternal] (temporary) or [ErrorCodeDNS]
	// (permanent until the user corrects DNS).
	ErrorCode string `json:"error_code" validate:"required,oneof=INTERNAL_ERROR DNS_ERROR"`
	// Msg describes the error for the user; 1 to 1024 bytes.
	Msg string `json:"msg" validate:"required,maxbytes=1024"`
	// RetriesAt is when the job will be retried: required for
	// [ErrorCodeInternal], optional for [ErrorCodeDNS] (zero: not until
	// the user sets the policy again; a certificate manager retries DNS
	// errors on a slow schedule, so that a fixed DNS record is picked
	// up), and when set after the current time.
	RetriesAt time.Time `json:"retries_at"`
}

// Validate reports every broken rule of f at time now. It returns nil or
// an InvalidArgument [*apierr.Error].
func (f ProvisioningFailure) Validate(now time.Time) error {
	var vs apierr.Violations
	validate.Into(&vs, "", f)
	switch f.ErrorCode {
	case ErrorCodeInternal:
		if !f.RetriesAt.After(now) {
			vs.Add("retries_at", "is required for %s and must be in the future", ErrorCodeInternal)
		}
	case ErrorCodeDNS:
		if !f.RetriesAt.IsZero() && !f.RetriesAt.After(now) {
			vs.Add("retries_at", "must be in the future or empty for %s (empty: the user must correct DNS and set the policy again)", ErrorCodeDNS)
		}
	}
	return vs.Err()
}

// CertificateProgress records at time now what the certificate manager
// is doing for d (msg): the job (a new one started at RenewsAt when a
// due renewal was not yet recorded as a job, or at now when there was
// none) carries msg and no error code or retry time: it runs. Call it
// on a domain with a policy, msg 1 to 1024 bytes.
func (d *ReservedDomain) CertificateProgress(msg string, now time.Time) {
	st := d.CertificateManagementStatus
	if st == nil {
		st = &CertStatus{}
	}
	d.CertificateManagementStatus = &CertStatus{RenewsAt: st.RenewsAt, ProvisioningJob: &CertJob{Msg: msg, StartedAt: st.jobStart(now)}}
}

// jobStart returns when the job of st started, for a report at now: the
// current job's start, else a due renewal's time, else now.
func (st *CertStatus) jobStart(now time.Time) time.Time {
	switch {
	case st.ProvisioningJob != nil:
		return st.ProvisioningJob.StartedAt
	case st.RenewsAt != nil && !now.Before(*st.RenewsAt):
		return *st.RenewsAt
	}
	return now
}

// CertificateFailed records failure f at time now: the job (a new one
// started at RenewsAt when a renewal was not yet recorded as a job, or at
// now when there was none) carries the error code, the message and the
// retry time, if any. Call it after
// [ProvisioningFailure.Validate], on a domain with a policy.
func (d *ReservedDomain) CertificateFailed(f ProvisioningFailure, now time.Time) {
	st := d.CertificateManagementStatus
	if st == nil {
		st = &CertStatus{}
	}
	started := st.jobStart(now)
	code := f.ErrorCode
	job := &CertJob{ErrorCode: &code, Msg: f.Msg, StartedAt: started}
	if !f.RetriesAt.IsZero() {
		r := resource.Timestamp(f.RetriesAt)
		job.RetriesAt = &r
	}
	d.CertificateManagementStatus = &CertStatus{RenewsAt: st.RenewsAt, ProvisioningJob: job}
}

// exclusive reports certificate_id and certificate_management_policy
// given together.
func exclusive(vs *apierr.Violations) {
	vs.Add("certificate_id", "cannot be combined with certificate_management_policy; give at most one of them")
	vs.Add("certificate_management_policy", "cannot be combined with certificate_id; give at most one of them")
}

// checkID adds a violation of field when id is not an identifier with
// prefix.
func checkID(vs *apierr.Violations, field, id, prefix, noun string) {
	if !ids.Valid(id, prefix) {
		vs.Add(field, "must be %s ID (%s followed by %d base62 characters)", noun, prefix, ids.Len)
	}
}

func idRef(id string) *resource.Ref {
	if id == "" {
		return nil
	}
	return &resource.Ref{ID: id}
}

func setString(dst, src *string) {
	if src != nil {
		*dst = *src
	}
}
