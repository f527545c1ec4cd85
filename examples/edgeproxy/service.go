package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"sync/atomic"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/store"
)

// serviceLoader returns the loader of Service mode: the HTTPS edge's
// routes and modules ([edgeplane.Host.HTTPSEdgeConfig], traffic
// policies compiled) and, per backend, the forwards_to addresses of its
// online tunnels ([edgeplane.Host.BackendTunnels]).
func serviceLoader(svc *edgeplane.Service, accountID, edgeID string, log *slog.Logger) loader {
	return func(ctx context.Context, version uint64) (*snapshot, error) {
		cfg, err := svc.Host().HTTPSEdgeConfig(ctx, accountID, edgeID)
		if err != nil {
			return nil, fmt.Errorf("https edge %s: %w", edgeID, err)
		}
		s := &snapshot{version: version, edge: cfg, routes: make(map[string]*route, len(cfg.Routes))}
		tunnels := map[string][]*url.URL{} // by backend ID, read once per snapshot
		for _, rc := range cfg.Routes {
			rt := &route{id: rc.RouteID, oidc: rc.OIDC != nil, headers: rc.ResponseHeaders, compress: rc.Compression}
			if err := rt.setPolicy(rc.TrafficPolicy); err != nil {
				return nil, fmt.Errorf("route %s: %w", rc.RouteID, err)
			}
			switch {
			case rc.Backend == nil:
				rt.noUpstream = "this route has no backend"
			default:
				id := rc.Backend.BackendID
				ups, ok := tunnels[id]
				if !ok {
					ts, err := svc.Host().BackendTunnels(ctx, accountID, id)
					if err != nil {
						return nil, fmt.Errorf("route %s: backend %s: %w", rc.RouteID, id, err)
					}
					ups = []*url.URL{}
					for _, t := range ts {
						if s.expires.IsZero() || t.ExpiresAt.Before(s.expires) {
							s.expires = t.ExpiresAt
						}
						if t.ForwardsTo == "" {
							continue // the tunnel does not say where it forwards
						}
						u, err := url.Parse(t.ForwardsTo)
						if err != nil || checkUpstream(u) != nil {
							log.Warn("tunnel forwards_to is not a usable upstream", "tunnel", t.ID, "forwards_to", t.ForwardsTo)
							continue
						}
						ups = append(ups, u)
					}
					tunnels[id] = ups
				}
				rt.upstreams = ups
				rt.noUpstream = "no online tunnel of backend " + id + " forwards anywhere"
			}
			s.routes[rc.RouteID] = rt
		}
		return s, nil
	}
}

// storeRevision returns, as the proxy's Options.Version, the revision of
// the store's change feed: every committed write, of any record, moves it
// before the Service that made it answers, so a proxy in the same process
// that compares revisions sees a module replaced through the API from the
// next request on, without reading and recompiling the edge on every
// request. A change to something the edge does not depend on costs one
// needless rebuild, never a stale answer. When the store cannot answer,
// the last revision read is kept, and with it the snapshot in use.
func storeRevision(f store.Feed) func() uint64 {
	var last atomic.Uint64
	return func() uint64 {
		if rev, err := f.Revision(context.Background()); err == nil {
			last.Store(uint64(rev))
		}
		return last.Load()
	}
}
