package memstore

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane/store"
)

// pair is an entry of the model of a secondary index.
type pair struct{ value, id string }

func comparePairs(a, b pair) int {
	return cmp.Or(strings.Compare(a.value, b.value), strings.Compare(a.id, b.id))
}

// TestIndexesMatchASortedModel drives the B-tree indexes with random
// inserts and deletes and checks every kind of read against a sorted
// slice of the same entries: pages of IDs from any cursor (stored or
// not), equality matches from any cursor, and matches below a bound.
//
// The IDs are short and long; many long ones share their first idHead
// (and valueHead) bytes, so that their items tie on the head and are
// ordered by the IDs in their slots, some are a short one padded with
// NULs, and the records' slots are released and reused as they are
// deleted and created again. So are the values, and the secondary index
// runs with the store's hash and with one that collides every value, so
// that the entries of values of one head interleave.
func TestIndexesMatchASortedModel(t *testing.T) {
	for _, hf := range hashes {
		if hf.name == "last byte" {
			continue
		}
		for _, max := range []int{listChunk, 8} { // 8: chunks split, merge and shrink often
			t.Run(fmt.Sprintf("%s/chunks of %d", hf.name, max), func(t *testing.T) { testIndexesMatchASortedModel(t, hf.hash, max) })
		}
	}
}

func testIndexesMatchASortedModel(t *testing.T, hash func(string) uint64, max int) {
	r := rand.New(rand.NewPCG(1, 2))
	var slots table
	handle := map[string]uint32{} // the handles of the IDs in x
	x := newIDsOf(&slots, max)
	var ids []string // model of x, ascending
	long := strings.Repeat("p", idHead)
	id := func() string {
		n := r.IntN(300)
		switch r.IntN(4) {
		case 0:
			return fmt.Sprintf("id_%03d", n)
		case 1:
			return fmt.Sprintf("id_%03d", n) + strings.Repeat("\x00", r.IntN(idHead)) // ties with id_n's head
		case 2:
			return long + fmt.Sprint(n) // all of one head
		default:
			return long[2:] + fmt.Sprintf("%03d", n) // ten of each head
		}
	}
	// The secondary index's records hold every value, the n-th as their
	// n-th index entry; they are made on first use and kept.
	vlong := strings.Repeat("w", valueHead)
	allValues := []string{"", "v0", "v1", "v1\x00", "v1\x00\x00", "v2", vlong, vlong + "0", vlong + "1", vlong + "10", vlong + "2", vlong[1:] + "3"}
	bounds := append([]string{"v", "v1\x00\x00\x00", vlong[:valueHead-1], vlong + "00", "z"}, allValues...)
	var vslots table
	vhandle := map[string]uint32{}
	vrecord := func(id string) uint32 {
		h, ok := vhandle[id]
		if !ok {
			rec := store.Record{}
			for _, v := range allValues {
				rec.Indexes = append(rec.Indexes, store.IndexEntry{Name: "i", Value: v})
			}
			h = vslots.add(pack(id, &rec))
			vhandle[id] = h
		}
		return h
	}
	v := newValues(&vslots)
	var vals []pair // model of v, ascending
	for step := range 6000 {
		n := r.IntN(len(allValues))
		e := pair{allValues[n], id()}
		ve := entryOf(e.value, hash(e.value), e.id, vrecord(e.id), uint32(n))
		switch r.IntN(3) {
		case 0, 1: // inserts twice as often as deletes, with repeats
			if _, ok := handle[e.id]; !ok {
				h := slots.add(pack(e.id, &store.Record{}))
				handle[e.id] = h
				x.add(itemOf(e.id, h))
			}
			if i, ok := slices.BinarySearch(ids, e.id); !ok {
				ids = slices.Insert(ids, i, e.id)
			}
			v.add(ve)
			if i, ok := slices.BinarySearchFunc(vals, e, comparePairs); !ok {
				vals = slices.Insert(vals, i, e)
			}
		default:
			if h, ok := handle[e.id]; ok {
				x.drop(itemOf(e.id, h))
				slots.release(h)
				delete(handle, e.id)
			}
			if i, ok := slices.BinarySearch(ids, e.id); ok {
				ids = slices.Delete(ids, i, i+1)
			}
			v.drop(ve)
			if i, ok := slices.BinarySearchFunc(vals, e, comparePairs); ok {
				vals = slices.Delete(vals, i, i+1)
			}
		}
		if x.empty() != (len(ids) == 0) || x.n != len(ids) || v.empty() != (len(vals) == 0) || v.t.Len() != len(vals) {
			t.Fatalf("step %d: %d IDs and %d entries, want %d and %d", step, x.n, v.t.Len(), len(ids), len(vals))
		}
		checkIDList(t, step, x, &slots, max, ids)
		before, limit := "", 1+r.IntN(20)
		switch r.IntN(8) {
		case 0:
		case 1: // a prefix of IDs, not itself one
			before = long[:idHead-r.IntN(2)] + fmt.Sprint(r.IntN(10))[:r.IntN(2)]
		default:
			before = id() // present or not
		}
		// pageOf: up to limit IDs below before, descending.
		var want []string
		for i := len(ids) - 1; i >= 0 && len(want) < limit; i-- {
			if before == "" || ids[i] < before {
				want = append(want, ids[i])
			}
		}
		var got []string
		for _, h := range pageOf(x, &slots, before, limit) {
			got = append(got, slots.at(h).id())
		}
		if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Fatalf("step %d: pageOf(%q, %d) = %q, want %q", step, before, limit, got, want)
		}
		// equal: the IDs of value w from the cursor down (the cursor's own
		// entry included: the caller skips it), descending.
		w := bounds[r.IntN(len(bounds))]
		want = want[:0]
		for i := len(vals) - 1; i >= 0; i-- {
			if e := vals[i]; e.value == w && (before == "" || e.id <= before) {
				want = append(want, e.id)
			}
		}
		got = got[:0]
		equal(v, &vslots, w, hash(w), before, func(h uint32) bool { got = append(got, vslots.at(h).id()); return true })
		if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Fatalf("step %d: equal(%q, %q) = %q, want %q", step, w, before, got, want)
		}
		// below: the IDs of every entry whose value sorts before w, in any
		// order.
		want = want[:0]
		for _, e := range vals {
			if e.value < w {
				want = append(want, e.id)
			}
		}
		got = got[:0]
		below(v, &vslots, w, func(h uint32) { got = append(got, vslots.at(h).id()) })
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Fatalf("step %d: below(%q) = %q, want %q", step, w, got, want)
		}
	}
}

