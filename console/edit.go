package console

import (
	"context"
	"net/http"
	"slices"
	"sort"
	"strings"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/identity"
	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/ipaccess"
)

// Edit forms: each resource's page has a form, pre-filled with what the
// API lets an update change, that calls the Service's Update method of
// the kind (PATCH in the API) with only the fields whose value the user
// changed, so that an untouched field is left as it is. The API's
// violations are shown next to their fields and nothing is saved; a
// resource that is not the account's is not found. The credential's
// form is in pages.go.

// editState is what every edit form has: the description and metadata
// as typed or stored, and the API's violations by field.
type editState struct {
	Description, Metadata string
	Errors                map[string][]string // field -> reasons; "" for the form's
}

// readEdit reads the description and metadata of an edit form.
func readEdit(r *http.Request) editState {
	return editState{Description: r.PostForm.Get("description"), Metadata: r.PostForm.Get("metadata")}
}

// changed returns &typed when it differs from cur, else nil: an edit
// form sends the API only what the user changed.
func changed(typed, cur string) *string {
	if typed == cur {
		return nil
	}
	return &typed
}

// changedList returns the items typed when they differ from cur (an
// empty list, not nil, when none are typed), else nil.
func changedList(typed *lines, cur []string) *[]string {
	if slices.Equal(typed.items, cur) {
		return nil
	}
	items := typed.items
	if items == nil {
		items = []string{}
	}
	return &items
}

// descMetaFields are the fields of an edit form of description and
// metadata only.
var descMetaFields = map[string]*lines{"description": nil, "metadata": nil}

