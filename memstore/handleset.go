package memstore

import (
	"iter"
	"slices"
)

// setChunk is the most handles a chunk of a handleSet holds: 4 KiB.
const setChunk = 1024

// handleSet is a set of handles (the referrers of a record, or its
// children), kept in ascending order in chunks: each chunk is sorted, and
// every handle of a chunk is below every handle of the next.
//
// It replaces a Go map per record, which for a record that hundreds of
// thousands of others reference (the owner of every credential) grew by
// rehashing and took a cache miss per insert, at about 8 bytes a handle.
// Here a handle takes 4 bytes, and the common insert, a handle above
// every other (a new record takes a new slot, numbered after the others;
// see table), appends to the last chunk, which a set that grows in order
// makes at its full size, so that nothing is copied as it grows. Any
// other insert or a delete finds its chunk by a binary search over the
// chunks' last handles and moves at most a chunk's handles (splitting a
// full chunk, merging or shrinking one that falls below a quarter of
// max), as idList does. The chunks' last handles are also kept in an
// array of their own, lasts, which the binary search reads: for a set of
// 400k handles, 1.6 KiB that stay in the cache, where reading each
// chunk's last handle would miss it at every step. A set of a few
// handles is one small chunk.
//
// The zero value is not usable: make one with newHandleSet.
type handleSet struct {
	chunks [][]uint32 // none empty
	lasts  []uint32   // the last handle of each chunk
	n      int        // handles in all
	max    int        // the most handles of a chunk, at least 2
}

func newHandleSet() *handleSet { return newHandleSetOf(setChunk) }

// newHandleSetOf returns an empty set of chunks of at most max handles
// (tests use small chunks, to split and merge them often).
func newHandleSetOf(max int) *handleSet { return &handleSet{max: max} }

func (s *handleSet) len() int { return s.n }

// find returns the chunk h belongs in (the first whose last handle is not
// below h; len(chunks) when none) and its place there (the first handle
// not below h).
func (s *handleSet) find(h uint32) (c, i int) {
	c, _ = slices.BinarySearch(s.lasts, h)
	if c == len(s.chunks) {
		return c, 0
	}
	i, _ = slices.BinarySearch(s.chunks[c], h)
	return c, i
}

// add enters h; a handle the set holds stays once.
func (s *handleSet) add(h uint32) {
	if k := len(s.chunks) - 1; k < 0 || s.lasts[k] < h {
		// Above every handle: onto the last chunk, or a new one when it
		// is full. The first chunk grows as append grows it (most sets
		// are small); a set that fills a chunk gets the next at its full
		// size.
		if k >= 0 && len(s.chunks[k]) >= s.max {
			s.chunks = append(s.chunks, make([]uint32, 0, s.max))
			s.lasts = append(s.lasts, h)
			k++
		} else if k < 0 {
			s.chunks = append(s.chunks, nil)
			s.lasts = append(s.lasts, h)
			k++
		}
		s.chunks[k] = append(s.chunks[k], h)
		s.lasts[k] = h
		s.n++
		return
	}
	c, i := s.find(h) // c < len(chunks): the last chunk's last handle is not below h
	ch := s.chunks[c]
	if ch[i] == h {
		return
	}
	if len(ch) >= s.max {
		// Full: split in two halves first. The left keeps the array,
		// the right gets its own.
		half := len(ch) / 2
		right := slices.Clone(ch[half:])
		ch = ch[:half]
		s.chunks[c] = ch
		s.chunks = slices.Insert(s.chunks, c+1, right)
		s.lasts = slices.Insert(s.lasts, c, ch[half-1])
		if i > half {
			c, i, ch = c+1, i-half, right
		}
	}
	ch = slices.Insert(ch, i, h)
	s.chunks[c] = ch
	s.lasts[c] = ch[len(ch)-1] // h, when it went to the end of a split's left half
	s.n++
}

// remove removes h, if the set holds it.
func (s *handleSet) remove(h uint32) {
	c, i := s.find(h)
	if c == len(s.chunks) || s.chunks[c][i] != h {
		return
	}
	ch := slices.Delete(s.chunks[c], i, i+1)
	s.n--
	switch {
	case len(ch) == 0:
		s.chunks = slices.Delete(s.chunks, c, c+1)
		s.lasts = slices.Delete(s.lasts, c, c+1)
		return
	case len(ch) >= s.max/4:
		s.chunks[c] = ch
		s.lasts[c] = ch[len(ch)-1]
		return
	}
	// Small: merged into a neighbour it fits in, or else, when its array
	// is more than twice what it needs, given one of its size, so that a
	// set thinned by deletes keeps no large arrays of few handles.
	if c+1 < len(s.chunks) && len(ch)+len(s.chunks[c+1]) <= s.max {
		s.chunks[c] = append(ch, s.chunks[c+1]...)
		s.chunks = slices.Delete(s.chunks, c+1, c+2)
		s.lasts = slices.Delete(s.lasts, c, c+1) // the merged chunk ends as chunk c+1 did
		return
	}
	if c > 0 && len(s.chunks[c-1])+len(ch) <= s.max {
		s.chunks[c-1] = append(s.chunks[c-1], ch...)
		s.chunks = slices.Delete(s.chunks, c, c+1)
		s.lasts[c-1] = ch[len(ch)-1] // the merged chunk ends as chunk c does now
		s.lasts = slices.Delete(s.lasts, c, c+1)
		return
	}
	if cap(ch) > 2*len(ch)+4 {
		ch = slices.Clone(ch)
	}
	s.chunks[c] = ch
	s.lasts[c] = ch[len(ch)-1]
}

// all yields the handles in ascending order (none from a nil set). The
// set must not change while it yields.
func (s *handleSet) all() iter.Seq[uint32] {
	return func(yield func(uint32) bool) {
		if s == nil {
			return
		}
		for _, ch := range s.chunks {
			for _, h := range ch {
				if !yield(h) {
					return
				}
			}
		}
	}
}
