package proxy

import (
	"net/netip"

	"github.com/edgeplane/edgeplane/clientip"
)

// ParseTrustedProxies parses a list of trusted proxies (the
// -trusted-proxies flag of edgeplane proxy): a comma-separated
// list of CIDR prefixes or single addresses ("10.0.0.0/8,192.0.2.7").
// Empty means none. Addresses are unmapped, so an IPv4 prefix also covers
// its IPv4-mapped IPv6 form. See [clientip.ParsePrefixes].
func ParseTrustedProxies(s string) ([]netip.Prefix, error) {
	return clientip.ParsePrefixes(s, "trusted proxy")
}

// ParseNetworks parses a list of networks (the -upstream-networks flag of
// edgeplane proxy, [HandlerOptions.UpstreamNetworks]) as
// [ParseTrustedProxies] does; errors name "network N".
func ParseNetworks(s string) ([]netip.Prefix, error) { return clientip.ParsePrefixes(s, "network") }
