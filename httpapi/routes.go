package httpapi

import (
	"context"
	"net/http"
	"reflect"
	"strconv"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/apierr"
)

// route is one operation of the API. The table below is the single place
// routes are declared; the mux, the 405 answers, CORS preflights and the
// OpenAPI document are all derived from it.
type route struct {
	method  string
	pattern string
	op      string // OpenAPI operationId
	summary string
	status  int
	req     reflect.Type // request body type, nil when none
	resp    reflect.Type // response body type, nil for 204
	list    string       // for lists: the collection field name
	handle  func(h *Handler, r *http.Request, p edgeplane.Principal) (any, error)
}

func typeOf[T any]() reflect.Type { return reflect.TypeFor[T]() }

// create builds a POST route answering 201.
func create[Req, Resp any](pattern, op, summary string, call func(context.Context, edgeplane.Principal, Req) (*Resp, error)) route {
	return route{method: http.MethodPost, pattern: pattern, op: op, summary: summary, status: http.StatusCreated,
		req: typeOf[Req](), resp: typeOf[Resp](),
		handle: func(h *Handler, r *http.Request, p edgeplane.Principal) (any, error) {
			body, err := decodeBody[Req](h, r)
			if err != nil {
				return nil, err
			}
			return call(r.Context(), p, body)
		}}
}

// read builds a GET route of one resource addressed by {id}.
func read[Resp any](pattern, op, summary string, call func(context.Context, edgeplane.Principal, string) (*Resp, error)) route {
	return route{method: http.MethodGet, pattern: pattern, op: op, summary: summary, status: http.StatusOK, resp: typeOf[Resp](),
		handle: func(h *Handler, r *http.Request, p edgeplane.Principal) (any, error) {
			return call(r.Context(), p, r.PathValue("id"))
		}}
}

// patch builds a PATCH route of one resource addressed by {id}.
func patch[Req, Resp any](pattern, op, summary string, call func(context.Context, edgeplane.Principal, string, Req) (*Resp, error)) route {
	return route{method: http.MethodPatch, pattern: pattern, op: op, summary: summary, status: http.StatusOK,
		req: typeOf[Req](), resp: typeOf[Resp](),
		handle: func(h *Handler, r *http.Request, p edgeplane.Principal) (any, error) {
			body, err := decodeBody[Req](h, r)
			if err != nil {
				return nil, err
			}
			return call(r.Context(), p, r.PathValue("id"), body)
		}}
}

// remove builds a DELETE route answering 204.
func remove(pattern, op, summary string, call func(context.Context, edgeplane.Principal, string) error) route {
	return route{method: http.MethodDelete, pattern: pattern, op: op, summary: summary, status: http.StatusNoContent,
		handle: func(h *Handler, r *http.Request, p edgeplane.Principal) (any, error) {
			return nil, call(r.Context(), p, r.PathValue("id"))
		}}
}

// listOf builds a GET route of a collection: {<field>: [...], uri,
// next_page_uri}, with the limit and before_id query parameters.
func listOf[T any](pattern, op, summary, field string, call edgeplane.ListFunc[T]) route {
	return route{method: http.MethodGet, pattern: pattern, op: op, summary: summary, status: http.StatusOK,
		resp: typeOf[T](), list: field,
		handle: func(h *Handler, r *http.Request, p edgeplane.Principal) (any, error) {
			opts, err := listOptions(r)
			if err != nil {
				return nil, err
			}
			page, err := call(r.Context(), p, opts)
			if err != nil {
				return nil, err
			}
			return map[string]any{field: page.Items, "uri": page.URI, "next_page_uri": page.NextPageURI}, nil
		}}
}

// listOptions reads limit and before_id from the query.
func listOptions(r *http.Request) (edgeplane.ListOptions, error) {
	q := r.URL.Query()
	var opts edgeplane.ListOptions
	var vs apierr.Violations
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			vs.Add("limit", "must be a whole number between 1 and %d", edgeplane.MaxPageSize)
		}
		opts.Limit = n
		if err == nil && n == 0 {
			vs.Add("limit", "must be between 1 and %d, got 0", edgeplane.MaxPageSize)
		}
	}
	opts.BeforeID = q.Get("before_id")
	return opts, vs.Err()
}

// table declares every route of the API.
func (h *Handler) table() []route {
	s := h.svc
	return []route{
		// Tunnel credentials (SPEC 4.1).
		create("/credentials", "createCredential", "Create a tunnel credential; the token is returned only here", s.CreateCredential),
		listOf("/credentials", "listCredentials", "List tunnel credentials", "credentials", s.ListCredentials),
		read("/credentials/{id}", "getCredential", "Get a tunnel credential", s.GetCredential),
		patch("/credentials/{id}", "updateCredential", "Update a tunnel credential", s.UpdateCredential),
		remove("/credentials/{id}", "deleteCredential", "Delete a tunnel credential", s.DeleteCredential),

		// IP restrictions (SPEC 4.2).
		create("/ip_restrictions", "createIPRestriction", "Create an IP restriction", s.CreateIPRestriction),
		listOf("/ip_restrictions", "listIPRestrictions", "List IP restrictions", "ip_restrictions", s.ListIPRestrictions),
		read("/ip_restrictions/{id}", "getIPRestriction", "Get an IP restriction", s.GetIPRestriction),
		patch("/ip_restrictions/{id}", "updateIPRestriction", "Update an IP restriction", s.UpdateIPRestriction),
		remove("/ip_restrictions/{id}", "deleteIPRestriction", "Delete an IP restriction", s.DeleteIPRestriction),

		// IP policies and rules (referenced by the spec, not shown).
		create("/ip_policies", "createIPPolicy", "Create an IP policy", s.CreateIPPolicy),
		listOf("/ip_policies", "listIPPolicies", "List IP policies", "ip_policies", s.ListIPPolicies),
		read("/ip_policies/{id}", "getIPPolicy", "Get an IP policy", s.GetIPPolicy),
		patch("/ip_policies/{id}", "updateIPPolicy", "Update an IP policy", s.UpdateIPPolicy),
		remove("/ip_policies/{id}", "deleteIPPolicy", "Delete an IP policy and its rules", s.DeleteIPPolicy),
		create("/ip_policy_rules", "createIPPolicyRule", "Create an IP policy rule", s.CreateIPPolicyRule),
		listOf("/ip_policy_rules", "listIPPolicyRules", "List IP policy rules", "ip_policy_rules", s.ListIPPolicyRules),
		read("/ip_policy_rules/{id}", "getIPPolicyRule", "Get an IP policy rule", s.GetIPPolicyRule),
		patch("/ip_policy_rules/{id}", "updateIPPolicyRule", "Update an IP policy rule", s.UpdateIPPolicyRule),
		remove("/ip_policy_rules/{id}", "deleteIPPolicyRule", "Delete an IP policy rule", s.DeleteIPPolicyRule),
	}
}
