package main

import (
	"bytes"
	"context"
	"flag"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// helpCommands returns the command line of every command's and
// subcommand's -h: the table of TestHelpFormat. Admin commands, agent
// tunnels and agent config commands come from their own tables, so a new
// one is covered.
func helpCommands() [][]string {
	cmds := [][]string{{"-h"}, {"serve", "-h"}, {"proxy", "-h"}, {"agent", "-h"}, {"admin", "-h"}, {"version", "-h"}}
	for _, t := range agentTunnels {
		cmds = append(cmds, []string{"agent", t[0], "-h"})
	}
	for _, c := range adminCommands {
		cmds = append(cmds, []string{"admin", c.name, "-h"})
	}
	cmds = append(cmds, []string{"agent", "start", "-h"})
	for _, c := range agentConfigCommands {
		cmds = append(cmds, []string{"agent", "config", c.name, "-h"})
	}
	return cmds
}

// TestHelpFormat: every command's and subcommand's -h exits 0 and prints,
// on stdout, one format: a usage line naming the command, a one-line
// summary, a heading per group of flags (every flag under one: none
// left to "Other flags"), an Environment section naming the EDGEPLANE_
// variables read, and an Example section running the command. The
// top-level help and version have no flags; version reads no variable.
func TestHelpFormat(t *testing.T) {
	heading := regexp.MustCompile(`(?m)^([A-Z][^:\n]*):\n  -[a-z]`) // a heading, then a flag
	for _, args := range helpCommands() {
		name := strings.Join(args, " ")
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), args, func(string) string { return "" }, &stdout, &stderr, nil)
			out := stdout.String()
			if code != 0 || stderr.Len() != 0 {
				t.Fatalf("exit %d, stderr %q", code, stderr.String())
			}
			words := slicesWithout(args, "-h")
			lines := strings.Split(out, "\n")
			// The usage line names the command and its subcommand (agent's
			// flags come before the tunnel).
			usage := regexp.MustCompile(`^usage: edgeplane` + strings.Join(append([]string{""}, words...), ` (?:.* )?`) + `( |$)`)
			if len(lines) < 4 || !usage.MatchString(lines[0]) {
				t.Fatalf("no usage line naming the command: %q", out)
			}
			if lines[1] != "" || lines[2] == "" || !strings.HasSuffix(lines[2], ".") || lines[3] != "" {
				t.Errorf("the summary is not one line after the usage: %q", lines[:4])
			}
			flagless := len(words) == 0 || words[0] == "version"
			if m := heading.FindAllStringSubmatch(out, -1); len(m) == 0 && !flagless {
				t.Errorf("no heading of a group of flags: %s", out)
			}
			if strings.Contains(out, "\nOther flags:\n") {
				t.Errorf("flags under no heading: %s", out)
			}
			env := section(out, "Environment")
			if args[0] == "version" {
				if !strings.Contains(env, "none") {
					t.Errorf("version's Environment: %q", env)
				}
			} else if !strings.Contains(env, "EDGEPLANE_") {
				t.Errorf("the Environment section names no EDGEPLANE_ variable: %q", env)
			}
			example := regexp.MustCompile(`(?m)^  (?:\S+=\S+ )?edgeplane` + strings.Join(append([]string{""}, words...), ` (?:.* )?`) + `( |$)`)
			if ex := section(out, "Example"); !example.MatchString(ex) {
				t.Errorf("the Example section does not run edgeplane %s: %q", strings.Join(words, " "), ex)
			}
		})
	}
}

// section returns the lines under the heading title ("" if none).
func section(out, title string) string {
	_, after, ok := strings.Cut(out, "\n"+title+":\n")
	if !ok {
		return ""
	}
	body, _, _ := strings.Cut(after, "\n\n")
	return body
}

func slicesWithout(ss []string, drop string) []string {
	var out []string
	for _, s := range ss {
		if s != drop {
			out = append(out, s)
		}
	}
	return out
}

// TestHelpGroupsEveryFlag: the flag groups of serve and proxy show each
// of their flags exactly once.
func TestHelpGroupsEveryFlag(t *testing.T) {
	var sc serveConfig
	var pc proxyConfig
	sfs, pfs := serveFlags(&sc), proxyFlags(&pc)
	for _, h := range []*commandHelp{serveHelp(sfs, &sc), proxyHelp(pfs, &pc)} {
		seen := map[string]int{}
		for _, g := range h.groups {
			for _, f := range g.flags() {
				seen[f.Name]++
			}
		}
		h.flagEnv.VisitAll(func(f *flag.Flag) {
			if seen[f.Name] != 1 {
				t.Errorf("%s: -%s shown %d times", h.usage, f.Name, seen[f.Name])
			}
		})
	}
}

