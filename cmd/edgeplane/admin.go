package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/identity"
)

// adminVars are the values of an admin command's flags.
type adminVars struct {
	store                          string
	create                         bool
	name, account, owner, desc, id string
	isAdmin                        bool
	token, labels, forwardsTo      string
	lease                          time.Duration
}

// adminCommand is one of edgeplane admin's commands.
type adminCommand struct {
	name    string
	args    string // its flags as its usage line shows them, -store aside
	summary string
	about   string
	flags   func(fs *flag.FlagSet, v *adminVars) // its own flags, -store and -create aside
	// fields maps the fields of the Service's violations to the command's
	// flags, so that an error names what the operator typed.
	fields  map[string]string
	example string
}

// adminCommands are edgeplane admin's commands, in the order -h lists them.
var adminCommands = []adminCommand{
	{name: "list-accounts", summary: "Lists the accounts of the store, newest first: ID, creation time, name.",
		example: "edgeplane admin list-accounts -store sqlite:edgeplane.db"},
	{name: "list-users", summary: "Lists the users and bots of every account: ID, account, admin or -, name.",
		about:   "Enough to recover access: the ID of an admin is the -owner of a new key (admin create-api-key).",
		example: "edgeplane admin list-users -store sqlite:edgeplane.db"},
	{name: "list-api-keys", summary: "Lists the API keys of every account: ID, account, owner, creation time, description; never a secret.",
		about:   "A key whose secret is lost cannot be shown again: make a new one with admin create-api-key and revoke the old one with admin revoke-api-key.",
		example: "edgeplane admin list-api-keys -store sqlite:edgeplane.db"},
	{name: "list-nodes", summary: "Lists the edge nodes (tunnel servers) of the store: ID, hop address, region, version, start, lease end, live or expired.",
		example: "edgeplane admin list-nodes -store postgres://edgeplane@db.internal/edgeplane"},
	{name: "create-account", args: "-name NAME", summary: "Creates an account and prints its ID.",
		flags: func(fs *flag.FlagSet, v *adminVars) {
			fs.StringVar(&v.name, "name", "", "the account's display `name` (required)")
		},
		fields:  map[string]string{"name": "-name"},
		example: "edgeplane admin create-account -store sqlite:edgeplane.db -name acme"},
	{name: "create-user", args: "-account ID -name NAME [-admin]", summary: "Creates a user of an account and prints its ID.",
		flags:   subjectFlags,
		fields:  map[string]string{"name": "-name", "admin": "-admin"},
		example: "edgeplane admin create-user -store sqlite:edgeplane.db -account acct_... -name me -admin"},
	{name: "create-bot", args: "-account ID -name NAME [-admin]", summary: "Creates a bot user of an account and prints its ID.",
		flags:   subjectFlags,
		fields:  map[string]string{"name": "-name", "admin": "-admin"},
		example: "edgeplane admin create-bot -store sqlite:edgeplane.db -account acct_... -name ci"},
	{name: "create-api-key", args: "-account ID -owner ID [-description TEXT]", summary: "Creates an API key for a user or bot and prints its ID and its secret, once.",
		flags: func(fs *flag.FlagSet, v *adminVars) {
			fs.StringVar(&v.account, "account", "", "the account's `ID` (required)")
			fs.StringVar(&v.owner, "owner", "", "the `ID` of the user or bot the key acts as (required)")
			fs.StringVar(&v.desc, "description", "", "who or what uses the key, at most 255 bytes of `text`")
		},
		fields:  map[string]string{"owner_id": "-owner", "description": "-description", "metadata": "-description"},
		example: "edgeplane admin create-api-key -store sqlite:edgeplane.db -account acct_... -owner usr_... -description laptop"},
	{name: "revoke-api-key", args: "-account ID -id ID", summary: "Revokes an API key at once.",
		flags: func(fs *flag.FlagSet, v *adminVars) {
			fs.StringVar(&v.account, "account", "", "the account's `ID` (required)")
			fs.StringVar(&v.id, "id", "", "the API key's `ID` (required)")
		},
		example: "edgeplane admin revoke-api-key -store sqlite:edgeplane.db -account acct_... -id ak_..."},
	{name: "register-tunnel", args: "-token TOKEN [-labels K=V,...] [-forwards-to URL] [-tunnel-lease D]",
		summary: "Registers an online tunnel, as a tunnel server does, and prints its ID and the end of its lease.",
		about: `For development and tests: the tunnel belongs to the account of the
credential whose authtoken is -token, which must permit its labels
(bind:K=V); the proxy sends its traffic to -forwards-to; nothing renews
it, so it goes offline when -tunnel-lease ends.`,
		flags: func(fs *flag.FlagSet, v *adminVars) {
			fs.StringVar(&v.token, "token", "", "the authtoken of a credential of the account (required)")
			fs.StringVar(&v.labels, "labels", "", "the tunnel's labels, comma-separated `key=value` pairs")
			fs.StringVar(&v.forwardsTo, "forwards-to", "", "the `URL` the proxy sends the tunnel's traffic to (http or https, no path)")
			fs.DurationVar(&v.lease, "tunnel-lease", edgeplane.DefaultTunnelLease, "how long the tunnel stays online (nothing renews it)")
		},
		fields:  map[string]string{"labels": "-labels", "forwards_to": "-forwards-to"},
		example: "edgeplane admin register-tunnel -store sqlite:edgeplane.db -token ept_... -labels app=web -forwards-to http://127.0.0.1:3000"},
}

