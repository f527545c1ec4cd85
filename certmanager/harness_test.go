package certmanager_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/letsencrypt/pebble/v2/ca"
	"github.com/letsencrypt/pebble/v2/db"
	"github.com/letsencrypt/pebble/v2/va"
	"github.com/letsencrypt/pebble/v2/wfe"
	"github.com/miekg/dns"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/certmanager"
	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/httpserver"
	"github.com/edgeplane/edgeplane/identity"
	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/proxy"
	"github.com/edgeplane/edgeplane/store"
)

// clock is the wall clock moved forward by hand: Pebble issues
// certificates valid from the real now, and the Service must accept
// them, while renewals and retries come by advancing it.
type clock struct{ off atomic.Int64 }

func (c *clock) Now() time.Time            { return time.Now().Add(time.Duration(c.off.Load())) }
func (c *clock) Advance(d time.Duration)   { c.off.Add(int64(d)) }
func (c *clock) AdvanceTo(t time.Time)     { c.Advance(t.Sub(c.Now())) }
func (c *clock) Since(t time.Time) float64 { return c.Now().Sub(t).Seconds() }

// resolver is the DNS server Pebble's validation asks (over TCP, as
// Pebble does): A records of the names the test says lead to the edge
// (127.0.0.1), and, for DNS-01, what the edge's own DNS server answers.
type resolver struct {
	addr string

	mu    sync.Mutex
	a     map[string]bool   // names that resolve to 127.0.0.1
	cname map[string]string // _acme-challenge names -> their CNAME target
	// authority, when set, is the edge's DNS server, asked for the TXT
	// records of CNAME targets.
	authority string
}

func startResolver(t *testing.T) *resolver {
	t.Helper()
	r := &resolver{a: map[string]bool{}, cname: map[string]string{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.addr = ln.Addr().String()
	srv := &dns.Server{Listener: ln, Handler: r}
	go srv.ActivateAndServe()
	t.Cleanup(func() { srv.Shutdown() })
	return r
}

func (r *resolver) point(name string, on bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.a[name] = on
}

func (r *resolver) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(req)
	if len(req.Question) == 1 {
		q := req.Question[0]
		name := strings.TrimSuffix(strings.ToLower(q.Name), ".")
		r.mu.Lock()
		ok, target, auth := r.a[name], r.cname[name], r.authority
		r.mu.Unlock()
		switch {
		case q.Qtype == dns.TypeA && ok:
			m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60}, A: net.IPv4(127, 0, 0, 1)})
		case q.Qtype == dns.TypeTXT && target != "" && auth != "":
			// A recursive resolver follows the CNAME to the edge's server.
			m.Answer = append(m.Answer, &dns.CNAME{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeCNAME, Class: dns.ClassINET, Ttl: 60}, Target: dns.Fqdn(target)})
			up := new(dns.Msg)
			up.SetQuestion(dns.Fqdn(target), dns.TypeTXT)
			if in, err := dns.Exchange(up, auth); err == nil {
				m.Answer = append(m.Answer, in.Answer...)
			}
		case !ok && target == "" && q.Qtype == dns.TypeA:
			m.Rcode = dns.RcodeNameError
		}
	}
	_ = w.WriteMsg(m)
}

// pebble is Pebble, the ACME test server, run in the test's process.
type pebble struct {
	srv       *httptest.Server
	directory string
	roots     *x509.CertPool // Pebble's issuing roots, which the issued chains lead to
	down      atomic.Bool    // closes every connection, as a CA that is unreachable
}

