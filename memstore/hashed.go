package memstore

import (
	"hash/maphash"
	"strings"
)

// hashed maps strings (record IDs, lookup keys) to values V that name
// where the string is stored (a record's handle; a handle and the place
// of a key among its record's keys), without holding the strings: its
// main map is keyed by the strings' hashes and holds no pointers, so the
// garbage collector does not scan it, and a lookup touches 16 bytes of an
// entry instead of a string header and the string's bytes elsewhere.
//
// Two strings may share a hash. An entry of the main map is checked
// against the string it is asked for by owns, which reads the stored
// string the value names; a string whose hash the main map holds for
// another string goes to the overflow map, by the string itself. Every
// string of the overflow map has its hash in the main map (a delete from
// the main map moves one of the same hash up), so a hash the main map
// lacks is a string the map lacks.
//
// owns must answer from the stored state that put saw: a caller deletes
// a string while what its value names still holds it.
type hashed[V comparable] struct {
	hash func(string) uint64
	owns func(v V, s string) bool // whether v names where s is stored
	m    map[uint64]V
	over map[string]V // strings whose hash m holds for another string
}

func newHashed[V comparable](hash func(string) uint64, owns func(V, string) bool) hashed[V] {
	return hashed[V]{hash: hash, owns: owns, m: make(map[uint64]V), over: make(map[string]V)}
}

// seededHash returns the hash of a new store: maphash with a seed of its
// own.
func seededHash() func(string) uint64 {
	seed := maphash.MakeSeed()
	return func(s string) uint64 { return maphash.String(seed, s) }
}

// get returns the value of s, if the map holds s.
func (h *hashed[V]) get(s string) (V, bool) {
	if v, ok := h.m[h.hash(s)]; ok {
		if h.owns(v, s) {
			return v, true
		}
		if len(h.over) > 0 {
			v, ok := h.over[s]
			return v, ok
		}
	}
	var zero V
	return zero, false
}

// put maps s to v, which must already name where s is stored.
func (h *hashed[V]) put(s string, v V) {
	k := h.hash(s)
	if w, ok := h.m[k]; ok && !h.owns(w, s) {
		// The overflow map keeps a copy: s may be part of a blob that
		// an update replaces.
		if _, ok := h.over[s]; ok {
			h.over[s] = v
		} else {
			h.over[strings.Clone(s)] = v
		}
		return
	}
	h.m[k] = v
}

// del removes s, which what its value names must still hold.
func (h *hashed[V]) del(s string) {
	k := h.hash(s)
	v, ok := h.m[k]
	switch {
	case !ok:
	case !h.owns(v, s):
		delete(h.over, s)
	default:
		delete(h.m, k)
		for x, w := range h.over {
			if h.hash(x) == k {
				h.m[k] = w
				delete(h.over, x)
				return
			}
		}
	}
}

func (h *hashed[V]) len() int { return len(h.m) + len(h.over) }
