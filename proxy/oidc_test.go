package proxy

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/internal/oidctest"
	"github.com/edgeplane/edgeplane/internal/syncbuf"
	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/proxy/oidcauth"
)

// headerRecorder is an upstream that answers 200 and keeps the headers
// of the last request.
type headerRecorder struct {
	mu   sync.Mutex
	last http.Header
	hits int
}

func (u *headerRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u.mu.Lock()
	u.last, u.hits = r.Header.Clone(), u.hits+1
	u.mu.Unlock()
	_, _ = io.WriteString(w, "upstream")
}

func (u *headerRecorder) seen() (http.Header, int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.last, u.hits
}

// oidcEnv is a world whose edge a1 serves a.example.com, with its
// route's tunnel forwarding to up, and an OIDC provider of the test's own.
type oidcEnv struct {
	*world
	up  *headerRecorder
	idp *oidctest.Provider
}

func newOIDCEnv(t *testing.T) *oidcEnv {
	w := newWorld(t, memstore.New())
	w.reserve(w.a, "a.example.com")
	w.serveHosts(w.a, w.a1, "a.example.com:443")
	e := &oidcEnv{world: w, up: &headerRecorder{}, idp: oidctest.New("client-1", "secret-1", w.clock.Now)}
	t.Cleanup(e.idp.Close)
	upSrv := httptest.NewServer(e.up)
	t.Cleanup(upSrv.Close)
	_, err := w.api.Host().RegisterTunnel(w.ctx, w.tunnelToken, backends.RegisterTunnelParams{Labels: map[string]string{"app": "web"}, ForwardsTo: upSrv.URL})
	w.check(err)
	return e
}

// serve starts a Handler over c with OIDC key key (none when nil) and the
// provider's client, and returns its address.
func (e *oidcEnv) serve(c *Configs, key []byte) string {
	h := NewHandler(c, HandlerOptions{Clock: e.clock.Now, OIDCKey: key,
		OIDCProviders: oidcauth.NewProviders(oidcauth.ProvidersOptions{Client: e.idp.Client(), Now: e.clock.Now})})
	srv := httptest.NewServer(h)
	e.t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// transport reaches a.example.com at *addr (read at each dial) and the
// provider as itself.
func (e *oidcEnv) transport(addr *string) *http.Transport {
	tr := e.idp.Client().Transport.(*http.Transport).Clone()
	tr.DialContext = func(ctx context.Context, network, a string) (net.Conn, error) {
		if strings.HasPrefix(a, "a.example.com:") {
			a = *addr
		}
		return (&net.Dialer{}).DialContext(ctx, network, a)
	}
	return tr
}

// TestOIDCThroughTheHandler: a route with the OIDC module sends a
// browser without a session to the provider; the browser signs in
// (callback on the edge's host, whatever route its path matches),
// reaches the upstream with the identity headers, and a header the
// client forged is replaced; without the module the forged header is
// stripped; a Handler without an OIDC key refuses the route (fail
// closed).
func TestOIDCThroughTheHandler(t *testing.T) {
	env := newOIDCEnv(t)
	w, up, idp := env.world, env.up, env.idp
	c := w.start(w.api.Host(), w.st, newHooks(w.api.Host()), Options{})
	serve := func(key []byte) string { return env.serve(c, key) }
	addr := serve([]byte(strings.Repeat("k", 32)))
	// The browser reaches a.example.com at the proxy, the provider as
	// itself; it keeps cookies and follows redirects.
	tr := env.transport(&addr)
	jar, err := cookiejar.New(nil)
	w.check(err)
	browser := &http.Client{Transport: tr, Jar: jar}
	get := func(c *http.Client, url string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, url, nil)
		w.check(err)
		req.Header.Set("Service-OIDC-Subject", "forged-admin")
		res, err := c.Do(req)
		w.check(err)
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res
	}

	// No module yet: the forged header never reaches the upstream.
	if res := get(browser, "http://a.example.com/"); res.StatusCode != 200 {
		t.Fatalf("without the module: %d", res.StatusCode)
	}
	if h, _ := up.seen(); h.Get("Service-Oidc-Subject") != "" {
		t.Fatalf("the upstream saw a forged identity header %q", h.Get("Service-Oidc-Subject"))
	}

	// The module on a route of its own, /secret: the callback path
	// matches the edge's "/" route, which has no module, so the Handler
	// must hand the callback to the Gate it belongs to.
	secret, err := w.api.CreateHTTPSEdgeRoute(w.ctx, w.a, w.a1, edges.CreateRouteParams{MatchType: edges.MatchPathPrefix, Match: "/secret"})
	w.check(err)
	_, err = w.api.ReplaceHTTPSRouteBackend(w.ctx, w.a, w.a1, secret.ID, edges.BackendParams{BackendID: w.bk})
	w.check(err)
	_, err = w.api.ReplaceHTTPSRouteOIDC(w.ctx, w.a, w.a1, secret.ID, edges.OIDCParams{Issuer: idp.Issuer(), ClientID: "client-1", ClientSecret: "secret-1"})
	w.check(err)
	w.applied(c)

	noFollow := &http.Client{Transport: tr, Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	_, before := up.seen()
	res := get(noFollow, "http://a.example.com/secret")
	if res.StatusCode != http.StatusFound || !strings.HasPrefix(res.Header.Get("Location"), idp.Issuer()+"/authorize?") {
		t.Fatalf("without a session: %d to %q, want 302 to the provider", res.StatusCode, res.Header.Get("Location"))
	}
	if _, hits := up.seen(); hits != before {
		t.Fatal("a request without a session reached the upstream")
	}

	res = get(browser, "http://a.example.com/secret") // through the provider and the callback
	h, hits := up.seen()
	if res.StatusCode != 200 || hits != before+1 || res.Request.URL.Path != "/secret" {
		t.Fatalf("after signing in: %d at %s, upstream hits %d (want %d)", res.StatusCode, res.Request.URL, hits, before+1)
	}
	if h.Get("Service-Oidc-Subject") != "user-1" || h.Get("Service-Oidc-Email") != "ada@example.com" {
		t.Errorf("the upstream saw subject %q, email %q; want the signed-in user's", h.Get("Service-Oidc-Subject"), h.Get("Service-Oidc-Email"))
	}
	if res := get(browser, "http://a.example.com/"); res.StatusCode != 200 {
		t.Fatalf("the route without the module: %d", res.StatusCode)
	} else if h, _ := up.seen(); h.Get("Service-Oidc-Subject") != "" {
		t.Errorf("the route without the module passed identity %q", h.Get("Service-Oidc-Subject"))
	}

	// The same edges through a Handler without an OIDC key: refused.
	addr = serve(nil)
	fresh := &http.Client{Transport: tr.Clone(), Jar: jar} // no connection to the first Handler
	if res := get(fresh, "http://a.example.com/secret"); res.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("a Handler without an OIDC key answered %d, want 503 (%s)", res.StatusCode, res.Request.URL)
	}
}