// saved ends a form that saved a change, or found none to save: a
// notice, and the browser back to the resource's page.
func (h *Handler) saved(w http.ResponseWriter, r *http.Request, v *visit, any bool, noun, id, back string) error {
	if any {
		h.sessions.setNotice(v.s, "Saved "+noun+" "+id+".")
	} else {
		h.sessions.setNotice(v.s, "Nothing changed: "+noun+" "+id+" is as it was.")
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
	return nil
}

// API keys: description and metadata.

func (h *Handler) editAPIKey(w http.ResponseWriter, r *http.Request, v *visit) error {
	k, err := h.svc.GetAPIKey(r.Context(), v.p, r.PathValue("id"))
	if err != nil {
		return err
	}
	form := readEdit(r)
	params := identity.UpdateAPIKeyParams{Description: changed(form.Description, k.Description), Metadata: changed(form.Metadata, k.Metadata)}
	if params == (identity.UpdateAPIKeyParams{}) {
		return h.saved(w, r, v, false, "API key", k.ID, Prefix+"api_keys/"+k.ID)
	}
	if _, err := h.svc.UpdateAPIKey(r.Context(), v.p, k.ID, params); err != nil {
		return formFailure(err, descMetaFields, func(status int, errs map[string][]string) error {
			form.Errors = errs
			h.render(w, status, "api_key", &apiKeyData{nav: h.nav(v, "api_keys"), Key: k, Own: k.OwnerID == v.p.SubjectID, Edit: form})
			return nil
		})
	}
	return h.saved(w, r, v, true, "API key", k.ID, Prefix+"api_keys/"+k.ID)
}

// Reserved domains: description, metadata, and the certificate: managed
// (a key type) or one of the account's by ID. Turning management off is
// a form of its own, as the API's DELETE of the policy is.

// domainEdit is a reserved domain's edit form.
type domainEdit struct {
	editState
	// KeyType is the managed certificate's key type (rsa or ecdsa); ""
	// when management is off and stays off.
	KeyType string
	// CertificateID is the certificate attached by ID; "" for none.
	CertificateID string
	// Managed reports that management is on (stored): the form then
	// offers no "off", which is the other form's.
	Managed bool
}

func storedDomainEdit(d *domains.ReservedDomain) domainEdit {
	e := domainEdit{editState: editState{Description: d.Description, Metadata: d.Metadata}}
	if p := d.CertificateManagementPolicy; p != nil {
		e.Managed, e.KeyType = true, p.PrivateKeyType
	} else if d.Certificate != nil {
		e.CertificateID = d.Certificate.ID
	}
	return e
}

var domainEditFields = map[string]*lines{"description": nil, "metadata": nil, "certificate_id": nil, "certificate_management_policy": nil}

func (h *Handler) editReservedDomain(w http.ResponseWriter, r *http.Request, v *visit) error {
	d, err := h.svc.GetReservedDomain(r.Context(), v.p, r.PathValue("id"))
	if err != nil {
		return err
	}
	cur := storedDomainEdit(d)
	form := domainEdit{editState: readEdit(r), KeyType: r.PostForm.Get("private_key_type"), CertificateID: strings.TrimSpace(r.PostForm.Get("certificate_id")), Managed: cur.Managed}
	params := domains.UpdateParams{Description: changed(form.Description, cur.Description), Metadata: changed(form.Metadata, cur.Metadata)}
	if form.KeyType != "" && form.KeyType != cur.KeyType {
		params.CertificateManagementPolicy = &domains.CertPolicyParams{Authority: domains.AuthorityLetsEncrypt, PrivateKeyType: form.KeyType}
	}
	if form.KeyType == "" && cur.Managed {
		form.KeyType = cur.KeyType // the form has no "off" while managed: the key type stays
	}
	if cur.Managed && form.CertificateID != "" || !cur.Managed && form.CertificateID != cur.CertificateID {
		params.CertificateID = &form.CertificateID
	}
	if params == (domains.UpdateParams{}) {
		return h.saved(w, r, v, false, "reserved domain", d.Domain, Prefix+"reserved_domains/"+d.ID)
	}
	if _, err := h.svc.UpdateReservedDomain(r.Context(), v.p, d.ID, params); err != nil {
		return formFailure(err, domainEditFields, func(status int, errs map[string][]string) error {
			form.Errors = errs
			h.render(w, status, "reserved_domain", &domainData{nav: h.nav(v, "reserved_domains"), domainRow: domainRow{ReservedDomain: *d, Records: dnsRecords(d)}, Edit: form})
			return nil
		})
	}
	return h.saved(w, r, v, true, "reserved domain", d.Domain, Prefix+"reserved_domains/"+d.ID)
}

// unmanageDomain turns a domain's certificate management off (the API's
// DELETE /reserved_domains/{id}/certificate_management_policy); the
// certificate stays.
func (h *Handler) unmanageDomain(w http.ResponseWriter, r *http.Request, v *visit) error {
	id := r.PathValue("id")
	if err := h.svc.DetachReservedDomainCertificateManagementPolicy(r.Context(), v.p, id); err != nil {
		return err
	}
	h.sessions.setNotice(v.s, "Certificate management is off for "+id+"; its certificate, if any, stays.")
	http.Redirect(w, r, Prefix+"reserved_domains/"+id, http.StatusSeeOther)
	return nil
}

// Edges: description, metadata and hostports (one per line).

// edgeEdit is an edge's edit form.
type edgeEdit struct {
	editState
	Hostports string
}

func (h *Handler) editEdge(k *edgeKind) pageFunc {
	return func(w http.ResponseWriter, r *http.Request, v *visit) error {
		e, err := k.get(r.Context(), v.p, r.PathValue("id"))
		if err != nil {
			return err
		}
		form := edgeEdit{editState: readEdit(r), Hostports: r.PostForm.Get("hostports")}
		hp := splitLines(form.Hostports)
		desc, meta, hps := changed(form.Description, e.Description), changed(form.Metadata, e.Metadata), changedList(hp, e.Hostports)
		if desc == nil && meta == nil && hps == nil {
			return h.saved(w, r, v, false, k.Title[:len(k.Title)-1], e.ID, Prefix+"edges/"+k.Name+"/"+e.ID)
		}
		if err := k.update(r.Context(), v.p, e.ID, desc, meta, hps); err != nil {
			return formFailure(err, edgeFields(hp), func(status int, errs map[string][]string) error {
				form.Errors = errs
				return h.showEdge(w, r, v, k, edgeForms{status: status, edit: &form})
			})
		}
		return h.saved(w, r, v, true, k.Title[:len(k.Title)-1], e.ID, Prefix+"edges/"+k.Name+"/"+e.ID)
	}
}

// edgeUpdates returns the update of each kind of edge, over svc.
func edgeUpdates(svc *edgeplane.Service) map[string]func(ctx context.Context, p edgeplane.Principal, id string, d, m *string, hp *[]string) error {
	return map[string]func(ctx context.Context, p edgeplane.Principal, id string, d, m *string, hp *[]string) error{
		"https": func(ctx context.Context, p edgeplane.Principal, id string, d, m *string, hp *[]string) error {
			_, err := svc.UpdateHTTPSEdge(ctx, p, id, edges.UpdateEdgeParams{Description: d, Metadata: m, Hostports: hp})
			return err
		},
		"tls": func(ctx context.Context, p edgeplane.Principal, id string, d, m *string, hp *[]string) error {
			_, err := svc.UpdateTLSEdge(ctx, p, id, edges.UpdateTLSEdgeParams{Description: d, Metadata: m, Hostports: hp})
			return err
		},
		"tcp": func(ctx context.Context, p edgeplane.Principal, id string, d, m *string, hp *[]string) error {
			_, err := svc.UpdateTCPEdge(ctx, p, id, edges.UpdateTCPEdgeParams{Description: d, Metadata: m, Hostports: hp})
			return err
		},
	}
}

// HTTPS routes: description, metadata, match type and match.

// routeEdit is a route's edit form.
type routeEdit struct {
	editState
	MatchType, Match string
}

func (h *Handler) editRoute(w http.ResponseWriter, r *http.Request, v *visit) error {
	edgeID, id := r.PathValue("edge_id"), r.PathValue("id")
	rt, err := h.svc.GetHTTPSEdgeRoute(r.Context(), v.p, edgeID, id)
	if err != nil {
		return err
	}
	form := routeEdit{editState: readEdit(r), MatchType: r.PostForm.Get("match_type"), Match: r.PostForm.Get("match")}
	params := edges.UpdateRouteParams{Description: changed(form.Description, rt.Description), Metadata: changed(form.Metadata, rt.Metadata),
		MatchType: changed(form.MatchType, rt.MatchType), Match: changed(form.Match, rt.Match)}
	back := Prefix + "edges/https/" + edgeID + "/routes/" + id
	if params == (edges.UpdateRouteParams{}) {
		return h.saved(w, r, v, false, "route", id, back)
	}
	if _, err := h.svc.UpdateHTTPSEdgeRoute(r.Context(), v.p, edgeID, id, params); err != nil {
		return formFailure(err, routeFields, func(status int, errs map[string][]string) error {
			form.Errors = errs
			return h.renderRoute(w, v, status, rt, nil, form)
		})
	}
	return h.saved(w, r, v, true, "route", id, back)
}

// IP policies: description and metadata.

func (h *Handler) editIPPolicy(w http.ResponseWriter, r *http.Request, v *visit) error {
	pol, err := h.svc.GetIPPolicy(r.Context(), v.p, r.PathValue("id"))
	if err != nil {
		return err
	}
	form := readEdit(r)
	params := ipaccess.UpdatePolicyParams{Description: changed(form.Description, pol.Description), Metadata: changed(form.Metadata, pol.Metadata)}
	if params == (ipaccess.UpdatePolicyParams{}) {
		return h.saved(w, r, v, false, "IP policy", pol.ID, Prefix+"ip_policies/"+pol.ID)
	}
	if _, err := h.svc.UpdateIPPolicy(r.Context(), v.p, pol.ID, params); err != nil {
		return formFailure(err, descMetaFields, func(status int, errs map[string][]string) error {
			form.Errors = errs
			return h.renderIPPolicy(w, r, v, status, pol, ipRuleForm{Action: ipaccess.ActionAllow}, nil, form)
		})
	}
	return h.saved(w, r, v, true, "IP policy", pol.ID, Prefix+"ip_policies/"+pol.ID)
}

// IP policy rules: description, metadata, CIDR and action.

// ruleEdit is a rule's edit form.
type ruleEdit struct {
	editState
	CIDR, Action string
}

var ruleEditFields = map[string]*lines{"description": nil, "metadata": nil, "cidr": nil, "action": nil}

func (h *Handler) editIPRule(w http.ResponseWriter, r *http.Request, v *visit) error {
	rule, err := h.svc.GetIPPolicyRule(r.Context(), v.p, r.PathValue("id"))
	if err != nil {
		return err
	}
	form := ruleEdit{editState: readEdit(r), CIDR: strings.TrimSpace(r.PostForm.Get("cidr")), Action: r.PostForm.Get("action")}
	params := ipaccess.UpdateRuleParams{Description: changed(form.Description, rule.Description), Metadata: changed(form.Metadata, rule.Metadata),
		CIDR: changed(form.CIDR, rule.CIDR), Action: changed(form.Action, rule.Action)}
	if params == (ipaccess.UpdateRuleParams{}) {
		return h.saved(w, r, v, false, "IP policy rule", rule.ID, Prefix+"ip_policy_rules/"+rule.ID)
	}
	if _, err := h.svc.UpdateIPPolicyRule(r.Context(), v.p, rule.ID, params); err != nil {
		return formFailure(err, ruleEditFields, func(status int, errs map[string][]string) error {
			form.Errors = errs
			h.render(w, status, "ip_policy_rule", &ipRuleData{nav: h.nav(v, "ip_policies"), Rule: rule, Edit: form})
			return nil
		})
	}
	return h.saved(w, r, v, true, "IP policy rule", rule.ID, Prefix+"ip_policy_rules/"+rule.ID)
}

// IP restrictions: description, metadata, enforced and the policies (one
// per line); the type cannot change.

// restrictionEdit is a restriction's edit form.
type restrictionEdit struct {
	editState
	Policies string
	Enforced bool
}

func storedRestrictionEdit(x *ipaccess.Restriction) restrictionEdit {
	return restrictionEdit{editState: editState{Description: x.Description, Metadata: x.Metadata}, Policies: strings.Join(records.RefIDs(x.IPPolicies), "\n"), Enforced: x.Enforced}
}

func (h *Handler) editIPRestriction(w http.ResponseWriter, r *http.Request, v *visit) error {
	x, err := h.svc.GetIPRestriction(r.Context(), v.p, r.PathValue("id"))
	if err != nil {
		return err
	}
	form := restrictionEdit{editState: readEdit(r), Policies: r.PostForm.Get("ip_policy_ids"), Enforced: r.PostForm.Get("enforced") == "on"}
	ids := splitLines(form.Policies)
	params := ipaccess.UpdateRestrictionParams{Description: changed(form.Description, x.Description), Metadata: changed(form.Metadata, x.Metadata),
		IPPolicyIDs: changedList(ids, records.RefIDs(x.IPPolicies))}
	if form.Enforced != x.Enforced {
		params.Enforced = &form.Enforced
	}
	if params == (ipaccess.UpdateRestrictionParams{}) {
		return h.saved(w, r, v, false, "IP restriction", x.ID, Prefix+"ip_restrictions/"+x.ID)
	}
	if _, err := h.svc.UpdateIPRestriction(r.Context(), v.p, x.ID, params); err != nil {
		fields := map[string]*lines{"description": nil, "metadata": nil, "enforced": nil, "ip_policy_ids": ids}
		return formFailure(err, fields, func(status int, errs map[string][]string) error {
			form.Errors = errs
			h.render(w, status, "ip_restriction", &ipRestrictionData{nav: h.nav(v, "ip_restrictions"), Restriction: x, Edit: form})
			return nil
		})
	}
	return h.saved(w, r, v, true, "IP restriction", x.ID, Prefix+"ip_restrictions/"+x.ID)
}

// Event destinations: description, metadata and the target's URL and
// headers (a changed target replaces the old one, keeping its signing
// secret). The format is json, the only one.

// destinationEdit is a destination's edit form.
type destinationEdit struct {
	editState
	URL, Headers string
}

func storedDestinationEdit(d *events.Destination) destinationEdit {
	e := destinationEdit{editState: editState{Description: d.Description, Metadata: d.Metadata}}
	if t := d.Target.HTTP; t != nil {
		e.URL, e.Headers = t.URL, headerText(t.Headers)
	}
	return e
}

// headerText is headers as the form shows them: one "Name: value" per
// line, by name.
func headerText(headers map[string]string) string {
	names := make([]string, 0, len(headers))
	for n := range headers {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for i, n := range names {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(n + ": " + headers[n])
	}
	return b.String()
}

func (h *Handler) editEventDestination(w http.ResponseWriter, r *http.Request, v *visit) error {
	d, err := h.svc.GetEventDestination(r.Context(), v.p, r.PathValue("id"))
	if err != nil {
		return err
	}
	cur := storedDestinationEdit(d)
	form := destinationEdit{editState: readEdit(r), URL: strings.TrimSpace(r.PostForm.Get("url")), Headers: r.PostForm.Get("headers")}
	headers := headerLines(splitLines(form.Headers))
	params := events.UpdateDestinationParams{Description: changed(form.Description, cur.Description), Metadata: changed(form.Metadata, cur.Metadata)}
	if form.URL != cur.URL || headerText(headers) != cur.Headers {
		params.Target = &events.TargetParams{HTTP: &events.HTTPTargetParams{URL: form.URL, Headers: headers}}
	}
	if params == (events.UpdateDestinationParams{}) {
		return h.saved(w, r, v, false, "event destination", d.ID, Prefix+"event_destinations/"+d.ID)
	}
	if _, err := h.svc.UpdateEventDestination(r.Context(), v.p, d.ID, params); err != nil {
		return formFailure(err, destinationFields, func(status int, errs map[string][]string) error {
			form.Errors = errs
			h.render(w, status, "event_destination", &destinationData{nav: h.nav(v, "event_destinations"), Destination: d, Edit: form})
			return nil
		})
	}
	return h.saved(w, r, v, true, "event destination", d.ID, Prefix+"event_destinations/"+d.ID)
}
