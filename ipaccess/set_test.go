package ipaccess_test

import (
	"errors"
	"math/rand/v2"
	"net/netip"
	"strconv"
	"sync"
	"testing"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/ipaccess"
)

func TestNormalizeCIDR(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{name: "ipv4 network", in: "10.0.0.0/8", want: "10.0.0.0/8"},
		{name: "ipv4 masked", in: "10.1.2.3/8", want: "10.0.0.0/8"},
		{name: "ipv4 host", in: "192.0.2.1", want: "192.0.2.1/32"},
		{name: "ipv4 host prefix", in: "192.0.2.1/32", want: "192.0.2.1/32"},
		{name: "ipv4 everything", in: "0.0.0.0/0", want: "0.0.0.0/0"},
		{name: "ipv4 everything unmasked", in: "1.2.3.4/0", want: "0.0.0.0/0"},
		{name: "ipv6 network", in: "2001:db8::/32", want: "2001:db8::/32"},
		{name: "ipv6 masked", in: "2001:db8:1:2::5/48", want: "2001:db8:1::/48"},
		{name: "ipv6 upper and long form", in: "2001:0DB8:0000::0001", want: "2001:db8::1/128"},
		{name: "ipv6 host", in: "::1", want: "::1/128"},
		{name: "ipv6 everything", in: "::/0", want: "::/0"},
		{name: "ipv4-mapped host", in: "::ffff:192.0.2.1", want: "192.0.2.1/32"},
		{name: "ipv4-mapped prefix", in: "::ffff:10.1.2.3/104", want: "10.0.0.0/8"},
		{name: "ipv4-mapped whole ipv4 space", in: "::ffff:0.0.0.0/96", want: "0.0.0.0/0"},
		{name: "ipv4-mapped hex form", in: "::ffff:c000:201/128", want: "192.0.2.1/32"},
		{name: "wider than the mapped space stays ipv6", in: "::ffff:10.0.0.0/95", want: "::fffe:0:0/95"},
		{name: "ipv4-compatible stays ipv6", in: "::10.0.0.1", want: "::a00:1/128"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ipaccess.NormalizeCIDR(tt.in)
			if err != nil || got != tt.want {
				t.Fatalf("NormalizeCIDR(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
			again, err := ipaccess.NormalizeCIDR(got)
			if err != nil || again != got {
				t.Fatalf("NormalizeCIDR(%q) = %q, %v; normal form must be stable", got, again, err)
			}
		})
	}
}

func TestNormalizeCIDRInvalid(t *testing.T) {
	tests := []struct {
		name, in, reason string
	}{
		{name: "empty", in: "", reason: "is required"},
		{name: "zone", in: "fe80::1%eth0", reason: "must not contain an IPv6 zone"},
		{name: "zone with prefix", in: "fe80::1%eth0/64", reason: "zone"},
		{name: "ipv4 prefix too long", in: "10.0.0.0/33", reason: "prefix length 0 to 32"},
		{name: "ipv6 prefix too long", in: "::/129", reason: "CIDR"},
		{name: "negative length", in: "10.0.0.0/-1", reason: "CIDR"},
		{name: "missing length", in: "10.0.0.0/", reason: "CIDR"},
		{name: "leading zero length", in: "10.0.0.0/08", reason: "CIDR"},
		{name: "leading zero octet", in: "010.0.0.1", reason: "single address"},
		{name: "short ipv4", in: "10.0.0", reason: "single address"},
		{name: "hostname", in: "example.com", reason: "single address"},
		{name: "space", in: " 10.0.0.0/8", reason: "CIDR"},
		{name: "trailing space", in: "10.0.0.1 ", reason: "single address"},
		{name: "brackets", in: "[::1]", reason: "single address"},
		{name: "range", in: "10.0.0.1-10.0.0.9", reason: "single address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ipaccess.NormalizeCIDR(tt.in)
			if err == nil {
				t.Fatalf("NormalizeCIDR(%q) = %q, want an error", tt.in, got)
			}
			if !errors.Is(err, apierr.ErrInvalidArgument) {
				t.Fatalf("error %v is not an invalid-argument error", err)
			}
			// The violation has an empty field, so that AddError names it.
			var vs apierr.Violations
			vs.AddError("cidr", err)
			checkViolations(t, vs.Err(), []string{"cidr"}, tt.reason)
		})
	}
}

func rule(cidr, action string) ipaccess.Rule { return ipaccess.Rule{CIDR: cidr, Action: action} }

func mustSet(t testing.TB, rules ...ipaccess.Rule) *ipaccess.Set {
	t.Helper()
	s, err := ipaccess.NewSet(rules)
	if err != nil {
		t.Fatalf("NewSet: %v", err)
	}
	return s
}

