package console_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/console"
	"github.com/edgeplane/edgeplane/credentials"
	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/identity"
	"github.com/edgeplane/edgeplane/ipaccess"
	"github.com/edgeplane/edgeplane/memstore"
)

// clock is a settable clock for the console's sessions.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *clock) Add(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

// account is an account of a test server: its admin's API key and the
// principal it authenticates as.
type account struct {
	key string
	p   edgeplane.Principal
}

// server is the console over a Service on memstore, with two accounts.
type server struct {
	t     testing.TB
	svc   *edgeplane.Service
	clock *clock
	srv   *httptest.Server
	h     *console.Handler
	a, b  account
}

// newServer starts a console over a new Service, with svcOpts applied
// to the Service's options, and the store's change feed as its Feed
// (as serve gives it).
func newServer(t testing.TB, opts console.Options, svcOpts ...func(*edgeplane.Options)) *server {
	t.Helper()
	return newServerFeed(t, opts, true, svcOpts...)
}

// newServerFeed is newServer, with the store's change feed as the
// console's Feed only when feed is true (else it polls).
func newServerFeed(t testing.TB, opts console.Options, feed bool, svcOpts ...func(*edgeplane.Options)) *server {
	t.Helper()
	o := edgeplane.Options{BaseURL: "https://api.example.test",
		Events: events.Options{Networks: []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}}}
	for _, f := range svcOpts {
		f(&o)
	}
	st := memstore.New()
	svc, err := edgeplane.New(st, o)
	if err != nil {
		t.Fatal(err)
	}
	if feed && opts.Feed == nil {
		opts.Feed = st
	}
	s := &server{t: t, svc: svc, clock: &clock{now: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)}}
	if opts.Clock == nil {
		opts.Clock = s.clock.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(testWriter{t}, nil))
	}
	h, err := console.New(svc, opts)
	if err != nil {
		t.Fatal(err)
	}
	s.h = h
	mux := http.NewServeMux()
	mux.Handle(console.Prefix, h)
	s.srv = httptest.NewServer(mux)
	t.Cleanup(s.srv.Close)
	s.a = s.newAccount("a")
	s.b = s.newAccount("b")
	return s
}

func (s *server) newAccount(name string) account {
	ctx := context.Background()
	acct, err := s.svc.Host().CreateAccount(ctx, identity.AccountParams{Name: name})
	if err != nil {
		s.t.Fatal(err)
	}
	u, err := s.svc.Host().CreateUser(ctx, acct.ID, identity.SubjectParams{Name: name, Admin: true})
	if err != nil {
		s.t.Fatal(err)
	}
	k, err := s.svc.Host().CreateAPIKey(ctx, acct.ID, identity.CreateAPIKeyParams{OwnerID: u.ID})
	if err != nil {
		s.t.Fatal(err)
	}
	p, err := s.svc.Authenticate(ctx, *k.Token)
	if err != nil {
		s.t.Fatal(err)
	}
	return account{key: *k.Token, p: p}
}

// browser is an HTTP client with a cookie jar that does not follow
// redirects, so that tests see each answer.
type browser struct {
	t *testing.T
	s *server
	c *http.Client
}

func (s *server) browser(t *testing.T) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, s: s, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

type page struct {
	status   int
	location string
	body     string
}

func (b *browser) do(req *http.Request) page {
	b.t.Helper()
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return page{status: resp.StatusCode, location: resp.Header.Get("Location"), body: string(body)}
}

func (b *browser) get(path string) page {
	b.t.Helper()
	req, _ := http.NewRequest("GET", b.s.srv.URL+path, nil)
	return b.do(req)
}

