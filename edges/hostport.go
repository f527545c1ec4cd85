package edges

import (
	"slices"
	"strconv"
	"strings"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/domains"
)

// Hostport limits and ports.
const (
	// MaxHostports is the most hostports one edge may have.
	MaxHostports = 10
	// MaxHostportBytes bounds one hostport as given: a DNS name of at most
	// [domains.MaxNameBytes] bytes, ":" and a port of at most five digits
	// (plus one trailing dot on the name).
	MaxHostportBytes = domains.MaxNameBytes + 1 + 1 + 5
	// HTTPSPort is the only port of the hostports of HTTPS and TLS edges:
	// the port HTTPS and TLS clients connect to when a URL names none.
	HTTPSPort = 443
)

// EdgeType names the three kinds of edge where a rule differs between
// them (the ports their hostports may use).
type EdgeType int

// The kinds of edge.
const (
	// EdgeHTTPS is an HTTPS edge: hostports on port 443 only.
	EdgeHTTPS EdgeType = iota
	// EdgeTLS is a TLS edge: hostports on port 443 only.
	EdgeTLS
	// EdgeTCP is a TCP edge: hostports on any port from 1 to 65535.
	EdgeTCP
)

// ParseHostport checks that s is a valid hostport for an edge of type t
// and returns its canonical form (the host lower-cased without a trailing
// dot, then ":" and the port in decimal without leading zeros) and its
// host. A hostport is "host:port": host a DNS name as a reserved domain
// is written ([domains.ParseName]; a wildcard "*.example.com" is
// accepted), port decimal digits. HTTPS and TLS edges take port
// [HTTPSPort] only; TCP edges any port from 1 to 65535. The error, when
// not "", is a lowercase reason for a violation of the field that held s.
func ParseHostport(s string, t EdgeType) (hostport, host, reason string) {
	switch {
	case s == "":
		return "", "", "is required: a hostport such as app.example.com:443"
	case len(s) > MaxHostportBytes:
		return "", "", "must be at most " + strconv.Itoa(MaxHostportBytes) + " bytes, got " + strconv.Itoa(len(s))
	}
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return "", "", "must be host:port, such as app.example.com:443; the port is missing"
	}
	name, err := domains.ParseName(s[:i])
	if err != nil {
		return "", "", "host " + err.Error()
	}
	port, reason := parsePort(s[i+1:])
	if reason != "" {
		return "", "", reason
	}
	if t != EdgeTCP && port != HTTPSPort {
		kind := "HTTPS"
		if t == EdgeTLS {
			kind = "TLS"
		}
		return "", "", "must use port 443: " + kind + " edges serve on the HTTPS port only, got port " + strconv.Itoa(port)
	}
	return name + ":" + strconv.Itoa(port), name, ""
}

// parsePort returns the port s names, or why it names none: 1 to 5
// decimal digits, no sign and no leading zero, from 1 to 65535.
func parsePort(s string) (int, string) {
	const bad = "port must be a number from 1 to 65535"
	if s == "" || len(s) > 5 || s[0] == '0' {
		return 0, bad
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, bad
		}
	}
	port, err := strconv.Atoi(s)
	if err != nil || port < 1 || port > 65535 {
		return 0, bad
	}
	return port, ""
}

// checkHostports adds the violations of a hostports list to vs: at most
// [MaxHostports], each valid for t ([ParseHostport]) and listed once
// (compared in canonical form).
func checkHostports(vs *apierr.Violations, list []string, t EdgeType) {
	if len(list) > MaxHostports {
		vs.Add("hostports", "must list at most %d hostports, got %d", MaxHostports, len(list))
		return
	}
	seen := make([]string, 0, len(list))
	for i, s := range list {
		field := "hostports[" + strconv.Itoa(i) + "]"
		hp, _, reason := ParseHostport(s, t)
		if reason != "" {
			vs.Add(field, "%s", reason)
			seen = append(seen, "")
			continue
		}
		if j := slices.Index(seen, hp); j >= 0 {
			vs.Add(field, "duplicates hostports[%d]; list each hostport once", j)
		}
		seen = append(seen, hp)
	}
}

// CanonicalHostports returns the canonical forms of list ([ParseHostport]);
// never nil. Call it after the params' Validate: an invalid entry is
// returned as given.
func CanonicalHostports(list []string, t EdgeType) []string {
	out := make([]string, len(list))
	for i, s := range list {
		if hp, _, reason := ParseHostport(s, t); reason == "" {
			out[i] = hp
		} else {
			out[i] = s
		}
	}
	return out
}

// HostportHost returns the host of a canonical hostport.
func HostportHost(hostport string) string {
	if i := strings.LastIndexByte(hostport, ':'); i >= 0 {
		return hostport[:i]
	}
	return hostport
}
