package edgeplane

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"time"

	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/internal/ids"
	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/kinds"
	"github.com/edgeplane/edgeplane/store"
)

// Edge nodes (package agents has the model): each tunnel server of the
// store registers itself as a node ([Host.RegisterNode]) and renews one
// lease for every session it holds ([Host.RenewNode]): liveness costs a
// store write per node per renewal, whatever the number of sessions,
// tunnels and endpoints. Sessions, and the agent tunnels and endpoints
// under them, name their node and have no lease of their own. A node
// whose lease ends is reaped ([Host.ReapTunnels]) with its sessions, each
// removal reported as a tunnel_session_deleted event (and the tunnels' and
// endpoints' with them). A node that shuts down removes itself and its
// sessions at once ([Host.RemoveNode]).
//
// Nodes are the Service's own records (an internal kind, stored under
// the pseudo-account nodeAccount): the API does not show them; the
// sessions and endpoints it shows carry their node's ID.

const (
	// kindNode is the store kind of nodes.
	kindNode = kinds.Node
	// nodeAccount is the account ID every node record is stored under:
	// nodes belong to the store, not to an account.
	nodeAccount = "node"
	// indexNode is the secondary index of tunnel sessions by node.
	indexNode = "node"
)

// nodeDoc is the stored form of a node.
type nodeDoc struct {
	Addr      string    `json:"addr,omitempty"`
	Region    string    `json:"region,omitempty"`
	Version   string    `json:"version,omitempty"`
	StartedAt time.Time `json:"started_at"`
	ExpiresAt time.Time `json:"expires_at"`
}

func decodeNode(rec store.Record) (*agents.Node, error) {
	var d nodeDoc
	if err := json.Unmarshal(rec.Data, &d); err != nil {
		return nil, apierr.Wrap(apierr.Internal, err, "internal error")
	}
	return &agents.Node{ID: rec.ID, Addr: d.Addr, Region: d.Region, Version: d.Version, StartedAt: d.StartedAt, ExpiresAt: d.ExpiresAt}, nil
}

func encodeNode(n *agents.Node, rec *store.Record) error {
	b, err := json.Marshal(nodeDoc{Addr: n.Addr, Region: n.Region, Version: n.Version, StartedAt: n.StartedAt, ExpiresAt: n.ExpiresAt})
	if err != nil {
		return apierr.Wrap(apierr.Internal, err, "internal error")
	}
	rec.Data = b
	rec.Indexes = []store.IndexEntry{{Name: indexLeaseEnd, Value: store.IndexTime(n.ExpiresAt)}}
	return nil
}

// nodeKind is the identity of nodes for the store's errors; nodes are
// not an API kind (not in kindList).
var nodeKind = &records.Kind{StoreKind: kindNode, Prefix: agents.NodePrefix, Noun: "node"}

func nodeNotFound(id string) error { return nodeKind.NotFound(id) }

// nodeEnded is the error of a renewal after the node's lease ended.
func nodeEnded(id string, at time.Time) error {
	return apierr.New(apierr.FailedPrecondition, "the lease of node %s ended at %s; its sessions are offline: register a new node", id, at.Format(time.RFC3339))
}

// registerNode is [Host.RegisterNode].
func (s *Service) registerNode(ctx context.Context, params agents.NodeParams) (*agents.Node, error) {
	if err := params.Validate(); err != nil {
		return nil, err
	}
	n := &agents.Node{ID: s.ids.New(agents.NodePrefix), Addr: params.Addr, Region: params.Region, Version: params.Version, StartedAt: s.timestamp()}
	n.ExpiresAt = n.StartedAt.Add(s.lease)
	rec := store.Record{Kind: kindNode, AccountID: nodeAccount, ID: n.ID}
	if err := encodeNode(n, &rec); err != nil {
		return nil, err
	}
	if err := s.store.Create(ctx, rec); err != nil {
		return nil, s.db.StoreErr(err, nodeKind, n.ID)
	}
	return n, nil
}

// renewNode is [Host.RenewNode].
func (s *Service) renewNode(ctx context.Context, id string) (*agents.Node, error) {
	if !ids.Valid(id, agents.NodePrefix) {
		return nil, nodeNotFound(id)
	}
	now := s.now()
	var out *agents.Node
	_, err := s.store.Update(ctx, kindNode, nodeAccount, id, func(rec *store.Record) error {
		n, err := decodeNode(*rec)
		if err != nil {
			return err
		}
		if !now.Before(n.ExpiresAt) {
			return nodeEnded(id, n.ExpiresAt)
		}
		n.ExpiresAt = now.UTC().Truncate(time.Second).Add(s.lease)
		out = n
		return encodeNode(n, rec)
	})
	if err != nil {
		return nil, s.db.StoreErr(err, nodeKind, id)
	}
	return out, nil
}

// getNode is [Host.GetNode].
func (s *Service) getNode(ctx context.Context, id string) (*agents.Node, error) {
	if !ids.Valid(id, agents.NodePrefix) {
		return nil, nodeNotFound(id)
	}
	rec, err := s.store.Get(ctx, kindNode, nodeAccount, id)
	if err != nil {
		return nil, s.db.StoreErr(err, nodeKind, id)
	}
	return decodeNode(rec)
}

