// Command edgeplane is the edgeplane server and its operator tools.
//
//	edgeplane serve [flags]           the management API (see serve -h)
//	edgeplane proxy [flags]           the edge data plane (see proxy -h)
//	edgeplane admin <command> [flags] host operations against the same store
//	edgeplane agent <command>         an agent: tunnels to local ports, from flags or a config file (see agent -h)
//	edgeplane version                 the module version, commit and Go version
//
// Every command and subcommand prints its help with -h in one format:
// a usage line, a one-line summary, its flags grouped by purpose, the
// environment variables it reads and an example.
//
// Every flag can also be set through the environment: -store is
// EDGEPLANE_STORE, -rate-limit is EDGEPLANE_RATE_LIMIT, and so on; a flag
// on the command line wins.
//
// # Stores
//
// -store names the store: memory: keeps everything in this process (gone
// when it stops); the durable backends (sqlite:PATH, postgres://...) are
// listed by -h when this build has them.
//
// # The data plane
//
// edgeplane proxy serves every edge of every account in the store
// (package proxy): an HTTP request reaches the HTTPS edge that lists the
// hostport it was addressed to, then its route's pipeline, then a tunnel
// of the route's backend; a TLS connection on -https-addr whose
// ClientHello names a TLS edge's host is served by that edge (IP
// restriction, on_tcp_connect rules, TLS terminated at the edge or
// passed through) and relayed to a tunnel of its backend; a TCP
// connection on a port of -tcp-ports reaches the TCP edge on that port. It runs in a process of its own beside edgeplane
// serve, on the same store (a SQLite file, or PostgreSQL for several
// proxies and API replicas), and applies the changes made through the
// API as it reads them from the store's change feed (within about a
// second). Its listeners: -http-addr (plain HTTP) and -https-addr (TLS,
// with the certificate of the reserved domain the client's SNI names; TLS
// edges share it), at least one; -tcp-ports LOW-HIGH (with -tcp-host) the
// ports TCP edges are served on, a listener opened for each port of the
// range a TCP edge names; -idle-timeout and -max-conns-per-edge bound TLS
// and TCP edges' connections; -metrics-addr serves /metrics and GET
// /healthz. The store must
// answer at start (the proxy loads every edge before it listens, and
// exits when it cannot); once running, a proxy whose store stops
// answering keeps serving the last config it read, and catches up when
// the store is back. With a sealed store the proxy needs the sealing key
// serve uses (EDGEPLANE_SEAL_KEY, or the SQLite key file) to open the
// certificates' private keys. -upstream-networks limits the networks a
// tunnel's forwards_to may reach (whoever registers a tunnel chooses where
// the proxy connects: set it in production); -oidc-networks the networks
// an OIDC module's identity provider may be reached at (default: public
// addresses only, since a tenant chooses the issuer).
//
// edgeplane serve -proxy runs the data plane in the API's process too,
// for development: -proxy-http-addr (default 127.0.0.1:8000),
// -proxy-https-addr, -proxy-trusted-proxies, -proxy-upstream-networks,
// -proxy-upstream-timeout, -proxy-read-timeout, -proxy-write-timeout,
// -proxy-tcp-ports, -proxy-tcp-host, -proxy-idle-timeout and
// -proxy-max-conns-per-edge are proxy's flags under
// another name, and its metrics join serve's -metrics-addr. It works on
// every store, memory: included (but edgeplane admin register-tunnel, in
// a process of its own, cannot reach a memory: store: register tunnels on
// a SQLite file).
//
// HTTPS edges serve hostports on port 443 only, and a request reaches the
// edge that serves its Host header's host: a port in the Host header is
// ignored (the proxy may listen on any port, behind any mapping).
//
// # Tunnels
//
// Tunnels are registered by a tunnel server with an agent's authtoken; no
// API operation does it. edgeplane admin register-tunnel stands in for
// one (for development and tests): it registers a tunnel with the labels
// and forwards_to URL given, under a lease of -tunnel-lease, which nothing
// renews: the tunnel goes offline when the lease ends.
//
// # Secrets
//
// The admin's API key comes from EDGEPLANE_API_KEY when set, else it is
// generated and printed once, on the first start on an empty store only.
// serve says which; on a store in use EDGEPLANE_API_KEY is ignored, and
// when the store does not hold it serve warns and prints the admin
// commands that make a new key. edgeplane admin list-users and
// list-api-keys show who and which keys a store holds (never a secret);
// admin refuses a SQLite store that does not exist unless given -create.
//
// serve -proxy -proxy-tunnel-addr without -proxy-tunnel-cert makes a
// local CA and the tunnel listener's certificate, kept in PATH.tls beside
// a sqlite:PATH store (else in edgeplane/tunnel-ca of the user's
// configuration directory; -proxy-tunnel-ca-dir chooses) and reused at
// every start, and prints the agent command that trusts it (-ca). The
// reserved domains' certificates are still presented first, by SNI.
// Certificate private keys are sealed at rest under EDGEPLANE_SEAL_KEY
// (32 bytes, standard base64); without it a memory: store gets a key of
// its own, printed once. A server given a store sealed under another key
// refuses to start.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr, nil))
}