func TestNewSetInvalid(t *testing.T) {
	s, err := ipaccess.NewSet([]ipaccess.Rule{
		rule("10.0.0.0/8", "allow"),
		rule("bogus", "allow"),
		rule("10.0.0.0/8", "block"),
		rule("", ""),
	})
	if s != nil {
		t.Fatal("NewSet returned a set with an error")
	}
	checkViolations(t, err, []string{"rules[1].cidr", "rules[2].action", "rules[3].cidr", "rules[3].action"})
}

func TestSetAllowed(t *testing.T) {
	allowOffice := []ipaccess.Rule{rule("192.0.2.0/24", "allow"), rule("192.0.2.128/25", "deny"), rule("2001:db8::/32", "allow")}
	denyOnly := []ipaccess.Rule{rule("198.51.100.0/24", "deny"), rule("2001:db8:bad::/48", "deny")}
	tests := []struct {
		name  string
		rules []ipaccess.Rule
		ip    string
		want  bool
	}{
		{name: "no rules allows ipv4", ip: "203.0.113.9", want: true},
		{name: "no rules allows ipv6", ip: "2001:db8::1", want: true},
		{name: "allow list inside", rules: allowOffice, ip: "192.0.2.1", want: true},
		{name: "allow list boundary low", rules: allowOffice, ip: "192.0.2.0", want: true},
		{name: "deny wins inside allow", rules: allowOffice, ip: "192.0.2.200", want: false},
		{name: "deny boundary low", rules: allowOffice, ip: "192.0.2.128", want: false},
		{name: "deny boundary high", rules: allowOffice, ip: "192.0.2.255", want: false},
		{name: "allow list outside", rules: allowOffice, ip: "192.0.3.0", want: false},
		{name: "allow list below", rules: allowOffice, ip: "192.0.1.255", want: false},
		{name: "allow list ipv6 inside", rules: allowOffice, ip: "2001:db8:ffff::1", want: true},
		{name: "allow list ipv6 outside", rules: allowOffice, ip: "2001:db9::1", want: false},
		{name: "mapped ipv4 matched as ipv4", rules: allowOffice, ip: "::ffff:192.0.2.1", want: true},
		{name: "mapped ipv4 denied as ipv4", rules: allowOffice, ip: "::ffff:192.0.2.129", want: false},
		{name: "zone ignored", rules: allowOffice, ip: "2001:db8::1%eth0", want: true},
		{name: "deny list blocks", rules: denyOnly, ip: "198.51.100.7", want: false},
		{name: "deny list lets others in", rules: denyOnly, ip: "198.51.101.7", want: true},
		{name: "deny list ipv6 blocks", rules: denyOnly, ip: "2001:db8:bad::1", want: false},
		{name: "deny list ipv6 others", rules: denyOnly, ip: "2001:db8:bae::1", want: true},
		{name: "ipv4 allow list denies ipv6", rules: []ipaccess.Rule{rule("10.0.0.0/8", "allow")}, ip: "2001:db8::1", want: false},
		{name: "ipv6 everything does not cover ipv4", rules: []ipaccess.Rule{rule("::/0", "allow")}, ip: "10.0.0.1", want: false},
		{name: "ipv6 everything", rules: []ipaccess.Rule{rule("::/0", "allow")}, ip: "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", want: true},
		{name: "ipv6 everything deny", rules: []ipaccess.Rule{rule("::/0", "deny")}, ip: "::", want: false},
		{name: "ipv4 everything", rules: []ipaccess.Rule{rule("0.0.0.0/0", "allow")}, ip: "255.255.255.255", want: true},
		{name: "ipv4 everything denied except nothing", rules: []ipaccess.Rule{rule("0.0.0.0/0", "deny"), rule("10.0.0.0/8", "allow")}, ip: "10.0.0.1", want: false},
		{name: "top ipv6 prefix", rules: []ipaccess.Rule{rule("ffff::/16", "deny")}, ip: "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", want: false},
		{name: "top ipv4 host", rules: []ipaccess.Rule{rule("255.255.255.255", "allow")}, ip: "255.255.255.255", want: true},
		{name: "ipv6 /64 boundary inside", rules: []ipaccess.Rule{rule("2001:db8:0:1::/64", "allow")}, ip: "2001:db8:0:1:ffff:ffff:ffff:ffff", want: true},
		{name: "ipv6 /64 boundary outside", rules: []ipaccess.Rule{rule("2001:db8:0:1::/64", "allow")}, ip: "2001:db8:0:2::", want: false},
		{name: "ipv6 /65 upper half", rules: []ipaccess.Rule{rule("2001:db8::8000:0:0:0/65", "deny")}, ip: "2001:db8::7fff:ffff:ffff:ffff", want: true},
		{name: "unnormalised cidr accepted", rules: []ipaccess.Rule{rule("10.9.9.9/8", "deny")}, ip: "10.0.0.1", want: false},
		{name: "mapped rule matches ipv4", rules: []ipaccess.Rule{rule("::ffff:10.0.0.0/104", "deny")}, ip: "10.1.1.1", want: false},
		{name: "overlapping allows", rules: []ipaccess.Rule{rule("10.0.0.0/8", "allow"), rule("10.0.0.0/16", "allow")}, ip: "10.0.255.1", want: true},
		{name: "duplicate deny then allow", rules: []ipaccess.Rule{rule("10.0.0.0/8", "deny"), rule("10.0.0.0/8", "allow")}, ip: "10.0.0.1", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ip := netip.MustParseAddr(tt.ip)
			if got := mustSet(t, tt.rules...).Allowed(ip); got != tt.want {
				t.Fatalf("Allowed(%s) with %v = %v, want %v", ip, tt.rules, got, tt.want)
			}
		})
	}
}

