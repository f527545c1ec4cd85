package proxy

import (
	"net/http"
	"net/netip"
	"strconv"
	"time"

	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/policy"
)

// Internal endpoints (see the package doc's # Internal endpoints): an
// endpoint whose binding is internal is in no listener's table; it is
// indexed by its account and URL, and reached only by a Forward verdict
// of a traffic policy (the forward-internal action) of an edge or
// endpoint of the same account.

// internalKey is the key of the internal endpoint of account at url
// (policy.ParseInternalURL's form) in the table of internal endpoints.
func internalKey(account, url string) string { return account + " " + url }

// internalConfig fills in what cfg says of an internal endpoint ep: an
// http or https endpoint under .internal, with any port, that no
// listener serves and whose TLS nobody terminates.
func internalConfig(cfg *endpointConfig, ep *agents.Endpoint) error {
	if ep.Proto != protoHTTP && ep.Proto != protoHTTPS {
		return apierr.New(apierr.InvalidArgument, "endpoint %s: an internal endpoint is http or https, not %s", ep.ID, ep.Proto)
	}
	host, ok := endpointHost(ep.Host)
	if !ok || ep.Port < 1 || ep.Port > 65535 {
		return apierr.New(apierr.InvalidArgument, "endpoint %s: %q port %d is not an internal endpoint's name", ep.ID, ep.Host, ep.Port)
	}
	url, err := policy.ParseInternalURL(ep.Proto + "://" + host + ":" + strconv.FormatInt(ep.Port, 10))
	if err != nil {
		return apierr.New(apierr.InvalidArgument, "endpoint %s: its URL %s", ep.ID, err.Error())
	}
	cfg.internal, cfg.internalURL = true, url
	cfg.host, cfg.hostports, cfg.terminates = host, nil, false
	return nil
}

// serveInternal makes the table of internal endpoints send the URL of
// internal endpoint id (cfg; nil or a public one: none) to its slot,
// and drops the key it no longer has. It publishes at once: the
// snapshot is stored before (publish), so a reader that finds the slot
// finds the endpoint.
func (c *Configs) serveInternal(id string, t *tracked, cfg *endpointConfig) {
	var keys []string
	if cfg != nil && cfg.internal {
		keys = []string{internalKey(t.account, cfg.internalURL)}
	}
	u := map[string]*slot{}
	t.internal = claim(id, t.slot, t.internal, keys, c.epInternalOf, u)
	c.epInternal.set(u)
}

// internalEndpoint returns the snapshot of the internal endpoint of
// account at url (policy.ParseInternalURL's form), or nil when the
// account has none online there. It is the one lookup of internal
// endpoints: the forward-internal action's question and the forwarding
// both go through it (where endpoint pools pick a member, they plug in
// here).
func (c *Configs) internalEndpoint(account, url string) *Edge {
	if c.epInternal == nil { // a Configs built by hand, in a test
		return nil
	}
	s := c.epInternal.get(internalKey(account, url))
	if s == nil {
		return nil
	}
	e := s.p.Load()
	// As for hosts: the table may still name an endpoint that just went.
	if e == nil || e.ep == nil || !e.ep.internal || e.ep.internalURL != url || e.Endpoint.AccountID != account || e.epRoute == nil {
		return nil
	}
	return e
}

// internalResolver answers the forward-internal action of a request of
// account: which internal endpoints are online. Without a Dialer the
// Handler reaches no agent, so none is.
type internalResolver struct {
	c       *Configs
	account string
	agents  bool
}

// InternalEndpointOnline implements policy.InternalEndpoints.
func (r *internalResolver) InternalEndpointOnline(url string) bool {
	return r.agents && r.c.internalEndpoint(r.account, url) != nil
}

// forwardsInternal says whether a traffic policy has a forward-internal
// action: only then does a request carry an internalResolver.
func forwardsInternal(s *routeStatic) bool {
	for _, typ := range s.actionTypes {
		if typ == policy.ActionForwardInternal {
			return true
		}
	}
	return false
}

// forwardInternal carries out the Forward verdict in of a request of
// edge or endpoint e: the request (the verdict's header edits and URL
// rewrite applied) goes to the internal endpoint of in.ForwardURL, as if
// sent to it directly: its own inbound rules run (a forward-internal
// among them forwards nowhere: no second hop), then its agent gets it,
// and its outbound rules see the answer. It returns the internal
// endpoint and its route, or nil when the request was answered here: 404
// when the endpoint went offline since the rules ran, its rules'
// answer, or 503 when its traffic policy does not compile. The Host
// header stays the public one, as the original's does.
func (h *Handler) forwardInternal(rw http.ResponseWriter, r *http.Request, ex *exchange, in *policy.Result, client netip.AddrPort, now time.Time) (*Edge, *route) {
	in.ApplyHTTP(rw, r) // header edits and URL rewrite
	target := h.configs.internalEndpoint(ex.edge.AccountID(), in.ForwardURL)
	if target == nil {
		ex.endedBy = in.Location
		http.Error(rw, "the internal endpoint this request is forwarded to is offline", http.StatusNotFound)
		return nil, nil
	}
	// From here the exchange is the internal endpoint's (its logs,
	// metrics and outbound rules).
	ex.edge, ex.route, ex.out, ex.endedBy = target, target.epRoute, nil, ""
	if target.ep.policyErr != nil {
		http.Error(rw, "service unavailable: this endpoint's traffic policy cannot be applied", http.StatusServiceUnavailable)
		return nil, nil
	}
	rt := target.epRoute
	if pol := rt.cfg.TrafficPolicy; pol != nil {
		req := policy.RequestFromHTTPWithClient(r, client, now)
		tin := pol.Inbound(&req)
		if tin.Verdict != policy.Continue {
			ex.endedBy = tin.Location
			if tin.Verdict == policy.Forward { // cannot happen: req.Internal is nil
				http.Error(rw, "the internal endpoint this request is forwarded to is offline", http.StatusNotFound)
				return nil, nil
			}
			tin.ApplyHTTP(rw, r)
			return nil, nil
		}
		tin.ApplyHTTP(rw, r)
		if rt.static.hasOutbound {
			ex.out = &outboundState{in: tin, req: policy.RequestFromHTTPWithClient(r, client, now)}
		}
	}
	return target, rt
}
