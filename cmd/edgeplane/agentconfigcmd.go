package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// edgeplane agent start and edgeplane agent config.

// startHelp is agent start -h.
func startHelp(agentFS, startFS *flag.FlagSet) *commandHelp {
	return &commandHelp{
		usage:   "edgeplane agent [agent flags] start NAME... | -all",
		summary: "Starts the configuration file's endpoints named (or all of them) on one session, and forwards each to its upstream.",
		about: `The endpoints are those of the configuration file (-config, by default
$XDG_CONFIG_HOME/edgeplane/agent.yml, else ~/.config/edgeplane/agent.yml;
docs/agent.md has its schema), at most 100. The agent connects once and
binds them in the file's order; the first the server refuses ends the
command (exit 1, the endpoint named), as does the first the server
stops later; the others are closed. Once all are up, one line each is
printed on stdout: the endpoint's name, then its URL (a labeled tunnel:
its ID and labels). The agent API lists them by name.`,
		groups: []flagGroup{
			{"Endpoints (after start)", startFS, nil},
			{"Agent (before start)", agentFS, []string{"server", "authtoken", "ca", "config", "connections"}},
			{"Agent API and logs", agentFS, []string{"inspect-addr", "inspect", "log-format"}},
		},
		flagEnv: agentFS,
		example: `edgeplane agent start -all
edgeplane agent -config ./agent.yml start web api`,
	}
}

// parseAgentStart parses agent start's command line (args, after start)
// and the configuration file, and returns the run. c and fs are the
// agent's flags.
func parseAgentStart(c agentConfig, fs *flag.FlagSet, args []string, getenv func(string) string, stdout io.Writer) (agentRun, error) {
	var all bool
	sfs := flag.NewFlagSet("start", flag.ContinueOnError)
	sfs.SetOutput(io.Discard)
	sfs.BoolVar(&all, "all", false, "start every endpoint of the configuration file")
	names, err := parseInterleaved(sfs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			startHelp(fs, sfs).write(stdout)
			return agentRun{}, errHelp{}
		}
		if name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -"); ok && fs.Lookup(name) != nil {
			return agentRun{}, usageError{fmt.Sprintf("start: -%s is the agent's flag: give it before start (edgeplane agent -%s ... start ...)", name, name)}
		}
		return agentRun{}, usageError{"start: " + err.Error()}
	}
	switch {
	case all && len(names) > 0:
		return agentRun{}, usageError{"start: give endpoint names or -all, not both"}
	case !all && len(names) == 0:
		return agentRun{}, usageError{"start: which endpoints? give their names, or -all for every endpoint of the configuration file"}
	}
	f, err := c.useFile(getenv)
	if err != nil {
		return agentRun{}, err
	}
	if f == nil {
		where := defaultAgentConfigPath(getenv)
		if where == "" {
			where = "the default path ($XDG_CONFIG_HOME and $HOME are not set)"
		}
		return agentRun{}, fmt.Errorf("start: no configuration file at %s: give -config FILE, or write one (docs/agent.md)", where)
	}
	if err := c.checkAgent(); err != nil {
		return agentRun{}, err
	}
	run := agentRun{c: c, named: true}
	if all {
		run.endpoints = f.endpoints
		if len(run.endpoints) == 0 {
			return agentRun{}, fmt.Errorf("start -all: %s has no endpoints", f.path)
		}
		return run, nil
	}
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			return agentRun{}, usageError{fmt.Sprintf("start: %q is given twice", n)}
		}
		seen[n] = true
		e, ok := f.endpoint(n)
		if !ok {
			have := make([]string, len(f.endpoints))
			for i, e := range f.endpoints {
				have[i] = e.name
			}
			return agentRun{}, fmt.Errorf("start: %s has no endpoint named %q (it has: %s)", f.path, n, strings.Join(have, ", "))
		}
		run.endpoints = append(run.endpoints, e)
	}
	return run, nil
}

// agentConfigCommand is a command of edgeplane agent config.
type agentConfigCommand struct {
	name, args string
	short      string // what config -h says of it
	summary    string // its -h's summary
	about      string
	example    string
}

