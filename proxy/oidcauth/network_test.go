package oidcauth_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/edgeplane/edgeplane/edgeconfig"
	"github.com/edgeplane/edgeplane/internal/oidctest"
	"github.com/edgeplane/edgeplane/internal/syncbuf"
	"github.com/edgeplane/edgeplane/proxy/oidcauth"
)

// unavailable is the body of the Gate's 503 and 502: a fixed text.
const unavailable = "the identity provider is unavailable; try again later\n"

// TestProviderNetworks: the Providers' own transport connects only to
// public addresses unless told otherwise, so a provider on 127.0.0.1 is
// refused by default: the browser gets the Gate's generic 503, the
// provider sees no request at all, and the operator's log says why. With
// AllowPrivateNetworks, or Networks holding the provider's address, the
// sign-in works; Networks is then the only rule. A Client with a
// Transport of its own is used as is.
func TestProviderNetworks(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    func(o *oidcauth.ProvidersOptions)
		wantLog string // "" when the sign-in works
	}{
		{"default refuses loopback", func(o *oidcauth.ProvidersOptions) { o.Networks = nil },
			"127.0.0.1 is loopback"},
		{"AllowPrivateNetworks", func(o *oidcauth.ProvidersOptions) { o.Networks, o.AllowPrivateNetworks = nil, true }, ""},
		{"Networks with 127.0.0.0/8", func(o *oidcauth.ProvidersOptions) {
			o.Networks = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
		}, ""},
		{"Networks with an IPv4-mapped prefix", func(o *oidcauth.ProvidersOptions) {
			o.Networks = []netip.Prefix{netip.MustParsePrefix("::ffff:127.0.0.1/128")}
		}, ""},
		{"Networks elsewhere", func(o *oidcauth.ProvidersOptions) {
			o.Networks = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128")}
		}, "127.0.0.1 is outside ProvidersOptions.Networks"},
		{"Networks elsewhere win over AllowPrivateNetworks", func(o *oidcauth.ProvidersOptions) {
			o.Networks, o.AllowPrivateNetworks = []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}, true
		}, "127.0.0.1 is outside ProvidersOptions.Networks"},
		{"a Client without a Transport is restricted", func(o *oidcauth.ProvidersOptions) {
			o.Networks, o.Client = nil, &http.Client{Timeout: time.Minute}
		}, "127.0.0.1 is loopback"},
		{"a Client with its own Transport is used as is", func(o *oidcauth.ProvidersOptions) {
			o.Client = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: o.RootCAs}}}
			o.Networks, o.RootCAs = nil, nil
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarnessWith(t, tc.opts, nil)
			if !strings.HasPrefix(h.prov.Issuer(), "https://127.0.0.1:") {
				t.Skipf("the test provider is at %s, not on 127.0.0.1", h.prov.Issuer())
			}
			if tc.wantLog == "" {
				if v := h.signIn(h.browser(), "/x"); !v.Authenticated {
					t.Errorf("signed in as %+v; want an identity", v.Identity)
				}
				return
			}
			res, body := h.do(noFollow(h.browser()), "GET", h.app.URL+"/x", nil)
			if res.StatusCode != http.StatusServiceUnavailable || body != unavailable {
				t.Errorf("answered %d %q; want 503 %q", res.StatusCode, body, unavailable)
			}
			if a, d := h.prov.Counts(); a != 0 || d != 0 || h.reached.Load() != 0 {
				t.Errorf("the provider served %d discoveries and %d authorizations, the upstream %d requests; want none",
					d, a, h.reached.Load())
			}
			log := h.logs.String()
			for _, want := range []string{"oidc discovery failed", oidcauth.ErrAddressNotAllowed.Error(), tc.wantLog} {
				if !strings.Contains(log, want) {
					t.Errorf("log %q does not say %q", log, want)
				}
			}
		})
	}
}

// fakeServer is a plain-HTTP server on a given loopback address that
// counts the requests it gets.
type fakeServer struct {
	*httptest.Server
	hits atomic.Int64
}

// startFake starts h on addr ("127.0.0.1:0"); it skips the test when the
// address cannot be listened on (127.0.0.2 is loopback on Linux only).
func startFake(t *testing.T, addr string, h http.HandlerFunc) *fakeServer {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	f := &fakeServer{}
	f.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.hits.Add(1)
		h(w, r)
	}))
	f.Listener.Close()
	f.Listener = ln
	f.Start()
	t.Cleanup(f.Close)
	return f
}

// discoveryDoc writes a discovery document of issuer with the given
// token endpoint and key set URL.
func discoveryDoc(w http.ResponseWriter, issuer, token, jwks string) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"issuer": issuer, "authorization_endpoint": issuer + "/authorize", "token_endpoint": token, "jwks_uri": jwks,
		"response_types_supported": []string{"code"}, "subject_types_supported": []string{"public"},
		"id_token_signing_alg_values_supported": []string{"ES256"},
	})
}

