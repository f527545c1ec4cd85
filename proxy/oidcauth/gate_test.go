package oidcauth_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/edgeconfig"
	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/internal/oidctest"
	"github.com/edgeplane/edgeplane/internal/syncbuf"
	"github.com/edgeplane/edgeplane/proxy/oidcauth"
)

// testClock is a settable clock.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *testClock { return &testClock{t: time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)} }

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// testKey is the secret the gates derive their cookie keys from.
var testKey = []byte("0123456789abcdef0123456789abcdef")

// upstreamView is what the upstream handler saw of a request.
type upstreamView struct {
	Path          string
	Query         string
	Method        string
	Identity      oidcauth.Identity
	HasIdentity   bool
	OIDCHeaders   map[string][]string
	Cookie        string
	Authenticated bool
}

// harness is an app server whose routes are guarded by Gates, a test
// provider, a clock, and an upstream that records what reached it.
type harness struct {
	t         *testing.T
	clock     *testClock
	prov      *oidctest.Provider
	providers *oidcauth.Providers
	app       *httptest.Server
	prefixes  []string // route prefixes, longest first
	gates     map[string]*oidcauth.Gate
	reached   atomic.Int64
	logs      syncbuf.Buffer // the Gates' log
}

// loopback is where the test servers listen. The tests' Providers must be
// allowed to connect there: by default they reach public addresses only.
var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}

// rootCAs returns the certificate authorities the test client c trusts
// (those of httptest's TLS servers).
func rootCAs(c *http.Client) *x509.CertPool {
	return c.Transport.(*http.Transport).TLSClientConfig.RootCAs
}

// logger returns a logger writing to b.
// logger returns a text logger writing to b.
func logger(b *syncbuf.Buffer) *slog.Logger { return slog.New(slog.NewTextHandler(b, nil)) }

// newHarness starts a provider and an app with one OIDC route per prefix
// (default "/"), each with the config edited by edit.
func newHarness(t *testing.T, edit func(*edgeconfig.OIDC), prefixes ...string) *harness {
	t.Helper()
	return newHarnessWith(t, nil, edit, prefixes...)
}

// newHarnessWith is newHarness whose Providers' options are edited by
// popts (when not nil) after the defaults: the package's own transport,
// trusting the provider's certificate and allowed to reach loopback.
func newHarnessWith(t *testing.T, popts func(*oidcauth.ProvidersOptions), edit func(*edgeconfig.OIDC), prefixes ...string) *harness {
	t.Helper()
	if len(prefixes) == 0 {
		prefixes = []string{"/"}
	}
	h := &harness{t: t, clock: newClock(), gates: map[string]*oidcauth.Gate{}}
	h.prov = oidctest.New("client-1", "secret-1", h.clock.Now)
	t.Cleanup(h.prov.Close)
	o := oidcauth.ProvidersOptions{RootCAs: rootCAs(h.prov.Client()), Networks: loopback, Now: h.clock.Now}
	if popts != nil {
		popts(&o)
	}
	h.providers = oidcauth.NewProviders(o)
	for _, prefix := range prefixes {
		cfg := &edgeconfig.OIDC{
			Issuer:       h.prov.Issuer(),
			ClientID:     "client-1",
			ClientSecret: "secret-1",
			Scopes:       []string{"profile", "email"},
			CookiePrefix: edges.DefaultCookiePrefix,
		}
		if edit != nil {
			edit(cfg)
		}
		g, err := oidcauth.New(cfg, oidcauth.Options{Key: testKey, Scope: "edghts_1/" + prefix, Providers: h.providers, Now: h.clock.Now,
			Logger: logger(&h.logs)})
		if err != nil {
			t.Fatal(err)
		}
		h.gates[prefix] = g
		h.prefixes = append(h.prefixes, prefix)
	}
	sort.Slice(h.prefixes, func(i, j int) bool { return len(h.prefixes[i]) > len(h.prefixes[j]) })
	upstream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.reached.Add(1)
		v := upstreamView{Path: r.URL.Path, Query: r.URL.RawQuery, Method: r.Method, Cookie: r.Header.Get("Cookie"), OIDCHeaders: map[string][]string{}}
		v.Identity, v.HasIdentity = oidcauth.FromContext(r.Context())
		v.Authenticated = v.Identity.Authenticated()
		for k, vs := range r.Header {
			if strings.HasPrefix(strings.ToLower(k), "service-oidc-") {
				v.OIDCHeaders[k] = vs
			}
		}
		json.NewEncoder(w).Encode(v)
	})
	h.app = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// What a proxy does with several OIDC routes: the callback goes
		// to the Gate that started the sign-in, whatever route its path
		// would match. With one route, the route's Gate.Check serves it.
		if r.URL.Path == oidcauth.DefaultCallbackPath && len(h.gates) > 1 {
			for _, g := range h.gates {
				if g.IsCallback(r) {
					g.ServeCallback(w, r)
					return
				}
			}
			http.Error(w, "no such sign-in", http.StatusBadRequest)
			return
		}
		for _, prefix := range h.prefixes {
			if strings.HasPrefix(r.URL.Path, prefix) {
				h.gates[prefix].Wrap(upstream).ServeHTTP(w, r)
				return
			}
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(h.app.Close)
	return h
}

// browser returns a client with a cookie jar that trusts both servers
// and follows redirects.
func (h *harness) browser() *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		h.t.Fatal(err)
	}
	return &http.Client{Transport: h.prov.Client().Transport, Jar: jar}
}

// noFollow returns c that does not follow redirects.
func noFollow(c *http.Client) *http.Client {
	c2 := *c
	c2.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &c2
}

