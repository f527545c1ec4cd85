// Package acmetest runs Pebble, the ACME test server, in a test's
// process, with the DNS resolver its validation asks: the certificate
// manager's tests and the server's share them.
package acmetest

import (
	"crypto/x509"
	"encoding/pem"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
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
)

// Resolver is the DNS server Pebble's validation asks (over TCP, as
// Pebble does): A records of the names the test says lead to the edge
// (127.0.0.1), and, for DNS-01, the CNAMEs of _acme-challenge names,
// followed to the edge's own DNS server as a recursive resolver would.
type Resolver struct {
	// Addr is its address, for Pebble.
	Addr string

	mu        sync.Mutex
	a         map[string]bool   // names that resolve to 127.0.0.1
	cname     map[string]string // _acme-challenge names -> their CNAME target
	authority string            // the edge's DNS server, asked for the TXT records of CNAME targets
}

// StartResolver starts a Resolver on a port of 127.0.0.1, with names
// leading to the edge, stopped when the test ends.
func StartResolver(t testing.TB, names ...string) *Resolver {
	t.Helper()
	r := &Resolver{a: map[string]bool{}, cname: map[string]string{}}
	for _, n := range names {
		r.a[n] = true
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.Addr = ln.Addr().String()
	// Wait until it serves: a dns.Server shut down before it started
	// refuses, and then serves on after the test.
	started := make(chan struct{})
	srv := &dns.Server{Listener: ln, Handler: r, NotifyStartedFunc: func() { close(started) }}
	go srv.ActivateAndServe()
	<-started
	t.Cleanup(func() { srv.Shutdown() })
	return r
}

// Point makes name lead to the edge (on) or to nowhere.
func (r *Resolver) Point(name string, on bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.a[name] = on
}

// CNAME makes name (an _acme-challenge name) a CNAME of target, whose TXT
// records the edge's DNS server at authority answers.
func (r *Resolver) CNAME(name, target, authority string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cname[name] = target
	r.authority = authority
}

// ServeDNS answers a query.
func (r *Resolver) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
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

// Pebble is Pebble in the test's process. Its HTTPS server runs from
// [NewPebble] on (a server under test needs its directory URL before it
// starts); its validation from [Pebble.Start], once the edge's ports are
// known.
type Pebble struct {
	// Server is its HTTPS server (Server.Client() trusts it).
	Server *httptest.Server
	// Directory is the URL of its ACME directory.
	Directory string
	// Roots are its issuing roots, which the issued chains lead to;
	// RootPEM is the first of them, PEM-encoded. Set by Start.
	Roots   *x509.CertPool
	RootPEM []byte

	handler     atomic.Pointer[http.Handler]
	down        atomic.Bool
	validations atomic.Int64
}

// Validations returns how many challenge validations Pebble has started
// (one per challenge a client asked it to validate), counted from its
// log.
func (p *Pebble) Validations() int64 { return p.validations.Load() }

// NewPebble starts Pebble's HTTPS server, closed when the test ends; it
// answers 503 until Start.
func NewPebble(t testing.TB) *Pebble {
	t.Helper()
	t.Setenv("PEBBLE_VA_NOSLEEP", "1")
	t.Setenv("PEBBLE_WFE_NONCEREJECT", "0")
	t.Setenv("PEBBLE_AUTHZREUSE", "0")
	p := &Pebble{}
	p.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := p.handler.Load()
		switch {
		case p.down.Load():
			if c, _, err := w.(http.Hijacker).Hijack(); err == nil {
				c.Close()
			}
		case h == nil:
			http.Error(w, "not yet", http.StatusServiceUnavailable)
		default:
			(*h).ServeHTTP(w, r)
		}
	}))
	t.Cleanup(p.Server.Close)
	p.Directory = p.Server.URL + wfe.DirectoryPath
	return p
}

// Start starts Pebble's CA and validation: HTTP-01 on httpPort,
// TLS-ALPN-01 on tlsPort of the names resolver resolves, certificates
// valid for validity (0: Pebble's default). Pebble logs into the test's
// log when it runs verbose.
func (p *Pebble) Start(t testing.TB, httpPort, tlsPort int, resolver string, validity time.Duration) {
	t.Helper()
	var out io.Writer = io.Discard
	if testing.Verbose() {
		w := &testWriter{t: t}
		t.Cleanup(w.stop)
		out = w
	}
	logger := log.New(&countingWriter{out: out, n: &p.validations}, "pebble ", 0)
	mdb := db.NewMemoryStore()
	profiles := map[string]ca.Profile{"default": {Description: "default", ValidityPeriod: uint64(validity / time.Second)}}
	authority := ca.New(logger, mdb, "", "rsa", 0, 1, profiles)
	validator := va.New(logger, httpPort, tlsPort, false, resolver, mdb)
	front := wfe.New(logger, mdb, validator, authority, []string{"pebble.letsencrypt.org"}, false, false, 0, 0)
	h := front.Handler()
	root := authority.GetRootCert(0).Cert
	p.Roots = x509.NewCertPool()
	p.Roots.AddCert(root)
	p.RootPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: root.Raw})
	p.handler.Store(&h)
}

// SetDown makes Pebble close every connection (down), as a CA that
// cannot be reached, or serve again.
func (p *Pebble) SetDown(down bool) { p.down.Store(down) }

// countingWriter counts the lines of Pebble's log that start a
// validation (its validation authority logs one per challenge it takes
// from its queue), and writes every line to out. A log.Logger writes a
// line per call.
type countingWriter struct {
	out io.Writer
	n   *atomic.Int64
}

func (w *countingWriter) Write(b []byte) (int, error) {
	if strings.Contains(string(b), "Pulled a task from the Tasks queue") {
		w.n.Add(1)
	}
	return w.out.Write(b)
}

// testWriter logs into the test's log until the test ends: Pebble's
// goroutines (validations, finalizations) outlive it, and a t.Log after
// the end panics.
type testWriter struct {
	t       testing.TB
	mu      sync.Mutex
	stopped bool
}

func (w *testWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.stopped {
		w.t.Log(strings.TrimSpace(string(b)))
	}
	return len(b), nil
}

func (w *testWriter) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
}
