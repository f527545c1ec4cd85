package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/edgeplane/edgeplane"
)

const adminUsage = `usage: edgeplane admin <command> [flags]

commands (each takes -store, as serve does):
  list-accounts                                  the accounts, newest first
  create-account  -name NAME                     an account; prints its ID
  create-user     -account ID -name NAME [-admin] a user of the account
  create-bot      -account ID -name NAME [-admin] a bot of the account
  create-api-key  -account ID -owner ID [-description TEXT]
                                                 an API key; prints its secret once
  revoke-api-key  -account ID -id ID             revokes a key at once
`

// admin runs a host operation against the store.
func admin(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, adminUsage)
		return usageError{"admin: which command?"}
	}
	if args[0] == "-h" || args[0] == "help" {
		fmt.Fprint(stdout, adminUsage)
		return errHelp{}
	}
	cmd := args[0]
	fs := flag.NewFlagSet("admin "+cmd, flag.ContinueOnError)
	storeSpec := fs.String("store", defaultStore, storeHelp)
	var name, account, owner, description, id string
	var isAdmin bool
	switch cmd {
	case "list-accounts":
	case "create-account":
		fs.StringVar(&name, "name", "", "display name (required)")
	case "create-user", "create-bot":
		fs.StringVar(&account, "account", "", "account ID (required)")
		fs.StringVar(&name, "name", "", "display name (required)")
		fs.BoolVar(&isAdmin, "admin", false, "may name other owners")
	case "create-api-key":
		fs.StringVar(&account, "account", "", "account ID (required)")
		fs.StringVar(&owner, "owner", "", "user or bot ID the key acts as (required)")
		fs.StringVar(&description, "description", "", "who or what uses the key")
	case "revoke-api-key":
		fs.StringVar(&account, "account", "", "account ID (required)")
		fs.StringVar(&id, "id", "", "API key ID (required)")
	default:
		fmt.Fprint(stderr, adminUsage)
		return usageError{fmt.Sprintf("admin: unknown command %q", cmd)}
	}
	if err := parseFlags(fs, args[1:], getenv, stdout); err != nil {
		return err
	}
	st, closeStore, err := openStore(ctx, *storeSpec)
	if err != nil {
		return err
	}
	defer closeStore()
	host := edgeplane.New(st, edgeplane.Options{}).Host()
	switch cmd {
	case "list-accounts":
		opts := edgeplane.ListOptions{}
		for {
			accounts, next, err := host.ListAccounts(ctx, opts)
			if err != nil {
				return err
			}
			for _, a := range accounts {
				fmt.Fprintf(stdout, "%s\t%s\t%s\n", a.ID, a.CreatedAt.Format("2006-01-02T15:04:05Z07:00"), a.Name)
			}
			if next == "" {
				return nil
			}
			opts.BeforeID = next
		}
	case "create-account":
		a, err := host.CreateAccount(ctx, edgeplane.AccountParams{Name: name})
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, a.ID)
	case "create-user", "create-bot":
		create := host.CreateUser
		if cmd == "create-bot" {
			create = host.CreateBot
		}
		sub, err := create(ctx, account, edgeplane.SubjectParams{Name: name, Admin: isAdmin})
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, sub.ID)
	case "create-api-key":
		k, err := host.CreateAPIKey(ctx, account, edgeplane.APIKeyParams{OwnerID: owner, Description: description})
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s\nsecret (shown once): %s\n", k.ID, *k.Token)
	case "revoke-api-key":
		if err := host.DeleteAPIKey(ctx, account, id); err != nil {
			return err
		}
		fmt.Fprintln(stdout, "revoked", id)
	}
	return nil
}
