package backends

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// MaxForwardsToBytes bounds a tunnel's forwards_to.
const MaxForwardsToBytes = 2048

// CheckForwardsTo returns why s is not a valid forwards_to, or "" when it
// is valid. An empty s is valid: the field is optional. Otherwise s is an
// absolute http, https, tcp or tls URL of at most [MaxForwardsToBytes]
// bytes with a host and a port from 1 to 65535 (optional for http and
// https), without user information, query or fragment, and with no path
// beyond "/": it names the upstream server an agent forwards to, such as
// http://127.0.0.1:3000 for an HTTPS edge's route or tcp://127.0.0.1:5432
// for a TCP or TLS edge.
func CheckForwardsTo(s string) string {
	const shape = "must be an absolute http, https, tcp or tls URL with a host, such as http://127.0.0.1:3000 or tcp://127.0.0.1:5432"
	if s == "" {
		return ""
	}
	if len(s) > MaxForwardsToBytes {
		return "must be at most " + strconv.Itoa(MaxForwardsToBytes) + " bytes, got " + strconv.Itoa(len(s))
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c == 0x7f {
			return shape + "; spaces and control characters are not allowed"
		}
	}
	u, err := url.Parse(s)
	switch {
	case err != nil || !slices.Contains([]string{"http", "https", "tcp", "tls"}, u.Scheme) || u.Opaque != "" || u.Host == "":
		return shape
	case u.Hostname() == "":
		return shape + "; the host is missing"
	case u.User != nil:
		return "must not contain user information"
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(s, "#"):
		return "must not have a query or fragment"
	case u.Path != "" && u.Path != "/":
		return `must have no path beyond "/": it names an upstream server, not a resource on it`
	}
	if u.Port() == "" && (u.Scheme == "tcp" || u.Scheme == "tls") {
		return "must have a port: " + u.Scheme + " URLs name no default port"
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return "must have a port from 1 to 65535"
		}
	}
	return ""
}
