package policy

import (
	"fmt"
	"net/netip"
	"regexp"
	"strconv"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
)

// The implementations here are shared by the CEL bindings and the native
// evaluator, so both give the same answers.

// parseIP parses an IP address for inCidrRange; IPv4-mapped IPv6 addresses
// are unmapped and zones dropped, as for conn.client_ip.
func parseIP(s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("invalid IP address %s", quoteTrunc(s))
	}
	return a.Unmap().WithZone(""), nil
}

// parseCIDR parses a CIDR for inCidrRange. A bare address is not a CIDR.
func parseCIDR(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("invalid CIDR %s", quoteTrunc(s))
	}
	return p, nil
}

// inCidrRange reports whether ip is in cidr. An IPv4 address is never in an
// IPv6 prefix and the other way round.
func inCidrRange(ip, cidr string) (bool, error) {
	a, err := parseIP(ip)
	if err != nil {
		return false, err
	}
	p, err := parseCIDR(cidr)
	if err != nil {
		return false, err
	}
	return p.Contains(a), nil
}

// inCidrRanges reports whether ip is in one of cidrs, checked in order; an
// invalid CIDR met before a match is an error.
func inCidrRanges(ip string, cidrs []string) (bool, error) {
	a, err := parseIP(ip)
	if err != nil {
		return false, err
	}
	for _, c := range cidrs {
		p, err := parseCIDR(c)
		if err != nil {
			return false, err
		}
		if p.Contains(a) {
			return true, nil
		}
	}
	return false, nil
}

func celInCidrRange(ip, cidr ref.Val) ref.Val {
	i, ok1 := ip.(types.String)
	c, ok2 := cidr.(types.String)
	if !ok1 || !ok2 {
		return types.NoSuchOverloadErr()
	}
	in, err := inCidrRange(string(i), string(c))
	if err != nil {
		return types.WrapErr(fmt.Errorf("inCidrRange: %w", err))
	}
	return types.Bool(in)
}

func celInCidrRanges(ip, list ref.Val) ref.Val {
	i, ok1 := ip.(types.String)
	l, ok2 := list.(traits.Lister)
	if !ok1 || !ok2 {
		return types.NoSuchOverloadErr()
	}
	n, ok := l.Size().(types.Int)
	if !ok {
		return types.NoSuchOverloadErr()
	}
	cidrs := make([]string, 0, int(n))
	for j := types.Int(0); j < n; j++ {
		s, ok := l.Get(j).(types.String)
		if !ok {
			return types.NoSuchOverloadErr()
		}
		cidrs = append(cidrs, string(s))
	}
	in, err := inCidrRanges(string(i), cidrs)
	if err != nil {
		return types.WrapErr(fmt.Errorf("inCidrRanges: %w", err))
	}
	return types.Bool(in)
}

// Regexp is a compiled regular expression of an action config (RE2 syntax,
// as Go's regexp package).
type Regexp struct {
	re   *regexp.Regexp
	prog int // RE2 instructions
}

// MatchString reports whether s contains a match.
func (r *Regexp) MatchString(s string) bool { return r.re.MatchString(s) }

// FindStringSubmatchIndex returns the positions of the leftmost match and
// its groups, as regexp.Regexp does.
func (r *Regexp) FindStringSubmatchIndex(s string) []int { return r.re.FindStringSubmatchIndex(s) }

// NumSubexp returns the number of capture groups.
func (r *Regexp) NumSubexp() int { return r.re.NumSubexp() }

// String returns the source text.
func (r *Regexp) String() string { return r.re.String() }

// compileRegexp compiles a config's pattern with the document's regexes
// (once per distinct pattern, within the document's budget).
func (c *compiler) compileRegexp(pattern string) (*Regexp, error) {
	r := c.regex(pattern)
	if r.err != nil {
		return nil, r.err
	}
	return &Regexp{r.re, r.prog}, nil
}

// quoteTrunc quotes s for an error message, cutting it to 64 bytes.
func quoteTrunc(s string) string {
	if len(s) > 64 {
		return strconv.Quote(s[:64]) + "..."
	}
	return strconv.Quote(s)
}

// quote quotes s.
func quote(s string) string { return strconv.Quote(s) }
