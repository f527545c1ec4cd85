// Package hosting is what an edgeplane Service provides to the runtime
// parts that host agents and traffic: the roles of the Service's Host,
// one per caller, each a small set of methods matching the interface
// its consumer declares in its own package.
//
//   - [TunnelHost]: the tunnel server (package tunnel's Host): edge
//     nodes registered and renewed, agents' sessions, labeled tunnels and
//     endpoints, resume tokens, IP restrictions of type agent;
//   - [NodeHost]: the hop between edge nodes (package hop): the store's
//     nodes and their key;
//   - [DataPlaneHost]: edge proxies (package proxy's Host and
//     EndpointSource): edges listed, their configs compiled, backend
//     tunnels, certificates by host, endpoint restrictions, agents'
//     endpoints, the edge that serves a hostport, ACME answers;
//   - [CertificateHost]: the certificate manager (package certmanager's
//     Host) and the DNS server of DNS-01 challenges (package acmedns's
//     Host): certificate orders and their reports, ACME account keys and
//     challenges;
//   - [LeaseHost]: elections of one replica (package internal/elect: the
//     certificate manager's orders, event delivery).
//
// A host program reaches them through the one entry point of the root
// package, [github.com/edgeplane/edgeplane.Service.Host]: svc.Host().Tunnels(),
// .Nodes(), .DataPlane(), .Certificates(), .Leases() (and .EventDelivery()
// for package webhook, whose Source package internal/delivery
// implements). cmd/edgeplane wires each into its runtime part, and
// asserts at compile time that each role implements its consumer's
// interface.
//
// # Design
//
// The root package is the API: the Service, its options, the resource
// methods and the kind declarations. The roles used to be root types,
// so the root held every runtime-only operation too; they live here so
// that the root holds none of them. This package does not import the
// root (internal/layering's tests guard it): the root imports it, makes
// the roles once in its New ([New], with a [Config]) and returns them
// from its Host. The roles are built over the internal packages that
// hold the runtime state (internal/agentstate, internal/nodes,
// internal/agenttokens, internal/leases, internal/acmestate,
// internal/dataplane), over the Service's record machinery
// (internal/records) with the root's kinds given in [Config], and over
// [Records], the few things only the root can do (a reserved domain's
// lookup, a certificate's key pair, storing and deleting a managed
// certificate, a reserved domain's record facts and presentation),
// which the root implements.
//
// This package may import the leaf packages (agents, backends, domains,
// edges, edgeconfig, ipaccess, resource, apierr, store) and the root's
// internal packages; never the root, nor a runtime part.
package hosting