// startPebble starts Pebble validating on the edge's HTTP and HTTPS
// ports, resolving names with resolverAddr, issuing certificates valid
// for validity (0: Pebble's default).
func startPebble(t *testing.T, httpPort, tlsPort int, resolverAddr string, validity time.Duration) *pebble {
	t.Helper()
	t.Setenv("PEBBLE_VA_NOSLEEP", "1")
	t.Setenv("PEBBLE_WFE_NONCEREJECT", "0")
	t.Setenv("PEBBLE_AUTHZREUSE", "0")
	logger := log.New(io.Discard, "", 0)
	if testing.Verbose() {
		logger = log.New(&testWriter{t}, "pebble ", 0)
	}
	mdb := db.NewMemoryStore()
	profiles := map[string]ca.Profile{"default": {Description: "default", ValidityPeriod: uint64(validity / time.Second)}}
	authority := ca.New(logger, mdb, "", "rsa", 0, 1, profiles)
	validator := va.New(logger, httpPort, tlsPort, false, resolverAddr, mdb)
	front := wfe.New(logger, mdb, validator, authority, []string{"pebble.letsencrypt.org"}, false, false, 0, 0)
	p := &pebble{}
	h := front.Handler()
	p.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.down.Load() {
			if c, _, err := w.(http.Hijacker).Hijack(); err == nil {
				c.Close()
			}
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(p.srv.Close)
	p.directory = p.srv.URL + wfe.DirectoryPath
	p.roots = x509.NewCertPool()
	p.roots.AddCert(authority.GetRootCert(0).Cert)
	return p
}

type testWriter struct{ t *testing.T }

func (w *testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}

// edge is a Service on a store with the edge proxy's listeners (HTTP,
// and HTTPS with the TLS edges split off, as edgeplane proxy serves
// them), an account and its principal.
type edge struct {
	ctx       context.Context
	st        store.Store
	svc       *edgeplane.Service
	clock     *clock
	configs   *proxy.Configs
	p         edgeplane.Principal
	httpAddr  string
	httpsAddr string
	resolver  *resolver
}

func startEdge(t *testing.T) *edge {
	t.Helper()
	e := &edge{ctx: context.Background(), st: memstore.New(), clock: &clock{}}
	var err error
	e.svc, err = edgeplane.New(e.st, edgeplane.Options{Clock: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.svc.Close(context.Background()) })
	acct, err := e.svc.Host().CreateAccount(e.ctx, identity.AccountParams{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	user, err := e.svc.Host().CreateUser(e.ctx, acct.ID, identity.SubjectParams{Name: "ops", Admin: true})
	if err != nil {
		t.Fatal(err)
	}
	e.p = edgeplane.Principal{AccountID: acct.ID, SubjectID: user.ID, Admin: true}
	e.configs, err = proxy.New(e.ctx, e.svc.Host(), e.st, proxy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.configs.Close)
	h := proxy.NewHandler(e.configs, proxy.HandlerOptions{})
	streams := proxy.NewStreams(e.configs, proxy.StreamOptions{})
	t.Cleanup(streams.Close)
	plain, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	secure, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.httpAddr, e.httpsAddr = plain.Addr().String(), secure.Addr().String()
	hs, tlsSrv := h.Server(false, httpserver.Options{}), h.Server(true, httpserver.Options{})
	go hs.Serve(plain)
	go tlsSrv.ServeTLS(streams.SplitTLS(secure), "", "")
	t.Cleanup(func() { hs.Close(); tlsSrv.Close() })
	e.resolver = startResolver(t)
	return e
}

func port(t *testing.T, addr string) int {
	t.Helper()
	_, p, _ := net.SplitHostPort(addr)
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// pebble starts Pebble validating against e's listeners.
func (e *edge) pebble(t *testing.T, validity time.Duration) *pebble {
	return startPebble(t, port(t, e.httpAddr), port(t, e.httpsAddr), e.resolver.addr, validity)
}

// manager returns a Manager of e's Service ordering from p.
func (e *edge) manager(t *testing.T, p *pebble, challenges ...string) *certmanager.Manager {
	t.Helper()
	m, err := certmanager.New(certmanager.Options{Host: e.svc.Host(), Directory: p.directory, Email: "ops@example.com",
		HTTPClient: p.srv.Client(), Challenges: challenges, Clock: e.clock.Now, PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// managed reserves name with a certificate management policy of key
// type keyType, and an HTTPS edge serving it (the proxy presents a
// certificate only for a name an edge serves).
func (e *edge) managed(t *testing.T, name, keyType string) *domains.ReservedDomain {
	t.Helper()
	d, err := e.svc.CreateReservedDomain(e.ctx, e.p, domains.CreateParams{Domain: name,
		CertificateManagementPolicy: &domains.CertPolicyParams{Authority: "letsencrypt", PrivateKeyType: keyType}})
	if err != nil {
		t.Fatal(err)
	}
	if !domains.IsWildcard(name) {
		if _, err := e.svc.CreateHTTPSEdge(e.ctx, e.p, edges.CreateEdgeParams{Hostports: []string{name + ":443"}}); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

func (e *edge) domain(t *testing.T, id string) *domains.ReservedDomain {
	t.Helper()
	d, err := e.svc.GetReservedDomain(e.ctx, e.p, id)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// synced waits until the proxy has applied every change of the store.
func (e *edge) synced(t *testing.T) {
	t.Helper()
	rev, err := e.st.Revision(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
	defer cancel()
	if err := e.configs.WaitRevision(ctx, rev); err != nil {
		t.Fatal(err)
	}
}

// handshake connects to the proxy's HTTPS listener for name, verifying
// the certificate against roots, and returns the leaf.
func (e *edge) handshake(t *testing.T, name string, roots *x509.CertPool) (*x509.Certificate, error) {
	t.Helper()
	c, err := tls.Dial("tcp", e.httpsAddr, &tls.Config{ServerName: name, RootCAs: roots})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0], nil
}