func TestSetAllowedZeroAndNil(t *testing.T) {
	if mustSet(t).Allowed(netip.Addr{}) {
		t.Fatal("the zero Addr is allowed")
	}
	var s *ipaccess.Set
	if !s.Allowed(netip.MustParseAddr("10.0.0.1")) || s.Allowed(netip.Addr{}) {
		t.Fatal("a nil Set must allow every valid address and not the zero Addr")
	}
}

// linearAllowed is the reference decision: a scan over every rule.
func linearAllowed(rules []ipaccess.Rule, ip netip.Addr) bool {
	ip = ip.Unmap()
	matchAllow, matchDeny, anyAllow := false, false, false
	for _, r := range rules {
		n, err := ipaccess.NormalizeCIDR(r.CIDR)
		if err != nil {
			panic(err)
		}
		p := netip.MustParsePrefix(n)
		if r.Action == ipaccess.ActionAllow {
			anyAllow = true
		}
		if p.Contains(ip) {
			if r.Action == ipaccess.ActionDeny {
				matchDeny = true
			} else {
				matchAllow = true
			}
		}
	}
	switch {
	case matchDeny:
		return false
	case matchAllow:
		return true
	}
	return !anyAllow
}

// randomRules returns n rules clustered in small address ranges, so that
// they overlap and nest.
func randomRules(r *rand.Rand, n int, denyShare float64) []ipaccess.Rule {
	rules := make([]ipaccess.Rule, n)
	for i := range rules {
		action := ipaccess.ActionAllow
		if r.Float64() < denyShare {
			action = ipaccess.ActionDeny
		}
		var cidr string
		if r.IntN(3) > 0 {
			a := netip.AddrFrom4([4]byte{10, byte(r.IntN(4)), byte(r.IntN(256)), byte(r.IntN(256))})
			cidr = netip.PrefixFrom(a, 8+r.IntN(25)).String()
		} else {
			var b [16]byte
			b[0], b[1], b[2], b[3] = 0x20, 0x01, 0x0d, 0xb8
			b[4] = byte(r.IntN(4))
			for j := 5; j < 16; j++ {
				b[j] = byte(r.IntN(256))
			}
			cidr = netip.PrefixFrom(netip.AddrFrom16(b), 16+r.IntN(113)).String()
		}
		rules[i] = rule(cidr, action)
	}
	return rules
}

func randomAddr(r *rand.Rand) netip.Addr {
	if r.IntN(2) == 0 {
		return netip.AddrFrom4([4]byte{10, byte(r.IntN(5)), byte(r.IntN(256)), byte(r.IntN(256))})
	}
	var b [16]byte
	b[0], b[1], b[2], b[3] = 0x20, 0x01, 0x0d, 0xb8
	b[4] = byte(r.IntN(5))
	for j := 5; j < 16; j++ {
		b[j] = byte(r.IntN(256))
	}
	return netip.AddrFrom16(b)
}