// agentConfigCommands are agent config's commands, in the order -h
// lists them.
var agentConfigCommands = []agentConfigCommand{
	{name: "add-authtoken", args: "TOKEN", short: "write the authtoken into the file (agent.authtoken)", summary: "Writes the authtoken into the configuration file (agent.authtoken), making the file if it does not exist.",
		about: `The file is written with mode 0600 (its directory, when made, 0700),
through a temporary file renamed over it; its other keys are kept, and
its comments as far as the YAML library keeps them (it may reindent).
The token is never printed. A flag or variable (-authtoken,
EDGEPLANE_AUTHTOKEN) still wins over the file.`,
		example: "edgeplane agent config add-authtoken ept_..."},
	{name: "add-server", args: "HOST:PORT", short: "add a tunnel server to the file's agent.servers", summary: "Adds a tunnel server to the configuration file's agent.servers, making the file if it does not exist.",
		about: `A server already listed (however its host is spelled) is left as it
is; at most 16. The file is written as add-authtoken writes it. -server
and EDGEPLANE_SERVER still win over the file.`,
		example: "edgeplane agent config add-server tunnel.example.com:4443"},
	{name: "check", args: "[TUNNEL TARGET [tunnel flags]]", short: "check the file, and print its endpoints and their traffic policies (or a tunnel's)", summary: "Checks the configuration file and prints its endpoints and their traffic policies, or every error with its line and path (exit 1).",
		about: `With a tunnel's command line (http 3000 -domain app.example.com
-basic-auth alice:s3cret ...), checks it too and prints the traffic
policy its flags make, as agent would send it; nothing connects. The
file is then optional.`,
		example: "edgeplane agent config check\nedgeplane agent config check http 3000 -domain app.example.com -basic-auth alice:s3cret"},
}

// configHelp is agent config -h, or with cmd its command's.
func configHelp(fs *flag.FlagSet, cmd *agentConfigCommand) *commandHelp {
	h := &commandHelp{
		usage:   "edgeplane agent config add-authtoken|add-server|check [-config FILE] ...",
		summary: "Writes the authtoken or a tunnel server into the agent's configuration file, or checks the file.",
		about: `The file is YAML (version: 1; docs/agent.md has its schema), at most 1
MiB: -config, else $XDG_CONFIG_HOME/edgeplane/agent.yml, else
~/.config/edgeplane/agent.yml. edgeplane agent reads it for what no flag
or variable gives, and agent start runs its endpoints.`,
		groups:  []flagGroup{{"Configuration file", fs, nil}},
		flagEnv: fs,
		example: "edgeplane agent config add-authtoken ept_...\nedgeplane agent config add-server tunnel.example.com:4443\nedgeplane agent config check",
	}
	if cmd == nil {
		for _, c := range agentConfigCommands {
			h.commands = append(h.commands, [2]string{c.name + " " + c.args, c.short})
		}
		return h
	}
	h.usage = "edgeplane agent config " + cmd.name + " [-config FILE] " + cmd.args
	h.summary, h.about, h.example = cmd.summary, cmd.about, cmd.example
	return h
}

