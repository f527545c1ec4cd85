package console

import (
	"net/http"
	"strings"

	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/internal/records"
)

// Event subscriptions: which events (sources, one event type each) go
// to which event destinations. List, create, edit (description,
// metadata, destinations), add and remove sources, and delete.

type subscriptionsData struct {
	nav
	List   listState
	Items  []events.Subscription
	Form   subscriptionForm
	Errors map[string][]string
	Types  []string // the known event types, for the form's choices
}

type subscriptionForm struct {
	Sources, Destinations, Description, Metadata string
}

// subscriptionFields are the fields of the subscription forms, sources
// and destinations typed one per line.
func subscriptionFields(sources, dests *lines) map[string]*lines {
	return map[string]*lines{"sources": sources, "destination_ids": dests, "description": nil, "metadata": nil}
}

func (h *Handler) subscriptions(w http.ResponseWriter, r *http.Request, v *visit) error {
	return h.showSubscriptions(w, r, v, http.StatusOK, subscriptionForm{}, nil)
}

func (h *Handler) showSubscriptions(w http.ResponseWriter, r *http.Request, v *visit, status int, form subscriptionForm, errs map[string][]string) error {
	items, st, code, err := listPage(r, v, Prefix+"event_subscriptions", h.svc.ListEventSubscriptions)
	if err != nil {
		return err
	}
	st.Example = `obj.description.contains("ops")`
	h.render(w, max(status, code), "event_subscriptions", &subscriptionsData{nav: h.nav(v, "event_destinations"), List: st, Items: items,
		Form: form, Errors: errs, Types: h.svc.EventTypes().Types()})
	return nil
}

func (h *Handler) createSubscription(w http.ResponseWriter, r *http.Request, v *visit) error {
	f := r.PostForm
	form := subscriptionForm{Sources: f.Get("sources"), Destinations: f.Get("destination_ids"), Description: f.Get("description"), Metadata: f.Get("metadata")}
	src, dst := splitLines(form.Sources), splitLines(form.Destinations)
	params := events.CreateSubscriptionParams{Description: form.Description, Metadata: form.Metadata, DestinationIDs: dst.items}
	for _, t := range src.items {
		params.Sources = append(params.Sources, events.CreateSourceParams{Type: t})
	}
	sub, err := h.svc.CreateEventSubscription(r.Context(), v.p, params)
	if err != nil {
		return formFailure(err, subscriptionFields(src, dst), func(status int, errs map[string][]string) error {
			return h.showSubscriptions(w, r, v, status, form, errs)
		})
	}
	h.sessions.setNotice(v.s, "Created event subscription "+sub.ID+".")
	http.Redirect(w, r, Prefix+"event_subscriptions/"+sub.ID, http.StatusSeeOther)
	return nil
}

type subscriptionData struct {
	nav
	Sub    *events.Subscription
	Edit   subscriptionEdit
	Source sourceForm
	Types  []string // the known event types, for the source form's choices
}

// sourceForm is the form that adds a source (an event type).
type sourceForm struct {
	Type   string
	Errors map[string][]string
}

// subscriptionEdit is a subscription's edit form.
type subscriptionEdit struct {
	editState
	Destinations string // one ID per line
}

func storedSubscriptionEdit(s *events.Subscription) subscriptionEdit {
	return subscriptionEdit{editState: editState{Description: s.Description, Metadata: s.Metadata}, Destinations: strings.Join(records.RefIDs(s.Destinations), "\n")}
}

func (h *Handler) subscription(w http.ResponseWriter, r *http.Request, v *visit) error {
	sub, err := h.svc.GetEventSubscription(r.Context(), v.p, r.PathValue("id"))
	if err != nil {
		return err
	}
	h.render(w, http.StatusOK, "event_subscription", &subscriptionData{nav: h.nav(v, "event_destinations"), Sub: sub, Edit: storedSubscriptionEdit(sub),
		Types: h.svc.EventTypes().Types()})
	return nil
}

