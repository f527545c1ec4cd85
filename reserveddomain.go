package edgeplane

import (
	"context"
	"errors"
	"time"

	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/internal/storedforms"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/resource"
	"github.com/edgeplane/edgeplane/store"
)

// Store lookup keys of reserved domains. Keys are unique across the whole
// store, so a name can be reserved once across accounts, and CNAME
// targets are unique.
func domainKey(name string) string  { return "reserved_domain:" + name }
func cnameKey(target string) string { return "cname_target:" + target }
func domainKeys(d *domains.ReservedDomain) []string {
	keys := []string{domainKey(d.Domain)}
	if d.CNAMETarget != nil {
		keys = append(keys, cnameKey(*d.CNAMETarget))
	}
	return keys
}

// indexCertificateDue is the secondary index of reserved domains by the
// time their managed certificate becomes due
// ([domains.ReservedDomain.CertificateDueAt]), read by
// [hosting.CertificateHost.CertificateOrders].
const indexCertificateDue = "certificate_due"

// setDomainFacts sets what the store indexes of a reserved domain: its
// references and its due time. Every write of a domain calls it.
func setDomainFacts(rec *store.Record, d *domains.ReservedDomain) {
	rec.Refs = d.RefIDs()
	rec.Indexes = nil
	if at, ok := d.CertificateDueAt(); ok {
		rec.Indexes = []store.IndexEntry{{Name: indexCertificateDue, Value: store.IndexTime(at)}}
	}
}

// The identity of the kind this file declares (see kindList).
var (
	reservedDomainKind = &records.Kind{StoreKind: KindReservedDomain, Prefix: domains.ReservedDomainPrefix, Collection: "reserved_domains", Noun: "reserved domain", Event: "reserved_domain"}
)

var reservedDomainForm = &kind[domains.ReservedDomain]{Form: storedforms.ReservedDomain(reservedDomainKind), present: (*Service).presentReservedDomain}

// presentReservedDomain fills URIs at read time and shows a due renewal
// as a running job.
func (s *Service) presentReservedDomain(d *domains.ReservedDomain, _ store.Record) {
	d.URI = s.uri(reservedDomainKind.Collection, d.ID)
	for _, r := range []struct {
		ref        *resource.Ref
		collection string
	}{
		{d.Certificate, certificateKind.Collection},
		{d.HTTPEndpointConfiguration, endpointConfigKind.Collection},
		{d.HTTPSEndpointConfiguration, endpointConfigKind.Collection},
	} {
		if r.ref != nil {
			*r.ref = s.ref(r.collection, r.ref.ID)
		}
	}
	d.ShowRenewal(s.now())
}

// CreateReservedDomain reserves a domain for the caller's account (POST
// /reserved_domains). The name can be reserved once in the whole service:
// a second reservation, in any account, is a conflict naming the domain.
// certificate_id must name a TLS certificate of the account that covers
// the domain; the existence check and the write are one atomic step.
func (s *Service) CreateReservedDomain(ctx context.Context, p Principal, params domains.CreateParams) (*domains.ReservedDomain, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	if err := params.Validate(s.domains); err != nil {
		return nil, err
	}
	now := s.timestamp()
	d := params.ReservedDomain(s.domains, now)
	if d.Certificate != nil {
		if err := s.checkCertificate(ctx, p, d.Certificate.ID, d.Domain); err != nil {
			return nil, err
		}
	}
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			d = params.ReservedDomain(s.domains, now) // with a new CNAME target
		}
		d.ID, d.CreatedAt = s.ids.New(domains.ReservedDomainPrefix), now
		rec := store.Record{Kind: KindReservedDomain, AccountID: p.AccountID, ID: d.ID, Keys: domainKeys(&d)}
		if err := reservedDomainForm.Encode(s.db, &d, &rec); err != nil {
			return nil, err
		}
		setDomainFacts(&rec, &d)
		err := s.store.Create(ctx, noted(rec, s.db.Note(reservedDomainKind.Event, events.Created)))
		var dup *store.DuplicateError
		if errors.As(err, &dup) && dup.Key != domainKey(d.Domain) && attempt < 3 {
			continue // a CNAME target clash (128 random bits): draw another
		}
		if err != nil {
			return nil, s.domainErr(err, &d)
		}
		break
	}
	s.presentReservedDomain(&d, store.Record{})
	return &d, nil
}