// post sends form as a browser would from the console's own page
// (Origin and Sec-Fetch-Site of the same origin), hdr overriding
// headers ("" deletes one).
func (b *browser) post(path string, form url.Values, hdr ...string) page {
	b.t.Helper()
	req, _ := http.NewRequest("POST", b.s.srv.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", b.s.srv.URL)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i+1] == "" {
			req.Header.Del(hdr[i])
		} else {
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	return b.do(req)
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf returns the CSRF token of a page's form.
func csrf(t *testing.T, p page) string {
	t.Helper()
	m := csrfField.FindStringSubmatch(p.body)
	if m == nil {
		t.Fatalf("no csrf field in the page (status %d): %s", p.status, p.body)
	}
	return m[1]
}

// signIn signs b in with key and returns the session's CSRF token.
func (b *browser) signIn(key string) string {
	b.t.Helper()
	form := b.get("/console/signin")
	got := b.post("/console/signin", url.Values{"csrf": {csrf(b.t, form)}, "api_key": {key}})
	if got.status != http.StatusSeeOther || got.location != "/console/" {
		b.t.Fatalf("sign-in: %d to %q, want 303 to /console/; body %s", got.status, got.location, got.body)
	}
	return csrf(b.t, b.get("/console/"))
}

// wantSignIn checks that p sends the browser to the sign-in page.
func wantSignIn(t *testing.T, p page) {
	t.Helper()
	if p.status != http.StatusSeeOther || p.location != "/console/signin" {
		t.Fatalf("%d to %q, want 303 to /console/signin; body %s", p.status, p.location, p.body)
	}
}

// countCredentials returns how many credentials the account of a has.
func (s *server) countCredentials(a account) int {
	n := 0
	for _, err := range edgeplane.All(context.Background(), a.p, s.svc.ListCredentials) {
		if err != nil {
			s.t.Fatal(err)
		}
		n++
	}
	return n
}

// openSession connects an agent of account a (a tunnel session on a
// registered node) and binds an https endpoint on domain, as a tunnel
// server does.
func (s *server) openSession(a account, domain string) (*agents.TunnelSession, *agents.Endpoint) {
	s.t.Helper()
	ctx := context.Background()
	if _, err := s.svc.CreateReservedDomain(ctx, a.p, domains.CreateParams{Domain: domain}); err != nil {
		s.t.Fatal(err)
	}
	c, err := s.svc.CreateCredential(ctx, a.p, credentials.CreateParams{Description: "agent", ACL: []string{"bind:" + domain}})
	if err != nil {
		s.t.Fatal(err)
	}
	tunnels := s.svc.Host().Tunnels()
	node, err := tunnels.RegisterNode(ctx, agents.NodeParams{})
	if err != nil {
		s.t.Fatal(err)
	}
	ts, err := tunnels.OpenTunnelSession(ctx, *c.Token, agents.SessionParams{AgentVersion: "3.18.4", OS: "linux/amd64",
		IP: netip.MustParseAddr("203.0.113.7"), Node: node.ID})
	if err != nil {
		s.t.Fatal(err)
	}
	ep, err := tunnels.BindEndpoint(ctx, a.p.AccountID, ts.ID, agents.EndpointParams{Proto: "https", Domain: domain})
	if err != nil {
		s.t.Fatal(err)
	}
	return ts, ep
}

// restrictDashboard makes an enforced IP restriction of type dashboard
// for account a that allows only 192.0.2.0/24: the tests' loopback
// client is refused.
func (s *server) restrictDashboard(a account) *ipaccess.Restriction {
	s.t.Helper()
	ctx := context.Background()
	pol, err := s.svc.CreateIPPolicy(ctx, a.p, ipaccess.CreatePolicyParams{Description: "office"})
	if err != nil {
		s.t.Fatal(err)
	}
	if _, err := s.svc.CreateIPPolicyRule(ctx, a.p, ipaccess.CreateRuleParams{IPPolicyID: pol.ID, CIDR: "192.0.2.0/24", Action: ipaccess.ActionAllow}); err != nil {
		s.t.Fatal(err)
	}
	r, err := s.svc.CreateIPRestriction(ctx, a.p, ipaccess.CreateRestrictionParams{Type: ipaccess.TypeDashboard, Enforced: true, IPPolicyIDs: []string{pol.ID}})
	if err != nil {
		s.t.Fatal(err)
	}
	return r
}

// createCredential makes a credential of account a described desc.
func (s *server) createCredential(a account, desc string) {
	s.t.Helper()
	if _, err := s.svc.CreateCredential(context.Background(), a.p, credentials.CreateParams{Description: desc}); err != nil {
		s.t.Fatal(err)
	}
}

var olderLink = regexp.MustCompile(`<a href="([^"]+)" id="older">`)

// testWriter writes a console's log to its test's log.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}

// edgeplaneListAll is the first page of a list at its largest.
var edgeplaneListAll = edgeplane.ListOptions{Limit: edgeplane.MaxPageSize}
