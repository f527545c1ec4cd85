package edgeplane_test

import (
	"context"
	"fmt"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/credentials"
	"github.com/edgeplane/edgeplane/identity"
	"github.com/edgeplane/edgeplane/memstore"
)

// setup returns a Service on the in-memory store and an admin principal.
func setup() (*edgeplane.Service, edgeplane.Principal) {
	ctx := context.Background()
	svc := mustService(edgeplane.New(memstore.New(), edgeplane.Options{BaseURL: "https://api.example.com"}))
	acct, _ := svc.Host().CreateAccount(ctx, identity.AccountParams{Name: "acme"})
	admin, _ := svc.Host().CreateUser(ctx, acct.ID, identity.SubjectParams{Name: "ada", Admin: true})
	key, _ := svc.Host().CreateAPIKey(ctx, acct.ID, identity.CreateAPIKeyParams{OwnerID: admin.ID})
	p, _ := svc.Authenticate(ctx, *key.Token) // what a transport does per request
	return svc, p
}

// Create a tunnel credential: the token is in the create result only.
func ExampleService_CreateCredential() {
	ctx := context.Background()
	svc, p := setup()
	c, err := svc.CreateCredential(ctx, p, credentials.CreateParams{
		Description: "ci runner",
		ACL:         []string{"bind:*.ci.example.com"},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("token shown once:", c.Token != nil)
	again, _ := svc.GetCredential(ctx, p, c.ID)
	fmt.Println("token on get:", again.Token)
	fmt.Println("owner is the caller:", c.OwnerID == p.SubjectID)

	// The tunnel server authenticates the agent with the token.
	auth, _ := svc.Host().AuthenticateTunnelToken(ctx, *c.Token)
	fmt.Println("may bind build.ci.example.com:", auth.ACL.AllowsDomain("build.ci.example.com"))
	fmt.Println("may bind example.com:", auth.ACL.AllowsDomain("example.com"))
	// Output:
	// token shown once: true
	// token on get: <nil>
	// owner is the caller: true
	// may bind build.ci.example.com: true
	// may bind example.com: false
}

// Page through a list, one page at a time or with the iterator.
func ExampleAll() {
	ctx := context.Background()
	svc, p := setup()
	for i := range 5 {
		svc.CreateCredential(ctx, p, credentials.CreateParams{Description: fmt.Sprint("credential ", i)})
	}

	page, _ := svc.ListCredentials(ctx, p, edgeplane.ListOptions{Limit: 2})
	fmt.Println("first page:", page.Items[0].Description, "and", page.Items[1].Description)
	fmt.Println("has next page:", page.NextPageURI != nil)

	for c, err := range edgeplane.All(ctx, p, svc.ListCredentials) {
		if err != nil {
			panic(err)
		}
		fmt.Println(c.Description)
	}
	// Output:
	// first page: credential 4 and credential 3
	// has next page: true
	// credential 4
	// credential 3
	// credential 2
	// credential 1
	// credential 0
}