// TestIDListMatchesAModel drives a list index with small chunks through
// repeated adds (replacing), drops of absent items, and phases that
// grow it, thin it out and empty it, checking after each step its items
// and chunks against a sorted model and a descent from a random bound.
func TestIDListMatchesAModel(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var slots table
	handle := map[string]uint32{}
	idOf := func(n int) string { return fmt.Sprintf("id_%03d", n) }
	for _, n := range r.Perm(400) {
		handle[idOf(n)] = slots.add(pack(idOf(n), &store.Record{}))
	}
	const max = 8
	x := newIDsOf(&slots, max)
	var model []string
	for step := range 8000 {
		addShare := []int{5, 2, 8, 1}[step/2000] // in tenths: mixed, thinning, growing, emptying
		id := idOf(r.IntN(400))
		if step%4000 >= 3000 && r.IntN(2) == 0 {
			id = idOf(400 - 1 - step%1000/3) // descending runs: inserts before the last chunk
		}
		if step >= 8000-400 {
			id, addShare = idOf(step-(8000-400)), 0 // the end: every ID dropped, the list emptied
		}
		it := itemOf(id, handle[id])
		i, present := slices.BinarySearch(model, id)
		if r.IntN(10) < addShare {
			x.add(it)
			if !present {
				model = slices.Insert(model, i, id)
			}
		} else {
			x.drop(it)
			if present {
				model = slices.Delete(model, i, i+1)
			}
		}
		checkIDList(t, step, x, &slots, max, model)
		bound := idOf(r.IntN(420)) + []string{"", "\x00", "5"}[r.IntN(3)]
		var want, got []string
		for i := len(model) - 1; i >= 0; i-- {
			if model[i] <= bound {
				want = append(want, model[i])
			}
		}
		x.descend(itemOf(bound, noHandle), true, func(it item) bool {
			got = append(got, slots.at(it.h).id())
			return true
		})
		if !slices.Equal(got, want) && len(got)+len(want) > 0 {
			t.Fatalf("step %d: descent from %q = %q, want %q", step, bound, got, want)
		}
	}
	if !x.empty() || len(x.chunks) != 0 {
		t.Fatalf("the emptied list has %d items in %d chunks", x.n, len(x.chunks))
	}
}

// checkIDList checks x's chunks after step: none empty or over max, and
// in order they hold the IDs of model (ascending), n of them.
func checkIDList(t *testing.T, step int, x ids, slots *table, max int, model []string) {
	t.Helper()
	var all []string
	for _, ch := range x.chunks {
		if len(ch) == 0 || len(ch) > max {
			t.Fatalf("step %d: a chunk of %d items (max %d)", step, len(ch), max)
		}
		for _, it := range ch {
			all = append(all, slots.at(it.h).id())
		}
	}
	if x.n != len(model) || !slices.Equal(all, model) && len(all)+len(model) > 0 {
		t.Fatalf("step %d: the list holds %d %q, want %q", step, x.n, all, model)
	}
}
