package console

import (
	"net/http"
	"strings"

	"github.com/edgeplane/edgeplane/events"
)

// Event destinations: where the account's events are sent (signed
// webhooks), with the state of delivery to each, as the Service shows it
// on the destination (its delivery field).

type destinationsData struct {
	nav
	List   listState
	Items  []events.Destination
	Form   destinationForm
	Errors map[string][]string
}

type destinationForm struct {
	URL, Headers, Description, Metadata string
}

func (h *Handler) eventDestinations(w http.ResponseWriter, r *http.Request, v *visit) error {
	return h.showDestinations(w, r, v, http.StatusOK, destinationForm{}, nil)
}

func (h *Handler) showDestinations(w http.ResponseWriter, r *http.Request, v *visit, status int, form destinationForm, errs map[string][]string) error {
	items, st, code, err := listPage(r, v, Prefix+"event_destinations", h.svc.ListEventDestinations)
	if err != nil {
		return err
	}
	st.Example = `obj.delivery.state != "ok"`
	h.render(w, max(status, code), "event_destinations", &destinationsData{nav: h.nav(v, "event_destinations"), List: st, Items: items, Form: form, Errors: errs})
	return nil
}

// headerLines parses headers typed one "Name: value" per line. A line
// without a colon is kept whole as a name with an empty value, for the
// API to refuse by name.
func headerLines(l *lines) map[string]string {
	if len(l.items) == 0 {
		return nil
	}
	out := make(map[string]string, len(l.items))
	for _, line := range l.items {
		name, value, _ := strings.Cut(line, ":")
		out[strings.TrimSpace(name)] = strings.TrimSpace(value)
	}
	return out
}

var destinationFields = map[string]*lines{"target": nil, "target.http": nil, "target.http.url": nil, "target.http.headers": nil, "description": nil, "metadata": nil, "format": nil}

func (h *Handler) createEventDestination(w http.ResponseWriter, r *http.Request, v *visit) error {
	f := r.PostForm
	form := destinationForm{URL: strings.TrimSpace(f.Get("url")), Headers: f.Get("headers"), Description: f.Get("description"), Metadata: f.Get("metadata")}
	params := events.CreateDestinationParams{Description: form.Description, Metadata: form.Metadata,
		Target: &events.TargetParams{HTTP: &events.HTTPTargetParams{URL: form.URL, Headers: headerLines(splitLines(form.Headers))}}}
	d, err := h.svc.CreateEventDestination(r.Context(), v.p, params)
	if err != nil {
		return formFailure(err, destinationFields, func(status int, errs map[string][]string) error {
			return h.showDestinations(w, r, v, status, form, errs)
		})
	}
	if d.Target.HTTP != nil && d.Target.HTTP.Secret != nil {
		h.sessions.setToken(v.cookie, v.s, d.ID, *d.Target.HTTP.Secret)
	}
	http.Redirect(w, r, Prefix+"event_destinations/"+d.ID, http.StatusSeeOther)
	return nil
}

type destinationData struct {
	nav
	Destination *events.Destination
	Secret      string          // shown once: right after creation
	Edit        destinationEdit // the edit form
}

func (h *Handler) eventDestination(w http.ResponseWriter, r *http.Request, v *visit) error {
	d, err := h.svc.GetEventDestination(r.Context(), v.p, r.PathValue("id"))
	if err != nil {
		return err
	}
	data := &destinationData{nav: h.nav(v, "event_destinations"), Destination: d, Edit: storedDestinationEdit(d)}
	if secret, ok := h.sessions.takeToken(v.cookie, v.s, d.ID); ok {
		data.Secret = secret
	}
	h.render(w, http.StatusOK, "event_destination", data)
	return nil
}

// destinationRoutes registers the routes of the event destination pages.
func (h *Handler) destinationRoutes(m *http.ServeMux) {
	h.handle(m, "GET "+Prefix+"event_destinations", h.page(h.eventDestinations))
	h.handle(m, "POST "+Prefix+"event_destinations", h.form(h.createEventDestination))
	h.handle(m, "GET "+Prefix+"event_destinations/{id}", h.page(h.eventDestination))
	h.handle(m, "POST "+Prefix+"event_destinations/{id}/edit", h.form(h.editEventDestination))
	h.handle(m, "POST "+Prefix+"event_destinations/{id}/delete", h.form(h.deleter("event destination", Prefix+"event_destinations", h.svc.DeleteEventDestination)))
}
