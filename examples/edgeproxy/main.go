// Command edgeproxy is a short example of package proxy: a Service on the
// in-memory store with its management API, and the edge data plane in
// front of it, in one process.
//
//	go run ./examples/edgeproxy -upstream http://127.0.0.1:3000 [-host app.example.com]
//
// It bootstraps one account (the admin's API key from EDGEPLANE_API_KEY,
// or generated and printed once), reserves the domain -host and creates
// an HTTPS edge serving it whose route's backend is a tunnel forwarding
// to -upstream. proxy.New follows the store and proxy.NewHandler serves
// every HTTPS edge in it on -addr by the request's Host; the management
// API and the proxy's metrics (/metrics) are on -api-addr. Changes
// made through the API apply to the next requests. State lives in memory.
// The deployable form is `edgeplane proxy` in cmd/edgeplane.
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
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/credentials"
	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/httpapi"
	"github.com/edgeplane/edgeplane/httpserver"
	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/proxy"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr, nil); err != nil {
		fmt.Fprintln(os.Stderr, "edgeproxy:", err)
		os.Exit(1)
	}
}

// run serves until ctx is done. ready, when not nil, receives the
// proxy's and the API's addresses once they listen.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, ready chan<- [2]string) error {
	fs := flag.NewFlagSet("edgeproxy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8000", "address the proxy listens on (plain HTTP)")
	apiAddr := fs.String("api-addr", "127.0.0.1:8080", "address of the management API")
	host := fs.String("host", "app.example.com", "the edge's host name (a reserved domain)")
	upstream := fs.String("upstream", "", "where the tunnel forwards, such as http://127.0.0.1:3000 (required)")
	if err := fs.Parse(args); err != nil || *upstream == "" || fs.NArg() > 0 {
		return errors.New("usage: edgeproxy -upstream http://127.0.0.1:3000 [flags]")
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))

	// The control plane: a Service on the in-memory store, and the
	// account, edge and tunnel the proxy serves.
	st := memstore.New()
	svc, err := edgeplane.New(st, edgeplane.Options{Logger: log})
	if err != nil {
		return err
	}
	defer svc.Close(context.Background())
	b, err := svc.Host().Bootstrap(ctx, getenv("EDGEPLANE_API_KEY"))
	if err != nil {
		return fmt.Errorf("EDGEPLANE_API_KEY: %w", err)
	}
	if getenv("EDGEPLANE_API_KEY") == "" {
		fmt.Fprintf(stdout, "admin API key (shown once): %s\n", *b.APIKey.Token)
	}
	p := edgeplane.Principal{AccountID: b.AccountID, SubjectID: b.AdminID, Admin: true}
	route, tunnel, err := bootstrapEdge(ctx, svc, p, *host, *upstream)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "EDGE=%s\nROUTE=%s\nTUNNEL=%s\n", route.EdgeID, route.ID, tunnel.ID)
	go renew(ctx, svc, p.AccountID, tunnel.ID, log)

	// The data plane: the configs of every HTTPS edge in the store,
	// following its change feed, and the handler that serves them.
	cfgs, err := proxy.New(ctx, svc.Host().DataPlane(), st, proxy.Options{Logger: log})
	if err != nil {
		return err
	}
	defer cfgs.Close()
	metrics := proxy.NewMetrics(proxy.MetricsOptions{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics)
	h := proxy.NewHandler(cfgs, proxy.HandlerOptions{Logger: log, Metrics: metrics})
	api, err := httpapi.New(svc, httpapi.Options{Logger: log})
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/", api)
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))

	servers := []*http.Server{h.Server(false, httpserver.Options{}), httpserver.New(mux, httpserver.Options{})}
	var addrs [2]string
	errc := make(chan error, len(servers))
	for i, a := range []string{*addr, *apiAddr} {
		ln, err := net.Listen("tcp", a)
		if err != nil {
			_ = httpserver.ShutdownAll(time.Second, servers[:i]...)
			return err
		}
		addrs[i] = ln.Addr().String()
		go func() { errc <- servers[i].Serve(ln) }()
	}
	fmt.Fprintf(stdout, "proxy on http://%s (Host: %s:443), management API and /metrics on http://%s\n", addrs[0], *host, addrs[1])
	if ready != nil {
		ready <- addrs
	}
	select {
	case err = <-errc:
	case <-ctx.Done():
	}
	if shutdownErr := httpserver.ShutdownAll(10*time.Second, servers...); err == nil {
		err = shutdownErr
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// bootstrapEdge reserves host in p's account, creates an HTTPS edge
// serving host:443 with a path_prefix "/" route whose backend is the
// tunnel group app=web, and registers a tunnel of it forwarding to
// upstream with a credential's authtoken, as a tunnel server would.
func bootstrapEdge(ctx context.Context, svc *edgeplane.Service, p edgeplane.Principal, host, upstream string) (*edges.HTTPSRoute, *backends.Tunnel, error) {
	if _, err := svc.CreateReservedDomain(ctx, p, domains.CreateParams{Domain: host}); err != nil {
		return nil, nil, fmt.Errorf("-host: %w", err)
	}
	labels := map[string]string{"app": "web"}
	backend, err := svc.CreateTunnelGroupBackend(ctx, p, backends.CreateParams{Labels: labels})
	if err != nil {
		return nil, nil, err
	}
	edge, err := svc.CreateHTTPSEdge(ctx, p, edges.CreateEdgeParams{Hostports: []string{host + ":443"}})
	if err != nil {
		return nil, nil, err
	}
	route, err := svc.CreateHTTPSEdgeRoute(ctx, p, edge.ID, edges.CreateRouteParams{MatchType: edges.MatchPathPrefix, Match: "/",
		Backend: &edges.BackendParams{BackendID: backend.ID}})
	if err != nil {
		return nil, nil, err
	}
	cred, err := svc.CreateCredential(ctx, p, credentials.CreateParams{ACL: []string{"bind:app=web"}})
	if err != nil {
		return nil, nil, err
	}
	tunnel, err := svc.Host().RegisterTunnel(ctx, *cred.Token, backends.RegisterTunnelParams{Labels: labels, ForwardsTo: upstream})
	if err != nil {
		return nil, nil, fmt.Errorf("-upstream: %w", err)
	}
	return route, tunnel, nil
}

// renew renews a tunnel's lease every third of it until ctx is done, as
// the tunnel's server does while the agent is connected.
func renew(ctx context.Context, svc *edgeplane.Service, accountID, tunnelID string, log *slog.Logger) {
	t := time.NewTicker(edgeplane.DefaultTunnelLease / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := svc.Host().RenewTunnel(ctx, accountID, tunnelID); err != nil && ctx.Err() == nil {
				log.Error("renewing the tunnel's lease", "err", err)
			}
		}
	}
}
