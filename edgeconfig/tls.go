package edgeconfig

import (
	"crypto/tls"

	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/policy"
)

// TLSVersion returns the crypto/tls constant of a min_version value
// ("1.0" to "1.3", [edges.TLSVersions]), or 0 for anything else.
func TLSVersion(v string) uint16 {
	switch v {
	case "1.0":
		return tls.VersionTLS10
	case "1.1":
		return tls.VersionTLS11
	case "1.2":
		return tls.VersionTLS12
	case "1.3":
		return tls.VersionTLS13
	}
	return 0
}

// TLSEdge is what an edge proxy applies to a TLS edge.
type TLSEdge struct {
	// AccountID owns the edge.
	AccountID string
	// EdgeID identifies the edge.
	EdgeID string
	// Hostports are the host:port addresses the edge serves, in canonical
	// form; an edge proxy picks the edge by a ClientHello's server name.
	// [NewTLSEdge] leaves it nil; the Service's configs fill it.
	Hostports []string
	// IPRestriction is nil unless the module is set and enabled; its
	// Allowed method works on nil too.
	IPRestriction *IPRestriction
	// TrafficPolicy is the compiled traffic policy, nil unless the module
	// is set and enabled. Run it on each new connection with
	// [policy.Policy.Connect].
	TrafficPolicy *policy.Policy
	// PolicyIPPolicyIDs are the IP policies TrafficPolicy was compiled
	// with (named by its restrict-ips actions). [NewTLSEdge] leaves it
	// nil, as it leaves Hostports.
	PolicyIPPolicyIDs []string
	// TerminateAt is [edges.TerminateAtEdge] or
	// [edges.TerminateAtUpstream]: edge unless an enabled TLS termination
	// module says upstream.
	TerminateAt string
	// MinVersion is the minimum TLS version as a crypto/tls constant
	// (tls.VersionTLS12 by default); 0 when TLS terminates upstream.
	MinVersion uint16
	// Backend is nil unless the backend module is set and enabled.
	Backend *Backend
}

// IPPolicyIDs returns the IP policies whose rules the config was built
// with (the IP restriction's and the traffic policy's), sorted and
// without repeats: a proxy that caches the config rebuilds it when one of
// them, or one of their rules, changes.
func (c *TLSEdge) IPPolicyIDs() []string {
	return c.IPRestriction.policyIDs(c.PolicyIPPolicyIDs)
}

// NewTLSEdge returns the runtime form of a stored TLS edge, given the
// runtime forms of its IP restriction and traffic policy modules (which
// need the Service: IP policy rules and the policy engine).
func NewTLSEdge(accountID string, e *edges.TLSEdge, ipr *IPRestriction, pol *policy.Policy) *TLSEdge {
	c := &TLSEdge{AccountID: accountID, EdgeID: e.ID, IPRestriction: ipr, TrafficPolicy: pol,
		TerminateAt: edges.TerminateAtEdge, MinVersion: TLSVersion(edges.DefaultMinTLSVersion), Backend: NewBackend(e.Backend)}
	if m := e.TLSTermination; m != nil && m.Enabled {
		c.TerminateAt = m.TerminateAt
		c.MinVersion = TLSVersion(m.EffectiveMinVersion())
	}
	return c
}
