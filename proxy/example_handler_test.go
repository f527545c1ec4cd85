package proxy_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/credentials"
	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/identity"
	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/proxy"
)

// A Handler serves every HTTPS edge of the store by the request's host:
// here one edge on app.example.com whose route sends requests to a
// tunnel's upstream, and a deny rule added through the API afterwards.
func ExampleHandler() {
	ctx := context.Background()
	st := memstore.New()
	svc, err := edgeplane.New(st, edgeplane.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer svc.Close(ctx)
	must := func(err error) {
		if err != nil {
			log.Fatal(err)
		}
	}
	acct, err := svc.Host().CreateAccount(ctx, identity.AccountParams{Name: "acme"})
	must(err)
	user, err := svc.Host().CreateUser(ctx, acct.ID, identity.SubjectParams{Name: "ops", Admin: true})
	must(err)
	p := edgeplane.Principal{AccountID: acct.ID, SubjectID: user.ID, Admin: true}

	// The edge, its route and the route's backend: tunnels labelled
	// app=web.
	_, err = svc.CreateReservedDomain(ctx, p, domains.CreateParams{Domain: "app.example.com"})
	must(err)
	edge, err := svc.CreateHTTPSEdge(ctx, p, edges.CreateEdgeParams{Hostports: []string{"app.example.com:443"}})
	must(err)
	route, err := svc.CreateHTTPSEdgeRoute(ctx, p, edge.ID, edges.CreateRouteParams{MatchType: edges.MatchPathPrefix, Match: "/"})
	must(err)
	backend, err := svc.CreateTunnelGroupBackend(ctx, p, backends.CreateParams{Labels: map[string]string{"app": "web"}})
	must(err)
	_, err = svc.ReplaceHTTPSRouteBackend(ctx, p, edge.ID, route.ID, edges.BackendParams{BackendID: backend.ID})
	must(err)

	// A tunnel server registers a tunnel with an agent's authtoken; its
	// forwards_to is where the proxy sends the route's requests.
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello from the upstream, %s\n", r.URL.Path)
	}))
	defer upstream.Close()
	cred, err := svc.CreateCredential(ctx, p, credentials.CreateParams{ACL: []string{"bind:app=web"}})
	must(err)
	_, err = svc.Host().RegisterTunnel(ctx, *cred.Token, backends.RegisterTunnelParams{Labels: map[string]string{"app": "web"}, ForwardsTo: upstream.URL})
	must(err)

	configs, err := proxy.New(ctx, svc.Host().DataPlane(), st, proxy.Options{})
	must(err)
	defer configs.Close()
	srv := httptest.NewServer(proxy.NewHandler(configs, proxy.HandlerOptions{}))
	defer srv.Close()
	get := func(host, path string) {
		req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		must(err)
		req.Host = host
		res, err := http.DefaultClient.Do(req)
		must(err)
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		fmt.Printf("%s%s: %d %q\n", host, path, res.StatusCode, strings.TrimSpace(string(body)))
	}
	get("app.example.com", "/hi")
	get("other.example.com", "/hi")

	_, err = svc.ReplaceHTTPSRouteTrafficPolicy(ctx, p, edge.ID, route.ID, edges.TrafficPolicyParams{
		Value: `{"inbound":[{"expressions":["req.url.path.startsWith('/admin')"],"actions":[{"type":"deny"}]}]}`})
	must(err)
	rev, err := st.Revision(ctx)
	must(err)
	must(configs.WaitRevision(ctx, rev))
	get("app.example.com", "/admin")
	get("app.example.com", "/hi")
	// Output:
	// app.example.com/hi: 200 "hello from the upstream, /hi"
	// other.example.com/hi: 404 "no edge serves this host"
	// app.example.com/admin: 403 ""
	// app.example.com/hi: 200 "hello from the upstream, /hi"
}
