package proxy

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/edgeconfig"
	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/httpserver"
	"github.com/edgeplane/edgeplane/memstore"
)

// testCA issues leaf certificates that clients trusting pool accept.
type testCA struct {
	cert   *x509.Certificate
	key    *ecdsa.PrivateKey
	pool   *x509.CertPool
	serial atomic.Int64
}

func newTestCA(t testing.TB) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "edgeplane test CA"},
		NotBefore: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), NotAfter: time.Date(2036, 1, 1, 0, 0, 0, 0, time.UTC),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	ca := &testCA{cert: cert, key: key, pool: x509.NewCertPool()}
	ca.pool.AddCert(cert)
	ca.serial.Store(100)
	return ca
}

// issue returns a leaf for names, as PEM, and its serial number.
func (ca *testCA) issue(t testing.TB, names ...string) (certPEM, keyPEM string, serial int64) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial = ca.serial.Add(1)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: names[0]}, DNSNames: names,
		NotBefore: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), NotAfter: time.Date(2027, 12, 1, 0, 0, 0, 0, time.UTC),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})), serial
}

// reserve reserves a domain in p's account and returns its ID.
func (w *world) reserve(p edgeplane.Principal, name string) string {
	w.t.Helper()
	d, err := w.api.CreateReservedDomain(w.ctx, p, domains.CreateParams{Domain: name})
	w.check(err)
	return d.ID
}

// serveHosts sets the hostports of an HTTPS edge of p.
func (w *world) serveHosts(p edgeplane.Principal, edgeID string, hostports ...string) {
	w.t.Helper()
	hps := append([]string{}, hostports...)
	_, err := w.api.UpdateHTTPSEdge(w.ctx, p, edgeID, edges.UpdateEdgeParams{Hostports: &hps})
	w.check(err)
}

// attachCert issues a certificate for names, uploads it to p's account
// and makes it the certificate of the reserved domain; it returns the
// certificate's serial number.
func (w *world) attachCert(p edgeplane.Principal, ca *testCA, domainID string, names ...string) int64 {
	w.t.Helper()
	certPEM, keyPEM, serial := ca.issue(w.t, names...)
	c, err := w.api.CreateTLSCertificate(w.ctx, p, domains.CreateCertificateParams{CertificatePEM: certPEM, PrivateKeyPEM: keyPEM})
	w.check(err)
	_, err = w.api.UpdateReservedDomain(w.ctx, p, domainID, domains.UpdateParams{CertificateID: &c.ID})
	w.check(err)
	return serial
}

// servedBy returns the edge ID that serves host, or "".
func servedBy(c *Configs, host string) string {
	if e := c.EdgeByHost(host); e != nil {
		return e.Config.EdgeID
	}
	return ""
}

// TestHostsFollowTheStore: the hosts table sends each host to the edge
// that lists it (or the wildcard that covers it), across accounts;
// moving a hostport from one edge to another, in one page of changes
// and in either publishing order, ends with the new edge serving it; a
// deleted edge's hosts are served by nothing.
func TestHostsFollowTheStore(t *testing.T) {
	w := newWorld(t, memstore.New())
	w.reserve(w.a, "a.example.com")
	w.reserve(w.a, "*.wild.example.com")
	w.reserve(w.b, "b.example.com")
	w.serveHosts(w.a, w.a1, "a.example.com:443", "*.wild.example.com:443")
	w.serveHosts(w.b, w.b1, "b.example.com:443")
	f := &flaky{Store: w.st}
	h := newHooks(w.api.Host())
	c := w.start(w.api.Host(), f, h, Options{})

	for _, tc := range []struct{ host, want string }{
		{"a.example.com", w.a1},
		{"x.wild.example.com", w.a1},
		{"*.wild.example.com", w.a1},
		{"x.y.wild.example.com", ""}, // a wildcard covers one label
		{"wild.example.com", ""},
		{"b.example.com", w.b1},
		{"c.example.com", ""},
		{"example.com", ""},
		{"", ""},
	} {
		if got := servedBy(c, tc.host); got != tc.want {
			t.Errorf("EdgeByHost(%q) = %q, want %q", tc.host, got, tc.want)
		}
	}
	if e := c.EdgeByHostport("b.example.com:443"); e == nil || e.Config.AccountID != w.b.AccountID {
		t.Errorf("EdgeByHostport(b.example.com:443) = %v, want edge b1 of account b", e)
	}
	if e := c.EdgeByHostport("b.example.com:8443"); e != nil {
		t.Errorf("EdgeByHostport on port 8443 = %s; HTTPS edges serve 443 only", e.Config.EdgeID)
	}

	// Move a.example.com between a1 and a2 twice, each move's two
	// changes (removed from one edge, added to the other) read in one
	// page: the follower publishes them in edge ID order, so one of the
	// moves publishes the addition before the removal.
	move := func(from, to string, fromHosts, toHosts []string) {
		t.Helper()
		gate := make(chan struct{})
		f.gate.Store(&gate)
		w.serveHosts(w.a, from, fromHosts...)
		w.serveHosts(w.a, to, toHosts...)
		f.gate.Store(nil)
		close(gate)
		w.applied(c)
		if got := servedBy(c, "a.example.com"); got != to {
			t.Fatalf("after moving a.example.com from %s to %s it is served by %q", from, to, got)
		}
		if got := servedBy(c, "x.wild.example.com"); got != w.a1 {
			t.Fatalf("x.wild.example.com is served by %q, want a1 still", got)
		}
	}
	move(w.a1, w.a2, []string{"*.wild.example.com:443"}, []string{"a.example.com:443"})
	move(w.a2, w.a1, []string{}, []string{"a.example.com:443", "*.wild.example.com:443"})

	w.check(w.api.DeleteHTTPSEdge(w.ctx, w.b, w.b1))
	w.applied(c)
	if got := servedBy(c, "b.example.com"); got != "" {
		t.Errorf("b.example.com is served by %q after its edge was deleted", got)
	}
}