// do sends a request and returns the response with its body read.
func (h *harness) do(c *http.Client, method, rawURL string, header http.Header) (*http.Response, string) {
	h.t.Helper()
	req, err := http.NewRequest(method, rawURL, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	res, err := c.Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", method, rawURL, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	return res, string(body)
}

// view decodes the upstream's answer.
func (h *harness) view(res *http.Response, body string) upstreamView {
	h.t.Helper()
	if res.StatusCode != http.StatusOK {
		h.t.Fatalf("status %d, body %q; want 200 from the upstream", res.StatusCode, body)
	}
	var v upstreamView
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		h.t.Fatalf("upstream answer %q: %v", body, err)
	}
	return v
}

// signIn runs a browser through the whole flow for path and returns what
// the upstream saw.
func (h *harness) signIn(c *http.Client, path string) upstreamView {
	h.t.Helper()
	res, body := h.do(c, "GET", h.app.URL+path, nil)
	return h.view(res, body)
}

// toProvider asserts res is a redirect to the provider's authorization
// endpoint and returns its URL.
func (h *harness) toProvider(res *http.Response) *url.URL {
	h.t.Helper()
	loc, err := res.Location()
	if res.StatusCode != http.StatusFound || err != nil || !strings.HasPrefix(loc.String(), h.prov.Issuer()+"/authorize?") {
		h.t.Fatalf("got %d to %v (%v); want 302 to the provider's authorization endpoint", res.StatusCode, loc, err)
	}
	return loc
}

// beginSignIn runs a browser (not following redirects) from path to the
// provider and back, and returns the callback URL it would follow next.
func (h *harness) beginSignIn(c *http.Client, path string) *url.URL {
	h.t.Helper()
	c = noFollow(c)
	res, _ := h.do(c, "GET", h.app.URL+path, nil)
	auth := h.toProvider(res)
	res, body := h.do(c, "GET", auth.String(), nil)
	loc, err := res.Location()
	if res.StatusCode != http.StatusFound || err != nil {
		h.t.Fatalf("provider answered %d %q", res.StatusCode, body)
	}
	return loc
}

// sessionCookie returns the value of the jar's cookie named name for the app.
func (h *harness) cookie(c *http.Client, name string) string {
	u, _ := url.Parse(h.app.URL)
	for _, ck := range c.Jar.Cookies(u) {
		if ck.Name == name {
			return ck.Value
		}
	}
	return ""
}

func TestSignIn(t *testing.T) {
	h := newHarness(t, nil)
	c := h.browser()

	v := h.signIn(c, "/docs/page?x=1&y=two")
	if v.Path != "/docs/page" || v.Query != "x=1&y=two" {
		t.Errorf("after sign-in the upstream got %q?%q; want the original URL", v.Path, v.Query)
	}
	want := oidcauth.Identity{Issuer: h.prov.Issuer(), Subject: "user-1", Email: "ada@example.com", EmailVerified: true,
		Name: "Ada Lovelace", PreferredUsername: "ada", LoginTime: h.clock.Now()}
	if !v.HasIdentity || v.Identity != want {
		t.Errorf("identity in context = %+v (%v); want %+v", v.Identity, v.HasIdentity, want)
	}
	wantHeaders := map[string][]string{
		"Service-Oidc-Subject": {"user-1"}, "Service-Oidc-Issuer": {h.prov.Issuer()}, "Service-Oidc-Email": {"ada@example.com"},
		"Service-Oidc-Email-Verified": {"true"}, "Service-Oidc-Name": {"Ada Lovelace"}, "Service-Oidc-Preferred-Username": {"ada"},
	}
	if !equalHeaders(v.OIDCHeaders, wantHeaders) {
		t.Errorf("identity headers = %v; want %v", v.OIDCHeaders, wantHeaders)
	}
	if strings.Contains(v.Cookie, "service.") {
		t.Errorf("the upstream saw the gate's cookies: %q", v.Cookie)
	}

	q := h.prov.LastAuthorization()
	if got := q.Get("scope"); got != "openid profile email" {
		t.Errorf("scope = %q; want openid plus the module's scopes", got)
	}
	if q.Get("code_challenge_method") != "S256" || len(q.Get("code_challenge")) != 43 || len(q.Get("nonce")) < 22 || len(q.Get("state")) < 22 {
		t.Errorf("authorization request lacks PKCE S256, nonce or state: %v", q)
	}
	if got, want := q.Get("redirect_uri"), h.app.URL+oidcauth.DefaultCallbackPath; got != want {
		t.Errorf("redirect_uri = %q; want %q", got, want)
	}

	// The session holds: no trip to the provider.
	before, _ := h.prov.Counts()
	res, body := h.do(noFollow(c), "GET", h.app.URL+"/other", nil)
	if v := h.view(res, body); v.Identity.Subject != "user-1" {
		t.Errorf("second request: identity %+v", v.Identity)
	}
	if after, _ := h.prov.Counts(); after != before {
		t.Errorf("an authenticated request went to the provider (%d -> %d)", before, after)
	}
}

