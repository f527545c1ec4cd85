package main

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edgeplane/edgeplane/internal/sdktunnel"
	"golang.ngrok.com/ngrok"
	"golang.ngrok.com/ngrok/config"
)

// maxAgentConnections bounds -connections (and agent.connections).
const maxAgentConnections = 16

// cryptoRand is where -basic-auth's salts come from.
var cryptoRand io.Reader = rand.Reader

// agentCmd runs edgeplane agent: a tunnel (http, tcp, tls) or the
// configuration file's endpoints (start) until ctx ends, the server stops
// it, or a tunnel is refused or ends; or one of the config commands.
// ready, when not nil, receives what is printed on stdout once the
// tunnels are up (a URL, or a labeled tunnel's ID and labels, a line
// each).
func agentCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, ready chan<- string) error {
	if len(args) == 0 {
		return usageError{"agent: which server and tunnel? (edgeplane agent -h)"}
	}
	c, fs, rest, err := parseAgentFlags(args, getenv, stdout)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		switch rest[0] {
		case "config":
			return agentConfigCmd(c, rest[1:], getenv, stdout)
		case "start":
			run, err := parseAgentStart(c, fs, rest[1:], getenv, stdout)
			if err != nil {
				return err
			}
			return run.run(ctx, stdout, stderr, ready)
		}
	}
	c, err = parseAgentArgs(args, getenv, stdout)
	if err != nil {
		return err
	}
	run := agentRun{c: c, endpoints: []agentEndpoint{c.endpoint()}}
	return run.run(ctx, stdout, stderr, ready)
}

// agentRun is one run of the agent: its settings and the endpoints it
// binds on its session.
type agentRun struct {
	c         agentConfig
	endpoints []agentEndpoint
	// named prints each tunnel's line after its name (agent start).
	named bool
}

// tunnelConfig returns c's tunnel's configuration for the SDK.
func (c *agentConfig) tunnelConfig() config.Tunnel {
	e := c.endpoint()
	return e.tunnelConfig()
}

// endpointOption is an option of every kind of endpoint.
type endpointOption interface {
	config.HTTPEndpointOption
	config.TLSEndpointOption
	config.TCPEndpointOption
}

// tunnelConfig returns the endpoint's configuration for the SDK: the
// Bind (or StartTunnelWithLabel) the server reads.
func (e *agentEndpoint) tunnelConfig() config.Tunnel {
	forwardsTo := config.WithForwardsTo(e.target.String())
	metadata := config.WithMetadata(e.metadata)
	if len(e.labels) > 0 {
		opts := []config.LabeledTunnelOption{forwardsTo, metadata}
		if e.description != "" {
			opts = append(opts, config.WithDescription(e.description))
		}
		for _, k := range slices.Sorted(maps.Keys(e.labels)) {
			opts = append(opts, config.WithLabel(k, e.labels[k]))
		}
		return config.LabeledTunnel(opts...)
	}
	common := []endpointOption{forwardsTo, metadata}
	if e.name != commandLineName {
		common = append(common, config.WithName(e.name))
	}
	if e.description != "" {
		common = append(common, config.WithDescription(e.description))
	}
	if e.policy != "" {
		common = append(common, config.WithTrafficPolicy(e.policy)) // JSON: the SDK takes it
	}
	if e.pooling {
		common = append(common, config.WithPoolingEnabled(true))
	}
	if len(e.bindings) > 0 {
		common = append(common, config.WithBindings(e.bindings...))
	}
	switch e.proto {
	case "tcp":
		opts := make([]config.TCPEndpointOption, 0, len(common)+1)
		for _, o := range common {
			opts = append(opts, o)
		}
		if e.remoteAddr != "" {
			opts = append(opts, config.WithRemoteAddr(e.remoteAddr))
		}
		return config.TCPEndpoint(opts...)
	case "tls":
		// No termination option: the edge passes the client's TLS through.
		opts := make([]config.TLSEndpointOption, 0, len(common)+1)
		for _, o := range common {
			opts = append(opts, o)
		}
		return config.TLSEndpoint(append(opts, config.WithDomain(e.domain))...)
	}
	opts := make([]config.HTTPEndpointOption, 0, len(common)+2)
	for _, o := range common {
		opts = append(opts, o)
	}
	if e.scheme == "http" {
		opts = append(opts, config.WithScheme(config.SchemeHTTP))
	}
	if e.domain != "" {
		opts = append(opts, config.WithDomain(e.domain))
	}
	return config.HTTPEndpoint(opts...)
}

