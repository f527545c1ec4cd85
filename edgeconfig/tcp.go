package edgeconfig

// TCPEdge is what an edge proxy applies to a TCP edge.
type TCPEdge struct {
	// AccountID owns the edge.
	AccountID string
	// EdgeID identifies the edge.
	EdgeID string
	// Hostports are the host:port addresses the edge serves, in canonical
	// form; an edge proxy serves the edge on their ports (a TCP port
	// serves one TCP edge in the store).
	Hostports []string
	// IPRestriction is nil unless the module is set and enabled; its
	// Allowed method works on nil too.
	IPRestriction *IPRestriction
	// Backend is nil unless the backend module is set and enabled.
	Backend *Backend
}

// IPPolicyIDs returns the IP policies whose rules the config was built
// with, sorted and without repeats: a proxy that caches the config
// rebuilds it when one of them, or one of their rules, changes.
func (c *TCPEdge) IPPolicyIDs() []string { return c.IPRestriction.policyIDs(nil) }
