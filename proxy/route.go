package proxy

import (
	"cmp"
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/edgeconfig"
	"github.com/edgeplane/edgeplane/policy"
)

// route is one route's pipeline in a snapshot: its config, what the
// handler derives from its traffic policy, and the upstreams of its
// backend's tunnels.
type route struct {
	cfg    *edgeconfig.Route
	static *routeStatic
	pool
	// series are the route's metric children (see [Metrics]), resolved
	// at its first request.
	series atomic.Pointer[routeSeries]
}

// routeStatic is what a route's pipeline derives from its config alone:
// kept across snapshots that only change tunnels or certificates.
type routeStatic struct {
	// hasOutbound says whether the traffic policy has outbound rules;
	// actionTypes maps the location of each of its actions
	// ("inbound[0].actions[1]") to the action's type, to classify what
	// ended a request.
	hasOutbound bool
	actionTypes map[string]string
	// gate is the route's OIDC Gate, built at its first request (see
	// Handler.gate); unused without the module.
	gate atomic.Pointer[gateEntry]
	// forwardsInternal says that the policy has a forward-internal
	// action: its requests carry the internal endpoints they may reach.
	forwardsInternal bool
}

// pool is the upstreams of one backend as a route or a TLS or TCP edge
// uses them.
type pool struct {
	// upstreams are the tunnels of the backend that say where they
	// forward or that an agent holds, newest first; pick skips those
	// whose lease ended. noUpstream says why a request gets 503 (a
	// connection is closed) when none is usable. agents counts the
	// upstreams that are agents' tunnels.
	upstreams  []upstream
	noUpstream string
	agents     int
	next       atomic.Uint32 // round-robin position
	// spread says the upstreams are the members of an endpoint pool:
	// they take turns wherever their sessions are, this proxy's node
	// preferred to none (see pool.go).
	spread bool
}

// upstream is one tunnel a route or edge may send traffic to.
type upstream struct {
	tunnelID string
	// agent says that an agent's session holds the tunnel (its
	// TunnelSession is set): its traffic is handed to the session through
	// an [agents.Dialer], by tunnel ID, and its forwards_to is never
	// dialed. url is then [agentURL] and addr is empty.
	agent   bool
	node    string    // an agent's tunnel: the node that holds its session
	url     *url.URL  // where an HTTP request goes
	addr    string    // where a TLS or TCP edge's connection goes: host:port
	expires time.Time // the lease's end
	health  *health
}

// agentURL is the URL of every HTTP request to an agent's tunnel: the
// agent transport's DialContext ignores the address and dials the tunnel
// of the request's upstream, and the request line carries only the path
// (the Host header is the client's), so its host never reaches anyone.
// The ".invalid" name (RFC 6761) resolves nowhere should it ever be
// dialed by a transport that is not the agent transport.
var agentURL = &url.URL{Scheme: "http", Host: "agent.invalid"}

// endless is the lease end of an endpoint's upstream: it has none.
var endless = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)

// health is the passive health of one tunnel: after a failed request
// the tunnel is skipped until the backoff ends. It is carried over from
// snapshot to snapshot by tunnel ID.
type health struct{ until atomic.Int64 } // unix nanoseconds; 0: healthy

func (h *health) ok(now time.Time) bool {
	u := h.until.Load()
	return u == 0 || now.UnixNano() >= u
}

func (h *health) fail(until time.Time) { h.until.Store(until.UnixNano()) }

func (h *health) succeed() {
	if h.until.Load() != 0 {
		h.until.Store(0)
	}
}

