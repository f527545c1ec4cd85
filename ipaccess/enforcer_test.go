package ipaccess_test

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/edgeplane/edgeplane/ipaccess"
	"github.com/edgeplane/edgeplane/resource"
)

func TestEnforcer(t *testing.T) {
	office := mustSet(t, ipaccess.Rule{CIDR: "203.0.113.0/24", Action: "allow"})
	blocked := mustSet(t, ipaccess.Rule{CIDR: "198.51.100.0/24", Action: "deny"})
	e := ipaccess.NewEnforcer([]ipaccess.Restriction{
		{ID: "ipx_warn", Enforced: false},
		{ID: "ipx_office", Enforced: true},
		{ID: "ipx_blocked", Enforced: true},
	}, []*ipaccess.Set{blocked, office, blocked})
	for _, tc := range []struct {
		ip      string
		refused string
		warned  []string
	}{
		{"203.0.113.7", "", nil},
		{"192.0.2.1", "ipx_office", nil},
		{"198.51.100.9", "ipx_office", []string{"ipx_warn"}},
		{"::ffff:203.0.113.7", "", nil},
	} {
		refused, warned := e.Check(netip.MustParseAddr(tc.ip))
		if refused != tc.refused || !slices.Equal(warned, tc.warned) {
			t.Errorf("Check(%s) = %q, %v; want %q, %v", tc.ip, refused, warned, tc.refused, tc.warned)
		}
	}
	// Only warnings: the traffic proceeds.
	w := ipaccess.NewEnforcer([]ipaccess.Restriction{{ID: "ipx_w", Enforced: false}}, []*ipaccess.Set{blocked})
	if refused, warned := w.Check(netip.MustParseAddr("198.51.100.1")); refused != "" || !slices.Equal(warned, []string{"ipx_w"}) {
		t.Errorf("not enforced: %q, %v", refused, warned)
	}
	var none *ipaccess.Enforcer
	if refused, warned := none.Check(netip.MustParseAddr("198.51.100.1")); refused != "" || warned != nil || none.Len() != 0 {
		t.Errorf("nil Enforcer: %q, %v", refused, warned)
	}
	if refused, _ := e.Check(netip.Addr{}); refused != "ipx_office" {
		t.Errorf("the zero address: refused by %q, want the first enforced restriction", refused)
	}
}

func TestPolicyIDs(t *testing.T) {
	got := ipaccess.PolicyIDs([]ipaccess.Restriction{
		{IPPolicies: []resource.Ref{{ID: "ipp_b"}, {ID: "ipp_a"}}},
		{IPPolicies: []resource.Ref{{ID: "ipp_a"}, {ID: "ipp_c"}}},
	})
	if want := []string{"ipp_a", "ipp_b", "ipp_c"}; !slices.Equal(got, want) {
		t.Errorf("PolicyIDs = %v, want %v", got, want)
	}
}

func BenchmarkEnforcerCheck(b *testing.B) {
	var rs []ipaccess.Restriction
	var sets []*ipaccess.Set
	for range ipaccess.MaxRestrictionsPerAccount {
		rules := make([]ipaccess.Rule, 0, 1000)
		for i := range 1000 {
			rules = append(rules, ipaccess.Rule{CIDR: netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), 0}).String() + "/24", Action: "allow"})
		}
		s := mustSet(b, rules...)
		rs = append(rs, ipaccess.Restriction{ID: "ipx", Enforced: true})
		sets = append(sets, s)
	}
	e := ipaccess.NewEnforcer(rs, sets)
	ip := netip.MustParseAddr("10.1.2.3")
	b.ReportAllocs()
	for b.Loop() {
		if refused, _ := e.Check(ip); refused != "" {
			b.Fatal(refused)
		}
	}
}
