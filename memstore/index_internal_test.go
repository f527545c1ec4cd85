package memstore

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestIndexesMatchASortedModel drives the B-tree indexes with random
// inserts and deletes and checks every kind of read against a sorted
// slice of the same entries: pages of IDs from any cursor, equality
// matches from any cursor, and matches below a bound.
func TestIndexesMatchASortedModel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	x, v := newIDs(), newValues()
	var ids []string      // model of x, ascending
	var vals []valueEntry // model of v, ascending
	id := func() string { return fmt.Sprintf("id_%03d", r.IntN(300)) }
	val := func() string { return fmt.Sprintf("v%d", r.IntN(8)) }
	for step := range 4000 {
		switch e := (valueEntry{val(), id()}); r.IntN(3) {
		case 0, 1: // inserts twice as often as deletes, with repeats
			x.add(e.id)
			if i, ok := slices.BinarySearch(ids, e.id); !ok {
				ids = slices.Insert(ids, i, e.id)
			}
			v.add(e)
			if i, ok := slices.BinarySearchFunc(vals, e, compareEntries); !ok {
				vals = slices.Insert(vals, i, e)
			}
		default:
			x.drop(e.id)
			if i, ok := slices.BinarySearch(ids, e.id); ok {
				ids = slices.Delete(ids, i, i+1)
			}
			v.drop(e)
			if i, ok := slices.BinarySearchFunc(vals, e, compareEntries); ok {
				vals = slices.Delete(vals, i, i+1)
			}
		}
		if x.empty() != (len(ids) == 0) || v.empty() != (len(vals) == 0) {
			t.Fatalf("step %d: empty() disagrees with the model", step)
		}
		before, limit := "", 1+r.IntN(20)
		if r.IntN(4) > 0 {
			before = id() // present or not
		}
		// pageOf: up to limit IDs below before, descending.
		var want []string
		for i := len(ids) - 1; i >= 0 && len(want) < limit; i-- {
			if before == "" || ids[i] < before {
				want = append(want, ids[i])
			}
		}
		if got := pageOf(x, before, limit); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Fatalf("step %d: pageOf(%q, %d) = %v, want %v", step, before, limit, got, want)
		}
		// equal: the IDs of value w from the cursor down (the cursor's own
		// entry included: the caller skips it), descending.
		w := val()
		want = want[:0]
		for i := len(vals) - 1; i >= 0; i-- {
			if e := vals[i]; e.value == w && (before == "" || e.id <= before) {
				want = append(want, e.id)
			}
		}
		var got []string
		equal(v, w, before, func(id string) bool { got = append(got, id); return true })
		if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Fatalf("step %d: equal(%q, %q) = %v, want %v", step, w, before, got, want)
		}
		// below: the IDs of every entry whose value sorts before w, ascending.
		want = want[:0]
		for _, e := range vals {
			if e.value < w {
				want = append(want, e.id)
			}
		}
		got = got[:0]
		below(v, w, func(id string) { got = append(got, id) })
		if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Fatalf("step %d: below(%q) = %v, want %v", step, w, got, want)
		}
	}
}
