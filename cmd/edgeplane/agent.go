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
	"maps"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"golang.ngrok.com/ngrok"
	"golang.ngrok.com/ngrok/config"

	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/internal/bulkcopy"
)

// The agent is built on golang.ngrok.com/ngrok, the original service's
// agent SDK: a program built on that SDK works against our tunnel server
// unchanged, and ours goes through the same code (session, reconnects,
// Bind and StartTunnelWithLabel, proxied streams).

// agentAbout is what agent -h says besides its flags.
const agentAbout = `Connects to a tunnel server of -server as an agent, starts one tunnel
and forwards every connection it is handed to the target: a bare PORT is
127.0.0.1:PORT (for http, http://127.0.0.1:PORT); an http target may be an
http:// or https:// URL (scheme, host and port; an https target's
certificate is checked against the system's roots), a tcp or tls target
HOST:PORT. The bytes are relayed as they come: plain HTTP/1.1 for http,
the client's own TLS for tls (the target terminates it). The tunnel's
flags may come before or after its target.

Once the tunnel is up its public URL is printed on stdout, on a line of
its own (a labeled tunnel has none: "ID labels K=V,..." instead). Each
connection is logged on stderr with the client's address, bytes_in (from
the client), bytes_out (to it) and its duration. The authtoken is never
printed.

-server is one tunnel server, or a comma-separated list of at most 16
edge nodes sharing one store (each HOST:PORT given once). The agent keeps
its session on one server; when the session fails (refused, reset,
heartbeat timeout) it reconnects to the next server of the list,
round-robin from the first, and its tunnel moves with it. Each server's
certificate is checked for the host the agent dialed. Several nodes may
instead stand behind one DNS name, with one A (or AAAA) record per node;
each connection attempt tries its addresses in turn. Each dial of a
server gives up after 10s.

A refused tunnel ends the command with the server's message (exit 1). A
refused authtoken or an unreachable server does not: the agent logs each
failure and retries for ever (backoff from 0.5s to 30s), and reconnects
and rebinds the same way when its session drops. SIGINT or SIGTERM, or a
stop request from the server, closes the tunnel and exits 0.`

// agentTunnels are the agent's tunnels: name, target and what each is.
var agentTunnels = [][3]string{
	{"http", "PORT|URL", "an HTTP endpoint on a reserved domain (-domain), or a labeled tunnel for tunnel group backends (-label)"},
	{"tcp", "PORT|HOST:PORT", "a TCP endpoint on a port the server picks or -remote-addr names"},
	{"tls", "PORT|HOST:PORT", "a TLS endpoint on a reserved domain (-domain), the client's TLS passed through to the target"},
}

// agentHelp is agent's -h, or with proto its tunnel's (agent http -h).
func agentHelp(fs *flag.FlagSet, proto string) *commandHelp {
	h := &commandHelp{
		usage:   "edgeplane agent -server HOST:PORT -authtoken TOKEN [-ca FILE] [-log-format text|json] TUNNEL TARGET [tunnel flags]",
		summary: "Connects to a tunnel server and forwards one tunnel (http, tcp or tls) to a local target.",
		about:   agentAbout,
		groups: []flagGroup{
			{"Agent (before the tunnel)", fs, []string{"server", "authtoken", "ca"}},
			{"Logs", fs, []string{"log-format"}},
		},
		flagEnv: fs,
		example: `EDGEPLANE_AUTHTOKEN=ept_... edgeplane agent -server tunnel.example.com:4443 http 3000 -domain app.example.com
edgeplane agent -server tunnel.example.com:4443 -authtoken ept_... tcp 22`,
	}
	for _, t := range agentTunnels {
		if proto != "" && t[0] != proto {
			continue
		}
		if proto == "" {
			h.commands = append(h.commands, [2]string{t[0] + " " + t[1], t[2]})
		} else {
			h.usage = "edgeplane agent -server HOST:PORT -authtoken TOKEN [agent flags] " + t[0] + " " + t[1] + " [flags]"
			h.summary = "Starts " + t[2] + "."
			h.about = "TARGET: " + targetForms(t[0]) + ". The tunnel's flags have no environment variables.\n\nSee edgeplane agent -h for the agent's connection, retries and output."
			h.example = map[string]string{
				"http": "edgeplane agent -server tunnel.example.com:4443 -authtoken ept_... http 3000 -domain app.example.com\nedgeplane agent -server tunnel.example.com:4443 -authtoken ept_... http https://127.0.0.1:8443 -label app=web",
				"tcp":  "edgeplane agent -server tunnel.example.com:4443 -authtoken ept_... tcp 22",
				"tls":  "edgeplane agent -server tunnel.example.com:4443 -authtoken ept_... tls 8443 -domain app.example.com",
			}[t[0]]
		}
		var c agentConfig
		c.proto = t[0]
		h.groups = append(h.groups, flagGroup{"The " + t[0] + " tunnel (after " + t[0] + ")", tunnelFlags(&c), nil})
	}
	return h
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

// agentConfig is what agent's command line says.
type agentConfig struct {
	server, ca, authtoken, logFormat string
	servers                          []agentServer // -server's list, in order

	proto      string // "http", "tcp" or "tls"
	target     agentTarget
	domain     string
	scheme     string // the public scheme of an http endpoint: "https" ("" too) or "http"
	labels     map[string]string
	remoteAddr string
	metadata   string
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
	fs.StringVar(&c.server, "server", "", "HOST:PORT of the tunnel server, or a comma-separated list of at most 16 (required)")
	fs.StringVar(&c.ca, "ca", "", "PEM `file` of the roots that may sign the server's certificate (default: the system's roots)")
	fs.StringVar(&c.authtoken, "authtoken", "", "the authtoken of a tunnel credential (required; better set as EDGEPLANE_AUTHTOKEN)")
	fs.StringVar(&c.logFormat, "log-format", "text", "log format: text or json")
	fs.Usage = func() { agentHelp(fs, "").write(fs.Output()) }
	return fs
}

// tunnelFlags returns the flags of c.proto's tunnel.
func tunnelFlags(c *agentConfig) *flag.FlagSet {
	fs := flag.NewFlagSet(c.proto, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	switch c.proto {
	case "http":
		fs.StringVar(&c.domain, "domain", "", "the endpoint's `name`: a reserved domain of the credential's account, or a name one of its wildcard domains covers; required unless -label (the server refuses an http endpoint without one)")
		fs.StringVar(&c.scheme, "scheme", "", "with -domain: the endpoint's public scheme, https (the proxy's TLS listener, the reserved domain's certificate) or http (its plain listener) (default https)")
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
	case "tcp":
		fs.StringVar(&c.remoteAddr, "remote-addr", "", "the public `HOST:PORT` asked for, a port within the server's TCP ports (default: the server picks)")
	case "tls":
		fs.StringVar(&c.domain, "domain", "", "the `name` clients' TLS asks for (SNI): a reserved domain of the credential's account, or a name one of its wildcard domains covers (required)")
	}
	fs.StringVar(&c.metadata, "metadata", "", "the tunnel's metadata, at most 4096 bytes of `text`")
	return fs
}

// parseAgentArgs parses agent's command line: the agent's flags (and
// their variables), then the tunnel, its target and its flags.
func parseAgentArgs(args []string, getenv func(string) string, stdout io.Writer) (agentConfig, error) {
	var c agentConfig
	// The agent's flags end at the tunnel's name: parse once to find it,
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
		return c, err
	}
	// The tunnel is read before the agent's flags are checked, so that
	// agent http -h helps whatever else the command line lacks.
	tunnelErr := parseTunnel(&c, fs, rest, stdout)
	if _, ok := tunnelErr.(errHelp); ok {
		return c, tunnelErr
	}
	if err := c.checkAgent(); err != nil {
		return c, err
	}
	if tunnelErr != nil {
		return c, tunnelErr
	}
	return c, c.checkTunnel()
}

// parseTunnel parses the tunnel's part of agent's command line, rest:
// its name, its flags and its target. fs holds the agent's flags.
func parseTunnel(c *agentConfig, fs *flag.FlagSet, rest []string, stdout io.Writer) error {
	if len(rest) == 0 {
		return usageError{"which tunnel? http, tcp or tls (edgeplane agent -h)"}
	}
	c.proto = rest[0]
	switch c.proto {
	case "http", "tcp", "tls":
	default:
		return usageError{fmt.Sprintf("unknown tunnel %q: want http, tcp or tls", c.proto)}
	}
	tfs := tunnelFlags(c)
	var positional []string
	for more := rest[1:]; ; {
		if err := tfs.Parse(more); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				agentHelp(fs, c.proto).write(stdout)
				return errHelp{}
			}
			if name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -"); ok && fs.Lookup(name) != nil {
				return usageError{fmt.Sprintf("%s: -%s is the agent's flag: give it before the tunnel (edgeplane agent -%s ... %s ...)", c.proto, name, name, c.proto)}
			}
			return usageError{c.proto + ": " + err.Error()}
		}
		if more = tfs.Args(); len(more) == 0 {
			break
		}
		positional, more = append(positional, more[0]), more[1:]
	}
	switch len(positional) {
	case 0:
		return usageError{fmt.Sprintf("%s: which target? %s", c.proto, targetForms(c.proto))}
	case 1:
	default:
		return usageError{fmt.Sprintf("%s: one target, got %d: %s", c.proto, len(positional), strings.Join(positional, " "))}
	}
	var err error
	c.target, err = parseTarget(c.proto, positional[0])
	return err
}

// checkAgent checks the agent's flags.
func (c *agentConfig) checkAgent() error {
	if c.server == "" {
		return usageError{"-server is required: HOST:PORT of the tunnel server"}
	}
	servers, err := parseServers(c.server)
	if err != nil {
		return err
	}
	c.servers = servers
	if c.authtoken == "" {
		return usageError{"-authtoken is required (or EDGEPLANE_AUTHTOKEN): the authtoken of a tunnel credential"}
	}
	switch c.logFormat {
	case "text", "json":
	default:
		return usageError{fmt.Sprintf("-log-format %q: want text or json", c.logFormat)}
	}
	return nil
}

// checkTunnel checks the tunnel's flags against each other and their
// bounds.
func (c *agentConfig) checkTunnel() error {
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
	return nil
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
// dials that server whatever address the SDK passes. Go's own
// verification then checks the certificate against the roots (-ca or the
// system's) for the host actually dialed.
//
// Its methods are safe for concurrent use.
type serverRing struct {
	servers []agentServer

	mu       sync.Mutex
	picked   int          // attempts picked
	pending  *agentServer // picked for the attempt under way, not yet dialed
	reported int          // attempts whose end was reported
}

// configureTLS is the SDK's TLS configuration callback (WithTLSConfig):
// it picks the server of the attempt about to be made, and has its
// certificate checked for that server's host. (The SDK would check the
// text before the first ':' of WithServer's address: another server's
// name, and "[" for an IPv6 address.)
func (r *serverRing) configureTLS(tc *tls.Config) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.servers[r.picked%len(r.servers)]
	r.picked++
	r.pending = &s
	tc.ServerName = s.host
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
	return conn, nil
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
func agentError(err error) string {
	var de *serverDialError
	if errors.As(err, &de) {
		return de.Error()
	}
	var nerr ngrok.Error
	if errors.As(err, &nerr) && nerr.Msg() != "" {
		if code := nerr.ErrorCode(); code != "" {
			return nerr.Msg() + " (" + code + ")"
		}
		return nerr.Msg()
	}
	return err.Error()
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
// authentication or rebind, or a connected session's end.
func (r *serverRing) report(failed bool) (server, next agentServer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	server = r.servers[r.reported%len(r.servers)]
	if failed {
		r.reported++
	}
	return server, r.servers[r.reported%len(r.servers)]
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
	bad := func(reason string) (agentTarget, error) {
		return agentTarget{}, usageError{fmt.Sprintf("%s target %q: %s", proto, s, reason)}
	}
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
	return t, nil
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

// tunnelConfig returns the SDK's configuration of c's tunnel.
func (c *agentConfig) tunnelConfig() config.Tunnel {
	forwardsTo := config.WithForwardsTo(c.target.String())
	metadata := config.WithMetadata(c.metadata)
	switch c.proto {
	case "tcp":
		opts := []config.TCPEndpointOption{forwardsTo, metadata}
		if c.remoteAddr != "" {
			opts = append(opts, config.WithRemoteAddr(c.remoteAddr))
		}
		return config.TCPEndpoint(opts...)
	case "tls":
		// No termination option: the edge passes the client's TLS through.
		return config.TLSEndpoint(forwardsTo, metadata, config.WithDomain(c.domain))
	}
	if len(c.labels) > 0 {
		opts := []config.LabeledTunnelOption{forwardsTo, metadata}
		for _, k := range slices.Sorted(maps.Keys(c.labels)) {
			opts = append(opts, config.WithLabel(k, c.labels[k]))
		}
		return config.LabeledTunnel(opts...)
	}
	opts := []config.HTTPEndpointOption{forwardsTo, metadata}
	if c.scheme == "http" {
		opts = append(opts, config.WithScheme(config.SchemeHTTP))
	}
	if c.domain != "" {
		opts = append(opts, config.WithDomain(c.domain))
	}
	return config.HTTPEndpoint(opts...)
}

// loadRoots returns the roots the server's certificate is checked
// against: the PEM file's certificates alone, or the system's roots.
// (Without SDK option WithCA the SDK would trust only the original
// service's own root.)
func loadRoots(file string) (*x509.CertPool, error) {
	if file == "" {
		pool, err := x509.SystemCertPool()
		if err != nil {
			return nil, fmt.Errorf("the system's roots: %w; give -ca FILE", err)
		}
		return pool, nil
	}
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("-ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("-ca %s: no PEM certificate in the file", file)
	}
	return pool, nil
}

// agentCmd runs an agent until ctx ends, the server stops it, or its
// tunnel is refused or ends. ready, when not nil, receives the line
// printed on stdout once the tunnel is up (its URL, or a labeled
// tunnel's ID and labels).
func agentCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, ready chan<- string) error {
	if len(args) == 0 {
		return usageError{"agent: which server and tunnel? (edgeplane agent -h)"}
	}
	c, err := parseAgentArgs(args, getenv, stdout)
	if err != nil {
		return err
	}
	roots, err := loadRoots(c.ca)
	if err != nil {
		return err
	}
	logger, stopLogs, err := startLogs(c.logFormat, stderr)
	if err != nil {
		return err
	}
	defer stopLogs() // the last lines are written before agent returns

	// The session lives on a context of its own: the SDK closes the
	// session when its context ends, and a signal must first close the
	// tunnel through it. While connecting, a signal ends it at once.
	sessCtx, cancelSess := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelSess()
	var (
		closing  atomic.Bool                  // failures from now on are the agent's own closing
		stopped  atomic.Bool                  // the server asked the session to stop
		connects atomic.Int64                 // sessions established
		current  atomic.Pointer[ngrok.Tunnel] // the tunnel, once started
	)
	ring := &serverRing{servers: c.servers}
	opts := []ngrok.ConnectOption{
		ngrok.WithServer(c.server), // only named in the SDK's errors: ring dials
		ngrok.WithDialer(ring),
		ngrok.WithCA(roots),
		ngrok.WithTLSConfig(ring.configureTLS),
		ngrok.WithAuthtoken(c.authtoken),
		ngrok.WithConnectHandler(func(context.Context, ngrok.Session) {
			msg := "session established"
			if connects.Add(1) > 1 {
				msg = "session re-established"
			}
			server, _ := ring.report(false)
			attrs := []slog.Attr{slog.String("server", server.addr)}
			if t := current.Load(); t != nil {
				attrs = append(attrs, slog.String("tunnel", (*t).ID())) // a labeled tunnel's ID changes on rebind
			}
			logger.LogAttrs(context.Background(), slog.LevelInfo, msg, attrs...)
		}),
		// The SDK retries a failed connection, authentication or rebind
		// for ever; each failure is reported here.
		ngrok.WithDisconnectHandler(func(_ context.Context, _ ngrok.Session, err error) {
			if err == nil || closing.Load() || sessCtx.Err() != nil {
				return
			}
			server, next := ring.report(true)
			attrs := []slog.Attr{slog.String("server", server.addr)}
			if len(c.servers) > 1 {
				attrs = append(attrs, slog.String("next", next.addr))
			}
			attrs = append(attrs, slog.String("err", agentError(err)))
			logger.LogAttrs(context.Background(), slog.LevelWarn, "session failed; retrying", attrs...)
		}),
		ngrok.WithStopHandler(func(context.Context, ngrok.Session) error {
			// The SDK answers, then closes the session, which ends Accept.
			closing.Store(true)
			stopped.Store(true)
			return nil
		}),
	}
	stopConnecting := context.AfterFunc(ctx, cancelSess)
	sess, err := ngrok.Connect(sessCtx, opts...)
	if !stopConnecting() || err != nil {
		if sess != nil {
			closing.Store(true)
			sess.Close()
		}
		if ctx.Err() != nil {
			return nil // a signal while connecting
		}
		return fmt.Errorf("connect to the tunnel server %s: %w", c.server, sdkError{err})
	}
	defer func() {
		closing.Store(true)
		_ = sess.Close()
	}()

	tun, err := listen(ctx, sess, c.tunnelConfig())
	if err != nil || tun == nil {
		return err // nil: a signal while starting
	}
	current.Store(&tun)
	line := tun.URL()
	if len(c.labels) > 0 {
		labels := tun.Labels()
		kvs := make([]string, 0, len(labels))
		for _, k := range slices.Sorted(maps.Keys(labels)) {
			kvs = append(kvs, k+"="+labels[k])
		}
		line = tun.ID() + " labels " + strings.Join(kvs, ",")
	}
	fmt.Fprintln(stdout, line)
	logger.Info("tunnel started", "tunnel", tun.ID(), "proto", c.proto, "target", c.target.String())
	if ready != nil {
		ready <- line
	}

	done, closed := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(closed)
		select {
		case <-ctx.Done():
			closing.Store(true)
			if err := tun.Close(); err != nil { // Unbind, before the session closes
				logger.Warn("closing the tunnel", "tunnel", tun.ID(), "err", err.Error())
			}
		case <-done:
		}
	}()
	var conns sync.WaitGroup
	for {
		conn, err := tun.Accept()
		if err != nil {
			close(done)
			<-closed // its warning is written before the logs stop
			closing.Store(true)
			_ = sess.Close() // ends the connections' streams
			conns.Wait()
			switch {
			case ctx.Err() != nil:
			case stopped.Load():
				logger.Info("stopped by the server", "tunnel", tun.ID())
			default:
				return tunnelEnded(err)
			}
			fmt.Fprintln(stdout, "shut down")
			return nil
		}
		conns.Add(1)
		go func() {
			defer conns.Done()
			forwardConn(ctx, conn, c.target, logger)
		}()
	}
}

// listen starts cfg's tunnel on sess, or returns (nil, nil) when ctx ends
// first: the SDK's Listen does not heed its context, and waits for the
// server's answer.
func listen(ctx context.Context, sess ngrok.Session, cfg config.Tunnel) (ngrok.Tunnel, error) {
	type result struct {
		tun ngrok.Tunnel
		err error
	}
	res := make(chan result, 1)
	go func() {
		tun, err := sess.Listen(ctx, cfg)
		res <- result{tun, err}
	}()
	select {
	case r := <-res:
		if r.err != nil {
			return nil, fmt.Errorf("starting the tunnel: %w", sdkError{r.err}) // a refusal: the server's message and code
		}
		return r.tun, nil
	case <-ctx.Done():
		return nil, nil // the caller closes sess, which ends Listen
	}
}

// tunnelEnded describes the end of a tunnel the agent did not close:
// the server stopped it (with a message), or the session ended for good.
func tunnelEnded(err error) error {
	var nerr ngrok.Error
	if errors.As(err, &nerr) && nerr.Msg() != "" {
		if code := nerr.ErrorCode(); code != "" {
			return fmt.Errorf("the server stopped the tunnel: %s (%s)", nerr.Msg(), code)
		}
		return fmt.Errorf("the server stopped the tunnel: %s", nerr.Msg())
	}
	return fmt.Errorf("the tunnel ended: %w", err)
}

// forwardConn relays conn, a connection the tunnel was handed, to
// target, and logs it. A target that cannot be reached is answered with
// a 502 on an HTTP connection, and closed on others.
func forwardConn(ctx context.Context, conn net.Conn, target agentTarget, logger *slog.Logger) {
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
	in, out := splice(conn, up)
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
// are lost, which HTTP never does).
func splice(client, up net.Conn) (in, out int64) {
	inc := make(chan int64, 1)
	go func() {
		n, err := bulkcopy.Copy(up, client)
		cw, ok := up.(interface{ CloseWrite() error })
		if err != nil || !ok || cw.CloseWrite() != nil {
			up.Close()
		}
		inc <- n
	}()
	out, _ = bulkcopy.Copy(client, up) // large frames while bulk (package bulkcopy)
	client.Close()
	in = <-inc
	up.Close()
	return in, out
}