// TestOIDCProviderOnAPrivateAddress: a Handler with its own providers
// (OIDCProviders nil) never connects to an issuer on a private address
// (here loopback), whoever configured it: the route answers 503 and the
// provider sees no discovery.
func TestOIDCProviderOnAPrivateAddress(t *testing.T) {
	env := newOIDCEnv(t)
	w, idp := env.world, env.idp
	c := w.start(w.api.Host(), w.st, newHooks(w.api.Host()), Options{})
	_, err := w.api.ReplaceHTTPSRouteOIDC(w.ctx, w.a, w.a1, w.a1r, edges.OIDCParams{Issuer: idp.Issuer(), ClientID: "client-1", ClientSecret: "secret-1"})
	w.check(err)
	w.applied(c)
	logs := &syncbuf.Buffer{}
	srv := httptest.NewServer(NewHandler(c, HandlerOptions{Clock: env.clock.Now, OIDCKey: []byte(strings.Repeat("k", 32)),
		Logger: slog.New(slog.NewTextHandler(logs, nil))}))
	t.Cleanup(srv.Close)
	req, err := http.NewRequest(http.MethodGet, srv.URL+"/", nil)
	w.check(err)
	req.Host = "a.example.com"
	res, err := srv.Client().Do(req)
	w.check(err)
	res.Body.Close()
	if res.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("an issuer on a loopback address: %d, want 503", res.StatusCode)
	}
	if _, discovered := idp.Counts(); discovered != 0 {
		t.Errorf("the provider on a private address was asked for discovery %d times", discovered)
	}
	// Refused for its address, not for anything else (its certificate,
	// which this Handler does not trust either).
	if !strings.Contains(logs.String(), "provider address not allowed: 127.0.0.1 is loopback") {
		t.Errorf("the log does not say the address was refused: %s", logs)
	}
}
