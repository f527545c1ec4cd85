// Package ids makes resource identifiers: a type prefix such as "cr_"
// followed by 27 base62 characters encoding 20 bytes, KSUID-like:
//
//	bytes 0-5   milliseconds since the Unix epoch, big-endian
//	bytes 6-7   a sequence number within the millisecond
//	bytes 8-19  96 random bits from crypto/rand
//
// The base62 alphabet is in ASCII order and the encoding is fixed-width, so
// identifiers sort as strings in the order they were made: a [Generator]
// never returns an identifier that sorts before one it returned earlier,
// even when its clock stands still or goes backwards. Listing newest-first
// by ID is therefore listing by creation time.
package ids

import (
	"crypto/rand"
	"encoding/binary"
	"strings"
	"sync"
	"time"
)

// Len is the length of the part after the prefix.
const Len = 27

const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// Generator makes time-ordered identifiers. It is safe for concurrent use.
type Generator struct {
	now func() time.Time

	mu     sync.Mutex
	lastMS uint64
	seq    uint16
}

// NewGenerator returns a generator reading time from now.
func NewGenerator(now func() time.Time) *Generator {
	return &Generator{now: now}
}

// New returns a fresh identifier with the given prefix.
func (g *Generator) New(prefix string) string {
	ms := uint64(g.now().UnixMilli())
	g.mu.Lock()
	switch {
	case ms > g.lastMS:
		g.lastMS, g.seq = ms, 0
	case g.seq == 0xFFFF:
		g.lastMS++
		g.seq = 0
	default:
		g.seq++
	}
	ms, seq := g.lastMS, g.seq
	g.mu.Unlock()

	var b [20]byte
	binary.BigEndian.PutUint64(b[0:8], ms<<16|uint64(seq))
	rand.Read(b[8:]) // never fails (crypto/rand panics on an unusable source)
	if len(prefix) > maxPrefix {
		return prefix + encode(b)
	}
	var out [maxPrefix + Len]byte
	n := copy(out[:], prefix)
	appendBase62(out[n:n:n+Len], b)
	return string(out[:n+Len]) // the identifier's one allocation
}

// maxPrefix is the longest prefix New builds an identifier of without a
// second allocation.
const maxPrefix = 16

// encode writes 20 bytes as 27 base62 digits, most significant first.
func encode(b [20]byte) string {
	var out [Len]byte
	appendBase62(out[:0], b)
	return string(out[:])
}

// chunk is 62^5, the largest power of 62 below 2^32: dividing by it
// yields five base62 digits per pass over the number's words.
const chunk = 62 * 62 * 62 * 62 * 62

// appendBase62 writes b, a 160-bit big-endian number, as [Len] base62
// digits into dst[:Len], most significant first, and returns dst[:Len].
// dst must have room for them.
func appendBase62(dst []byte, b [20]byte) []byte {
	var words [5]uint32
	for i := range words {
		words[i] = binary.BigEndian.Uint32(b[i*4:])
	}
	out := dst[:Len]
	// Five passes divide by 62^5 and give the 25 least significant
	// digits; what is left is below 62^2 (2^160 < 62^27) and gives the
	// first two.
	i := Len
	for range 5 {
		var rem uint64
		for j := range words {
			cur := rem<<32 | uint64(words[j])
			words[j] = uint32(cur / chunk)
			rem = cur % chunk
		}
		for range 5 {
			i--
			out[i] = alphabet[rem%62]
			rem /= 62
		}
	}
	top := words[4] // words[0..3] are zero: the rest is below 62^2
	out[1] = alphabet[top%62]
	out[0] = alphabet[top/62]
	return out
}

// Valid reports whether id has the given prefix followed by exactly [Len]
// base62 characters.
func Valid(id, prefix string) bool {
	rest, ok := strings.CutPrefix(id, prefix)
	if !ok || len(rest) != Len {
		return false
	}
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		if !('0' <= c && c <= '9' || 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z') {
			return false
		}
	}
	return true
}
