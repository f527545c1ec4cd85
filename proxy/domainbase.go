package proxy

import (
	"crypto/tls"
	"strings"
)

// Names the server picks (issue 44, item 6): an agent's http or https
// endpoint that names no domain is given <label>.<base>, where base is
// the tunnel server's -agent-domain-base. No account reserves those
// names, so no reserved domain's certificate serves them: the operator
// gives the Handler the certificate of *.<base>
// ([HandlerOptions.DomainBaseCertificate]), presented for the https
// endpoints under base.

// domainBaseCertificate returns the certificate of the names under the
// domain base for a ClientHello's server name: when name is one label
// under the base and an https endpoint serves it; else nil.
func (h *Handler) domainBaseCertificate(serverName string) *tls.Certificate {
	if h.baseCert == nil {
		return nil
	}
	name := strings.ToLower(strings.TrimSuffix(serverName, "."))
	label, ok := strings.CutSuffix(name, "."+h.domainBase)
	if !ok || label == "" || strings.ContainsAny(label, ".*") {
		return nil
	}
	e := h.configs.listingTLS(name)
	if e == nil || e.ep == nil || e.ep.proto != protoHTTPS {
		return nil
	}
	return h.baseCert
}
