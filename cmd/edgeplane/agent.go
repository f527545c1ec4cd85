package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.ngrok.com/ngrok"

	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/internal/batchconn"
	"github.com/edgeplane/edgeplane/internal/bulkcopy"
)

// The agent is built on golang.ngrok.com/ngrok, the original service's
// agent SDK: a program built on that SDK works against our tunnel server
// unchanged, and ours goes through the same code (session, reconnects,
// Bind and StartTunnelWithLabel, proxied streams).

// agentAbout is what agent -h says besides its flags.
const agentAbout = `Connects to a tunnel server of -server as an agent, starts one tunnel
(or, with start, the endpoints of its configuration file) and forwards
every connection it is handed to the target: a bare PORT is
127.0.0.1:PORT (for http, http://127.0.0.1:PORT); an http target may be an
http:// or https:// URL (scheme, host and port; an https target's
certificate is checked against the system's roots), a tcp or tls target
HOST:PORT. The bytes are relayed as they come: plain HTTP/1.1 for http,
the client's own TLS for tls (the target terminates it). The tunnel's
flags may come before or after its target.

The configuration file (-config; by default
$XDG_CONFIG_HOME/edgeplane/agent.yml, else ~/.config/edgeplane/agent.yml)
gives what a flag or its variable does not: agent.authtoken,
agent.servers, agent.ca, agent.inspect and agent.inspect_addr. A flag, or
its variable, wins. edgeplane agent config add-authtoken and add-server
write it; config check checks it. See docs/agent.md for its schema.

Once the tunnel is up its public URL is printed on stdout, on a line of
its own (a labeled tunnel has none: "ID labels K=V,..." instead; with
start, each line begins with the endpoint's name). Each connection is
logged on stderr with the client's address, bytes_in (from the client),
bytes_out (to it) and its duration. The authtoken is never printed. The
agent API answers on 127.0.0.1:4040 (the next free port up to 4049 when
it is taken; the log's "agent API" line names it): GET /api/tunnels,
/api/tunnels/NAME and /api/status, in the original agent's shapes, and
the inspector: the requests of http endpoints (/api/requests/http, and
a web page at /inspect/http that shows and replays them; -inspect=false
captures none).

-server is one tunnel server, or a comma-separated list of at most 16
edge nodes sharing one store (each HOST:PORT given once). The agent keeps
its session on one server; when the session fails (refused, reset,
heartbeat timeout) it reconnects to the next server of the list,
round-robin from the first, and its tunnel moves with it. Each server's
certificate is checked for the host the agent dialed. Several nodes may
instead stand behind one DNS name, with one A (or AAAA) record per node;
each connection attempt tries its addresses in turn. Each dial of a
server gives up after 10s.

Until its first session is up, an agent whose authtoken the server
refuses, or whose server's certificate does not verify, exits 1 at once
with what is wrong and what to do. A refused tunnel ends the command
with the server's message (exit 1). An unreachable server does not: the
agent logs each failure and retries for ever (backoff from 0.5s to
30s), and reconnects and rebinds the same way when its session drops,
whatever the reason. SIGINT or SIGTERM, or a stop request from the
server, closes the tunnel and exits 0.`

// agentTunnels are the agent's commands: its tunnels (name, target and
// what each is), then start and config.
var agentTunnels = [][3]string{
	{"http", "PORT|URL", "an HTTP endpoint on a reserved domain (-domain), or a labeled tunnel for tunnel group backends (-label)"},
	{"tcp", "PORT|HOST:PORT", "a TCP endpoint on a port the server picks or -remote-addr names"},
	{"tls", "PORT|HOST:PORT", "a TLS endpoint on a reserved domain (-domain), the client's TLS passed through to the target"},
	{"start", "NAME... | -all", "the endpoints of the configuration file named (or all of them) on one session"},
	{"config", "add-authtoken|add-server|check", "write the authtoken or a server into the configuration file, or check it"},
}

// isTunnel says whether name is one of the agent's tunnels (not start or
// config).
func isTunnel(name string) bool { return name == "http" || name == "tcp" || name == "tls" }

