package ipaccess

import (
	"encoding/binary"
	"math/bits"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/edgeplane/edgeplane/apierr"
)

// NormalizeCIDR returns s, an IPv4 or IPv6 prefix or a bare address, in
// normal form: masked to its network ("10.1.2.3/8" becomes "10.0.0.0/8"),
// a bare address as a host prefix ("10.1.2.3" becomes "10.1.2.3/32",
// "2001:db8::1" becomes "2001:db8::1/128"), and an IPv4-mapped IPv6 prefix
// of length 96 or more as IPv4 ("::ffff:10.0.0.0/104" becomes
// "10.0.0.0/8"). Addresses with a zone ("fe80::1%eth0") and surrounding
// spaces are refused. On failure it returns an InvalidArgument
// [*apierr.Error] with one violation whose field is empty, so that
// [apierr.Violations.AddError] can name it.
func NormalizeCIDR(s string) (string, error) {
	n, reason := normalizeCIDR(s)
	if reason != "" {
		return "", &apierr.Error{
			Code:       apierr.InvalidArgument,
			Msg:        "invalid cidr: " + reason,
			Violations: []apierr.Violation{{Reason: reason}},
		}
	}
	return n, nil
}

// normalizeCIDR returns the normal form of s, or the reason s is invalid.
func normalizeCIDR(s string) (string, string) {
	p, reason := parseCIDR(s)
	if reason != "" {
		return "", reason
	}
	return p.String(), ""
}

// parseCIDR parses s into a masked, unmapped prefix, or returns the reason
// s is invalid.
func parseCIDR(s string) (netip.Prefix, string) {
	if s == "" {
		return netip.Prefix{}, "is required"
	}
	if strings.Contains(s, "%") {
		return netip.Prefix{}, "must not contain an IPv6 zone"
	}
	var p netip.Prefix
	if strings.Contains(s, "/") {
		var err error
		if p, err = netip.ParsePrefix(s); err != nil {
			return netip.Prefix{}, "must be an IPv4 or IPv6 CIDR such as 10.0.0.0/8 or 2001:db8::/32 (prefix length 0 to 32 for IPv4, 0 to 128 for IPv6) or a single address"
		}
	} else {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return netip.Prefix{}, "must be an IPv4 or IPv6 CIDR such as 10.0.0.0/8 or 2001:db8::/32, or a single address such as 192.0.2.1"
		}
		p = netip.PrefixFrom(a, a.BitLen())
	}
	p = p.Masked()
	if p.Addr().Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
	}
	return p, ""
}

// verdict is what the rules say about an address range.
type verdict uint8

const (
	noMatch verdict = iota
	allow
	deny
)

// u128 is a 128-bit unsigned number, an address as an integer. IPv4
// addresses use lo only.
type u128 struct{ hi, lo uint64 }

func (a u128) less(b u128) bool { return a.hi < b.hi || a.hi == b.hi && a.lo < b.lo }

// table maps address ranges to verdicts: starts[i] is the first address of
// a range whose verdict is verdicts[i] and which ends just before
// starts[i+1] (or at the end of the address space). Addresses before
// starts[0] match no rule.
type table struct {
	starts   []u128
	verdicts []verdict
}

// lookup returns the verdict for x by binary search.
func (t *table) lookup(x u128) verdict {
	// Find the number of starts <= x.
	lo, hi := 0, len(t.starts)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if x.less(t.starts[m]) {
			hi = m
		} else {
			lo = m + 1
		}
	}
	if lo == 0 {
		return noMatch
	}
	return t.verdicts[lo-1]
}

// event changes the number of allow and deny rules covering addresses from
// at onwards.
type event struct {
	at          u128
	allow, deny int
}

// build sweeps events into t.
func (t *table) build(evs []event) {
	slices.SortFunc(evs, func(a, b event) int {
		switch {
		case a.at.less(b.at):
			return -1
		case b.at.less(a.at):
			return 1
		}
		return 0
	})
	allows, denies := 0, 0
	last := noMatch
	for i := 0; i < len(evs); {
		at := evs[i].at
		for ; i < len(evs) && evs[i].at == at; i++ {
			allows += evs[i].allow
			denies += evs[i].deny
		}
		v := noMatch
		switch {
		case denies > 0:
			v = deny
		case allows > 0:
			v = allow
		}
		if v != last {
			t.starts = append(t.starts, at)
			t.verdicts = append(t.verdicts, v)
			last = v
		}
	}
}

// Set decides whether addresses are allowed by a group of rules, usually
// every rule of the IP policies of one restriction. Deny rules win over
// allow rules; an address that no rule matches is denied when the set has
// any allow rule and allowed otherwise. Build one with [NewSet]. A Set is
// immutable and safe for concurrent use; a nil *Set has no rules and
// allows every valid address.
type Set struct {
	v4, v6   table
	hasAllow bool
	// parts, when not nil, make the Set the union of these sets (see
	// [Union]); its own tables are then empty.
	parts []*Set
}

