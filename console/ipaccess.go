package console

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/ipaccess"
)

// IP policies, their rules, and IP restrictions: lists, create, delete.

type ipPoliciesData struct {
	nav
	List   listState
	Items  []ipaccess.Policy
	Form   ipPolicyForm
	Errors map[string][]string
}

type ipPolicyForm struct {
	Description, Metadata string
}

var ipPolicyFields = map[string]*lines{"description": nil, "metadata": nil}

func (h *Handler) ipPolicies(w http.ResponseWriter, r *http.Request, v *visit) error {
	return h.showIPPolicies(w, r, v, http.StatusOK, ipPolicyForm{}, nil)
}

func (h *Handler) showIPPolicies(w http.ResponseWriter, r *http.Request, v *visit, status int, form ipPolicyForm, errs map[string][]string) error {
	items, st, code, err := listPage(r, v, Prefix+"ip_policies", h.svc.ListIPPolicies)
	if err != nil {
		return err
	}
	st.Example = `obj.description.contains("office")`
	h.render(w, max(status, code), "ip_policies", &ipPoliciesData{nav: h.nav(v, "ip_policies"), List: st, Items: items, Form: form, Errors: errs})
	return nil
}

func (h *Handler) createIPPolicy(w http.ResponseWriter, r *http.Request, v *visit) error {
	form := ipPolicyForm{Description: r.PostForm.Get("description"), Metadata: r.PostForm.Get("metadata")}
	pol, err := h.svc.CreateIPPolicy(r.Context(), v.p, ipaccess.CreatePolicyParams{Description: form.Description, Metadata: form.Metadata})
	if err != nil {
		return formFailure(err, ipPolicyFields, func(status int, errs map[string][]string) error {
			return h.showIPPolicies(w, r, v, status, form, errs)
		})
	}
	h.sessions.setNotice(v.s, "Created IP policy "+pol.ID+": add its rules below.")
	http.Redirect(w, r, Prefix+"ip_policies/"+pol.ID, http.StatusSeeOther)
	return nil
}

// ipPolicyData is an IP policy's page: the policy, the first page of its
// rules, and the rule form.
type ipPolicyData struct {
	nav
	Policy    *ipaccess.Policy
	Rules     []ipaccess.Rule
	RulesLink string // the rules page, filtered to the policy's rules
	More      string // the rules page after the first page, or ""
	Form      ipRuleForm
	Errors    map[string][]string
	Edit      editState // the policy's edit form
}

// rulesOf is the API's filter of the rules of policy id.
func rulesOf(id string) string { return `obj.ip_policy.id == ` + strconv.Quote(id) }

func (h *Handler) ipPolicy(w http.ResponseWriter, r *http.Request, v *visit) error {
	return h.showIPPolicy(w, r, v, http.StatusOK, ipRuleForm{Action: ipaccess.ActionAllow}, nil)
}

func (h *Handler) showIPPolicy(w http.ResponseWriter, r *http.Request, v *visit, status int, form ipRuleForm, errs map[string][]string) error {
	id := r.PathValue("id")
	if id == "" {
		id = form.PolicyID
	}
	pol, err := h.svc.GetIPPolicy(r.Context(), v.p, id)
	if err != nil {
		return err
	}
	return h.renderIPPolicy(w, r, v, status, pol, form, errs, editState{Description: pol.Description, Metadata: pol.Metadata})
}

// renderIPPolicy renders the page of pol with its rule form and edit
// form.
func (h *Handler) renderIPPolicy(w http.ResponseWriter, r *http.Request, v *visit, status int, pol *ipaccess.Policy, form ipRuleForm, errs map[string][]string, edit editState) error {
	form.Back, form.PolicyID = "policy", pol.ID
	f := rulesOf(pol.ID)
	rules, err := h.svc.ListIPPolicyRules(r.Context(), v.p, edgeplane.ListOptions{Filter: f})
	if err != nil {
		return err
	}
	d := &ipPolicyData{nav: h.nav(v, "ip_policies"), Policy: pol, Rules: rules.Items, Form: form, Errors: errs, Edit: edit,
		RulesLink: Prefix + "ip_policy_rules?" + url.Values{"filter": {f}}.Encode()}
	if rules.NextBeforeID != "" {
		d.More = Prefix + "ip_policy_rules?" + url.Values{"filter": {f}, "before_id": {rules.NextBeforeID}}.Encode()
	}
	h.render(w, status, "ip_policy", d)
	return nil
}

