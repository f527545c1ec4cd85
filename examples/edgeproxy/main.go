// Command edgeproxy is an example edge proxy: a reverse proxy
// (net/http/httputil.ReverseProxy) that applies an HTTPS edge's routes and
// modules, traffic policies included, to the requests it forwards.
//
//	go run ./examples/edgeproxy -upstream http://127.0.0.1:3000                   # Service mode
//	go run ./examples/edgeproxy -upstream http://127.0.0.1:3000 -policy FILE.json # standalone mode
//
// # Service mode
//
// Without -policy, the command embeds an [edgeplane.Service] on the
// in-memory store and serves its management API (package httpapi) on
// -api-addr, as examples/apiserver does: one account with an admin user
// whose API key comes from EDGEPLANE_API_KEY or is generated and printed
// once. It creates an HTTPS edge with one path_prefix "/" route whose
// backend module names a tunnel group backend, registers an online tunnel
// of that backend (with a credential's authtoken) that forwards to
// -upstream, renews the tunnel's lease as a tunnel server would, and
// prints the IDs. The proxy on -addr serves that edge:
// modules and traffic policies changed through the API apply from the next
// request on.
//
// # Standalone mode
//
// With -policy FILE.json, the command runs the traffic policy in the file
// in front of -upstream, without a Service. SIGHUP re-reads the file; a
// file that does not compile is reported and the running policy kept.
//
// # The pipeline
//
// A request is matched to a route (exact_path beats path_prefix, the
// longest prefix wins; no match is 404). Then, in order: the route's
// traffic policy inbound rules (they may answer: deny, custom-response,
// redirect, restrict-ips, rate-limit with 429 and retry-after; or edit the
// request: add-headers, remove-headers, url-rewrite; or log), the backend
// (one of the online tunnels of the route's backend, round-robin; 503 when
// there is none, 502 when it fails, 504 when it sends no response headers
// within -upstream-timeout), and on the way back the outbound
// rules, the response headers module and the compression module (gzip
// when the client accepts it and the content type is textual). A route
// with an enabled OIDC module is refused with 501: this proxy does not
// implement OIDC, and letting its traffic through unauthenticated would be
// worse.
//
// conn.client_ip is the connection's peer address. X-Forwarded-For is
// believed only from peers that -trusted-proxies names.
//
// Every server (proxy, API, metrics) has the timeouts and request bounds of
// package httpserver: 431 beyond 32 KiB of headers, 414 beyond an 8 KiB
// request target, the bounds the policy cost model assumes. The proxy's
// read and write timeouts are -read-timeout and -write-timeout.
//
// Each request is logged with log/slog on stderr. Counters of requests,
// denied requests, rate-limited requests and upstream errors are served in
// the Prometheus text format at /metrics on -admin-addr. The command
// shuts down gracefully on SIGINT or SIGTERM.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/credentials"
	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/httpapi"
	"github.com/edgeplane/edgeplane/httpserver"
	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/policy"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	reload := make(chan struct{})
	go func() {
		for range hup {
			reload <- struct{}{}
		}
	}()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr, reload, nil); err != nil {
		fmt.Fprintln(os.Stderr, "edgeproxy:", err)
		os.Exit(1)
	}
}

// addrs are the addresses run listens on; API is empty in standalone mode.
type addrs struct {
	Proxy, Admin, API string
}

