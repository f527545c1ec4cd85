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
	return prefix + encode(b)
}

// encode writes 20 bytes as 27 base62 digits, most significant first.
func encode(b [20]byte) string {
	// Treat b as a 160-bit big-endian number held in five uint32 words and
	// divide by 62 repeatedly.
	var words [5]uint32
	for i := range words {
		words[i] = binary.BigEndian.Uint32(b[i*4:])
	}
	var out [Len]byte
	for i := Len - 1; i >= 0; i-- {
		var rem uint64
		for j := range words {
			cur := rem<<32 | uint64(words[j])
			words[j] = uint32(cur / 62)
			rem = cur % 62
		}
		out[i] = alphabet[rem]
	}
	return string(out[:])
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
