package console

import (
	"net/http"

	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/apierr"
)

// Endpoints: what the account's agents serve, each with the tunnel
// session (the agent) that holds it. Endpoints are made by agents, not
// by the console: the page lists and shows them.

// endpointRow is an endpoint with its agent's session, when the session
// is still there.
type endpointRow struct {
	agents.Endpoint
	Session *agents.TunnelSession
}

type endpointsData struct {
	nav
	List  listState
	Items []endpointRow
}

func (h *Handler) endpoints(w http.ResponseWriter, r *http.Request, v *visit) error {
	items, st, code, err := listPage(r, v, Prefix+"endpoints", h.svc.ListEndpoints)
	if err != nil {
		return err
	}
	st.Example = `obj.proto == "https"`
	rows, err := h.withSessions(r, v, items)
	if err != nil {
		return err
	}
	h.render(w, code, "endpoints", &endpointsData{nav: h.nav(v, "endpoints"), List: st, Items: rows})
	return nil
}

// withSessions pairs endpoints with their tunnel sessions, reading each
// session once. A session gone since (the agent disconnected between the
// two reads) leaves the row without one.
func (h *Handler) withSessions(r *http.Request, v *visit, items []agents.Endpoint) ([]endpointRow, error) {
	sessions := make(map[string]*agents.TunnelSession)
	rows := make([]endpointRow, len(items))
	for i, e := range items {
		rows[i].Endpoint = e
		if e.TunnelSession == nil {
			continue
		}
		id := e.TunnelSession.ID
		ts, seen := sessions[id]
		if !seen {
			got, err := h.svc.GetTunnelSession(r.Context(), v.p, id)
			if err != nil && apierr.CodeOf(err) != apierr.NotFound {
				return nil, err
			}
			ts, sessions[id] = got, got
		}
		rows[i].Session = ts
	}
	return rows, nil
}

type endpointData struct {
	nav
	endpointRow
}

func (h *Handler) endpoint(w http.ResponseWriter, r *http.Request, v *visit) error {
	e, err := h.svc.GetEndpoint(r.Context(), v.p, r.PathValue("id"))
	if err != nil {
		return err
	}
	rows, err := h.withSessions(r, v, []agents.Endpoint{*e})
	if err != nil {
		return err
	}
	h.render(w, http.StatusOK, "endpoint", &endpointData{nav: h.nav(v, "endpoints"), endpointRow: rows[0]})
	return nil
}