// Union returns the Set of the rules of sets together: it decides every
// address exactly as NewSet of all their rules would, but shares the
// sets' tables rather than copying them, so that sets built once per IP
// policy can serve every restriction and traffic policy that names the
// policy. Allowed then costs one lookup per set. Nil sets are skipped.
func Union(sets ...*Set) *Set {
	u := &Set{parts: []*Set{}}
	for _, s := range sets {
		if s == nil {
			continue
		}
		if s.parts != nil {
			u.parts = append(u.parts, s.parts...)
		} else {
			u.parts = append(u.parts, s)
		}
		u.hasAllow = u.hasAllow || s.hasAllow
	}
	return u
}

// NewSet builds a Set from rules; only their CIDR and Action are used. A
// CIDR need not be in normal form. A rule with an invalid CIDR or action
// fails with an InvalidArgument [*apierr.Error] naming rules[i].cidr or
// rules[i].action. Building takes O(n log n) time for n rules.
func NewSet(rules []Rule) (*Set, error) {
	s := &Set{}
	var vs apierr.Violations
	var ev4, ev6 []event
	for i, r := range rules {
		field := "rules[" + strconv.Itoa(i) + "]"
		p, reason := parseCIDR(r.CIDR)
		if reason != "" {
			vs.Add(field+".cidr", "%s", reason)
		}
		var a, d int
		switch r.Action {
		case ActionAllow:
			a = 1
			s.hasAllow = true
		case ActionDeny:
			d = 1
		default:
			vs.Add(field+".action", "must be one of: allow, deny")
			continue
		}
		if reason != "" {
			continue
		}
		start, end, toEnd := bounds(p)
		if p.Addr().Is4() {
			ev4 = append(ev4, event{at: start, allow: a, deny: d})
			ev4 = append(ev4, event{at: end, allow: -a, deny: -d})
			continue
		}
		ev6 = append(ev6, event{at: start, allow: a, deny: d})
		if !toEnd {
			ev6 = append(ev6, event{at: end, allow: -a, deny: -d})
		}
	}
	if err := vs.Err(); err != nil {
		return nil, err
	}
	s.v4.build(ev4)
	s.v6.build(ev6)
	return s, nil
}

// bounds returns the first address of the masked prefix p and the address
// just after its last one. toEnd reports that p runs to the end of the IPv6
// space, where there is no next address. IPv4 ends fit in lo (at most
// 1<<32).
func bounds(p netip.Prefix) (start, next u128, toEnd bool) {
	start = toU128(p.Addr())
	if p.Addr().Is4() {
		return start, u128{lo: start.lo + 1<<(32-p.Bits())}, false
	}
	host := 128 - p.Bits()
	var size u128 // 1 << host
	switch {
	case host == 128:
		return start, u128{}, true
	case host >= 64:
		size.hi = 1 << (host - 64)
	default:
		size.lo = 1 << host
	}
	lo, carry := bits.Add64(start.lo, size.lo, 0)
	hi, overflow := bits.Add64(start.hi, size.hi, carry)
	if overflow != 0 {
		return start, u128{}, true
	}
	return start, u128{hi, lo}, false
}

// toU128 returns a, an unmapped address, as an integer.
func toU128(a netip.Addr) u128 {
	if a.Is4() {
		b := a.As4()
		return u128{lo: uint64(binary.BigEndian.Uint32(b[:]))}
	}
	b := a.As16()
	return u128{binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])}
}

// Allowed reports whether ip is allowed: denied if a deny rule matches it,
// else allowed if an allow rule matches it, else allowed only when the set
// has no allow rule. IPv4-mapped IPv6 addresses are matched as IPv4 and a
// zone is ignored. The zero Addr is never allowed. Allowed takes O(log n)
// time (per set of a [Union]) and does not allocate.
func (s *Set) Allowed(ip netip.Addr) bool {
	if !ip.IsValid() {
		return false
	}
	if s == nil {
		return true
	}
	ip = ip.Unmap()
	x, is4 := toU128(ip), ip.Is4()
	var v verdict
	if s.parts == nil {
		v = s.lookup(x, is4)
	} else {
		for _, p := range s.parts {
			switch p.lookup(x, is4) {
			case deny:
				return false
			case allow:
				v = allow
			}
		}
	}
	switch v {
	case deny:
		return false
	case allow:
		return true
	}
	return !s.hasAllow
}

// lookup returns what the rules of a Set built by NewSet say of x.
func (s *Set) lookup(x u128, is4 bool) verdict {
	if is4 {
		return s.v4.lookup(x)
	}
	return s.v6.lookup(x)
}
