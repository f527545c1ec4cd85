package proxy

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/credentials"
	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/identity"
	"github.com/edgeplane/edgeplane/internal/refusedport"
	"github.com/edgeplane/edgeplane/internal/syncbuf"
	"github.com/edgeplane/edgeplane/memstore"
)

// The Handler's tests run a real Service on memstore, a Configs over its
// Host and the store's feed, and the Handler behind an httptest server,
// in front of httptest upstreams that tunnels forward to. Writes go
// through the Service; each write is followed by s.sync, which waits
// until the Configs has applied the store's revision.

// seen is a request as an upstream received it.
type seen struct {
	Method, Path, RawQuery, Host string
	Header                       http.Header
}

// testUpstream is an httptest server that records what reaches it.
// Paths: /status/<code> answers that code; /text answers 2 KiB of
// text/plain; /png 2 KiB of image/png; /small a tiny text/plain body;
// /hang waits until the test ends; anything else a short text/plain body
// naming the upstream and the path. Every answer has the headers
// X-Upstream (the name) and X-Secret.
type testUpstream struct {
	*httptest.Server
	name string
	mu   sync.Mutex
	reqs []seen
}

func newUpstream(t testing.TB, name string) *testUpstream {
	t.Helper()
	u := &testUpstream{name: name}
	hang := make(chan struct{})
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.reqs = append(u.reqs, seen{Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery, Host: r.Host, Header: r.Header.Clone()})
		u.mu.Unlock()
		w.Header().Set("X-Upstream", name)
		w.Header().Set("X-Secret", "s3cret")
		switch {
		case strings.HasPrefix(r.URL.Path, "/status/"):
			code, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/status/"))
			w.WriteHeader(code)
		case r.URL.Path == "/text":
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			_, _ = io.WriteString(w, strings.Repeat("all work and no play makes jack a dull boy\n", 50))
		case r.URL.Path == "/png":
			w.Header().Set("Content-Type", "image/png")
			_, _ = w.Write(bytes.Repeat([]byte{0x89, 'P', 'N', 'G'}, 512))
		case r.URL.Path == "/small":
			w.Header().Set("Content-Type", "text/plain")
			_, _ = io.WriteString(w, "tiny")
		case r.URL.Path == "/hang":
			select {
			case <-hang:
			case <-r.Context().Done():
			}
		default:
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			_, _ = io.WriteString(w, "upstream "+name+" "+r.URL.Path)
		}
	}))
	t.Cleanup(func() { close(hang); u.Close() })
	return u
}

// requests returns what reached the upstream so far.
func (u *testUpstream) requests() []seen {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]seen(nil), u.reqs...)
}

// last returns the last request that reached the upstream.
func (u *testUpstream) last(t testing.TB) seen {
	t.Helper()
	rs := u.requests()
	if len(rs) == 0 {
		t.Fatal("nothing reached the upstream")
	}
	return rs[len(rs)-1]
}

// refusedURL returns the URL of a server that refuses connections: a
// port held bound, without a listener, until the test ends (see
// refusedport.Hold), so that no other process can take it meanwhile and
// answer in its place.
func refusedURL(t testing.TB) string {
	t.Helper()
	return "http://" + refusedport.Hold(t)
}

// site is a Service with the proxy in front of it.
type site struct {
	t       testing.TB
	ctx     context.Context
	st      *memstore.Store
	svc     *edgeplane.Service
	clock   *fakeClock
	cfgs    *Configs
	h       *Handler
	metrics *Metrics
	reg     *prometheus.Registry // metrics is registered with it
	logs    *syncbuf.Buffer
	url     string // the proxy's base URL, http://127.0.0.1:port
}

// siteOptions configure newSite.
type siteOptions struct {
	handler HandlerOptions // Clock, Logger and Metrics are set when nil
	lease   time.Duration  // the Service's tunnel lease; zero: 24h (tests move the clock by minutes)
	hooks   *hooks         // the Configs' hooks, when the test needs them
}

