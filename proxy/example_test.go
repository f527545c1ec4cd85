package proxy_test

import (
	"context"
	"fmt"
	"log"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/identity"
	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/proxy"
)

// A proxy loads every HTTPS edge of the store, then sees a route added
// through the API once the store's revision after the write is applied.
func Example() {
	ctx := context.Background()
	st := memstore.New()
	svc, err := edgeplane.New(st, edgeplane.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer svc.Close(ctx)
	acct, err := svc.Host().CreateAccount(ctx, identity.AccountParams{Name: "acme"})
	if err != nil {
		log.Fatal(err)
	}
	user, err := svc.Host().CreateUser(ctx, acct.ID, identity.SubjectParams{Name: "ops", Admin: true})
	if err != nil {
		log.Fatal(err)
	}
	p := edgeplane.Principal{AccountID: acct.ID, SubjectID: user.ID, Admin: true}
	edge, err := svc.CreateHTTPSEdge(ctx, p, edges.CreateEdgeParams{})
	if err != nil {
		log.Fatal(err)
	}

	configs, err := proxy.New(ctx, svc.Host().DataPlane(), st, proxy.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer configs.Close()
	fmt.Println("routes:", len(configs.Edge(acct.ID, edge.ID).Config.Routes))

	if _, err := svc.CreateHTTPSEdgeRoute(ctx, p, edge.ID, edges.CreateRouteParams{MatchType: edges.MatchPathPrefix, Match: "/api"}); err != nil {
		log.Fatal(err)
	}
	rev, err := st.Revision(ctx)
	if err != nil {
		log.Fatal(err)
	}
	if err := configs.WaitRevision(ctx, rev); err != nil {
		log.Fatal(err)
	}
	e := configs.Edge(acct.ID, edge.ID)
	fmt.Println("routes:", len(e.Config.Routes), "match for /api/users:", e.Config.Route("/api/users").Match)
	fmt.Println("other account:", configs.Edge("acct_other", edge.ID) == nil)
	// Output:
	// routes: 0
	// routes: 1 match for /api/users: /api
	// other account: true
}