// subjectFlags are create-user's and create-bot's flags.
func subjectFlags(fs *flag.FlagSet, v *adminVars) {
	fs.StringVar(&v.account, "account", "", "the account's `ID` (required)")
	fs.StringVar(&v.name, "name", "", "the display `name` (required)")
	fs.BoolVar(&v.isAdmin, "admin", false, "an admin of the account: may manage every key and name other owners")
}

// adminStoreFlags registers the flags every admin command takes.
func adminStoreFlags(fs *flag.FlagSet, v *adminVars) {
	fs.StringVar(&v.store, "store", defaultStore, "the store edgeplane serve uses: sqlite:PATH (an existing SQLite file), postgres://... or memory: (this process only)")
	fs.BoolVar(&v.create, "create", false, "make the store when it does not exist (a new SQLite file); without it a missing one is refused, since a mistyped -store would write to a new, empty store")
}

// adminFlags returns cmd's flag set.
func adminFlags(cmd adminCommand, v *adminVars) *flag.FlagSet {
	fs := flag.NewFlagSet("admin "+cmd.name, flag.ContinueOnError)
	if cmd.flags != nil {
		cmd.flags(fs, v)
	}
	adminStoreFlags(fs, v)
	fs.Usage = func() { adminCommandHelp(cmd, fs).write(fs.Output()) }
	return fs
}

// adminCommandHelp is admin CMD -h.
func adminCommandHelp(cmd adminCommand, fs *flag.FlagSet) *commandHelp {
	usage := "edgeplane admin " + cmd.name
	if cmd.args != "" {
		usage += " " + cmd.args
	}
	var own []string
	fs.VisitAll(func(f *flag.Flag) {
		if f.Name != "store" && f.Name != "create" {
			own = append(own, f.Name)
		}
	})
	var groups []flagGroup
	if len(own) > 0 {
		groups = append(groups, flagGroup{"What to " + strings.SplitN(cmd.name, "-", 2)[0], fs, own})
	}
	groups = append(groups, flagGroup{"Store", fs, []string{"store", "create"}})
	return &commandHelp{
		usage: usage + " [-store STORE] [-create]", summary: cmd.summary, about: cmd.about,
		groups: groups, flagEnv: fs, example: cmd.example,
	}
}

// adminHelp is admin -h.
func adminHelp() *commandHelp {
	var v adminVars
	fs := flag.NewFlagSet("admin", flag.ContinueOnError)
	adminStoreFlags(fs, &v)
	h := &commandHelp{
		usage:   "edgeplane admin COMMAND [flags]",
		summary: "Host operations on the store edgeplane serve uses: accounts, users, bots, API keys, tunnels.",
		about:   "Run edgeplane admin COMMAND -h for a command's flags.",
		groups:  []flagGroup{{"Every command's store", fs, []string{"store", "create"}}},
		flagEnv: fs,
		example: `edgeplane admin list-users -store sqlite:edgeplane.db
edgeplane admin create-api-key -store sqlite:edgeplane.db -account acct_... -owner usr_...`,
	}
	for _, c := range adminCommands {
		h.commands = append(h.commands, [2]string{c.name, c.summary})
	}
	return h
}

// admin runs a host operation against the store.
func admin(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError{"admin: which command? (edgeplane admin -h lists them)"}
	}
	if args[0] == "-h" || args[0] == "-help" || args[0] == "--help" || args[0] == "help" {
		adminHelp().write(stdout)
		return errHelp{}
	}
	i := slices.IndexFunc(adminCommands, func(c adminCommand) bool { return c.name == args[0] })
	if i < 0 {
		return usageError{fmt.Sprintf("admin: unknown command %q (edgeplane admin -h lists them)", args[0])}
	}
	cmd := adminCommands[i]
	var v adminVars
	if err := parseFlags(adminFlags(cmd, &v), args[1:], getenv, stdout); err != nil {
		return err
	}
	var labelMap map[string]string
	if cmd.name == "register-tunnel" {
		if v.lease <= 0 {
			return usageError{fmt.Sprintf("-tunnel-lease %v: want a positive duration", v.lease)}
		}
		var err error
		if labelMap, err = parseLabels(v.labels); err != nil {
			return err
		}
	}
	if !v.create {
		if path, missing := storeMissing(v.store); missing {
			return fmt.Errorf("-store %s: the file %s does not exist: give the store edgeplane serve uses, or add -create to make a new one", v.store, path)
		}
	}
	st, closeStore, err := openStore(ctx, v.store)
	if err != nil {
		return err
	}
	defer closeStore()
	svc, err := edgeplane.New(st, edgeplane.Options{TunnelLease: v.lease})
	if err != nil {
		return err
	}
	return flagErrors(runAdmin(ctx, svc.Host(), cmd.name, v, labelMap, stdout), cmd.fields)
}

