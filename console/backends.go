package console

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/edges"
)

// Tunnel group backends (list, create, edit, delete) and the backend module of
// HTTPS routes, TLS edges and TCP edges (set, remove): what sends an
// edge's traffic to the agents' labeled tunnels.

type backendsData struct {
	nav
	List   listState
	Items  []backends.TunnelGroupBackend
	Form   backendCreateForm
	Errors map[string][]string
}

type backendCreateForm struct {
	Labels, Description, Metadata string
}

// parseLabels reads labels typed one key=value per line. A line without
// "=", or one that repeats an earlier line's key (which a map would
// silently drop), is a violation of labels, named by its line.
func parseLabels(text string) (map[string]string, *lines, error) {
	l := splitLines(text)
	out := make(map[string]string, len(l.items))
	first := make(map[string]int, len(l.items)) // key -> its line
	var vs apierr.Violations
	for i, item := range l.items {
		k, v, ok := strings.Cut(item, "=")
		if !ok {
			vs.Add("labels["+strconv.Itoa(i)+"]", "must be KEY=VALUE")
			continue
		}
		k = strings.TrimSpace(k)
		if at, dup := first[k]; dup {
			vs.Add("labels["+strconv.Itoa(i)+"]", "repeats the key %q of line %d; each key may be given once", k, at)
			continue
		}
		first[k] = l.at[i]
		out[k] = strings.TrimSpace(v)
	}
	return out, l, vs.Err()
}

// labelFields are the fields of the backend form, its labels typed one
// per line.
func labelFields(l *lines) map[string]*lines {
	return map[string]*lines{"labels": l, "description": nil, "metadata": nil}
}

// labelText is labels as the form shows them: key=value lines, sorted.
func labelText(labels map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		b.WriteString(k + "=" + labels[k] + "\n")
	}
	return b.String()
}

func (h *Handler) backends(w http.ResponseWriter, r *http.Request, v *visit) error {
	return h.showBackends(w, r, v, http.StatusOK, backendCreateForm{}, nil)
}

func (h *Handler) showBackends(w http.ResponseWriter, r *http.Request, v *visit, status int, form backendCreateForm, errs map[string][]string) error {
	items, st, code, err := listPage(r, v, Prefix+"backends", h.svc.ListTunnelGroupBackends)
	if err != nil {
		return err
	}
	st.Example = `obj.labels.app == "web"`
	h.render(w, max(status, code), "backends", &backendsData{nav: h.nav(v, "backends"), List: st, Items: items, Form: form, Errors: errs})
	return nil
}

func (h *Handler) createBackend(w http.ResponseWriter, r *http.Request, v *visit) error {
	form := backendCreateForm{Labels: r.PostForm.Get("labels"), Description: r.PostForm.Get("description"), Metadata: r.PostForm.Get("metadata")}
	labels, l, err := parseLabels(form.Labels)
	var b *backends.TunnelGroupBackend
	if err == nil {
		b, err = h.svc.CreateTunnelGroupBackend(r.Context(), v.p, backends.CreateParams{Labels: labels, Description: form.Description, Metadata: form.Metadata})
	}
	if err != nil {
		return formFailure(err, labelFields(l), func(status int, errs map[string][]string) error {
			return h.showBackends(w, r, v, status, form, errs)
		})
	}
	h.sessions.setNotice(v.s, "Created backend "+b.ID+": set it as the backend of an HTTPS route, a TLS edge or a TCP edge.")
	http.Redirect(w, r, Prefix+"backends/"+b.ID, http.StatusSeeOther)
	return nil
}

type backendData struct {
	nav
	Backend *backends.TunnelGroupBackend
	Edit    backendEdit
}

// backendEdit is a backend's edit form.
type backendEdit struct {
	editState
	Labels string // one key=value per line
}

func storedBackendEdit(b *backends.TunnelGroupBackend) backendEdit {
	return backendEdit{editState: editState{Description: b.Description, Metadata: b.Metadata}, Labels: labelText(b.Labels)}
}

func (h *Handler) backend(w http.ResponseWriter, r *http.Request, v *visit) error {
	b, err := h.svc.GetTunnelGroupBackend(r.Context(), v.p, r.PathValue("id"))
	if err != nil {
		return err
	}
	h.render(w, http.StatusOK, "backend", &backendData{nav: h.nav(v, "backends"), Backend: b, Edit: storedBackendEdit(b)})
	return nil
}

func (h *Handler) editBackend(w http.ResponseWriter, r *http.Request, v *visit) error {
	b, err := h.svc.GetTunnelGroupBackend(r.Context(), v.p, r.PathValue("id"))
	if err != nil {
		return err
	}
	form := backendEdit{editState: readEdit(r), Labels: r.PostForm.Get("labels")}
	params := backends.UpdateParams{Description: changed(form.Description, b.Description), Metadata: changed(form.Metadata, b.Metadata)}
	labels, l, err := parseLabels(form.Labels)
	if err == nil && !maps.Equal(labels, b.Labels) {
		params.Labels = &labels
	}
	if err == nil && params == (backends.UpdateParams{}) {
		return h.saved(w, r, v, false, "backend", b.ID, Prefix+"backends/"+b.ID)
	}
	if err == nil {
		_, err = h.svc.UpdateTunnelGroupBackend(r.Context(), v.p, b.ID, params)
	}
	if err != nil {
		return formFailure(err, labelFields(l), func(status int, errs map[string][]string) error {
			form.Errors = errs
			h.render(w, status, "backend", &backendData{nav: h.nav(v, "backends"), Backend: b, Edit: form})
			return nil
		})
	}
	return h.saved(w, r, v, true, "backend", b.ID, Prefix+"backends/"+b.ID)
}