// agentConfigCmd runs agent config's commands; args follow config. c
// holds the agent's flags (its -config is the default of the command's).
func agentConfigCmd(c agentConfig, args []string, getenv func(string) string, stdout io.Writer) error {
	configFlags := func(name string) (*flag.FlagSet, *string) {
		fs := flag.NewFlagSet("config "+name, flag.ContinueOnError)
		file := new(string)
		fs.StringVar(file, "config", c.configFile, "the configuration `file` (default $XDG_CONFIG_HOME/edgeplane/agent.yml, else ~/.config/edgeplane/agent.yml)")
		return fs, file
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" {
		fs, _ := configFlags("")
		if len(args) == 0 {
			return usageError{"config: which command? add-authtoken, add-server or check (edgeplane agent config -h)"}
		}
		configHelp(fs, nil).write(stdout)
		return errHelp{}
	}
	i := slices.IndexFunc(agentConfigCommands, func(cmd agentConfigCommand) bool { return cmd.name == args[0] })
	if i < 0 {
		return usageError{fmt.Sprintf("config: unknown command %q: want add-authtoken, add-server or check", args[0])}
	}
	cmd := &agentConfigCommands[i]
	fs, file := configFlags(cmd.name)
	fs.Usage = func() { configHelp(fs, cmd).write(fs.Output()) }
	// The command's flags come before its arguments; a tunnel's command
	// line (check) follows them.
	split := flag.NewFlagSet("", flag.ContinueOnError)
	split.SetOutput(io.Discard)
	split.String("config", "", "")
	own, rest := args[1:], []string(nil)
	if split.Parse(args[1:]) == nil {
		rest = split.Args()
		own = args[1 : len(args)-len(rest)]
	}
	if err := parseFlags(fs, own, getenv, stdout); err != nil {
		return err
	}
	path := *file
	if path == "" {
		path = defaultAgentConfigPath(getenv)
	}
	if path == "" && (cmd.name != "check" || len(rest) == 0) {
		return usageError{"config " + cmd.name + ": give -config FILE: the default path needs $XDG_CONFIG_HOME or $HOME"}
	}
	switch cmd.name {
	case "add-authtoken":
		if len(rest) != 1 {
			return usageError{"config add-authtoken: give one TOKEN, the authtoken of a tunnel credential"}
		}
		token := rest[0]
		if token == "" || strings.ContainsFunc(token, func(c rune) bool { return c <= ' ' || c == 0x7f }) {
			return usageError{"config add-authtoken: the token must have no spaces or control characters"}
		}
		if _, err := editAgentFile(path, func(agent *yaml.Node) (bool, error) {
			setMappingValue(agent, "authtoken", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: token})
			return true, nil
		}); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "authtoken saved to %s\n", path)
		return nil
	case "add-server":
		if len(rest) != 1 {
			return usageError{"config add-server: give one HOST:PORT, a tunnel server"}
		}
		server := rest[0]
		host, err := checkHostPort(server)
		if err != nil {
			return usageError{fmt.Sprintf("config add-server %q: %v", server, err)}
		}
		changed, err := editAgentFile(path, func(agent *yaml.Node) (bool, error) {
			list := mappingValue(agent, "servers")
			switch {
			case list == nil || isNull(list):
				list = &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
				setMappingValue(agent, "servers", list)
			case list.Kind != yaml.SequenceNode:
				return false, fmt.Errorf("%s: agent.servers is not a list: fix it first (edgeplane agent config check)", path)
			}
			for _, item := range list.Content {
				if h, err := checkHostPort(item.Value); err == nil && serverKey(h, item.Value) == serverKey(host, server) {
					return false, nil
				}
			}
			if len(list.Content) >= maxAgentServers {
				return false, fmt.Errorf("%s: agent.servers has %d servers already, the most allowed", path, len(list.Content))
			}
			list.Content = append(list.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: server})
			return true, nil
		})
		if err != nil {
			return err
		}
		if !changed {
			fmt.Fprintf(stdout, "%s is in %s already\n", server, path)
			return nil
		}
		fmt.Fprintf(stdout, "server %s added to %s\n", server, path)
		return nil
	}
	return configCheck(c, path, *file != "", rest, getenv, stdout)
}

// configCheck is agent config check: the file at path (required when
// given, or when no tunnel is), and the tunnel of args, if any.
func configCheck(c agentConfig, path string, explicit bool, args []string, getenv func(string) string, stdout io.Writer) error {
	var tunnel *agentConfig
	if len(args) > 0 {
		t := agentConfig{}
		if err := parseTunnel(&t, agentFlags(new(agentConfig)), args, stdout); err != nil {
			return err
		}
		if err := t.checkTunnel(); err != nil {
			return err
		}
		tunnel = &t
	}
	var f *agentFile
	var err error
	if path != "" {
		f, err = readAgentFile(path, explicit || tunnel == nil)
	}
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("config check: no configuration file at %s (give -config FILE)", path)
		}
		return err
	}
	var b strings.Builder
	if f != nil {
		fmt.Fprintf(&b, "%s: ok\n", f.path)
		if f.authtoken != "" {
			b.WriteString("authtoken: set\n")
		}
		if len(f.servers) > 0 {
			fmt.Fprintf(&b, "servers: %s\n", strings.Join(f.servers, ", "))
		}
		if f.ca != "" {
			fmt.Fprintf(&b, "ca: %s\n", f.ca)
		}
		if f.inspectAddr != "" {
			fmt.Fprintf(&b, "agent API: %s\n", f.inspectAddr)
		} else {
			fmt.Fprintf(&b, "agent API: %s (or the next free port up to 4049)\n", defaultInspectAddr)
		}
		if f.inspect != nil && !*f.inspect {
			b.WriteString("inspector: off (requests are not captured)\n")
		}
		for i := range f.endpoints {
			writeEndpoint(&b, &f.endpoints[i])
		}
	}
	if tunnel != nil {
		e := tunnel.endpoint()
		writeEndpoint(&b, &e)
	}
	_, err = io.WriteString(stdout, b.String())
	return err
}

