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
// routes and modules ([edgeplane.Service.HTTPSEdgeConfig], traffic
// policies compiled) and, per backend, the forwards_to addresses of its
// online tunnels ([edgeplane.Service.BackendTunnels]).
func serviceLoader(svc *edgeplane.Service, accountID, edgeID string, log *slog.Logger) loader {
	return func(ctx context.Context, version uint64) (*snapshot, error) {
		cfg, err := svc.HTTPSEdgeConfig(ctx, accountID, edgeID)
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
					ts, err := svc.BackendTunnels(ctx, accountID, id)
					if err != nil {
						return nil, fmt.Errorf("route %s: backend %s: %w", rc.RouteID, id, err)
					}
					ups = []*url.URL{}
					for _, t := range ts {
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

// versionedStore is a Store that counts its writes: its version changes
// after every write returns, before the Service that made it answers. A
// proxy in the same process (Options.Version) compares versions to know
// whether its snapshot of an edge may be stale, so that a module replaced
// through the API applies from the next request on, without reading and
// recompiling the edge on every request. Reads pass through untouched.
//
// It counts every write, of any record: a change to something the edge
// does not depend on costs one needless rebuild, never a stale answer.
type versionedStore struct {
	store.Store
	version atomic.Uint64
}

var _ store.Store = (*versionedStore)(nil)

// Version returns the number of writes so far.
func (s *versionedStore) Version() uint64 { return s.version.Load() }

// Create creates a record, then counts the write.
func (s *versionedStore) Create(ctx context.Context, rec store.Record) error {
	defer s.version.Add(1)
	return s.Store.Create(ctx, rec)
}

// Update updates a record, then counts the write.
func (s *versionedStore) Update(ctx context.Context, kind store.Kind, accountID, id string, fn func(*store.Record) error) (store.Record, error) {
	defer s.version.Add(1)
	return s.Store.Update(ctx, kind, accountID, id, fn)
}

// Delete deletes a record and its descendants, then counts the write.
func (s *versionedStore) Delete(ctx context.Context, kind store.Kind, accountID, id string) error {
	defer s.version.Add(1)
	return s.Store.Delete(ctx, kind, accountID, id)
}