// TestSetMatchesLinearScan checks the range table against the reference
// on random overlapping rule sets, probing random addresses and every
// rule's first and last address and their neighbours.
func TestSetMatchesLinearScan(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		rules := randomRules(r, 1+r.IntN(40), r.Float64())
		s := mustSet(t, rules...)
		probes := make([]netip.Addr, 0, 100)
		for range 50 {
			probes = append(probes, randomAddr(r))
		}
		for _, ru := range rules {
			p := netip.MustParsePrefix(ru.CIDR).Masked()
			first := p.Addr()
			last := lastAddr(p)
			probes = append(probes, first, first.Prev(), last, last.Next())
		}
		// The same rules split over up to four sets, as a Union (nested
		// once, with a nil set among them), decide alike.
		var parts []*ipaccess.Set
		rest := rules
		for len(rest) > 0 && len(parts) < 3 {
			n := r.IntN(len(rest) + 1)
			parts = append(parts, mustSet(t, rest[:n]...))
			rest = rest[n:]
		}
		u := ipaccess.Union(ipaccess.Union(parts...), nil, mustSet(t, rest...))
		for _, ip := range probes {
			if !ip.IsValid() {
				continue
			}
			want := linearAllowed(rules, ip)
			if got := s.Allowed(ip); got != want {
				t.Fatalf("round %d: Allowed(%s) = %v, linear scan says %v; rules %v", round, ip, got, want, rules)
			}
			if got := u.Allowed(ip); got != want {
				t.Fatalf("round %d: Union(%d sets).Allowed(%s) = %v, linear scan says %v; rules %v", round, len(parts)+1, ip, got, want, rules)
			}
		}
	}
	if !ipaccess.Union().Allowed(netip.MustParseAddr("192.0.2.1")) {
		t.Error("an empty Union refuses an address; it has no rules")
	}
}

func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// benchRules returns n rules spread over the whole address space (IPv4
// /16 to /32, IPv6 /32 to /64, a quarter of them deny) and probe
// addresses, half of them inside some rule.
func benchRules(r *rand.Rand, n int) ([]ipaccess.Rule, []netip.Addr) {
	rules := make([]ipaccess.Rule, n)
	addrs := make([]netip.Addr, 0, 1024)
	for i := range rules {
		action := ipaccess.ActionAllow
		if i%4 == 0 {
			action = ipaccess.ActionDeny
		}
		var p netip.Prefix
		if i%2 == 0 {
			p = netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(r.IntN(224)), byte(r.IntN(256)), byte(r.IntN(256)), byte(r.IntN(256))}), 16+r.IntN(17))
		} else {
			var b [16]byte
			b[0], b[1] = 0x20, 0x01
			for j := 2; j < 16; j++ {
				b[j] = byte(r.IntN(256))
			}
			p = netip.PrefixFrom(netip.AddrFrom16(b), 32+r.IntN(33))
		}
		rules[i] = rule(p.String(), action)
		if len(addrs) < cap(addrs)/2 {
			addrs = append(addrs, p.Masked().Addr())
		}
	}
	for len(addrs) < cap(addrs) {
		if len(addrs)%2 == 0 {
			addrs = append(addrs, netip.AddrFrom4([4]byte{byte(r.IntN(224)), byte(r.IntN(256)), byte(r.IntN(256)), byte(r.IntN(256))}))
		} else {
			var b [16]byte
			b[0], b[1] = 0x20, 0x01
			for j := 2; j < 16; j++ {
				b[j] = byte(r.IntN(256))
			}
			addrs = append(addrs, netip.AddrFrom16(b))
		}
	}
	r.Shuffle(len(addrs), func(i, j int) { addrs[i], addrs[j] = addrs[j], addrs[i] })
	return rules, addrs
}

func BenchmarkSetAllowed(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{10, 1000, 10000} {
		rules, addrs := benchRules(r, n)
		s := mustSet(b, rules...)
		b.Run(strconv.Itoa(n)+"rules", func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				s.Allowed(addrs[i%len(addrs)])
				i++
			}
		})
	}
	// For comparison: a linear scan over 1,000 prefixes that stops at the
	// first match (less work than a correct decision needs).
	rules, addrs := benchRules(r, 1000)
	prefixes := make([]netip.Prefix, len(rules))
	for i, ru := range rules {
		prefixes[i] = netip.MustParsePrefix(ru.CIDR)
	}
	b.Run("1000rules/linear-baseline", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			ip := addrs[i%len(addrs)]
			for _, p := range prefixes {
				if p.Contains(ip) {
					break
				}
			}
			i++
		}
	})
}

func BenchmarkNewSet(b *testing.B) {
	rules, _ := benchRules(rand.New(rand.NewPCG(5, 6)), 1000)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ipaccess.NewSet(rules); err != nil {
			b.Fatal(err)
		}
	}
}

// TestSetConcurrent runs Allowed from several goroutines; with -race it
// checks that a Set is safe for concurrent use.
func TestSetConcurrent(t *testing.T) {
	rules, addrs := benchRules(rand.New(rand.NewPCG(7, 8)), 200)
	s := mustSet(t, rules...)
	want := make([]bool, len(addrs))
	for i, ip := range addrs {
		want[i] = linearAllowed(rules, ip)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for i, ip := range addrs {
				if got := s.Allowed(ip); got != want[i] {
					t.Errorf("Allowed(%s) = %v, want %v", ip, got, want[i])
					return
				}
			}
		})
	}
	wg.Wait()
}
