package agentstate

import (
	"context"
	"slices"
	"strings"

	"github.com/edgeplane/edgeplane/kinds"
	"github.com/edgeplane/edgeplane/store"
)

// GuardEdges returns st with its writes of records that take the key of
// a hostport or a TCP port (edges) refused while an endpoint pool serves
// there, as a store refuses a key another record holds: with a
// [store.DuplicateError] naming the key, so the caller words it as any
// hostport already in use. An endpoint without pooling holds its
// hostport's key and so refuses an edge by itself; a pool's members hold
// none once they are indexed (see [State] createPooled), so without this
// guard an edge could be written on a pool's address. Writes of other
// kinds pass unchecked (a pool's member takes the keys for an instant on
// purpose).
//
// A create is checked before it is written and again after: a pool
// that formed in between makes the record deleted again (reported as
// the kind's deleted event when the create reported one) and the create
// refused, as a bind without pooling is. An update is checked before,
// on the keys it adds (its mutation runs once more on a copy to learn
// them; mutations have no effect but on their arguments); a pool that
// forms while the update commits is not caught.
func GuardEdges(st store.Store) store.Store { return edgeGuard{st} }

type edgeGuard struct{ store.Store }

// edgeKind reports whether records of kind are edges, which hold the
// keys of where they serve.
func edgeKind(kind store.Kind) bool {
	return kind == kinds.HTTPSEdge || kind == kinds.TLSEdge || kind == kinds.TCPEdge
}

// placeKeys returns the keys of keys that name where an edge serves
// ([kinds.IsPlaceKey]); a pool is indexed under one of them
// ([State.poolKey]).
func placeKeys(keys []string) []string {
	var out []string
	for _, k := range keys {
		if kinds.IsPlaceKey(k) {
			out = append(out, k)
		}
	}
	return out
}

// pooled returns a [store.DuplicateError] for the first of keys a pool is
// indexed under, nil when none is.
func (g edgeGuard) pooled(ctx context.Context, keys []string) error {
	for _, k := range keys {
		recs, err := g.Store.List(ctx, store.Query{Kind: kinds.Endpoint, Index: indexPool, Value: k, Limit: 1})
		if err != nil {
			return err
		}
		if len(recs) > 0 {
			return &store.DuplicateError{Key: k}
		}
	}
	return nil
}

func (g edgeGuard) Create(ctx context.Context, rec store.Record) error {
	keys := placeKeys(rec.Keys)
	if !edgeKind(rec.Kind) || len(keys) == 0 {
		return g.Store.Create(ctx, rec)
	}
	if err := g.pooled(ctx, keys); err != nil {
		return err
	}
	if err := g.Store.Create(ctx, rec); err != nil {
		return err
	}
	perr := g.pooled(ctx, keys)
	if perr == nil {
		return nil
	}
	note := rec.Note
	if ev, ok := strings.CutSuffix(note.Event, "_created.v0"); ok {
		note.Event = ev + "_deleted.v0"
	}
	if err := g.Store.Delete(ctx, rec.Kind, rec.AccountID, rec.ID, note); err != nil {
		return err
	}
	return perr
}

func (g edgeGuard) Update(ctx context.Context, kind store.Kind, accountID, id string, fn func(*store.Record) error) (store.Record, error) {
	if !edgeKind(kind) {
		return g.Store.Update(ctx, kind, accountID, id, fn)
	}
	cur, err := g.Store.Get(ctx, kind, accountID, id)
	if err != nil {
		return g.Store.Update(ctx, kind, accountID, id, fn) // the store answers as it would
	}
	trial := cur
	trial.Keys = slices.Clone(cur.Keys)
	trial.Refs = slices.Clone(cur.Refs)
	trial.Data = slices.Clone(cur.Data)
	if err := fn(&trial); err != nil {
		return store.Record{}, err
	}
	var added []string
	for _, k := range placeKeys(trial.Keys) {
		if !slices.Contains(cur.Keys, k) {
			added = append(added, k)
		}
	}
	if err := g.pooled(ctx, added); err != nil {
		return store.Record{}, err
	}
	return g.Store.Update(ctx, kind, accountID, id, fn)
}
