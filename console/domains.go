package console

import (
	"context"
	"net/http"
	"strings"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/domains"
)

// Reserved domains: the list, the create form, and a domain's page with
// its certificate's status and the DNS records to create.

// dnsRecord is a DNS record a reserved domain needs its owner to create.
type dnsRecord struct {
	Name, Type, Value string
	Why               string
}

// dnsRecords returns the records d needs, from what the Service shows of
// it: a CNAME of the domain to its cname_target (none for a subdomain of
// a service-owned domain, whose cname_target is null), and, while
// certificate management is on for a wildcard outside them, a CNAME of
// _acme-challenge.<base> to its acme_challenge_cname_target (the name
// the certificate manager's DNS-01 challenges are published under).
func dnsRecords(d *domains.ReservedDomain) []dnsRecord {
	var out []dnsRecord
	if d.CNAMETarget != nil {
		out = append(out, dnsRecord{Name: d.Domain, Type: "CNAME", Value: *d.CNAMETarget,
			Why: "sends the domain's traffic to this service"})
	}
	if d.ACMEChallengeCNAMETarget != nil {
		out = append(out, dnsRecord{Name: "_acme-challenge." + strings.TrimPrefix(d.Domain, "*."), Type: "CNAME", Value: *d.ACMEChallengeCNAMETarget,
			Why: "lets the certificate authority check the wildcard's certificate by DNS"})
	}
	return out
}

// domainRow is a reserved domain with its DNS records.
type domainRow struct {
	domains.ReservedDomain
	Records []dnsRecord
}

type domainsData struct {
	nav
	List   listState
	Items  []domainRow
	Form   domainForm
	Errors map[string][]string
}

type domainForm struct {
	Domain, Description, Metadata, CertificateID string
	Managed                                      bool
	KeyType                                      string
}

func (h *Handler) reservedDomains(w http.ResponseWriter, r *http.Request, v *visit) error {
	return h.showDomains(w, r, v, http.StatusOK, domainForm{Managed: true, KeyType: domains.KeyTypeECDSA}, nil)
}

func (h *Handler) showDomains(w http.ResponseWriter, r *http.Request, v *visit, status int, form domainForm, errs map[string][]string) error {
	items, st, code, err := listPage(r, v, Prefix+"reserved_domains", h.svc.ListReservedDomains)
	if err != nil {
		return err
	}
	st.Example = `obj.domain.endsWith(".example.com")`
	rows := make([]domainRow, len(items))
	for i := range items {
		rows[i] = domainRow{ReservedDomain: items[i], Records: dnsRecords(&items[i])}
	}
	h.render(w, max(status, code), "reserved_domains", &domainsData{nav: h.nav(v, "reserved_domains"), List: st, Items: rows, Form: form, Errors: errs})
	return nil
}

var domainFields = map[string]*lines{"domain": nil, "description": nil, "metadata": nil, "certificate_id": nil, "certificate_management_policy": nil}

func (h *Handler) createReservedDomain(w http.ResponseWriter, r *http.Request, v *visit) error {
	f := r.PostForm
	form := domainForm{Domain: strings.TrimSpace(f.Get("domain")), Description: f.Get("description"), Metadata: f.Get("metadata"),
		CertificateID: strings.TrimSpace(f.Get("certificate_id")), Managed: f.Get("managed") == "on", KeyType: f.Get("private_key_type")}
	params := domains.CreateParams{Domain: form.Domain, Description: form.Description, Metadata: form.Metadata, CertificateID: form.CertificateID}
	if form.Managed {
		params.CertificateManagementPolicy = &domains.CertPolicyParams{Authority: domains.AuthorityLetsEncrypt, PrivateKeyType: form.KeyType}
	}
	d, err := h.svc.CreateReservedDomain(r.Context(), v.p, params)
	if err != nil {
		return formFailure(err, domainFields, func(status int, errs map[string][]string) error {
			return h.showDomains(w, r, v, status, form, errs)
		})
	}
	h.sessions.setNotice(v.s, "Reserved "+d.Domain+".")
	http.Redirect(w, r, Prefix+"reserved_domains/"+d.ID, http.StatusSeeOther)
	return nil
}

type domainData struct {
	nav
	domainRow
	Edit domainEdit // the edit form
}

func (h *Handler) reservedDomain(w http.ResponseWriter, r *http.Request, v *visit) error {
	d, err := h.svc.GetReservedDomain(r.Context(), v.p, r.PathValue("id"))
	if err != nil {
		return err
	}
	h.render(w, http.StatusOK, "reserved_domain", &domainData{nav: h.nav(v, "reserved_domains"), domainRow: domainRow{ReservedDomain: *d, Records: dnsRecords(d)},
		Edit: storedDomainEdit(d)})
	return nil
}

// deleter is the handler of a form that deletes the resource {id} with
// del, then sends the browser to the list at back with a notice naming
// what was deleted. The Service's refusal (not found, in use) is the
// error page, with the API's message.
func (h *Handler) deleter(noun, back string, del func(context.Context, edgeplane.Principal, string) error) pageFunc {
	return func(w http.ResponseWriter, r *http.Request, v *visit) error {
		id := r.PathValue("id")
		if err := del(r.Context(), v.p, id); err != nil {
			return err
		}
		h.sessions.setNotice(v.s, "Deleted "+noun+" "+id+".")
		http.Redirect(w, r, back, http.StatusSeeOther)
		return nil
	}
}