// Rules.

type ipRulesData struct {
	nav
	List   listState
	Items  []ipaccess.Rule
	Form   ipRuleForm
	Errors map[string][]string
}

type ipRuleForm struct {
	PolicyID, CIDR, Action, Description, Metadata string
	// Back is "policy" when the form was sent from the policy's page,
	// which then shows its errors.
	Back string
}

var ipRuleFields = map[string]*lines{"ip_policy_id": nil, "cidr": nil, "action": nil, "description": nil, "metadata": nil}

func (h *Handler) ipRules(w http.ResponseWriter, r *http.Request, v *visit) error {
	return h.showIPRules(w, r, v, http.StatusOK, ipRuleForm{Action: ipaccess.ActionAllow}, nil)
}

func (h *Handler) showIPRules(w http.ResponseWriter, r *http.Request, v *visit, status int, form ipRuleForm, errs map[string][]string) error {
	items, st, code, err := listPage(r, v, Prefix+"ip_policy_rules", h.svc.ListIPPolicyRules)
	if err != nil {
		return err
	}
	st.Example = `obj.ip_policy.id == "ipp_…"`
	h.render(w, max(status, code), "ip_policy_rules", &ipRulesData{nav: h.nav(v, "ip_policies"), List: st, Items: items, Form: form, Errors: errs})
	return nil
}