// backendForm is the form of an edge's or route's backend module.
type backendForm struct {
	Action    string // where the form posts (…/backend); …/backend/delete removes it
	CSRF      string
	BackendID string
	Set       bool // a backend module is set
	Errors    map[string][]string
}

var backendFields = map[string]*lines{"backend_id": nil}

// storedBackend is the form of module m as stored.
func storedBackend(action, csrf string, m *edges.Backend) backendForm {
	f := backendForm{Action: action, CSRF: csrf}
	if m != nil {
		f.BackendID, f.Set = m.Backend.ID, true
	}
	return f
}

// backendModule is the backend module of one kind of edge or route, as
// its form needs it: replace and delete by the page's path values.
type backendModule struct {
	replace func(ctx context.Context, p edgeplane.Principal, r *http.Request, params edges.BackendParams) error
	del     func(ctx context.Context, p edgeplane.Principal, r *http.Request) error
	// show renders the page again with the backend form as sent.
	show func(w http.ResponseWriter, r *http.Request, v *visit, status int, form backendForm) error
	back func(r *http.Request) string // the page
}

func (h *Handler) setBackend(m backendModule) pageFunc {
	return func(w http.ResponseWriter, r *http.Request, v *visit) error {
		form := backendForm{BackendID: strings.TrimSpace(r.PostForm.Get("backend_id"))}
		if err := m.replace(r.Context(), v.p, r, edges.BackendParams{BackendID: form.BackendID}); err != nil {
			if apierr.CodeOf(err) == apierr.NotFound && len(apierr.ViolationsOf(err)) == 0 {
				return err // the edge or route is gone, or is not the account's
			}
			return formFailure(err, backendFields, func(status int, errs map[string][]string) error {
				form.Errors = errs
				return m.show(w, r, v, status, form)
			})
		}
		h.sessions.setNotice(v.s, "Backend set: "+form.BackendID+".")
		http.Redirect(w, r, m.back(r), http.StatusSeeOther)
		return nil
	}
}

func (h *Handler) removeBackend(m backendModule) pageFunc {
	return func(w http.ResponseWriter, r *http.Request, v *visit) error {
		if err := m.del(r.Context(), v.p, r); err != nil {
			return err
		}
		h.sessions.setNotice(v.s, "Backend removed: the traffic has nowhere to go until another is set.")
		http.Redirect(w, r, m.back(r), http.StatusSeeOther)
		return nil
	}
}

func (h *Handler) backendRoutes(m *http.ServeMux) {
	h.handle(m, "GET "+Prefix+"backends", h.page(h.backends))
	h.handle(m, "POST "+Prefix+"backends", h.form(h.createBackend))
	h.handle(m, "GET "+Prefix+"backends/{id}", h.page(h.backend))
	h.handle(m, "POST "+Prefix+"backends/{id}/edit", h.form(h.editBackend))
	h.handle(m, "POST "+Prefix+"backends/{id}/delete", h.form(h.deleter("backend", Prefix+"backends", h.svc.DeleteTunnelGroupBackend)))

	route := backendModule{
		replace: func(ctx context.Context, p edgeplane.Principal, r *http.Request, params edges.BackendParams) error {
			_, err := h.svc.ReplaceHTTPSRouteBackend(ctx, p, r.PathValue("edge_id"), r.PathValue("id"), params)
			return err
		},
		del: func(ctx context.Context, p edgeplane.Principal, r *http.Request) error {
			return h.svc.DeleteHTTPSRouteBackend(ctx, p, r.PathValue("edge_id"), r.PathValue("id"))
		},
		show: func(w http.ResponseWriter, r *http.Request, v *visit, status int, form backendForm) error {
			return h.showRoute(w, r, v, status, nil, form)
		},
		back: func(r *http.Request) string {
			return Prefix + "edges/https/" + r.PathValue("edge_id") + "/routes/" + r.PathValue("id")
		},
	}
	base := "POST " + Prefix + "edges/https/{edge_id}/routes/{id}/backend"
	h.handle(m, base, h.form(h.setBackend(route)))
	h.handle(m, base+"/delete", h.form(h.removeBackend(route)))

	ks := edgeKinds(h.svc)
	for _, k := range []struct {
		name    string
		replace func(context.Context, edgeplane.Principal, string, edges.BackendParams) (*edges.Backend, error)
		del     func(context.Context, edgeplane.Principal, string) error
	}{
		{"tls", h.svc.ReplaceTLSEdgeBackend, h.svc.DeleteTLSEdgeBackend},
		{"tcp", h.svc.ReplaceTCPEdgeBackend, h.svc.DeleteTCPEdgeBackend},
	} {
		kind := ks[k.name]
		mod := backendModule{
			replace: func(ctx context.Context, p edgeplane.Principal, r *http.Request, params edges.BackendParams) error {
				_, err := k.replace(ctx, p, r.PathValue("id"), params)
				return err
			},
			del: func(ctx context.Context, p edgeplane.Principal, r *http.Request) error {
				return k.del(ctx, p, r.PathValue("id"))
			},
			show: func(w http.ResponseWriter, r *http.Request, v *visit, status int, form backendForm) error {
				return h.showEdge(w, r, v, kind, edgeForms{status: status, backend: &form})
			},
			back: func(r *http.Request) string { return Prefix + "edges/" + k.name + "/" + r.PathValue("id") },
		}
		path := "POST " + Prefix + "edges/" + k.name + "/{id}/backend"
		h.handle(m, path, h.form(h.setBackend(mod)))
		h.handle(m, path+"/delete", h.form(h.removeBackend(mod)))
	}
}