func equalHeaders(a, b map[string][]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

func TestSessionCookieAttributes(t *testing.T) {
	h := newHarness(t, func(c *edgeconfig.OIDC) { c.CookiePrefix = "acme_"; c.MaximumDuration = time.Hour })
	c := h.browser()
	cb := h.beginSignIn(c, "/x")
	res, _ := h.do(noFollow(c), "GET", cb.String(), nil)
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("callback status %d; want 303", res.StatusCode)
	}
	if loc := res.Header.Get("Location"); loc != "/x" {
		t.Errorf("callback redirects to %q; want /x", loc)
	}
	var session, loginDeleted *http.Cookie
	for _, ck := range res.Cookies() {
		switch {
		case strings.HasPrefix(ck.Name, "acme_session."):
			session = ck
		case strings.HasPrefix(ck.Name, "acme_login.") && ck.MaxAge < 0:
			loginDeleted = ck
		}
	}
	if session == nil {
		t.Fatalf("no session cookie named with the prefix among %v", res.Header["Set-Cookie"])
	}
	if session.Name != h.gates["/"].SessionCookieName() {
		t.Errorf("session cookie %q; gate says %q", session.Name, h.gates["/"].SessionCookieName())
	}
	if !session.HttpOnly || !session.Secure || session.SameSite != http.SameSiteLaxMode || session.Path != "/" {
		t.Errorf("session cookie attributes: %+v", session)
	}
	if session.MaxAge != 3600 || len(session.Value) > oidcauth.MaxCookieBytes {
		t.Errorf("session cookie Max-Age %d, %d bytes", session.MaxAge, len(session.Value))
	}
	if loginDeleted == nil {
		t.Errorf("the pending sign-in's cookie was not deleted: %v", res.Header["Set-Cookie"])
	}
}

func TestForgedIdentityHeadersStripped(t *testing.T) {
	h := newHarness(t, func(c *edgeconfig.OIDC) { c.OptionsPassthrough = true })
	c := h.browser()
	h.signIn(c, "/")
	forged := http.Header{
		"Service-Oidc-Subject":     {"admin"},
		"Service-Oidc-Email":       {"root@example.com"},
		"Service-Oidc-Groups":      {"admins"}, // an unknown name under the prefix
		"Service-Oidc-Name":        {"Eve"},
		"Service-Oidc-Preferred-X": {"x"},
	}
	for _, method := range []string{"GET", "OPTIONS"} {
		t.Run(method, func(t *testing.T) {
			res, body := h.do(c, method, h.app.URL+"/", forged)
			v := h.view(res, body)
			if got := v.OIDCHeaders["Service-Oidc-Subject"]; !slices.Equal(got, []string{"user-1"}) {
				t.Errorf("subject header %v; want only the real subject", got)
			}
			for _, k := range []string{"Service-Oidc-Groups", "Service-Oidc-Preferred-X"} {
				if _, ok := v.OIDCHeaders[k]; ok {
					t.Errorf("forged %s reached the upstream", k)
				}
			}
			if got := v.OIDCHeaders["Service-Oidc-Name"]; !slices.Equal(got, []string{"Ada Lovelace"}) {
				t.Errorf("name header %v", got)
			}
		})
	}
	// Unauthenticated OPTIONS (passthrough): no identity header at all.
	res, body := h.do(h.browser(), "OPTIONS", h.app.URL+"/", forged)
	if v := h.view(res, body); len(v.OIDCHeaders) != 0 || v.Authenticated {
		t.Errorf("unauthenticated OPTIONS reached the upstream with %v (authenticated %v)", v.OIDCHeaders, v.Authenticated)
	}
}

func TestInactivityTimeout(t *testing.T) {
	h := newHarness(t, func(c *edgeconfig.OIDC) { c.InactivityTimeout = 10 * time.Minute })
	c := h.browser()
	h.signIn(c, "/")
	nf := noFollow(c)
	// Active every 9 minutes: the last-seen time slides, the session holds.
	for i := range 5 {
		h.clock.Advance(9 * time.Minute)
		res, body := h.do(nf, "GET", h.app.URL+"/", nil)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("request %d, 9 minutes after the previous: %d %q; want 200", i, res.StatusCode, body)
		}
	}
	// Ten idle minutes: sent back to the provider.
	h.clock.Advance(10 * time.Minute)
	res, _ := h.do(nf, "GET", h.app.URL+"/", nil)
	h.toProvider(res)
	// And signing in again works.
	if v := h.signIn(c, "/"); !v.Authenticated {
		t.Errorf("no identity after signing in again")
	}
}

func TestMaximumDuration(t *testing.T) {
	h := newHarness(t, func(c *edgeconfig.OIDC) {
		c.InactivityTimeout = 10 * time.Minute
		c.MaximumDuration = 30 * time.Minute
	})
	c := h.browser()
	h.signIn(c, "/")
	nf := noFollow(c)
	for range 3 { // 9, 18, 27 minutes after sign-in
		h.clock.Advance(9 * time.Minute)
		if res, body := h.do(nf, "GET", h.app.URL+"/", nil); res.StatusCode != http.StatusOK {
			t.Fatalf("within the maximum duration: %d %q", res.StatusCode, body)
		}
	}
	h.clock.Advance(3 * time.Minute) // 30 minutes: active, but too old
	res, _ := h.do(nf, "GET", h.app.URL+"/", nil)
	h.toProvider(res)
}

func TestOptionsPassthrough(t *testing.T) {
	for _, tc := range []struct {
		name        string
		passthrough bool
		method      string
		wantStatus  int
	}{
		{"passthrough on, OPTIONS", true, "OPTIONS", http.StatusOK},
		{"passthrough on, GET", true, "GET", http.StatusFound},
		{"passthrough off, OPTIONS", false, "OPTIONS", http.StatusFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *edgeconfig.OIDC) { c.OptionsPassthrough = tc.passthrough })
			res, _ := h.do(noFollow(h.browser()), tc.method, h.app.URL+"/api", nil)
			if res.StatusCode != tc.wantStatus {
				t.Fatalf("status %d; want %d", res.StatusCode, tc.wantStatus)
			}
			if tc.wantStatus == http.StatusFound {
				h.toProvider(res)
				if h.reached.Load() != 0 {
					t.Errorf("the upstream was reached")
				}
			} else if h.reached.Load() != 1 {
				t.Errorf("the upstream was reached %d times; want 1", h.reached.Load())
			}
		})
	}
}