// writeEndpoint says what an endpoint is, as config check prints it, its
// traffic policy indented below.
func writeEndpoint(b *strings.Builder, e *agentEndpoint) {
	fmt.Fprintf(b, "endpoint %s: %s -> %s\n", e.name, e.publicForm(), e.target.String())
	if e.pooling {
		b.WriteString("  pooling enabled\n")
	}
	if len(e.bindings) > 0 {
		fmt.Fprintf(b, "  bindings: %s\n", strings.Join(e.bindings, ", "))
	}
	if e.policy != "" {
		var out bytes.Buffer
		if json.Indent(&out, []byte(e.policy), "  ", "  ") != nil {
			out.Reset()
			out.WriteString(e.policy)
		}
		fmt.Fprintf(b, "  traffic policy:\n  %s\n", out.String())
	}
}

// mappingValue returns the value of key in the mapping m, nil when m
// does not have it.
func mappingValue(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return deref(m.Content[i+1])
		}
	}
	return nil
}

// setMappingValue sets key's value in the mapping m: in place when m has
// the key (its comments kept), else as a new key at the end.
func setMappingValue(m *yaml.Node, key string, v *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			old := m.Content[i+1]
			v.HeadComment, v.LineComment, v.FootComment = old.HeadComment, old.LineComment, old.FootComment
			m.Content[i+1] = v
			return
		}
	}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, v)
}

// editAgentFile applies edit to the agent: mapping of the configuration
// file at path (made when missing, with version: 1) and, when edit
// changed it, writes the file back: to a temporary file of mode 0600
// beside it, renamed over it (a symbolic link is followed); its
// directory is made with mode 0700 when missing. It says whether it
// wrote.
func editAgentFile(path string, edit func(agent *yaml.Node) (bool, error)) (bool, error) {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	var doc yaml.Node
	data, err := readBounded(path, maxAgentConfigBytes)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return false, err
	default:
		if err := yaml.Unmarshal(data, &doc); err != nil {
			return false, fmt.Errorf("%s: not valid YAML: %s; fix it first (edgeplane agent config check)", path, strings.TrimPrefix(err.Error(), "yaml: "))
		}
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		doc = yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{
			{Kind: yaml.ScalarNode, Tag: "!!str", Value: "version"}, {Kind: yaml.ScalarNode, Tag: "!!int", Value: "1"},
		}}}}
	}
	root := deref(doc.Content[0])
	if root.Kind != yaml.MappingNode {
		return false, fmt.Errorf("%s: not a mapping of keys (version: 1, agent: ...); fix it first (edgeplane agent config check)", path)
	}
	agent := mappingValue(root, "agent")
	switch {
	case agent == nil || isNull(agent):
		agent = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		setMappingValue(root, "agent", agent)
	case agent.Kind != yaml.MappingNode:
		return false, fmt.Errorf("%s: agent is not a mapping of keys; fix it first (edgeplane agent config check)", path)
	}
	changed, err := edit(agent)
	if err != nil || !changed {
		return false, err
	}
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return false, fmt.Errorf("%s: %w", path, err)
	}
	if err := enc.Close(); err != nil {
		return false, fmt.Errorf("%s: %w", path, err)
	}
	if out.Len() > maxAgentConfigBytes {
		return false, fmt.Errorf("%s: the file would be larger than %d bytes, the most allowed", path, maxAgentConfigBytes)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return false, err
	}
	return true, writeFileAtomic(path, out.Bytes(), 0o600) // through a temporary file, renamed

}
