package ipaccess_test

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane/ipaccess"
)

// FuzzNormalizeCIDR checks that NormalizeCIDR never panics, that its
// result is a masked prefix in normal form that normalises to itself, that
// it never returns an IPv4-mapped prefix, and that it agrees with netip on
// which address the prefix holds.
func FuzzNormalizeCIDR(f *testing.F) {
	for _, s := range []string{
		"10.0.0.0/8", "10.1.2.3/8", "192.0.2.1", "0.0.0.0/0", "::/0", "2001:db8::1", "2001:db8::/32",
		"::ffff:10.0.0.0/104", "::ffff:1.2.3.4", "::ffff:0:0/95", "fe80::1%eth0", "fe80::1%eth0/64", "",
		"10.0.0.0/33", "::/129", "010.0.0.1", "1.2.3.4/08", " 1.2.3.4", "[::1]", "::ffff:1.2.3.4/96",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ipaccess.NormalizeCIDR(s)
		if err != nil {
			if n != "" {
				t.Fatalf("NormalizeCIDR(%q) = %q with error %v", s, n, err)
			}
			return
		}
		p, perr := netip.ParsePrefix(n)
		if perr != nil {
			t.Fatalf("NormalizeCIDR(%q) = %q, which netip cannot parse: %v", s, n, perr)
		}
		if p != p.Masked() || p.Addr().Zone() != "" {
			t.Fatalf("NormalizeCIDR(%q) = %q is not masked or has a zone", s, n)
		}
		if p.Addr().Is4In6() && p.Bits() >= 96 {
			t.Fatalf("NormalizeCIDR(%q) = %q is still IPv4-mapped", s, n)
		}
		again, err := ipaccess.NormalizeCIDR(n)
		if err != nil || again != n {
			t.Fatalf("NormalizeCIDR(%q) = %q, but that normalises to %q, %v", s, n, again, err)
		}
		// The input's own address (a bare address or a prefix's address)
		// lies in the normalised prefix when seen as IPv4 if mapped.
		var in netip.Addr
		if ip, err := netip.ParsePrefix(s); err == nil {
			in = ip.Addr()
		} else if ip, err := netip.ParseAddr(s); err == nil {
			in = ip
		} else {
			t.Fatalf("NormalizeCIDR accepted %q, which netip rejects", s)
		}
		if p.Addr().Is4() {
			in = in.Unmap()
		}
		if !p.Contains(in) {
			t.Fatalf("NormalizeCIDR(%q) = %q does not contain %s", s, n, in)
		}
		// A set of that one deny rule denies the address, unless the
		// address is IPv4-mapped and the prefix IPv6: Allowed matches such
		// an address as IPv4, which no IPv6 rule covers.
		if p.Addr().Is6() && in.Is4In6() {
			return
		}
		set, err := ipaccess.NewSet([]ipaccess.Rule{{CIDR: n, Action: ipaccess.ActionDeny}})
		if err != nil {
			t.Fatal(err)
		}
		if set.Allowed(in) {
			t.Fatalf("deny %s allows %s", n, in)
		}
	})
}

// FuzzSetAllowed checks Set.Allowed against a linear scan for small rule
// sets built from fuzzed bytes.
func FuzzSetAllowed(f *testing.F) {
	f.Add([]byte{10, 0, 0, 0, 8, 0}, []byte{10, 1, 2, 3})
	f.Add([]byte{10, 0, 0, 0, 8, 1, 10, 0, 0, 0, 16, 0}, []byte{10, 0, 0, 1})
	f.Add([]byte{0, 0, 0, 0, 0, 1}, []byte{255, 255, 255, 255})
	f.Add([]byte{255, 255, 255, 255, 32, 0}, []byte{255, 255, 255, 255})
	f.Add([]byte{32, 1, 13, 184, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 32, 0}, []byte{32, 1, 13, 184, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1})
	f.Add([]byte{255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 1, 1}, []byte{255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255})
	f.Fuzz(func(t *testing.T, spec, probe []byte) {
		// spec is a sequence of rules, each an address (4 bytes when the
		// probe is IPv4, 16 when it is IPv6), a prefix length byte and an
		// action byte.
		width := 4
		if len(probe) == 16 {
			width = 16
		} else if len(probe) != 4 {
			return
		}
		ip, _ := netip.AddrFromSlice(probe)
		var rules []ipaccess.Rule
		for len(spec) >= width+2 && len(rules) < 20 {
			a, _ := netip.AddrFromSlice(spec[:width])
			bits := int(spec[width]) % (width*8 + 1)
			action := ipaccess.ActionAllow
			if spec[width+1]&1 == 1 {
				action = ipaccess.ActionDeny
			}
			rules = append(rules, rule(netip.PrefixFrom(a, bits).String(), action))
			spec = spec[width+2:]
		}
		set, err := ipaccess.NewSet(rules)
		if err != nil {
			t.Fatalf("NewSet(%v): %v", rules, err)
		}
		for _, x := range []netip.Addr{ip, ip.Prev(), ip.Next()} {
			if !x.IsValid() {
				continue
			}
			if got, want := set.Allowed(x), linearAllowed(rules, x); got != want {
				t.Fatalf("Allowed(%s) = %v, linear scan says %v; rules %v", x, got, want, rules)
			}
		}
	})
}

// FuzzCreateRuleParamsValidate checks that Validate never panics, fails
// exactly when a field breaks its rule, and that a valid rule's Rule()
// holds the normalised CIDR.
func FuzzCreateRuleParamsValidate(f *testing.F) {
	f.Add("", "", "", "", "")
	f.Add("office", "{}", "10.1.2.3/8", pol1, "allow")
	f.Add(strings.Repeat("é", 128), "", "fe80::1%eth0", "ipp_x", "block")
	f.Fuzz(func(t *testing.T, desc, meta, cidr, policyID, action string) {
		p := ipaccess.CreateRuleParams{Description: desc, Metadata: meta, CIDR: cidr, IPPolicyID: policyID, Action: action}
		var want []string
		if len(desc) > 255 {
			want = append(want, "description")
		}
		if len(meta) > 4096 {
			want = append(want, "metadata")
		}
		norm, err := ipaccess.NormalizeCIDR(cidr)
		if err != nil {
			want = append(want, "cidr")
		}
		if policyID == "" || !strings.HasPrefix(policyID, "ipp_") || len(policyID) != len(pol1) || strings.ContainsFunc(policyID[4:], notBase62) {
			want = append(want, "ip_policy_id")
		}
		if action != "allow" && action != "deny" {
			want = append(want, "action")
		}
		checkViolations(t, p.Validate(), want)
		if len(want) == 0 && p.Rule().CIDR != norm {
			t.Fatalf("Rule().CIDR = %q, want %q", p.Rule().CIDR, norm)
		}
	})
}

func notBase62(r rune) bool {
	return !('0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z')
}