// agentHelp is agent's -h, or with proto its tunnel's (agent http -h).
func agentHelp(fs *flag.FlagSet, proto string) *commandHelp {
	h := &commandHelp{
		usage:   "edgeplane agent -server HOST:PORT -authtoken TOKEN [-ca FILE] [-config FILE] [-inspect-addr ADDR] TUNNEL TARGET [tunnel flags]",
		summary: "Connects to a tunnel server and forwards one tunnel (http, tcp or tls), or the configuration file's endpoints, to local targets.",
		about:   agentAbout,
		groups: []flagGroup{
			{"Agent (before the tunnel)", fs, []string{"server", "authtoken", "ca", "config", "connections"}},
			{"Agent API and logs", fs, []string{"inspect-addr", "inspect", "log-format"}},
		},
		flagEnv: fs,
		example: `EDGEPLANE_AUTHTOKEN=ept_... edgeplane agent -server tunnel.example.com:4443 http 3000 -domain app.example.com
edgeplane agent -server tunnel.example.com:4443 -authtoken ept_... tcp 22
edgeplane agent start -all`,
	}
	for _, t := range agentTunnels {
		switch {
		case proto == "":
			h.commands = append(h.commands, [2]string{t[0] + " " + t[1], t[2]})
			if !isTunnel(t[0]) {
				continue
			}
		case t[0] != proto:
			continue
		default:
			h.usage = "edgeplane agent -server HOST:PORT -authtoken TOKEN [agent flags] " + t[0] + " " + t[1] + " [flags]"
			h.summary = "Starts " + t[2] + "."
			h.about = "TARGET: " + targetForms(t[0]) + ". The tunnel's flags have no environment variables.\n\n" + policyAbout + "\n\nSee edgeplane agent -h for the agent's connection, retries and output."
			h.example = map[string]string{
				"http": "edgeplane agent -server tunnel.example.com:4443 -authtoken ept_... http 3000 -domain app.example.com\nedgeplane agent -server tunnel.example.com:4443 -authtoken ept_... http https://127.0.0.1:8443 -label app=web\nedgeplane agent http 3000 -domain app.example.com -basic-auth alice:s3cret -cidr-allow 203.0.113.0/24",
				"tcp":  "edgeplane agent -server tunnel.example.com:4443 -authtoken ept_... tcp 22 -cidr-allow 203.0.113.0/24",
				"tls":  "edgeplane agent -server tunnel.example.com:4443 -authtoken ept_... tls 8443 -domain app.example.com",
			}[t[0]]
		}
		var c agentConfig
		c.proto = t[0]
		h.groups = append(h.groups, flagGroup{"The " + t[0] + " tunnel (after " + t[0] + ")", tunnelFlags(&c), tunnelFlagOrder(t[0])})
	}
	return h
}

// policyAbout says how a tunnel's traffic policy is made.
const policyAbout = `Traffic policy: -traffic-policy-file (YAML or JSON) and the shortcuts
(-cidr-allow and -cidr-deny make a restrict-ips rule; for http,
-basic-auth a basic-auth rule, the password sent as a salted
PBKDF2-SHA256 hash, and -request-header-add and -response-header-add
add-headers rules) make one traffic policy document, sent with the bind;
the server compiles it, and refuses the tunnel with its errors. With a
file, the shortcuts' rules come first. A labeled tunnel has no policy of
its own: the edge's route has. edgeplane agent config check TUNNEL
TARGET [flags] prints the document without connecting.`

// tunnelFlagOrder is the order proto's tunnel help shows its flags in.
func tunnelFlagOrder(proto string) []string {
	policyFlags := []string{"traffic-policy-file", "cidr-allow", "cidr-deny"}
	switch proto {
	case "http":
		return append(append([]string{"domain", "scheme", "label", "pooling-enabled", "metadata"}, policyFlags...), "basic-auth", "request-header-add", "response-header-add")
	case "tcp":
		return append([]string{"remote-addr", "pooling-enabled", "metadata"}, policyFlags...)
	}
	return append([]string{"domain", "pooling-enabled", "metadata"}, policyFlags...)
}

// agentDialTimeout bounds connecting to the target for one connection.
const agentDialTimeout = 10 * time.Second

// agentServerDialTimeout bounds connecting to a tunnel server, so that a
// node that drops connection attempts costs one reconnect rather than
// the system's connect timeout (minutes). A DNS name's addresses share
// it, each tried in turn.
const agentServerDialTimeout = 10 * time.Second

// maxAgentServers bounds -server's list.
const maxAgentServers = 16

// agentConfig is what agent's command line says, with what the
// configuration file gives where it says nothing.
type agentConfig struct {
	server, ca, authtoken, logFormat string
	servers                          []agentServer // -server's list, in order

	// configFile is -config: the configuration file ("": the default
	// path, if it exists).
	configFile string
	// inspectAddr is -inspect-addr: the agent API's address; "" for the
	// default (127.0.0.1:4040, else the next free port up to 4049),
	// "off" for none.
	inspectAddr string
	// inspect is -inspect: whether the requests of http endpoints are
	// captured for the inspector (unset: agent.inspect, else true).
	inspect optBool
	// connections is -connections: how many sessions the agent opens,
	// each binding every endpoint with pooling enabled (0: unset,
	// agent.connections, else 1).
	connections int
	// fromFile says which of authtoken, server, ca and inspect_addr the
	// configuration file gave: "agent.authtoken in FILE", ...
	fromFile map[string]string

	proto      string // "http", "tcp" or "tls"
	target     agentTarget
	domain     string
	scheme     string // the public scheme of an http endpoint: "https" ("" too) or "http"
	labels     map[string]string
	remoteAddr string
	metadata   string
	pooling    bool // -pooling-enabled

	// policyFile is -traffic-policy-file, shortcuts the flags that make
	// rules; policy is the document both make (JSON, "" for none).
	policyFile string
	shortcuts  policyShortcuts
	policy     string
}

// optBool is a boolean flag that knows whether it was given.
type optBool struct{ set, v bool }

func (b *optBool) String() string {
	if b == nil || !b.set {
		return ""
	}
	return strconv.FormatBool(b.v)
}

func (b *optBool) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return errors.New("want true or false")
	}
	b.set, b.v = true, v
	return nil
}

func (b *optBool) IsBoolFlag() bool { return true }

// or returns the value, def when unset.
func (b optBool) or(def bool) bool {
	if !b.set {
		return def
	}
	return b.v
}