// runAdmin runs the admin command name on host.
func runAdmin(ctx context.Context, host *edgeplane.Host, name string, v adminVars, labels map[string]string, stdout io.Writer) error {
	const stamp = time.RFC3339
	switch name {
	case "list-accounts":
		return listAll(ctx, host.ListAccounts, func(a identity.Account) {
			fmt.Fprintf(stdout, "%s\t%s\t%s\n", a.ID, a.CreatedAt.Format(stamp), a.Name)
		})
	case "list-users":
		show := func(s identity.Subject) {
			role := "-"
			if s.Admin {
				role = "admin"
			}
			fmt.Fprintf(stdout, "%s\t%s\t%s\t%s\n", s.ID, s.AccountID, role, s.Name)
		}
		if err := listAll(ctx, host.ListUsers, show); err != nil {
			return err
		}
		return listAll(ctx, host.ListBots, show)
	case "list-api-keys":
		return listAll(ctx, host.ListAPIKeys, func(k edgeplane.AccountAPIKey) {
			fmt.Fprintf(stdout, "%s\t%s\t%s\t%s\t%s\n", k.ID, k.AccountID, k.OwnerID, k.CreatedAt.Format(stamp), cmp.Or(k.Description, "-"))
		})
	case "list-nodes":
		nodes, err := host.Nodes().ListNodes(ctx)
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
				n.StartedAt.Format(stamp), n.ExpiresAt.Format(stamp), state)
		}
	case "create-account":
		a, err := host.CreateAccount(ctx, identity.AccountParams{Name: v.name})
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, a.ID)
	case "create-user", "create-bot":
		create := host.CreateUser
		if name == "create-bot" {
			create = host.CreateBot
		}
		sub, err := create(ctx, v.account, identity.SubjectParams{Name: v.name, Admin: v.isAdmin})
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, sub.ID)
	case "create-api-key":
		k, err := host.CreateAPIKey(ctx, v.account, identity.CreateAPIKeyParams{OwnerID: v.owner, Description: v.desc})
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s\nsecret (shown once): %s\n", k.ID, *k.Token)
	case "revoke-api-key":
		if err := host.DeleteAPIKey(ctx, v.account, v.id); err != nil {
			return err
		}
		fmt.Fprintln(stdout, "revoked", v.id)
	case "register-tunnel":
		t, err := host.RegisterTunnel(ctx, v.token, backends.RegisterTunnelParams{Labels: labels, ForwardsTo: v.forwardsTo})
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s\nlease ends %s\n", t.ID, t.ExpiresAt.Format(stamp))
	}
	return nil
}

// listAll calls show on every item of every page of list.
func listAll[T any](ctx context.Context, list func(context.Context, edgeplane.ListOptions) ([]T, string, error), show func(T)) error {
	var opts edgeplane.ListOptions
	for {
		items, next, err := list(ctx, opts)
		if err != nil {
			return err
		}
		for _, it := range items {
			show(it)
		}
		if next == "" {
			return nil
		}
		opts.BeforeID = next
	}
}

// flagErrors rewrites the violations of err, an error of the Service,
// to name the command's flags (fields maps a violation's field, or the
// first element of its path, to its flag): "-owner: is required", not
// "owner_id: is required". Other errors are returned as they are.
func flagErrors(err error, fields map[string]string) error {
	var e *apierr.Error
	if !errors.As(err, &e) || len(e.Violations) == 0 {
		return err
	}
	reasons := make([]string, len(e.Violations))
	for i, v := range e.Violations {
		root := v.Field
		if j := strings.IndexAny(root, ".["); j >= 0 {
			root = root[:j]
		}
		switch flag, ok := fields[root]; {
		case ok && root == v.Field:
			reasons[i] = flag + ": " + v.Reason
		case ok:
			reasons[i] = flag + ": " + v.String()
		default:
			reasons[i] = v.String()
		}
	}
	return adminError{msg: strings.Join(reasons, "; "), err: err}
}

// adminError is an error of the Service said in the admin command's
// flags; it unwraps to the Service's error.
type adminError struct {
	msg string
	err error
}

func (e adminError) Error() string { return e.msg }
func (e adminError) Unwrap() error { return e.err }

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
