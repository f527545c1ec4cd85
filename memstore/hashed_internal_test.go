package memstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/store"
	"github.com/edgeplane/edgeplane/storetest"
)

// hashes are the hash functions the tests of the hashed maps run with:
// one that collides every string, one that collides many, and the
// store's own.
var hashes = []struct {
	name string
	hash func(string) uint64
}{
	{"all collide", func(string) uint64 { return 0 }},
	{"last byte", func(s string) uint64 {
		if s == "" {
			return 0
		}
		return uint64(s[len(s)-1] % 4)
	}},
	{"seeded", seededHash()},
}

// TestConformanceCollidingHash: a store whose maps of IDs and keys find
// every string through a collision (all of them hash to 0) is a correct
// store.
func TestConformanceCollidingHash(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return newWithHash(Options{}, func(string) uint64 { return 0 })
	})
}

// TestHashedMatchesAMap drives a hashed map with random puts and deletes
// and checks every get, of strings held or not, against a Go map, for
// each hash: colliding entries go to the overflow map and come back up
// when the entry of their hash is deleted. It checks the invariant that
// makes a get of an absent hash stop at the main map: every string of the
// overflow map has its hash in the main map.
func TestHashedMatchesAMap(t *testing.T) {
	for _, hf := range hashes {
		t.Run(hf.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(3, 4))
			var names []string // what each value names: the string stored there
			model := map[string]uint32{}
			h := newHashed(hf.hash, func(v uint32, s string) bool { return names[v] == s })
			str := func() string { return fmt.Sprintf("s%d", r.IntN(60)) }
			for step := range 5000 {
				s := str()
				if r.IntN(3) > 0 {
					if _, ok := model[s]; !ok { // a new place for s, as a new record would have
						names = append(names, s)
						v := uint32(len(names) - 1)
						h.put(s, v)
						model[s] = v
					}
				} else if v, ok := model[s]; ok {
					h.del(s)
					names[v] = "" // the place is emptied after the delete, as a slot is
					delete(model, s)
				} else {
					h.del(s) // absent: no effect
				}
				if h.len() != len(model) {
					t.Fatalf("step %d: %d entries, want %d", step, h.len(), len(model))
				}
				for x := range h.over {
					if _, ok := h.m[h.hash(x)]; !ok {
						t.Fatalf("step %d: %q overflows, but its hash is not in the main map", step, x)
					}
				}
				for i := range 60 {
					x := fmt.Sprintf("s%d", i)
					want, wantOK := model[x]
					if got, ok := h.get(x); got != want || ok != wantOK {
						t.Fatalf("step %d: get(%q) = %d, %v; want %d, %v", step, x, got, ok, want, wantOK)
					}
				}
			}
		})
	}
}