// domainErr turns a store error of a reserved domain write into the
// caller's error: the domain's key taken is a conflict naming the domain;
// a missing reference is a violation of the field that named it.
func (s *Service) domainErr(err error, d *domains.ReservedDomain) error {
	var (
		dup  *store.DuplicateError
		miss *store.MissingRefError
	)
	switch {
	case errors.As(err, &dup) && dup.Key == domainKey(d.Domain):
		return &apierr.Error{Code: apierr.Conflict, Err: err, Msg: "the domain " + d.Domain + " is already reserved"}
	case errors.As(err, &miss):
		field := "certificate_id"
		switch {
		case d.HTTPEndpointConfiguration != nil && d.HTTPEndpointConfiguration.ID == miss.ID:
			field = "http_endpoint_configuration_id"
		case d.HTTPSEndpointConfiguration != nil && d.HTTPSEndpointConfiguration.ID == miss.ID:
			field = "https_endpoint_configuration_id"
		}
		return refViolation(err, field, false, nil)
	}
	return s.db.StoreErr(err, reservedDomainKind, d.ID)
}

// checkCertificate fails with a violation of certificate_id unless id is a
// TLS certificate of p's account that covers the domain name.
func (s *Service) checkCertificate(ctx context.Context, p Principal, id, name string) error {
	c, _, err := records.Get(ctx, s.db, p, certificateForm.Form, id)
	if errors.Is(err, apierr.ErrNotFound) {
		return apierr.Invalidf("certificate_id", "%s not found in this account", describeID(id))
	}
	if err != nil {
		return err
	}
	if !domains.Covers(c.SubjectAlternativeNames.DNSNames, name) {
		return apierr.Invalidf("certificate_id", "%s does not cover %s; its DNS names are %v", describeID(id), name, c.SubjectAlternativeNames.DNSNames)
	}
	return nil
}

// checkEndpointConfiguration fails with a violation of field unless id is
// an endpoint configuration of p's account of type typ.
func (s *Service) checkEndpointConfiguration(ctx context.Context, p Principal, field, id, typ string) error {
	c, _, err := records.Get(ctx, s.db, p, endpointConfigForm.Form, id)
	if errors.Is(err, apierr.ErrNotFound) {
		return apierr.Invalidf(field, "%s not found in this account", describeID(id))
	}
	if err != nil {
		return err
	}
	if c.Type != typ {
		return apierr.Invalidf(field, "must name an endpoint configuration of type %s; %s is of type %s", typ, id, c.Type)
	}
	return nil
}

// GetReservedDomain returns a reserved domain (GET /reserved_domains/{id}).
func (s *Service) GetReservedDomain(ctx context.Context, p Principal, id string) (*domains.ReservedDomain, error) {
	d, rec, err := records.Get(ctx, s.db, p, reservedDomainForm.Form, id)
	if err != nil {
		return nil, err
	}
	s.presentReservedDomain(d, rec)
	return d, nil
}

// ListReservedDomains returns a page of the account's reserved domains,
// newest first (GET /reserved_domains).
func (s *Service) ListReservedDomains(ctx context.Context, p Principal, opts ListOptions) (*Page[domains.ReservedDomain], error) {
	return list(ctx, s, p, reservedDomainForm.Form, "", reservedDomainKind.Collection, opts, s.presentReservedDomain)
}