// TestCallbackFailsClosed: every way a callback can be wrong ends without
// a session, without reaching the upstream and without internals.
func TestCallbackFailsClosed(t *testing.T) {
	otherKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	wrongNonce := "not-the-nonce"
	for _, tc := range []struct {
		name       string
		provider   func(p *oidctest.Provider)
		callback   func(h *harness, c *http.Client, cb *url.URL) *url.URL
		wantStatus int
	}{
		{name: "bad state", wantStatus: 400, callback: func(h *harness, c *http.Client, cb *url.URL) *url.URL {
			q := cb.Query()
			s := q.Get("state")
			q.Set("state", s[:len(s)-2]+flip(s[len(s)-2:]))
			cb.RawQuery = q.Encode()
			return cb
		}},
		{name: "state of another route", wantStatus: 400, callback: func(h *harness, c *http.Client, cb *url.URL) *url.URL {
			q := cb.Query()
			_, rest, _ := strings.Cut(q.Get("state"), ".")
			q.Set("state", "0123456789ab."+rest)
			cb.RawQuery = q.Encode()
			return cb
		}},
		{name: "no state", wantStatus: 400, callback: func(h *harness, c *http.Client, cb *url.URL) *url.URL {
			q := cb.Query()
			q.Del("state")
			cb.RawQuery = q.Encode()
			return cb
		}},
		{name: "no login cookie (login CSRF)", wantStatus: 400, callback: func(h *harness, c *http.Client, cb *url.URL) *url.URL {
			jar, _ := cookiejar.New(nil)
			c.Jar = jar
			return cb
		}},
		{name: "sign-in expired", wantStatus: 400, callback: func(h *harness, c *http.Client, cb *url.URL) *url.URL {
			h.clock.Advance(oidcauth.LoginTimeout)
			return cb
		}},
		{name: "no code", wantStatus: 400, callback: func(h *harness, c *http.Client, cb *url.URL) *url.URL {
			q := cb.Query()
			q.Del("code")
			cb.RawQuery = q.Encode()
			return cb
		}},
		{name: "unknown code", wantStatus: 403, callback: func(h *harness, c *http.Client, cb *url.URL) *url.URL {
			q := cb.Query()
			q.Set("code", "forged")
			cb.RawQuery = q.Encode()
			return cb
		}},
		{name: "replayed code", wantStatus: 403, callback: func(h *harness, c *http.Client, cb *url.URL) *url.URL {
			// A first use of the code by someone who also holds the
			// login cookie (a copy of the jar), then the replay.
			u, _ := url.Parse(h.app.URL + oidcauth.DefaultCallbackPath)
			jar, _ := cookiejar.New(nil)
			jar.SetCookies(u, c.Jar.Cookies(u))
			first := noFollow(&http.Client{Transport: c.Transport, Jar: jar})
			if res, body := h.do(first, "GET", cb.String(), nil); res.StatusCode != http.StatusSeeOther {
				h.t.Fatalf("first use of the code: %d %q", res.StatusCode, body)
			}
			return cb
		}},
		{name: "replayed callback after success", wantStatus: 400, callback: func(h *harness, c *http.Client, cb *url.URL) *url.URL {
			// The same browser uses the callback twice: the login cookie
			// is gone after the first.
			if res, body := h.do(c, "GET", cb.String(), nil); res.StatusCode != http.StatusSeeOther {
				h.t.Fatalf("first use: %d %q", res.StatusCode, body)
			}
			jar, _ := cookiejar.New(nil) // forget the session, keep nothing else
			u, _ := url.Parse(h.app.URL + oidcauth.DefaultCallbackPath)
			for _, ck := range c.Jar.Cookies(u) {
				if !strings.Contains(ck.Name, "session") {
					jar.SetCookies(u, []*http.Cookie{ck})
				}
			}
			c.Jar = jar
			return cb
		}},
		{name: "query too long", wantStatus: 400, callback: func(h *harness, c *http.Client, cb *url.URL) *url.URL {
			cb.RawQuery += "&pad=" + strings.Repeat("p", oidcauth.MaxCallbackQueryBytes)
			return cb
		}},
		{name: "code too long", wantStatus: 400, callback: func(h *harness, c *http.Client, cb *url.URL) *url.URL {
			q := cb.Query()
			q.Set("code", strings.Repeat("c", oidcauth.MaxCodeBytes+1))
			cb.RawQuery = q.Encode()
			return cb
		}},
		{name: "wrong audience", wantStatus: 403, provider: func(p *oidctest.Provider) { p.Audience = "another-client" }},
		{name: "wrong issuer", wantStatus: 403, provider: func(p *oidctest.Provider) { p.IssuerClaim = "https://evil.example" }},
		{name: "wrong nonce", wantStatus: 403, provider: func(p *oidctest.Provider) { p.Nonce = &wrongNonce }},
		{name: "bad signature", wantStatus: 403, provider: func(p *oidctest.Provider) { p.Signer = otherKey }},
		{name: "expired id token", wantStatus: 403, provider: func(p *oidctest.Provider) { p.Lifetime = -time.Minute }},
		{name: "no id token", wantStatus: 403, provider: func(p *oidctest.Provider) { p.NoIDToken = true }},
		{name: "key set unreachable", wantStatus: 403, provider: func(p *oidctest.Provider) { p.JWKSDown = true }},
		{name: "provider refused", wantStatus: 403, provider: func(p *oidctest.Provider) { p.Deny = true }},
		{name: "subject too long", wantStatus: 403, provider: func(p *oidctest.Provider) { p.Subject = strings.Repeat("s", 256) }},
		{name: "subject with a newline", wantStatus: 403, provider: func(p *oidctest.Provider) { p.Subject = "user\r\nX-Admin: 1" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			if tc.provider != nil {
				h.prov.Set(tc.provider)
			}
			c := noFollow(h.browser())
			cb := h.beginSignIn(c, "/secret")
			if tc.callback != nil {
				cb = tc.callback(h, c, cb)
			}
			reached := h.reached.Load()
			res, body := h.do(c, "GET", cb.String(), nil)
			if res.StatusCode != tc.wantStatus {
				t.Errorf("callback: %d %q; want %d", res.StatusCode, body, tc.wantStatus)
			}
			for _, ck := range res.Cookies() {
				if strings.Contains(ck.Name, "session") && ck.MaxAge >= 0 {
					t.Errorf("a session cookie was set: %v", ck)
				}
			}
			checkNoInternals(t, body, h)
			// Nothing lets the browser in afterwards.
			res, _ = h.do(c, "GET", h.app.URL+"/secret", nil)
			h.toProvider(res)
			if h.reached.Load() != reached {
				t.Errorf("the upstream was reached")
			}
		})
	}
}

