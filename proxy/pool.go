package proxy

import (
	"cmp"
	"context"
	"errors"
	"net"
	"net/http"
	"slices"
	"strconv"
	"time"
)

// Endpoint pools (see the package doc's # Endpoint pools). Each
// endpoint bound with pooling enabled keeps its own slot and snapshot
// ([Configs.Endpoint]); the host (or port) it serves goes instead to the
// slot of its pool, the endpointGroup of its table and key, whose
// snapshot is the oldest member's with one upstream per member.

// endpointGroup is the pool of the pooled endpoints that serve one host
// of one table (or one port): their snapshots by ID, and the slot the
// tables send the host to.
type endpointGroup struct {
	members map[string]*Edge
	t       *tracked // the group's slot and the keys it claims
}

// groupKey returns the key of the pool an endpoint of account with
// config cfg is a member of: its table and host, or its port; an
// internal endpoint's, its account and URL (the name is the account's
// own).
func groupKey(account string, cfg *endpointConfig) string {
	if cfg.internal {
		return "internal|" + internalKey(account, cfg.internalURL)
	}
	key := cfg.host
	if cfg.table == tableTCPPorts {
		key = cfg.port
	}
	return strconv.Itoa(int(cfg.table)) + "|" + key
}

// groupID is the owner ID of a pool's keys in the tables' owner maps:
// no edge or endpoint ID has the "pool|" prefix.
func groupID(key string) string { return "pool|" + key }

// joinGroup makes endpoint id (snapshot e, pooled) a member of the pool
// of its host or port, leaving the one it was in, and serves the pool's
// new snapshot.
func (c *Configs) joinGroup(id string, t *tracked, e *Edge, u *updates) {
	c.serveEndpoint(id, t, nil, u) // a member claims no key of its own
	key := groupKey(e.Endpoint.AccountID, e.ep)
	if t.group != key {
		c.leaveGroup(id, t, u)
	}
	if c.groups == nil {
		c.groups = map[string]*endpointGroup{}
	}
	g := c.groups[key]
	if g == nil {
		g = &endpointGroup{members: map[string]*Edge{}, t: &tracked{slot: &slot{}, endpoint: true, account: e.Endpoint.AccountID}}
		c.groups[key] = g
	}
	g.members[id] = e
	t.group = key
	c.rebuildGroup(key, g, u)
}

// leaveGroup removes endpoint id from the pool it is a member of, if
// any, and serves the pool's new snapshot (none once it is empty).
func (c *Configs) leaveGroup(id string, t *tracked, u *updates) {
	if t.group == "" {
		return
	}
	key := t.group
	t.group = ""
	g := c.groups[key]
	if g == nil {
		return
	}
	delete(g.members, id)
	c.rebuildGroup(key, g, u)
}

// unpooled returns cfg, the config of endpoint id bound without
// pooling, unless a pool serves its host or port: the control plane
// refuses such a bind, but its record may exist for the instant of the
// refusal; the pool keeps the host (or port), and nil is returned.
func (c *Configs) unpooled(id, account string, cfg *endpointConfig) *endpointConfig {
	if g := c.groups[groupKey(account, cfg)]; g != nil && len(g.members) > 0 {
		c.log.Warn("endpoint configs: an endpoint without pooling claims the host or port of an endpoint pool; the pool serves it", "endpoint", id)
		return nil
	}
	return cfg
}

// rebuildGroup publishes the snapshot of pool g (key) as its members are
// now, and makes the tables send its host or port to it; an empty pool
// is dropped.
func (c *Configs) rebuildGroup(key string, g *endpointGroup, u *updates) {
	if len(g.members) == 0 {
		c.serveEndpoint(groupID(key), g.t, nil, u)
		g.t.slot.p.Store(nil)
		delete(c.groups, key)
		return
	}
	members := make([]*Edge, 0, len(g.members))
	for _, m := range g.members {
		members = append(members, m)
	}
	e := poolEdge(members)
	// The snapshot first, then the tables (as publish does).
	g.t.slot.p.Store(e)
	c.serveEndpoint(groupID(key), g.t, e.ep, u)
}

// poolEdge returns the snapshot of a pool of members (at least one): the
// oldest member's (its config, traffic policy, restrictions and
// certificate serve the pool's connections), with one upstream per
// member of its account, protocol and traffic policy (the control plane
// refuses any other; one that slipped through is left out rather than
// served another's way), each with its member's passive health. Its
// upstreams take turns wherever their sessions are ([pool].spread).
func poolEdge(members []*Edge) *Edge {
	slices.SortFunc(members, func(a, b *Edge) int {
		return cmp.Or(a.Endpoint.CreatedAt.Compare(b.Endpoint.CreatedAt), cmp.Compare(a.Endpoint.ID, b.Endpoint.ID))
	})
	first := members[0]
	e := &Edge{Endpoint: first.Endpoint, ep: first.ep, Restrictions: first.Restrictions, Certificates: first.Certificates, Revision: first.Revision}
	p := &pool{spread: true, noUpstream: "no agent serves this endpoint here"}
	if first.ep.route != nil {
		e.epRoute = &route{cfg: first.ep.route, static: first.ep.static}
		p = &e.epRoute.pool
		p.spread, p.noUpstream = true, "no agent serves this endpoint here"
	} else {
		e.stream = p
	}
	for _, m := range members {
		if m.Endpoint.AccountID != first.Endpoint.AccountID || m.ep.proto != first.ep.proto ||
			m.ep.passthrough != first.ep.passthrough || m.ep.source != first.ep.source {
			continue
		}
		u := upstream{tunnelID: m.Endpoint.ID, agent: true, node: m.Endpoint.Node, expires: endless}
		if e.epRoute != nil {
			u.url = agentURL
		}
		m.eachPool(func(mp *pool) {
			if len(mp.upstreams) > 0 && u.health == nil {
				u.health = mp.upstreams[0].health
			}
		})
		if u.health == nil {
			u.health = &health{}
		}
		p.upstreams = append(p.upstreams, u)
	}
	p.agents = len(p.upstreams)
	return e
}