// mainHelp is edgeplane -h.
func mainHelp() *commandHelp {
	return &commandHelp{
		usage:   "edgeplane COMMAND [flags]",
		summary: "The edgeplane server and its operator tools.",
		about:   "Run edgeplane COMMAND -h for a command's flags.",
		commands: [][2]string{
			{"serve", "run the management API server (with -proxy, the edge data plane too)"},
			{"proxy", "run the edge data plane: every HTTPS, TLS and TCP edge in the store"},
			{"admin", "host operations against a store: accounts, users, bots, API keys, tunnels"},
			{"agent", "connect to a tunnel server and forward tunnels (http, tcp or tls) to local ports, from flags or a config file"},
			{"version", "print the module version, commit and Go version edgeplane was built from"},
		},
		env: []envVar{{"EDGEPLANE_<FLAG>", "a command's flag not given on the command line (-store as EDGEPLANE_STORE); each command's -h lists what it reads"}},
		example: `edgeplane serve -store sqlite:edgeplane.db
edgeplane admin list-users -store sqlite:edgeplane.db`,
	}
}

// run runs the command line args and returns the process's exit code.
// ready, when not nil, receives the address serve listens on (or proxy's
// first listener, or the line agent prints once its tunnel is up).
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, ready chan<- string) int {
	if len(args) == 0 {
		mainHelp().write(stderr)
		return 2
	}
	switch args[0] {
	case "serve":
		return exit(serve(ctx, args[1:], getenv, stdout, stderr, ready), stderr)
	case "proxy":
		return exit(proxyCmd(ctx, args[1:], getenv, stdout, stderr, ready), stderr)
	case "admin":
		return exit(admin(ctx, args[1:], getenv, stdout, stderr), stderr)
	case "agent":
		return exit(agentCmd(ctx, args[1:], getenv, stdout, stderr, ready), stderr)
	case "version":
		return exit(versionCmd(args[1:], getenv, stdout), stderr)
	case "-h", "-help", "--help", "help":
		mainHelp().write(stdout)
		return 0
	}
	fmt.Fprintf(stderr, "edgeplane: unknown command %q: want serve, proxy, admin, agent or version (edgeplane -h)\n", args[0])
	return 2
}

// errHelp is returned by a command that printed its usage on request.
type errHelp struct{}

func (errHelp) Error() string { return "help" }

// exit turns a command's error into an exit code, printing it.
func exit(err error, stderr io.Writer) int {
	switch err.(type) {
	case nil:
		return 0
	case errHelp:
		return 0
	case usageError:
		fmt.Fprintln(stderr, "edgeplane:", err)
		return 2
	}
	fmt.Fprintln(stderr, "edgeplane:", err)
	return 1
}

// usageError is a bad command line.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }
