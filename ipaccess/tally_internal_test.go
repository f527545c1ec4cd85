package ipaccess

import (
	"net/netip"
	"testing"
	"time"
)

// TestTallyRemembersAtMostMaxWarned: the pairs a Tally remembers stay
// within maxWarned however many addresses warn, with or without time
// passing.
func TestTallyRemembersAtMostMaxWarned(t *testing.T) {
	var tl Tally
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	for i := range 3 * maxWarned {
		ip := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
		tl.Warned(TypeAPI, "ipx_1", ip, t0.Add(time.Duration(i)*time.Millisecond))
		if n := len(tl.logged); n > maxWarned {
			t.Fatalf("after %d addresses the Tally remembers %d pairs, more than %d", i+1, n, maxWarned)
		}
	}
}
