package memstore

import (
	"strings"

	"github.com/google/btree"
)

// indexDegree is the degree of the B-trees of the list and secondary
// indexes: a node holds up to 2*indexDegree-1 entries.
const indexDegree = 32

// sorted is an ordered set kept in a B-tree (github.com/google/btree).
// A sorted slice would make the occasional insert copy the whole index
// (hundreds of thousands of IDs, megabytes) while the store's write lock
// is held, and each such large allocation makes the writer pay GC assist
// work under the lock too; a B-tree insert or delete touches one path of
// small nodes, O(log n).
type sorted[T any] struct {
	t *btree.BTreeG[T]
}

func newSorted[T any](less btree.LessFunc[T]) sorted[T] {
	return sorted[T]{btree.NewG(indexDegree, less)}
}

func (s sorted[T]) add(v T)  { s.t.ReplaceOrInsert(v) }
func (s sorted[T]) drop(v T) { s.t.Delete(v) }

// repoint replaces the entry equal to v, if there is one, by v itself:
// the entry then holds v's strings (those of a record's new version)
// without moving.
func (s sorted[T]) repoint(v T) {
	if _, ok := s.t.Get(v); ok {
		s.t.ReplaceOrInsert(v)
	}
}
func (s sorted[T]) empty() bool { return s.t.Len() == 0 }

// ids is a list index: record IDs in ascending order.
type ids = sorted[string]

func newIDs() ids { return newSorted(func(a, b string) bool { return a < b }) }

// page returns up to n IDs below before (all IDs when before is ""),
// descending.
func pageOf(x ids, before string, n int) []string {
	out := make([]string, 0, min(n, x.t.Len()))
	take := func(id string) bool {
		if id == before {
			return true // the cursor itself is not part of the page
		}
		out = append(out, id)
		return len(out) < n
	}
	if before == "" {
		x.t.Descend(take)
	} else {
		x.t.DescendLessOrEqual(before, take)
	}
	return out
}

// values is a secondary index: (value, record ID) pairs in ascending
// order.
type values = sorted[valueEntry]

func newValues() values {
	return newSorted(func(a, b valueEntry) bool { return compareEntries(a, b) < 0 })
}

type valueEntry struct{ value, id string }

func compareEntries(a, b valueEntry) int {
	if c := strings.Compare(a.value, b.value); c != 0 {
		return c
	}
	return strings.Compare(a.id, b.id)
}

// below calls keep for the ID of each entry whose value sorts before v,
// ascending.
func below(x values, v string, keep func(id string)) {
	x.t.AscendLessThan(valueEntry{v, ""}, func(e valueEntry) bool {
		keep(e.id)
		return true
	})
}

// equal calls take for the IDs of the entries of value v, descending,
// from the cursor before on (from the last when before is ""; the entry of
// the cursor itself is passed too, for take to skip), until take returns
// false.
func equal(x values, v, before string, take func(id string) bool) {
	// Entries of value v sort before (v+"\x00", ""), and those up to the
	// cursor at or before (v, cursor).
	pivot := valueEntry{v + "\x00", ""}
	if before != "" {
		pivot = valueEntry{v, before}
	}
	x.t.DescendLessOrEqual(pivot, func(e valueEntry) bool {
		if e.value != v {
			return false
		}
		return take(e.id)
	})
}