// agentTarget is where an agent forwards its tunnel's connections.
type agentTarget struct {
	// scheme is "http" or "https" for an http tunnel, "" for tcp and tls
	// (the bytes are relayed as they are).
	scheme string
	// addr is the host:port dialed.
	addr string
}

// String returns the target as its tunnel's ForwardsTo shows it:
// "http://127.0.0.1:3000", "127.0.0.1:22".
func (t agentTarget) String() string {
	if t.scheme == "" {
		return t.addr
	}
	return t.scheme + "://" + t.addr
}

func agentFlags(c *agentConfig) *flag.FlagSet {
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	fs.StringVar(&c.server, "server", "", "HOST:PORT of the tunnel server, or a comma-separated list of at most 16 (required, here or as agent.servers in the configuration file)")
	fs.StringVar(&c.ca, "ca", "", "PEM `file` of the roots that may sign the server's certificate (default: agent.ca of the configuration file, else the system's roots)")
	fs.StringVar(&c.authtoken, "authtoken", "", "the authtoken of a tunnel credential (required, here or as agent.authtoken in the configuration file; better set as EDGEPLANE_AUTHTOKEN)")
	fs.StringVar(&c.configFile, "config", "", "the configuration `file` (default $XDG_CONFIG_HOME/edgeplane/agent.yml, else ~/.config/edgeplane/agent.yml, when it exists)")
	fs.StringVar(&c.inspectAddr, "inspect-addr", "", "the agent API's loopback `HOST:PORT`, or off (default 127.0.0.1:4040, else the next free port up to 4049)")
	fs.Var(&c.inspect, "inspect", "capture the requests of http endpoints for the inspector at the agent API's /inspect/http (default true; agent.inspect in the configuration file)")
	fs.StringVar(&c.logFormat, "log-format", "text", "log format: text or json")
	fs.IntVar(&c.connections, "connections", 0, "open `N` connections (sessions) to the tunnel servers, each serving every endpoint with pooling enabled, so that one broken connection loses no endpoint; 1 to "+strconv.Itoa(maxAgentConnections)+" (default agent.connections in the configuration file, else 1)")
	fs.Usage = func() { agentHelp(fs, "").write(fs.Output()) }
	return fs
}

// tunnelFlags returns the flags of c.proto's tunnel.
func tunnelFlags(c *agentConfig) *flag.FlagSet {
	fs := flag.NewFlagSet(c.proto, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	repeat := func(list *[]string) func(string) error {
		return func(s string) error { *list = append(*list, s); return nil }
	}
	switch c.proto {
	case "http":
		fs.StringVar(&c.domain, "domain", "", "the endpoint's `name`: a reserved domain of the credential's account, or a name one of its wildcard domains covers; without it (and without -label) the server gives the endpoint a name of its own when its operator set -agent-domain-base, and refuses the bind otherwise")
		fs.StringVar(&c.scheme, "scheme", "", "the endpoint's public scheme, https (the proxy's TLS listener, the reserved domain's certificate) or http (its plain listener) (default https)")
		fs.Func("label", "start a labeled tunnel with the label `KEY=VALUE`, which tunnel group backends select, instead of an endpoint; repeatable; not with -domain", func(s string) error {
			k, v, ok := strings.Cut(s, "=")
			if !ok {
				return fmt.Errorf("%q is not KEY=VALUE", s)
			}
			if _, dup := c.labels[k]; dup {
				return fmt.Errorf("the key %q is given twice", k)
			}
			if c.labels == nil {
				c.labels = map[string]string{}
			}
			c.labels[k] = v
			return nil
		})
		fs.Func("basic-auth", "require HTTP Basic authentication as `USER:PASSWORD` (a basic-auth rule; the password is sent hashed); repeatable, one user each", repeat(&c.shortcuts.basicAuth))
		fs.Func("request-header-add", "add the header `Name: value` to each request sent to the target (an add-headers rule); repeatable", repeat(&c.shortcuts.requestHeaders))
		fs.Func("response-header-add", "add the header `Name: value` to each response sent to the client; repeatable", repeat(&c.shortcuts.responseHeaders))
	case "tcp":
		fs.StringVar(&c.remoteAddr, "remote-addr", "", "the public `HOST:PORT` asked for, a port within the server's TCP ports (default: the server picks)")
	case "tls":
		fs.StringVar(&c.domain, "domain", "", "the `name` clients' TLS asks for (SNI): a reserved domain of the credential's account, or a name one of its wildcard domains covers (required)")
	}
	fs.BoolVar(&c.pooling, "pooling-enabled", false, "bind the endpoint with pooling enabled: endpoints of the account bound so on one URL form a pool, and the edges spread its connections over them (not with -label)")
	fs.StringVar(&c.metadata, "metadata", "", "the tunnel's metadata, at most 4096 bytes of `text`")
	fs.StringVar(&c.policyFile, "traffic-policy-file", "", "the tunnel's traffic policy, a YAML or JSON `file` (at most 1 MiB) the server compiles")
	fs.Func("cidr-allow", "admit only clients from `CIDR` (10.0.0.0/8, or an address; a restrict-ips rule); repeatable", repeat(&c.shortcuts.cidrAllow))
	fs.Func("cidr-deny", "refuse clients from `CIDR`; repeatable", repeat(&c.shortcuts.cidrDeny))
	return fs
}

// parseAgentFlags parses the agent's flags, those before its command
// (a tunnel, start or config), and their variables. It returns the
// rest: the command and what follows it.
func parseAgentFlags(args []string, getenv func(string) string, stdout io.Writer) (agentConfig, *flag.FlagSet, []string, error) {
	var c agentConfig
	// The agent's flags end at the command's name: parse once to find it,
	// then again through parseFlags for the variables and -h.
	split := agentFlags(new(agentConfig))
	split.SetOutput(io.Discard)
	global, rest := args, []string(nil)
	if split.Parse(args) == nil {
		rest = split.Args()
		global = args[:len(args)-len(rest)]
	}
	fs := agentFlags(&c)
	if err := parseFlags(fs, global, getenv, stdout); err != nil {
		return c, fs, nil, err
	}
	return c, fs, rest, nil
}

// parseAgentArgs parses agent's command line for a tunnel: the agent's
// flags (and their variables), then the tunnel, its target and its
// flags; the configuration file gives the agent's settings no flag or
// variable does.
func parseAgentArgs(args []string, getenv func(string) string, stdout io.Writer) (agentConfig, error) {
	c, fs, rest, err := parseAgentFlags(args, getenv, stdout)
	if err != nil {
		return c, err
	}
	// The tunnel is read before the agent's flags are checked, so that
	// agent http -h helps whatever else the command line lacks.
	tunnelErr := parseTunnel(&c, fs, rest, stdout)
	if _, ok := tunnelErr.(errHelp); ok {
		return c, tunnelErr
	}
	if _, err := c.useFile(getenv); err != nil {
		return c, err
	}
	if err := c.checkAgent(); err != nil {
		return c, err
	}
	if tunnelErr != nil {
		return c, tunnelErr
	}
	return c, c.checkTunnel()
}

// useFile reads the configuration file (-config, else the default path
// when it exists) and takes from it what the flags and variables leave
// unset. It returns the file, nil when there is none.
func (c *agentConfig) useFile(getenv func(string) string) (*agentFile, error) {
	path, required := c.configFile, true
	if path == "" {
		path, required = defaultAgentConfigPath(getenv), false
	}
	if path == "" {
		return nil, nil
	}
	f, err := readAgentFile(path, required)
	if err != nil || f == nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("-config %s: the file does not exist (edgeplane agent config add-authtoken makes one)", path)
		}
		return nil, err
	}
	from := func(key string) string { return "agent." + key + " in " + f.path }
	c.fromFile = map[string]string{}
	if c.authtoken == "" && f.authtoken != "" {
		c.authtoken, c.fromFile["authtoken"] = f.authtoken, from("authtoken")
	}
	if c.server == "" && len(f.servers) > 0 {
		c.server, c.fromFile["server"] = strings.Join(f.servers, ","), from("servers")
	}
	if c.ca == "" && f.ca != "" {
		c.ca, c.fromFile["ca"] = f.ca, from("ca")
	}
	if c.inspectAddr == "" && f.inspectAddr != "" {
		c.inspectAddr, c.fromFile["inspect_addr"] = f.inspectAddr, from("inspect_addr")
	}
	if c.connections == 0 && f.connections != 0 {
		c.connections, c.fromFile["connections"] = f.connections, from("connections")
	}
	if !c.inspect.set && f.inspect != nil {
		c.inspect = optBool{set: true, v: *f.inspect}
	}
	if len(c.fromFile) == 0 {
		c.fromFile = nil
	}
	return f, nil
}

// parseTunnel parses the tunnel's part of agent's command line, rest:
// its name, its flags and its target. fs holds the agent's flags.
func parseTunnel(c *agentConfig, fs *flag.FlagSet, rest []string, stdout io.Writer) error {
	if len(rest) == 0 {
		return usageError{"which tunnel? http, tcp or tls, or start or config (edgeplane agent -h)"}
	}
	c.proto = rest[0]
	switch c.proto {
	case "http", "tcp", "tls":
	default:
		return usageError{fmt.Sprintf("unknown tunnel %q: want http, tcp or tls (or start, config)", c.proto)}
	}
	tfs := tunnelFlags(c)
	positional, err := parseInterleaved(tfs, rest[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			agentHelp(fs, c.proto).write(stdout)
			return errHelp{}
		}
		if name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -"); ok && fs.Lookup(name) != nil {
			return usageError{fmt.Sprintf("%s: -%s is the agent's flag: give it before the tunnel (edgeplane agent -%s ... %s ...)", c.proto, name, name, c.proto)}
		}
		return usageError{c.proto + ": " + err.Error()}
	}
	switch len(positional) {
	case 0:
		return usageError{fmt.Sprintf("%s: which target? %s", c.proto, targetForms(c.proto))}
	case 1:
	default:
		return usageError{fmt.Sprintf("%s: one target, got %d: %s", c.proto, len(positional), strings.Join(positional, " "))}
	}
	c.target, err = parseTarget(c.proto, positional[0])
	return err
}

// parseInterleaved parses args into fs, flags and positional arguments in
// any order, and returns the positional ones.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for more := args; ; {
		if err := fs.Parse(more); err != nil {
			return nil, err
		}
		if more = fs.Args(); len(more) == 0 {
			return positional, nil
		}
		positional, more = append(positional, more[0]), more[1:]
	}
}

// checkAgent checks the agent's flags, with what the configuration file
// gave.
func (c *agentConfig) checkAgent() error {
	if c.server == "" {
		return usageError{"-server is required: HOST:PORT of the tunnel server (or agent.servers in the configuration file: edgeplane agent config add-server HOST:PORT)"}
	}
	servers, err := parseServers(c.server)
	if err != nil {
		return err
	}
	c.servers = servers
	if c.connections < 0 || c.connections > maxAgentConnections {
		return usageError{fmt.Sprintf("-connections %d: want 1 to %d", c.connections, maxAgentConnections)}
	}
	if c.authtoken == "" {
		return usageError{"-authtoken is required (or EDGEPLANE_AUTHTOKEN, or agent.authtoken in the configuration file: edgeplane agent config add-authtoken TOKEN): the authtoken of a tunnel credential"}
	}
	switch c.logFormat {
	case "text", "json":
	default:
		return usageError{fmt.Sprintf("-log-format %q: want text or json", c.logFormat)}
	}
	if c.inspectAddr != "" && c.inspectAddr != "off" {
		if err := checkInspectAddr(c.inspectAddr); err != nil {
			return usageError{fmt.Sprintf("-inspect-addr %q: %v, or off", c.inspectAddr, err)}
		}
	}
	return nil
}

// checkTunnel checks the tunnel's flags against each other and their
// bounds, and makes its traffic policy.
func (c *agentConfig) checkTunnel() error {
	if c.pooling && len(c.labels) > 0 {
		return usageError{"-pooling-enabled and -label: a labeled tunnel is not pooled (the tunnel group backend that selects it spreads connections already)"}
	}
	if c.domain != "" && len(c.labels) > 0 {
		return usageError{"-domain and -label: give one or the other: -domain binds an endpoint, -label starts a labeled tunnel"}
	}
	if c.scheme != "" && c.scheme != "https" && c.scheme != "http" {
		return usageError{fmt.Sprintf("-scheme %q: want https (the endpoint is served on the proxy's TLS listener) or http (on its plain one)", c.scheme)}
	}
	if c.scheme == "http" && len(c.labels) > 0 {
		return usageError{"-scheme and -label: a labeled tunnel has no scheme of its own: its edge's is used"}
	}
	if c.proto == "tls" && c.domain == "" {
		return usageError{"tls: -domain is required: the server name its clients' TLS asks for"}
	}
	if c.domain != "" {
		name, err := domains.ParseName(c.domain)
		if err != nil {
			return usageError{fmt.Sprintf("-domain %q: %v", c.domain, err)}
		}
		c.domain = name
	}
	if c.labels != nil {
		if err := backends.ValidateLabels(c.labels); err != nil {
			var e *apierr.Error
			if errors.As(err, &e) && len(e.Violations) > 0 {
				reasons := make([]string, len(e.Violations))
				for i, v := range e.Violations {
					reasons[i] = v.String()
				}
				return usageError{"-label: " + strings.Join(reasons, "; ")}
			}
			return usageError{"-label: " + err.Error()}
		}
	}
	if c.remoteAddr != "" {
		if _, err := checkHostPort(c.remoteAddr); err != nil {
			return usageError{fmt.Sprintf("-remote-addr %q: %v", c.remoteAddr, err)}
		}
	}
	switch {
	case len(c.metadata) > agents.MaxMetadataBytes:
		return usageError{fmt.Sprintf("-metadata: must be at most %d bytes, got %d", agents.MaxMetadataBytes, len(c.metadata))}
	case !utf8.ValidString(c.metadata):
		return usageError{"-metadata: must be valid UTF-8"}
	}
	if len(c.labels) > 0 && (c.policyFile != "" || !c.shortcuts.empty()) {
		return usageError{"-label: a labeled tunnel carries no traffic policy (-traffic-policy-file, -basic-auth, -cidr-allow, ...): the edge's route that selects it has one"}
	}
	var doc string
	if c.policyFile != "" {
		var err error
		if doc, err = readPolicyFile(c.policyFile); err != nil {
			return err
		}
	}
	policy, err := tunnelPolicy(c.proto, doc, c.shortcuts, cryptoRand)
	if err != nil {
		return err
	}
	c.policy = policy
	return nil
}

// endpoint returns the endpoint c's tunnel binds, named command_line.
func (c *agentConfig) endpoint() agentEndpoint {
	e := agentEndpoint{name: commandLineName, proto: c.proto, domain: c.domain, remoteAddr: c.remoteAddr,
		labels: c.labels, target: c.target, metadata: c.metadata, policy: c.policy, pooling: c.pooling}
	if c.proto == "http" && len(c.labels) == 0 {
		e.scheme = "https"
		if c.scheme == "http" {
			e.scheme = "http"
		}
	}
	return e
}

// agentServer is a tunnel server of -server.
type agentServer struct {
	addr string // HOST:PORT, dialed
	host string // its host: the name (or IP address) its certificate is checked for
}

