package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"

	"github.com/edgeplane/edgeplane/tunnel"
)

// checkDomainBase validates -agent-domain-base and its certificate
// (named with prefix) and loads the certificate: the base is a DNS name
// (tunnel.DomainBaseProblem) for a tunnel listener; the certificate and
// key go together, need the base, and must cover the names under it.
func (c *dataPlaneConfig) checkDomainBase(prefix string) error {
	if c.agentDomainBase != "" {
		if reason := tunnel.DomainBaseProblem(c.agentDomainBase); reason != "" {
			return usageError{fmt.Sprintf("-%sagent-domain-base %q: %s", prefix, c.agentDomainBase, reason)}
		}
		if c.tunnelAddr == "" {
			return usageError{fmt.Sprintf("-%sagent-domain-base needs -%stunnel-addr: it names the endpoints agents bind there", prefix, prefix)}
		}
	}
	if (c.agentDomainCert == "") != (c.agentDomainKey == "") {
		return usageError{fmt.Sprintf("-%sagent-domain-cert and -%sagent-domain-key go together: give both or neither", prefix, prefix)}
	}
	if c.agentDomainCert == "" {
		return nil
	}
	if c.agentDomainBase == "" {
		return usageError{fmt.Sprintf("-%sagent-domain-cert needs -%sagent-domain-base: it is the certificate of the names under it", prefix, prefix)}
	}
	cert, err := tls.LoadX509KeyPair(c.agentDomainCert, c.agentDomainKey)
	if err != nil {
		return usageError{fmt.Sprintf("-%sagent-domain-cert/-%sagent-domain-key: %v", prefix, prefix, err)}
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err == nil {
		err = leaf.VerifyHostname("x." + c.agentDomainBase)
	}
	if err != nil {
		return usageError{fmt.Sprintf("-%sagent-domain-cert: the certificate does not cover the names under %s (want one for *.%s): %v", prefix, c.agentDomainBase, c.agentDomainBase, err)}
	}
	c.agentDomainTLS = &cert
	return nil
}
