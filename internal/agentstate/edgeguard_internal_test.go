package agentstate

import (
	"context"
	"errors"
	"testing"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/kinds"
	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/store"
)

// poolForming is a store in which a pool forms at key while an edge's
// create is on its way, after the guard's first check.
type poolForming struct {
	store.Store
	key string
}

func (st poolForming) Create(ctx context.Context, rec store.Record) error {
	if rec.Kind == kinds.HTTPSEdge {
		member := store.Record{Kind: kinds.Endpoint, AccountID: "acc_b", ID: "ep_member", Data: []byte(`{}`),
			Indexes: []store.IndexEntry{{Name: indexPool, Value: st.key}}}
		if err := st.Store.Create(ctx, member); err != nil {
			return err
		}
	}
	return st.Store.Create(ctx, rec)
}

// TestGuardEdgesRace: a pool that forms between the guard's check and the
// edge's write makes the edge deleted again, its deletion reported as
// the kind's deleted event, and the create refused as a taken key; a
// write of a kind that is not an edge is not checked.
func TestGuardEdgesRace(t *testing.T) {
	ctx := context.Background()
	key := kinds.HostportKey("app.example.com:443")
	ms := memstore.New()
	g := GuardEdges(poolForming{Store: ms, key: key})
	edge := store.Record{Kind: kinds.HTTPSEdge, AccountID: "acc_a", ID: "edghts_1", Data: []byte(`{}`), Keys: []string{key},
		Note: store.Note{Event: "https_edge_created.v0"}}
	err := g.Create(ctx, edge)
	var dup *store.DuplicateError
	if !errors.As(err, &dup) || dup.Key != key {
		t.Fatalf("the create: %v", err)
	}
	if _, err := ms.Get(ctx, kinds.HTTPSEdge, "acc_a", "edghts_1"); !errors.Is(err, apierr.ErrNotFound) {
		t.Fatalf("the edge after the refusal: %v", err)
	}
	rev, err := ms.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := ms.Changes(ctx, rev-1, 1, store.WithoutData)
	if err != nil || len(cs) != 1 {
		t.Fatalf("the last change: %v, %v", cs, err)
	}
	last := cs[0]
	if last.Op != store.OpDelete || last.Note.Event != "https_edge_deleted.v0" {
		t.Errorf("the last change: %+v", last)
	}

	other := store.Record{Kind: kinds.Credential, AccountID: "acc_a", ID: "cr_1", Data: []byte(`{}`), Keys: []string{key}}
	if err := g.Create(ctx, other); err != nil {
		t.Errorf("a credential holding a key like a hostport's: %v", err)
	}
}
