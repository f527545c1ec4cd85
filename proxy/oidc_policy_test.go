package proxy

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/internal/oidctest"
	"github.com/edgeplane/edgeplane/policy/limits"
	"github.com/edgeplane/edgeplane/proxy/oidcauth"
)

// TestOIDCBounds checks that the sizes the policy cost model assumes for
// the oidc.* variables are the bounds of what the OIDC module passes:
// oidcauth's claim bound and the issuer bound edges validates.
func TestOIDCBounds(t *testing.T) {
	if limits.MaxOIDCClaimBytes != oidcauth.MaxClaimBytes {
		t.Errorf("limits.MaxOIDCClaimBytes %d, oidcauth.MaxClaimBytes %d", limits.MaxOIDCClaimBytes, oidcauth.MaxClaimBytes)
	}
	if limits.MaxOIDCIssuerBytes != edges.MaxURLBytes {
		t.Errorf("limits.MaxOIDCIssuerBytes %d, edges.MaxURLBytes %d", limits.MaxOIDCIssuerBytes, edges.MaxURLBytes)
	}
}

// identityBody is a custom-response body showing every oidc.* variable.
const identityBody = "${string(oidc.authenticated)}|${oidc.subject}|${oidc.issuer}|${oidc.email}|${string(oidc.email_verified)}|${oidc.name}|${oidc.preferred_username}"

// showIdentity is a rule answering identityBody for the paths under
// prefix.
func showIdentity(prefix string) string {
	return `{"name":"show","expressions":["req.url.path.startsWith('` + prefix + `')"],"actions":[{"type":"custom-response","config":{"body":"` + identityBody + `"}}]}`
}

