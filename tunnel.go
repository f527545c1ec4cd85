package edgeplane

import (
	"context"

	"github.com/edgeplane/edgeplane/internal/agentstate"
	"github.com/edgeplane/edgeplane/internal/records"

	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/store"
)

// MaxBackendTunnels bounds the tunnels one backend selects
// ([backends.MaxTunnels]): its tunnels field and [hosting.DataPlaneHost.BackendTunnels]
// show at most this many, the newest. Beyond it older tunnels are left
// out, and a warning is logged. Finding them reads, through the store's
// label index, only tunnels that carry one of the backend's labels.
const MaxBackendTunnels = backends.MaxTunnels

// The identity of the kind this file declares (see kindList); its
// stored form is package internal/agentstate's.
var (
	tunnelKind = &records.Kind{StoreKind: KindTunnel, Prefix: backends.TunnelPrefix, Collection: "tunnels", Noun: "tunnel", Event: "tunnel", Parent: credentialKind}
)

var tunnelForm = &kind[backends.Tunnel]{Form: agentstate.TunnelForm(tunnelKind), present: (*Service).presentTunnel}

func (s *Service) presentTunnel(t *backends.Tunnel, _ store.Record) {
	t.URI = s.uri(tunnelKind.Collection, t.ID)
	t.Credential = s.ref(credentialKind.Collection, t.Credential.ID)
	if t.TunnelSession != nil {
		ref := s.ref(tunnelSessionKind.Collection, t.TunnelSession.ID)
		t.TunnelSession = &ref
	}
	if t.Labels == nil {
		t.Labels = map[string]string{}
	}
}

// GetTunnel returns an online tunnel of the account.
func (s *Service) GetTunnel(ctx context.Context, p Principal, id string) (*backends.Tunnel, error) {
	t, rec, err := records.Get(ctx, s.db, p, tunnelForm.Form, id)
	if err != nil {
		return nil, err
	}
	s.presentTunnel(t, rec)
	return t, nil
}

// ListTunnels returns a page of the account's online tunnels, newest
// first.
func (s *Service) ListTunnels(ctx context.Context, p Principal, opts ListOptions) (*Page[backends.Tunnel], error) {
	return list(ctx, s, p, tunnelForm.Form, "", tunnelKind.Collection, opts, s.presentTunnel)
}
