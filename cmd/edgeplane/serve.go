package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/clientip"
	"github.com/edgeplane/edgeplane/cmd/edgeplane/internal/prefault"
	"github.com/edgeplane/edgeplane/console"
	"github.com/edgeplane/edgeplane/httpapi"
	"github.com/edgeplane/edgeplane/httpserver"
)

// serveConfig is what serve's flags say.
type serveConfig struct {
	addr, baseURL, store     string
	tlsCert, tlsKey          string
	logFormat                string
	rateLimit                int
	rateWindow               time.Duration
	corsOrigins, metricsAddr string
	trustedProxies           string
	reapInterval             time.Duration
	proxy                    bool
	console                  bool
	tunnelCADir              string // the local CA's directory ("": beside the store)
	cpuProfile               string
	prefault                 bool
	data                     dataPlaneConfig
	acme                     acmeConfig
	events                   eventConfig
}

func serveFlags(c *serveConfig) *flag.FlagSet {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.StringVar(&c.addr, "addr", "127.0.0.1:8080", "address to listen on")
	fs.StringVar(&c.baseURL, "base-url", "", "base URL of uri fields (default http(s)://<addr>)")
	fs.StringVar(&c.store, "store", defaultStore, storeHelp)
	fs.StringVar(&c.tlsCert, "tls-cert", "", "PEM certificate chain: serve HTTPS (with -tls-key)")
	fs.StringVar(&c.tlsKey, "tls-key", "", "PEM private key of -tls-cert")
	fs.StringVar(&c.logFormat, "log-format", "text", "log format: text or json")
	fs.IntVar(&c.rateLimit, "rate-limit", httpapi.DefaultRateLimit, "requests one account may make per -rate-window; 0 turns the limit off")
	fs.DurationVar(&c.rateWindow, "rate-window", httpapi.DefaultRateWindow, "window of -rate-limit, a whole multiple of 10s")
	fs.StringVar(&c.corsOrigins, "cors-origins", "", "comma-separated origins answered with CORS credentials (default: any origin, without credentials)")
	fs.StringVar(&c.trustedProxies, "trusted-proxies", "", "comma-separated CIDR prefixes or addresses of proxies in front of the API whose X-Forwarded-For names the client that IP restrictions of type api check (default: none; the connection's address is the client)")
	fs.BoolVar(&c.console, "console", true, "serve the web console at /console/ on -addr (sign in with an API key); -console=false turns it off")
	fs.StringVar(&c.metricsAddr, "metrics-addr", "", "address of the Prometheus /metrics endpoint (default: off)")
	fs.DurationVar(&c.reapInterval, "reap-interval", 10*time.Second, "how often expired tunnels are removed")
	fs.StringVar(&c.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file when the server stops (for go tool pprof)")
	fs.BoolVar(&c.prefault, "prefault", false, "populate the memory the Go heap grows by in bulk, before its first use (Linux 5.14 or later): saves the page fault per 4 KiB of growth, 10-15µs in some virtual machines, at the cost of a goroutine that looks every 5ms and of memory made resident ahead of use (default off)")
	fs.BoolVar(&c.proxy, "proxy", false, "also run the edge data plane (edgeplane proxy) in this process, on the -proxy-* flags; for development")
	c.data.flags(fs, "proxy-", "127.0.0.1:8000")
	fs.StringVar(&c.tunnelCADir, "proxy-tunnel-ca-dir", "", "with -proxy-tunnel-addr and no -proxy-tunnel-cert: the directory of the local CA that signs the tunnel listener's certificate, made at the first start and kept (agents trust its ca.pem with -ca) (default: PATH.tls beside a sqlite:PATH store; else edgeplane/tunnel-ca in the user's configuration directory)")
	c.acme.flags(fs)
	c.events.flags(fs)
	fs.Usage = func() { serveHelp(fs, c).write(fs.Output()) }
	return fs
}

// serveHelp is serve's -h.
func serveHelp(fs *flag.FlagSet, c *serveConfig) *commandHelp {
	data := c.data.flagGroups(fs, "proxy-", " (with -proxy)", "proxy")
	data[2].names = append(data[2].names, "proxy-tunnel-ca-dir")
	groups := []flagGroup{
		{"API server", fs, []string{"addr", "base-url", "tls-cert", "tls-key", "rate-limit", "rate-window", "cors-origins", "trusted-proxies", "console"}},
		{"Store", fs, []string{"store", "reap-interval"}},
		{"Logs, metrics and profiling", fs, []string{"log-format", "metrics-addr", "cpuprofile", "prefault"}},
	}
	groups = append(groups, data...)
	groups = append(groups, c.acme.flagGroup(fs), c.events.flagGroup(fs))
	return &commandHelp{
		usage:   "edgeplane serve [flags]",
		summary: "Runs the management API on a store; with -proxy, the edge data plane too.",
		about: `On an empty store serve creates the account "default", its admin user
and the admin's API key, and prints where the key comes from. The
store's secrets are sealed at rest under a sealing key (see
EDGEPLANE_SEAL_KEY).`,
		groups:  groups,
		flagEnv: fs,
		env: []envVar{
			{"EDGEPLANE_API_KEY", "the admin's API key (epk_ and at least 32 more characters) on a store's first start; ignored, with a warning, on a store in use: make a new key with edgeplane admin create-api-key"},
			{"EDGEPLANE_SEAL_KEY", "the key that seals secrets at rest: the standard base64 of 32 bytes (default: for sqlite:PATH, the file PATH.sealkey, made at the first start; for memory:, a new key printed once; required for postgres://)"},
		},
		example: `edgeplane serve -store sqlite:edgeplane.db -proxy -proxy-tunnel-addr 127.0.0.1:4443`,
	}
}

// serve runs the management API until ctx ends.
func serve(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, ready chan<- string) error {
	var c serveConfig
	fs := serveFlags(&c)
	if err := parseFlags(fs, args, getenv, stdout); err != nil {
		return err
	}
	logger, stopLogs, err := startLogs(c.logFormat, stderr)
	if err != nil {
		return err
	}
	defer stopLogs() // the last lines are written before serve returns
	if c.cpuProfile != "" {
		stop, err := startCPUProfile(c.cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	if c.prefault {
		pctx, stopPrefault := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); prefaultHeap(pctx, logger) }()
		defer func() { stopPrefault(); <-done }()
	}
	if (c.tlsCert == "") != (c.tlsKey == "") {
		return usageError{"-tls-cert and -tls-key go together"}
	}
	if c.rateLimit == 0 {
		c.rateLimit = -1 // httpapi: negative is off
	}
	if err := c.acme.check(); err != nil {
		return err
	}
	if err := c.events.check(); err != nil {
		return err
	}
	apiTrusted, err := clientip.ParsePrefixes(c.trustedProxies, "trusted proxy")
	if err != nil {
		return usageError{"-trusted-proxies: " + err.Error()}
	}
	var trusted []netip.Prefix
	if c.proxy {
		if trusted, err = c.data.check("proxy-"); err != nil {
			return err
		}
	}

	st, closeStore, err := openStoreKeeping(ctx, c.store, c.events.feedRetention)
	if err != nil {
		return err
	}
	defer closeStore()
	key, err := sealingKey(c.store, getenv, stdout)
	if err != nil {
		return err
	}
	if c.proxy && c.data.tunnelAddr != "" && c.data.tunnelTLS == nil {
		dir := c.tunnelCADir
		if dir == "" {
			if dir, err = localTLSDirFor(c.store); err != nil {
				return err
			}
		}
		if c.data.tunnelLocal, err = loadLocalTLS(dir, c.data.tunnelAddr, time.Now()); err != nil {
			return fmt.Errorf("-proxy-tunnel-addr without -proxy-tunnel-cert: %w", err)
		}
	}
	m := newMetrics()

	ln, err := net.Listen("tcp", c.addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	scheme := "http"
	if c.tlsCert != "" {
		scheme = "https"
	}
	if c.baseURL == "" {
		c.baseURL = scheme + "://" + ln.Addr().String()
	}

	ts := newTimedStore(st, m.storeOps)
	var limits agents.Limits // the defaults; the data plane's flags are checked with -proxy only
	if c.proxy {
		limits = c.data.limits
	}
	svc, err := edgeplane.New(ts, edgeplane.Options{BaseURL: c.baseURL, Logger: logger, SealingKey: key, TunnelLease: c.data.nodeLease,
		Events: c.events.serviceOptions(), AgentLimits: limits})
	if err != nil {
		return err
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = svc.Close(ctx) // delivers the events committed before the stop
	}()
	m.restrictions.add(svc.IPRestrictionCounts)
	if err := svc.Host().CheckSealingKey(ctx); err != nil {
		return err
	}
	if err := reportAdminKey(ctx, svc, c.store, getenv("EDGEPLANE_API_KEY"), stdout); err != nil {
		return err
	}

	var origins []string
	if c.corsOrigins != "" {
		origins = strings.Split(c.corsOrigins, ",")
	}
	api, err := httpapi.New(svc, httpapi.Options{Logger: logger, Observe: m.observe, RateLimit: c.rateLimit, RateWindow: c.rateWindow, AllowedOrigins: origins,
		TrustedProxies: apiTrusted})
	if err != nil {
		return usageError{"-rate-window: " + err.Error()}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if _, err := st.Revision(ctx); err != nil {
			logger.Warn("readyz: the store does not answer", "err", err)
			http.Error(w, "store unreachable", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ok\n")
	})
	mux.Handle("/", api)
	if c.console {
		con, err := console.New(svc, console.Options{Logger: logger, TrustedProxies: apiTrusted, Feed: ts}) // the overview live from the change feed
		if err != nil {
			return err
		}
		mux.Handle(console.Prefix, con)
	}

	errLog := slog.NewLogLogger(logger.Handler(), slog.LevelWarn)
	apiServer := httpserver.New(apiFirst(mux, api), httpserver.Options{ErrorLog: errLog})
	servers := []*http.Server{apiServer}
	errc := make(chan error, 5)
	go func() {
		if c.tlsCert != "" {
			errc <- apiServer.ServeTLS(ln, c.tlsCert, c.tlsKey)
		} else {
			errc <- apiServer.Serve(ln)
		}
	}()
	defer func() { _ = httpserver.ShutdownAll(10*time.Second, servers...) }() // when a later step fails; a no-op after serveUntil
	if c.proxy {
		dp, err := startDataPlane(ctx, svc, ts, c.data, trusted, key, logger, m, errc)
		if err != nil {
			return err
		}
		defer dp.close()
		servers = append(servers, dp.servers...)
		dp.report(stdout)
		if c.data.tunnelLocal != nil {
			c.data.tunnelLocal.report(stdout, agentDialAddr(c.data.tunnelAddr, dp.agentAddr), c.data.httpAddr != "")
		}
		if c.data.tunnelAddr != "" {
			m.watchNodes(svc.Host())
		}
	}
	if c.metricsAddr != "" {
		srv, addr, err := serveMetrics(c.metricsAddr, m, logger, errc)
		if err != nil {
			return err
		}
		servers = append(servers, srv)
		fmt.Fprintf(stdout, "metrics on http://%s/metrics\n", addr)
	}
	if c.acme.on {
		stopACME, err := startACME(ctx, svc, ts, c.acme, logger, m)
		if err != nil {
			return err
		}
		defer stopACME()
	}
	reapCtx, stopReaping := context.WithCancel(ctx)
	reaped := make(chan struct{})
	go func() { defer close(reaped); reapTunnels(reapCtx, svc.Host(), c.reapInterval, logger) }()
	defer func() { stopReaping(); <-reaped }() // also when a server fails: the reaper never outlives serve or its store
	defer startEvents(ctx, svc.Host(), c.events, logger, m)()
	fmt.Fprintf(stdout, "listening on %s://%s\n", scheme, ln.Addr())
	if ready != nil {
		ready <- ln.Addr().String()
	}
	if err := serveUntil(ctx, errc, servers); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "shut down")
	return nil
}

// prefaultInterval is how often prefaultHeap looks whether the heap has
// grown: a look that finds it has not costs well under a microsecond
// (package prefault's BenchmarkStep), and the heap of a server storing
// 20,000 records a second grows by about 100 KiB in one interval.
const prefaultInterval = 5 * time.Millisecond

// prefaultHeap makes the memory the Go heap grows by resident ahead of
// its first use (see package prefault) until ctx ends. Where the system
// cannot, it says so in the log and returns.
func prefaultHeap(ctx context.Context, log *slog.Logger) {
	h, err := prefault.New()
	if err != nil {
		log.Info("heap prefault off", "reason", err)
		return
	}
	if err := h.Run(ctx, prefaultInterval); err != nil {
		log.Warn("heap prefault stopped", "err", err)
	}
}

// reapTunnels removes expired tunnels every interval until ctx ends.
func reapTunnels(ctx context.Context, host *edgeplane.Host, interval time.Duration, log *slog.Logger) {
	if interval <= 0 {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			for {
				n, err := host.ReapTunnels(ctx, 500)
				if err != nil && ctx.Err() == nil {
					log.Error("reaping expired tunnels", "err", err)
				}
				if n < 500 || err != nil {
					break
				}
			}
		}
	}
}

// newLogger returns the server's logger in format (text or json),
// writing to w in batches (see logs.go).
func newLogger(format string, w *batchWriter) (*slog.Logger, error) {
	switch format {
	case "text":
		return slog.New(urgentHandler{plainText{slog.NewTextHandler(w, nil), w}, w}), nil
	case "json":
		return slog.New(urgentHandler{slog.NewJSONHandler(w, nil), w}), nil
	}
	return nil, usageError{fmt.Sprintf("-log-format %q: want text or json", format)}
}

// apiFirst serves a request straight from api when mux would route it
// there unchanged: a path of the API (not /healthz, /readyz or the
// console's) that mux would not clean and redirect, and not a CONNECT.
// The others go through mux. The API matches its own routes, so the common request is matched
// once, not twice.
func apiFirst(mux *http.ServeMux, api http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		if r.Method != http.MethodConnect && r.URL.RawPath == "" && p != "/healthz" && p != "/readyz" && !strings.HasPrefix(p, "/console") && isCleanPath(p) {
			api.ServeHTTP(w, r)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// isCleanPath reports whether p is a path [http.ServeMux] leaves as it is
// (it redirects the others to their cleaned form): rooted, without an
// empty, "." or ".." element; a trailing slash is kept.
func isCleanPath(p string) bool {
	if p == "" || p[0] != '/' {
		return false
	}
	start := 1 // of the current element
	for i := 1; i <= len(p); i++ {
		if i < len(p) && p[i] != '/' {
			continue
		}
		switch elem := p[start:i]; elem {
		case ".", "..":
			return false
		case "":
			if i < len(p) { // "//"
				return false
			}
		}
		start = i + 1
	}
	return true
}

// startCPUProfile starts a CPU profile (runtime/pprof) written to path,
// and returns the function that ends it and closes the file.
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("-cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("-cpuprofile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