// pick returns the upstream of the next request: round-robin over the
// tunnels whose lease has not ended, skipping those in a failure backoff
// while another is available, and preferring an agent's tunnel held on
// node local (this proxy's own node, "" for none) to one reached through
// the hop. With every live tunnel in backoff it still returns one (the
// next in turn) rather than refuse the request; with no live tunnel it
// returns nil. Agents' tunnels are candidates only when agents is true
// (the caller has an [agents.Dialer]); otherwise they are skipped as a
// tunnel that does not say where it forwards is.
func (r *pool) pick(now time.Time, agents bool, local string) *upstream {
	n := len(r.upstreams)
	if n == 0 || (!agents && r.agents == n) {
		return nil
	}
	turn := int(r.next.Add(1) - 1)
	if r.spread {
		local = ""
	}
	usable := func(u *upstream) bool {
		// unreachable here, or the lease ended (the tunnel is not reaped yet)
		return (!u.agent || agents) && now.Before(u.expires)
	}
	near := func(u *upstream) bool { return local == "" || !u.agent || u.node == local }
	// The healthy near ones take turns; a far one (held by another node)
	// only when no near one is healthy, then the far ones take turns.
	for _, wantNear := range []bool{true, false} {
		healthy := 0
		for i := range r.upstreams {
			if u := &r.upstreams[i]; usable(u) && near(u) == wantNear && u.health.ok(now) {
				healthy++
			}
		}
		if healthy == 0 {
			continue
		}
		k := turn % healthy
		for i := range r.upstreams {
			if u := &r.upstreams[i]; usable(u) && near(u) == wantNear && u.health.ok(now) {
				if k == 0 {
					return u
				}
				k--
			}
		}
	}
	for i := range n {
		if u := &r.upstreams[(turn+i)%n]; usable(u) {
			return u // every one in backoff: the next in turn rather than a refusal
		}
	}
	return nil
}

// newEdge returns the snapshot of an edge (base holds its config: one of
// Config, TLS and TCP) with its route pipelines or its upstream pool.
// What derives from the config alone, and each tunnel's health, is taken
// from old when it has the same config.
func newEdge(base Edge, tunnels map[string][]backends.Tunnel, certs map[string]*tls.Certificate, rev int64, old *Edge) *Edge {
	e := &Edge{Config: base.Config, TLS: base.TLS, TCP: base.TCP, Endpoint: base.Endpoint, ep: base.ep,
		Restrictions: base.Restrictions, Tunnels: tunnels, Certificates: certs, Revision: rev}
	healths := map[string]*health{}
	if old != nil {
		old.eachPool(func(p *pool) {
			for _, u := range p.upstreams {
				healths[u.tunnelID] = u.health
			}
		})
	}
	fill := func(p *pool, b *edgeconfig.Backend, what string) {
		if b == nil {
			p.noUpstream = "this " + what + " has no backend"
			return
		}
		p.noUpstream = "no online tunnel serves this " + what
		for _, t := range tunnels[b.BackendID] {
			u := upstream{tunnelID: t.ID, expires: t.ExpiresAt, node: t.Node}
			if u.expires.IsZero() {
				u.expires = endless // an agent's tunnel: online while its node's lease is
			}
			ok := true
			switch {
			case t.TunnelSession != nil:
				// An agent holds the tunnel: its forwards_to is
				// informational ("app://laptop/server?pid=12", or an
				// address on the agent's side) and is never dialed.
				u.agent = true
				if e.Config != nil {
					u.url = agentURL
				}
				p.agents++
			case e.Config != nil:
				u.url, ok = tunnelUpstream(t.ForwardsTo)
			default:
				u.addr, ok = tunnelAddr(t.ForwardsTo)
			}
			if !ok {
				continue // the tunnel does not say where it forwards
			}
			u.health = healths[t.ID]
			if u.health == nil {
				u.health = &health{}
				healths[t.ID] = u.health
			}
			p.upstreams = append(p.upstreams, u)
		}
	}
	switch {
	case e.ep != nil:
		// The agent's session that holds the endpoint is its one
		// upstream, by the endpoint's ID; it has no lease of its own (the
		// endpoint goes with its session).
		p := &pool{}
		if e.ep.route != nil {
			e.epRoute = &route{cfg: e.ep.route, static: e.ep.static}
			p = &e.epRoute.pool
		} else {
			e.stream = p
		}
		u := upstream{tunnelID: e.Endpoint.ID, agent: true, node: e.Endpoint.Node, expires: endless, health: healths[e.Endpoint.ID]}
		if e.epRoute != nil {
			u.url = agentURL
		}
		if u.health == nil {
			u.health = &health{}
		}
		p.upstreams, p.agents, p.noUpstream = []upstream{u}, 1, "no agent serves this endpoint here"
		return e
	case e.TLS != nil:
		e.stream = &pool{}
		fill(e.stream, e.TLS.Backend, "edge")
		return e
	case e.TCP != nil:
		e.stream = &pool{}
		fill(e.stream, e.TCP.Backend, "edge")
		return e
	}
	cfg := e.Config
	e.routes = make(map[string]*route, len(cfg.Routes))
	for _, rc := range cfg.Routes {
		rt := &route{cfg: rc}
		if old != nil && old.Config == cfg {
			rt.static = old.routes[rc.RouteID].static
		} else {
			rt.static = newRouteStatic(rc.TrafficPolicy)
		}
		fill(&rt.pool, rc.Backend, "route")
		e.routes[rc.RouteID] = rt
		if rc.OIDC != nil {
			e.oidcRoutes = append(e.oidcRoutes, rt)
		}
	}
	return e
}