// UpdateReservedDomain changes the fields present in params (PATCH
// /reserved_domains/{id}); domain and region cannot be changed.
//
// certificate_id must name a TLS certificate of the account that covers
// the domain; attaching one turns certificate management off. "" detaches
// the certificate. Setting certificate_management_policy (re)starts
// provisioning when it is new or different, or when the last attempt
// failed; the current certificate stays until a managed one replaces it.
// http_endpoint_configuration_id and https_endpoint_configuration_id must
// name endpoint configurations of the account of type http and https; ""
// detaches. References are checked again, atomically, when the change is
// written.
func (s *Service) UpdateReservedDomain(ctx context.Context, p Principal, id string, params domains.UpdateParams) (*domains.ReservedDomain, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	if err := params.Validate(); err != nil {
		return nil, err
	}
	cur, _, err := records.Get(ctx, s.db, p, reservedDomainForm.Form, id)
	if err != nil {
		return nil, err
	}
	if params.CertificateID != nil && *params.CertificateID != "" {
		if err := s.checkCertificate(ctx, p, *params.CertificateID, cur.Domain); err != nil {
			return nil, err
		}
	}
	for _, ec := range []struct {
		field, typ string
		id         *string
	}{
		{"http_endpoint_configuration_id", domains.EndpointTypeHTTP, params.HTTPEndpointConfigurationID},
		{"https_endpoint_configuration_id", domains.EndpointTypeHTTPS, params.HTTPSEndpointConfigurationID},
	} {
		if ec.id != nil && *ec.id != "" {
			if err := s.checkEndpointConfiguration(ctx, p, ec.field, *ec.id, ec.typ); err != nil {
				return nil, err
			}
		}
	}
	now := s.timestamp()
	var updated *domains.ReservedDomain
	d, err := records.Update(ctx, s.db, p, reservedDomainForm.Form, id, func(d *domains.ReservedDomain, rec *store.Record) error {
		params.Apply(d, now)
		setDomainFacts(rec, d)
		updated = d
		return nil
	})
	if err != nil {
		if updated != nil {
			return nil, s.domainErr(err, updated)
		}
		return nil, err
	}
	s.presentReservedDomain(d, store.Record{})
	return d, nil
}

// DeleteReservedDomain releases a reserved domain (DELETE
// /reserved_domains/{id}); the name can then be reserved again, by any
// account. Its endpoint configurations are not deleted, nor is its
// certificate, unless certificate management issued it for this domain:
// a managed certificate goes with its domain (reported as its
// tls_certificate_deleted event; one that another domain now uses is
// kept).
func (s *Service) DeleteReservedDomain(ctx context.Context, p Principal, id string) error {
	d, _, err := records.Get(ctx, s.db, p, reservedDomainForm.Form, id)
	if err != nil {
		return err
	}
	if err := records.Remove(ctx, s.db, p, reservedDomainKind, id); err != nil {
		return err
	}
	if d.Certificate != nil {
		s.deleteManagedCertificate(ctx, p.AccountID, d.Certificate.ID, id)
	}
	return nil
}

// DetachReservedDomainCertificate removes a reserved domain's certificate
// (DELETE /reserved_domains/{id}/certificate); afterwards certificate is
// null. With a certificate management policy attached, provisioning of a
// new managed certificate starts. The certificate itself is not deleted.
func (s *Service) DetachReservedDomainCertificate(ctx context.Context, p Principal, id string) error {
	return s.detach(ctx, p, id, func(d *domains.ReservedDomain, now time.Time) { d.DetachCertificate(now) })
}

// DetachReservedDomainCertificateManagementPolicy turns automatic
// certificate management off (DELETE
// /reserved_domains/{id}/certificate_management_policy): afterwards
// certificate_management_policy, certificate_management_status and
// acme_challenge_cname_target are null. The certificate stays.
func (s *Service) DetachReservedDomainCertificateManagementPolicy(ctx context.Context, p Principal, id string) error {
	return s.detach(ctx, p, id, func(d *domains.ReservedDomain, _ time.Time) { d.DetachPolicy() })
}

func (s *Service) detach(ctx context.Context, p Principal, id string, change func(*domains.ReservedDomain, time.Time)) error {
	now := s.timestamp()
	d, err := records.Update(ctx, s.db, p, reservedDomainForm.Form, id, func(d *domains.ReservedDomain, rec *store.Record) error {
		change(d, now)
		setDomainFacts(rec, d)
		return nil
	})
	if err != nil {
		return err
	}
	s.presentReservedDomain(d, store.Record{})
	return nil
}
