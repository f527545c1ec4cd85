package memstore

import (
	"slices"
	"sort"
)

// listChunk is the most items a chunk of a list index holds: 7 KiB of
// 28-byte items.
const listChunk = 256

// ids is a list index: items in the ascending order of their IDs.
type ids = *idList

// idList is an ordered set of items kept in chunks: each chunk is sorted,
// and every item of a chunk sorts before every item of the next. The
// common insert, a record whose ID sorts after every other (the Service's
// IDs grow with time), appends to the last chunk, touching its tail and
// nothing else; a B-tree would descend from its root, comparing, on
// every insert. Any other insert or delete finds its chunk by a binary
// search over the chunks' last items, then moves at most a chunk's items
// (splitting a chunk that grows past max, merging or shrinking one that
// falls below a quarter of it), so that no write moves more than a chunk
// of items while the store's write lock is held. Items hold no pointer;
// the list holds one per chunk.
type idList struct {
	less   func(a, b item) bool
	max    int      // the most items of a chunk
	chunks [][]item // none empty
	n      int      // items in all
}

func (x *idList) empty() bool { return x.n == 0 }

// find returns the chunk it belongs in (the first whose last item does
// not sort before it; len(chunks) when none) and its place there (the
// first item that does not sort before it).
func (x *idList) find(it item) (c, i int) {
	c = sort.Search(len(x.chunks), func(j int) bool {
		ch := x.chunks[j]
		return !x.less(ch[len(ch)-1], it)
	})
	if c == len(x.chunks) {
		return c, 0
	}
	ch := x.chunks[c]
	return c, sort.Search(len(ch), func(k int) bool { return !x.less(ch[k], it) })
}

// add enters it, replacing an equal item.
func (x *idList) add(it item) {
	if k := len(x.chunks) - 1; k < 0 || x.less(x.chunks[k][len(x.chunks[k])-1], it) {
		// After every item: onto the last chunk, or a new one when it
		// is full (a list filled in order has full chunks). The first
		// chunk grows from 16 items (most lists are short); a list that
		// has filled a chunk gets the next at its full size, which it
		// will fill, so that no append copies a chunk as it grows.
		if k < 0 || len(x.chunks[k]) >= x.max {
			size := min(x.max, 16)
			if k >= 0 {
				size = x.max
			}
			x.chunks = append(x.chunks, make([]item, 0, size))
			k++
		}
		x.chunks[k] = append(x.chunks[k], it)
		x.n++
		return
	}
	c, i := x.find(it) // c < len(chunks): the last chunk's last item does not sort before it
	ch := x.chunks[c]
	if !x.less(it, ch[i]) {
		ch[i] = it // equal
		return
	}
	ch = slices.Insert(ch, i, it)
	x.n++
	if len(ch) <= x.max {
		x.chunks[c] = ch
		return
	}
	half := len(ch) / 2
	x.chunks[c] = slices.Clone(ch[:half])
	x.chunks = slices.Insert(x.chunks, c+1, slices.Clone(ch[half:]))
}

// drop removes the item equal to it, if there is one.
func (x *idList) drop(it item) {
	c, i := x.find(it)
	if c == len(x.chunks) {
		return
	}
	ch := x.chunks[c]
	if x.less(it, ch[i]) {
		return // not there
	}
	ch = slices.Delete(ch, i, i+1)
	x.n--
	switch {
	case len(ch) == 0:
		x.chunks = slices.Delete(x.chunks, c, c+1)
		return
	case len(ch) >= x.max/4:
		x.chunks[c] = ch
		return
	}
	// Small: merged into a neighbour it fits in, or else given an array
	// of its size, so that a list thinned by deletes keeps no large
	// arrays of few items.
	if c+1 < len(x.chunks) && len(ch)+len(x.chunks[c+1]) <= x.max {
		x.chunks[c] = append(ch, x.chunks[c+1]...)
		x.chunks = slices.Delete(x.chunks, c+1, c+2)
		return
	}
	if c > 0 && len(x.chunks[c-1])+len(ch) <= x.max {
		x.chunks[c-1] = append(x.chunks[c-1], ch...)
		x.chunks = slices.Delete(x.chunks, c, c+1)
		return
	}
	x.chunks[c] = slices.Clip(slices.Clone(ch))
}

// descend calls f with the items from the last one that does not sort
// after from (from the last of all when bounded is false) down to the
// first, descending, until f returns false.
func (x *idList) descend(from item, bounded bool, f func(item) bool) {
	c, i := len(x.chunks)-1, -1 // start in chunk c at item i; -1: its last
	if bounded {
		// The first chunk whose last item sorts after from, and in it the
		// first item that does: the descent starts just before that.
		j := sort.Search(len(x.chunks), func(j int) bool {
			ch := x.chunks[j]
			return x.less(from, ch[len(ch)-1])
		})
		if j < len(x.chunks) {
			ch := x.chunks[j]
			c, i = j, sort.Search(len(ch), func(k int) bool { return x.less(from, ch[k]) })-1
			if i < 0 {
				c-- // every item of chunk j sorts after from
			}
		}
	}
	for ; c >= 0; c-- {
		ch := x.chunks[c]
		if i < 0 {
			i = len(ch) - 1
		}
		for ; i >= 0; i-- {
			if !f(ch[i]) {
				return
			}
		}
	}
}