// eachPool calls f with each upstream pool of e: its routes' or its own.
func (e *Edge) eachPool(f func(*pool)) {
	if e.stream != nil {
		f(e.stream)
	}
	if e.epRoute != nil {
		f(&e.epRoute.pool)
	}
	for _, r := range e.routes {
		f(&r.pool)
	}
}

// tunnelAddr returns where a TLS or TCP edge's connection to a tunnel
// goes, host:port, from the tunnel's forwards_to: a tcp or tls URL (the
// connection's bytes go to its host and port as they are: a TLS edge
// that terminates TLS sends plaintext, one that passes TLS through sends
// the client's TLS), or an http or https URL (port 80 or 443 unless
// given). Anything else is not an upstream.
func tunnelAddr(s string) (string, bool) {
	u, err := url.Parse(s)
	if err != nil || u.Hostname() == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" || (u.Path != "" && u.Path != "/") {
		return "", false
	}
	port := u.Port()
	switch u.Scheme {
	case "http":
		port = cmp.Or(port, "80")
	case "https":
		port = cmp.Or(port, "443")
	case "tcp", "tls":
	default:
		return "", false
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", false
	}
	return net.JoinHostPort(u.Hostname(), port), true
}

// tunnelUpstream parses a tunnel's forwards_to as the URL the proxy
// sends requests to: an absolute http(s) URL with a host and without
// user info, query or fragment. Anything else is not an upstream.
func tunnelUpstream(s string) (*url.URL, bool) {
	if s == "" {
		return nil, false
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, false
	}
	return u, true
}

// newRouteStatic indexes a compiled traffic policy's actions by
// location.
func newRouteStatic(p *policy.Policy) *routeStatic {
	st := &routeStatic{}
	if p == nil {
		return st
	}
	data, err := p.MarshalJSON()
	if err != nil {
		return st
	}
	doc, err := policy.Parse(data)
	if err != nil {
		return st // a compiled policy always parses again
	}
	st.hasOutbound = len(doc.Outbound) > 0
	st.actionTypes = map[string]string{}
	index := func(key string, rules []policy.Rule) {
		for i, rule := range rules {
			for j, a := range rule.Actions {
				st.actionTypes[fmt.Sprintf("%s[%d].actions[%d]", key, i, j)] = a.Type
			}
		}
	}
	index(orDefault(doc.InboundKey, policy.KeyInbound), doc.Inbound)
	index(orDefault(doc.OutboundKey, policy.KeyOutbound), doc.Outbound)
	st.forwardsInternal = forwardsInternal(st)
	return st
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
