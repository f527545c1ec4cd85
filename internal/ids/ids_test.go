package ids

import (
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