// flip changes a base64url string's characters.
func flip(s string) string {
	b := []byte(s)
	for i := range b {
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
	}
	return string(b)
}

// checkNoInternals fails when body shows addresses, Go error text or
// library names.
func checkNoInternals(t *testing.T, body string, h *harness) {
	t.Helper()
	for _, s := range []string{"127.0.0.1", "oidc:", "oauth2", "dial", "refused", "x509", "jwt", "token", h.prov.Issuer()} {
		if strings.Contains(strings.ToLower(body), strings.ToLower(s)) {
			t.Errorf("response body %q shows %q", body, s)
		}
	}
}

func TestCookieOfOtherRouteRefused(t *testing.T) {
	h := newHarness(t, nil, "/a/", "/b/")
	c := h.browser()
	if v := h.signIn(c, "/a/x"); v.Path != "/a/x" || !v.Authenticated {
		t.Fatalf("sign-in to route a: %+v", v)
	}
	ga, gb := h.gates["/a/"], h.gates["/b/"]
	if ga.SessionCookieName() == gb.SessionCookieName() {
		t.Fatalf("two routes share the cookie name %q", ga.SessionCookieName())
	}
	valueA := h.cookie(c, ga.SessionCookieName())
	if valueA == "" {
		t.Fatal("no session cookie for route a")
	}
	// Route b with route a's cookie, under either name: back to the provider.
	for _, name := range []string{ga.SessionCookieName(), gb.SessionCookieName()} {
		res, _ := h.do(noFollow(h.browser()), "GET", h.app.URL+"/b/x", http.Header{"Cookie": {name + "=" + valueA}})
		h.toProvider(res)
	}
	// Signing in to b too: both sessions live side by side.
	if v := h.signIn(c, "/b/y"); v.Path != "/b/y" || !v.Authenticated {
		t.Fatalf("sign-in to route b: %+v", v)
	}
	for _, path := range []string{"/a/1", "/b/2"} {
		res, body := h.do(noFollow(c), "GET", h.app.URL+path, nil)
		h.view(res, body)
	}
}

func TestCookieOfOtherIssuerOrClientRefused(t *testing.T) {
	h := newHarness(t, nil)
	c := h.browser()
	h.signIn(c, "/")
	g := h.gates["/"]
	value := h.cookie(c, g.SessionCookieName())
	for _, tc := range []struct {
		name string
		edit func(*edgeconfig.OIDC)
	}{
		{"other client ID", func(c *edgeconfig.OIDC) { c.ClientID = "client-2" }},
		{"other issuer", func(c *edgeconfig.OIDC) { c.Issuer = h.prov.Issuer() + "/other" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &edgeconfig.OIDC{Issuer: h.prov.Issuer(), ClientID: "client-1", ClientSecret: "secret-1", CookiePrefix: "service."}
			tc.edit(cfg)
			g2, err := oidcauth.New(cfg, oidcauth.Options{Key: testKey, Scope: "edghts_1//", Providers: h.providers, Now: h.clock.Now})
			if err != nil {
				t.Fatal(err)
			}
			if g2.SessionCookieName() != g.SessionCookieName() {
				t.Fatalf("the name should be the same (same scope): %q %q", g2.SessionCookieName(), g.SessionCookieName())
			}
			r := httptest.NewRequest("GET", "https://app.example/", nil)
			r.Header.Set("Cookie", g.SessionCookieName()+"="+value)
			w := httptest.NewRecorder()
			if _, ok := g2.Check(w, r); ok || w.Code == http.StatusOK {
				t.Errorf("a cookie of the old config was accepted: %d", w.Code)
			}
		})
	}
}