func (h *Handler) createIPRule(w http.ResponseWriter, r *http.Request, v *visit) error {
	f := r.PostForm
	form := ipRuleForm{PolicyID: strings.TrimSpace(f.Get("ip_policy_id")), CIDR: strings.TrimSpace(f.Get("cidr")), Action: f.Get("action"),
		Description: f.Get("description"), Metadata: f.Get("metadata"), Back: f.Get("back")}
	rule, err := h.svc.CreateIPPolicyRule(r.Context(), v.p, ipaccess.CreateRuleParams{IPPolicyID: form.PolicyID, CIDR: form.CIDR, Action: form.Action,
		Description: form.Description, Metadata: form.Metadata})
	if err != nil {
		return formFailure(err, ipRuleFields, func(status int, errs map[string][]string) error {
			if form.Back == "policy" {
				return h.showIPPolicy(w, r, v, status, form, errs)
			}
			return h.showIPRules(w, r, v, status, form, errs)
		})
	}
	h.sessions.setNotice(v.s, "Added rule "+rule.ID+" ("+rule.Action+" "+rule.CIDR+").")
	back := Prefix + "ip_policy_rules"
	if form.Back == "policy" {
		back = Prefix + "ip_policies/" + rule.IPPolicy.ID
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
	return nil
}

type ipRuleData struct {
	nav
	Rule *ipaccess.Rule
	Edit ruleEdit // the edit form
}

func (h *Handler) ipRule(w http.ResponseWriter, r *http.Request, v *visit) error {
	rule, err := h.svc.GetIPPolicyRule(r.Context(), v.p, r.PathValue("id"))
	if err != nil {
		return err
	}
	h.render(w, http.StatusOK, "ip_policy_rule", &ipRuleData{nav: h.nav(v, "ip_policies"), Rule: rule,
		Edit: ruleEdit{editState: editState{Description: rule.Description, Metadata: rule.Metadata}, CIDR: rule.CIDR, Action: rule.Action}})
	return nil
}

// Restrictions.

type ipRestrictionsData struct {
	nav
	List   listState
	Items  []ipaccess.Restriction
	Types  []string
	Form   ipRestrictionForm
	Errors map[string][]string
}

type ipRestrictionForm struct {
	Type, Policies, Description, Metadata string
	Enforced                              bool
}

// restrictionTypes are the restriction types, as the form offers them.
var restrictionTypes = []string{ipaccess.TypeDashboard, ipaccess.TypeAPI, ipaccess.TypeAgent, ipaccess.TypeEndpoints}

func (h *Handler) ipRestrictions(w http.ResponseWriter, r *http.Request, v *visit) error {
	return h.showIPRestrictions(w, r, v, http.StatusOK, ipRestrictionForm{Type: ipaccess.TypeEndpoints}, nil)
}

func (h *Handler) showIPRestrictions(w http.ResponseWriter, r *http.Request, v *visit, status int, form ipRestrictionForm, errs map[string][]string) error {
	items, st, code, err := listPage(r, v, Prefix+"ip_restrictions", h.svc.ListIPRestrictions)
	if err != nil {
		return err
	}
	st.Example = `obj.type == "dashboard"`
	h.render(w, max(status, code), "ip_restrictions", &ipRestrictionsData{nav: h.nav(v, "ip_restrictions"), List: st, Items: items,
		Types: restrictionTypes, Form: form, Errors: errs})
	return nil
}

func (h *Handler) createIPRestriction(w http.ResponseWriter, r *http.Request, v *visit) error {
	f := r.PostForm
	form := ipRestrictionForm{Type: f.Get("type"), Policies: f.Get("ip_policy_ids"), Description: f.Get("description"), Metadata: f.Get("metadata"),
		Enforced: f.Get("enforced") == "on"}
	ids := splitLines(form.Policies)
	x, err := h.svc.CreateIPRestriction(r.Context(), v.p, ipaccess.CreateRestrictionParams{Type: form.Type, Enforced: form.Enforced, IPPolicyIDs: ids.items,
		Description: form.Description, Metadata: form.Metadata})
	if err != nil {
		return formFailure(err, map[string]*lines{"type": nil, "enforced": nil, "ip_policy_ids": ids, "description": nil, "metadata": nil},
			func(status int, errs map[string][]string) error {
				return h.showIPRestrictions(w, r, v, status, form, errs)
			})
	}
	h.sessions.setNotice(v.s, "Created IP restriction "+x.ID+".")
	http.Redirect(w, r, Prefix+"ip_restrictions/"+x.ID, http.StatusSeeOther)
	return nil
}

type ipRestrictionData struct {
	nav
	Restriction *ipaccess.Restriction
	Edit        restrictionEdit // the edit form
}

func (h *Handler) ipRestriction(w http.ResponseWriter, r *http.Request, v *visit) error {
	x, err := h.svc.GetIPRestriction(r.Context(), v.p, r.PathValue("id"))
	if err != nil {
		return err
	}
	h.render(w, http.StatusOK, "ip_restriction", &ipRestrictionData{nav: h.nav(v, "ip_restrictions"), Restriction: x, Edit: storedRestrictionEdit(x)})
	return nil
}

// ipRoutes registers the routes of the IP policy, rule and restriction
// pages.
func (h *Handler) ipRoutes(m *http.ServeMux) {
	h.handle(m, "GET "+Prefix+"ip_policies", h.page(h.ipPolicies))
	h.handle(m, "POST "+Prefix+"ip_policies", h.form(h.createIPPolicy))
	h.handle(m, "GET "+Prefix+"ip_policies/{id}", h.page(h.ipPolicy))
	h.handle(m, "POST "+Prefix+"ip_policies/{id}/edit", h.form(h.editIPPolicy))
	h.handle(m, "POST "+Prefix+"ip_policies/{id}/delete", h.form(h.deleter("IP policy", Prefix+"ip_policies", h.svc.DeleteIPPolicy)))
	h.handle(m, "GET "+Prefix+"ip_policy_rules", h.page(h.ipRules))
	h.handle(m, "POST "+Prefix+"ip_policy_rules", h.form(h.createIPRule))
	h.handle(m, "GET "+Prefix+"ip_policy_rules/{id}", h.page(h.ipRule))
	h.handle(m, "POST "+Prefix+"ip_policy_rules/{id}/edit", h.form(h.editIPRule))
	h.handle(m, "POST "+Prefix+"ip_policy_rules/{id}/delete", h.form(h.deleter("IP policy rule", Prefix+"ip_policy_rules", h.svc.DeleteIPPolicyRule)))
	h.handle(m, "GET "+Prefix+"ip_restrictions", h.page(h.ipRestrictions))
	h.handle(m, "POST "+Prefix+"ip_restrictions", h.form(h.createIPRestriction))
	h.handle(m, "GET "+Prefix+"ip_restrictions/{id}", h.page(h.ipRestriction))
	h.handle(m, "POST "+Prefix+"ip_restrictions/{id}/edit", h.form(h.editIPRestriction))
	h.handle(m, "POST "+Prefix+"ip_restrictions/{id}/delete", h.form(h.deleter("IP restriction", Prefix+"ip_restrictions", h.svc.DeleteIPRestriction)))
}