func (h *Handler) addSource(w http.ResponseWriter, r *http.Request, v *visit) error {
	sub, err := h.svc.GetEventSubscription(r.Context(), v.p, r.PathValue("id"))
	if err != nil {
		return err
	}
	form := sourceForm{Type: strings.TrimSpace(r.PostForm.Get("type"))}
	if _, err := h.svc.CreateEventSource(r.Context(), v.p, sub.ID, events.CreateSourceParams{Type: form.Type}); err != nil {
		return formFailure(err, map[string]*lines{"type": nil}, func(status int, errs map[string][]string) error {
			form.Errors = errs
			h.render(w, status, "event_subscription", &subscriptionData{nav: h.nav(v, "event_destinations"), Sub: sub, Edit: storedSubscriptionEdit(sub),
				Source: form, Types: h.svc.EventTypes().Types()})
			return nil
		})
	}
	h.sessions.setNotice(v.s, "Added "+form.Type+" to event subscription "+sub.ID+".")
	http.Redirect(w, r, Prefix+"event_subscriptions/"+sub.ID, http.StatusSeeOther)
	return nil
}

func (h *Handler) removeSource(w http.ResponseWriter, r *http.Request, v *visit) error {
	id, typ := r.PathValue("id"), r.PathValue("type")
	if err := h.svc.DeleteEventSource(r.Context(), v.p, id, typ); err != nil {
		return err
	}
	h.sessions.setNotice(v.s, "Removed "+typ+" from event subscription "+id+".")
	http.Redirect(w, r, Prefix+"event_subscriptions/"+id, http.StatusSeeOther)
	return nil
}

func (h *Handler) editSubscription(w http.ResponseWriter, r *http.Request, v *visit) error {
	sub, err := h.svc.GetEventSubscription(r.Context(), v.p, r.PathValue("id"))
	if err != nil {
		return err
	}
	form := subscriptionEdit{editState: readEdit(r), Destinations: r.PostForm.Get("destination_ids")}
	cur := storedSubscriptionEdit(sub)
	dst := splitLines(form.Destinations)
	params := events.UpdateSubscriptionParams{Description: changed(form.Description, sub.Description), Metadata: changed(form.Metadata, sub.Metadata),
		DestinationIDs: changedList(dst, splitLines(cur.Destinations).items)}
	if params == (events.UpdateSubscriptionParams{}) {
		return h.saved(w, r, v, false, "event subscription", sub.ID, Prefix+"event_subscriptions/"+sub.ID)
	}
	if _, err := h.svc.UpdateEventSubscription(r.Context(), v.p, sub.ID, params); err != nil {
		return formFailure(err, subscriptionFields(nil, dst), func(status int, errs map[string][]string) error {
			form.Errors = errs
			h.render(w, status, "event_subscription", &subscriptionData{nav: h.nav(v, "event_destinations"), Sub: sub, Edit: form})
			return nil
		})
	}
	return h.saved(w, r, v, true, "event subscription", sub.ID, Prefix+"event_subscriptions/"+sub.ID)
}

func (h *Handler) subscriptionRoutes(m *http.ServeMux) {
	h.handle(m, "GET "+Prefix+"event_subscriptions", h.page(h.subscriptions))
	h.handle(m, "POST "+Prefix+"event_subscriptions", h.form(h.createSubscription))
	h.handle(m, "GET "+Prefix+"event_subscriptions/{id}", h.page(h.subscription))
	h.handle(m, "POST "+Prefix+"event_subscriptions/{id}/edit", h.form(h.editSubscription))
	h.handle(m, "POST "+Prefix+"event_subscriptions/{id}/sources", h.form(h.addSource))
	h.handle(m, "POST "+Prefix+"event_subscriptions/{id}/sources/{type}/delete", h.form(h.removeSource))
	h.handle(m, "POST "+Prefix+"event_subscriptions/{id}/delete", h.form(h.deleter("event subscription", Prefix+"event_subscriptions", h.svc.DeleteEventSubscription)))
}
