// Package netguard decides which IP addresses the server may connect to
// on a tenant's behalf (an OIDC issuer, an event destination): public
// unicast addresses only, unless the operator names the networks allowed.
// The check runs on every address actually dialled (net.Dialer.Control),
// after name resolution, so a name that resolves to a private address is
// refused as the address itself is.
//
// A host can also be judged before anything is dialled, when a tenant
// names it ([Policy.CheckHost]): an IP literal the policy refuses, or a
// name none of whose addresses it allows, is refused at once, with the
// reason. That check is advice for the person who chose the host, not
// the guard: a name can resolve elsewhere later, so the dial's check
// stays.
package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
	"time"
)

// Policy decides which addresses may be dialled. The zero value allows
// public addresses only.
type Policy struct {
	// networks, when not nil, are the only networks allowed.
	networks []netip.Prefix
}

// New returns the policy that allows only networks, or public addresses
// only when networks is empty. An IPv4-mapped prefix stands for its IPv4
// network.
func New(networks []netip.Prefix) *Policy {
	if len(networks) == 0 {
		return &Policy{}
	}
	p := &Policy{networks: make([]netip.Prefix, 0, len(networks))}
	for _, n := range networks {
		if !n.IsValid() {
			continue
		}
		if a := n.Addr(); a.Is4In6() && n.Bits() >= 96 {
			n = netip.PrefixFrom(a.Unmap(), n.Bits()-96)
		}
		p.networks = append(p.networks, n)
	}
	return p
}

// Check returns "" when a may be dialled, else why not ("10.0.0.1 is
// private (10.0.0.0/8)", "10.0.0.1 is outside the allowed networks").
func (p *Policy) Check(a netip.Addr) string {
	a = a.Unmap().WithZone("")
	if p.networks != nil {
		for _, n := range p.networks {
			if n.Contains(a) {
				return ""
			}
		}
		return a.String() + " is outside the allowed networks"
	}
	if reason := NonPublic(a); reason != "" {
		return a.String() + " is " + reason
	}
	return ""
}

// String says which addresses p allows, for a message: "public
// addresses only" or "only 10.0.0.0/8 and 127.0.0.0/8".
func (p *Policy) String() string {
	if p.networks == nil {
		return "public addresses only"
	}
	if len(p.networks) == 0 {
		return "no address (none of the networks given is valid)"
	}
	names := make([]string, len(p.networks))
	for i, n := range p.networks {
		names[i] = n.String()
	}
	if len(names) == 1 {
		return "only " + names[0]
	}
	return "only " + strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// LookupFunc looks up the addresses of a host name, as
// (*net.Resolver).LookupNetIP does with network "ip".
type LookupFunc func(ctx context.Context, network, host string) ([]netip.Addr, error)

// maxReasons is how many refused addresses a reason of CheckHost names.
const maxReasons = 3

// CheckHost returns "" when host, the host of a URL a tenant gave, may
// be reached: an IP address p allows, or a name at least one of whose
// addresses p allows. Else it returns why not, in words for that tenant
// and starting with host: "10.1.2.3 is private (10.0.0.0/8)",
// "hooks.internal resolves only to addresses not allowed (10.0.0.5 is
// private (10.0.0.0/8))", "hooks.internal did not resolve (no such
// host)", "hooks.internal did not resolve within 3s". A name is looked up
// with lookup, given at most timeout (when positive); a failed lookup
// is a reason of its own, never the resolver's error text.
func (p *Policy) CheckHost(ctx context.Context, lookup LookupFunc, host string, timeout time.Duration) string {
	if host == "" {
		return "the URL has no host"
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return p.Check(a)
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	addrs, err := lookup(ctx, "ip", host)
	var dnsErr *net.DNSError
	switch {
	case err == nil && len(addrs) == 0:
		return host + " did not resolve (it has no address)"
	case err == nil:
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &dnsErr) && dnsErr.IsTimeout:
		if timeout > 0 {
			return fmt.Sprintf("%s did not resolve within %v (the name server did not answer in time)", host, timeout)
		}
		return host + " did not resolve (the name server did not answer in time)"
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		return host + " did not resolve (no such host)"
	default:
		return host + " did not resolve (the name server failed)"
	}
	var reasons []string
	for _, a := range addrs {
		r := p.Check(a)
		if r == "" {
			return ""
		}
		if len(reasons) < maxReasons {
			reasons = append(reasons, r)
		}
	}
	if len(addrs) > len(reasons) {
		reasons = append(reasons, fmt.Sprintf("and %d more", len(addrs)-len(reasons)))
	}
	return host + " resolves only to addresses not allowed (" + strings.Join(reasons, "; ") + ")"
}

// Control is a net.Dialer Control function that refuses the addresses p
// does not allow, with a [*RefusedError] wrapping notAllowed.
func (p *Policy) Control(notAllowed error) func(network, address string, c syscall.RawConn) error {
	return func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return &RefusedError{Reason: fmt.Sprintf("%q is not an IP address and port", address), notAllowed: notAllowed}
		}
		if reason := p.Check(ap.Addr()); reason != "" {
			return &RefusedError{Reason: reason, notAllowed: notAllowed}
		}
		return nil
	}
}

