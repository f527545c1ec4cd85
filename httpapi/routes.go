package httpapi

import (
	"context"
	"net/http"
	"net/url"
	"reflect"
	"strconv"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/events"
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
	list    string       // for paged lists: the collection field name
	filter  bool         // the route takes the filter query parameter (every list does)
	call    any          // the Service method the route calls: its doc comment describes the operation
	handle  func(h *Handler, x *exchange, r *http.Request) (any, error)
}

func typeOf[T any]() reflect.Type { return reflect.TypeFor[T]() }

// create builds a POST route answering 201.
func create[Req, Resp any](pattern, op, summary string, call func(context.Context, edgeplane.Principal, Req) (*Resp, error)) route {
	return route{method: http.MethodPost, pattern: pattern, op: op, summary: summary, status: http.StatusCreated,
		req: typeOf[Req](), resp: typeOf[Resp](), call: call,
		handle: func(h *Handler, x *exchange, r *http.Request) (any, error) {
			body, err := decodeBody[Req](h, x, r)
			if err != nil {
				return nil, err
			}
			return call(r.Context(), x.p, body)
		}}
}

// read builds a GET route of one resource addressed by {id}.
func read[Resp any](pattern, op, summary string, call func(context.Context, edgeplane.Principal, string) (*Resp, error)) route {
	return readBy(pattern, op, summary, "id", call)
}

// readBy builds a GET route of one resource addressed by the path value
// name.
func readBy[Resp any](pattern, op, summary, name string, call func(context.Context, edgeplane.Principal, string) (*Resp, error)) route {
	return route{method: http.MethodGet, pattern: pattern, op: op, summary: summary, status: http.StatusOK, resp: typeOf[Resp](), call: call,
		handle: func(h *Handler, x *exchange, r *http.Request) (any, error) {
			return call(r.Context(), x.p, r.PathValue(name))
		}}
}

// readEncoded is read for a resource the Service can answer as its JSON
// (appendJSON, such as [edgeplane.Transport.AppendCredentialJSON]): the
// response is those bytes, copied from the record cache when it holds
// them, followed by a newline as the encoder writes it. call is what the
// route documents (and answers the same).
func readEncoded[Resp any](pattern, op, summary string, call func(context.Context, edgeplane.Principal, string) (*Resp, error),
	appendJSON func(context.Context, edgeplane.Principal, string, []byte) ([]byte, error)) route {
	rt := read(pattern, op, summary, call)
	rt.handle = func(h *Handler, x *exchange, r *http.Request) (any, error) {
		// The Service appends to the room of a pooled buffer (a copy of
		// what it caches; it keeps nothing of dst): the response costs no
		// buffer of its own. writeJSON answers with buf and returns it to
		// the pool.
		buf := getJSONBuffer()
		b, err := appendJSON(r.Context(), x.p, r.PathValue("id"), buf.AvailableBuffer())
		if err != nil {
			putJSONBuffer(buf)
			return nil, err
		}
		buf.Write(b) // onto itself when b fit in the room
		buf.WriteByte('\n')
		return buf, nil
	}
	return rt
}

// patch builds a PATCH route of one resource addressed by {id}.
func patch[Req, Resp any](pattern, op, summary string, call func(context.Context, edgeplane.Principal, string, Req) (*Resp, error)) route {
	return route{method: http.MethodPatch, pattern: pattern, op: op, summary: summary, status: http.StatusOK,
		req: typeOf[Req](), resp: typeOf[Resp](), call: call,
		handle: func(h *Handler, x *exchange, r *http.Request) (any, error) {
			body, err := decodeBody[Req](h, x, r)
			if err != nil {
				return nil, err
			}
			return call(r.Context(), x.p, r.PathValue("id"), body)
		}}
}

// remove builds a DELETE route answering 204.
func remove(pattern, op, summary string, call func(context.Context, edgeplane.Principal, string) error) route {
	return route{method: http.MethodDelete, pattern: pattern, op: op, summary: summary, status: http.StatusNoContent, call: call,
		handle: func(h *Handler, x *exchange, r *http.Request) (any, error) {
			return nil, call(r.Context(), x.p, r.PathValue("id"))
		}}
}