// loadRoots returns the roots the server's certificate is checked
// against: the PEM file's certificates alone, or the system's roots.
// (Without SDK option WithCA the SDK would trust only the original
// service's own root.) name is where the file was given: -ca, or
// agent.ca in the configuration file.
func loadRoots(file, name string) (*x509.CertPool, error) {
	if file == "" {
		pool, err := x509.SystemCertPool()
		if err != nil {
			return nil, fmt.Errorf("the system's roots: %w; give -ca FILE", err)
		}
		return pool, nil
	}
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	pool, err := rootsFromPEM(pem)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", name, file, err)
	}
	return pool, nil
}

// rootsFromPEM returns a pool of the PEM certificates.
func rootsFromPEM(pem []byte) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, errors.New("no PEM certificate in the file")
	}
	return pool, nil
}

// run runs r until ctx ends, the server stops the session, or a tunnel
// is refused or ends. ready, when not nil, receives what is printed on
// stdout once every tunnel is up.
func (r *agentRun) run(ctx context.Context, stdout, stderr io.Writer, ready chan<- string) error {
	c := &r.c
	caName := "-ca"
	if from := c.fromFile["ca"]; from != "" {
		caName = from
	}
	roots, err := loadRoots(c.ca, caName)
	if err != nil {
		return err
	}
	logger, stopLogs, err := startLogs(c.logFormat, stderr)
	if err != nil {
		return err
	}
	defer stopLogs() // the last lines are written before agent returns

	state := newAgentState(len(r.endpoints))
	if c.inspectAddr != "off" && c.inspect.or(true) {
		state.ins = newInspector(inspectLimits{}, nil)
	}
	if c.inspectAddr != "off" {
		ln, err := listenAgentAPI(c.inspectAddr, defaultInspectAddr, defaultInspectPorts)
		switch {
		case err == nil:
			srv := &http.Server{Handler: state.handler(), ReadHeaderTimeout: 5 * time.Second, ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelDebug)}
			go srv.Serve(ln)
			defer srv.Close()
			logger.Info("agent API", "url", "http://"+ln.Addr().String()+"/api")
		case c.inspectAddr == "": // the default address and the nine after it are taken
			logger.Warn("no agent API: its ports are taken; give -inspect-addr (or agent.inspect_addr)", "err", oneLine(err.Error()))
		default:
			name := "-inspect-addr"
			if from := c.fromFile["inspect_addr"]; from != "" {
				name = from
			}
			return fmt.Errorf("%s %s: %w (give another address, or off)", name, c.inspectAddr, err)
		}
	}

	// The session lives on a context of its own: the SDK closes the
	// session when its context ends, and a signal must first close the
	// tunnels through it. While connecting, a signal ends it at once.
	sessCtx, cancelSess := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelSess()
	var (
		closing  atomic.Bool                  // failures from now on are the agent's own closing
		stopped  atomic.Bool                  // the server asked the session to stop
		connects atomic.Int64                 // sessions established
		refused  atomic.Pointer[error]        // why the run's first connection was refused for good
		current  atomic.Pointer[ngrok.Tunnel] // the first tunnel, once started
	)
	// Each connection (-connections) is a session of its own, with a
	// ring of its own that starts at the next server of the list, as
	// cloudflared spreads its connections over edge servers.
	n := max(c.connections, 1)
	connectOptions := func(ring *serverRing) []ngrok.ConnectOption {
		return []ngrok.ConnectOption{
			ngrok.WithServer(c.server), // only named in the SDK's errors: ring dials
			ngrok.WithDialer(ring),
			ngrok.WithCA(roots),
			ngrok.WithTLSConfig(ring.configureTLS),
			ngrok.WithAuthtoken(c.authtoken),
			ngrok.WithConnectHandler(func(context.Context, ngrok.Session) {
				msg := "session established"
				if connects.Add(1) > int64(n) {
					msg = "session re-established"
				}
				server, _, _ := ring.report(false)
				state.connected(server.addr)
				attrs := []slog.Attr{slog.String("server", server.addr)}
				if t := current.Load(); t != nil && len(r.endpoints) == 1 && n == 1 {
					attrs = append(attrs, slog.String("tunnel", (*t).ID())) // a labeled tunnel's ID changes on rebind
				}
				logger.LogAttrs(context.Background(), slog.LevelInfo, msg, attrs...)
			}),
			// The SDK retries a failed connection, authentication or rebind
			// for ever; each failure is reported here. Until the run's first
			// session is up, a refusal that no retry can change ends the run.
			ngrok.WithDisconnectHandler(func(_ context.Context, s ngrok.Session, err error) {
				if err == nil || closing.Load() || sessCtx.Err() != nil {
					return
				}
				server, next, certErr := ring.report(true)
				if connects.Load() == 0 {
					if ferr := c.refusal(err, certErr, server); ferr != nil {
						refused.Store(&ferr)
						closing.Store(true)
						_ = s.Close() // Connect returns
						return
					}
				}
				state.disconnected()
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
	}
	stopConnecting := context.AfterFunc(ctx, cancelSess)
	sessions := make([]ngrok.Session, 0, n)
	var err2 error
	for i := range n {
		sess, err := ngrok.Connect(sessCtx, connectOptions(&serverRing{servers: c.servers, picked: i, reported: i})...)
		if sess != nil {
			sessions = append(sessions, sess)
		}
		if err != nil || ctx.Err() != nil {
			err2 = err
			break
		}
	}
	if !stopConnecting() || err2 != nil {
		closing.Store(true)
		for _, sess := range sessions {
			sess.Close()
		}
		if ferr := refused.Load(); ferr != nil {
			return *ferr
		}
		if ctx.Err() != nil {
			return nil // a signal while connecting
		}
		return fmt.Errorf("connect to the tunnel server %s: %w", c.server, sdkError{err2})
	}
	defer func() {
		closing.Store(true)
		for _, sess := range sessions {
			_ = sess.Close()
		}
	}()

	// The tunnels, in order, each on every session (pooled when there
	// are several); the first refused ends the run.
	type running struct {
		ep  *agentEndpoint
		tun ngrok.Tunnel
		api *apiTunnel
	}
	runs := make([]running, 0, len(r.endpoints)*n)
	var lines []string
	for i := range r.endpoints {
		ep := &r.endpoints[i]
		if n > 1 && len(ep.labels) == 0 {
			ep.pooling = true // a labeled tunnel is one of its backend's tunnels on each session
		}
		var api *apiTunnel
		for j, sess := range sessions {
			tun, err := listen(ctx, sess, ep.tunnelConfig())
			if err != nil && r.named {
				err = fmt.Errorf("endpoint %s: %w", ep.name, err)
			}
			if err != nil || tun == nil {
				closing.Store(true)
				for _, run := range runs {
					_ = run.tun.Close()
				}
				return err // nil: a signal while starting
			}
			if j > 0 {
				runs = append(runs, running{ep: ep, tun: tun, api: api})
				continue
			}
			if i == 0 {
				current.Store(&tun)
			}
			if n > 1 && ep.proto == "tcp" && ep.remoteAddr == "" {
				ep.remoteAddr = strings.TrimPrefix(tun.URL(), "tcp://") // the others join the address the server picked
			}
			line := tun.URL()
			if len(ep.labels) > 0 {
				labels := tun.Labels()
				kvs := make([]string, 0, len(labels))
				for _, k := range slices.Sorted(maps.Keys(labels)) {
					kvs = append(kvs, k+"="+labels[k])
				}
				line = tun.ID() + " labels " + strings.Join(kvs, ",")
			}
			if r.named {
				line = ep.name + " " + line
			}
			lines = append(lines, line)
			api = state.add(ep, tun)
			runs = append(runs, running{ep: ep, tun: tun, api: api})
			attrs := []any{"tunnel", tun.ID(), "proto", ep.proto, "target", ep.target.String()}
			if r.named {
				attrs = append([]any{"endpoint", ep.name}, attrs...)
			}
			if n > 1 {
				attrs = append(attrs, "connections", n)
			}
			logger.Info("tunnel started", attrs...)
		}
	}
	fmt.Fprintln(stdout, strings.Join(lines, "\n"))
	if ready != nil {
		ready <- strings.Join(lines, "\n")
	}

	// Each tunnel's connections are accepted until it ends; the first to
	// end (or a signal) ends them all.
	type ended struct {
		ep  *agentEndpoint
		err error
	}
	endedc := make(chan ended, len(runs))
	var accepting, conns sync.WaitGroup
	for _, run := range runs {
		accepting.Add(1)
		go func() {
			defer accepting.Done()
			for {
				conn, err := sdktunnel.Accept(run.tun)
				if err != nil {
					endedc <- ended{run.ep, err}
					return
				}
				conns.Add(1)
				run.api.opened()
				go func() {
					defer conns.Done()
					defer run.api.closed()
					forwardInspected(ctx, conn, run.ep.target, logger, state.ins, run.ep.name)
				}()
			}
		}()
	}
	var end ended
	select {
	case <-ctx.Done():
		closing.Store(true)
		for _, run := range runs {
			if err := run.tun.Close(); err != nil { // Unbind, before the session closes
				logger.Warn("closing the tunnel", "tunnel", run.tun.ID(), "err", agentError(err))
			}
		}
	case end = <-endedc:
	}
	closing.Store(true)
	for _, sess := range sessions {
		_ = sess.Close() // ends the other tunnels and the connections' streams
	}
	accepting.Wait()
	conns.Wait()
	switch {
	case ctx.Err() != nil:
	case stopped.Load():
		logger.Info("stopped by the server", "tunnel", runs[0].tun.ID())
	default:
		err := tunnelEnded(end.err)
		if r.named {
			err = fmt.Errorf("endpoint %s: %w", end.ep.name, err)
		}
		return err
	}
	fmt.Fprintln(stdout, "shut down")
	return nil
}

// refusal returns the error that ends a run whose first connection
// failed with err, when every retry would fail the same way: the server
// refused the authtoken (or the agent), or the certificate of server
// did not verify (certErr). Else it returns nil, and the agent retries.
func (c *agentConfig) refusal(err, certErr error, server agentServer) error {
	if certErr != nil {
		reason := certErr.Error()
		var cve *tls.CertificateVerificationError
		if errors.As(certErr, &cve) {
			reason = cve.Err.Error()
		}
		roots := "the system's roots"
		if c.ca != "" {
			roots = "the roots of " + c.ca
			if from := c.fromFile["ca"]; from != "" {
				roots += " (" + from + ")"
			}
		}
		return fmt.Errorf("the tunnel server %s presented a certificate the agent does not trust: %s (checked against %s for %s); give the CA that signs it with -ca FILE or agent.ca in the configuration file (serve -proxy prints the path of its local CA)",
			server.addr, oneLine(reason), roots, server.host)
	}
	var nerr ngrok.Error
	if !errors.As(err, &nerr) {
		return nil // not the server's answer: the network, a reset, a timeout
	}
	msg, code := serverMessage(nerr)
	switch code {
	case "ERR_SERVICE_105", // unauthenticated: edgeplane's one refusal of an authtoken
		"ERR_NGROK_105", "ERR_NGROK_107", "ERR_NGROK_300", "ERR_NGROK_4018": // the original service's
		from := ""
		if f := c.fromFile["authtoken"]; f != "" {
			from = " (" + f + ")"
		}
		return fmt.Errorf("the server refused the authtoken%s: %s; give the token of a tunnel credential of the account (POST /credentials makes one) with -authtoken, EDGEPLANE_AUTHTOKEN or edgeplane agent config add-authtoken TOKEN",
			from, withCode(msg, code))
	case "ERR_SERVICE_104", // permission denied: an IP restriction of type agent refuses the agent's address
		"ERR_SERVICE_100": // invalid argument: the agent's Auth itself
		return fmt.Errorf("the server refused the agent: %s", withCode(msg, code))
	}
	return nil // limits, the server's own failures: they pass
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
	if errors.As(err, &nerr) {
		if msg, code := serverMessage(nerr); msg != "" {
			return fmt.Errorf("the server stopped the tunnel: %s", withCode(msg, code))
		}
	}
	return fmt.Errorf("the tunnel ended: %w", sdkError{err})
}
