package memstore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/edgeplane/edgeplane/store"
)

// TestHandleSetMatchesAMap drives a handle set through adds (of handles
// it holds too), removes (of handles it lacks too) and phases that grow
// it past one chunk in order, as new slots come, and out of order, as
// reused ones do, then thin it out and empty it, checking after each step
// its handles, in order, and its chunks against a map[uint32]struct{}.
// It runs with small chunks, which split and merge often, and with the
// store's.
func TestHandleSetMatchesAMap(t *testing.T) {
	for _, max := range []int{2, 3, 8, setChunk} {
		t.Run(fmt.Sprintf("chunks of %d", max), func(t *testing.T) {
			r := rand.New(rand.NewPCG(5, uint64(max)))
			s := newHandleSetOf(max)
			model := map[uint32]struct{}{}
			universe := uint32(4 * max) // small enough that adds hit held handles, large enough for several chunks
			next := uint32(0)           // the next handle of an ascending run
			every := 1                  // check after every step; with the store's chunks (4096 handles), every 61st
			if max == setChunk {
				every = 61
			}
			check := func(step int, what string) {
				t.Helper()
				if step%every == 0 {
					checkHandleSet(t, fmt.Sprintf("step %d (%s)", step, what), s, max, model)
				}
			}
			// An ascending run of universe steps, then three phases of
			// 20*universe steps each.
			steps := 61 * int(universe)
			for step := range steps {
				var h uint32
				add := false
				phase := 0
				if step >= int(universe) {
					phase = 1 + 3*(step-int(universe))/(steps-int(universe))
				}
				switch {
				case phase == 0: // growing in order, now and then out of order
					add = true
					h = next
					next++
					if r.IntN(5) == 0 {
						h = r.Uint32N(universe)
					}
				case phase == 1: // mixed
					add, h = r.IntN(2) == 0, r.Uint32N(universe)
				case phase == 2: // thinning, with descending runs
					add, h = r.IntN(10) < 3, r.Uint32N(universe)
					if r.IntN(2) == 0 {
						h = universe - 1 - uint32(step%int(universe))
					}
				default: // emptying
					h = r.Uint32N(universe)
				}
				if r.IntN(50) == 0 {
					h = math.MaxUint32 - r.Uint32N(3) // the top of the range
				}
				if add {
					s.add(h)
					model[h] = struct{}{}
					check(step, fmt.Sprintf("add %d", h))
				} else {
					s.remove(h)
					delete(model, h)
					check(step, fmt.Sprintf("remove %d", h))
				}
			}
			checkHandleSet(t, "the last step", s, max, model)
			for h := range maps.Clone(model) {
				s.remove(h)
				delete(model, h)
				checkHandleSet(t, fmt.Sprintf("emptying: remove %d", h), s, max, model)
			}
			if s.len() != 0 || len(s.chunks) != 0 {
				t.Fatalf("the emptied set holds %d handles in %d chunks", s.len(), len(s.chunks))
			}
		})
	}
}

// checkHandleSet checks s's chunks: none empty or over max, each's last
// handle in lasts, and in order they hold the handles of model,
// ascending, len of them; and all stops when its yield says so.
func checkHandleSet(t *testing.T, at string, s *handleSet, max int, model map[uint32]struct{}) {
	t.Helper()
	if len(s.lasts) != len(s.chunks) {
		t.Fatalf("%s: %d lasts for %d chunks", at, len(s.lasts), len(s.chunks))
	}
	for c, ch := range s.chunks {
		if len(ch) == 0 || len(ch) > max {
			t.Fatalf("%s: a chunk of %d handles (max %d)", at, len(ch), max)
		}
		if s.lasts[c] != ch[len(ch)-1] {
			t.Fatalf("%s: chunk %d ends with %d, its last says %d", at, c, ch[len(ch)-1], s.lasts[c])
		}
	}
	want := slices.Sorted(maps.Keys(model))
	got := slices.Collect(s.all())
	if s.len() != len(model) || !slices.Equal(got, want) {
		t.Fatalf("%s: the set holds %d %v, want %v", at, s.len(), got, want)
	}
	if len(want) > 1 {
		var first []uint32
		for h := range s.all() {
			first = append(first, h)
			break
		}
		if !slices.Equal(first, want[:1]) {
			t.Fatalf("%s: a walk stopped after one handle yields %v, want %v", at, first, want[:1])
		}
	}
}

// TestHandleSetNil: a nil set yields nothing (a record that nothing
// references has none).
func TestHandleSetNil(t *testing.T) {
	var s *handleSet
	for h := range s.all() {
		t.Fatalf("a nil set yields %d", h)
	}
}

