package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/httpserver"
)

// proxyConfig is what proxy's flags say.
type proxyConfig struct {
	store, logFormat, metricsAddr string
	reapInterval                  time.Duration
	data                          dataPlaneConfig
}

func proxyFlags(c *proxyConfig) *flag.FlagSet {
	fs := flag.NewFlagSet("proxy", flag.ContinueOnError)
	fs.StringVar(&c.store, "store", defaultStore, "the store that edgeplane serve writes, shared: sqlite:PATH (an existing SQLite file) or postgres://...")
	c.data.flags(fs, "", "")
	fs.StringVar(&c.logFormat, "log-format", "text", "log format: text or json")
	fs.StringVar(&c.metricsAddr, "metrics-addr", "", "address of the Prometheus /metrics endpoint and GET /healthz (default: off)")
	fs.DurationVar(&c.reapInterval, "reap-interval", 10*time.Second, "with -tunnel-addr: how often the sessions of edge nodes whose lease ended (and expired tunnels) are removed; every node reaps, so that a dead node's agents are offline without edgeplane serve")
	fs.Usage = func() { proxyHelp(fs, c).write(fs.Output()) }
	return fs
}

// proxyHelp is proxy's -h.
func proxyHelp(fs *flag.FlagSet, c *proxyConfig) *commandHelp {
	groups := []flagGroup{
		{"Store", fs, []string{"store", "reap-interval"}},
		{"Logs and metrics", fs, []string{"log-format", "metrics-addr"}},
	}
	groups = append(groups, c.data.flagGroups(fs, "", "")...)
	return &commandHelp{
		usage:   "edgeplane proxy -store STORE (-http-addr ADDR | -https-addr ADDR) [flags]",
		summary: "Serves every edge of every account in the store that edgeplane serve writes.",
		about: `HTTPS edges are served on -http-addr and -https-addr, TLS edges on
-https-addr too (by the ClientHello's server name), TCP edges on their
ports within -tcp-ports. -http-addr or -https-addr (or both) is
required. The store must exist: edgeplane serve makes it.`,
		groups:  groups,
		flagEnv: fs,
		env: []envVar{
			{"EDGEPLANE_SEAL_KEY", "the sealing key edgeplane serve uses on the store: the standard base64 of 32 bytes (default: for sqlite:PATH, the file PATH.sealkey that serve made)"},
		},
		example: `edgeplane proxy -store sqlite:edgeplane.db -http-addr :80 -https-addr :443`,
	}
}

// proxyCmd runs the edge data plane until ctx ends. ready, when not nil,
// receives the address of its first listener (HTTP when it has one) once
// every listener is open; all of them are printed on stdout before.
func proxyCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, ready chan<- string) error {
	var c proxyConfig
	if err := parseFlags(proxyFlags(&c), args, getenv, stdout); err != nil {
		return err
	}
	trusted, err := c.data.check("")
	if err != nil {
		return err
	}
	if err := sharedStore(c.store); err != nil {
		return err
	}
	logger, stopLogs, err := startLogs(c.logFormat, stderr)
	if err != nil {
		return err
	}
	defer stopLogs() // the last lines are written before proxy returns

	st, closeStore, err := openStore(ctx, c.store)
	if err != nil {
		return err
	}
	defer closeStore()
	key, err := readSealingKey(c.store, getenv, stdout, false)
	if err != nil {
		return err
	}
	m := newMetrics()
	ts := newTimedStore(st, m.storeOps)
	svc, err := edgeplane.New(ts, edgeplane.Options{Logger: logger, SealingKey: key, TunnelLease: c.data.nodeLease, AgentLimits: c.data.limits})
	if err != nil {
		return err
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = svc.Close(ctx)
	}()
	if err := svc.Host().CheckSealingKey(ctx); err != nil {
		return err // certificate keys could not be opened: refuse rather than fail every handshake
	}

	errc := make(chan error, 4)
	dp, err := startDataPlane(ctx, svc, ts, c.data, trusted, key, logger, m, errc)
	if err != nil {
		return err
	}
	defer dp.close()
	if c.data.tunnelAddr != "" {
		reapCtx, stopReaping := context.WithCancel(ctx)
		reaped := make(chan struct{})
		go func() { defer close(reaped); reapTunnels(reapCtx, svc.Host(), c.reapInterval, logger) }()
		defer func() { stopReaping(); <-reaped }()
		m.watchNodes(svc.Host())
		m.restrictions.add(svc.IPRestrictionCounts) // the agents' sessions
	}
	servers := dp.servers
	dp.report(stdout)
	if c.metricsAddr != "" {
		srv, addr, err := serveMetrics(c.metricsAddr, m, logger, errc)
		if err != nil {
			_ = httpserver.ShutdownAll(time.Second, servers...)
			return err
		}
		servers = append(servers, srv)
		fmt.Fprintf(stdout, "metrics on http://%s/metrics\n", addr)
	}
	if ready != nil {
		ready <- strings.SplitN(dp.addrs[0], "://", 2)[1]
	}
	if err := serveUntil(ctx, errc, servers); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "shut down")
	return nil
}

// sharedStore refuses a store that a proxy in its own process cannot
// share with edgeplane serve: memory: (this process only), and a SQLite
// file that does not exist (a typo would serve an empty store, every
// host a 404).
func sharedStore(spec string) error {
	switch {
	case spec == "memory:":
		return usageError{"-store memory: is this process's alone: no edge would ever reach the proxy; share a SQLite file or PostgreSQL with edgeplane serve, or run edgeplane serve -proxy"}
	}
	if _, missing := storeMissing(spec); missing {
		return fmt.Errorf("-store %s: the file does not exist; start edgeplane serve on it first", spec)
	}
	return nil
}

// storeMissing reports whether spec names a store that does not exist
// (a SQLite file that is not there), and its path. Opening it would
// create an empty store: what a mistyped -store must not do.
func storeMissing(spec string) (path string, missing bool) {
	path, ok := strings.CutPrefix(spec, "sqlite:")
	if !ok {
		return "", false
	}
	_, err := os.Stat(path)
	return path, errors.Is(err, fs.ErrNotExist)
}

// serveMetrics serves m's /metrics and GET /healthz on addr; the server's
// end is sent on errc.
func serveMetrics(addr string, m *metrics, logger *slog.Logger, errc chan<- error) (*http.Server, net.Addr, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.handler())
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
	srv := httpserver.New(mux, httpserver.Options{ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)})
	go func() { errc <- srv.Serve(ln) }()
	return srv, ln.Addr(), nil
}