// redialPool opens a stream to another member of the endpoint pool of
// the request whose context ctx is, after the dial of member failed
// with err (its session gone, or the hop to its node down):
// each other member once, in turn, those in a failure backoff last,
// until one answers. Anything but a pool's request gets err back.
func (h *Handler) redialPool(ctx context.Context, ex *exchange, member *upstream, err error) (net.Conn, error) {
	if ex.route == nil || !ex.route.spread || len(ex.route.upstreams) < 2 {
		return nil, err
	}
	p := &ex.route.pool
	now := h.clock()
	member.health.fail(now.Add(h.backoff))
	tried := map[*upstream]bool{ex.upstream: true, member: true}
	for range len(p.upstreams) - 1 {
		u := nextMember(p, now, tried)
		if u == nil {
			break
		}
		tried[u] = true
		dctx, cancel := context.WithTimeout(ctx, min(upstreamDialTimeout, h.agentTimeout))
		c, derr := h.agents.DialTunnel(dctx, u.node, u.tunnelID, ex.agentHeader)
		cancel()
		h.metrics.agentStream(kindHTTPS, derr)
		if derr == nil {
			u.health.succeed()
			ex.redialed.Store(u)
			return c, nil
		}
		u.health.fail(now.Add(h.backoff))
		h.log.Warn("a member of an endpoint pool did not answer; trying the next", "tunnel", u.tunnelID, "err", derr)
	}
	return nil, err
}

// nextMember returns the member of pool p to try after those tried:
// the next healthy one in turn, else the first untried in order (those
// in a failure backoff); nil when every member was tried.
func nextMember(p *pool, now time.Time, tried map[*upstream]bool) *upstream {
	if u := p.pick(now, true, ""); u != nil && !tried[u] {
		return u
	}
	for i := range p.upstreams {
		if !tried[&p.upstreams[i]] {
			return &p.upstreams[i]
		}
	}
	return nil
}

// poolRetry is the agents' transport, which sends a request again to
// another member of its endpoint pool when the stream it was written on
// failed before any response came (the member's session died under it:
// the stream opened, then broke), as a client would retry it: only a
// request without a body whose method is idempotent and safe to repeat
// (GET, HEAD, OPTIONS, TRACE), never after a timeout (the upstream
// timeout is the client's whole wait), each member at most once. A
// member that failed so is skipped for the failure backoff, as one whose
// dial failed ([Handler.redialPool]).
type poolRetry struct {
	h    *Handler
	next http.RoundTripper
}

func (t *poolRetry) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err == nil {
		return resp, nil
	}
	ex, ok := req.Context().Value(exchangeKey{}).(*exchange)
	if !ok || ex.route == nil || !ex.route.spread || len(ex.route.upstreams) < 2 {
		return nil, err
	}
	p := &ex.route.pool
	tried := map[*upstream]bool{ex.upstream: true}
	last := ex.upstream
	for retryable(req, err) {
		if r := ex.redialed.Load(); r != nil {
			last = r // the member the failed attempt's dial went to
		}
		tried[last] = true
		now := t.h.clock()
		last.health.fail(now.Add(t.h.backoff))
		u := nextMember(p, now, tried)
		if u == nil {
			break
		}
		t.h.log.Warn("a member of an endpoint pool failed a request before answering; sending it to the next", "tunnel", last.tunnelID, "next", u.tunnelID, "err", err)
		ex.retarget.Store(u)
		ex.redialed.Store(u) // the member that takes the request: modify marks none
		again := *req
		url := *req.URL
		url.Host = agentPoolKey(u.tunnelID, ex.agentHeader.ClientAddr)
		again.URL = &url
		if resp, err = t.next.RoundTrip(&again); err == nil {
			if r := ex.redialed.Load(); r == u {
				u.health.succeed()
			}
			return resp, nil
		}
		last = u
	}
	return nil, err
}

// retryable reports whether req, which failed with err before any
// response, may be sent again ([poolRetry]).
func retryable(req *http.Request, err error) bool {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
	default:
		return false
	}
	if req.Body != nil && req.Body != http.NoBody || req.ContentLength > 0 || req.Context().Err() != nil {
		return false
	}
	var ne net.Error
	return !errors.Is(err, context.DeadlineExceeded) && !(errors.As(err, &ne) && ne.Timeout())
}