// TestProviderNetworksEveryDial: the restriction holds for every
// connection a sign-in makes, not only the issuer's: a discovery that
// redirects elsewhere, a token endpoint or a key set named by the
// discovery document on a refused address all fail with the Gate's
// generic answers, and the refused server sees no request. The provider
// is on 127.0.0.1 (allowed), the other server on 127.0.0.2 (not).
func TestProviderNetworksEveryDial(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		// idp serves the provider at issuer; other is the server at 127.0.0.2.
		idp      func(w http.ResponseWriter, r *http.Request, issuer, other string)
		callback bool // the failure shows in the callback (else in discovery)
		wantCode int
		wantBody string
	}{
		{"discovery redirected", func(w http.ResponseWriter, r *http.Request, issuer, other string) {
			http.Redirect(w, r, other+r.URL.Path, http.StatusFound)
		}, false, http.StatusServiceUnavailable, unavailable},
		{"token endpoint elsewhere", func(w http.ResponseWriter, r *http.Request, issuer, other string) {
			discoveryDoc(w, issuer, other+"/token", issuer+"/jwks")
		}, true, http.StatusBadGateway, unavailable},
		{"key set elsewhere", func(w http.ResponseWriter, r *http.Request, issuer, other string) {
			if r.URL.Path == "/token" {
				w.Header().Set("Content-Type", "application/json")
				json.NewEncoder(w).Encode(map[string]any{"access_token": "a", "token_type": "Bearer",
					"id_token": signedIDToken(t, key, issuer)})
				return
			}
			discoveryDoc(w, issuer, issuer+"/token", other+"/jwks")
		}, true, http.StatusForbidden, "sign-in failed\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var issuer string
			// other answers everything as the provider would, so that only
			// the restriction keeps the sign-in from using it.
			other := startFake(t, "127.0.0.2:0", func(w http.ResponseWriter, r *http.Request) {
				switch r.URL.Path {
				case "/jwks":
					json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{
						{Key: &key.PublicKey, KeyID: "k1", Algorithm: string(jose.ES256), Use: "sig"}}})
				case "/token":
					w.Header().Set("Content-Type", "application/json")
					json.NewEncoder(w).Encode(map[string]any{"access_token": "a", "token_type": "Bearer",
						"id_token": signedIDToken(t, key, issuer)})
				default:
					discoveryDoc(w, issuer, issuer+"/token", issuer+"/jwks")
				}
			})
			idp := startFake(t, "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) { tc.idp(w, r, issuer, other.URL) })
			issuer = idp.URL

			var logs syncbuf.Buffer
			ps := oidcauth.NewProviders(oidcauth.ProvidersOptions{Networks: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
			g, err := oidcauth.New(&edgeconfig.OIDC{Issuer: issuer, ClientID: "c", ClientSecret: "s"},
				oidcauth.Options{Key: testKey, Scope: "r", Providers: ps, Logger: logger(&logs)})
			if err != nil {
				t.Fatal(err)
			}
			w := httptest.NewRecorder()
			g.Check(w, httptest.NewRequest("GET", "https://app.example/", nil))
			if tc.callback {
				if w.Code != http.StatusFound {
					t.Fatalf("sign-in start: %d %q; want 302", w.Code, w.Body)
				}
				loc, _ := w.Result().Location()
				r := httptest.NewRequest("GET", "https://app.example"+oidcauth.DefaultCallbackPath+"?code=c1&state="+loc.Query().Get("state"), nil)
				for _, c := range w.Result().Cookies() {
					r.AddCookie(c)
				}
				w = httptest.NewRecorder()
				g.Check(w, r)
			}
			if w.Code != tc.wantCode || w.Body.String() != tc.wantBody {
				t.Errorf("answered %d %q; want %d %q", w.Code, w.Body, tc.wantCode, tc.wantBody)
			}
			if n := other.hits.Load(); n != 0 {
				t.Errorf("the server on 127.0.0.2 got %d requests; want none", n)
			}
			if log := logs.String(); !strings.Contains(log, "127.0.0.2 is outside ProvidersOptions.Networks") {
				t.Errorf("log %q does not name the refused address", log)
			}
		})
	}
}

// signedIDToken returns an ID token of issuer for client "c", signed by key.
func signedIDToken(t *testing.T, key *ecdsa.PrivateKey, issuer string) string {
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key}, (&jose.SignerOptions{}).WithHeader("kid", "k1"))
	if err != nil {
		t.Error(err)
		return ""
	}
	now := time.Now()
	payload, _ := json.Marshal(map[string]any{"iss": issuer, "aud": "c", "sub": "u", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()})
	jws, err := signer.Sign(payload)
	if err != nil {
		t.Error(err)
		return ""
	}
	s, _ := jws.CompactSerialize()
	return s
}