// EmptyBody is the request body of an operation that takes no
// parameters but to which the original service's clients send an object
// (POST /tunnel_sessions/{id}/stop): {}, or no body at all.
type EmptyBody struct{}

// command builds a POST route of an operation on the resource {id} that
// takes no parameters and answers 204: its body, when there is one, must
// be the empty object ([EmptyBody]), read strictly.
func command(pattern, op, summary string, call func(context.Context, edgeplane.Principal, string) error) route {
	return route{method: http.MethodPost, pattern: pattern, op: op, summary: summary, status: http.StatusNoContent,
		req: typeOf[EmptyBody](), call: call,
		handle: func(h *Handler, x *exchange, r *http.Request) (any, error) {
			if _, err := decodeBody[EmptyBody](h, x, r); err != nil {
				return nil, err
			}
			return nil, call(r.Context(), x.p, r.PathValue("id"))
		}}
}

// listOf builds a GET route of a collection: {<field>: [...], uri,
// next_page_uri}, with the limit, before_id and filter query parameters.
func listOf[T any](pattern, op, summary, field string, call edgeplane.ListFunc[T]) route {
	return withCall(call, pageRoute(pattern, op, summary, field, func(r *http.Request, p edgeplane.Principal, opts edgeplane.ListOptions) (*edgeplane.Page[T], error) {
		return call(r.Context(), p, opts)
	}))
}

// listEncodedOf is listOf for a collection the Service can answer as JSON
// (see [edgeplane.Transport]): the page is written from the items' JSON
// that enc returns, copied from the record cache when it holds them.
// call is what the route documents (and answers the same).
func listEncodedOf[T any](pattern, op, summary, field string, call edgeplane.ListFunc[T],
	enc func(context.Context, edgeplane.Principal, edgeplane.ListOptions) (*edgeplane.EncodedPage, error)) route {
	rt := listOf(pattern, op, summary, field, call)
	rt.handle = func(h *Handler, x *exchange, r *http.Request) (any, error) {
		opts, err := listOptions(r)
		if err != nil {
			return nil, err
		}
		page, err := enc(r.Context(), x.p, opts)
		if err != nil {
			return nil, err
		}
		return &encodedPage{field: field, items: func(b []byte) ([]byte, error) { return page.AppendItemsJSON(b), nil }, uri: page.URI, next: page.NextPageURI}, nil
	}
	return rt
}

// pageRoute builds a GET route answering one page from call.
func pageRoute[T any](pattern, op, summary, field string, call func(*http.Request, edgeplane.Principal, edgeplane.ListOptions) (*edgeplane.Page[T], error)) route {
	return route{method: http.MethodGet, pattern: pattern, op: op, summary: summary, status: http.StatusOK,
		resp: typeOf[T](), list: field, filter: true,
		handle: func(h *Handler, x *exchange, r *http.Request) (any, error) {
			opts, err := listOptions(r)
			if err != nil {
				return nil, err
			}
			page, err := call(r, x.p, opts)
			if err != nil {
				return nil, err
			}
			return map[string]any{field: page.Items, "uri": page.URI, "next_page_uri": page.NextPageURI}, nil
		}}
}

// The constructors below address resources by two path values (a parent
// and a child: {edge_id} and {id}, {subscription_id} and {type}) or
// replace a module with PUT.

// createIn builds a POST route of a child collection under parent.
func createIn[Req, Resp any](pattern, op, summary, parent string, call func(context.Context, edgeplane.Principal, string, Req) (*Resp, error)) route {
	return route{method: http.MethodPost, pattern: pattern, op: op, summary: summary, status: http.StatusCreated,
		req: typeOf[Req](), resp: typeOf[Resp](), call: call,
		handle: func(h *Handler, x *exchange, r *http.Request) (any, error) {
			body, err := decodeBody[Req](h, x, r)
			if err != nil {
				return nil, err
			}
			return call(r.Context(), x.p, r.PathValue(parent), body)
		}}
}

// listIn builds a GET route of a child collection under parent.
func listIn[T any](pattern, op, summary, field, parent string, call func(context.Context, edgeplane.Principal, string, edgeplane.ListOptions) (*edgeplane.Page[T], error)) route {
	return withCall(call, pageRoute(pattern, op, summary, field, func(r *http.Request, p edgeplane.Principal, opts edgeplane.ListOptions) (*edgeplane.Page[T], error) {
		return call(r.Context(), p, r.PathValue(parent), opts)
	}))
}

// withCall records the Service method a route calls.
func withCall(call any, rt route) route {
	rt.call = call
	return rt
}

// read2 builds a GET route of a resource addressed by two path values.
func read2[Resp any](pattern, op, summary string, names [2]string, call func(context.Context, edgeplane.Principal, string, string) (*Resp, error)) route {
	return route{method: http.MethodGet, pattern: pattern, op: op, summary: summary, status: http.StatusOK, resp: typeOf[Resp](), call: call,
		handle: func(h *Handler, x *exchange, r *http.Request) (any, error) {
			return call(r.Context(), x.p, r.PathValue(names[0]), r.PathValue(names[1]))
		}}
}

// write2 builds a PATCH (or PUT) route of a resource addressed by two path
// values.
func write2[Req, Resp any](method, pattern, op, summary string, names [2]string, call func(context.Context, edgeplane.Principal, string, string, Req) (*Resp, error)) route {
	return route{method: method, pattern: pattern, op: op, summary: summary, status: http.StatusOK,
		req: typeOf[Req](), resp: typeOf[Resp](), call: call,
		handle: func(h *Handler, x *exchange, r *http.Request) (any, error) {
			body, err := decodeBody[Req](h, x, r)
			if err != nil {
				return nil, err
			}
			return call(r.Context(), x.p, r.PathValue(names[0]), r.PathValue(names[1]), body)
		}}
}

// remove2 builds a DELETE route of a resource addressed by two path values.
func remove2(pattern, op, summary string, names [2]string, call func(context.Context, edgeplane.Principal, string, string) error) route {
	return route{method: http.MethodDelete, pattern: pattern, op: op, summary: summary, status: http.StatusNoContent, call: call,
		handle: func(h *Handler, x *exchange, r *http.Request) (any, error) {
			return nil, call(r.Context(), x.p, r.PathValue(names[0]), r.PathValue(names[1]))
		}}
}

// replace builds a PUT route replacing the module of the resource {id}.
func replace[Req, Resp any](pattern, op, summary string, call func(context.Context, edgeplane.Principal, string, Req) (*Resp, error)) route {
	rt := patch(pattern, op, summary, call)
	rt.method = http.MethodPut
	return rt
}

// module returns the PUT, GET and DELETE routes of an edge module whose
// edge is {id}: name completes their operationIds (replaceTLSEdgeBackend),
// what their summaries ("the backend module of a TLS edge").
func module[Req, Resp any](pattern, name, what string,
	put func(context.Context, edgeplane.Principal, string, Req) (*Resp, error),
	get func(context.Context, edgeplane.Principal, string) (*Resp, error),
	del func(context.Context, edgeplane.Principal, string) error) []route {
	return []route{
		replace(pattern, "replace"+name, "Replace "+what, put),
		read(pattern, "get"+name, "Get "+what, get),
		remove(pattern, "delete"+name, "Delete "+what, del),
	}
}

var routeIDs = [2]string{"edge_id", "id"}

// routeModule returns the PUT, GET and DELETE routes of an HTTPS route
// module, addressed by {edge_id} and {id}; name and what as for module.
func routeModule[Req, Resp any](pattern, name, what string,
	put func(context.Context, edgeplane.Principal, string, string, Req) (*Resp, error),
	get func(context.Context, edgeplane.Principal, string, string) (*Resp, error),
	del func(context.Context, edgeplane.Principal, string, string) error) []route {
	return []route{
		write2(http.MethodPut, pattern, "replace"+name, "Replace "+what, routeIDs, put),
		read2(pattern, "get"+name, "Get "+what, routeIDs, get),
		remove2(pattern, "delete"+name, "Delete "+what, routeIDs, del),
	}
}

// listSources builds the GET route of a subscription's sources: not
// paged, but filtered.
func listSources(pattern, op, summary string, call func(context.Context, edgeplane.Principal, string, string) (*events.SourceList, error)) route {
	return route{method: http.MethodGet, pattern: pattern, op: op, summary: summary, status: http.StatusOK,
		resp: typeOf[events.SourceList](), filter: true, call: call,
		handle: func(h *Handler, x *exchange, r *http.Request) (any, error) {
			expr, err := filterParam(r.URL.Query())
			if err != nil {
				return nil, err
			}
			return call(r.Context(), x.p, r.PathValue("subscription_id"), expr)
		}}
}

// filterParam reads the filter query parameter: at most one, of at most
// [filter.MaxBytes] bytes (checked with the expression when it is
// compiled). Empty means no filter.
func filterParam(q url.Values) (string, error) {
	if fs := q["filter"]; len(fs) > 1 {
		return "", apierr.Invalidf("filter", "must be given at most once, got %d", len(fs))
	}
	return q.Get("filter"), nil
}

// listOptions reads limit, before_id and filter from the query.
func listOptions(r *http.Request) (edgeplane.ListOptions, error) {
	q := r.URL.Query()
	var opts edgeplane.ListOptions
	var vs apierr.Violations
	expr, err := filterParam(q)
	vs.AddError("", err)
	opts.Filter = expr
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
	s, tr := h.svc, h.svc.Transport()
	rs := []route{
		// API keys and bot users (the original API's /api_keys and
		// /bot_users; see package identity).
		create("/api_keys", "createAPIKey", "Create an API key; the token is returned only here", s.CreateAPIKey),
		listOf("/api_keys", "listAPIKeys", "List API keys (an admin's: all of the account; others: their own)", "keys", s.ListAPIKeys),
		read("/api_keys/{id}", "getAPIKey", "Get an API key", s.GetAPIKey),
		patch("/api_keys/{id}", "updateAPIKey", "Update an API key", s.UpdateAPIKey),
		remove("/api_keys/{id}", "deleteAPIKey", "Delete an API key: it stops authenticating at once", s.DeleteAPIKey),
		create("/bot_users", "createBotUser", "Create a bot user (admins only)", s.CreateBotUser),
		listOf("/bot_users", "listBotUsers", "List bot users", "bot_users", s.ListBotUsers),
		read("/bot_users/{id}", "getBotUser", "Get a bot user", s.GetBotUser),
		patch("/bot_users/{id}", "updateBotUser", "Update a bot user (admins only); inactive bots' keys and credentials are refused", s.UpdateBotUser),
		remove("/bot_users/{id}", "deleteBotUser", "Delete a bot user and its API keys (admins only)", s.DeleteBotUser),

		// Tunnel credentials (SPEC 4.1).
		create("/credentials", "createCredential", "Create a tunnel credential; the token is returned only here", s.CreateCredential),
		listEncodedOf("/credentials", "listCredentials", "List tunnel credentials", "credentials", s.ListCredentials, tr.ListCredentials),
		readEncoded("/credentials/{id}", "getCredential", "Get a tunnel credential", s.GetCredential, tr.AppendCredentialJSON),
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

		// Reserved domains (SPEC 4.3).
		create("/reserved_domains", "createReservedDomain", "Reserve a domain", s.CreateReservedDomain),
		listOf("/reserved_domains", "listReservedDomains", "List reserved domains", "reserved_domains", s.ListReservedDomains),
		read("/reserved_domains/{id}", "getReservedDomain", "Get a reserved domain", s.GetReservedDomain),
		patch("/reserved_domains/{id}", "updateReservedDomain", "Update a reserved domain", s.UpdateReservedDomain),
		remove("/reserved_domains/{id}", "deleteReservedDomain", "Delete a reserved domain", s.DeleteReservedDomain),
		remove("/reserved_domains/{id}/certificate_management_policy", "detachReservedDomainCertificateManagementPolicy",
			"Detach the certificate management policy of a reserved domain", s.DetachReservedDomainCertificateManagementPolicy),
		remove("/reserved_domains/{id}/certificate", "detachReservedDomainCertificate",
			"Detach the TLS certificate of a reserved domain", s.DetachReservedDomainCertificate),

		// TLS certificates and endpoint configurations (referenced, not shown).
		create("/tls_certificates", "createTLSCertificate", "Upload a TLS certificate chain and private key (PEM)", s.CreateTLSCertificate),
		listOf("/tls_certificates", "listTLSCertificates", "List TLS certificates", "tls_certificates", s.ListTLSCertificates),
		read("/tls_certificates/{id}", "getTLSCertificate", "Get a TLS certificate", s.GetTLSCertificate),
		patch("/tls_certificates/{id}", "updateTLSCertificate", "Update a TLS certificate", s.UpdateTLSCertificate),
		remove("/tls_certificates/{id}", "deleteTLSCertificate", "Delete a TLS certificate", s.DeleteTLSCertificate),
		create("/endpoint_configurations", "createEndpointConfiguration", "Create an endpoint configuration", s.CreateEndpointConfiguration),
		listOf("/endpoint_configurations", "listEndpointConfigurations", "List endpoint configurations", "endpoint_configurations", s.ListEndpointConfigurations),
		read("/endpoint_configurations/{id}", "getEndpointConfiguration", "Get an endpoint configuration", s.GetEndpointConfiguration),
		patch("/endpoint_configurations/{id}", "updateEndpointConfiguration", "Update an endpoint configuration", s.UpdateEndpointConfiguration),
		remove("/endpoint_configurations/{id}", "deleteEndpointConfiguration", "Delete an endpoint configuration", s.DeleteEndpointConfiguration),

		// Tunnel group backends (SPEC 4.4) and tunnels (read-only).
		create("/backends/tunnel_group", "createTunnelGroupBackend", "Create a tunnel group backend", s.CreateTunnelGroupBackend),
		listOf("/backends/tunnel_group", "listTunnelGroupBackends", "List tunnel group backends", "backends", s.ListTunnelGroupBackends),
		read("/backends/tunnel_group/{id}", "getTunnelGroupBackend", "Get a tunnel group backend", s.GetTunnelGroupBackend),
		patch("/backends/tunnel_group/{id}", "updateTunnelGroupBackend", "Update a tunnel group backend", s.UpdateTunnelGroupBackend),
		remove("/backends/tunnel_group/{id}", "deleteTunnelGroupBackend", "Delete a tunnel group backend", s.DeleteTunnelGroupBackend),
		listOf("/tunnels", "listTunnels", "List online tunnels", "tunnels", s.ListTunnels),
		read("/tunnels/{id}", "getTunnel", "Get an online tunnel", s.GetTunnel),

		// Tunnel sessions (the original API's /tunnel_sessions): opened by
		// agents through tunnel servers; the API reads them and asks one to
		// stop.
		listOf("/tunnel_sessions", "listTunnelSessions", "List online tunnel sessions (connected agents)", "tunnel_sessions", s.ListTunnelSessions),
		read("/tunnel_sessions/{id}", "getTunnelSession", "Get a tunnel session", s.GetTunnelSession),
		command("/tunnel_sessions/{id}/stop", "stopTunnelSession", "Ask the agent of a tunnel session to stop", s.StopTunnelSession),

		// Endpoints (the original API's /endpoints of type agent): bound by
		// agents through tunnel servers and removed with their sessions;
		// the API only reads them.
		listOf("/endpoints", "listEndpoints", "List the endpoints agents bound", "endpoints", s.ListEndpoints),
		read("/endpoints/{id}", "getEndpoint", "Get an endpoint", s.GetEndpoint),

		// Edges and routes (referenced, not shown).
		create("/edges/https", "createHTTPSEdge", "Create an HTTPS edge", s.CreateHTTPSEdge),
		listOf("/edges/https", "listHTTPSEdges", "List HTTPS edges", "https_edges", s.ListHTTPSEdges),
		read("/edges/https/{id}", "getHTTPSEdge", "Get an HTTPS edge", s.GetHTTPSEdge),
		patch("/edges/https/{id}", "updateHTTPSEdge", "Update an HTTPS edge", s.UpdateHTTPSEdge),
		remove("/edges/https/{id}", "deleteHTTPSEdge", "Delete an HTTPS edge, its routes and modules", s.DeleteHTTPSEdge),
		createIn("/edges/https/{edge_id}/routes", "createHTTPSEdgeRoute", "Create a route of an HTTPS edge", "edge_id", s.CreateHTTPSEdgeRoute),
		listIn("/edges/https/{edge_id}/routes", "listHTTPSEdgeRoutes", "List the routes of an HTTPS edge", "routes", "edge_id", s.ListHTTPSEdgeRoutes),
		read2("/edges/https/{edge_id}/routes/{id}", "getHTTPSEdgeRoute", "Get a route of an HTTPS edge", routeIDs, s.GetHTTPSEdgeRoute),
		write2(http.MethodPatch, "/edges/https/{edge_id}/routes/{id}", "updateHTTPSEdgeRoute", "Update a route of an HTTPS edge", routeIDs, s.UpdateHTTPSEdgeRoute),
		remove2("/edges/https/{edge_id}/routes/{id}", "deleteHTTPSEdgeRoute", "Delete a route and its modules", routeIDs, s.DeleteHTTPSEdgeRoute),
		create("/edges/tls", "createTLSEdge", "Create a TLS edge", s.CreateTLSEdge),
		listOf("/edges/tls", "listTLSEdges", "List TLS edges", "tls_edges", s.ListTLSEdges),
		read("/edges/tls/{id}", "getTLSEdge", "Get a TLS edge", s.GetTLSEdge),
		patch("/edges/tls/{id}", "updateTLSEdge", "Update a TLS edge", s.UpdateTLSEdge),
		remove("/edges/tls/{id}", "deleteTLSEdge", "Delete a TLS edge and its modules", s.DeleteTLSEdge),
		create("/edges/tcp", "createTCPEdge", "Create a TCP edge", s.CreateTCPEdge),
		listOf("/edges/tcp", "listTCPEdges", "List TCP edges", "tcp_edges", s.ListTCPEdges),
		read("/edges/tcp/{id}", "getTCPEdge", "Get a TCP edge", s.GetTCPEdge),
		patch("/edges/tcp/{id}", "updateTCPEdge", "Update a TCP edge", s.UpdateTCPEdge),
		remove("/edges/tcp/{id}", "deleteTCPEdge", "Delete a TCP edge and its modules", s.DeleteTCPEdge),

		// Event subscriptions (referenced, not shown) and their sources (SPEC 4.6).
		create("/event_subscriptions", "createEventSubscription", "Create an event subscription", s.CreateEventSubscription),
		listOf("/event_subscriptions", "listEventSubscriptions", "List event subscriptions", "event_subscriptions", s.ListEventSubscriptions),
		read("/event_subscriptions/{id}", "getEventSubscription", "Get an event subscription", s.GetEventSubscription),
		patch("/event_subscriptions/{id}", "updateEventSubscription", "Update an event subscription", s.UpdateEventSubscription),
		remove("/event_subscriptions/{id}", "deleteEventSubscription", "Delete an event subscription and its sources", s.DeleteEventSubscription),
		createIn("/event_subscriptions/{subscription_id}/sources", "createEventSource", "Add an event type to a subscription", "subscription_id", s.CreateEventSource),
		listSources("/event_subscriptions/{subscription_id}/sources", "listEventSources", "List the sources of a subscription", s.ListEventSourcesMatching),
		read2("/event_subscriptions/{subscription_id}/sources/{type}", "getEventSource", "Get a source of a subscription", sourceIDs, s.GetEventSource),
		write2(http.MethodPatch, "/event_subscriptions/{subscription_id}/sources/{type}", "updateEventSource", "Update a source (an empty object)", sourceIDs, s.UpdateEventSource),
		remove2("/event_subscriptions/{subscription_id}/sources/{type}", "deleteEventSource", "Remove a source from a subscription", sourceIDs, s.DeleteEventSource),
		// Event destinations: where subscriptions send their events (a signed webhook).
		create("/event_destinations", "createEventDestination", "Create an event destination (its webhook secret is shown once, here)", s.CreateEventDestination),
		listOf("/event_destinations", "listEventDestinations", "List event destinations", "event_destinations", s.ListEventDestinations),
		read("/event_destinations/{id}", "getEventDestination", "Get an event destination and the state of delivery to it", s.GetEventDestination),
		patch("/event_destinations/{id}", "updateEventDestination", "Update an event destination", s.UpdateEventDestination),
		remove("/event_destinations/{id}", "deleteEventDestination", "Delete an event destination no subscription sends to", s.DeleteEventDestination),
	}
	// Edge modules (SPEC 4.5).
	base := "/edges/https/{edge_id}/routes/{id}/"
	rs = append(rs, routeModule(base+"oidc", "HTTPSRouteOIDC", "the OIDC module of a route", s.ReplaceHTTPSRouteOIDC, s.GetHTTPSRouteOIDC, s.DeleteHTTPSRouteOIDC)...)
	rs = append(rs, routeModule(base+"backend", "HTTPSRouteBackend", "the backend module of a route", s.ReplaceHTTPSRouteBackend, s.GetHTTPSRouteBackend, s.DeleteHTTPSRouteBackend)...)
	rs = append(rs, routeModule(base+"response_headers", "HTTPSRouteResponseHeaders", "the response headers module of a route", s.ReplaceHTTPSRouteResponseHeaders, s.GetHTTPSRouteResponseHeaders, s.DeleteHTTPSRouteResponseHeaders)...)
	rs = append(rs, routeModule(base+"compression", "HTTPSRouteCompression", "the compression module of a route", s.ReplaceHTTPSRouteCompression, s.GetHTTPSRouteCompression, s.DeleteHTTPSRouteCompression)...)
	rs = append(rs, routeModule(base+"traffic_policy", "HTTPSRouteTrafficPolicy", "the traffic policy module of a route", s.ReplaceHTTPSRouteTrafficPolicy, s.GetHTTPSRouteTrafficPolicy, s.DeleteHTTPSRouteTrafficPolicy)...)
	rs = append(rs, module("/edges/tls/{id}/ip_restriction", "TLSEdgeIPRestriction", "the IP restriction module of a TLS edge", s.ReplaceTLSEdgeIPRestriction, s.GetTLSEdgeIPRestriction, s.DeleteTLSEdgeIPRestriction)...)
	rs = append(rs, module("/edges/tls/{id}/traffic_policy", "TLSEdgeTrafficPolicy", "the traffic policy module of a TLS edge", s.ReplaceTLSEdgeTrafficPolicy, s.GetTLSEdgeTrafficPolicy, s.DeleteTLSEdgeTrafficPolicy)...)
	rs = append(rs, module("/edges/tls/{id}/tls_termination", "TLSEdgeTLSTermination", "the TLS termination module of a TLS edge", s.ReplaceTLSEdgeTLSTermination, s.GetTLSEdgeTLSTermination, s.DeleteTLSEdgeTLSTermination)...)
	rs = append(rs, module("/edges/tcp/{id}/ip_restriction", "TCPEdgeIPRestriction", "the IP restriction module of a TCP edge", s.ReplaceTCPEdgeIPRestriction, s.GetTCPEdgeIPRestriction, s.DeleteTCPEdgeIPRestriction)...)
	rs = append(rs, module("/edges/tcp/{id}/backend", "TCPEdgeBackend", "the backend module of a TCP edge", s.ReplaceTCPEdgeBackend, s.GetTCPEdgeBackend, s.DeleteTCPEdgeBackend)...)
	rs = append(rs, module("/edges/tls/{id}/backend", "TLSEdgeBackend", "the backend module of a TLS edge", s.ReplaceTLSEdgeBackend, s.GetTLSEdgeBackend, s.DeleteTLSEdgeBackend)...)
	return rs
}

var sourceIDs = [2]string{"subscription_id", "type"}