// TestCertificatesFollowTheDomain: an edge's snapshot holds its hosts'
// certificates; attaching another certificate to the domain gives the
// edge a new snapshot with it, without compiling the edge again;
// detaching it leaves the host without one.
func TestCertificatesFollowTheDomain(t *testing.T) {
	w := newWorld(t, memstore.New())
	ca := newTestCA(t)
	da := w.reserve(w.a, "a.example.com")
	dw := w.reserve(w.a, "*.wild.example.com")
	w.reserve(w.b, "b.example.com")
	first := w.attachCert(w.a, ca, da, "a.example.com")
	wild := w.attachCert(w.a, ca, dw, "*.wild.example.com")
	w.serveHosts(w.a, w.a1, "a.example.com:443", "x.wild.example.com:443")
	w.serveHosts(w.a, w.a2, "*.wild.example.com:443")
	w.serveHosts(w.b, w.b1, "b.example.com:443") // a domain without a certificate
	h := newHooks(w.api.Host())
	c := w.start(w.api.Host(), w.st, h, Options{})

	serial := func(name string) int64 {
		cert := c.Certificate(name)
		if cert == nil {
			return 0
		}
		return cert.Leaf.SerialNumber.Int64()
	}
	for _, tc := range []struct {
		name string
		want int64
	}{
		{"a.example.com", first},
		{"A.Example.COM.", first},
		{"x.wild.example.com", wild}, // listed by a1, served by the wildcard domain
		{"y.wild.example.com", wild}, // a2's wildcard hostport
		{"*.wild.example.com", 0},    // a name no client asks for
		{"b.example.com", 0},
		{"nope.example.com", 0},
		{"", 0},
		{strings.Repeat("a", 300) + ".example.com", 0},
	} {
		if got := serial(tc.name); got != tc.want {
			t.Errorf("Certificate(%q) has serial %d, want %d", tc.name, got, tc.want)
		}
	}

	compiles, _ := h.counts()
	refreshes := c.Stats().Refreshes
	second := w.attachCert(w.a, ca, da, "a.example.com")
	w.applied(c)
	if got := serial("a.example.com"); got != second {
		t.Fatalf("after attaching a new certificate: serial %d, want %d", got, second)
	}
	after, _ := h.counts()
	wantCompiles(t, compiles, after, nil)
	if got := c.Stats().Refreshes - refreshes; got != 2 {
		t.Errorf("%d snapshots refreshed, want 2 (a1 and a2, the account's edges with hosts)", got)
	}

	w.check(w.api.DetachReservedDomainCertificate(w.ctx, w.a, da))
	w.applied(c)
	if got := serial("a.example.com"); got != 0 {
		t.Errorf("after detaching: serial %d, want none", got)
	}
	if got := serial("x.wild.example.com"); got != wild {
		t.Errorf("the wildcard's certificate changed with another domain's: %d", got)
	}
}