// run starts the servers and blocks until ctx is done. A value on reload
// re-reads the -policy file (standalone mode). ready, when not nil,
// receives the listening addresses.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, reload <-chan struct{}, ready chan<- addrs) error {
	fs := flag.NewFlagSet("edgeproxy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8000", "address the proxy listens on")
	adminAddr := fs.String("admin-addr", "127.0.0.1:9090", "address of /metrics")
	apiAddr := fs.String("api-addr", "127.0.0.1:8080", "address of the management API (Service mode)")
	baseURL := fs.String("base-url", "", "base URL of the API's uri fields (default http://<api-addr>)")
	upstreamFlag := fs.String("upstream", "", "the upstream server, such as http://127.0.0.1:3000 (required)")
	policyFile := fs.String("policy", "", "traffic policy document (JSON): run standalone, without a Service")
	trustedFlag := fs.String("trusted-proxies", "", "comma-separated CIDRs of proxies whose X-Forwarded-For is believed")
	readTimeout := fs.Duration("read-timeout", httpserver.DefaultReadTimeout, "longest time to read a proxied request, body included")
	writeTimeout := fs.Duration("write-timeout", 5*time.Minute, "longest time from a proxied request's headers to the end of its response")
	upstreamTimeout := fs.Duration("upstream-timeout", DefaultUpstreamTimeout, "longest wait for an upstream's response headers (then 504)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *upstreamFlag == "" {
		return errors.New("-upstream is required, such as -upstream http://127.0.0.1:3000")
	}
	upstream, err := url.Parse(*upstreamFlag)
	if err != nil {
		return fmt.Errorf("-upstream: %w", err)
	}
	if err := checkUpstream(upstream); err != nil {
		return fmt.Errorf("-upstream: %w", err)
	}
	trusted, err := parseTrustedProxies(*trustedFlag)
	if err != nil {
		return fmt.Errorf("-trusted-proxies: %w", err)
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))

	var listeners []net.Listener
	defer func() {
		for _, ln := range listeners {
			ln.Close()
		}
	}()
	listen := func(addr string) (net.Listener, error) {
		ln, err := net.Listen("tcp", addr)
		if err == nil {
			listeners = append(listeners, ln)
		}
		return ln, err
	}
	type served struct {
		ln net.Listener
		h  http.Handler
	}
	var serve []served
	proxyLn, err := listen(*addr)
	if err != nil {
		return err
	}
	adminLn, err := listen(*adminAddr)
	if err != nil {
		return err
	}
	listening := addrs{Proxy: proxyLn.Addr().String(), Admin: adminLn.Addr().String()}

	var proxy *Proxy
	var reloadPolicy func() error
	if *policyFile != "" {
		engine, err := policy.NewEngine(policy.Options{Sink: policy.NewSlogSink(logger)})
		if err != nil {
			return err
		}
		compile := func() (*policy.Policy, error) {
			data, err := os.ReadFile(*policyFile)
			if err != nil {
				return nil, err
			}
			pol, err := engine.CompileJSON(data, policy.CompileOptions{Target: policy.TargetHTTP, Scope: standaloneRouteID})
			if err != nil {
				return nil, fmt.Errorf("%s: %w", *policyFile, describe(err))
			}
			return pol, nil
		}
		pol, err := compile()
		if err != nil {
			return err
		}
		proxy, err = New(ctx, Options{Upstream: upstream, Policy: pol, Logger: logger, TrustedProxies: trusted, UpstreamTimeout: *upstreamTimeout})
		if err != nil {
			return err
		}
		reloadPolicy = func() error {
			pol, err := compile()
			if err != nil {
				return err
			}
			return proxy.SetPolicy(pol)
		}
		fmt.Fprintf(stdout, "standalone: policy %s in front of %s\n", *policyFile, upstream)
	} else {
		if !isRoot(upstream) {
			return fmt.Errorf("-upstream: %q: in Service mode it is a tunnel's forwards_to, which names a server: no path beyond /", upstream)
		}
		apiLn, err := listen(*apiAddr)
		if err != nil {
			return err
		}
		listening.API = apiLn.Addr().String()
		if *baseURL == "" {
			*baseURL = "http://" + apiLn.Addr().String()
		}
		st := memstore.New()
		svc := edgeplane.New(st, edgeplane.Options{BaseURL: *baseURL, Logger: logger})
		env := getenv("EDGEPLANE_API_KEY")
		b, err := bootstrap(ctx, svc, env, upstream.String())
		if err != nil {
			return err
		}
		if env == "" {
			fmt.Fprintf(stdout, "admin API key (shown once): %s\n", b.key)
		} else {
			fmt.Fprintln(stdout, "admin API key: from EDGEPLANE_API_KEY")
		}
		fmt.Fprintf(stdout, "EDGE=%s\nROUTE=%s\nBACKEND=%s\nTUNNEL=%s\n", b.edgeID, b.routeID, b.backendID, b.tunnelID)
		go renewTunnel(ctx, svc, b, logger)
		proxy, err = New(ctx, Options{Service: svc, AccountID: b.accountID, EdgeID: b.edgeID, Version: storeRevision(st),
			Logger: logger, TrustedProxies: trusted, UpstreamTimeout: *upstreamTimeout})
		if err != nil {
			return err
		}
		h, err := httpapi.New(svc, httpapi.Options{Logger: logger})
		if err != nil {
			return err
		}
		serve = append(serve, served{apiLn, h})
		fmt.Fprintf(stdout, "management API on http://%s\n", apiLn.Addr())
	}

	admin := http.NewServeMux()
	admin.Handle("GET /metrics", proxy.MetricsHandler())
	serve = append(serve, served{proxyLn, proxy}, served{adminLn, admin})
	servers := make([]*http.Server, len(serve))
	errc := make(chan error, len(serve))
	for i, s := range serve {
		o := httpserver.Options{ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
		if s.ln == proxyLn {
			o.ReadTimeout, o.WriteTimeout = *readTimeout, *writeTimeout
		}
		servers[i] = httpserver.New(s.h, o)
		go func() { errc <- servers[i].Serve(s.ln) }()
	}
	fmt.Fprintf(stdout, "proxy on http://%s, metrics on http://%s/metrics\n", proxyLn.Addr(), adminLn.Addr())
	if ready != nil {
		ready <- listening
	}

	var serveErr error
loop:
	for {
		select {
		case serveErr = <-errc:
			break loop
		case <-reload:
			if reloadPolicy == nil {
				logger.Info("reload: nothing to re-read in Service mode; change the edge through the API")
				continue
			}
			if err := reloadPolicy(); err != nil {
				logger.Error("reload: keeping the running policy", "err", err)
				continue
			}
			logger.Info("reload: policy replaced", "file", *policyFile)
		case <-ctx.Done():
			break loop
		}
	}
	if err := httpserver.ShutdownAll(10*time.Second, servers...); err != nil && serveErr == nil {
		serveErr = err
	}
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return serveErr
	}
	fmt.Fprintln(stdout, "shut down")
	return nil
}

