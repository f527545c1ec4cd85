package proxy

import (
	"crypto/tls"
	"slices"
	"strconv"
	"strings"

	"github.com/edgeplane/edgeplane/edges"
)

// httpsPort is the port of every HTTPS edge's hostports.
var httpsPort = ":" + strconv.Itoa(edges.HTTPSPort)

// EdgeByHost returns the current snapshot of the HTTPS or TLS edge that
// serves host (lower-case, without a trailing dot or port): the edge that
// lists host:443, else the edge whose wildcard hostport covers host
// ("*.example.com:443" serves "a.example.com", one label deep, as the
// Service's DataPlaneHost.EdgeByHostport resolves). HTTPS and TLS edges serve
// port 443 only, and a hostport is used by one edge in the store, so at
// most one edge serves a host: its Config is set for an HTTPS edge, its
// TLS for a TLS edge. It returns nil when none does. Like [Configs.Edge]
// it never waits for a rebuild; it allocates only to form the wildcard
// when no edge lists host itself.
func (c *Configs) EdgeByHost(host string) *Edge {
	if e := c.edgeListing(host); e != nil {
		return e
	}
	if w, ok := wildcardOf(host); ok {
		return c.edgeListing(w)
	}
	return nil
}

// EdgeByHostport is [Configs.EdgeByHost] for a canonical hostport
// ("a.example.com:443"); a port other than 443 is served by no HTTPS or
// TLS edge.
func (c *Configs) EdgeByHostport(hostport string) *Edge {
	host, ok := strings.CutSuffix(hostport, httpsPort)
	if !ok {
		return nil
	}
	return c.EdgeByHost(host)
}

// edgeListing returns the snapshot of the edge that lists host:443.
func (c *Configs) edgeListing(host string) *Edge {
	s := c.hosts.get(host)
	if s == nil {
		return nil
	}
	e := s.p.Load()
	// The tables are published after the snapshots: an edge that just
	// stopped serving host may still be in the table; never route to it.
	if e == nil || !servesHost(e.Hostports(), host) {
		return nil
	}
	return e
}

// servesHost reports whether hostports lists host:443.
func servesHost(hostports []string, host string) bool {
	return slices.ContainsFunc(hostports, func(hp string) bool {
		return len(hp) == len(host)+len(httpsPort) && strings.HasPrefix(hp, host) && strings.HasSuffix(hp, httpsPort)
	})
}

// wildcardOf returns the wildcard host that would cover host:
// "*.example.com" for "a.example.com". ok is false when there is none (a
// single-label parent, or a wildcard host).
func wildcardOf(host string) (string, bool) {
	first, parent, ok := strings.Cut(host, ".")
	if !ok || first == "" || strings.HasPrefix(first, "*") || !strings.Contains(parent, ".") {
		return "", false
	}
	return "*." + parent, true
}

// Certificate returns the TLS certificate for a ClientHello's server
// name: the certificate of the reserved domain that serves the host of
// the edge ([Configs.EdgeByHost]), or of the https or tls endpoint that
// the proxy terminates TLS for, that serves the name: the domain named
// so, else the wildcard domain that covers it. It returns nil when
// neither serves the name or that domain has no certificate. The name
// is compared case-insensitively.
func (c *Configs) Certificate(serverName string) *tls.Certificate {
	name := strings.ToLower(strings.TrimSuffix(serverName, "."))
	if name == "" || len(name) > maxHostBytes || strings.Contains(name, "*") {
		return nil // a wildcard covers names; no client asks for "*.example.com"
	}
	if e := c.listingTLS(name); e != nil {
		return e.Certificates[name]
	}
	if w, ok := wildcardOf(name); ok {
		if e := c.listingTLS(w); e != nil {
			return e.Certificates[w]
		}
	}
	return nil
}

// EdgeByPort returns the current snapshot of the TCP edge that serves
// port (a TCP port serves one TCP edge in the store), or nil when none
// does. Like [Configs.Edge] it never waits for a rebuild.
func (c *Configs) EdgeByPort(port int) *Edge {
	if port < 1 || port > 65535 {
		return nil
	}
	p := strconv.Itoa(port)
	s := c.ports.get(p)
	if s == nil {
		return nil
	}
	e := s.p.Load()
	// As for hosts: the table may still name an edge that just moved off
	// the port.
	if e == nil || e.TCP == nil || !slices.ContainsFunc(e.TCP.Hostports, func(hp string) bool { return hostportPort(hp) == p }) {
		return nil
	}
	return e
}

// maxHostBytes bounds a host name (RFC 1035: 253 bytes, 255 on the
// wire).
const maxHostBytes = 255
