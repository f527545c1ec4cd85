package edgeplane

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/edgeplane/edgeplane/internal/records"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/credentials"
	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/internal/ids"
	"github.com/edgeplane/edgeplane/resource"
	"github.com/edgeplane/edgeplane/store"
)

// MaxBackendTunnels bounds the tunnels one backend selects
// ([backends.MaxTunnels]): its tunnels field and [DataPlaneHost.BackendTunnels]
// show at most this many, the newest. Beyond it older tunnels are left
// out, and a warning is logged. Finding them reads, through the store's
// label index, only tunnels that carry one of the backend's labels.
const MaxBackendTunnels = backends.MaxTunnels

// indexLabel is the secondary index of tunnels by label ("key=value").
const indexLabel = "label"

// indexLeaseEnd is the secondary index of tunnels by the end of their
// lease, read by [Host.ReapTunnels].
const indexLeaseEnd = "lease_end"

// tunnelIndexes returns a tunnel record's index entries: its labels and
// the end of its lease (a registered tunnel's; an agent's has none).
func tunnelIndexes(t *backends.Tunnel) []store.IndexEntry {
	out := make([]store.IndexEntry, 0, len(t.Labels)+1)
	for k, v := range t.Labels {
		out = append(out, store.IndexEntry{Name: indexLabel, Value: k + "=" + v})
	}
	if t.ExpiresAt.IsZero() {
		return out
	}
	return append(out, store.IndexEntry{Name: indexLeaseEnd, Value: store.IndexTime(t.ExpiresAt)})
}

// tunnelDoc is the stored form of a tunnel (see package internal/records). Its account
// is its record's. The record's parent is the credential that registered
// it ([Host.RegisterTunnel]), or, for a tunnel an agent started in its
// session ([TunnelHost.StartLabeledTunnel]), the session: then CredentialID
// holds the session's credential.
type tunnelDoc struct {
	StartedAt    time.Time         `json:"started_at"`
	Labels       map[string]string `json:"labels,omitempty"`
	ForwardsTo   string            `json:"forwards_to,omitempty"`
	ExpiresAt    time.Time         `json:"expires_at,omitzero"`
	CredentialID string            `json:"credential_id,omitempty"`
	Node         string            `json:"node,omitempty"`
	Metadata     string            `json:"metadata,omitempty"`
}

// The identity of the kind this file declares (see kindList).
var (
	tunnelKind = &records.Kind{StoreKind: KindTunnel, Prefix: backends.TunnelPrefix, Collection: "tunnels", Noun: "tunnel", Event: "tunnel", Parent: credentialKind}
)

var tunnelForm = &kind[backends.Tunnel]{Form: records.PlainForm(tunnelKind,
	func(t *backends.Tunnel) *tunnelDoc {
		d := &tunnelDoc{StartedAt: t.StartedAt, Labels: t.Labels, ForwardsTo: t.ForwardsTo, ExpiresAt: t.ExpiresAt, Metadata: t.Metadata, Node: t.Node}
		if t.TunnelSession != nil {
			d.CredentialID = t.Credential.ID // the record's parent is the session
		}
		return d
	},
	func(d *tunnelDoc, rec store.Record) *backends.Tunnel {
		t := &backends.Tunnel{ID: rec.ID, AccountID: rec.AccountID, StartedAt: d.StartedAt, Labels: maps.Clone(d.Labels),
			Credential: resource.Ref{ID: rec.ParentID}, ForwardsTo: d.ForwardsTo, ExpiresAt: d.ExpiresAt, Metadata: d.Metadata, Node: d.Node}
		if d.CredentialID != "" {
			t.Credential = resource.Ref{ID: d.CredentialID}
			t.TunnelSession = &resource.Ref{ID: rec.ParentID}
		}
		return t
	}), present: (*Service).presentTunnel}

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

