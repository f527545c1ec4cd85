package certmanager_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/certmanager"
	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/httpserver"
	"github.com/edgeplane/edgeplane/identity"
	"github.com/edgeplane/edgeplane/internal/acmetest"
	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/proxy"
	"github.com/edgeplane/edgeplane/store"
)

// clock is the wall clock moved forward by hand: Pebble issues
// certificates valid from the real now, and the Service must accept
// them, while renewals and retries come by advancing it.
type clock struct{ off atomic.Int64 }

func (c *clock) Now() time.Time          { return time.Now().Add(time.Duration(c.off.Load())) }
func (c *clock) Advance(d time.Duration) { c.off.Add(int64(d)) }
func (c *clock) AdvanceTo(t time.Time)   { c.Advance(t.Sub(c.Now())) }

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
	resolver  *acmetest.Resolver
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
	e.configs, err = proxy.New(e.ctx, e.svc.Host().DataPlane(), e.st, proxy.Options{})
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
	e.resolver = acmetest.StartResolver(t)
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
func (e *edge) pebble(t *testing.T, validity time.Duration) *acmetest.Pebble {
	p := acmetest.NewPebble(t)
	p.Start(t, port(t, e.httpAddr), port(t, e.httpsAddr), e.resolver.Addr, validity)
	return p
}

// manager returns a Manager of e's Service ordering from p.
func (e *edge) manager(t *testing.T, p *acmetest.Pebble, challenges ...string) *certmanager.Manager {
	t.Helper()
	m, err := certmanager.New(certmanager.Options{Host: e.svc.Host().Certificates(), Directory: p.Directory, Email: "ops@example.com",
		HTTPClient: p.Server.Client(), Challenges: challenges, Clock: e.clock.Now, PollInterval: 20 * time.Millisecond, Feed: e.st})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// run runs m until the test ends.
func (e *edge) run(t *testing.T, m *certmanager.Manager) {
	t.Helper()
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != context.Canceled {
			t.Errorf("Run returned %v, want context.Canceled", err)
		}
	})
}

// waitIssued waits up to within for domain id to have a certificate and
// no job (woken by each commit of the store), and returns how long it
// took. Each read waits first for the Service's record cache to reflect
// the revision it was woken at: the store commits a write a moment
// before the writer's cache drops the old document, and a read in that
// moment, answered from the cache, would otherwise wait for a commit
// that never comes.
func (e *edge) waitIssued(t *testing.T, id string, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	ctx, cancel := context.WithTimeout(e.ctx, within)
	defer cancel()
	for {
		rev, err := e.st.Revision(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.svc.Host().WaitRevision(ctx, rev); err != nil {
			d := e.domain(t, id)
			t.Fatalf("no certificate for %s after %s (the Service's reads did not reach revision %d: %v): status %+v",
				d.Domain, within, rev, err, d.CertificateManagementStatus.ProvisioningJob)
		}
		d := e.domain(t, id)
		if d.Certificate != nil && d.CertificateManagementStatus != nil && d.CertificateManagementStatus.ProvisioningJob == nil {
			return time.Since(start)
		}
		if e.st.Wait(ctx, rev) != nil {
			t.Fatalf("no certificate for %s after %s: status %+v", d.Domain, within, d.CertificateManagementStatus.ProvisioningJob)
		}
	}
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
