package console

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/edges"
)

// Edges (HTTPS, TLS and TCP) and HTTPS routes: lists, create and delete,
// and the traffic-policy editor of an HTTPS route and of a TLS edge.

// edgeView is what the edge pages show of an edge of any type.
type edgeView struct {
	ID, Description, Metadata string
	CreatedAt                 time.Time
	Hostports                 []string
	Modules                   []string             // the names of the modules set
	TrafficPolicy             *edges.TrafficPolicy // TLS edges only
	Backend                   *edges.Backend       // TLS and TCP edges only
	IPRestriction             *edges.IPRestriction // TLS and TCP edges only
}

// edgeKind is one type of edge, as its pages need it.
type edgeKind struct {
	Name   string // https, tls or tcp: the edges' path below /console/edges/
	Title  string // "HTTPS edges"
	Port   string // the hostports' port rule, for the form's hint
	Policy bool   // the edge has a traffic policy module
	list   func(ctx context.Context, p edgeplane.Principal, opts edgeplane.ListOptions) (*edgeplane.Page[edgeView], error)
	get    func(ctx context.Context, p edgeplane.Principal, id string) (*edgeView, error)
	create func(ctx context.Context, p edgeplane.Principal, description, metadata string, hostports []string) (string, error)
	del    func(ctx context.Context, p edgeplane.Principal, id string) error
	// update changes the fields given (nil: unchanged).
	update func(ctx context.Context, p edgeplane.Principal, id string, description, metadata *string, hostports *[]string) error
}

// convertList adapts a list method of the Service to one of edgeViews.
func convertList[T any](list listFunc[T], view func(*T) edgeView) listFunc[edgeView] {
	return func(ctx context.Context, p edgeplane.Principal, opts edgeplane.ListOptions) (*edgeplane.Page[edgeView], error) {
		page, err := list(ctx, p, opts)
		if err != nil {
			return nil, err
		}
		out := &edgeplane.Page[edgeView]{URI: page.URI, NextPageURI: page.NextPageURI, NextBeforeID: page.NextBeforeID, Items: make([]edgeView, len(page.Items))}
		for i := range page.Items {
			out.Items[i] = view(&page.Items[i])
		}
		return out, nil
	}
}

// convertGet adapts a get method of the Service to one of an edgeView.
func convertGet[T any](get func(context.Context, edgeplane.Principal, string) (*T, error), view func(*T) edgeView) func(context.Context, edgeplane.Principal, string) (*edgeView, error) {
	return func(ctx context.Context, p edgeplane.Principal, id string) (*edgeView, error) {
		e, err := get(ctx, p, id)
		if err != nil {
			return nil, err
		}
		ev := view(e)
		return &ev, nil
	}
}

func httpsEdgeView(e *edges.HTTPSEdge) edgeView {
	return edgeView{ID: e.ID, Description: e.Description, Metadata: e.Metadata, CreatedAt: e.CreatedAt, Hostports: e.Hostports}
}

func tlsEdgeView(e *edges.TLSEdge) edgeView {
	v := edgeView{ID: e.ID, Description: e.Description, Metadata: e.Metadata, CreatedAt: e.CreatedAt, Hostports: e.Hostports, TrafficPolicy: e.TrafficPolicy, Backend: e.Backend, IPRestriction: e.IPRestriction}
	if e.IPRestriction != nil {
		v.Modules = append(v.Modules, edges.ModuleIPRestriction)
	}
	if e.TrafficPolicy != nil {
		v.Modules = append(v.Modules, edges.ModuleTrafficPolicy)
	}
	if e.TLSTermination != nil {
		v.Modules = append(v.Modules, edges.ModuleTLSTermination)
	}
	if e.Backend != nil {
		v.Modules = append(v.Modules, edges.ModuleBackend)
	}
	return v
}

func tcpEdgeView(e *edges.TCPEdge) edgeView {
	v := edgeView{ID: e.ID, Description: e.Description, Metadata: e.Metadata, CreatedAt: e.CreatedAt, Hostports: e.Hostports, Backend: e.Backend, IPRestriction: e.IPRestriction}
	if e.IPRestriction != nil {
		v.Modules = append(v.Modules, edges.ModuleIPRestriction)
	}
	if e.Backend != nil {
		v.Modules = append(v.Modules, edges.ModuleBackend)
	}
	return v
}

