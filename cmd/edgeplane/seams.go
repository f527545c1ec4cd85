package main

import (
	"github.com/edgeplane/edgeplane/acmedns"
	"github.com/edgeplane/edgeplane/certmanager"
	"github.com/edgeplane/edgeplane/hosting"
	"github.com/edgeplane/edgeplane/internal/elect"
	"github.com/edgeplane/edgeplane/proxy"
	"github.com/edgeplane/edgeplane/tunnel"
)

// The seams this program wires: each runtime part declares the interface
// it consumes in its own package, and one role of the Service's Host (a
// type of package hosting) implements it (svc.Host().DataPlane() for the proxy, Tunnels() for the
// tunnel server, Certificates() for the certificate manager and the DNS
// server, Leases() for elections). These assertions fail the build when a
// role and its consumer's interface drift apart.
var (
	_ proxy.Host           = (*hosting.DataPlaneHost)(nil)
	_ proxy.EndpointSource = (*hosting.DataPlaneHost)(nil)
	_ tunnel.Host          = (*hosting.TunnelHost)(nil)
	_ certmanager.Host     = (*hosting.CertificateHost)(nil)
	_ acmedns.Host         = (*hosting.CertificateHost)(nil)
	_ elect.Leaser         = (*hosting.LeaseHost)(nil)
)
