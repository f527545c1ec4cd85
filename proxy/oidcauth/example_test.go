package oidcauth_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"time"

	"github.com/edgeplane/edgeplane/edgeconfig"
	"github.com/edgeplane/edgeplane/internal/oidctest"

	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/proxy/oidcauth"
)

// A route guarded by a Gate: a browser that asks for /dashboard is sent
// to the provider, signs in (this test provider approves at once), comes
// back through the callback and reaches the handler with its identity.
func ExampleGate_Wrap() {
	idp := oidctest.New("client-1", "secret-1", time.Now)
	defer idp.Close()

	// One Providers per proxy: the discovery cache and the HTTP client
	// that reaches the providers. By default it reaches public addresses
	// only; this test provider is on 127.0.0.1, with a certificate of its
	// own.
	providers := oidcauth.NewProviders(oidcauth.ProvidersOptions{
		AllowPrivateNetworks: true,
		RootCAs:              idp.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs,
	})
	module := &edges.OIDC{Enabled: true, Issuer: idp.Issuer(), ClientID: "client-1", ClientSecret: "secret-1", Scopes: []string{"email"}}
	gate, err := oidcauth.New(edgeconfig.NewOIDC(module), oidcauth.Options{
		Key:       []byte("a 32-byte or longer secret key!!"), // a proxy passes its sealing key
		Scope:     "edghts_123/edghtsrt_456",
		Providers: providers,
	})
	if err != nil {
		panic(err)
	}
	app := httptest.NewTLSServer(gate.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, _ := oidcauth.FromContext(r.Context())
		fmt.Fprintf(w, "%s: hello %s <%s>", r.URL.Path, id.Subject, r.Header.Get(oidcauth.HeaderEmail))
	})))
	defer app.Close()

	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Transport: idp.Client().Transport, Jar: jar}
	res, err := browser.Get(app.URL + "/dashboard")
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	fmt.Println(string(body))
	// Output: /dashboard: hello user-1 <ada@example.com>
}