// edgeKinds returns the three kinds of edges, over svc.
func edgeKinds(svc *edgeplane.Service) map[string]*edgeKind {
	ks := map[string]*edgeKind{
		"https": {Name: "https", Title: "HTTPS edges", Port: "port 443",
			list: convertList(svc.ListHTTPSEdges, httpsEdgeView), get: convertGet(svc.GetHTTPSEdge, httpsEdgeView), del: svc.DeleteHTTPSEdge,
			create: func(ctx context.Context, p edgeplane.Principal, d, m string, hp []string) (string, error) {
				e, err := svc.CreateHTTPSEdge(ctx, p, edges.CreateEdgeParams{Description: d, Metadata: m, Hostports: hp})
				if err != nil {
					return "", err
				}
				return e.ID, nil
			}},
		"tls": {Name: "tls", Title: "TLS edges", Port: "port 443", Policy: true,
			list: convertList(svc.ListTLSEdges, tlsEdgeView), get: convertGet(svc.GetTLSEdge, tlsEdgeView), del: svc.DeleteTLSEdge,
			create: func(ctx context.Context, p edgeplane.Principal, d, m string, hp []string) (string, error) {
				e, err := svc.CreateTLSEdge(ctx, p, edges.CreateTLSEdgeParams{Description: d, Metadata: m, Hostports: hp})
				if err != nil {
					return "", err
				}
				return e.ID, nil
			}},
		"tcp": {Name: "tcp", Title: "TCP edges", Port: "any port from 1 to 65535",
			list: convertList(svc.ListTCPEdges, tcpEdgeView), get: convertGet(svc.GetTCPEdge, tcpEdgeView), del: svc.DeleteTCPEdge,
			create: func(ctx context.Context, p edgeplane.Principal, d, m string, hp []string) (string, error) {
				e, err := svc.CreateTCPEdge(ctx, p, edges.CreateTCPEdgeParams{Description: d, Metadata: m, Hostports: hp})
				if err != nil {
					return "", err
				}
				return e.ID, nil
			}},
	}
	for name, update := range edgeUpdates(svc) {
		ks[name].update = update
	}
	return ks
}

type edgesData struct {
	nav
	Kind   *edgeKind
	List   listState
	Items  []edgeView
	Form   edgeForm
	Errors map[string][]string
}

type edgeForm struct {
	Description, Metadata, Hostports string
}

// edgeFields are the fields of an edge's form, its hostports typed one
// per line.
func edgeFields(hostports *lines) map[string]*lines {
	return map[string]*lines{"description": nil, "metadata": nil, "hostports": hostports}
}

func (h *Handler) edges(k *edgeKind) pageFunc {
	return func(w http.ResponseWriter, r *http.Request, v *visit) error {
		return h.showEdges(w, r, v, k, http.StatusOK, edgeForm{}, nil)
	}
}

func (h *Handler) showEdges(w http.ResponseWriter, r *http.Request, v *visit, k *edgeKind, status int, form edgeForm, errs map[string][]string) error {
	items, st, code, err := listPage(r, v, Prefix+"edges/"+k.Name, k.list)
	if err != nil {
		return err
	}
	st.Example = `obj.description.contains("web")`
	h.render(w, max(status, code), "edges", &edgesData{nav: h.nav(v, "edges"), Kind: k, List: st, Items: items, Form: form, Errors: errs})
	return nil
}

