package console

import (
	"net/http"

	"github.com/edgeplane/edgeplane/identity"
)

// Bot users: list, create, a bot's page with its edit form (name,
// active), delete. A bot owns API keys and credentials (made on their
// pages with the bot's ID as owner); the Service decides who may manage
// bots, as the API's /bot_users does.

type botsData struct {
	nav
	List   listState
	Items  []identity.BotUser
	Form   botForm
	Errors map[string][]string
}

type botForm struct {
	Name   string
	Active bool
}

var botFields = map[string]*lines{"name": nil, "active": nil}

func (h *Handler) bots(w http.ResponseWriter, r *http.Request, v *visit) error {
	return h.showBots(w, r, v, http.StatusOK, botForm{Active: true}, nil)
}

func (h *Handler) showBots(w http.ResponseWriter, r *http.Request, v *visit, status int, form botForm, errs map[string][]string) error {
	items, st, code, err := listPage(r, v, Prefix+"bot_users", h.svc.ListBotUsers)
	if err != nil {
		return err
	}
	st.Example = `obj.name.startsWith("ci")`
	h.render(w, max(status, code), "bot_users", &botsData{nav: h.nav(v, "api_keys"), List: st, Items: items, Form: form, Errors: errs})
	return nil
}

func (h *Handler) createBot(w http.ResponseWriter, r *http.Request, v *visit) error {
	form := botForm{Name: r.PostForm.Get("name"), Active: r.PostForm.Get("active") != ""}
	bot, err := h.svc.CreateBotUser(r.Context(), v.p, identity.CreateBotUserParams{Name: form.Name, Active: &form.Active})
	if err != nil {
		return formFailure(err, botFields, func(status int, errs map[string][]string) error {
			return h.showBots(w, r, v, status, form, errs)
		})
	}
	h.sessions.setNotice(v.s, "Created bot user "+bot.ID+": give it an API key (API keys, owner "+bot.ID+") or a credential.")
	http.Redirect(w, r, Prefix+"bot_users/"+bot.ID, http.StatusSeeOther)
	return nil
}

type botData struct {
	nav
	Bot  *identity.BotUser
	Edit botEdit
}

type botEdit struct {
	Name   string
	Active bool
	Errors map[string][]string
}

func (h *Handler) bot(w http.ResponseWriter, r *http.Request, v *visit) error {
	bot, err := h.svc.GetBotUser(r.Context(), v.p, r.PathValue("id"))
	if err != nil {
		return err
	}
	h.render(w, http.StatusOK, "bot_user", &botData{nav: h.nav(v, "api_keys"), Bot: bot, Edit: botEdit{Name: bot.Name, Active: bot.Active}})
	return nil
}

func (h *Handler) editBot(w http.ResponseWriter, r *http.Request, v *visit) error {
	bot, err := h.svc.GetBotUser(r.Context(), v.p, r.PathValue("id"))
	if err != nil {
		return err
	}
	form := botEdit{Name: r.PostForm.Get("name"), Active: r.PostForm.Get("active") != ""}
	params := identity.UpdateBotUserParams{Name: changed(form.Name, bot.Name)}
	if form.Active != bot.Active {
		params.Active = &form.Active
	}
	if params == (identity.UpdateBotUserParams{}) {
		return h.saved(w, r, v, false, "bot user", bot.ID, Prefix+"bot_users/"+bot.ID)
	}
	if _, err := h.svc.UpdateBotUser(r.Context(), v.p, bot.ID, params); err != nil {
		return formFailure(err, botFields, func(status int, errs map[string][]string) error {
			form.Errors = errs
			h.render(w, status, "bot_user", &botData{nav: h.nav(v, "api_keys"), Bot: bot, Edit: form})
			return nil
		})
	}
	return h.saved(w, r, v, true, "bot user", bot.ID, Prefix+"bot_users/"+bot.ID)
}

func (h *Handler) botRoutes(m *http.ServeMux) {
	h.handle(m, "GET "+Prefix+"bot_users", h.page(h.bots))
	h.handle(m, "POST "+Prefix+"bot_users", h.form(h.createBot))
	h.handle(m, "GET "+Prefix+"bot_users/{id}", h.page(h.bot))
	h.handle(m, "POST "+Prefix+"bot_users/{id}/edit", h.form(h.editBot))
	h.handle(m, "POST "+Prefix+"bot_users/{id}/delete", h.form(h.deleter("bot user", Prefix+"bot_users", h.svc.DeleteBotUser)))
}
