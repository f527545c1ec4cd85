// Package clientip finds the client of an HTTP request: the
// connection's peer, or, when the peer is a trusted proxy, the client its
// X-Forwarded-For names. The edge proxy uses it for conn.client_ip and
// its IP restrictions, the management API for the IP restrictions of
// type api.
package clientip

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"
)

// ParsePrefixes parses a comma-separated list of CIDR prefixes or single
// addresses ("10.0.0.0/8,192.0.2.7"), such as a flag of trusted proxies;
// empty means none. Prefixes are masked and addresses unmapped, so an
// IPv4 prefix also covers its IPv4-mapped IPv6 form; a zone is refused.
// An error names the entry as what (such as "trusted proxy") and its
// position.
func ParsePrefixes(s, what string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for i, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		var p netip.Prefix
		if strings.Contains(part, "/") {
			var err error
			if p, err = netip.ParsePrefix(part); err != nil {
				return nil, fmt.Errorf("%s %d: %q is not a CIDR prefix (10.0.0.0/8) or an address", what, i+1, part)
			}
			if p.Addr().Is4In6() {
				if p.Bits() < 96 {
					return nil, fmt.Errorf("%s %d: %q mixes an IPv4-mapped address with a prefix shorter than /96", what, i+1, part)
				}
				p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
			}
		} else {
			a, err := netip.ParseAddr(part)
			if err != nil || a.Zone() != "" {
				return nil, fmt.Errorf("%s %d: %q is not a CIDR prefix (10.0.0.0/8) or an address", what, i+1, part)
			}
			a = a.Unmap()
			p = netip.PrefixFrom(a, a.BitLen())
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// Trusted reports whether ip is in one of the prefixes.
func Trusted(trusted []netip.Prefix, ip netip.Addr) bool {
	for _, p := range trusted {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// Of returns the address of r's client (for a proxy's conn.client_ip, or
// an API's IP restrictions), and whether it came from X-Forwarded-For.
//
// The client is the connection's peer (r.RemoteAddr). Only when the peer
// is a trusted proxy is X-Forwarded-For consulted: walking its entries from
// the right (the hop nearest to us), trusted proxies are skipped and the
// first untrusted address is the client. When every entry is trusted, the
// left-most one is the client; an entry that is not an address ends the
// walk and the last address walked is the client (whoever wrote the
// garbage is not trusted to name anyone). A header without an address
// leaves the peer as the client.
func Of(r *http.Request, trusted []netip.Prefix) (netip.AddrPort, bool) {
	peer, ok := Peer(r)
	if !ok {
		return netip.AddrPort{}, false
	}
	if len(trusted) == 0 || !Trusted(trusted, peer.Addr()) {
		return peer, false
	}
	ip, ok := forwardedClient(r.Header.Values("X-Forwarded-For"), trusted)
	if !ok {
		return peer, false
	}
	return netip.AddrPortFrom(ip, 0), true
}

// Peer returns the connection's peer (r.RemoteAddr), unmapped and
// without a zone; ok is false when RemoteAddr is not an address and port.
func Peer(r *http.Request) (peer netip.AddrPort, ok bool) {
	peer, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.AddrPort{}, false
	}
	return netip.AddrPortFrom(peer.Addr().Unmap().WithZone(""), peer.Port()), true
}

// forwardedClient walks X-Forwarded-For values (one or more header lines
// of comma-separated entries) from the right, as Of describes.
func forwardedClient(values []string, trusted []netip.Prefix) (netip.Addr, bool) {
	var last netip.Addr
	for i := len(values) - 1; i >= 0; i-- {
		v := values[i]
		for v != "" {
			var entry string
			if j := strings.LastIndexByte(v, ','); j >= 0 {
				entry, v = v[j+1:], v[:j]
			} else {
				entry, v = v, ""
			}
			entry = strings.TrimSpace(entry)
			if entry == "" {
				continue
			}
			ip, ok := parseForwardedAddr(entry)
			if !ok {
				return last, last.IsValid()
			}
			last = ip
			if !Trusted(trusted, ip) {
				return ip, true
			}
		}
	}
	return last, last.IsValid()
}

// parseForwardedAddr parses one X-Forwarded-For entry: an address, or an
// address with a port ("192.0.2.1:4711", "[2001:db8::1]:4711").
func parseForwardedAddr(s string) (netip.Addr, bool) {
	if a, err := netip.ParseAddr(s); err == nil && a.Zone() == "" {
		return a.Unmap(), true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil && ap.Addr().Zone() == "" {
		return ap.Addr().Unmap(), true
	}
	return netip.Addr{}, false
}