// TestCollidingIDsAndKeys drives stores with random creates, updates
// and deletes of records with several keys and index values each, and
// checks every Get, Lookup and List by value against a model, for each
// hash: with the colliding ones, a record's own keys collide with each
// other and with other records' IDs and keys, and deletes promote
// overflowing entries; a record's own index values, which share their
// first 16 bytes, are told apart by the values in its slot.
func TestCollidingIDsAndKeys(t *testing.T) {
	ctx := context.Background()
	for _, hf := range hashes {
		t.Run(hf.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(5, 6))
			s := newWithHash(Options{}, hf.hash)
			owner := map[string]string{}    // key -> ID
			keysOf := map[string][]string{} // ID -> keys
			valuesOf := map[string][]store.IndexEntry{}
			// Six values, of two heads of 16 bytes.
			value := func(i int) string { return fmt.Sprintf("%016d", 0)[:15+i%2] + fmt.Sprint(i) }
			randomValues := func() []store.IndexEntry {
				var es []store.IndexEntry
				for range r.IntN(4) {
					es = append(es, store.IndexEntry{Name: "i", Value: value(r.IntN(6))})
				}
				return es
			}
			randomKeys := func() []string {
				var ks []string
				for range r.IntN(4) {
					if k := fmt.Sprintf("k%d", r.IntN(30)); !slices.Contains(ks, k) {
						ks = append(ks, k)
					}
				}
				return ks
			}
			// free reports whether ks are held by no record but id.
			free := func(id string, ks []string) bool {
				for _, k := range ks {
					if o, ok := owner[k]; ok && o != id {
						return false
					}
				}
				return true
			}
			for step := range 3000 {
				id := fmt.Sprintf("r%d", r.IntN(40))
				ks, vs := randomKeys(), randomValues()
				_, exists := keysOf[id]
				var err error
				switch op := r.IntN(3); {
				case !exists && op < 2:
					err = s.Create(ctx, store.Record{Kind: "k", AccountID: "a", ID: id, Keys: ks, Indexes: vs})
					if want := free(id, ks); (err == nil) != want {
						t.Fatalf("step %d: create %s %v: %v, want success %v", step, id, ks, err, want)
					}
				case exists && op == 0:
					_, err = s.Update(ctx, "k", "a", id, func(rec *store.Record) error {
						rec.Keys = ks
						if r.IntN(2) == 0 { // else the values stay
							rec.Indexes = vs
						} else {
							vs = rec.Indexes
						}
						return nil
					})
					if want := free(id, ks); (err == nil) != want {
						t.Fatalf("step %d: update %s to %v: %v, want success %v", step, id, ks, err, want)
					}
					if err == nil {
						for _, k := range keysOf[id] {
							delete(owner, k)
						}
					}
				case exists:
					if err := s.Delete(ctx, "k", "a", id, store.Note{}); err != nil {
						t.Fatalf("step %d: delete %s: %v", step, id, err)
					}
					for _, k := range keysOf[id] {
						delete(owner, k)
					}
					delete(keysOf, id)
					delete(valuesOf, id)
					err = errors.New("deleted")
				default:
					err = errors.New("nothing to do")
				}
				if err == nil {
					keysOf[id], valuesOf[id] = ks, vs
					for _, k := range ks {
						owner[k] = id
					}
				}
				for i := range 40 {
					id := fmt.Sprintf("r%d", i)
					got, err := s.Get(ctx, "k", "a", id)
					if ks, ok := keysOf[id]; ok != (err == nil) || ok && (got.ID != id || !slices.Equal(got.Keys, ks)) {
						t.Fatalf("step %d: Get(%s) = %s %v, %v; want present %v with keys %v", step, id, got.ID, got.Keys, err, ok, ks)
					}
				}
				for i := range 30 {
					k := fmt.Sprintf("k%d", i)
					got, err := s.Lookup(ctx, "k", k)
					if id, ok := owner[k]; ok != (err == nil) || ok && got.ID != id || !ok && !errors.Is(err, apierr.ErrNotFound) {
						t.Fatalf("step %d: Lookup(%s) = %s, %v; want %q", step, k, got.ID, err, id)
					}
				}
				for i := range 6 {
					v := value(i)
					list, err := s.List(ctx, store.Query{Kind: "k", AccountID: "a", Index: "i", Value: v, Limit: 100})
					if err != nil {
						t.Fatal(err)
					}
					var got, want []string
					for _, rec := range list {
						got = append(got, rec.ID)
					}
					for id, vs := range valuesOf {
						if slices.Contains(vs, store.IndexEntry{Name: "i", Value: v}) {
							want = append(want, id)
						}
					}
					slices.Sort(want)
					slices.Reverse(want)
					if !slices.Equal(got, want) {
						t.Fatalf("step %d: List by %q = %v, want %v", step, v, got, want)
					}
				}
			}
			if hf.name == "all collide" && len(s.recs.over) == 0 {
				t.Error("no ID overflowed: the test did not test the overflow map")
			}
		})
	}
}

// TestKeysReordered: an update that reorders a record's keys, whose
// places among its keys name them in the keys map, keeps every key, for
// each hash. (With one that collides every key, entering the new keys
// while the slot still held the old record would find key b's entry in
// key a's old place and write over it.)
func TestKeysReordered(t *testing.T) {
	ctx := context.Background()
	for _, hf := range hashes {
		t.Run(hf.name, func(t *testing.T) {
			s := newWithHash(Options{}, hf.hash)
			if err := s.Create(ctx, store.Record{Kind: "k", AccountID: "a", ID: "r", Keys: []string{"b", "a"}}); err != nil {
				t.Fatal(err)
			}
			for _, keys := range [][]string{{"a", "b"}, {"b", "c", "a"}, {"a"}} {
				if _, err := s.Update(ctx, "k", "a", "r", func(rec *store.Record) error {
					rec.Keys = keys
					return nil
				}); err != nil {
					t.Fatal(err)
				}
				for _, k := range []string{"a", "b", "c"} {
					_, err := s.Lookup(ctx, "k", k)
					if want := slices.Contains(keys, k); want != (err == nil) {
						t.Errorf("keys %v: Lookup(%s): %v", keys, k, err)
					}
				}
			}
		})
	}
}
