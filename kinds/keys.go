package kinds

import "strings"

// Store keys of where an edge or an endpoint serves (the unique keys of
// their records): a hostport serves one of them in the whole store, and
// a TCP port one TCP edge; an edge proxy finds what serves a hostport by
// its key, and an endpoint pool is indexed under it.
const (
	hostportKeyPrefix = "edge_hostport:"
	tcpPortKeyPrefix  = "edge_tcp_port:"
)

// HostportKey is the store key of a canonical hostport.
func HostportKey(hostport string) string { return hostportKeyPrefix + hostport }

// TCPPortKey is the store key of a TCP edge's port: a TCP client names
// no host, so TCP edges are told apart by port alone.
func TCPPortKey(port string) string { return tcpPortKeyPrefix + port }

// IsPlaceKey reports whether key is a [HostportKey] or a [TCPPortKey].
func IsPlaceKey(key string) bool {
	return strings.HasPrefix(key, hostportKeyPrefix) || strings.HasPrefix(key, tcpPortKeyPrefix)
}