// listNodes is [Host.ListNodes].
func (s *Service) listNodes(ctx context.Context) ([]agents.Node, error) {
	q := store.Query{Kind: kindNode, AccountID: nodeAccount, Limit: MaxPageSize}
	out := []agents.Node{}
	for {
		recs, err := s.store.List(ctx, q)
		if err != nil {
			return nil, s.db.StoreErr(err, nodeKind, "")
		}
		for _, rec := range recs {
			n, err := decodeNode(rec)
			if err != nil {
				return nil, err
			}
			out = append(out, *n)
		}
		if len(recs) < q.Limit {
			return out, nil
		}
		q.BeforeID = recs[len(recs)-1].ID
	}
}

// removeNode is [Host.RemoveNode].
func (s *Service) removeNode(ctx context.Context, id string) error {
	if !ids.Valid(id, agents.NodePrefix) {
		return nodeNotFound(id)
	}
	if _, err := s.removeNodeSessions(ctx, id, -1); err != nil {
		return err
	}
	return s.db.StoreErr(s.store.Delete(ctx, kindNode, nodeAccount, id, store.Note{}), nodeKind, id)
}

// removeNodeSessions removes up to limit (negative: all) sessions of node
// id, each with its tunnels and endpoints and reported as
// tunnel_session_deleted, and returns how many it removed and whether
// none is left.
func (s *Service) removeNodeSessions(ctx context.Context, id string, limit int) (int, error) {
	removed := 0
	for limit < 0 || removed < limit {
		n := MaxPageSize
		if limit >= 0 {
			n = min(n, limit-removed)
		}
		recs, err := s.store.List(ctx, store.Query{Kind: KindTunnelSession, Index: indexNode, Value: id, Limit: n})
		if err != nil {
			return removed, s.db.StoreErr(err, tunnelSessionKind, "")
		}
		for _, rec := range recs {
			err := s.store.Delete(ctx, KindTunnelSession, rec.AccountID, rec.ID, s.db.Note(tunnelSessionKind.Event, events.Deleted))
			switch {
			case errors.Is(err, apierr.ErrNotFound):
				// closed meanwhile
			case err != nil:
				return removed, s.db.StoreErr(err, tunnelSessionKind, rec.ID)
			default:
				removed++
			}
		}
		if len(recs) < n {
			return removed, nil
		}
	}
	return removed, nil
}

// reapNodes removes up to limit sessions of nodes whose lease ended
// before now, then those nodes once they hold none, and returns the
// sessions removed.
func (s *Service) reapNodes(ctx context.Context, now time.Time, limit int) (int, error) {
	recs, err := s.store.List(ctx, store.Query{Kind: kindNode, AccountID: nodeAccount, Index: indexLeaseEnd,
		Value: store.IndexTime(now.Add(time.Nanosecond)), Below: true, Limit: MaxPageSize})
	if err != nil {
		return 0, s.db.StoreErr(err, nodeKind, "")
	}
	reaped := 0
	for _, rec := range recs {
		if reaped >= limit {
			break
		}
		n, err := s.removeNodeSessions(ctx, rec.ID, limit-reaped)
		reaped += n
		if err != nil {
			return reaped, err
		}
		if reaped >= limit {
			break // maybe more sessions: the node stays until the next call
		}
		// A node's lease that ended is never renewed (renewNode refuses),
		// so no session can be added to it: remove it now it holds none.
		if err := s.store.DeleteIf(ctx, kindNode, nodeAccount, rec.ID, rec.Version, store.Note{}); err != nil && !errors.Is(err, apierr.ErrNotFound) {
			var ve *store.VersionError
			if !errors.As(err, &ve) {
				return reaped, s.db.StoreErr(err, nodeKind, rec.ID)
			}
		}
	}
	return reaped, nil
}

// nodeLive reports whether node id is registered and its lease has not
// ended: a session opens only on a live node.
func (s *Service) nodeLive(ctx context.Context, id string) error {
	n, err := s.getNode(ctx, id)
	if errors.Is(err, apierr.ErrNotFound) {
		return apierr.Invalidf("node", "node %s is not registered (its lease ended, or it was removed): register the node again", id)
	}
	if err != nil {
		return err
	}
	if !s.now().Before(n.ExpiresAt) {
		return apierr.Invalidf("node", "the lease of node %s ended at %s: register the node again", id, n.ExpiresAt.Format(time.RFC3339))
	}
	return nil
}

// sessionNodeLive returns nil when the node of a session holds it under
// a live lease, and a failed precondition naming both otherwise: a
// session of a node whose lease ended is offline (to be reaped) and
// binds nothing.
func (s *Service) sessionNodeLive(ctx context.Context, sessionID, node string) error {
	n, err := s.getNode(ctx, node)
	switch {
	case errors.Is(err, apierr.ErrNotFound):
		return apierr.New(apierr.FailedPrecondition, "tunnel session %s is offline: its node %s is gone; the agent must open a new session", sessionID, node)
	case err != nil:
		return err
	case !s.now().Before(n.ExpiresAt):
		return apierr.New(apierr.FailedPrecondition, "tunnel session %s is offline: the lease of its node %s ended at %s; the agent must open a new session",
			sessionID, node, n.ExpiresAt.Format(time.RFC3339))
	}
	return nil
}

// nodeKey returns the private key every node of the store derives from
// the sealing key ([Host.NodeKey]).
func (s *Service) nodeKey() ed25519.PrivateKey {
	return ed25519.NewKeyFromSeed(s.sealer.Derive("edgeplane node hop key", ed25519.SeedSize))
}