func TestBadSessionCookieIgnored(t *testing.T) {
	h := newHarness(t, nil)
	g := h.gates["/"]
	c := h.browser()
	h.signIn(c, "/")
	good := h.cookie(c, g.SessionCookieName())
	for _, tc := range []struct {
		name, value string
	}{
		{"empty", ""},
		{"garbage", "not a cookie"},
		{"base64 of nothing", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"},
		{"truncated", good[:len(good)-4]},
		{"one byte changed", good[:10] + flip(good[10:11]) + good[11:]},
		{"too long", good + strings.Repeat("A", oidcauth.MaxCookieBytes)},
		{"quoted garbage", `"abc"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, _ := h.do(noFollow(h.browser()), "GET", h.app.URL+"/", http.Header{"Cookie": {g.SessionCookieName() + "=" + tc.value}})
			h.toProvider(res)
		})
	}
	// The good one, quoted, among other cookies and after a bad one.
	res, body := h.do(noFollow(h.browser()), "GET", h.app.URL+"/", http.Header{"Cookie": {
		"a=1; " + g.SessionCookieName() + "=garbage; " + g.SessionCookieName() + "=\"" + good + "\"; b=2"}})
	v := h.view(res, body)
	if v.Cookie != "a=1; b=2" {
		t.Errorf("the upstream's Cookie header is %q; want the other cookies only", v.Cookie)
	}
}

func TestNoOpenRedirect(t *testing.T) {
	for _, tc := range []struct {
		name, path, wantLocation string
	}{
		{"plain path", "/a/b?c=d", "/a/b?c=d"},
		{"scheme-relative", "//evil.example/x", "/"},
		{"backslash", "/\\evil.example/x", "/%5Cevil.example/x"}, // escaped: a path on this host
		{"callback path itself", oidcauth.DefaultCallbackPath, "/"},
		{"too long query", "/p?" + strings.Repeat("q", oidcauth.MaxReturnPathBytes), "/p"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			c := noFollow(h.browser())
			var cb *url.URL
			if tc.path == oidcauth.DefaultCallbackPath {
				// A request for the callback path that is not a callback
				// is refused, not a way to start a sign-in.
				res, _ := h.do(c, "GET", h.app.URL+tc.path, nil)
				if res.StatusCode != http.StatusBadRequest {
					t.Fatalf("callback path without a sign-in: %d", res.StatusCode)
				}
				return
			}
			req, _ := http.NewRequest("GET", h.app.URL, nil)
			req.URL.Path, req.URL.RawQuery, _ = strings.Cut(tc.path, "?") // sent as is, uncleaned
			res, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			auth := h.toProvider(res)
			res, _ = h.do(c, "GET", auth.String(), nil)
			cb, _ = res.Location()
			res, _ = h.do(c, "GET", cb.String(), nil)
			if got := res.Header.Get("Location"); res.StatusCode != http.StatusSeeOther || got != tc.wantLocation {
				t.Errorf("after sign-in: %d to %q; want 303 to %q", res.StatusCode, got, tc.wantLocation)
			}
		})
	}
}

func TestProviderUnreachable(t *testing.T) {
	h := newHarness(t, nil)
	h.prov.Close()
	res, body := h.do(noFollow(h.browser()), "GET", h.app.URL+"/", nil)
	if res.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("status %d; want 503", res.StatusCode)
	}
	checkNoInternals(t, body, h)
	if h.reached.Load() != 0 {
		t.Error("the upstream was reached")
	}
}

// TestProviderUnreachableAtCallback: discovery worked, then the token
// endpoint cannot be reached: 502, no session.
func TestProviderUnreachableAtCallback(t *testing.T) {
	h := newHarness(t, nil)
	c := noFollow(h.browser())
	cb := h.beginSignIn(c, "/")
	h.prov.Close()
	res, body := h.do(c, "GET", cb.String(), nil)
	if res.StatusCode != http.StatusBadGateway {
		t.Errorf("status %d %q; want 502", res.StatusCode, body)
	}
	checkNoInternals(t, body, h)
	if h.reached.Load() != 0 {
		t.Error("the upstream was reached")
	}
}

func TestDiscoveryCached(t *testing.T) {
	h := newHarness(t, nil)
	h.signIn(h.browser(), "/")
	h.signIn(h.browser(), "/")
	if _, d := h.prov.Counts(); d != 1 {
		t.Errorf("%d discoveries for two sign-ins; want 1", d)
	}
	h.clock.Advance(oidcauth.DefaultProviderTTL)
	h.signIn(h.browser(), "/")
	if _, d := h.prov.Counts(); d != 2 {
		t.Errorf("%d discoveries after the TTL; want 2", d)
	}
}

func TestDiscoveryFailureRemembered(t *testing.T) {
	clock := newClock()
	var hits atomic.Int64
	down := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Error(w, "internal detail: db down at 10.0.0.7", http.StatusInternalServerError)
	}))
	defer down.Close()
	ps := oidcauth.NewProviders(oidcauth.ProvidersOptions{RootCAs: rootCAs(down.Client()), Networks: loopback, Now: clock.Now})
	g, err := oidcauth.New(&edgeconfig.OIDC{Issuer: down.URL, ClientID: "c", ClientSecret: "s"},
		oidcauth.Options{Key: testKey, Scope: "r", Providers: ps, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	check := func() (int, string) {
		w := httptest.NewRecorder()
		if _, ok := g.Check(w, httptest.NewRequest("GET", "https://app.example/", nil)); ok {
			t.Fatal("let through while the provider is down")
		}
		return w.Code, w.Body.String()
	}
	for range 3 {
		if code, body := check(); code != http.StatusServiceUnavailable || strings.Contains(body, "10.0.0.7") {
			t.Fatalf("%d %q; want 503 without the provider's text", code, body)
		}
	}
	if hits.Load() != 1 {
		t.Errorf("%d discovery attempts within the failure TTL; want 1", hits.Load())
	}
	clock.Advance(oidcauth.DefaultFailureTTL)
	check()
	if hits.Load() != 2 {
		t.Errorf("%d discovery attempts after the failure TTL; want 2", hits.Load())
	}
}

func TestProvidersBounded(t *testing.T) {
	clock := newClock()
	var issuers []string
	var client *http.Client
	for range 3 {
		p := oidctest.New("c", "s", clock.Now)
		defer p.Close()
		issuers = append(issuers, p.Issuer())
		client = p.Client()
	}
	ps := oidcauth.NewProviders(oidcauth.ProvidersOptions{RootCAs: rootCAs(client), Networks: loopback, MaxIssuers: 2, Now: clock.Now})
	for i, iss := range issuers {
		g, err := oidcauth.New(&edgeconfig.OIDC{Issuer: iss, ClientID: "c", ClientSecret: "s"},
			oidcauth.Options{Key: testKey, Scope: "r", Providers: ps, Now: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		w := httptest.NewRecorder()
		g.Check(w, httptest.NewRequest("GET", "https://app.example/", nil))
		if w.Code != http.StatusFound {
			t.Fatalf("issuer %d: %d %q", i, w.Code, w.Body)
		}
		if n := ps.Len(); n > 2 {
			t.Fatalf("%d issuers cached; want at most 2", n)
		}
	}
}

func TestNewValidates(t *testing.T) {
	good := edgeconfig.OIDC{Issuer: "https://idp.example", ClientID: "c", ClientSecret: "s"}
	for _, tc := range []struct {
		name      string
		cfg       *edgeconfig.OIDC
		opts      oidcauth.Options
		wantField string
	}{
		{"nil config", nil, oidcauth.Options{Key: testKey, Scope: "r"}, "config"},
		{"short key", &good, oidcauth.Options{Key: testKey[:31], Scope: "r"}, "key"},
		{"no scope", &good, oidcauth.Options{Key: testKey}, "scope"},
		{"long scope", &good, oidcauth.Options{Key: testKey, Scope: strings.Repeat("r", oidcauth.MaxScopeBytes+1)}, "scope"},
		{"relative callback", &good, oidcauth.Options{Key: testKey, Scope: "r", CallbackPath: "cb"}, "callback_path"},
		{"callback with query", &good, oidcauth.Options{Key: testKey, Scope: "r", CallbackPath: "/cb?x"}, "callback_path"},
		{"no issuer", &edgeconfig.OIDC{ClientID: "c"}, oidcauth.Options{Key: testKey, Scope: "r"}, "issuer"},
		{"no client", &edgeconfig.OIDC{Issuer: "https://idp.example"}, oidcauth.Options{Key: testKey, Scope: "r"}, "client_id"},
		{"negative inactivity", &edgeconfig.OIDC{Issuer: "https://idp.example", ClientID: "c", InactivityTimeout: -1}, oidcauth.Options{Key: testKey, Scope: "r"}, "inactivity_timeout"},
		{"negative maximum", &edgeconfig.OIDC{Issuer: "https://idp.example", ClientID: "c", MaximumDuration: -1}, oidcauth.Options{Key: testKey, Scope: "r"}, "maximum_duration"},
		{"bad prefix", &edgeconfig.OIDC{Issuer: "https://idp.example", ClientID: "c", CookiePrefix: "a b"}, oidcauth.Options{Key: testKey, Scope: "r"}, "cookie_prefix"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := oidcauth.New(tc.cfg, tc.opts)
			if apierr.CodeOf(err) != apierr.InvalidArgument {
				t.Fatalf("err %v; want InvalidArgument", err)
			}
			found := false
			for _, v := range apierr.ViolationsOf(err) {
				found = found || v.Field == tc.wantField
			}
			if !found {
				t.Errorf("violations %v do not name %q", apierr.ViolationsOf(err), tc.wantField)
			}
		})
	}
	if _, err := oidcauth.New(&good, oidcauth.Options{Key: testKey, Scope: "r"}); err != nil {
		t.Errorf("good config: %v", err)
	}
}

func TestHeaders(t *testing.T) {
	h := http.Header{"Service-Oidc-Subject": {"x"}, "service-oidc-raw": {"y"}, "Other": {"z"}}
	oidcauth.SetHeaders(h, oidcauth.Identity{Issuer: "https://i", Subject: "s", Email: "e@x", EmailVerified: false})
	want := http.Header{"Service-Oidc-Subject": {"s"}, "Service-Oidc-Issuer": {"https://i"}, "Service-Oidc-Email": {"e@x"},
		"Service-Oidc-Email-Verified": {"false"}, "Other": {"z"}}
	if !equalHeaders(h, want) {
		t.Errorf("headers %v; want %v", h, want)
	}
	oidcauth.SetHeaders(h, oidcauth.Identity{})
	if !equalHeaders(h, http.Header{"Other": {"z"}}) {
		t.Errorf("after an unauthenticated identity: %v", h)
	}
}

// TestPendingLoginsBounded: however many sign-ins a browser starts, it
// holds at most MaxPendingLogins login cookies for a route, each scoped to
// the callback path and short-lived, and the latest sign-in completes.
func TestPendingLoginsBounded(t *testing.T) {
	h := newHarness(t, nil)
	c := noFollow(h.browser())
	var last *url.URL
	for range 40 {
		res, _ := h.do(c, "GET", h.app.URL+"/", nil)
		for _, ck := range res.Cookies() {
			if ck.Path != oidcauth.DefaultCallbackPath || ck.MaxAge != int(oidcauth.LoginTimeout/time.Second) || !ck.HttpOnly {
				t.Fatalf("login cookie attributes: %+v", ck)
			}
		}
		last = h.toProvider(res)
	}
	u, _ := url.Parse(h.app.URL + oidcauth.DefaultCallbackPath)
	if n := len(c.Jar.Cookies(u)); n == 0 || n > oidcauth.MaxPendingLogins {
		t.Errorf("%d login cookies after 40 sign-ins; want 1 to %d", n, oidcauth.MaxPendingLogins)
	}
	root, _ := url.Parse(h.app.URL + "/")
	if n := len(c.Jar.Cookies(root)); n != 0 {
		t.Errorf("%d cookies sent to other paths during sign-in; want 0", n)
	}
	res, _ := h.do(c, "GET", last.String(), nil)
	cb, _ := res.Location()
	if res, body := h.do(c, "GET", cb.String(), nil); res.StatusCode != http.StatusSeeOther {
		t.Errorf("the latest sign-in: %d %q", res.StatusCode, body)
	}
}

// TestSecureOnlyOverTLS: cookies get Secure when the request came over TLS.
func TestSecureOnlyOverTLS(t *testing.T) {
	h := newHarness(t, nil)
	g := h.gates["/"]
	for _, tc := range []struct {
		name string
		url  string
		want bool
	}{
		{"TLS", "https://app.example/", true},
		{"plain HTTP", "http://app.example/", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			g.Check(w, httptest.NewRequest("GET", tc.url, nil))
			res := w.Result()
			if res.StatusCode != http.StatusFound || len(res.Cookies()) != 1 {
				t.Fatalf("%d with cookies %v", res.StatusCode, res.Cookies())
			}
			if got := res.Cookies()[0].Secure; got != tc.want {
				t.Errorf("Secure = %v; want %v", got, tc.want)
			}
			loc, _ := res.Location()
			if got, want := loc.Query().Get("redirect_uri"), strings.TrimSuffix(tc.url, "/")+oidcauth.DefaultCallbackPath; got != want {
				t.Errorf("redirect_uri %q; want %q", got, want)
			}
		})
	}
}

// TestProviderResponseBounded: a discovery document over
// MaxProviderResponseBytes, or whose headers are over
// MaxProviderHeaderBytes, fails discovery (503) rather than being read.
func TestProviderResponseBounded(t *testing.T) {
	for _, tc := range []struct {
		name          string
		contentLength bool
		headers       bool // a small document with headers past the bound
	}{
		{"declared length", true, false},
		{"chunked", false, false},
		{"headers", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			big := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				// A valid document, padded past the bound.
				iss := "https://" + r.Host
				padding := strings.Repeat("x", oidcauth.MaxProviderResponseBytes)
				if tc.headers {
					padding = ""
					w.Header().Set("X-Padding", strings.Repeat("x", oidcauth.MaxProviderHeaderBytes))
				}
				body := `{"issuer":"` + iss + `","authorization_endpoint":"` + iss + `/authorize","token_endpoint":"` + iss +
					`/token","jwks_uri":"` + iss + `/jwks","padding":"` + padding + `"}`
				if tc.contentLength {
					w.Header().Set("Content-Length", strconv.Itoa(len(body)))
				}
				io.WriteString(w, body)
			}))
			defer big.Close()
			ps := oidcauth.NewProviders(oidcauth.ProvidersOptions{RootCAs: rootCAs(big.Client()), Networks: loopback})
			g, err := oidcauth.New(&edgeconfig.OIDC{Issuer: big.URL, ClientID: "c"}, oidcauth.Options{Key: testKey, Scope: "r", Providers: ps})
			if err != nil {
				t.Fatal(err)
			}
			w := httptest.NewRecorder()
			if _, ok := g.Check(w, httptest.NewRequest("GET", "https://app.example/", nil)); ok || w.Code != http.StatusServiceUnavailable {
				t.Errorf("%d (%v); want 503", w.Code, ok)
			}
		})
	}
}

