package proxy

import (
	"crypto/tls"
	"fmt"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/policy"
)

// route is one route's pipeline in a snapshot: its config, what the
// handler derives from its traffic policy, and the upstreams of its
// backend's tunnels.
type route struct {
	cfg    *edges.HTTPSRouteConfig
	static *routeStatic
	// upstreams are the tunnels of the route's backend that say where
	// they forward, newest first; pick skips those whose lease ended.
	// noUpstream says why a request gets 503 when none is usable.
	upstreams  []upstream
	noUpstream string
	next       atomic.Uint32 // round-robin position
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
}

// upstream is one tunnel a route may send a request to.
type upstream struct {
	tunnelID string
	url      *url.URL
	expires  time.Time // the lease's end
	health   *health
}

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
// while another is available. With every live tunnel in backoff it still
// returns one (the next in turn) rather than refuse the request; with no
// live tunnel it returns nil.
func (r *route) pick(now time.Time) *upstream {
	n := len(r.upstreams)
	if n == 0 {
		return nil
	}
	start := int(r.next.Add(1) - 1)
	var fallback *upstream
	for i := range n {
		u := &r.upstreams[(start+i)%n]
		if !now.Before(u.expires) {
			continue // the lease ended; the tunnel is not reaped yet
		}
		if u.health.ok(now) {
			return u
		}
		if fallback == nil {
			fallback = u
		}
	}
	return fallback
}

// newEdge returns the snapshot of an edge with its route pipelines. What
// derives from the config alone, and each tunnel's health, is taken from
// old when it has the same config.
func newEdge(cfg *edges.HTTPSEdgeConfig, tunnels map[string][]backends.Tunnel, certs map[string]*tls.Certificate, rev int64, old *Edge) *Edge {
	e := &Edge{Config: cfg, Tunnels: tunnels, Certificates: certs, Revision: rev, routes: make(map[string]*route, len(cfg.Routes))}
	healths := map[string]*health{}
	if old != nil {
		for _, r := range old.routes {
			for _, u := range r.upstreams {
				healths[u.tunnelID] = u.health
			}
		}
	}
	for _, rc := range cfg.Routes {
		rt := &route{cfg: rc}
		if old != nil && old.Config == cfg {
			rt.static = old.routes[rc.RouteID].static
		} else {
			rt.static = newRouteStatic(rc.TrafficPolicy)
		}
		if rc.Backend == nil {
			rt.noUpstream = "this route has no backend"
		} else {
			rt.noUpstream = "no online tunnel serves this route"
			for _, t := range tunnels[rc.Backend.BackendID] {
				u, ok := tunnelUpstream(t.ForwardsTo)
				if !ok {
					continue // the tunnel does not say where it forwards
				}
				h := healths[t.ID]
				if h == nil {
					h = &health{}
					healths[t.ID] = h
				}
				rt.upstreams = append(rt.upstreams, upstream{tunnelID: t.ID, url: u, expires: t.ExpiresAt, health: h})
			}
		}
		e.routes[rc.RouteID] = rt
		if rc.OIDC != nil {
			e.oidcRoutes = append(e.oidcRoutes, rt)
		}
	}
	return e
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
	return st
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
