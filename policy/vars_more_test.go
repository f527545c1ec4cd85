package policy

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"testing"
	"time"
)

// clientCert is a self-signed client certificate with every kind of SAN.
var clientCert = func() *x509.Certificate {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	u, _ := url.Parse("spiffe://example.org/client")
	tmpl := &x509.Certificate{
		SerialNumber:   big.NewInt(7),
		Subject:        pkix.Name{CommonName: "client", Organization: []string{"Example"}},
		NotBefore:      t0,
		NotAfter:       t0.Add(time.Hour),
		DNSNames:       []string{"client.example.com"},
		EmailAddresses: []string{"ops@example.com"},
		IPAddresses:    []net.IP{net.ParseIP("192.0.2.7")},
		URIs:           []*url.URL{u},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		panic(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		panic(err)
	}
	return c
}()

func withClientTLS(r *Request) {
	r.Conn.TLS.CipherSuite = tls.TLS_AES_128_GCM_SHA256
	r.Conn.TLS.NegotiatedProtocol = "h2"
	r.Conn.TLS.ClientCertificate = clientCert
}

func fingerprint() string {
	s := sha256.Sum256(clientCert.Raw)
	return hex.EncodeToString(s[:])
}

// moreVarCases covers the variables issue 19 (item 5) adds, on cel-go and,
// where marked, natively.
var moreVarCases = []exprCase{
	{name: "req.cookies index", expr: "req.cookies['session'][0] == 'abc' && req.cookies['session'][1] == 'def'", want: triTrue, native: true,
		req: withCookies("session=abc; theme=dark", "session=def")},
	{name: "req.cookies in", expr: "'theme' in req.cookies && !('Theme' in req.cookies)", want: triTrue, native: true,
		req: withCookies("session=abc; theme=dark")},
	{name: "req.cookies map", expr: "req.cookies == {'session': ['abc'], 'theme': ['dark']}", want: triTrue,
		req: withCookies("session=abc; theme=\"dark\"")},
	{name: "req.cookies missing", expr: "req.cookies['nope'][0] == 'x'", want: triErr, native: true},
	{name: "req.cookies none", expr: "req.cookies.size() == 0", want: triTrue},
	{name: "req.url.host", expr: "req.url.host == 'api.example.com'", want: triTrue, native: true},
	{name: "req.url.host IPv6", expr: "req.url.host == '2001:db8::1' && req.url.port == 8080", want: triTrue, native: true,
		req: func(r *Request) { r.Host = "[2001:db8::1]:8080" }},
	{name: "req.url.port", expr: "req.url.port == 8443", want: triTrue, native: true},
	{name: "req.url.port https default", expr: "req.url.port == 443", want: triTrue, native: true,
		req: func(r *Request) { r.Host = "api.example.com" }},
	{name: "req.url.port http default", expr: "req.url.port == 80", want: triTrue, native: true,
		req: func(r *Request) { r.Host, r.Scheme = "api.example.com", "http" }},
	{name: "req.url.raw_path", expr: "req.url.raw_path == '/a%20b/c%2Fd' && req.url.path == '/a b/c/d'", want: triTrue, native: true,
		req: func(r *Request) { r.Path, r.RawPath = "/a b/c/d", "/a%20b/c%2Fd" }},
	{name: "req.url.raw_path escaped", expr: "req.url.raw_path == '/a%20b'", want: triTrue, native: true,
		req: func(r *Request) { r.Path = "/a b" }},
	{name: "req.content_type", expr: "req.content_type == 'application/json'", want: triTrue, native: true},
	{name: "req.content_type absent", expr: "req.content_type == ''", want: triTrue, native: true,
		req: func(r *Request) { delete(r.Header, "Content-Type") }},
	{name: "conn.tls.cipher_suite", expr: "conn.tls.cipher_suite == 'TLS_AES_128_GCM_SHA256' && conn.tls.alpn == 'h2'", want: triTrue, native: true,
		req: withClientTLS},
	{name: "client cert subject and issuer", expr: "conn.tls.client_cert.subject == 'CN=client,O=Example' && conn.tls.client_cert.issuer == conn.tls.client_cert.subject", want: triTrue, native: true,
		req: withClientTLS},
	{name: "client cert SANs", expr: "conn.tls.client_cert.sans == ['client.example.com', 'ops@example.com', '192.0.2.7', 'spiffe://example.org/client']", want: triTrue,
		req: withClientTLS},
	{name: "client cert fingerprint", expr: "conn.tls.client_cert.fingerprint == '" + fingerprint() + "'", want: triTrue, native: true,
		req: withClientTLS},
	{name: "no client cert", expr: "conn.tls.client_cert.subject == '' && conn.tls.client_cert.fingerprint == '' && conn.tls.client_cert.sans == [] && conn.tls.alpn == ''", want: triTrue},
	{name: "no TLS", expr: "conn.tls.cipher_suite == '' && conn.tls.client_cert.sans.size() == 0", want: triTrue,
		req: func(r *Request) { r.Conn.TLS = nil }},
	{name: "endpoint", expr: "endpoint.edge_id == 'edghts_1' && endpoint.route_id == 'edghtsrt_2'", want: triTrue, native: true,
		req: func(r *Request) { r.Conn.EdgeID, r.RouteID = "edghts_1", "edghtsrt_2" }},
	{name: "endpoint in a connection policy", target: TargetConnection, expr: "endpoint.edge_id == 'edgtls_1' && conn.tls.client_cert.subject.startsWith('CN=client')", want: triTrue, native: true,
		req: func(r *Request) { r.Conn.EdgeID = "edgtls_1"; withClientTLS(r) }},
}

func TestMoreVariables(t *testing.T) {
	e, _ := newTestEngine(t, Options{})
	for _, tc := range moreVarCases {
		t.Run(tc.name, func(t *testing.T) { checkExprCase(t, e, tc) })
	}
}

// TestCookiesAfterHeaderEdit checks that req.cookies follows a
// remove-headers of Cookie.
func TestCookiesAfterHeaderEdit(t *testing.T) {
	e, sink := newTestEngine(t, Options{})
	p := mustCompile(t, e, `{"inbound":[
	  {"actions":[{"type":"log","config":{"metadata":{"before":"${string(size(req.cookies))}"}}},{"type":"remove-headers","config":{"headers":["cookie"]}}]},
	  {"actions":[{"type":"log","config":{"metadata":{"after":"${string(size(req.cookies))}"}}}]}]}`, CompileOptions{})
	req := testRequest()
	withCookies("a=1; b=2")(req)
	p.Inbound(req)
	if len(sink.logs) != 2 || sink.logs[0].Metadata["before"] != "2" || sink.logs[1].Metadata["after"] != "0" {
		t.Fatalf("logs %+v", sink.logs)
	}
}

// TestRequestFromHTTPTLS checks that RequestFromHTTP fills the TLS
// details the new variables read.
func TestRequestFromHTTPTLS(t *testing.T) {
	r, _ := http.NewRequest("GET", "https://api.example.com/", nil)
	r.TLS = &tls.ConnectionState{Version: tls.VersionTLS13, CipherSuite: tls.TLS_AES_256_GCM_SHA384, NegotiatedProtocol: "h2",
		ServerName: "api.example.com", PeerCertificates: []*x509.Certificate{clientCert}}
	req := RequestFromHTTP(r, t1)
	if req.Conn.TLS == nil || req.Conn.TLS.CipherSuite != tls.TLS_AES_256_GCM_SHA384 || req.Conn.TLS.NegotiatedProtocol != "h2" || req.Conn.TLS.ClientCertificate != clientCert {
		t.Fatalf("TLS %+v", req.Conn.TLS)
	}
}