// parseServers parses -server's value: one HOST:PORT, or a comma-separated
// list of at most maxAgentServers, each given once (spaces around an
// entry are ignored). An error names the entry and the rule.
func parseServers(s string) ([]agentServer, error) {
	entries := strings.Split(s, ",")
	if len(entries) > maxAgentServers {
		return nil, usageError{fmt.Sprintf("-server: must have at most %d servers, got %d", maxAgentServers, len(entries))}
	}
	servers := make([]agentServer, 0, len(entries))
	seen := make(map[string]int, len(entries)) // the entry (from 1) of each server
	for i, e := range entries {
		name := fmt.Sprintf("-server %q", s) // as a single server always read
		if len(entries) > 1 {
			e = strings.TrimSpace(e)
			name = fmt.Sprintf("-server entry %d %q", i+1, e)
		}
		host, err := checkHostPort(e)
		if err != nil {
			return nil, usageError{fmt.Sprintf("%s: %v", name, err)}
		}
		key := serverKey(host, e)
		if first, dup := seen[key]; dup {
			return nil, usageError{fmt.Sprintf("%s: the same server as entry %d: give each server once", name, first)}
		}
		seen[key] = i + 1
		servers = append(servers, agentServer{addr: e, host: host})
	}
	return servers, nil
}

// serverKey returns what two entries of -server that name the same
// server have in common: the host in lower case (an IP address in its
// canonical form) and the port's number.
func serverKey(host, hostport string) string {
	_, port, _ := net.SplitHostPort(hostport)
	n, _ := strconv.Atoi(port)
	if ip := net.ParseIP(host); ip != nil {
		host = ip.String()
	}
	return net.JoinHostPort(strings.ToLower(host), strconv.Itoa(n))
}

// serverRing picks the tunnel server of each connection attempt of an
// agent's session, round-robin from the first. The SDK makes an attempt
// at the start, then after each failed attempt and after each session's
// end, never while a session lives: so the agent stays on a server while
// its session lives, and a dead server costs one attempt.
//
// It works through two hooks the SDK calls for each attempt, in this
// order and from one goroutine (ngrok-go v1.12.1, session.go, Connect's
// rawDialer, which builds a new tls.Config for each attempt): the TLS
// configuration callback (configureTLS), which picks the server and sets
// the TLS server name to its host, then the dialer (DialContext), which
// dials that server whatever address the SDK passes. The certificate is
// then checked against the roots (-ca or the system's) for the host
// actually dialed, as Go's own verification would, by the ring, which so
// knows which attempt failed for its certificate: a failure the agent
// reports at once rather than retry (verifyServerCert).
//
// Its methods are safe for concurrent use.
type serverRing struct {
	servers []agentServer

	mu       sync.Mutex
	picked   int          // attempts picked
	pending  *agentServer // picked for the attempt under way, not yet dialed
	reported int          // attempts whose end was reported
	// certErr is why the certificate of attempt certAttempt did not
	// verify.
	certErr     error
	certAttempt int
}

// configureTLS is the SDK's TLS configuration callback (WithTLSConfig):
// it picks the server of the attempt about to be made, and has its
// certificate checked for that server's host. (The SDK would check the
// text before the first ':' of WithServer's address: another server's
// name, and "[" for an IPv6 address.)
func (r *serverRing) configureTLS(tc *tls.Config) {
	r.mu.Lock()
	defer r.mu.Unlock()
	attempt := r.picked
	s := r.servers[attempt%len(r.servers)]
	r.picked++
	r.pending = &s
	tc.ServerName = s.host
	// The chain is verified below, as crypto/tls does (the same roots,
	// the same name), so that a failure is known for one: crypto/tls's
	// own check is skipped, never the check.
	roots := tc.RootCAs
	tc.InsecureSkipVerify = true
	tc.VerifyConnection = func(cs tls.ConnectionState) error {
		err := verifyServerCert(cs, roots, s.host)
		if err != nil {
			r.mu.Lock()
			r.certErr, r.certAttempt = err, attempt
			r.mu.Unlock()
		}
		return err
	}
}

// verifyServerCert checks the certificate chain a tunnel server
// presented against roots (nil: the system's), for host, as crypto/tls
// does for a client.
func verifyServerCert(cs tls.ConnectionState, roots *x509.CertPool, host string) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("tls: the server presented no certificate")
	}
	opts := x509.VerifyOptions{Roots: roots, DNSName: host, Intermediates: x509.NewCertPool()}
	for _, c := range cs.PeerCertificates[1:] {
		opts.Intermediates.AddCert(c)
	}
	if _, err := cs.PeerCertificates[0].Verify(opts); err != nil {
		return &tls.CertificateVerificationError{UnverifiedCertificates: cs.PeerCertificates, Err: err}
	}
	return nil
}

// DialContext connects to the server configureTLS picked for this
// attempt; the address the SDK passes (WithServer's) is ignored. Without
// a pick it fails: the certificate would be checked for an unknown name.
func (r *serverRing) DialContext(ctx context.Context, network, _ string) (net.Conn, error) {
	r.mu.Lock()
	s := r.pending
	r.pending = nil
	r.mu.Unlock()
	if s == nil {
		return nil, errors.New("no tunnel server picked for this connection attempt")
	}
	ctx, cancel := context.WithTimeout(ctx, agentServerDialTimeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, network, s.addr)
	if err != nil {
		return nil, &serverDialError{addr: s.addr, err: err}
	}
	// Batched writes and buffered reads under the SDK's TLS: a few
	// system calls for a frame's many records (package batchconn).
	return batchconn.New(conn), nil
}

// serverDialError is a tunnel server that could not be reached. The SDK
// wraps it in words of its own service ("failed to dial ngrok server
// ..."): agentError says it in ours.
type serverDialError struct {
	addr string
	err  error
}

func (e *serverDialError) Error() string {
	return fmt.Sprintf("cannot reach the tunnel server %s: %v", e.addr, e.err)
}

func (e *serverDialError) Unwrap() error { return e.err }

// sdkError is an error of the SDK, said in the agent's words
// (agentError).
type sdkError struct{ err error }

func (e sdkError) Error() string { return agentError(e.err) }
func (e sdkError) Unwrap() error { return e.err }

// agentError returns the text of err, an error of the SDK, in the
// agent's words: a server that could not be reached is named as a tunnel
// server (not the SDK's "ngrok server"), and an error the server sent is
// its message and code, without the original service's documentation
// link the SDK appends.
//
// It is one line: the protocol's errors end in "\n\nERR_SERVICE_NNN",
// which the SDK leaves in the message.
func agentError(err error) string {
	var de *serverDialError
	if errors.As(err, &de) {
		return oneLine(de.Error())
	}
	var nerr ngrok.Error
	if errors.As(err, &nerr) {
		if msg, code := serverMessage(nerr); msg != "" {
			return withCode(msg, code)
		}
	}
	return oneLine(err.Error())
}

// errorCodeLine matches a line that is an error code of the protocol:
// ERR_SERVICE_105, or the original service's ERR_NGROK_105.
var errorCodeLine = regexp.MustCompile(`^ERR_[A-Z]+_[0-9]+$`)

// serverMessage returns the message and the code of an error the server
// sent ("message\n\nERR_SERVICE_105"), the message on one line.
func serverMessage(nerr ngrok.Error) (msg, code string) {
	code = nerr.ErrorCode() // the original service's codes only
	var parts []string
	for _, l := range strings.Split(nerr.Msg(), "\n") {
		switch l = strings.TrimSpace(l); {
		case l == "":
		case errorCodeLine.MatchString(l):
			if code == "" {
				code = l
			}
		default:
			parts = append(parts, oneLine(l))
		}
	}
	return strings.Join(parts, "; "), code
}

// withCode says a message and its code: "message (ERR_SERVICE_105)".
func withCode(msg, code string) string {
	if code == "" {
		return msg
	}
	return msg + " (" + code + ")"
}

// oneLine returns s on one line, its runs of white space (new lines
// included) as one space.
func oneLine(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	return strings.Join(strings.Fields(s), " ")
}

// Dial is DialContext without a context (the SDK's Dialer has both).
func (r *serverRing) Dial(network, addr string) (net.Conn, error) {
	return r.DialContext(context.Background(), network, addr)
}

// report returns the server of the attempt a state change of the SDK is
// about and, after a failure, the server of the next attempt. The SDK
// reports each attempt's outcome in order, on one goroutine (its connect
// and disconnect handlers): a session connected (failed false), or a
// failure, which ends the attempt: a failed dial, handshake,
// authentication or rebind, or a connected session's end. certErr is why
// the failed attempt's server certificate did not verify, if it did not.
func (r *serverRing) report(failed bool) (server, next agentServer, certErr error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	server = r.servers[r.reported%len(r.servers)]
	if failed {
		if r.certErr != nil && r.certAttempt == r.reported {
			certErr = r.certErr
		}
		r.reported++
	}
	return server, r.servers[r.reported%len(r.servers)], certErr
}

// targetForms says what targets proto's tunnel takes.
func targetForms(proto string) string {
	if proto == "http" {
		return "want a PORT (3000) or an http:// or https:// URL (http://127.0.0.1:3000)"
	}
	return "want a PORT (22) or HOST:PORT (127.0.0.1:22)"
}

// parseTarget parses proto's target: a bare port means 127.0.0.1; an
// http tunnel's target may be an http or https URL of scheme, host and
// port, a tcp or tls tunnel's target host:port.
func parseTarget(proto, s string) (agentTarget, error) {
	t, reason := targetOf(proto, s)
	if reason != "" {
		return agentTarget{}, usageError{fmt.Sprintf("%s target %q: %s", proto, s, reason)}
	}
	return t, nil
}

// targetOf is parseTarget's work: it returns the target, or what is
// wrong with s.
func targetOf(proto, s string) (agentTarget, string) {
	bad := func(reason string) (agentTarget, string) { return agentTarget{}, reason }
	var t agentTarget
	if proto == "http" {
		t.scheme = "http"
	}
	switch {
	case s != "" && strings.Trim(s, "0123456789") == "":
		if err := checkPort(s); err != nil {
			return bad(err.Error())
		}
		t.addr = net.JoinHostPort("127.0.0.1", s)
	case proto == "http":
		if !strings.Contains(s, "://") {
			return bad(targetForms(proto))
		}
		u, err := url.Parse(s)
		if err != nil {
			return bad(targetForms(proto))
		}
		t.scheme = strings.ToLower(u.Scheme)
		switch {
		case t.scheme != "http" && t.scheme != "https":
			return bad("the scheme must be http or https")
		case u.Hostname() == "":
			return bad("the URL has no host")
		case u.User != nil:
			return bad("the URL must not carry a user or password")
		case u.Path != "" && u.Path != "/" || u.RawQuery != "" || u.Fragment != "":
			return bad("give scheme, host and port only: the path is the client's request's")
		}
		port := u.Port()
		if port == "" {
			port = map[string]string{"http": "80", "https": "443"}[t.scheme]
		} else if err := checkPort(port); err != nil {
			return bad(err.Error())
		}
		t.addr = net.JoinHostPort(u.Hostname(), port)
	default:
		if _, err := checkHostPort(s); err != nil {
			return bad(targetForms(proto) + ": " + err.Error())
		}
		t.addr = s
	}
	if n := len(t.String()); n > agents.MaxForwardsToBytes {
		return bad(fmt.Sprintf("must be at most %d bytes, got %d", agents.MaxForwardsToBytes, n))
	}
	return t, ""
}

// checkHostPort checks that s is HOST:PORT with a host and a port from 1
// to 65535, and returns the host.
func checkHostPort(s string) (string, error) {
	host, port, err := net.SplitHostPort(s)
	switch {
	case err != nil:
		return "", errors.New("want HOST:PORT")
	case host == "":
		return "", errors.New("want HOST:PORT: the host is missing")
	}
	return host, checkPort(port)
}

// checkPort checks that s is a decimal port from 1 to 65535.
func checkPort(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || strings.Trim(s, "0123456789") != "" || n < 1 || n > 65535 {
		return fmt.Errorf("the port must be a number from 1 to 65535, not %q", s)
	}
	return nil
}

// forwardConn relays conn, a connection the tunnel was handed, to
// target, and logs it. A target that cannot be reached is answered with
// a 502 on an HTTP connection, and closed on others.
func forwardConn(ctx context.Context, conn net.Conn, target agentTarget, logger *slog.Logger) {
	forwardInspected(ctx, conn, target, logger, nil, "")
}

// forwardInspected is forwardConn that, when ins is not nil, captures
// the HTTP requests of an http or https connection (not a TLS
// passthrough) as requests of the endpoint named tunnel.
func forwardInspected(ctx context.Context, conn net.Conn, target agentTarget, logger *slog.Logger, ins *inspector, tunnel string) {
	start := time.Now()
	client := conn.RemoteAddr().String()
	proto, passthrough := "", false
	if nc, ok := conn.(ngrok.Conn); ok {
		proto, passthrough = nc.Proto(), nc.PassthroughTLS()
	}
	dctx, cancel := context.WithTimeout(ctx, agentDialTimeout)
	up, err := (&net.Dialer{}).DialContext(dctx, "tcp", target.addr)
	cancel()
	if err != nil {
		if (proto == "http" || proto == "https") && !passthrough {
			_ = writeBadGateway(conn)
		}
		conn.Close()
		logger.LogAttrs(context.Background(), slog.LevelWarn, "target unreachable", slog.String("client", client),
			slog.String("target", target.String()), slog.String("err", err.Error()))
		return
	}
	if target.scheme == "https" && !passthrough {
		host, _, _ := net.SplitHostPort(target.addr)
		up = tls.Client(up, &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12})
	}
	var tap *connTap
	if (proto == "http" || proto == "https") && !passthrough {
		tap = ins.tap(tunnel, client, target)
	}
	in, out := splice(conn, up, tap)
	if logger.Enabled(context.Background(), slog.LevelInfo) {
		attrs := []slog.Attr{slog.String("client", client)}
		if proto != "" {
			attrs = append(attrs, slog.String("proto", proto))
		}
		attrs = append(attrs, slog.Int64("bytes_in", in), slog.Int64("bytes_out", out), slog.Duration("duration", time.Since(start)))
		logger.LogAttrs(context.Background(), slog.LevelInfo, "connection", attrs...)
	}
}

// writeBadGateway answers an HTTP request with a 502.
func writeBadGateway(w io.Writer) error {
	const body = "edgeplane agent: the tunnel's target does not answer\n"
	_, err := io.WriteString(w, "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: "+
		strconv.Itoa(len(body))+"\r\nConnection: close\r\n\r\n"+body)
	return err
}

// splice copies bytes both ways between client (a tunnel's connection)
// and up until both directions end, closes both, and returns the bytes
// written to up (in) and to client (out). The client's EOF half-closes
// up; up's EOF closes client entirely, since the SDK's connection has no
// CloseWrite (so a client's bytes sent after the target has half-closed
// are lost, which HTTP never does). With a tap, each direction's bytes
// are also written to it after their destination, and it is closed when
// the direction ends.
func splice(client, up net.Conn, tap *connTap) (in, out int64) {
	toUp, toClient := io.Writer(up), io.Writer(client)
	if tap != nil {
		toUp, toClient = &tee{w: up, tap: tap.req}, &tee{w: client, tap: tap.resp}
	}
	inc := make(chan int64, 1)
	go func() {
		n, err := bulkcopy.Copy(toUp, client)
		if tap != nil {
			tap.req.Close()
		}
		cw, ok := up.(interface{ CloseWrite() error })
		if err != nil || !ok || cw.CloseWrite() != nil {
			up.Close()
		}
		inc <- n
	}()
	out, _ = bulkcopy.Copy(toClient, up) // large frames while bulk (package bulkcopy)
	if tap != nil {
		tap.resp.Close()
	}
	client.Close()
	in = <-inc
	up.Close()
	return in, out
}
