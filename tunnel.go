package edgeplane

import (
	"context"
	"errors"
	"github.com/edgeplane/edgeplane/store"
	"slices"
	"strings"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/internal/ids"
	"github.com/edgeplane/edgeplane/resource"
)

// KindTunnel is the kind of online tunnel records. A tunnel is a child of
// the credential whose authtoken registered it: deleting the credential
// takes its tunnels offline in the same atomic step.
const KindTunnel store.Kind = "tunnel"

var tunnelKind = kindInfo{KindTunnel, backends.TunnelPrefix, "tunnels", "tunnel"}

// MaxTunnelsScanned bounds the work of computing a backend's tunnels: the
// Service reads at most this many of the account's online tunnels, newest
// first, once per get, list page, create or update of a backend. Older
// tunnels beyond it are not shown, and a warning is logged.
const MaxTunnelsScanned = 10_000

// tunnelScanPage is the page size of that scan.
const tunnelScanPage = 1000

func (s *Service) presentTunnel(t *backends.Tunnel, _ store.Record) {
	t.URI = s.uri(tunnelKind.collection, t.ID)
	t.Credential = s.ref(credentialKind.collection, t.Credential.ID)
	if t.Labels == nil {
		t.Labels = map[string]string{}
	}
}

// RegisterTunnel records an online tunnel, as a tunnel server does when an
// agent opens one. token is the agent's authtoken
// ([Service.AuthenticateTunnelToken]); the tunnel belongs to the
// credential's account, and every one of its labels must be permitted by
// the credential's ACL (else permission denied naming the labels that are
// not). Authentication comes first: a bad token is unauthenticated whatever
// the params.
func (s *Service) RegisterTunnel(ctx context.Context, token string, params backends.RegisterTunnelParams) (*backends.Tunnel, error) {
	auth, err := s.AuthenticateTunnelToken(ctx, token)
	if err != nil {
		return nil, err
	}
	if err := params.Validate(); err != nil {
		return nil, err
	}
	if !auth.ACL.AllowsLabels(params.Labels) {
		var denied []string
		for k, v := range params.Labels {
			if !auth.ACL.AllowsLabels(map[string]string{k: v}) {
				denied = append(denied, k+"="+v)
			}
		}
		slices.Sort(denied)
		return nil, apierr.New(apierr.PermissionDenied, "the credential's ACL does not permit binding the labels %s; it needs a bind:<key>=<value> rule for each",
			strings.Join(denied, ", "))
	}
	t := params.Tunnel()
	t.ID, t.AccountID, t.StartedAt = s.ids.New(backends.TunnelPrefix), auth.AccountID, s.timestamp()
	t.Credential = resource.Ref{ID: auth.Credential.ID}
	p := Principal{AccountID: auth.AccountID}
	if err := s.create(ctx, p, tunnelKind, t.ID, auth.Credential.ID, &t, nil); err != nil {
		var miss *store.MissingRefError
		if errors.As(err, &miss) {
			return nil, errBadToken // the credential was deleted meanwhile
		}
		return nil, err
	}
	s.presentTunnel(&t, store.Record{})
	s.changed(ctx, p, "tunnel", "created", &t)
	return &t, nil
}

// UnregisterTunnel removes an online tunnel of the account, as a tunnel
// server does when the tunnel closes. It is a host operation. A tunnel
// that is already gone (for example because its credential was deleted) is
// not found.
func (s *Service) UnregisterTunnel(ctx context.Context, accountID, id string) error {
	if !ids.Valid(id, backends.TunnelPrefix) {
		return tunnelKind.notFound(id)
	}
	if err := s.store.Delete(ctx, KindTunnel, accountID, id); err != nil {
		return s.storeErr(err, tunnelKind, id)
	}
	s.changed(ctx, Principal{AccountID: accountID}, "tunnel", "deleted", s.ref(tunnelKind.collection, id))
	return nil
}

// GetTunnel returns an online tunnel of the account.
func (s *Service) GetTunnel(ctx context.Context, p Principal, id string) (*backends.Tunnel, error) {
	t, rec, err := get[backends.Tunnel](ctx, s, p, tunnelKind, id)
	if err != nil {
		return nil, err
	}
	s.presentTunnel(t, rec)
	return t, nil
}

// ListTunnels returns a page of the account's online tunnels, newest
// first.
func (s *Service) ListTunnels(ctx context.Context, p Principal, opts ListOptions) (*Page[backends.Tunnel], error) {
	return list(ctx, s, p, tunnelKind, "", tunnelKind.collection, opts, s.presentTunnel)
}

// onlineTunnel is what computing a backend's tunnels needs of a tunnel
// record: decoding only these fields costs a fraction of a full decode.
type onlineTunnel struct {
	ID     string            `json:"id"`
	Labels map[string]string `json:"labels"`
}

// onlineTunnels returns up to MaxTunnelsScanned of the account's online
// tunnels, newest first.
func (s *Service) onlineTunnels(ctx context.Context, accountID string) ([]onlineTunnel, error) {
	var out []onlineTunnel
	err := s.scanTunnels(ctx, accountID, func(rec store.Record) error {
		t, err := decode[onlineTunnel](rec)
		if err != nil {
			return err
		}
		out = append(out, *t)
		return nil
	})
	return out, err
}

// scanTunnels calls visit with up to MaxTunnelsScanned of the account's
// online tunnel records, newest first, and stops at visit's first error.
func (s *Service) scanTunnels(ctx context.Context, accountID string, visit func(store.Record) error) error {
	seen := 0
	before := ""
	for {
		limit := min(tunnelScanPage, MaxTunnelsScanned-seen)
		recs, err := s.store.List(ctx, store.Query{Kind: KindTunnel, AccountID: accountID, BeforeID: before, Limit: limit})
		if err != nil {
			return s.storeErr(err, tunnelKind, "")
		}
		for _, rec := range recs {
			if err := visit(rec); err != nil {
				return err
			}
		}
		seen += len(recs)
		if len(recs) < limit {
			return nil
		}
		if seen >= MaxTunnelsScanned {
			s.log.Warn("the account has more online tunnels than are scanned for backends; older tunnels are not shown",
				"account", accountID, "scanned", seen)
			return nil
		}
		before = recs[len(recs)-1].ID
	}
}

// BackendTunnels returns the online tunnels of the account that the
// tunnel group backend backendID selects, newest first: those that carry
// all of the backend's labels, found among the newest MaxTunnelsScanned
// online tunnels, as the backend's tunnels field shows them. It is a host
// operation, for the data plane that routes a backend's traffic to one of
// its tunnels (each tunnel says where its agent forwards, ForwardsTo). A
// backend that is missing or of another account is not found; a backend
// without tunnels gives an empty list, never nil.
func (s *Service) BackendTunnels(ctx context.Context, accountID, backendID string) ([]backends.Tunnel, error) {
	b, _, err := loadEdgeRecord[backends.TunnelGroupBackend](ctx, s, accountID, backendKind, backendID)
	if err != nil {
		return nil, err
	}
	out := []backends.Tunnel{}
	err = s.scanTunnels(ctx, accountID, func(rec store.Record) error {
		sel, err := decode[onlineTunnel](rec)
		if err != nil || !backends.Selects(b.Labels, sel.Labels) {
			return err
		}
		t, err := decode[backends.Tunnel](rec)
		if err != nil {
			return err
		}
		s.presentTunnel(t, rec)
		out = append(out, *t)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
