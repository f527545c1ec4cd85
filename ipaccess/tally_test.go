package ipaccess_test

import (
	"net/netip"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/ipaccess"
)

// TestTallyWarnings: one warning per restriction and address per
// WarnInterval is logged, every one is counted, and refusals are counted
// by type; another string than a type counts nothing.
func TestTallyWarnings(t *testing.T) {
	var tl ipaccess.Tally
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	a, b := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	steps := []struct {
		name    string
		id      string
		ip      netip.Addr
		at      time.Duration
		wantLog bool
	}{
		{"first", "ipx_1", a, 0, true},
		{"again at once", "ipx_1", a, time.Second, false},
		{"another address", "ipx_1", b, time.Second, true},
		{"another restriction", "ipx_2", a, time.Second, true},
		{"just inside the interval", "ipx_1", a, ipaccess.WarnInterval - time.Nanosecond, false},
		{"after the interval", "ipx_1", a, ipaccess.WarnInterval, true},
		{"the clock went back", "ipx_1", a, 0, true},
	}
	for _, s := range steps {
		if got := tl.Warned(ipaccess.TypeAPI, s.id, s.ip, t0.Add(s.at)); got != s.wantLog {
			t.Errorf("%s: logged %v, want %v", s.name, got, s.wantLog)
		}
	}
	tl.Refused(ipaccess.TypeAgent)
	tl.Refused(ipaccess.TypeAgent)
	tl.Refused("nonsense")
	tl.Warned("nonsense", "ipx_3", a, t0)
	want := map[string]ipaccess.TypeCount{
		ipaccess.TypeDashboard: {Type: ipaccess.TypeDashboard},
		ipaccess.TypeAPI:       {Type: ipaccess.TypeAPI, Warned: uint64(len(steps))},
		ipaccess.TypeAgent:     {Type: ipaccess.TypeAgent, Refused: 2},
		ipaccess.TypeEndpoints: {Type: ipaccess.TypeEndpoints},
	}
	got := tl.Counts()
	if len(got) != len(ipaccess.Types) {
		t.Fatalf("%d counts, want one per type", len(got))
	}
	for i, c := range got {
		if c.Type != ipaccess.Types[i] || c != want[c.Type] {
			t.Errorf("counts[%d] = %+v, want %+v", i, c, want[ipaccess.Types[i]])
		}
	}
	var none *ipaccess.Tally
	if !none.Warned(ipaccess.TypeAPI, "ipx_1", a, t0) || len(none.Counts()) != len(ipaccess.Types) {
		t.Error("a nil Tally must log every warning and count nothing")
	}
}

// TestTallyFloodOfAddresses: past the pairs a Tally remembers, each new
// address is still logged once and every warning counted
// (tally_internal_test.go checks the bound itself).
func TestTallyFloodOfAddresses(t *testing.T) {
	var tl ipaccess.Tally
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	for i := range 50_000 {
		ip := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
		if !tl.Warned(ipaccess.TypeEndpoints, "ipx_1", ip, t0) {
			t.Fatalf("address %d was not logged the first time", i)
		}
	}
	if c := tl.Counts()[3]; c.Warned != 50_000 {
		t.Errorf("counted %d warnings, want 50000", c.Warned)
	}
}

// BenchmarkTallyWarned: the cost of a warning that is not logged again,
// on the path of every request a restriction not enforced warns about.
func BenchmarkTallyWarned(b *testing.B) {
	var tl ipaccess.Tally
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	ip := netip.MustParseAddr("192.0.2.1")
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		tl.Warned(ipaccess.TypeAPI, "ipx_1", ip, t0.Add(time.Duration(i)))
	}
}
