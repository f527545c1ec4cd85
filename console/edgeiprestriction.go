package console

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/internal/records"
)

// The IP restriction module of TLS and TCP edges: the IP policies (made
// on the IP policies page) whose rules decide which clients the edge
// serves.

// ipModuleForm is the form of an edge's IP restriction module.
type ipModuleForm struct {
	Action   string // where the form posts (…/ip_restriction); …/ip_restriction/delete removes it
	CSRF     string
	Policies string // the IP policy IDs, one per line
	Enabled  bool
	Set      bool // an IP restriction module is set
	Errors   map[string][]string
}

// storedIPModule is the form of module m as stored: a new module is
// enabled.
func storedIPModule(action, csrf string, m *edges.IPRestriction) ipModuleForm {
	f := ipModuleForm{Action: action, CSRF: csrf, Enabled: true}
	if m != nil {
		f.Policies, f.Enabled, f.Set = strings.Join(records.RefIDs(m.IPPolicies), "\n"), m.Enabled, true
	}
	return f
}

// ipModule is the IP restriction module of one kind of edge.
type ipModule struct {
	kind    *edgeKind
	replace func(context.Context, edgeplane.Principal, string, edges.IPRestrictionParams) (*edges.IPRestriction, error)
	del     func(context.Context, edgeplane.Principal, string) error
}

func (m ipModule) page(r *http.Request) string {
	return Prefix + "edges/" + m.kind.Name + "/" + r.PathValue("id")
}

func (h *Handler) setIPModule(m ipModule) pageFunc {
	return func(w http.ResponseWriter, r *http.Request, v *visit) error {
		form := ipModuleForm{Policies: r.PostForm.Get("ip_policy_ids"), Enabled: r.PostForm.Get("enabled") != ""}
		policies := splitLines(form.Policies)
		enabled := form.Enabled
		if _, err := m.replace(r.Context(), v.p, r.PathValue("id"), edges.IPRestrictionParams{Enabled: &enabled, IPPolicyIDs: policies.items}); err != nil {
			if apierr.CodeOf(err) == apierr.NotFound && len(apierr.ViolationsOf(err)) == 0 {
				return err // the edge is gone, or is not the account's
			}
			return formFailure(err, map[string]*lines{"ip_policy_ids": policies, "enabled": nil}, func(status int, errs map[string][]string) error {
				form.Errors = errs
				return h.showEdge(w, r, v, m.kind, edgeForms{status: status, ipRestriction: &form})
			})
		}
		state := "enabled"
		if !enabled {
			state = "set, disabled"
		}
		h.sessions.setNotice(v.s, "IP restriction "+state+": "+strconv.Itoa(len(policies.items))+" IP "+plural(len(policies.items), "policy", "policies")+".")
		http.Redirect(w, r, m.page(r), http.StatusSeeOther)
		return nil
	}
}

func (h *Handler) removeIPModule(m ipModule) pageFunc {
	return func(w http.ResponseWriter, r *http.Request, v *visit) error {
		if err := m.del(r.Context(), v.p, r.PathValue("id")); err != nil {
			return err
		}
		h.sessions.setNotice(v.s, "IP restriction removed: the edge no longer checks clients' addresses against IP policies.")
		http.Redirect(w, r, m.page(r), http.StatusSeeOther)
		return nil
	}
}

// ipModuleRoutes registers the IP restriction module's forms of TLS and
// TCP edges.
func (h *Handler) ipModuleRoutes(m *http.ServeMux) {
	ks := edgeKinds(h.svc)
	for _, mod := range []ipModule{
		{ks["tls"], h.svc.ReplaceTLSEdgeIPRestriction, h.svc.DeleteTLSEdgeIPRestriction},
		{ks["tcp"], h.svc.ReplaceTCPEdgeIPRestriction, h.svc.DeleteTCPEdgeIPRestriction},
	} {
		path := "POST " + Prefix + "edges/" + mod.kind.Name + "/{id}/ip_restriction"
		h.handle(m, path, h.form(h.setIPModule(mod)))
		h.handle(m, path+"/delete", h.form(h.removeIPModule(mod)))
	}
}

// plural returns one when n is 1, else many.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