// TestProviderRedirects: a provider call follows at most
// MaxProviderRedirects redirects, and never one from https to http.
func TestProviderRedirects(t *testing.T) {
	// /hN/.well-known/openid-configuration redirects to /h(N-1)/...; /h0/
	// serves the document of the issuer named by ?iss= (the first hop's).
	var plainHits atomic.Int64
	hops := startFake(t, "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) {
		plainHits.Add(1)
		n, _ := strconv.Atoi(strings.TrimPrefix(strings.Split(r.URL.Path, "/")[1], "h"))
		iss := r.URL.Query().Get("iss")
		if iss == "" {
			iss = "http://" + r.Host + "/h" + strconv.Itoa(n)
		}
		if n > 0 {
			http.Redirect(w, r, "/h"+strconv.Itoa(n-1)+"/.well-known/openid-configuration?iss="+iss, http.StatusFound)
			return
		}
		discoveryDoc(w, iss, iss+"/token", iss+"/jwks")
	})
	check := func(t *testing.T, ps *oidcauth.Providers, issuer string) int {
		t.Helper()
		g, err := oidcauth.New(&edgeconfig.OIDC{Issuer: issuer, ClientID: "c"}, oidcauth.Options{Key: testKey, Scope: "r", Providers: ps})
		if err != nil {
			t.Fatal(err)
		}
		w := httptest.NewRecorder()
		g.Check(w, httptest.NewRequest("GET", "https://app.example/", nil))
		return w.Code
	}
	for _, tc := range []struct {
		redirects int
		want      int
	}{
		{0, http.StatusFound},
		{oidcauth.MaxProviderRedirects, http.StatusFound},
		{oidcauth.MaxProviderRedirects + 1, http.StatusServiceUnavailable},
	} {
		t.Run(strconv.Itoa(tc.redirects)+" redirects", func(t *testing.T) {
			hops.hits.Store(0)
			ps := oidcauth.NewProviders(oidcauth.ProvidersOptions{AllowPrivateNetworks: true})
			if code := check(t, ps, hops.URL+"/h"+strconv.Itoa(tc.redirects)); code != tc.want {
				t.Errorf("answered %d; want %d", code, tc.want)
			}
			if n, max := hops.hits.Load(), int64(min(tc.redirects, oidcauth.MaxProviderRedirects)+1); n != max {
				t.Errorf("%d requests; want %d", n, max)
			}
		})
	}
	t.Run("https to http", func(t *testing.T) {
		hops.hits.Store(0)
		tlsIdP := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// To the plain server, which would serve this issuer's document.
			http.Redirect(w, r, hops.URL+"/h0/.well-known/openid-configuration?iss=https://"+r.Host, http.StatusFound)
		}))
		defer tlsIdP.Close()
		ps := oidcauth.NewProviders(oidcauth.ProvidersOptions{AllowPrivateNetworks: true, RootCAs: rootCAs(tlsIdP.Client())})
		if code := check(t, ps, tlsIdP.URL); code != http.StatusServiceUnavailable {
			t.Errorf("answered %d; want 503", code)
		}
		if n := hops.hits.Load(); n != 0 {
			t.Errorf("the plain-HTTP server got %d requests; want none", n)
		}
	})
}

// TestProviderRedirectsOwnCheck: a Client's own CheckRedirect still runs
// (after the package's limits).
func TestProviderRedirectsOwnCheck(t *testing.T) {
	idp := oidctest.New("c", "s", time.Now)
	defer idp.Close()
	redirector := httptest.NewTLSServer(http.RedirectHandler(idp.Issuer()+"/.well-known/openid-configuration", http.StatusFound))
	defer redirector.Close()
	var asked atomic.Int64
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error {
		asked.Add(1)
		return http.ErrUseLastResponse
	}}
	ps := oidcauth.NewProviders(oidcauth.ProvidersOptions{Client: client, RootCAs: rootCAs(idp.Client()), Networks: loopback})
	g, err := oidcauth.New(&edgeconfig.OIDC{Issuer: redirector.URL, ClientID: "c"}, oidcauth.Options{Key: testKey, Scope: "r", Providers: ps})
	if err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	g.Check(w, httptest.NewRequest("GET", "https://app.example/", nil))
	if w.Code != http.StatusServiceUnavailable || asked.Load() != 1 {
		t.Errorf("answered %d after %d calls of the client's CheckRedirect; want 503 after 1", w.Code, asked.Load())
	}
	if _, d := idp.Counts(); d != 0 {
		t.Errorf("the redirect was followed (%d discoveries); want none", d)
	}
}