func newSite(t testing.TB, o siteOptions) *site {
	t.Helper()
	s := &site{t: t, ctx: context.Background(), st: memstore.New(), clock: &fakeClock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}, logs: &syncbuf.Buffer{}}
	log := slog.New(slog.NewTextHandler(s.logs, nil))
	if o.lease == 0 {
		o.lease = 24 * time.Hour
	}
	s.svc = mustService(edgeplane.New(s.st, edgeplane.Options{Clock: s.clock.Now, Logger: log, TunnelLease: o.lease}))
	t.Cleanup(func() { _ = s.svc.Close(context.Background()) })
	var co Options
	if o.hooks != nil {
		o.hooks.host = s.svc.Host()
		co = o.hooks.options(co)
	}
	co.Logger = log
	cfgs, err := New(s.ctx, s.svc.Host().DataPlane(), s.st, co)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cfgs.Close)
	s.cfgs = cfgs
	ho := o.handler
	if ho.Clock == nil {
		ho.Clock = s.clock.Now
	}
	if ho.Logger == nil {
		ho.Logger = log
	}
	if ho.Metrics == nil {
		ho.Metrics = NewMetrics(MetricsOptions{})
	}
	s.metrics = ho.Metrics
	s.reg = prometheus.NewRegistry()
	s.reg.MustRegister(s.metrics)
	s.h = NewHandler(cfgs, ho)
	srv := httptest.NewServer(s.h)
	t.Cleanup(srv.Close)
	s.url = srv.URL
	return s
}

func (s *site) check(err error) {
	s.t.Helper()
	if err != nil {
		s.t.Fatal(err)
	}
}

// sync waits until the proxy's configs reflect every write so far.
func (s *site) sync() {
	s.t.Helper()
	rev, err := s.st.Revision(s.ctx)
	s.check(err)
	ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
	defer cancel()
	if err := s.cfgs.WaitRevision(ctx, rev); err != nil {
		s.t.Fatalf("the configs did not apply revision %d (applied %d): %v", rev, s.cfgs.Revision(), err)
	}
}

// account creates an account with an admin and returns the admin.
func (s *site) account(name string) edgeplane.Principal {
	s.t.Helper()
	acct, err := s.svc.Host().CreateAccount(s.ctx, identity.AccountParams{Name: name})
	s.check(err)
	u, err := s.svc.Host().CreateUser(s.ctx, acct.ID, identity.SubjectParams{Name: "admin", Admin: true})
	s.check(err)
	return edgeplane.Principal{AccountID: acct.ID, SubjectID: u.ID, Admin: true}
}

// domain reserves a domain ("a.example.com", "*.example.com") in p's
// account.
func (s *site) domain(p edgeplane.Principal, name string) {
	s.t.Helper()
	_, err := s.svc.CreateReservedDomain(s.ctx, p, domains.CreateParams{Domain: name})
	s.check(err)
}

// app is an HTTPS edge of one account with one path_prefix "/" route
// whose backend is a tunnel group of label app=<name>.
type app struct {
	s                          *site
	p                          edgeplane.Principal
	host                       string // the Host requests carry: the first hostport
	edge, route, backend, name string
}

// newApp creates, in p's account, the reserved domains of hostports, an
// edge serving them (on port 443) with one route "/" and its backend
// (label app=name), and when upstream is not nil a tunnel forwarding to
// it. It waits until the proxy serves it.
func (s *site) newApp(p edgeplane.Principal, name string, upstream *testUpstream, hostports ...string) *app {
	s.t.Helper()
	for _, hp := range hostports {
		s.domain(p, strings.TrimSuffix(hp, ":443"))
	}
	e, err := s.svc.CreateHTTPSEdge(s.ctx, p, edges.CreateEdgeParams{Hostports: hostports})
	s.check(err)
	r, err := s.svc.CreateHTTPSEdgeRoute(s.ctx, p, e.ID, edges.CreateRouteParams{MatchType: edges.MatchPathPrefix, Match: "/"})
	s.check(err)
	bk, err := s.svc.CreateTunnelGroupBackend(s.ctx, p, backends.CreateParams{Labels: map[string]string{"app": name}})
	s.check(err)
	_, err = s.svc.ReplaceHTTPSRouteBackend(s.ctx, p, e.ID, r.ID, edges.BackendParams{BackendID: bk.ID})
	s.check(err)
	a := &app{s: s, p: p, edge: e.ID, route: r.ID, backend: bk.ID, name: name}
	if len(hostports) > 0 {
		a.host = hostports[0]
	}
	if upstream != nil {
		a.tunnel(upstream.URL)
	}
	s.sync()
	return a
}

