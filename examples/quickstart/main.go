// Command quickstart shows edgeplane as a library on the in-memory store:
// it creates an account, a tunnel credential with an ACL, checks what the
// credential may bind, and prints the results.
//
//	go run ./examples/quickstart
package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/credentials"
	"github.com/edgeplane/edgeplane/identity"
	"github.com/edgeplane/edgeplane/memstore"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, w io.Writer) error {
	svc, err := edgeplane.New(memstore.New(), edgeplane.Options{BaseURL: "https://api.example.com"})
	if err != nil {
		return err
	}
	acct, err := svc.Host().CreateAccount(ctx, identity.AccountParams{Name: "acme"})
	if err != nil {
		return err
	}
	admin, err := svc.Host().CreateUser(ctx, acct.ID, identity.SubjectParams{Name: "ada", Admin: true})
	if err != nil {
		return err
	}
	key, err := svc.Host().CreateAPIKey(ctx, acct.ID, identity.CreateAPIKeyParams{OwnerID: admin.ID, Description: "quickstart"})
	if err != nil {
		return err
	}
	p, err := svc.Authenticate(ctx, *key.Token)
	if err != nil {
		return err
	}

	cred, err := svc.CreateCredential(ctx, p, credentials.CreateParams{
		Description: "staging agents",
		ACL:         []string{"bind:*.staging.example.com", "bind:1.tcp.example.com:20002", "bind:env=staging"},
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "created credential %s (%s)\n", cred.ID, cred.URI)
	fmt.Fprintf(w, "authtoken, shown once: %s\n", *cred.Token)

	auth, err := svc.Host().AuthenticateTunnelToken(ctx, *cred.Token)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "ACL checks for an agent using the token:")
	for _, d := range []string{"api.staging.example.com", "*.staging.example.com", "staging.example.com", "example.org"} {
		fmt.Fprintf(w, "  bind domain %-26s %v\n", d, auth.ACL.AllowsDomain(d))
	}
	for _, a := range []string{"1.tcp.example.com:20002", "1.tcp.example.com:20003"} {
		fmt.Fprintf(w, "  bind address %-25s %v\n", a, auth.ACL.AllowsAddr(a))
	}
	for _, l := range []map[string]string{{"env": "staging"}, {"env": "prod"}} {
		fmt.Fprintf(w, "  bind labels %-26s %v\n", fmt.Sprint(l), auth.ACL.AllowsLabels(l))
	}

	// An invalid request changes nothing and names every broken rule.
	_, err = svc.CreateCredential(ctx, p, credentials.CreateParams{ACL: []string{"bind:a.*.com", "listen:x"}})
	fmt.Fprintln(w, "invalid create:", err)

	page, err := svc.ListCredentials(ctx, p, edgeplane.ListOptions{})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "the account has %d credential(s); token in list responses: %v\n", len(page.Items), page.Items[0].Token)
	return nil
}