// TestAdminMissingStore: admin refuses a SQLite store that does not
// exist, naming -store, the path and -create, and makes nothing; with
// -create it makes the store, which later commands use without it.
func TestAdminMissingStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "typo.db")
	spec := "sqlite:" + path
	admin := func(args ...string) (int, string) {
		var out bytes.Buffer
		code := run(context.Background(), append([]string{"admin"}, args...), func(string) string { return "" }, &out, &out, nil)
		return code, out.String()
	}
	code, out := admin("create-account", "-store", spec, "-name", "acme")
	if code != 1 || !strings.Contains(out, "-store "+spec+": the file "+path+" does not exist") || !strings.Contains(out, "-create") {
		t.Errorf("on a missing store: exit %d, %q", code, out)
	}
	if _, missing := storeMissing(spec); !missing {
		t.Fatalf("the refused command made %s", path)
	}
	if code, out := admin("create-account", "-store", spec, "-create", "-name", "acme"); code != 0 || !strings.HasPrefix(out, "acct_") {
		t.Fatalf("with -create: exit %d, %q", code, out)
	}
	if code, out := admin("list-accounts", "-store", spec); code != 0 || !strings.Contains(out, "acme") {
		t.Errorf("on the store made: exit %d, %q", code, out)
	}
}

// TestAdminListUsersAndKeys: list-users and list-api-keys print the
// users, bots and keys a test made (IDs, accounts, admin flag, names,
// owners, descriptions), and never a key's secret.
func TestAdminListUsersAndKeys(t *testing.T) {
	spec := "sqlite:" + filepath.Join(t.TempDir(), "edgeplane.db")
	admin := func(args ...string) string {
		t.Helper()
		var out bytes.Buffer
		if code := run(context.Background(), append([]string{"admin", args[0], "-store", spec, "-create"}, args[1:]...), func(string) string { return "" }, &out, &out, nil); code != 0 {
			t.Fatalf("admin %v: exit %d, %s", args, code, out.String())
		}
		return out.String()
	}
	acct := strings.TrimSpace(admin("create-account", "-name", "acme"))
	user := strings.TrimSpace(admin("create-user", "-account", acct, "-name", "alice", "-admin"))
	bot := strings.TrimSpace(admin("create-bot", "-account", acct, "-name", "ci"))
	created := admin("create-api-key", "-account", acct, "-owner", bot, "-description", "deploys")
	m := regexp.MustCompile(`^(ak_\S+)\nsecret \(shown once\): (epk_\S+)\n$`).FindStringSubmatch(created)
	if m == nil {
		t.Fatalf("create-api-key: %q", created)
	}
	key, secret := m[1], m[2]

	users := admin("list-users")
	for _, want := range []string{user + "\t" + acct + "\tadmin\talice\n", bot + "\t" + acct + "\t-\tci\n"} {
		if !strings.Contains(users, want) {
			t.Errorf("list-users lacks %q: %q", want, users)
		}
	}
	keys := admin("list-api-keys")
	if !regexp.MustCompile(`(?m)^` + key + `\t` + acct + `\t` + bot + `\t\S+\tdeploys$`).MatchString(keys) {
		t.Errorf("list-api-keys lacks the key: %q", keys)
	}
	if strings.Contains(users+keys, secret) || strings.Contains(users+keys, "epk_") {
		t.Errorf("a secret is listed: %q", users+keys)
	}
}

// TestVersion: version prints the module version, the commit and the Go
// version, on three lines; the commit with its time and whether the tree
// was modified when the build recorded them.
func TestVersion(t *testing.T) {
	var out bytes.Buffer
	if code := run(context.Background(), []string{"version"}, func(string) string { return "" }, &out, &out, nil); code != 0 {
		t.Fatalf("exit %d: %s", code, out.String())
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "edgeplane ") || !strings.HasPrefix(lines[1], "commit ") ||
		lines[2] != runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH {
		t.Errorf("version: %q", out.String())
	}
	bi := &debug.BuildInfo{Main: debug.Module{Path: "github.com/edgeplane/edgeplane", Version: "v1.2.3"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"}, {Key: "vcs.time", Value: "2025-01-02T03:04:05Z"}, {Key: "vcs.modified", Value: "true"}}}
	want := "edgeplane v1.2.3\ncommit 0123456789abcdef0123456789abcdef01234567 (2025-01-02T03:04:05Z, modified)\n" + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + "\n"
	if got := versionText(bi); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if got := versionText(nil); !strings.HasPrefix(got, "edgeplane (unknown)\ncommit unknown") {
		t.Errorf("without build information: %q", got)
	}
}
