package memstore

import (
	"cmp"
	"math"
	"strings"

	"github.com/google/btree"
)

// indexDegree is the degree of the B-trees of the secondary indexes: a
// node holds up to 2*indexDegree-1 entries.
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

func (s sorted[T]) empty() bool { return s.t.Len() == 0 }

// idHead is how many of an ID's first bytes a list index's item keeps.
// Service IDs are 30 bytes, of which the first 24 hold the 3-byte prefix
// and 21 random or time-ordered characters: two of them almost never tie.
const idHead = 24

// item is an entry of a list index: a record's handle and its ID's first
// idHead bytes, zero-padded. It holds no pointer, so the index's chunks
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

// newIDs returns an empty list index of records stored in t.
func newIDs(t *table) ids { return newIDsOf(t, listChunk) }

// newIDsOf is newIDs with chunks of at most max items (tests use small
// ones, to split and merge often).
func newIDsOf(t *table, max int) ids {
	return &idList{max: max, less: func(a, b item) bool {
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
	}}
}

// pageOf returns the handles of up to n records of x whose IDs sort
// before before (all when before is ""), descending. before need not be
// the ID of a record.
func pageOf(x ids, t *table, before string, n int) []uint32 {
	out := make([]uint32, 0, min(n, x.n))
	if before == "" {
		x.descend(item{}, false, func(it item) bool {
			out = append(out, it.h)
			return len(out) < n
		})
		return out
	}
	// The descent starts at the last item of before's head; those of
	// that head that are not below before come first and are skipped.
	p := itemOf(before, noHandle)
	x.descend(p, true, func(it item) bool {
		if it.head == p.head && t.at(it.h).id() >= before {
			return true
		}
		out = append(out, it.h)
		return len(out) < n
	})
	return out
}

// valueHead is how many of a value's first bytes, and of its record's
// ID's, a secondary index's entry keeps.
const valueHead = 16

// entry is an entry of a secondary index: a record's handle, the place
// of the entry among the record's index entries (whose value the entry
// has), and copies of what orders it. It holds no pointer, so the index's
// nodes are not scanned by the garbage collector.
//
// Entries are ordered by the value's first valueHead bytes, zero-padded
// (so that every value below a bound is in one range, as for the items of
// a list index), then by the value's hash (so that the entries of one
// value are one range, in which values of another hash do not
// interleave), then by the ID's first valueHead bytes, then by the full
// ID and the full value, read from the record's slot only when all of
// those tie. Two entries of one record with one value are equal: the
// index keeps one of them.
type entry struct {
	vhead  [valueHead]byte
	vhash  uint64
	idhead [valueHead]byte
	h      uint32 // the record's handle; noHandle in a probe (see entryOf)
	i      uint32 // the entry's place among the record's index entries
}

// entryOf returns the i-th entry, of value value (whose hash is vhash),
// of the record of ID id and handle h. With h noHandle, it is a probe: it
// sorts after every entry whose heads and hash are its own.
func entryOf(value string, vhash uint64, id string, h, i uint32) entry {
	e := entry{vhash: vhash, h: h, i: i}
	copy(e.vhead[:], value)
	copy(e.idhead[:], id)
	return e
}

// values is a secondary index: entries in ascending order.
type values = sorted[entry]

// newValues returns an empty secondary index of records stored in t.
func newValues(t *table) values {
	return newSorted(func(a, b entry) bool { return compareEntries(t, a, b) < 0 })
}

func compareEntries(t *table, a, b entry) int {
	// (Compared as strings, with < and not strings.Compare: the
	// conversions of a comparison need no copies.)
	if a.vhead != b.vhead {
		return lessOrMore(string(a.vhead[:]) < string(b.vhead[:]))
	}
	if a.vhash != b.vhash {
		return cmp.Compare(a.vhash, b.vhash)
	}
	if a.idhead != b.idhead {
		return lessOrMore(string(a.idhead[:]) < string(b.idhead[:]))
	}
	switch {
	case a.h == b.h && a.i == b.i:
		return 0
	case a.h == noHandle:
		return 1
	case b.h == noHandle:
		return -1
	}
	ra, rb := t.at(a.h), t.at(b.h)
	if a.h != b.h {
		if c := strings.Compare(ra.id(), rb.id()); c != 0 {
			return c
		}
	}
	return strings.Compare(ra.value(int(a.i)), rb.value(int(b.i)))
}

func lessOrMore(less bool) int {
	if less {
		return -1
	}
	return 1
}

// below calls keep for the handle of each entry whose value sorts before
// v, in no useful order.
func below(x values, t *table, v string, keep func(h uint32)) {
	// Every entry whose value head sorts before v's has a value below v,
	// and one whose head sorts after has not; the entries of v's head
	// (after the others, before a probe after all of them) are compared
	// by their full values.
	head := entryOf(v, 0, "", 0, 0).vhead
	probe := entry{vhead: head, vhash: math.MaxUint64, h: noHandle}
	for i := range probe.idhead {
		probe.idhead[i] = 0xff
	}
	x.t.AscendLessThan(probe, func(e entry) bool {
		if e.vhead != head || t.at(e.h).value(int(e.i)) < v {
			keep(e.h)
		}
		return true
	})
}

// equal calls take for the handles of the entries of value v, whose hash
// is vhash, descending by ID, from the cursor before on (from the last
// when before is ""; the entry of the cursor itself is passed too, for
// take to skip), until take returns false. before need not be the ID of a
// record.
func equal(x values, t *table, v string, vhash uint64, before string, take func(h uint32) bool) {
	// The entries of v are those of its heads and hash (less any of
	// another value of that hash); the descent starts at the last of them
	// whose ID head is before's, or at the last of them.
	probe := entryOf(v, vhash, before, noHandle, 0)
	if before == "" {
		for i := range probe.idhead {
			probe.idhead[i] = 0xff
		}
	}
	x.t.DescendLessOrEqual(probe, func(e entry) bool {
		if e.vhead != probe.vhead || e.vhash != vhash {
			return false
		}
		r := t.at(e.h)
		if r.value(int(e.i)) != v || before != "" && e.idhead == probe.idhead && r.id() > before {
			return true
		}
		return take(e.h)
	})
}
