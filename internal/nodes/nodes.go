package nodes

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
	"github.com/edgeplane/edgeplane/internal/seal"
	"github.com/edgeplane/edgeplane/kinds"
	"github.com/edgeplane/edgeplane/resource"
	"github.com/edgeplane/edgeplane/store"
)

const (
	// account is the account ID every node record is stored under:
	// nodes belong to the store, not to an account.
	account = "node"
	// SessionIndex is the secondary index of tunnel sessions by node:
	// every session record carries it, with its node's ID as the value.
	SessionIndex = "node"
	// indexLeaseEnd is the secondary index of nodes by the end of their
	// lease (the name tunnels' index has too).
	indexLeaseEnd = "lease_end"
)

// doc is the stored form of a node.
type doc struct {
	Addr      string    `json:"addr,omitempty"`
	Region    string    `json:"region,omitempty"`
	Version   string    `json:"version,omitempty"`
	StartedAt time.Time `json:"started_at"`
	ExpiresAt time.Time `json:"expires_at"`
}

func decode(rec store.Record) (*agents.Node, error) {
	var d doc
	if err := json.Unmarshal(rec.Data, &d); err != nil {
		return nil, apierr.Wrap(apierr.Internal, err, "internal error")
	}
	return &agents.Node{ID: rec.ID, Addr: d.Addr, Region: d.Region, Version: d.Version, StartedAt: d.StartedAt, ExpiresAt: d.ExpiresAt}, nil
}

func encode(n *agents.Node, rec *store.Record) error {
	b, err := json.Marshal(doc{Addr: n.Addr, Region: n.Region, Version: n.Version, StartedAt: n.StartedAt, ExpiresAt: n.ExpiresAt})
	if err != nil {
		return apierr.Wrap(apierr.Internal, err, "internal error")
	}
	rec.Data = b
	rec.Indexes = []store.IndexEntry{{Name: indexLeaseEnd, Value: store.IndexTime(n.ExpiresAt)}}
	return nil
}

// kind is the identity of nodes for the store's errors; nodes are not an
// API kind.
var kind = &records.Kind{StoreKind: kinds.Node, Prefix: agents.NodePrefix, Noun: "node"}

func notFound(id string) error { return kind.NotFound(id) }

// ended is the error of a renewal after the node's lease ended.
func ended(id string, at time.Time) error {
	return apierr.New(apierr.FailedPrecondition, "the lease of node %s ended at %s; its sessions are offline: register a new node", id, at.Format(time.RFC3339))
}

// Registry registers, renews, reads and removes the edge nodes of one
// store, and the tunnel sessions they hold with them. It holds no state
// of its own (every node is a record of the store), so it is safe for
// concurrent use.
type Registry struct {
	store    store.Store
	db       *records.DB
	now      func() time.Time
	ids      *ids.Generator
	lease    time.Duration
	sealer   *seal.Sealer
	sessions *records.Kind
}

// New returns the Registry of the nodes in st, whose store errors db
// maps to the API's ([records.DB.StoreErr]), on the clock now: node IDs
// come from gen, a node's lease lasts lease from its registration or
// renewal, the node key derives from sealer's key, and sessions is the
// identity of tunnel sessions (their store kind, noun and event), whose
// records carry [SessionIndex] and which Remove and Reap delete with
// their node, each reported as sessions' deleted event.
func New(st store.Store, db *records.DB, now func() time.Time, gen *ids.Generator, lease time.Duration, sealer *seal.Sealer, sessions *records.Kind) *Registry {
	return &Registry{store: st, db: db, now: now, ids: gen, lease: lease, sealer: sealer, sessions: sessions}
}

// Register records a new node under a lease from now and returns it
// with its ID. params are validated ([agents.NodeParams.Validate]).
func (r *Registry) Register(ctx context.Context, params agents.NodeParams) (*agents.Node, error) {
	if err := params.Validate(); err != nil {
		return nil, err
	}
	n := &agents.Node{ID: r.ids.New(agents.NodePrefix), Addr: params.Addr, Region: params.Region, Version: params.Version, StartedAt: resource.Timestamp(r.now())}
	n.ExpiresAt = n.StartedAt.Add(r.lease)
	rec := store.Record{Kind: kind.StoreKind, AccountID: account, ID: n.ID}
	if err := encode(n, &rec); err != nil {
		return nil, err
	}
	if err := r.store.Create(ctx, rec); err != nil {
		return nil, r.db.StoreErr(err, kind, n.ID)
	}
	return n, nil
}

// Renew extends the lease of node id from now. A node whose lease has
// already ended is not renewed (failed precondition); one that is gone
// is not found.
func (r *Registry) Renew(ctx context.Context, id string) (*agents.Node, error) {
	if !ids.Valid(id, agents.NodePrefix) {
		return nil, notFound(id)
	}
	now := r.now()
	var out *agents.Node
	_, err := r.store.Update(ctx, kind.StoreKind, account, id, func(rec *store.Record) error {
		n, err := decode(*rec)
		if err != nil {
			return err
		}
		if !now.Before(n.ExpiresAt) {
			return ended(id, n.ExpiresAt)
		}
		n.ExpiresAt = now.UTC().Truncate(time.Second).Add(r.lease)
		out = n
		return encode(n, rec)
	})
	if err != nil {
		return nil, r.db.StoreErr(err, kind, id)
	}
	return out, nil
}

