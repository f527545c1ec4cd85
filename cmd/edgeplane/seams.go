package main

import (
	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/acmedns"
	"github.com/edgeplane/edgeplane/certmanager"
	"github.com/edgeplane/edgeplane/proxy"
	"github.com/edgeplane/edgeplane/tunnel"
)

// The seams this program wires: each runtime part declares the interface
// it consumes in its own package, and the Service's Host implements it.
// These assertions fail the build when the Host and a consumer's
// interface drift apart.
var (
	_ proxy.Host           = (*edgeplane.Host)(nil)
	_ proxy.EndpointSource = (*edgeplane.Host)(nil)
	_ tunnel.Host          = (*edgeplane.Host)(nil)
	_ certmanager.Host     = (*edgeplane.Host)(nil)
	_ acmedns.Host         = (*edgeplane.Host)(nil)
)