// registerTunnel is [Host.RegisterTunnel].
func (s *Service) registerTunnel(ctx context.Context, token string, params backends.RegisterTunnelParams) (*backends.Tunnel, error) {
	auth, err := s.authenticateTunnelToken(ctx, token)
	if err != nil {
		return nil, err
	}
	if err := params.Validate(); err != nil {
		return nil, err
	}
	if err := checkLabelsAllowed(auth.ACL, params.Labels); err != nil {
		return nil, err
	}
	t := params.Tunnel()
	t.ID, t.AccountID, t.StartedAt = s.ids.New(backends.TunnelPrefix), auth.AccountID, s.timestamp()
	t.ExpiresAt = t.StartedAt.Add(s.lease)
	t.Credential = resource.Ref{ID: auth.Credential.ID}
	p := Principal{AccountID: auth.AccountID}
	rec := store.Record{Kind: KindTunnel, AccountID: p.AccountID, ID: t.ID, ParentID: auth.Credential.ID, Indexes: tunnelIndexes(&t)}
	if err := tunnelForm.Encode(s.db, &t, &rec); err != nil {
		return nil, err
	}
	if err := s.store.Create(ctx, noted(rec, s.db.Note(tunnelKind.Event, events.Created))); err != nil {
		var miss *store.MissingRefError
		if errors.As(err, &miss) {
			return nil, errBadToken // the credential was deleted meanwhile
		}
		return nil, err
	}
	s.presentTunnel(&t, store.Record{})
	return &t, nil
}

// checkLabelsAllowed returns nil when acl permits binding every one of
// labels, else a permission denied error naming, sorted, the labels it
// does not permit and the rule each needs.
func checkLabelsAllowed(acl *credentials.ACL, labels map[string]string) error {
	if acl.AllowsLabels(labels) {
		return nil
	}
	var denied []string
	for k, v := range labels {
		if !acl.AllowsLabels(map[string]string{k: v}) {
			denied = append(denied, k+"="+v)
		}
	}
	slices.Sort(denied)
	return apierr.New(apierr.PermissionDenied, "the credential's ACL does not permit binding the labels %s; it needs a bind:<key>=<value> rule for each",
		strings.Join(denied, ", "))
}

