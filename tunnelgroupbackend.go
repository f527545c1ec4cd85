package edgeplane

import (
	"context"
	"time"

	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/internal/storedforms"

	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/resource"
	"github.com/edgeplane/edgeplane/store"
)

// The identity of the kind this file declares (see kindList).
var (
	backendKind = &records.Kind{StoreKind: KindTunnelGroupBackend, Prefix: backends.IDPrefix, Collection: "backends/tunnel_group", Noun: "tunnel group backend", Event: "tunnel_group_backend"}
)

var backendForm = &kind[backends.TunnelGroupBackend]{Form: storedforms.Backend(backendKind), present: (*Service).presentBackendRecord, shown: showBackend}

// presentBackendRecord is presentBackend as a kind's present.
func (s *Service) presentBackendRecord(b *backends.TunnelGroupBackend, _ store.Record) {
	s.presentBackend(b)
}

// showBackend completes a presented backend with its tunnels: a
// backend's changes show the tunnels it selects when they are reported.
func showBackend(ctx context.Context, s *Service, b *backends.TunnelGroupBackend, rec store.Record) (any, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return b, s.withTunnels(ctx, Principal{AccountID: rec.AccountID}, b)
}

// presentBackend fills the backend's URI and label map.
func (s *Service) presentBackend(b *backends.TunnelGroupBackend) {
	b.URI = s.uri(backendKind.Collection, b.ID)
	if b.Labels == nil {
		b.Labels = map[string]string{}
	}
}

// withTunnels presents b with the Refs of the online tunnels it selects,
// newest first (see internal/agentstate's State.SelectTunnels).
func (s *Service) withTunnels(ctx context.Context, p Principal, b *backends.TunnelGroupBackend) error {
	s.presentBackend(b)
	b.Tunnels = []resource.Ref{}
	return s.agentState.SelectTunnels(ctx, p.AccountID, b.Labels, func(rec store.Record) error {
		b.Tunnels = append(b.Tunnels, s.ref(tunnelKind.Collection, rec.ID))
		return nil
	})
}

// CreateTunnelGroupBackend creates a tunnel group backend (POST
// /backends/tunnel_group). Its tunnels are the account's online tunnels
// that carry all of its labels.
func (s *Service) CreateTunnelGroupBackend(ctx context.Context, p Principal, params backends.CreateParams) (*backends.TunnelGroupBackend, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	if err := params.Validate(); err != nil {
		return nil, err
	}
	v := params.Backend()
	v.ID, v.CreatedAt = s.ids.New(backends.IDPrefix), s.timestamp()
	if err := records.Create(ctx, s.db, p, backendForm.Form, v.ID, "", &v, nil); err != nil {
		return nil, err
	}
	if err := s.withTunnels(ctx, p, &v); err != nil {
		return nil, err
	}
	return &v, nil
}

// GetTunnelGroupBackend returns a tunnel group backend (GET
// /backends/tunnel_group/{id}).
func (s *Service) GetTunnelGroupBackend(ctx context.Context, p Principal, id string) (*backends.TunnelGroupBackend, error) {
	v, _, err := records.Get(ctx, s.db, p, backendForm.Form, id)
	if err != nil {
		return nil, err
	}
	if err := s.withTunnels(ctx, p, v); err != nil {
		return nil, err
	}
	return v, nil
}

// ListTunnelGroupBackends returns a page of the account's tunnel group
// backends, newest first (GET /backends/tunnel_group, list field
// "backends"). The online tunnels of each backend on the page are read
// for it; with a filter that does not read obj.tunnels, only for the
// backends that match.
func (s *Service) ListTunnelGroupBackends(ctx context.Context, p Principal, opts ListOptions) (*Page[backends.TunnelGroupBackend], error) {
	show := func(b *backends.TunnelGroupBackend, _ store.Record) (*backends.TunnelGroupBackend, error) {
		s.presentBackend(b)
		b.Tunnels = []resource.Ref{}
		return b, nil
	}
	tunnels := records.LateField[backends.TunnelGroupBackend]{Name: "tunnels", Fill: func(b *backends.TunnelGroupBackend) error {
		return s.withTunnels(ctx, p, b)
	}}
	return listAs(ctx, s, p, backendForm.Form, "", backendKind.Collection, opts, show, tunnels)
}

// UpdateTunnelGroupBackend changes the fields present in params (PATCH
// /backends/tunnel_group/{id}); labels, when present, replace the whole
// set.
func (s *Service) UpdateTunnelGroupBackend(ctx context.Context, p Principal, id string, params backends.UpdateParams) (*backends.TunnelGroupBackend, error) {
	if err := params.Validate(); err != nil {
		return nil, err
	}
	v, err := records.Update(ctx, s.db, p, backendForm.Form, id, func(v *backends.TunnelGroupBackend, _ *store.Record) error {
		params.Apply(v)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := s.withTunnels(ctx, p, v); err != nil {
		return nil, err
	}
	return v, nil
}

// DeleteTunnelGroupBackend deletes a tunnel group backend (DELETE
// /backends/tunnel_group/{id}). It fails with a conflict naming the
// referrers while an edge module references the backend.
func (s *Service) DeleteTunnelGroupBackend(ctx context.Context, p Principal, id string) error {
	return records.Remove(ctx, s.db, p, backendKind, id)
}
