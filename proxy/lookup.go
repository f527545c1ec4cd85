package proxy

import (
	"crypto/tls"
	"slices"
	"strings"
)

// EdgeByHostport returns the current snapshot of the HTTPS edge that
// serves hostport (canonical: "host:port", the host lower-case without a
// trailing dot): the edge that lists it, else the edge whose wildcard
// hostport covers its host ("*.example.com:443" serves
// "a.example.com:443", one label deep, as [edgeplane.Host.EdgeByHostport]
// resolves). It returns nil when no edge serves it. Like [Configs.Edge] it
// never waits for a rebuild; it allocates only to form the wildcard when
// no edge lists hostport itself.
func (c *Configs) EdgeByHostport(hostport string) *Edge {
	if e := c.edgeListing(hostport); e != nil {
		return e
	}
	if w, ok := wildcardOf(hostport); ok {
		return c.edgeListing(w)
	}
	return nil
}

// edgeListing returns the snapshot of the edge that lists hostport.
func (c *Configs) edgeListing(hostport string) *Edge {
	s := c.hostports.get(hostport)
	if s == nil {
		return nil
	}
	e := s.p.Load()
	// The tables are published after the snapshots: an edge that just
	// stopped serving hostport may still be in the table; never route to
	// it.
	if e == nil || !slices.Contains(e.Config.Hostports, hostport) {
		return nil
	}
	return e
}

// wildcardOf returns the wildcard hostport that would cover a hostport's
// host: "*.example.com:443" for "a.example.com:443". ok is false when
// there is none (a single-label parent, or a wildcard host).
func wildcardOf(hostport string) (string, bool) {
	first, rest, ok := strings.Cut(hostport, ".")
	if !ok || first == "" || strings.HasPrefix(first, "*") {
		return "", false
	}
	parent, _, _ := strings.Cut(rest, ":")
	if !strings.Contains(parent, ".") {
		return "", false
	}
	return "*." + rest, true
}

// Certificate returns the TLS certificate for a ClientHello's server name
// arriving on a listener's port ("443"): the certificate of the edge that
// serves that hostport (as [Configs.EdgeByHostport]), else of any edge
// that serves the name on another port (a listener behind a port
// mapping), else of the wildcard that covers it. It returns nil when no
// edge serves the name or its reserved domain has no certificate. The
// name is compared case-insensitively.
func (c *Configs) Certificate(serverName, port string) *tls.Certificate {
	name := strings.ToLower(strings.TrimSuffix(serverName, "."))
	if name == "" || len(name) > maxHostBytes {
		return nil
	}
	if port != "" {
		if e := c.EdgeByHostport(name + ":" + port); e != nil {
			if cert := e.Certificates[name]; cert != nil {
				return cert
			}
			if w, ok := wildcardOf(name + ":" + port); ok {
				return e.Certificates[w[:len(w)-len(port)-1]]
			}
			return nil
		}
	}
	if cert := c.hostCertificate(name); cert != nil {
		return cert
	}
	if w, ok := wildcardOf(name + ":0"); ok {
		return c.hostCertificate(w[:len(w)-2])
	}
	return nil
}

func (c *Configs) hostCertificate(host string) *tls.Certificate {
	s := c.hosts.get(host)
	if s == nil {
		return nil
	}
	if e := s.p.Load(); e != nil {
		return e.Certificates[host]
	}
	return nil
}

// maxHostBytes bounds a host name (RFC 1035: 253 bytes, 255 on the
// wire).
const maxHostBytes = 255