// TestOIDCTrafficPolicyVariables: the traffic policy of a route with the
// OIDC module reads the signed-in user's identity (oidc.*) in its
// inbound and outbound rules, and can deny by it; an OPTIONS request the
// module lets through without a session is not authenticated; on a route
// without the module the identity is empty whatever Service-OIDC-*
// headers the client forges.
func TestOIDCTrafficPolicyVariables(t *testing.T) {
	env := newOIDCEnv(t)
	w, up, idp := env.world, env.up, env.idp

	// "/" has no module; /secret has one and a policy that shows the
	// identity under /secret/show, admits only ada@example.com, and tags
	// the response with the user name on the way out.
	w.policy(w.a, w.a1, w.a1r, `{"inbound":[`+showIdentity("/")+`]}`)
	secret, err := w.api.CreateHTTPSEdgeRoute(w.ctx, w.a, w.a1, edges.CreateRouteParams{MatchType: edges.MatchPathPrefix, Match: "/secret"})
	w.check(err)
	_, err = w.api.ReplaceHTTPSRouteBackend(w.ctx, w.a, w.a1, secret.ID, edges.BackendParams{BackendID: w.bk})
	w.check(err)
	_, err = w.api.ReplaceHTTPSRouteOIDC(w.ctx, w.a, w.a1, secret.ID, edges.OIDCParams{Issuer: idp.Issuer(), ClientID: "client-1", ClientSecret: "secret-1", OptionsPassthrough: true})
	w.check(err)
	w.policy(w.a, w.a1, secret.ID, `{"inbound":[`+showIdentity("/secret/show")+`,
	  {"name":"only ada","expressions":["oidc.email != 'ada@example.com'"],"actions":[{"type":"deny","config":{"status_code":403}}]}],
	 "outbound":[{"expressions":["oidc.authenticated && oidc.email_verified"],"actions":[{"type":"add-headers","config":{"headers":{"x-oidc-user":"${oidc.preferred_username}"}}}]}]}`)

	c := w.start(w.api.Host(), w.st, newHooks(w.api.Host()), Options{})
	w.applied(c)
	addr := env.serve(c, []byte(strings.Repeat("k", 32)))
	tr := env.transport(&addr)
	// browser returns a client with cookies of its own that follows
	// redirects (through the provider).
	browser := func() *http.Client {
		jar, err := cookiejar.New(nil)
		w.check(err)
		return &http.Client{Transport: tr, Jar: jar}
	}
	// do sends a request with forged identity headers and returns the
	// response with its body read.
	do := func(c *http.Client, method, url string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(method, url, nil)
		w.check(err)
		for k, v := range map[string]string{
			oidcauth.HeaderSubject: "forged-admin", oidcauth.HeaderIssuer: "https://forged.example", oidcauth.HeaderEmail: "ada@example.com",
			oidcauth.HeaderEmailVerified: "true", oidcauth.HeaderName: "Forged", oidcauth.HeaderPreferredUsername: "forged",
		} {
			req.Header.Set(k, v)
		}
		res, err := c.Do(req)
		w.check(err)
		b, err := io.ReadAll(res.Body)
		res.Body.Close()
		w.check(err)
		return res, string(b)
	}
	const nobody = "false||||false||"

	t.Run("no module, forged headers", func(t *testing.T) {
		res, body := do(browser(), http.MethodGet, "http://a.example.com/")
		if res.StatusCode != 200 || body != nobody {
			t.Fatalf("%d %q; want 200 %q", res.StatusCode, body, nobody)
		}
	})

	t.Run("options passthrough", func(t *testing.T) {
		b := browser()
		if res, body := do(b, http.MethodOptions, "http://a.example.com/secret/show"); res.StatusCode != 200 || body != nobody {
			t.Fatalf("show: %d %q; want 200 %q", res.StatusCode, body, nobody)
		}
		_, before := up.seen()
		if res, body := do(b, http.MethodOptions, "http://a.example.com/secret"); res.StatusCode != http.StatusForbidden {
			t.Fatalf("%d %q; want the policy's 403", res.StatusCode, body)
		}
		if _, hits := up.seen(); hits != before {
			t.Fatal("an unauthenticated OPTIONS request reached the upstream")
		}
	})

	t.Run("ada", func(t *testing.T) {
		b := browser()
		want := "true|user-1|" + idp.Issuer() + "|ada@example.com|true|Ada Lovelace|ada"
		if res, body := do(b, http.MethodGet, "http://a.example.com/secret/show"); res.StatusCode != 200 || body != want {
			t.Fatalf("show: %d %q; want 200 %q", res.StatusCode, body, want)
		}
		_, before := up.seen()
		res, body := do(b, http.MethodGet, "http://a.example.com/secret")
		if _, hits := up.seen(); res.StatusCode != 200 || body != "upstream" || hits != before+1 {
			t.Fatalf("%d %q, upstream hits %d (want %d)", res.StatusCode, body, hits, before+1)
		}
		if got := res.Header.Get("X-Oidc-User"); got != "ada" {
			t.Errorf("outbound rule set x-oidc-user %q, want %q", got, "ada")
		}
	})

	t.Run("grace", func(t *testing.T) {
		idp.Set(func(p *oidctest.Provider) {
			p.Subject = "user-2"
			p.Claims = map[string]any{"email": "grace@example.com", "email_verified": false, "name": "Grace Hopper", "preferred_username": "grace"}
		})
		b := browser()
		want := "true|user-2|" + idp.Issuer() + "|grace@example.com|false|Grace Hopper|grace"
		if res, body := do(b, http.MethodGet, "http://a.example.com/secret/show"); res.StatusCode != 200 || body != want {
			t.Fatalf("show: %d %q; want 200 %q", res.StatusCode, body, want)
		}
		_, before := up.seen()
		if res, body := do(b, http.MethodGet, "http://a.example.com/secret"); res.StatusCode != http.StatusForbidden {
			t.Fatalf("%d %q; want the policy's 403", res.StatusCode, body)
		}
		if _, hits := up.seen(); hits != before {
			t.Fatal("a denied user reached the upstream")
		}
	})
}