// tlsEnv is a Handler serving the world's edges over TLS and plain HTTP,
// with a1 (a.example.com) routed to an upstream through a tunnel.
type tlsEnv struct {
	*world
	ca                 *testCA
	c                  *Configs
	tlsAddr, plainAddr string
	domainA            string
	firstSerial        int64
}

func newTLSEnv(t *testing.T) *tlsEnv {
	w := newWorld(t, memstore.New())
	e := &tlsEnv{world: w, ca: newTestCA(t)}
	e.domainA = w.reserve(w.a, "a.example.com")
	w.reserve(w.b, "b.example.com")
	e.firstSerial = w.attachCert(w.a, e.ca, e.domainA, "a.example.com")
	w.serveHosts(w.a, w.a1, "a.example.com:443")
	w.serveHosts(w.b, w.b1, "b.example.com:443")
	up := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(rw, "upstream of a saw host "+r.Host)
	}))
	t.Cleanup(up.Close)
	_, err := w.api.Host().RegisterTunnel(w.ctx, w.tunnelToken, backends.RegisterTunnelParams{Labels: map[string]string{"app": "web"}, ForwardsTo: up.URL})
	w.check(err)

	e.c = w.start(w.api.Host(), w.st, newHooks(w.api.Host()), Options{})
	h := NewHandler(e.c, HandlerOptions{Clock: w.clock.Now})
	for _, tls := range []bool{true, false} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		w.check(err)
		srv := h.Server(tls, httpserver.Options{})
		go func() {
			if tls {
				_ = srv.ServeTLS(ln, "", "")
			} else {
				_ = srv.Serve(ln)
			}
		}()
		t.Cleanup(func() { _ = srv.Close() })
		if tls {
			e.tlsAddr = ln.Addr().String()
		} else {
			e.plainAddr = ln.Addr().String()
		}
	}
	return e
}

// client returns an HTTP client that trusts the test CA and dials addr
// whatever the URL's host, without keep-alives (each request makes a
// new handshake).
func (e *tlsEnv) client(addr string) *http.Client {
	return &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: e.ca.pool},
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		},
		DisableKeepAlives: true,
	}}
}

type reply struct {
	status int
	body   string
	serial int64 // of the certificate the server presented
}

// get requests url (its host is the SNI and the Host) with Host set to
// host when not "".
func (e *tlsEnv) get(addr, url, host string) (reply, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return reply{}, err
	}
	if host != "" {
		req.Host = host
	}
	res, err := e.client(addr).Do(req)
	if err != nil {
		return reply{}, err
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	r := reply{status: res.StatusCode, body: strings.TrimSpace(string(body))}
	if res.TLS != nil {
		r.serial = res.TLS.PeerCertificates[0].SerialNumber.Int64()
	}
	return r, nil
}

// TestTLSEndToEnd: a crypto/tls client reaches a1's upstream through the
// TLS listener with the certificate attached to a.example.com; a name
// no edge serves, or one whose domain has no certificate, fails the
// handshake; a Host that is not the server name gets 421; a certificate
// attached later is presented from the next handshake on.
func TestTLSEndToEnd(t *testing.T) {
	e := newTLSEnv(t)

	got, err := e.get(e.tlsAddr, "https://a.example.com/", "")
	if err != nil {
		t.Fatalf("GET https://a.example.com/: %v", err)
	}
	if got.status != 200 || got.body != "upstream of a saw host a.example.com" || got.serial != e.firstSerial {
		t.Fatalf("GET https://a.example.com/ = %+v, want 200 from a's upstream with certificate %d", got, e.firstSerial)
	}

	for _, url := range []string{"https://nope.example.com/", "https://b.example.com/"} {
		if got, err := e.get(e.tlsAddr, url, ""); err == nil {
			t.Errorf("GET %s over TLS = %+v, want a failed handshake", url, got)
		} else if !strings.Contains(err.Error(), "tls") {
			t.Errorf("GET %s: %v, want a TLS handshake error", url, err)
		}
	}
	if got, err := e.get(e.tlsAddr, "https://a.example.com/", "b.example.com"); err != nil || got.status != http.StatusMisdirectedRequest {
		t.Errorf("SNI a.example.com with Host b.example.com = %+v, %v; want 421", got, err)
	}

	second := e.attachCert(e.a, e.ca, e.domainA, "a.example.com")
	e.applied(e.c)
	if got, err := e.get(e.tlsAddr, "https://a.example.com/", ""); err != nil || got.serial != second || got.status != 200 {
		t.Errorf("after a new certificate: %+v, %v; want 200 with certificate %d", got, err, second)
	}
}