// TestConcurrentSignIns: browsers signing in at once through one Gate all
// get their own session, and the issuer is discovered once.
func TestConcurrentSignIns(t *testing.T) {
	h := newHarness(t, nil)
	var wg sync.WaitGroup
	errs := make(chan string, 8*3) // room for every failure: a full channel would hang the test
	for i := range 8 {
		wg.Go(func() {
			c := h.browser()
			for j := range 3 {
				res, err := c.Get(h.app.URL + "/p" + strconv.Itoa(i))
				if err != nil {
					errs <- err.Error()
					return
				}
				body, _ := io.ReadAll(res.Body)
				res.Body.Close()
				var v upstreamView
				if res.StatusCode != http.StatusOK || json.Unmarshal(body, &v) != nil || !v.Authenticated || v.Path != "/p"+strconv.Itoa(i) {
					errs <- "browser " + strconv.Itoa(i) + " request " + strconv.Itoa(j) + ": " + res.Status + " " + string(body)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if a, d := h.prov.Counts(); a != 8 || d != 1 {
		t.Errorf("%d authorizations and %d discoveries; want 8 and 1", a, d)
	}
}

// TestBadOptionalClaims: an ID token whose optional claims are of the
// wrong type, or not fit for a header, still signs the user in; the bad
// claims are dropped.
func TestBadOptionalClaims(t *testing.T) {
	for _, tc := range []struct {
		name   string
		claims map[string]any
		want   oidcauth.Identity
	}{
		{"claim of the wrong type", map[string]any{"email": 42, "name": "Bob"}, oidcauth.Identity{}},
		{"name with a newline", map[string]any{"email": "bob@example.com", "email_verified": "true", "name": "Bob\nX-Admin: 1"},
			oidcauth.Identity{Email: "bob@example.com", EmailVerified: true}},
		{"name too long", map[string]any{"name": strings.Repeat("n", oidcauth.MaxClaimBytes+1), "preferred_username": "bob"},
			oidcauth.Identity{PreferredUsername: "bob"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			h.prov.Set(func(p *oidctest.Provider) { p.Claims = tc.claims })
			v := h.signIn(h.browser(), "/")
			want := tc.want
			want.Issuer, want.Subject, want.LoginTime = h.prov.Issuer(), "user-1", h.clock.Now()
			if v.Identity != want {
				t.Errorf("identity %+v; want %+v", v.Identity, want)
			}
		})
	}
}
