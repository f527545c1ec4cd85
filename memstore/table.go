package memstore

import "math"

// chunkBits sets the size of the table's chunks: 1<<chunkBits slots.
const chunkBits = 10

// noHandle is a handle no slot has: the table never grows to it.
const noHandle = math.MaxUint32

// table holds the records, each in a slot numbered by its handle. A
// deleted record's slot is emptied and reused by a later record.
//
// The slots are kept in chunks of fixed size, so that a growing table
// never copies the slots it has (a million records would be a 24 MB copy
// under the write lock); the chunks' pointers are the only pointers of
// the table besides each slot's blob, so a collection visits one pointer
// per record here, and nothing else the store keeps per record holds one.
type table struct {
	chunks [][]packed // each 1<<chunkBits slots long
	n      uint32     // the handles below n are taken or free
	free   []uint32   // emptied slots; the last emptied is taken first
}

// at returns the slot of handle h, which must be below t.n.
func (t *table) at(h uint32) *packed { return &t.chunks[h>>chunkBits][h&(1<<chunkBits-1)] }

// full reports whether add has no slot left to give.
func (t *table) full() bool { return len(t.free) == 0 && t.n == noHandle }

// add stores r in a free slot, or a new one, and returns its handle.
// The table must not be full.
func (t *table) add(r packed) uint32 {
	var h uint32
	if k := len(t.free); k > 0 {
		h, t.free = t.free[k-1], t.free[:k-1]
	} else {
		h = t.n
		t.n++
		if int(h>>chunkBits) == len(t.chunks) {
			t.chunks = append(t.chunks, make([]packed, 1<<chunkBits))
		}
	}
	*t.at(h) = r
	return h
}

// release empties the slot of handle h, dropping its blob, for reuse.
func (t *table) release(h uint32) {
	*t.at(h) = packed{}
	t.free = append(t.free, h)
}
