package nodes_test

import (
	"context"
	"crypto/ed25519"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/internal/ids"
	"github.com/edgeplane/edgeplane/internal/nodes"
	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/internal/seal"
	"github.com/edgeplane/edgeplane/kinds"
	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/store"
)

// clock is a fake clock that moves only when told.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

const lease = time.Minute

// sessions is the identity of tunnel sessions, as the root declares it.
var sessions = &records.Kind{StoreKind: kinds.TunnelSession, Prefix: agents.SessionPrefix, Noun: "tunnel session", Event: "tunnel_session"}

type env struct {
	r     *nodes.Registry
	st    *memstore.Store
	clock *clock
	key   []byte
}

func newEnv(t *testing.T) *env {
	t.Helper()
	c := &clock{t: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)}
	st := memstore.New()
	key := seal.NewKey()
	sealer, err := seal.New(key)
	if err != nil {
		t.Fatal(err)
	}
	db := &records.DB{Store: st, Log: slog.New(slog.DiscardHandler), Now: c.now}
	return &env{r: nodes.New(st, db, c.now, ids.NewGenerator(c.now), lease, sealer, sessions), st: st, clock: c, key: key}
}

// addSession stores a session record held by node, as the root does.
func (e *env) addSession(t *testing.T, id, node string) {
	t.Helper()
	rec := store.Record{Kind: kinds.TunnelSession, AccountID: "acct", ID: id, Data: []byte(`{}`),
		Indexes: []store.IndexEntry{{Name: nodes.SessionIndex, Value: node}}}
	if err := e.st.Create(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
}

// TestStoredForm: a node is a record of kind node under the account
// "node", with the document {addr, region, version, started_at,
// expires_at} and the index lease_end: stores written before the nodes
// moved to this package read the same.
func TestStoredForm(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	n, err := e.r.Register(ctx, agents.NodeParams{Addr: "10.0.0.1:4443", Region: "eu", Version: "1.2"})
	if err != nil {
		t.Fatal(err)
	}
	if !ids.Valid(n.ID, agents.NodePrefix) || !n.ExpiresAt.Equal(e.clock.t.Add(lease)) {
		t.Errorf("registered %+v; want an nd_ ID and a lease until %v", n, e.clock.t.Add(lease))
	}
	rec, err := e.st.Get(ctx, kinds.Node, "node", n.ID)
	if err != nil {
		t.Fatalf("the node's record: %v", err)
	}
	want := `{"addr":"10.0.0.1:4443","region":"eu","version":"1.2","started_at":"2025-03-01T12:00:00Z","expires_at":"2025-03-01T12:01:00Z"}`
	if string(rec.Data) != want {
		t.Errorf("stored document %s; want %s", rec.Data, want)
	}
	if len(rec.Indexes) != 1 || rec.Indexes[0] != (store.IndexEntry{Name: "lease_end", Value: store.IndexTime(n.ExpiresAt)}) {
		t.Errorf("stored indexes %v; want lease_end at %v", rec.Indexes, n.ExpiresAt)
	}
	if nodes.SessionIndex != "node" {
		t.Errorf("SessionIndex = %q; sessions are stored with the index node", nodes.SessionIndex)
	}
}

// TestLease: a node is live until its lease ends; a renewal extends it;
// one after it ended is refused and the node is reaped with its
// sessions, each removal labelled as a tunnel_session_deleted event.
func TestLease(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	n, err := e.r.Register(ctx, agents.NodeParams{})
	if err != nil {
		t.Fatal(err)
	}
	e.addSession(t, "ts_1", n.ID)
	e.addSession(t, "ts_2", n.ID)
	e.clock.t = e.clock.t.Add(lease / 2)
	if err := e.r.Live(ctx, n.ID); err != nil {
		t.Errorf("Live at half its lease: %v", err)
	}
	if _, err := e.r.Renew(ctx, n.ID); err != nil {
		t.Fatal(err)
	}
	if reaped, err := e.r.Reap(ctx, e.clock.t.Add(lease/2), 10); err != nil || reaped != 0 {
		t.Errorf("Reap within the renewed lease = %d, %v; want 0", reaped, err)
	}
	e.clock.t = e.clock.t.Add(lease)
	if _, err := e.r.Renew(ctx, n.ID); apierr.CodeOf(err) != apierr.FailedPrecondition {
		t.Errorf("Renew after the lease ended: %v; want failed precondition", err)
	}
	if err := e.r.Live(ctx, n.ID); apierr.CodeOf(err) != apierr.InvalidArgument {
		t.Errorf("Live after the lease ended: %v; want invalid argument", err)
	}
	if err := e.r.SessionLive(ctx, "ts_1", n.ID); apierr.CodeOf(err) != apierr.FailedPrecondition {
		t.Errorf("SessionLive after the lease ended: %v; want failed precondition", err)
	}
	rev, err := e.st.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if reaped, err := e.r.Reap(ctx, e.clock.t, 1); err != nil || reaped != 1 {
		t.Fatalf("Reap(1) = %d, %v; want 1", reaped, err)
	}
	if _, err := e.r.Get(ctx, n.ID); err != nil {
		t.Errorf("the node after a reap that left a session: %v; want it kept", err)
	}
	if reaped, err := e.r.Reap(ctx, e.clock.t, 10); err != nil || reaped != 1 {
		t.Fatalf("Reap(10) = %d, %v; want 1", reaped, err)
	}
	if _, err := e.r.Get(ctx, n.ID); !errors.Is(err, apierr.ErrNotFound) {
		t.Errorf("the reaped node: %v; want not found", err)
	}
	changes, err := e.st.Changes(ctx, rev, 10, store.WithoutData)
	if err != nil {
		t.Fatal(err)
	}
	deleted := 0
	for _, c := range changes {
		if c.Kind == kinds.TunnelSession {
			deleted++
			if c.Op != store.OpDelete || c.Note.Event != "tunnel_session_deleted.v0" {
				t.Errorf("a session's change %v %q; want a delete labelled tunnel_session_deleted.v0", c.Op, c.Note.Event)
			}
		}
	}
	if deleted != 2 {
		t.Errorf("%d sessions deleted; want 2", deleted)
	}
}

// TestRemove: a node removes itself and its sessions only; List shows
// what is left, newest first.
func TestRemove(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	a, err := e.r.Register(ctx, agents.NodeParams{})
	if err != nil {
		t.Fatal(err)
	}
	e.clock.t = e.clock.t.Add(time.Second)
	b, err := e.r.Register(ctx, agents.NodeParams{})
	if err != nil {
		t.Fatal(err)
	}
	e.clock.t = e.clock.t.Add(time.Second)
	c, err := e.r.Register(ctx, agents.NodeParams{})
	if err != nil {
		t.Fatal(err)
	}
	e.addSession(t, "ts_a", a.ID)
	e.addSession(t, "ts_b", b.ID)
	if err := e.r.Remove(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.Get(ctx, kinds.TunnelSession, "acct", "ts_a"); !errors.Is(err, apierr.ErrNotFound) {
		t.Errorf("the removed node's session: %v; want not found", err)
	}
	if _, err := e.st.Get(ctx, kinds.TunnelSession, "acct", "ts_b"); err != nil {
		t.Errorf("another node's session: %v; want it kept", err)
	}
	list, err := e.r.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].ID != c.ID || list[1].ID != b.ID {
		t.Errorf("List = %v; want %s, %s", list, c.ID, b.ID)
	}
	if err := e.r.Remove(ctx, "nd_nope"); !errors.Is(err, apierr.ErrNotFound) {
		t.Errorf("Remove of a malformed ID: %v; want not found", err)
	}
}

// TestKey: the node key derives from the sealing key alone: the same on
// every node of the store, another under another key.
func TestKey(t *testing.T) {
	e, other := newEnv(t), newEnv(t)
	same, err := seal.New(e.key)
	if err != nil {
		t.Fatal(err)
	}
	twin := nodes.New(e.st, nil, e.clock.now, nil, lease, same, sessions)
	if !e.r.Key().Equal(twin.Key()) {
		t.Error("two registries under one sealing key derive different keys")
	}
	if e.r.Key().Equal(other.r.Key()) {
		t.Error("registries under different sealing keys derive the same key")
	}
	if len(e.r.Key()) != ed25519.PrivateKeySize {
		t.Errorf("a key of %d bytes", len(e.r.Key()))
	}
}
