package main

import (
	"context"
	"fmt"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/policy"
)

// snapshot is everything the proxy applies to requests at one moment: the
// edge's routes in matching order and, per route, what the pipeline
// needs. It is immutable once built (but for the round-robin counters) and
// shared by concurrent requests.
type snapshot struct {
	// version is the Options.Version reading the snapshot was built at.
	version uint64
	// expires is when the first tunnel lease the snapshot routes to ends
	// (zero when it routes to none): from then on it is rebuilt, so an
	// expired tunnel never receives traffic even when nothing was written.
	expires time.Time
	// edge matches a request path to a route (exact_path beats
	// path_prefix, the longest prefix wins).
	edge *edges.HTTPSEdgeConfig
	// routes holds the pipeline of each route of edge, by route ID.
	routes map[string]*route
}

// match returns the route of a request path, or nil.
func (s *snapshot) match(path string) *route {
	rc := s.edge.Route(path)
	if rc == nil {
		return nil
	}
	return s.routes[rc.RouteID]
}

// route is one route's pipeline.
type route struct {
	id string
	// policy is the route's traffic policy, nil when none is set and
	// enabled. hasOutbound says whether it has outbound rules, and
	// actionTypes maps the location of each of its actions
	// ("inbound[0].actions[1]") to the action's type, to classify what
	// ended a request.
	policy      *policy.Policy
	hasOutbound bool
	actionTypes map[string]string
	// oidc is set when an OIDC module is enabled: this proxy cannot
	// enforce it, so it refuses the route's traffic rather than let it
	// through unauthenticated.
	oidc bool
	// headers is the response headers module, nil when off.
	headers *edges.ResponseHeadersConfig
	// compress is the compression module.
	compress bool
	// upstreams are the local addresses of the online tunnels of the
	// route's backend, tried round-robin; none means 503. noUpstream says
	// why there are none.
	upstreams  []*url.URL
	noUpstream string
	next       atomic.Uint32
}

// pick returns the upstream of the next request, or nil.
func (r *route) pick() *url.URL {
	switch len(r.upstreams) {
	case 0:
		return nil
	case 1:
		return r.upstreams[0]
	}
	return r.upstreams[int(r.next.Add(1)-1)%len(r.upstreams)]
}

// setPolicy installs a compiled traffic policy, indexing its actions by
// location.
func (r *route) setPolicy(p *policy.Policy) error {
	r.policy = p
	if p == nil {
		return nil
	}
	data, err := p.MarshalJSON()
	if err != nil {
		return err
	}
	doc, err := policy.Parse(data)
	if err != nil {
		return fmt.Errorf("re-reading the compiled policy: %w", err)
	}
	r.hasOutbound = len(doc.Outbound) > 0
	r.actionTypes = map[string]string{}
	index := func(key string, rules []policy.Rule) {
		for i, rule := range rules {
			for j, a := range rule.Actions {
				r.actionTypes[fmt.Sprintf("%s[%d].actions[%d]", key, i, j)] = a.Type
			}
		}
	}
	index(orDefault(doc.InboundKey, policy.KeyInbound), doc.Inbound)
	index(orDefault(doc.OutboundKey, policy.KeyOutbound), doc.Outbound)
	return nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// standaloneRouteID names the one route of standalone mode.
const standaloneRouteID = "standalone"

// standaloneSnapshot returns the configuration of standalone mode: one
// path_prefix "/" route with the policy (possibly nil) in front of
// upstream.
func standaloneSnapshot(pol *policy.Policy, upstream *url.URL) (*snapshot, error) {
	rt := &route{id: standaloneRouteID, upstreams: []*url.URL{upstream}}
	if err := rt.setPolicy(pol); err != nil {
		return nil, err
	}
	rc := &edges.HTTPSRouteConfig{RouteID: standaloneRouteID, MatchType: edges.MatchPathPrefix, Match: "/"}
	return &snapshot{
		edge:   edges.NewHTTPSEdgeConfig("", "", []*edges.HTTPSRouteConfig{rc}),
		routes: map[string]*route{standaloneRouteID: rt},
	}, nil
}

// loader builds a snapshot; version is the Options.Version reading taken
// before it starts reading.
type loader func(ctx context.Context, version uint64) (*snapshot, error)
