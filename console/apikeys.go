package console

import (
	"net/http"
	"strings"

	"github.com/edgeplane/edgeplane/identity"
)

// API keys: the signed-in subject's own, and, for an admin, every key of
// the account, as the Service's API-key methods allow (a key that is not
// the caller's to manage is not found, as in the API).

type apiKeysData struct {
	nav
	Admin     bool
	SubjectID string
	List      listState
	Items     []identity.APIKey
	Form      apiKeyForm
	Errors    map[string][]string
}

type apiKeyForm struct {
	Description, Metadata, OwnerID string
}

var apiKeyFields = map[string]*lines{"description": nil, "metadata": nil, "owner_id": nil}

func (h *Handler) apiKeys(w http.ResponseWriter, r *http.Request, v *visit) error {
	return h.showAPIKeys(w, r, v, http.StatusOK, apiKeyForm{}, nil)
}

func (h *Handler) showAPIKeys(w http.ResponseWriter, r *http.Request, v *visit, status int, form apiKeyForm, errs map[string][]string) error {
	items, st, code, err := listPage(r, v, Prefix+"api_keys", h.svc.ListAPIKeys)
	if err != nil {
		return err
	}
	st.Example = `obj.owner_id == "` + v.p.SubjectID + `"`
	h.render(w, max(status, code), "api_keys", &apiKeysData{nav: h.nav(v, "api_keys"), Admin: v.p.Admin, SubjectID: v.p.SubjectID,
		List: st, Items: items, Form: form, Errors: errs})
	return nil
}

// createAPIKey creates a key from the form, its owner the signed-in
// subject unless an admin names another; the token is shown once, on
// the key's page.
func (h *Handler) createAPIKey(w http.ResponseWriter, r *http.Request, v *visit) error {
	f := r.PostForm
	form := apiKeyForm{Description: f.Get("description"), Metadata: f.Get("metadata"), OwnerID: strings.TrimSpace(f.Get("owner_id"))}
	k, err := h.svc.CreateAPIKey(r.Context(), v.p, identity.CreateAPIKeyParams{Description: form.Description, Metadata: form.Metadata, OwnerID: form.OwnerID})
	if err != nil {
		return formFailure(err, apiKeyFields, func(status int, errs map[string][]string) error {
			return h.showAPIKeys(w, r, v, status, form, errs)
		})
	}
	h.sessions.setToken(v.cookie, v.s, k.ID, *k.Token)
	http.Redirect(w, r, Prefix+"api_keys/"+k.ID, http.StatusSeeOther)
	return nil
}

type apiKeyData struct {
	nav
	Key   *identity.APIKey
	Own   bool
	Token string    // shown once: right after creation
	Edit  editState // the edit form
}

func (h *Handler) apiKey(w http.ResponseWriter, r *http.Request, v *visit) error {
	k, err := h.svc.GetAPIKey(r.Context(), v.p, r.PathValue("id"))
	if err != nil {
		return err
	}
	d := &apiKeyData{nav: h.nav(v, "api_keys"), Key: k, Own: k.OwnerID == v.p.SubjectID, Edit: editState{Description: k.Description, Metadata: k.Metadata}}
	if token, ok := h.sessions.takeToken(v.cookie, v.s, k.ID); ok {
		d.Token = token
	}
	h.render(w, http.StatusOK, "api_key", d)
	return nil
}

// apiKeyRoutes registers the routes of the API key pages.
func (h *Handler) apiKeyRoutes(m *http.ServeMux) {
	h.handle(m, "GET "+Prefix+"api_keys", h.page(h.apiKeys))
	h.handle(m, "POST "+Prefix+"api_keys", h.form(h.createAPIKey))
	h.handle(m, "GET "+Prefix+"api_keys/{id}", h.page(h.apiKey))
	h.handle(m, "POST "+Prefix+"api_keys/{id}/edit", h.form(h.editAPIKey))
	h.handle(m, "POST "+Prefix+"api_keys/{id}/delete", h.form(h.deleter("API key", Prefix+"api_keys", h.svc.DeleteAPIKey)))
}