// tunnel registers a tunnel of the app's backend forwarding to
// forwardsTo, with a credential of its own, and returns the tunnel and
// the credential's ID. The caller syncs.
func (a *app) tunnel(forwardsTo string) (tunnelID, credentialID string) {
	a.s.t.Helper()
	cred, err := a.s.svc.CreateCredential(a.s.ctx, a.p, credentials.CreateParams{ACL: []string{"bind:app=" + a.name}})
	a.s.check(err)
	tn, err := a.s.svc.Host().RegisterTunnel(a.s.ctx, *cred.Token, backends.RegisterTunnelParams{Labels: map[string]string{"app": a.name}, ForwardsTo: forwardsTo})
	a.s.check(err)
	return tn.ID, cred.ID
}

// policy replaces the route's traffic policy and waits until the proxy
// applies it.
func (a *app) policy(doc string) {
	a.s.t.Helper()
	_, err := a.s.svc.ReplaceHTTPSRouteTrafficPolicy(a.s.ctx, a.p, a.edge, a.route, edges.TrafficPolicyParams{Value: doc})
	a.s.check(err)
	a.s.sync()
}

// standalone is what the example's standalone mode was: one app on
// app.example.com in front of a fresh upstream "a", with traffic policy
// doc when not empty.
func standalone(t testing.TB, doc string, o siteOptions) (*site, *app, *testUpstream) {
	t.Helper()
	s := newSite(t, o)
	up := newUpstream(t, "a")
	a := s.newApp(s.account("acme"), "web", up, "app.example.com:443")
	if doc != "" {
		a.policy(doc)
	}
	return s, a, up
}

// client returns an HTTP client that connects from local address ip
// (any loopback address works on Linux; "" is 127.0.0.1), shows
// responses as sent (no transparent gunzip) and does not follow
// redirects.
func client(ip string) *http.Client {
	d := &net.Dialer{Timeout: 5 * time.Second}
	if ip != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(ip)}
	}
	return &http.Client{
		Transport:     &http.Transport{DialContext: d.DialContext, DisableCompression: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout:       20 * time.Second, // bounds a hung test; no test waits for it
	}
}

var defaultClient = client("")

// response is a response read whole.
type response struct {
	status int
	header http.Header
	body   string
}

// do sends a request to the proxy with Host host from client c (nil:
// 127.0.0.1) and reads the whole response. header lines are
// "Name: value".
func (s *site) do(c *http.Client, host, method, path string, header ...string) response {
	s.t.Helper()
	if c == nil {
		c = defaultClient
	}
	req, err := http.NewRequest(method, s.url+path, nil)
	s.check(err)
	req.Host = host
	for _, h := range header {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Add(k, strings.TrimSpace(v))
	}
	resp, err := c.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s%s: %v", method, host, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatalf("%s %s%s: reading the body: %v", method, host, path, err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: string(body)}
}

// get sends GET path to the app's host.
func (a *app) get(path string, header ...string) response {
	a.s.t.Helper()
	return a.s.do(nil, a.host, "GET", path, header...)
}

// metric scrapes the proxy's metrics through the registry and returns
// the value of the counter name whose labels are exactly labels
// ("edge=edghts_...", "code=2xx"; a label not listed must be empty); 0
// when there is no such series.
func (s *site) metric(name string, labels ...string) float64 {
	s.t.Helper()
	want := map[string]string{}
	for _, l := range labels {
		k, v, _ := strings.Cut(l, "=")
		want[k] = v
	}
	mfs, err := s.reg.Gather()
	s.check(err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if want[lp.GetName()] != lp.GetValue() {
					continue series
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}