// Get returns node id, live or not; one that is gone is not found.
func (r *Registry) Get(ctx context.Context, id string) (*agents.Node, error) {
	if !ids.Valid(id, agents.NodePrefix) {
		return nil, notFound(id)
	}
	rec, err := r.store.Get(ctx, kind.StoreKind, account, id)
	if err != nil {
		return nil, r.db.StoreErr(err, kind, id)
	}
	return decode(rec)
}

// List returns every registered node, newest first.
func (r *Registry) List(ctx context.Context) ([]agents.Node, error) {
	q := store.Query{Kind: kind.StoreKind, AccountID: account, Limit: records.MaxPageSize}
	out := []agents.Node{}
	for {
		recs, err := r.store.List(ctx, q)
		if err != nil {
			return nil, r.db.StoreErr(err, kind, "")
		}
		for _, rec := range recs {
			n, err := decode(rec)
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

// Remove removes node id and every session it holds.
func (r *Registry) Remove(ctx context.Context, id string) error {
	if !ids.Valid(id, agents.NodePrefix) {
		return notFound(id)
	}
	if _, err := r.removeSessions(ctx, id, -1); err != nil {
		return err
	}
	return r.db.StoreErr(r.store.Delete(ctx, kind.StoreKind, account, id, store.Note{}), kind, id)
}

// removeSessions removes up to limit (negative: all) sessions of node
// id, each with its children (tunnels and endpoints) and reported as the
// sessions' deleted event, and returns how many it removed.
func (r *Registry) removeSessions(ctx context.Context, id string, limit int) (int, error) {
	removed := 0
	for limit < 0 || removed < limit {
		n := records.MaxPageSize
		if limit >= 0 {
			n = min(n, limit-removed)
		}
		recs, err := r.store.List(ctx, store.Query{Kind: r.sessions.StoreKind, Index: SessionIndex, Value: id, Limit: n})
		if err != nil {
			return removed, r.db.StoreErr(err, r.sessions, "")
		}
		for _, rec := range recs {
			err := r.store.Delete(ctx, r.sessions.StoreKind, rec.AccountID, rec.ID, r.db.Note(r.sessions.Event, events.Deleted))
			switch {
			case errors.Is(err, apierr.ErrNotFound):
				// closed meanwhile
			case err != nil:
				return removed, r.db.StoreErr(err, r.sessions, rec.ID)
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

// Reap removes up to limit sessions of nodes whose lease ended before
// now, then those nodes once they hold none, and returns the sessions
// removed.
func (r *Registry) Reap(ctx context.Context, now time.Time, limit int) (int, error) {
	recs, err := r.store.List(ctx, store.Query{Kind: kind.StoreKind, AccountID: account, Index: indexLeaseEnd,
		Value: store.IndexTime(now.Add(time.Nanosecond)), Below: true, Limit: records.MaxPageSize})
	if err != nil {
		return 0, r.db.StoreErr(err, kind, "")
	}
	reaped := 0
	for _, rec := range recs {
		if reaped >= limit {
			break
		}
		n, err := r.removeSessions(ctx, rec.ID, limit-reaped)
		reaped += n
		if err != nil {
			return reaped, err
		}
		if reaped >= limit {
			break // maybe more sessions: the node stays until the next call
		}
		// A node's lease that ended is never renewed (Renew refuses), so
		// no session can be added to it: remove it now it holds none.
		if err := r.store.DeleteIf(ctx, kind.StoreKind, account, rec.ID, rec.Version, store.Note{}); err != nil && !errors.Is(err, apierr.ErrNotFound) {
			var ve *store.VersionError
			if !errors.As(err, &ve) {
				return reaped, r.db.StoreErr(err, kind, rec.ID)
			}
		}
	}
	return reaped, nil
}

// Live reports whether node id is registered and its lease has not
// ended: a session opens only on a live node (else invalid, naming
// node).
func (r *Registry) Live(ctx context.Context, id string) error {
	n, err := r.Get(ctx, id)
	if errors.Is(err, apierr.ErrNotFound) {
		return apierr.Invalidf("node", "node %s is not registered (its lease ended, or it was removed): register the node again", id)
	}
	if err != nil {
		return err
	}
	if !r.now().Before(n.ExpiresAt) {
		return apierr.Invalidf("node", "the lease of node %s ended at %s: register the node again", id, n.ExpiresAt.Format(time.RFC3339))
	}
	return nil
}

// SessionLive returns nil when the node of a session holds it under a
// live lease, and a failed precondition naming both otherwise: a
// session of a node whose lease ended is offline (to be reaped) and
// binds nothing.
func (r *Registry) SessionLive(ctx context.Context, sessionID, node string) error {
	n, err := r.Get(ctx, node)
	switch {
	case errors.Is(err, apierr.ErrNotFound):
		return apierr.New(apierr.FailedPrecondition, "tunnel session %s is offline: its node %s is gone; the agent must open a new session", sessionID, node)
	case err != nil:
		return err
	case !r.now().Before(n.ExpiresAt):
		return apierr.New(apierr.FailedPrecondition, "tunnel session %s is offline: the lease of its node %s ended at %s; the agent must open a new session",
			sessionID, node, n.ExpiresAt.Format(time.RFC3339))
	}
	return nil
}

// Key returns the Ed25519 private key every node of the store derives
// from the sealing key.
func (r *Registry) Key() ed25519.PrivateKey {
	return ed25519.NewKeyFromSeed(r.sealer.Derive("edgeplane node hop key", ed25519.SeedSize))
}