// TestPlainHTTPRouting: on the plain listener the Host header picks the
// edge, with or without a port and in any case; a host no edge serves
// gets a plain 404 that names nothing of any tenant.
func TestPlainHTTPRouting(t *testing.T) {
	e := newTLSEnv(t)
	for _, tc := range []struct {
		host   string
		status int
		body   string
	}{
		{"a.example.com", 200, "upstream of a saw host a.example.com"},
		{"A.EXAMPLE.com:8080", 200, "upstream of a saw host A.EXAMPLE.com:8080"},
		{"a.example.com.", 200, "upstream of a saw host a.example.com."},
		{"b.example.com", 503, "this route has no backend"},
		{"c.example.com", 404, "no edge serves this host"},
		{"example.com", 404, "no edge serves this host"},
		{"a.example.com:x", 404, "no edge serves this host"},
		{"[::1]:80", 404, "no edge serves this host"},
	} {
		got, err := e.get(e.plainAddr, "http://"+e.plainAddr+"/", tc.host)
		if err != nil {
			t.Fatalf("Host %q: %v", tc.host, err)
		}
		if got.status != tc.status || got.body != tc.body {
			t.Errorf("Host %q = %d %q, want %d %q", tc.host, got.status, got.body, tc.status, tc.body)
		}
	}
}

// TestWildcardOf: the wildcard that covers a host is one label up, and
// never a single-label parent or a wildcard of a wildcard.
func TestWildcardOf(t *testing.T) {
	for _, tc := range []struct{ host, want string }{
		{"a.example.com", "*.example.com"},
		{"x.a.example.com", "*.a.example.com"},
		{"a.com", ""},
		{"com", ""},
		{"*.example.com", ""},
		{".example.com", ""},
		{"", ""},
	} {
		got, ok := wildcardOf(tc.host)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("wildcardOf(%q) = %q, %v; want %q", tc.host, got, ok, tc.want)
		}
	}
}

// TestEdgeListingChecksTheSnapshot: the hosts table is published after
// the snapshots, so for a moment it may send a host to an edge whose new
// snapshot no longer lists it; the lookup must not route there.
func TestEdgeListingChecksTheSnapshot(t *testing.T) {
	c := &Configs{hosts: newTable()}
	s := &slot{}
	s.p.Store(&Edge{Config: &edgeconfig.HTTPSEdge{EdgeID: "e1", Hostports: []string{"b.example.com:443", "*.w.example.com:443"}}})
	c.hosts.set(map[string]*slot{"a.example.com": s, "b.example.com": s, "*.w.example.com": s})
	for _, tc := range []struct{ host, want string }{
		{"a.example.com", ""},
		{"b.example.com", "e1"},
		{"x.w.example.com", "e1"},
	} {
		if got := servedBy(c, tc.host); got != tc.want {
			t.Errorf("EdgeByHost(%q) = %q, want %q", tc.host, got, tc.want)
		}
	}
	if c.Certificate("a.example.com") != nil {
		t.Error("Certificate of a host the snapshot does not list")
	}
}

// FuzzRequestHost: any Host header gives a host that is lower-case,
// without a port or a trailing dot, and no longer than the header; or
// none.
func FuzzRequestHost(f *testing.F) {
	for _, s := range []string{"a.example.com", "A.Example.COM.:8443", "[::1]:80", "a.example.com:", ":443", "", "a:b:c", "ÄÖ.example.com"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, hostHeader string) {
		r := httptest.NewRequest(http.MethodGet, "http://x/", nil)
		r.Host = hostHeader
		host, ok := requestHost(r)
		if !ok {
			if host != "" {
				t.Fatalf("requestHost(%q) = %q, not ok", hostHeader, host)
			}
			return
		}
		if host == "" || len(host) > len(hostHeader) {
			t.Fatalf("requestHost(%q) = %q", hostHeader, host)
		}
		for i := 0; i < len(host); i++ {
			if c := host[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || strings.IndexByte("-._", c) >= 0) {
				t.Fatalf("requestHost(%q) = %q: byte %q", hostHeader, host, c)
			}
		}
	})
}