// isRoot reports whether u has no path beyond "/".
func isRoot(u *url.URL) bool { return u.Path == "" || u.Path == "/" }

// describe spells out the violations of an invalid policy, one per line.
func describe(err error) error {
	var ae *apierr.Error
	if !errors.As(err, &ae) || len(ae.Violations) == 0 {
		return err
	}
	msg := "the traffic policy does not compile:"
	for _, v := range ae.Violations {
		msg += "\n  " + v.Field + ": " + v.Reason
	}
	return errors.New(msg)
}

// bootstrapped holds what bootstrap created.
type bootstrapped struct {
	key                                             string
	accountID, edgeID, routeID, backendID, tunnelID string
}

// bootstrap creates the account, its admin and the admin's API key (with
// secret when not empty), and the edge the proxy serves: an HTTPS edge
// with a path_prefix "/" route whose backend module names a tunnel group
// backend selecting app=web, and an online tunnel with that label
// forwarding to upstream, registered with a credential's authtoken as a
// tunnel server would.
func bootstrap(ctx context.Context, svc *edgeplane.Service, secret, upstream string) (*bootstrapped, error) {
	b, err := svc.Host().Bootstrap(ctx, secret)
	if err != nil {
		return nil, fmt.Errorf("EDGEPLANE_API_KEY: %w", err)
	}
	if !b.Created {
		return nil, errors.New("the store already has an account; Service mode bootstraps an empty store")
	}
	key := b.APIKey
	p := edgeplane.Principal{AccountID: b.AccountID, SubjectID: b.AdminID, Admin: true}
	labels := map[string]string{"app": "web"}
	backend, err := svc.CreateTunnelGroupBackend(ctx, p, backends.CreateParams{Description: "edgeproxy example", Labels: labels})
	if err != nil {
		return nil, err
	}
	edge, err := svc.CreateHTTPSEdge(ctx, p, edges.CreateEdgeParams{Description: "edgeproxy example"})
	if err != nil {
		return nil, err
	}
	rt, err := svc.CreateHTTPSEdgeRoute(ctx, p, edge.ID, edges.CreateRouteParams{MatchType: edges.MatchPathPrefix, Match: "/"})
	if err != nil {
		return nil, err
	}
	if _, err := svc.ReplaceHTTPSRouteBackend(ctx, p, edge.ID, rt.ID, edges.BackendParams{BackendID: backend.ID}); err != nil {
		return nil, err
	}
	cred, err := svc.CreateCredential(ctx, p, credentials.CreateParams{Description: "edgeproxy tunnel", ACL: []string{"bind:app=web"}})
	if err != nil {
		return nil, err
	}
	tunnel, err := svc.Host().RegisterTunnel(ctx, *cred.Token, backends.RegisterTunnelParams{Labels: labels, ForwardsTo: upstream})
	if err != nil {
		return nil, err
	}
	return &bootstrapped{key: *key.Token, accountID: b.AccountID, edgeID: edge.ID, routeID: rt.ID, backendID: backend.ID, tunnelID: tunnel.ID}, nil
}

// renewTunnel renews the lease of the bootstrapped tunnel every third of
// the lease, as a tunnel server does for its open tunnels, until ctx ends.
func renewTunnel(ctx context.Context, svc *edgeplane.Service, b *bootstrapped, log *slog.Logger) {
	t := time.NewTicker(edgeplane.DefaultTunnelLease / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := svc.Host().RenewTunnel(ctx, b.accountID, b.tunnelID); err != nil && ctx.Err() == nil {
				log.Error("renewing the tunnel's lease", "tunnel", b.tunnelID, "err", err)
			}
		}
	}
}
