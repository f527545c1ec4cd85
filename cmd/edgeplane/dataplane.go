package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"time"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/httpserver"
	"github.com/edgeplane/edgeplane/proxy"
	"github.com/edgeplane/edgeplane/store"
)

// dataPlaneConfig is what the data plane's flags say: those of
// edgeplane proxy, and the same under the prefix "proxy-" in
// edgeplane serve -proxy.
type dataPlaneConfig struct {
	httpAddr, httpsAddr string
	trustedProxies      string
	upstreamNetworks    string
	upstreamNets        []netip.Prefix // upstreamNetworks parsed, by check
	upstreamTimeout     time.Duration
	readTimeout         time.Duration
	writeTimeout        time.Duration
}

// defaultWriteTimeout is the default of -write-timeout: longer than the
// API's, since a proxied response may be a large download.
const defaultWriteTimeout = 5 * time.Minute

// flags registers c's flags on fs, each named prefix+name; httpAddr is
// the default of -http-addr.
func (c *dataPlaneConfig) flags(fs *flag.FlagSet, prefix, httpAddr string) {
	fs.StringVar(&c.httpAddr, prefix+"http-addr", httpAddr, "address of the plain HTTP listener of the edges (\"\": none); a request reaches the edge that serves its Host header's host (HTTPS edges serve port 443; a port in Host is ignored)")
	fs.StringVar(&c.httpsAddr, prefix+"https-addr", "", "address of the TLS listener of the edges (\"\": none); the certificate is the one of the reserved domain the client's SNI names")
	fs.StringVar(&c.trustedProxies, prefix+"trusted-proxies", "", "comma-separated CIDR prefixes or addresses of proxies in front whose X-Forwarded-For is believed for conn.client_ip (default: none)")
	fs.StringVar(&c.upstreamNetworks, prefix+"upstream-networks", "", "comma-separated CIDR prefixes or addresses: the only networks a tunnel's forwards_to may reach (default: any; whoever registers tunnels chooses where the proxy connects, so set it in production)")
	fs.DurationVar(&c.upstreamTimeout, prefix+"upstream-timeout", proxy.DefaultUpstreamTimeout, "how long to wait for an upstream's response headers before answering 504")
	fs.DurationVar(&c.readTimeout, prefix+"read-timeout", httpserver.DefaultReadTimeout, "longest time to read a proxied request, body included")
	fs.DurationVar(&c.writeTimeout, prefix+"write-timeout", defaultWriteTimeout, "longest time from a proxied request's headers to the end of its response")
}

// check validates c's flags (named with prefix) and returns the trusted
// proxies.
func (c *dataPlaneConfig) check(prefix string) ([]netip.Prefix, error) {
	if c.httpAddr == "" && c.httpsAddr == "" {
		return nil, usageError{fmt.Sprintf("-%shttp-addr or -%shttps-addr (or both) is required: the data plane needs a listener", prefix, prefix)}
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"upstream-timeout", c.upstreamTimeout}, {"read-timeout", c.readTimeout}, {"write-timeout", c.writeTimeout}} {
		if d.v <= 0 {
			return nil, usageError{fmt.Sprintf("-%s%s %v: want a positive duration", prefix, d.name, d.v)}
		}
	}
	trusted, err := proxy.ParseTrustedProxies(c.trustedProxies)
	if err != nil {
		return nil, usageError{fmt.Sprintf("-%strusted-proxies: %v", prefix, err)}
	}
	if c.upstreamNets, err = proxy.ParseNetworks(c.upstreamNetworks); err != nil {
		return nil, usageError{fmt.Sprintf("-%supstream-networks: %v", prefix, err)}
	}
	return trusted, nil
}

// serverOptions are the bounds of the data plane's servers.
func (c *dataPlaneConfig) serverOptions(errLog *log.Logger) httpserver.Options {
	return httpserver.Options{ErrorLog: errLog, ReadTimeout: c.readTimeout, WriteTimeout: c.writeTimeout}
}

