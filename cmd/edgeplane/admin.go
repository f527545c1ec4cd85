package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/identity"
)

const adminUsage = `usage: edgeplane admin <command> [flags]

commands (each takes -store, as serve does):
  list-accounts                                  the accounts, newest first
  list-nodes                                     the edge nodes (tunnel servers) of the store:
                                                 ID, hop address, region, version, start,
                                                 lease end, and live or expired
  create-account  -name NAME                     an account; prints its ID
  create-user     -account ID -name NAME [-admin] a user of the account
  create-bot      -account ID -name NAME [-admin] a bot of the account
  create-api-key  -account ID -owner ID [-description TEXT]
                                                 an API key; prints its secret once
  revoke-api-key  -account ID -id ID             revokes a key at once
  register-tunnel -token TOKEN [-labels K=V,...] [-forwards-to URL] [-tunnel-lease D]
                                                 an online tunnel, as a tunnel server
                                                 registers one (see below); prints its ID
                                                 and the end of its lease

register-tunnel stands in for a tunnel server, for development and tests:
the tunnel belongs to the account of the credential whose authtoken is
-token (EDGEPLANE_TOKEN), which must permit its labels (bind:K=V); the
proxy sends its traffic to -forwards-to; nothing renews it, so it goes
offline when -tunnel-lease (default 60s) ends.
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
	var token, labels, forwardsTo string
	var lease time.Duration
	switch cmd {
	case "list-accounts", "list-nodes":
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
	case "register-tunnel":
		fs.StringVar(&token, "token", "", "the authtoken of a credential of the account (required)")
		fs.StringVar(&labels, "labels", "", "the tunnel's labels, comma-separated key=value pairs")
		fs.StringVar(&forwardsTo, "forwards-to", "", "the URL the proxy sends the tunnel's traffic to (http or https, no path)")
		fs.DurationVar(&lease, "tunnel-lease", edgeplane.DefaultTunnelLease, "how long the tunnel stays online (nothing renews it)")
	default:
		fmt.Fprint(stderr, adminUsage)
		return usageError{fmt.Sprintf("admin: unknown command %q", cmd)}
	}
	if err := parseFlags(fs, args[1:], getenv, stdout); err != nil {
		return err
	}
	var labelMap map[string]string
	if cmd == "register-tunnel" {
		if lease <= 0 {
			return usageError{fmt.Sprintf("-tunnel-lease %v: want a positive duration", lease)}
		}
		var err error
		if labelMap, err = parseLabels(labels); err != nil {
			return err
		}
	}
	st, closeStore, err := openStore(ctx, *storeSpec)
	if err != nil {
		return err
	}
	defer closeStore()
	svc, err := edgeplane.New(st, edgeplane.Options{TunnelLease: lease})
	if err != nil {
		return err
	}
	host := svc.Host()
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
	case "list-nodes":
		nodes, err := host.ListNodes(ctx)
		if err != nil {
			return err
		}
		now := time.Now()
		for _, n := range nodes {
			state := "live"
			if !now.Before(n.ExpiresAt) {
				state = "expired" // to be reaped with its sessions
			}
			fmt.Fprintf(stdout, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", n.ID, cmp.Or(n.Addr, "-"), cmp.Or(n.Region, "-"), cmp.Or(n.Version, "-"),
				n.StartedAt.Format(time.RFC3339), n.ExpiresAt.Format(time.RFC3339), state)
		}
	case "create-account":
		a, err := host.CreateAccount(ctx, identity.AccountParams{Name: name})
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, a.ID)
	case "create-user", "create-bot":
		create := host.CreateUser
		if cmd == "create-bot" {
			create = host.CreateBot
		}
		sub, err := create(ctx, account, identity.SubjectParams{Name: name, Admin: isAdmin})
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, sub.ID)
	case "create-api-key":
		k, err := host.CreateAPIKey(ctx, account, identity.CreateAPIKeyParams{OwnerID: owner, Description: description})
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s\nsecret (shown once): %s\n", k.ID, *k.Token)
	case "revoke-api-key":
		if err := host.DeleteAPIKey(ctx, account, id); err != nil {
			return err
		}
		fmt.Fprintln(stdout, "revoked", id)
	case "register-tunnel":
		t, err := host.RegisterTunnel(ctx, token, backends.RegisterTunnelParams{Labels: labelMap, ForwardsTo: forwardsTo})
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s\nlease ends %s\n", t.ID, t.ExpiresAt.Format(time.RFC3339))
	}
	return nil
}

// parseLabels parses -labels: comma-separated key=value pairs. The
// labels' own rules are checked by the Service.
func parseLabels(s string) (map[string]string, error) {
	out := map[string]string{}
	if s == "" {
		return out, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, usageError{fmt.Sprintf("-labels: %q is not key=value", kv)}
		}
		if _, dup := out[k]; dup {
			return nil, usageError{fmt.Sprintf("-labels: the key %q is given twice", k)}
		}
		out[k] = v
	}
	return out, nil
}
