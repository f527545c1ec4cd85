package agentstate

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/credentials"
	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/identity"
	"github.com/edgeplane/edgeplane/internal/ids"
	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/resource"
	"github.com/edgeplane/edgeplane/store"
)

// RegisterTunnel records an online tunnel under a lease from now (the
// Host's RegisterTunnel): token authenticates the credential it is a
// child of, whose ACL must permit every one of its labels. Reported as
// the tunnel's created event.
func (s *State) RegisterTunnel(ctx context.Context, token string, params backends.RegisterTunnelParams) (*backends.Tunnel, error) {
	auth, err := s.recs.Authenticate(ctx, token)
	if err != nil {
		return nil, err
	}
	if err := params.Validate(); err != nil {
		return nil, err
	}
	if err := checkLabelsAllowed(auth.ACL, params.Labels); err != nil {
		return nil, err
	}
	k := s.tunnels.Kind
	t := params.Tunnel()
	t.ID, t.AccountID, t.StartedAt = s.ids.New(backends.TunnelPrefix), auth.AccountID, s.db.Timestamp()
	t.ExpiresAt = t.StartedAt.Add(s.lease)
	t.Credential = resource.Ref{ID: auth.CredentialID}
	rec := store.Record{Kind: k.StoreKind, AccountID: auth.AccountID, ID: t.ID, ParentID: auth.CredentialID, Indexes: tunnelIndexes(&t)}
	if err := s.tunnels.Encode(s.db, &t, &rec); err != nil {
		return nil, err
	}
	rec.Note = s.db.Note(k.Event, events.Created)
	if err := s.store.Create(ctx, rec); err != nil {
		var miss *store.MissingRefError
		if errors.As(err, &miss) {
			return nil, s.badToken // the credential was deleted meanwhile
		}
		return nil, err
	}
	s.recs.PresentTunnel(&t)
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

// UnregisterTunnel removes an online tunnel of the account, registered
// or started in a session, reported as its deleted event (the Host's
// UnregisterTunnel).
func (s *State) UnregisterTunnel(ctx context.Context, accountID, id string) error {
	return s.remove(ctx, s.tunnels.Kind, accountID, id)
}

// SelectTunnels calls visit with the account's online tunnel records
// that carry all of labels and whose lease (a registered tunnel's own,
// an agent's tunnel's node's) has not ended, newest first, at most
// [backends.MaxTunnels] of them, and stops at visit's first error. It
// reads the tunnels that carry one of the labels (the first key in
// order) through the label index; a backend without labels (which the
// API never stores) selects none.
func (s *State) SelectTunnels(ctx context.Context, accountID string, labels map[string]string, visit func(store.Record) error) error {
	if len(labels) == 0 {
		return nil
	}
	key := slices.Min(slices.Collect(maps.Keys(labels)))
	q := store.Query{Kind: s.tunnels.StoreKind, AccountID: accountID, Index: indexLabel, Value: key + "=" + labels[key], Limit: records.MaxPageSize}
	selected := 0
	now := s.db.Now()
	nodeEnds := map[string]time.Time{} // the nodes of the tunnels read, each read once
	for {
		recs, err := s.store.List(ctx, q)
		if err != nil {
			return s.db.StoreErr(err, s.tunnels.Kind, "")
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
			if selected == backends.MaxTunnels {
				s.db.Log.Warn("a backend selects more online tunnels than are shown; older tunnels are left out",
					"account", accountID, "shown", backends.MaxTunnels)
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

// BackendTunnels returns the online tunnels of the account that carry
// all of labels, a backend's, as [State.SelectTunnels] selects them,
// presented; never nil.
func (s *State) BackendTunnels(ctx context.Context, accountID string, labels map[string]string) ([]backends.Tunnel, error) {
	out := []backends.Tunnel{}
	err := s.SelectTunnels(ctx, accountID, labels, func(rec store.Record) error {
		t, err := s.tunnels.Decode(s.db, rec)
		if err != nil {
			return err
		}
		s.recs.PresentTunnel(t)
		out = append(out, *t)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// RenewTunnel extends the lease of a registered tunnel of the account
// to the State's lease from now (the Host's RenewTunnel); one whose
// lease has ended is a failed precondition.
func (s *State) RenewTunnel(ctx context.Context, accountID, id string) (*backends.Tunnel, error) {
	k := s.tunnels.Kind
	if !ids.Valid(id, backends.TunnelPrefix) || !ids.Valid(accountID, identity.AccountPrefix) {
		return nil, k.NotFound(id)
	}
	var out *backends.Tunnel
	now := s.db.Now()
	_, err := s.store.Update(ctx, k.StoreKind, accountID, id, func(rec *store.Record) error {
		t, err := s.tunnels.Decode(s.db, *rec)
		if err != nil {
			return err
		}
		if t.Expired(now) {
			return apierr.New(apierr.FailedPrecondition, "the lease of tunnel %s ended at %s; register the tunnel again", id, t.ExpiresAt.Format(time.RFC3339))
		}
		t.ExpiresAt = now.UTC().Truncate(time.Second).Add(s.lease)
		if err := s.tunnels.Encode(s.db, t, rec); err != nil {
			return err
		}
		rec.Indexes = tunnelIndexes(t)
		out = t
		return nil
	})
	if err != nil {
		return nil, s.db.StoreErr(err, k, id)
	}
	s.recs.PresentTunnel(out)
	return out, nil
}

// Reap removes up to limit sessions and registered tunnels, across all
// accounts, whose lease ended before now, and returns how many it
// removed (the Host's ReapTunnels): the sessions of nodes whose lease
// ended first (their tunnels and endpoints go with them), then
// registered tunnels whose lease ended.
func (s *State) Reap(ctx context.Context, limit int) (int, error) {
	if limit <= 0 {
		return 0, apierr.Invalidf("limit", "must be positive, got %d", limit)
	}
	now := s.db.Now()
	reaped, err := s.nodes.Reap(ctx, now, limit)
	if err != nil || reaped == limit {
		return reaped, err
	}
	n, err := s.reapExpired(ctx, s.tunnels.Kind, now, limit-reaped)
	return reaped + n, err
}

// reapExpired removes up to limit records of kind k, across all
// accounts, whose lease (the indexLeaseEnd entry) ended before now, each
// with its children and reported as k's deleted event, and returns how
// many it removed. A record written since it was read (renewed) is kept.
func (s *State) reapExpired(ctx context.Context, k *records.Kind, now time.Time, limit int) (int, error) {
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