// RefusedError is the error of [Policy.Control] for an address the
// policy refuses. It unwraps to the error Control was given.
type RefusedError struct {
	// Reason says why, as [Policy.Check] does ("10.0.0.1 is private
	// (10.0.0.0/8)").
	Reason     string
	notAllowed error
}

// Error returns the error Control was given and the reason.
func (e *RefusedError) Error() string { return e.notAllowed.Error() + ": " + e.Reason }

// Unwrap returns the error Control was given.
func (e *RefusedError) Unwrap() error { return e.notAllowed }

// Non-public networks, by the reason they are refused. IPv4-mapped IPv6
// addresses are unmapped before the lookup; NAT64 addresses are judged by
// the IPv4 address they embed.
var nonPublicNetworks = []struct {
	prefix netip.Prefix
	reason string
}{
	// IPv4 (IANA IPv4 Special-Purpose Address Registry, RFC 6890 and on).
	// 0.0.0.0 and 127.0.0.0/8 are handled before this table.
	{netip.MustParsePrefix("0.0.0.0/8"), "in \"this network\" (0.0.0.0/8)"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private (10.0.0.0/8)"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared address space (carrier-grade NAT, 100.64.0.0/10)"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local (169.254.0.0/16, where cloud metadata services live)"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private (172.16.0.0/12)"},
	{netip.MustParsePrefix("192.0.0.0/24"), "reserved for IETF protocol assignments (192.0.0.0/24)"},
	{netip.MustParsePrefix("192.0.2.0/24"), "reserved for documentation"},
	{netip.MustParsePrefix("192.88.99.0/24"), "the deprecated 6to4 relay anycast (192.88.99.0/24)"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private (192.168.0.0/16)"},
	{netip.MustParsePrefix("198.18.0.0/15"), "reserved for benchmarking (198.18.0.0/15)"},
	{netip.MustParsePrefix("198.51.100.0/24"), "reserved for documentation"},
	{netip.MustParsePrefix("203.0.113.0/24"), "reserved for documentation"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved (240.0.0.0/4, broadcast included)"},
	// IPv6 (IANA IPv6 Special-Purpose Address Registry). ::/128, ::1 and
	// 64:ff9b::/96 are handled before this table.
	{netip.MustParsePrefix("64:ff9b:1::/48"), "local-use NAT64 (64:ff9b:1::/48)"},
	{netip.MustParsePrefix("::/8"), "reserved (::/8)"},
	{netip.MustParsePrefix("100::/64"), "discard-only (100::/64)"},
	{netip.MustParsePrefix("2001:db8::/32"), "reserved for documentation"},
	{netip.MustParsePrefix("2001::/23"), "reserved for IETF protocol assignments (2001::/23, Teredo included)"},
	{netip.MustParsePrefix("2002::/16"), "6to4 (2002::/16)"},
	{netip.MustParsePrefix("3fff::/20"), "reserved for documentation"},
	{netip.MustParsePrefix("fc00::/7"), "unique local (private, fc00::/7)"},
	{netip.MustParsePrefix("fe80::/10"), "link-local (fe80::/10)"},
	{netip.MustParsePrefix("fec0::/10"), "site-local (fec0::/10)"},
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
}

var (
	nat64Prefix     = netip.MustParsePrefix("64:ff9b::/96")
	globalUnicastV6 = netip.MustParsePrefix("2000::/3")
)

// NonPublic returns why a is not a public unicast address, or "" when it
// is one. IPv4-mapped IPv6 addresses (::ffff:a.b.c.d) are judged as the
// IPv4 address, NAT64 ones (64:ff9b::a.b.c.d) by the IPv4 address they
// embed; an IPv6 address outside global unicast (2000::/3) is not public.
func NonPublic(a netip.Addr) string {
	a = a.Unmap().WithZone("")
	switch {
	case !a.IsValid():
		return "not an IP address"
	case a.IsUnspecified():
		return "unspecified"
	case a.IsLoopback():
		return "loopback"
	case a.Is6() && nat64Prefix.Contains(a):
		b := a.As16()
		if r := NonPublic(netip.AddrFrom4([4]byte(b[12:]))); r != "" {
			return "NAT64 of an address that is " + r
		}
		return ""
	}
	for _, n := range nonPublicNetworks {
		if n.prefix.Contains(a) {
			return n.reason
		}
	}
	if a.Is6() && !globalUnicastV6.Contains(a) {
		return "outside IPv6 global unicast (2000::/3)"
	}
	return ""
}