// TestHandleSetChunks checks the chunks that sequences of adds and
// removes leave, with chunks of at most 8: a chunk that falls below a
// quarter of that merges into a neighbour only when the two fit in one
// chunk, and a chunk that thins out gets an array of its size.
func TestHandleSetChunks(t *testing.T) {
	span := func(from, to uint32) []uint32 { // from..to, ascending or descending
		var hs []uint32
		for h := from; ; {
			hs = append(hs, h)
			if h == to {
				return hs
			}
			if from < to {
				h++
			} else {
				h--
			}
		}
	}
	for _, tc := range []struct {
		name        string
		add, remove []uint32
		want        []int // the chunks' lengths
	}{
		{"in order: full chunks", span(0, 19), nil, []int{8, 8, 4}},
		{"out of order: a full chunk splits", append(span(10, 17), 1), nil, []int{5, 4}},
		{"the first thins, its neighbour is full", span(0, 15), span(0, 6), []int{1, 8}},
		{"chunks a quarter full stay apart", span(0, 9), span(0, 5), []int{2, 2}},
		{"the first thins into its neighbour", span(0, 13), span(0, 6), []int{7}},
		{"a middle one thins, both neighbours full", span(0, 23), span(15, 9), []int{8, 1, 8}},
		{"a middle one thins into the last", span(0, 21), span(15, 9), []int{8, 7}},
		{"the last thins into the one before", span(0, 11), append(span(0, 3), span(11, 9)...), []int{5}},
		{"emptied", span(0, 19), span(19, 0), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newHandleSetOf(8)
			model := map[uint32]struct{}{}
			for _, h := range tc.add {
				s.add(h)
				model[h] = struct{}{}
			}
			for _, h := range tc.remove {
				s.remove(h)
				delete(model, h)
			}
			checkHandleSet(t, tc.name, s, 8, model)
			var got []int
			for _, ch := range s.chunks {
				got = append(got, len(ch))
				if cap(ch) > 2*len(ch)+4 && len(ch) < 8/4 {
					t.Errorf("a chunk of %d handles keeps an array of %d", len(ch), cap(ch))
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("chunks of %v handles, want %v", got, tc.want)
			}
		})
	}
}

// TestManyReferrers: a record that more records reference, and parent,
// than a chunk of a handle set holds, some of them in the slots of
// deleted ones (so that their handles come out of order), lists them all
// by reference, names them all when it is deleted, and cascades to all
// its children; once they are gone, nothing is left of its sets.
func TestManyReferrers(t *testing.T) {
	ctx := context.Background()
	s := New()
	const n = 2*setChunk + 100
	id := func(i int) string { return fmt.Sprintf("r_%05d", i) }
	mustCreate := func(rec store.Record) {
		t.Helper()
		if err := s.Create(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	mustDelete := func(kind store.Kind, id string) {
		t.Helper()
		if err := s.Delete(ctx, kind, "a", id, store.Note{}); err != nil {
			t.Fatal(err)
		}
	}
	mustCreate(store.Record{Kind: "owner", AccountID: "a", ID: "o_1"})
	mustCreate(store.Record{Kind: "parent", AccountID: "a", ID: "p_1"})
	for i := range n {
		mustCreate(store.Record{Kind: "k", AccountID: "a", ID: id(i), Refs: []string{"o_1"}})
		mustCreate(store.Record{Kind: "c", AccountID: "a", ID: "c" + id(i), ParentID: "p_1"})
	}
	// Every third deleted, then as many created again, newest first: each
	// takes the slot the last delete freed, a handle below others.
	var live []string // referrers, ascending
	for i := range n {
		if i%3 == 0 {
			mustDelete("k", id(i))
			mustDelete("c", "c"+id(i))
		} else {
			live = append(live, id(i))
		}
	}
	for i := n + n/3; i >= n; i-- {
		mustCreate(store.Record{Kind: "k", AccountID: "a", ID: id(i), Refs: []string{"o_1"}})
		mustCreate(store.Record{Kind: "c", AccountID: "a", ID: "c" + id(i), ParentID: "p_1"})
		live = append(live, id(i))
	}
	slices.Sort(live)

	got, err := s.List(ctx, store.Query{Kind: "k", AccountID: "a", RefersTo: "o_1", Limit: len(live) + 1})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range got {
		ids = append(ids, r.ID)
	}
	if slices.Reverse(ids); !slices.Equal(ids, live) {
		t.Fatalf("listed %d referrers, want %d: %v", len(ids), len(live), ids)
	}
	var inUse *store.InUseError
	if err := s.Delete(ctx, "owner", "a", "o_1", store.Note{}); !errors.As(err, &inUse) || !slices.Equal(inUse.Referrers, live) {
		t.Fatalf("Delete of the owner: %v, want an InUseError naming its %d referrers", err, len(live))
	}
	for _, id := range live {
		mustDelete("k", id)
	}
	if got := s.refBy; len(got) != 0 {
		t.Errorf("the referrers of %d records are left", len(got))
	}
	mustDelete("owner", "o_1")
	mustDelete("parent", "p_1") // and its children, as one cascade
	kids, err := s.List(ctx, store.Query{Kind: "c", AccountID: "a", Limit: 10})
	if err != nil || len(kids) != 0 || len(s.children) != 0 {
		t.Errorf("after the cascade: %d children listed (%v), the children of %d records left", len(kids), err, len(s.children))
	}
}

// BenchmarkHandleSetMiddle removes a random handle of a set of 400k,
// filled in order, and adds it back, per op: what a delete and a create
// into the freed slot do to the referrers of a record that 400k others
// reference.
func BenchmarkHandleSetMiddle(b *testing.B) {
	const n = 400_000
	s := newHandleSet()
	for h := range uint32(n) {
		s.add(h)
	}
	r := rand.New(rand.NewPCG(1, 2))
	b.ReportAllocs()
	for b.Loop() {
		h := r.Uint32N(n)
		s.remove(h)
		s.add(h)
	}
	if s.len() != n {
		b.Fatalf("%d handles, want %d", s.len(), n)
	}
}
