package ids

import (
	"bytes"
	"encoding/binary"
	"math/big"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestFormatAndOrder(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	g := NewGenerator(func() time.Time { return now })
	prev := ""
	for i := range 70000 { // crosses the 16-bit sequence within one millisecond
		id := g.New("cr_")
		if !Valid(id, "cr_") {
			t.Fatalf("Valid(%q) = false", id)
		}
		if id <= prev {
			t.Fatalf("id %d %s does not sort after %s", i, id, prev)
		}
		prev = id
	}
	// Later times sort later; an earlier clock never goes back.
	now = now.Add(time.Hour)
	later := g.New("cr_")
	now = now.Add(-2 * time.Hour)
	afterBackwards := g.New("cr_")
	if later <= prev || afterBackwards <= later {
		t.Errorf("order broken: %s %s %s", prev, later, afterBackwards)
	}
}

func TestEncodeExtremes(t *testing.T) {
	var zero, max [20]byte
	for i := range max {
		max[i] = 0xFF
	}
	if got := encode(zero); got != strings.Repeat("0", Len) {
		t.Errorf("encode(zero) = %s", got)
	}
	if got := encode(max); len(got) != Len || got <= encode(zero) {
		t.Errorf("encode(max) = %s", got)
	}
}

func TestValid(t *testing.T) {
	g := NewGenerator(time.Now)
	good := g.New("ipp_")
	for _, tc := range []struct {
		id, prefix string
		want       bool
	}{
		{good, "ipp_", true},
		{good, "cr_", false},
		{good + "a", "ipp_", false},
		{good[:len(good)-1], "ipp_", false},
		{good[:len(good)-1] + "-", "ipp_", false},
		{"ipp_", "ipp_", false},
		{"", "", false},
	} {
		if got := Valid(tc.id, tc.prefix); got != tc.want {
			t.Errorf("Valid(%q, %q) = %v, want %v", tc.id, tc.prefix, got, tc.want)
		}
	}
}

func TestConcurrentUnique(t *testing.T) {
	g := NewGenerator(time.Now)
	var mu sync.Mutex
	seen := map[string]bool{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				id := g.New("x_")
				mu.Lock()
				if seen[id] {
					t.Errorf("duplicate id %s", id)
				}
				seen[id] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

func BenchmarkNew(b *testing.B) {
	g := NewGenerator(time.Now)
	b.ReportAllocs()
	for b.Loop() {
		g.New("cr_")
	}
}

// encodeBig is the reference encoding: the number's base62 digits by
// math/big, zero-padded to Len.
func encodeBig(b [20]byte) string {
	n := new(big.Int).SetBytes(b[:])
	var out [Len]byte
	base, rem := big.NewInt(62), new(big.Int)
	for i := Len - 1; i >= 0; i-- {
		n.QuoRem(n, base, rem)
		out[i] = alphabet[rem.Int64()]
	}
	return string(out[:])
}

// FuzzEncode: encode agrees with the reference encoding on every input.
func FuzzEncode(f *testing.F) {
	f.Add(make([]byte, 20))
	f.Add(bytes.Repeat([]byte{0xFF}, 20))
	f.Add([]byte("\x00\x00\x01\x9a\xb2\xc3\x00\x01abcdefghijkl"))
	f.Fuzz(func(t *testing.T, in []byte) {
		var b [20]byte
		copy(b[:], in)
		if got, want := encode(b), encodeBig(b); got != want {
			t.Errorf("encode(%x) = %s, want %s", b, got, want)
		}
	})
}

// TestNewEncodes: New's identifier is its prefix and the encoding of its
// bytes (the time and sequence in front), for short and long prefixes.
func TestNewEncodes(t *testing.T) {
	now := time.UnixMilli(0x19ab2c3d4e5)
	g := NewGenerator(func() time.Time { return now })
	for _, prefix := range []string{"", "cr_", strings.Repeat("p", maxPrefix), strings.Repeat("q", maxPrefix+1)} {
		id := g.New(prefix)
		if !Valid(id, prefix) {
			t.Fatalf("Valid(%q, %q) = false", id, prefix)
		}
		var b [20]byte
		binary.BigEndian.PutUint64(b[:8], uint64(now.UnixMilli())<<16|uint64(g.seq))
		lo := encodeBig(b) // the random bytes zero: the least id of that time and sequence
		for i := 8; i < 20; i++ {
			b[i] = 0xFF
		}
		hi := encodeBig(b)
		if rest := id[len(prefix):]; rest < lo || rest > hi {
			t.Errorf("New(%q) = %s: not between %s and %s", prefix, id, lo, hi)
		}
	}
}