// TestTLSAlerts: on the HTTPS listener a name with no certificate here
// fails the handshake with the alert unrecognized_name, which a
// crypto/tls client reports as "tls: unrecognized name": a name no edge
// serves, a served name whose domain has no certificate, a hello without
// a server name, in TLS 1.3 and 1.2, and an acme-tls/1 hello for a name
// without a pending challenge. A known name and a pending challenge
// still handshake; an acme-tls/1 hello whose challenge the store cannot
// read gets internal_error (a server fault).
func TestTLSAlerts(t *testing.T) {
	// The world's store fails reads while f.reads is set: the ACME
	// challenges are read from it at each acme-tls/1 hello (the edges'
	// certificates are in memory).
	f := &flaky{Store: memstore.New()}
	w := newWorld(t, f)
	ca := newTestCA(t)
	da := w.reserve(w.a, "a.example.com")
	w.reserve(w.b, "b.example.com")
	serial := w.attachCert(w.a, ca, da, "a.example.com")
	w.serveHosts(w.a, w.a1, "a.example.com:443")
	w.serveHosts(w.b, w.b1, "b.example.com:443") // served, without a certificate
	w.check(w.api.Host().Certificates().PutACMEChallenge(w.ctx, edgeplane.ACMEChallenge{Type: edgeplane.ChallengeTLSALPN01, Name: "pending.example.com",
		KeyAuthorization: "token.thumbprint", ExpiresAt: w.clock.Now().Add(time.Hour)}))
	c := w.start(w.api.Host(), f, newHooks(w.api.Host()), Options{})
	m := NewMetrics(MetricsOptions{})
	srv := NewHandler(c, HandlerOptions{Clock: w.clock.Now, Metrics: m}).Server(true, httpserver.Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	w.check(err)
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	t.Cleanup(func() { _ = srv.Close() })

	const (
		unrecognized = "tls: unrecognized name"
		internal     = "tls: internal error"
	)
	acmeTLS := []string{"acme-tls/1"}
	for _, tc := range []struct {
		name       string
		serverName string
		maxVersion uint16
		protos     []string
		storeDown  bool
		wantErr    string // "": the handshake succeeds
		wantSerial int64  // of the certificate presented, when not 0
	}{
		{name: "known name", serverName: "a.example.com", wantSerial: serial},
		{name: "known name TLS 1.2", serverName: "a.example.com", maxVersion: tls.VersionTLS12, wantSerial: serial},
		{name: "no edge", serverName: "nope.example.com", wantErr: unrecognized},
		{name: "no edge TLS 1.2", serverName: "nope.example.com", maxVersion: tls.VersionTLS12, wantErr: unrecognized},
		{name: "no certificate", serverName: "b.example.com", wantErr: unrecognized},
		{name: "no server name", wantErr: unrecognized},
		{name: "no server name TLS 1.2", maxVersion: tls.VersionTLS12, wantErr: unrecognized},
		{name: "acme-tls/1 pending", serverName: "pending.example.com", protos: acmeTLS},
		{name: "acme-tls/1 none pending", serverName: "nope.example.com", protos: acmeTLS, wantErr: unrecognized},
		{name: "acme-tls/1 store down", serverName: "pending.example.com", protos: acmeTLS, storeDown: true, wantErr: internal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.reads.Store(tc.storeDown)
			defer f.reads.Store(false)
			conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", ln.Addr().String(), &tls.Config{
				ServerName: tc.serverName, RootCAs: ca.pool, InsecureSkipVerify: tc.serverName == "" || tc.protos != nil,
				MaxVersion: tc.maxVersion, NextProtos: tc.protos,
			})
			if tc.wantErr != "" {
				if err == nil {
					conn.Close()
					t.Fatalf("handshake succeeded; want %q", tc.wantErr)
				}
				if !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("handshake: %v; want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("handshake: %v", err)
			}
			defer conn.Close()
			leaf := conn.ConnectionState().PeerCertificates[0]
			if tc.wantSerial != 0 && leaf.SerialNumber.Int64() != tc.wantSerial {
				t.Errorf("certificate serial %d, want %d", leaf.SerialNumber.Int64(), tc.wantSerial)
			}
			if tc.protos != nil && (len(leaf.DNSNames) != 1 || leaf.DNSNames[0] != tc.serverName) {
				t.Errorf("validation certificate for %v, want %s", leaf.DNSNames, tc.serverName)
			}
		})
	}
	// Every hello for a name without a certificate was counted, the
	// acme-tls/1 ones aside.
	if got := testutil.ToFloat64(m.unroutedTotal.WithLabelValues(reasonNoCertificate)); got != 5 {
		t.Errorf("unrouted{reason=no_certificate} = %v, want 5", got)
	}
}
