package proxy

import (
	"crypto/tls"
	"testing"
)

// TestDomainBaseCertificate: the operator's certificate of *.<base> is
// presented for the https endpoints under the base that no reserved
// domain serves, and for no other name.
func TestDomainBaseCertificate(t *testing.T) {
	e := newEpEnv(t, nil)
	certPEM, keyPEM, _ := e.ca.issue(t, "*.agents.example.test")
	base, err := tls.X509KeyPair([]byte(certPEM), []byte(keyPEM))
	if err != nil {
		t.Fatal(err)
	}
	h := NewHandler(e.c, HandlerOptions{DomainBase: "Agents.Example.test", DomainBaseCertificate: &base})
	e.bind(e.endpoint("picked", protoHTTPS, "abcdefgh.agents.example.test", ""))
	e.bind(e.endpoint("plain", protoHTTP, "ijklmnop.agents.example.test", ""))
	e.bind(e.endpoint("app", protoHTTPS, "app.example.com", ""))
	get := h.TLSConfig().GetCertificate
	for name, want := range map[string]*tls.Certificate{
		"abcdefgh.agents.example.test":   &base,
		"ABCDEFGH.agents.example.test.":  &base,
		"ijklmnop.agents.example.test":   nil, // an http endpoint: no TLS
		"unbound.agents.example.test":    nil,
		"a.abcdefgh.agents.example.test": nil,
		"agents.example.test":            nil,
	} {
		got, err := get(&tls.ClientHelloInfo{ServerName: name})
		if err != nil || got != want {
			t.Errorf("%s: %p %v, want %p", name, got, err, want)
		}
	}
	if got, err := get(&tls.ClientHelloInfo{ServerName: "app.example.com"}); err != nil || got == nil || got == &base {
		t.Errorf("a reserved domain's endpoint: %p %v, want its own certificate", got, err)
	}
	if got, _ := NewHandler(e.c, HandlerOptions{}).TLSConfig().GetCertificate(&tls.ClientHelloInfo{ServerName: "abcdefgh.agents.example.test"}); got != nil {
		t.Errorf("without a base certificate: %p", got)
	}
}