// unregisterTunnel is [Host.UnregisterTunnel].
func (s *Service) unregisterTunnel(ctx context.Context, accountID, id string) error {
	if !ids.Valid(id, backends.TunnelPrefix) {
		return tunnelKind.NotFound(id)
	}
	if err := s.store.Delete(ctx, KindTunnel, accountID, id, s.db.Note(tunnelKind.Event, events.Deleted)); err != nil {
		return s.db.StoreErr(err, tunnelKind, id)
	}
	return nil
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

// onlineTunnel is what selecting a backend's tunnels needs of a tunnel
// record (fields of tunnelDoc, under its names): decoding only these
// fields costs a fraction of a full decode.
type onlineTunnel struct {
	Labels    map[string]string `json:"labels"`
	ExpiresAt time.Time         `json:"expires_at,omitzero"`
	Node      string            `json:"node,omitempty"`
}

// selectTunnels calls visit with the account's online tunnel records that
// carry all of labels and whose lease (a registered tunnel's own, an
// agent's tunnel's node's) has not ended, newest first, at
// most [MaxBackendTunnels] of them, and stops at visit's first error. It reads the tunnels that carry one
// of the labels (the first key in order) through the label index; a
// backend without labels (which the API never stores) selects none.
func (s *Service) selectTunnels(ctx context.Context, accountID string, labels map[string]string, visit func(store.Record) error) error {
	if len(labels) == 0 {
		return nil
	}
	key := slices.Min(slices.Collect(maps.Keys(labels)))
	q := store.Query{Kind: KindTunnel, AccountID: accountID, Index: indexLabel, Value: key + "=" + labels[key], Limit: MaxPageSize}
	selected := 0
	now := s.now()
	nodeEnds := map[string]time.Time{} // the nodes of the tunnels read, each read once
	for {
		recs, err := s.store.List(ctx, q)
		if err != nil {
			return s.db.StoreErr(err, tunnelKind, "")
		}
		for _, rec := range recs {
			var t onlineTunnel
			if err := json.Unmarshal(rec.Data, &t); err != nil {
				return apierr.Wrap(apierr.Internal, err, "internal error")
			}
			if !backends.Selects(labels, t.Labels) || (!t.ExpiresAt.IsZero() && !now.Before(t.ExpiresAt)) {
				continue
			}
			if t.Node != "" {
				end, ok := nodeEnds[t.Node]
				if !ok {
					n, err := s.nodes.Get(ctx, t.Node)
					switch {
					case errors.Is(err, apierr.ErrNotFound): // reaped: the tunnel goes next
					case err != nil:
						return err
					default:
						end = n.ExpiresAt
					}
					nodeEnds[t.Node] = end
				}
				if !now.Before(end) {
					continue // its node's lease ended: offline, to be reaped
				}
			}
			if selected == MaxBackendTunnels {
				s.log.Warn("a backend selects more online tunnels than are shown; older tunnels are left out",
					"account", accountID, "shown", MaxBackendTunnels)
				return nil
			}
			selected++
			if err := visit(rec); err != nil {
				return err
			}
		}
		if len(recs) < q.Limit {
			return nil
		}
		q.BeforeID = recs[len(recs)-1].ID
	}
}

// backendTunnels is [DataPlaneHost.BackendTunnels].
func (s *Service) backendTunnels(ctx context.Context, accountID, backendID string) ([]backends.Tunnel, error) {
	b, _, err := loadEdgeRecord(ctx, s, accountID, backendForm.Form, backendID)
	if err != nil {
		return nil, err
	}
	out := []backends.Tunnel{}
	err = s.selectTunnels(ctx, accountID, b.Labels, func(rec store.Record) error {
		t, err := tunnelForm.Decode(s.db, rec)
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

// renewTunnel is [Host.RenewTunnel].
func (s *Service) renewTunnel(ctx context.Context, accountID, id string) (*backends.Tunnel, error) {
	if !ids.Valid(id, backends.TunnelPrefix) || !ids.Valid(accountID, AccountPrefix) {
		return nil, tunnelKind.NotFound(id)
	}
	var out *backends.Tunnel
	now := s.now()
	rec, err := s.store.Update(ctx, KindTunnel, accountID, id, func(rec *store.Record) error {
		t, err := tunnelForm.Decode(s.db, *rec)
		if err != nil {
			return err
		}
		if t.Expired(now) {
			return apierr.New(apierr.FailedPrecondition, "the lease of tunnel %s ended at %s; register the tunnel again", id, t.ExpiresAt.Format(time.RFC3339))
		}
		t.ExpiresAt = now.UTC().Truncate(time.Second).Add(s.lease)
		if err := tunnelForm.Encode(s.db, t, rec); err != nil {
			return err
		}
		rec.Indexes = tunnelIndexes(t)
		out = t
		return nil
	})
	if err != nil {
		return nil, s.db.StoreErr(err, tunnelKind, id)
	}
	s.presentTunnel(out, rec)
	return out, nil
}

// reapTunnels is [Host.ReapTunnels]: the sessions of nodes whose lease
// ended first (their tunnels and endpoints go with them), then
// registered tunnels whose lease ended.
func (s *Service) reapTunnels(ctx context.Context, limit int) (int, error) {
	if limit <= 0 {
		return 0, apierr.Invalidf("limit", "must be positive, got %d", limit)
	}
	now := s.now()
	reaped, err := s.nodes.Reap(ctx, now, limit)
	if err != nil || reaped == limit {
		return reaped, err
	}
	n, err := s.reapExpired(ctx, tunnelKind, now, limit-reaped)
	return reaped + n, err
}

// reapExpired removes up to limit records of kind k, across all
// accounts, whose lease (the indexLeaseEnd entry) ended before now, each
// with its children and reported as k's deleted event, and returns how
// many it removed. A record written since it was read (renewed) is kept.
func (s *Service) reapExpired(ctx context.Context, k *records.Kind, now time.Time, limit int) (int, error) {
	recs, err := s.store.List(ctx, store.Query{Kind: k.StoreKind, Index: indexLeaseEnd, Value: store.IndexTime(now.Add(time.Nanosecond)), Below: true, Limit: limit})
	if err != nil {
		return 0, s.db.StoreErr(err, k, "")
	}
	reaped := 0
	for _, rec := range recs {
		err := s.store.DeleteIf(ctx, k.StoreKind, rec.AccountID, rec.ID, rec.Version, s.db.Note(k.Event, events.Deleted))
		var ve *store.VersionError
		switch {
		case errors.As(err, &ve), errors.Is(err, apierr.ErrNotFound):
			continue // renewed, unregistered, closed or reaped meanwhile
		case err != nil:
			return reaped, s.db.StoreErr(err, k, rec.ID)
		}
		reaped++
	}
	return reaped, nil
}
