package memstore

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane/store"
)

// TestIndexesMatchASortedModel drives the B-tree indexes with random
// inserts and deletes and checks every kind of read against a sorted
// slice of the same entries: pages of IDs from any cursor (stored or
// not), equality matches from any cursor, and matches below a bound.
// The IDs are short and long; many long ones share their first idHead
// bytes, so that their items tie on the head and are ordered by the IDs
// in their slots, some are a short one padded with NULs, and the records'
// slots are released and reused as they are deleted and created again.
func TestIndexesMatchASortedModel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var slots table
	handle := map[string]uint32{} // the handles of the IDs in x
	x, v := newIDs(&slots), newValues()
	var ids []string      // model of x, ascending
	var vals []valueEntry // model of v, ascending
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
	val := func() string { return fmt.Sprintf("v%d", r.IntN(8)) }
	for step := range 6000 {
		switch e := (valueEntry{val(), id()}); r.IntN(3) {
		case 0, 1: // inserts twice as often as deletes, with repeats
			if _, ok := handle[e.id]; !ok {
				h := slots.add(pack(e.id, &store.Record{}))
				handle[e.id] = h
				x.add(itemOf(e.id, h))
			}
			if i, ok := slices.BinarySearch(ids, e.id); !ok {
				ids = slices.Insert(ids, i, e.id)
			}
			v.add(e)
			if i, ok := slices.BinarySearchFunc(vals, e, compareEntries); !ok {
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
			v.drop(e)
			if i, ok := slices.BinarySearchFunc(vals, e, compareEntries); ok {
				vals = slices.Delete(vals, i, i+1)
			}
		}
		if x.empty() != (len(ids) == 0) || v.empty() != (len(vals) == 0) {
			t.Fatalf("step %d: empty() disagrees with the model", step)
		}
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
		got = got[:0]
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
