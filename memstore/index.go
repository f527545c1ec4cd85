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

// idHead is how many of an ID's first bytes a list index's item keeps.
// Service IDs are 30 bytes, of which the first 24 hold the 3-byte prefix
// and 21 random or time-ordered characters: two of them almost never tie.
const idHead = 24

// item is an entry of a list index: a record's handle and its ID's first
// idHead bytes, zero-padded. It holds no pointer, so the index's nodes
// are not scanned by the garbage collector, and a comparison of two
// items whose heads differ reads no record.
//
// Items are ordered as their records' IDs. Two heads that differ are
// ordered as the IDs: at the first byte where the heads differ, either
// both IDs have that byte, or the shorter ID has ended (its padding is
// 0), is a prefix of the other and sorts first. Two equal heads are
// ordered by the full IDs, read from the records' slots.
type item struct {
	head [idHead]byte
	h    uint32 // the record's handle; noHandle in a probe (see itemOf)
}

// itemOf returns the item of the record of ID id and handle h. With h
// noHandle, it is a probe: it sorts after every item of its head.
func itemOf(id string, h uint32) item {
	it := item{h: h}
	copy(it.head[:], id)
	return it
}

// ids is a list index: items in the ascending order of their IDs.
type ids = sorted[item]

// newIDs returns an empty list index of records stored in t.
func newIDs(t *table) ids {
	return newSorted(func(a, b item) bool {
		if a.head != b.head {
			return string(a.head[:]) < string(b.head[:])
		}
		switch {
		case a.h == b.h, a.h == noHandle:
			return false
		case b.h == noHandle:
			return true
		}
		return t.at(a.h).id() < t.at(b.h).id()
	})
}

// pageOf returns the handles of up to n records of x whose IDs sort
// before before (all when before is ""), descending. before need not be
// the ID of a record.
func pageOf(x ids, t *table, before string, n int) []uint32 {
	out := make([]uint32, 0, min(n, x.t.Len()))
	if before == "" {
		x.t.Descend(func(it item) bool {
			out = append(out, it.h)
			return len(out) < n
		})
		return out
	}
	// The descent starts at the last item of before's head; those of
	// that head that are not below before come first and are skipped.
	p := itemOf(before, noHandle)
	x.t.DescendLessOrEqual(p, func(it item) bool {
		if it.head == p.head && t.at(it.h).id() >= before {
			return true
		}
		out = append(out, it.h)
		return len(out) < n
	})
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