func (h *Handler) createEdge(k *edgeKind) pageFunc {
	return func(w http.ResponseWriter, r *http.Request, v *visit) error {
		form := edgeForm{Description: r.PostForm.Get("description"), Metadata: r.PostForm.Get("metadata"), Hostports: r.PostForm.Get("hostports")}
		hp := splitLines(form.Hostports)
		id, err := k.create(r.Context(), v.p, form.Description, form.Metadata, hp.items)
		if err != nil {
			return formFailure(err, edgeFields(hp), func(status int, errs map[string][]string) error {
				return h.showEdges(w, r, v, k, status, form, errs)
			})
		}
		h.sessions.setNotice(v.s, "Created "+k.Title[:len(k.Title)-1]+" "+id+".")
		http.Redirect(w, r, Prefix+"edges/"+k.Name+"/"+id, http.StatusSeeOther)
		return nil
	}
}

// edgeData is an edge's page: the edge, and for an HTTPS edge its
// routes and the route form; for a TLS edge its traffic-policy editor.
type edgeData struct {
	nav
	Kind   *edgeKind
	Edge   *edgeView
	Editor *policyEditor // TLS edges
	// Backend and IPRestriction are the modules' forms (TLS and TCP
	// edges).
	Backend       *backendForm
	IPRestriction *ipModuleForm
	// HTTPS edges.
	List   listState
	Routes []edges.HTTPSRoute
	Form   routeForm
	Errors map[string][]string
	// Edit is the edge's edit form.
	Edit edgeEdit
}

type routeForm struct {
	MatchType, Match, Description, Metadata string
}

// edgeForms are the forms of an edge's page as the user left them after
// a refused post, and the page's status (0: 200); a nil form is shown as
// stored (the route form: a new path-prefix route on /).
type edgeForms struct {
	status        int
	editor        *policyEditor
	route         *routeForm
	routeErrs     map[string][]string
	edit          *edgeEdit
	backend       *backendForm
	ipRestriction *ipModuleForm
}

func (h *Handler) edge(k *edgeKind) pageFunc {
	return func(w http.ResponseWriter, r *http.Request, v *visit) error {
		return h.showEdge(w, r, v, k, edgeForms{})
	}
}

// showEdge renders an edge's page with its forms as f says.
func (h *Handler) showEdge(w http.ResponseWriter, r *http.Request, v *visit, k *edgeKind, f edgeForms) error {
	id := r.PathValue("id")
	e, err := k.get(r.Context(), v.p, id)
	if err != nil {
		return err
	}
	status := cmp.Or(f.status, http.StatusOK)
	edit := f.edit
	if edit == nil {
		edit = &edgeEdit{editState: editState{Description: e.Description, Metadata: e.Metadata}, Hostports: strings.Join(e.Hostports, "\n")}
	}
	form := routeForm{MatchType: edges.MatchPathPrefix, Match: "/"}
	if f.route != nil {
		form = *f.route
	}
	d := &edgeData{nav: h.nav(v, "edges"), Kind: k, Edge: e, Form: form, Errors: f.routeErrs, Edit: *edit}
	if k.Name != "https" {
		b := storedBackend(Prefix+"edges/"+k.Name+"/"+id+"/backend", v.csrf, e.Backend)
		if f.backend != nil {
			b.BackendID, b.Errors = f.backend.BackendID, f.backend.Errors
		}
		d.Backend = &b
		ip := storedIPModule(Prefix+"edges/"+k.Name+"/"+id+"/ip_restriction", v.csrf, e.IPRestriction)
		if f.ipRestriction != nil {
			ip.Policies, ip.Enabled, ip.Errors = f.ipRestriction.Policies, f.ipRestriction.Enabled, f.ipRestriction.Errors
		}
		d.IPRestriction = &ip
	}
	if k.Policy {
		editor := f.editor
		if editor == nil {
			editor = storedEditor(e.TrafficPolicy)
		}
		editor.Action, editor.CSRF = Prefix+"edges/tls/"+id+"/traffic_policy", v.csrf
		d.Editor = editor
	}
	if k.Name == "https" {
		routes, st, code, err := listPage(r, v, Prefix+"edges/https/"+id, func(ctx context.Context, p edgeplane.Principal, opts edgeplane.ListOptions) (*edgeplane.Page[edges.HTTPSRoute], error) {
			return h.svc.ListHTTPSEdgeRoutes(ctx, p, id, opts)
		})
		if err != nil {
			return err
		}
		st.Example = `obj.match.startsWith("/api")`
		d.List, d.Routes, status = st, routes, max(status, code)
	}
	h.render(w, status, "edge", d)
	return nil
}