// dataPlane is the edge data plane running in this process: the edge
// configs that follow the store and the servers of its listeners.
type dataPlane struct {
	configs *proxy.Configs
	servers []*http.Server
	// addrs are the listeners' URLs, http:// first.
	addrs []string
}

// startDataPlane loads every HTTPS edge of the store svc serves (feed is
// its change feed), opens the listeners of c and serves them; a server
// that stops sends its error on errc (which must have room for one error
// per listener). It fails when the edges cannot be loaded (the store does
// not answer) or a listener cannot be opened; then nothing is left
// running. Stop it with close. sealingKey, the Service's, also seals the
// OIDC module's session cookies (each route derives its own key from
// it), so proxies that share a store share sessions.
func startDataPlane(ctx context.Context, svc *edgeplane.Service, feed store.Feed, c dataPlaneConfig, trusted []netip.Prefix,
	sealingKey []byte, logger *slog.Logger, m *metrics, errc chan<- error) (*dataPlane, error) {
	start := time.Now()
	cfgs, err := proxy.New(ctx, svc.Host(), feed, proxy.Options{Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("loading the edges from the store: %w", err)
	}
	d := &dataPlane{configs: cfgs}
	logger.Info("edges loaded", "edges", cfgs.Stats().Edges, "revision", cfgs.Revision(), "took", time.Since(start).Round(time.Millisecond))
	pm := proxy.NewMetrics(proxy.MetricsOptions{})
	m.watchProxy(cfgs, pm)
	h := proxy.NewHandler(cfgs, proxy.HandlerOptions{Logger: logger, TrustedProxies: trusted, UpstreamTimeout: c.upstreamTimeout, Metrics: pm,
		UpstreamNetworks: c.upstreamNets, OIDCKey: sealingKey})
	errLog := slog.NewLogLogger(logger.Handler(), slog.LevelWarn)
	var lns []net.Listener
	for _, l := range []struct {
		addr string
		tls  bool
	}{{c.httpAddr, false}, {c.httpsAddr, true}} {
		if l.addr == "" {
			continue
		}
		ln, err := net.Listen("tcp", l.addr)
		if err != nil {
			for _, ln := range lns {
				ln.Close()
			}
			cfgs.Close()
			return nil, err
		}
		lns = append(lns, ln)
		srv := h.Server(l.tls, c.serverOptions(errLog))
		d.servers = append(d.servers, srv)
		scheme := "http"
		if l.tls {
			scheme = "https"
		}
		d.addrs = append(d.addrs, scheme+"://"+ln.Addr().String())
	}
	for i, srv := range d.servers {
		ln := lns[i]
		go func() {
			if srv.TLSConfig != nil {
				errc <- srv.ServeTLS(ln, "", "") // the certificates come from the edges
			} else {
				errc <- srv.Serve(ln)
			}
		}()
	}
	return d, nil
}

// report prints the data plane's listeners on w.
func (d *dataPlane) report(w io.Writer) {
	st := d.configs.Stats()
	fmt.Fprintf(w, "proxy: %d HTTPS edges loaded at revision %d\n", st.Edges, d.configs.Revision())
	for _, a := range d.addrs {
		fmt.Fprintf(w, "proxy on %s\n", a)
	}
}

// close stops following the store; the servers are shut down by the
// caller, with its others.
func (d *dataPlane) close() { d.configs.Close() }

// serveUntil waits until ctx ends or a server fails (on errc), then shuts
// every server down gracefully, within 10 seconds.
func serveUntil(ctx context.Context, errc <-chan error, servers []*http.Server) error {
	var serveErr error
	select {
	case serveErr = <-errc:
	case <-ctx.Done():
	}
	if err := httpserver.ShutdownAll(10*time.Second, servers...); err != nil && serveErr == nil {
		serveErr = err
	}
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return serveErr
	}
	return nil
}