// HTTPS routes.

var routeFields = map[string]*lines{"match_type": nil, "match": nil, "description": nil, "metadata": nil}

func (h *Handler) createRoute(k *edgeKind) pageFunc {
	return func(w http.ResponseWriter, r *http.Request, v *visit) error {
		f := r.PostForm
		form := routeForm{MatchType: f.Get("match_type"), Match: f.Get("match"), Description: f.Get("description"), Metadata: f.Get("metadata")}
		edgeID := r.PathValue("id")
		rt, err := h.svc.CreateHTTPSEdgeRoute(r.Context(), v.p, edgeID, edges.CreateRouteParams{MatchType: form.MatchType, Match: form.Match, Description: form.Description, Metadata: form.Metadata})
		if err != nil {
			if apierr.CodeOf(err) == apierr.NotFound {
				return err
			}
			return formFailure(err, routeFields, func(status int, errs map[string][]string) error {
				return h.showEdge(w, r, v, k, edgeForms{status: status, route: &form, routeErrs: errs})
			})
		}
		h.sessions.setNotice(v.s, "Created route "+rt.ID+".")
		http.Redirect(w, r, Prefix+"edges/https/"+edgeID+"/routes/"+rt.ID, http.StatusSeeOther)
		return nil
	}
}

type routeData struct {
	nav
	Route   *edges.HTTPSRoute
	Editor  *policyEditor
	Edit    routeEdit // the edit form
	Backend backendForm
}

func (h *Handler) route(w http.ResponseWriter, r *http.Request, v *visit) error {
	return h.showRoute(w, r, v, http.StatusOK, nil)
}

// showRoute renders a route's page; editor is the traffic-policy editor
// as the user left it (nil: as stored), bk the backend form as the user
// left it (none: as stored).
func (h *Handler) showRoute(w http.ResponseWriter, r *http.Request, v *visit, status int, editor *policyEditor, bk ...backendForm) error {
	edgeID, id := r.PathValue("edge_id"), r.PathValue("id")
	rt, err := h.svc.GetHTTPSEdgeRoute(r.Context(), v.p, edgeID, id)
	if err != nil {
		return err
	}
	return h.renderRoute(w, v, status, rt, editor, routeEdit{editState: editState{Description: rt.Description, Metadata: rt.Metadata}, MatchType: rt.MatchType, Match: rt.Match}, bk...)
}

// renderRoute renders the page of route rt, with its traffic-policy
// editor (nil: the module as stored), edit form, and backend form (none:
// as stored).
func (h *Handler) renderRoute(w http.ResponseWriter, v *visit, status int, rt *edges.HTTPSRoute, editor *policyEditor, edit routeEdit, bk ...backendForm) error {
	if editor == nil {
		editor = storedEditor(rt.TrafficPolicy)
	}
	editor.Action, editor.CSRF = Prefix+"edges/https/"+rt.EdgeID+"/routes/"+rt.ID+"/traffic_policy", v.csrf
	b := storedBackend(Prefix+"edges/https/"+rt.EdgeID+"/routes/"+rt.ID+"/backend", v.csrf, rt.Backend)
	if len(bk) > 0 {
		b.BackendID, b.Errors = bk[0].BackendID, bk[0].Errors
	}
	h.render(w, status, "route", &routeData{nav: h.nav(v, "edges"), Route: rt, Editor: editor, Edit: edit, Backend: b})
	return nil
}

func (h *Handler) deleteRoute(w http.ResponseWriter, r *http.Request, v *visit) error {
	edgeID, id := r.PathValue("edge_id"), r.PathValue("id")
	if err := h.svc.DeleteHTTPSEdgeRoute(r.Context(), v.p, edgeID, id); err != nil {
		return err
	}
	h.sessions.setNotice(v.s, "Deleted route "+id+".")
	http.Redirect(w, r, Prefix+"edges/https/"+edgeID, http.StatusSeeOther)
	return nil
}

// The traffic-policy editor.

// policyEditor is the traffic-policy editor of a route or TLS edge: the
// document as stored (indented) or as the user typed it, and the
// engine's errors at their line.
type policyEditor struct {
	Action  string // where the form is sent
	CSRF    string // the session's form token
	Set     bool   // the module is set (stored)
	Enabled bool
	Value   string
	Errors  map[string][]string // "value": the document's problems, each at its line; "": others
}

// storedEditor is the editor of the module m as stored (nil: not set),
// its document indented for reading.
func storedEditor(m *edges.TrafficPolicy) *policyEditor {
	if m == nil {
		return &policyEditor{Enabled: true}
	}
	var b bytes.Buffer
	value := m.Value
	if json.Indent(&b, []byte(m.Value), "", "  ") == nil {
		value = b.String()
	}
	return &policyEditor{Set: true, Enabled: m.Enabled, Value: value}
}

// policyErrors groups the engine's refusal of the document text by
// field: a violation of value (the document) or of a path in it
// (value.on_http_request[0].actions[0]) is shown at the line of that
// path in text, as "line 4 (on_http_request[0].actions[0]): reason";
// a syntax error at its line; anything else under "".
func policyErrors(err error, text string) map[string][]string {
	errs := make(map[string][]string)
	vs := apierr.ViolationsOf(err)
	if len(vs) == 0 {
		errs[""] = append(errs[""], err.Error())
		return errs
	}
	var lines map[string]int
	errLine := 0
	for _, v := range vs {
		if v.Field != "value" && !strings.HasPrefix(v.Field, "value.") && !strings.HasPrefix(v.Field, "value[") {
			errs[""] = append(errs[""], v.String())
			continue
		}
		if lines == nil {
			lines, errLine = jsonLines(text)
		}
		path := strings.TrimPrefix(strings.TrimPrefix(v.Field, "value"), ".")
		var msg string
		switch {
		case path == "" && errLine > 0:
			msg = fmt.Sprintf("line %d: %s", errLine, v.Reason)
		case path == "":
			msg = v.Reason
		default:
			if n := lineOf(lines, path); n > 0 {
				msg = fmt.Sprintf("line %d (%s): %s", n, path, v.Reason)
			} else {
				msg = path + ": " + v.Reason
			}
		}
		errs["value"] = append(errs["value"], msg)
	}
	return errs
}

// maxPolicyFormBytes bounds the traffic-policy form's body: the largest
// document the API takes, URL-encoded at its worst (3 bytes a byte),
// and the other fields.
const maxPolicyFormBytes = 3*edges.MaxTrafficPolicyBytes + 4<<10

// savePolicy is the handler of a traffic-policy editor's form: it
// replaces the module through replace, the Service's Replace...
// TrafficPolicy method, with the document as typed. When the engine
// refuses it, nothing is saved and the page shows the document as typed
// with the errors at their lines (show). After a save, the browser goes
// back to the page (back) with a notice.
func (h *Handler) savePolicy(replace func(r *http.Request, v *visit, params edges.TrafficPolicyParams) error,
	show func(w http.ResponseWriter, r *http.Request, v *visit, status int, editor *policyEditor) error, back func(r *http.Request) string) pageFunc {
	return func(w http.ResponseWriter, r *http.Request, v *visit) error {
		value := strings.ReplaceAll(r.PostForm.Get("value"), "\r\n", "\n")
		enabled := r.PostForm.Get("enabled") == "on"
		err := replace(r, v, edges.TrafficPolicyParams{Enabled: &enabled, Value: value})
		if err != nil {
			switch apierr.CodeOf(err) {
			case apierr.InvalidArgument, apierr.Conflict, apierr.FailedPrecondition:
				ed := &policyEditor{Enabled: enabled, Value: value, Errors: policyErrors(err, value)}
				return show(w, r, v, http.StatusBadRequest, ed)
			}
			return err
		}
		h.sessions.setNotice(v.s, "Saved the traffic policy.")
		http.Redirect(w, r, back(r), http.StatusSeeOther)
		return nil
	}
}

// deletePolicy is the handler of the form that removes a traffic policy
// module with del.
func (h *Handler) deletePolicy(del func(r *http.Request, v *visit) error, back func(r *http.Request) string) pageFunc {
	return func(w http.ResponseWriter, r *http.Request, v *visit) error {
		if err := del(r, v); err != nil {
			return err
		}
		h.sessions.setNotice(v.s, "Removed the traffic policy.")
		http.Redirect(w, r, back(r), http.StatusSeeOther)
		return nil
	}
}

// edgeRoutes registers the routes of the edge pages.
func (h *Handler) edgeRoutes(m *http.ServeMux) {
	kinds := edgeKinds(h.svc)
	for _, name := range []string{"https", "tls", "tcp"} {
		k := kinds[name]
		base := Prefix + "edges/" + name
		h.handle(m, "GET "+base, h.page(h.edges(k)))
		h.handle(m, "POST "+base, h.form(h.createEdge(k)))
		h.handle(m, "GET "+base+"/{id}", h.page(h.edge(k)))
		h.handle(m, "POST "+base+"/{id}/edit", h.form(h.editEdge(k)))
		h.handle(m, "POST "+base+"/{id}/delete", h.form(h.deleter(strings.ToUpper(name)+" edge", base, k.del)))
	}
	h.handle(m, "GET "+Prefix+"edges", http.RedirectHandler(Prefix+"edges/https", http.StatusSeeOther))

	// HTTPS routes.
	https := kinds["https"]
	h.handle(m, "POST "+Prefix+"edges/https/{id}/routes", h.form(h.createRoute(https)))
	route := Prefix + "edges/https/{edge_id}/routes/{id}"
	routeBack := func(r *http.Request) string {
		return Prefix + "edges/https/" + r.PathValue("edge_id") + "/routes/" + r.PathValue("id")
	}
	h.handle(m, "GET "+route, h.page(h.route))
	h.handle(m, "POST "+route+"/edit", h.form(h.editRoute))
	h.handle(m, "POST "+route+"/delete", h.form(h.deleteRoute))
	h.handle(m, "POST "+route+"/traffic_policy", h.formUpTo(maxPolicyFormBytes, h.savePolicy(
		func(r *http.Request, v *visit, params edges.TrafficPolicyParams) error {
			_, err := h.svc.ReplaceHTTPSRouteTrafficPolicy(r.Context(), v.p, r.PathValue("edge_id"), r.PathValue("id"), params)
			return err
		}, func(w http.ResponseWriter, r *http.Request, v *visit, status int, editor *policyEditor) error {
			return h.showRoute(w, r, v, status, editor)
		}, routeBack)))
	h.handle(m, "POST "+route+"/traffic_policy/delete", h.form(h.deletePolicy(func(r *http.Request, v *visit) error {
		return h.svc.DeleteHTTPSRouteTrafficPolicy(r.Context(), v.p, r.PathValue("edge_id"), r.PathValue("id"))
	}, routeBack)))

	// The TLS edges' traffic policy.
	tls := kinds["tls"]
	tlsBack := func(r *http.Request) string { return Prefix + "edges/tls/" + r.PathValue("id") }
	h.handle(m, "POST "+Prefix+"edges/tls/{id}/traffic_policy", h.formUpTo(maxPolicyFormBytes, h.savePolicy(
		func(r *http.Request, v *visit, params edges.TrafficPolicyParams) error {
			_, err := h.svc.ReplaceTLSEdgeTrafficPolicy(r.Context(), v.p, r.PathValue("id"), params)
			return err
		}, func(w http.ResponseWriter, r *http.Request, v *visit, status int, editor *policyEditor) error {
			return h.showEdge(w, r, v, tls, edgeForms{status: status, editor: editor})
		}, tlsBack)))
	h.handle(m, "POST "+Prefix+"edges/tls/{id}/traffic_policy/delete", h.form(h.deletePolicy(func(r *http.Request, v *visit) error {
		return h.svc.DeleteTLSEdgeTrafficPolicy(r.Context(), v.p, r.PathValue("id"))
	}, tlsBack)))
}
