package proxy

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/clientip"
	"github.com/edgeplane/edgeplane/edgeconfig"
	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/policy"
	"github.com/edgeplane/edgeplane/proxy/relay"
	"github.com/edgeplane/edgeplane/proxy/sni"
)

// Defaults of [StreamOptions].
const (
	// DefaultHandshakeTimeout bounds the wait for a client's ClientHello
	// and, when the edge terminates TLS, for the whole handshake.
	DefaultHandshakeTimeout = 10 * time.Second
	// DefaultConnectTimeout bounds a connection to a tunnel's upstream.
	DefaultConnectTimeout = 10 * time.Second
	// DefaultIdleTimeout closes a TLS or TCP edge's connection on which
	// no byte moved, either way, for this long.
	DefaultIdleTimeout = 5 * time.Minute
	// DefaultMaxConnsPerEdge bounds the open connections of one TLS or
	// TCP edge on one proxy.
	DefaultMaxConnsPerEdge = 1024
	// reapInterval is how often connections of deleted edges are cut.
	reapInterval = 250 * time.Millisecond
)

// Outcomes of a TLS or TCP edge's connection, the values of the outcome
// label of edgeplane_proxy_connections_total.
const (
	outcomeServed          = "served"           // relayed to an upstream until either side ended
	outcomeIPRestricted    = "ip_restricted"    // the IP restriction module refused the source address
	outcomePolicyDenied    = "policy_denied"    // the traffic policy's on_tcp_connect rules closed it
	outcomeOverLimit       = "over_limit"       // the edge had MaxConnsPerEdge open connections
	outcomeNoCertificate   = "no_certificate"   // TLS terminates at the edge and its host has no certificate
	outcomeHandshakeFailed = "handshake_failed" // the client's TLS handshake with the edge failed
	outcomeNoUpstream      = "no_upstream"      // no backend, or no tunnel under lease
	outcomeUpstreamFailed  = "upstream_failed"  // every tunnel's upstream refused the connection
	outcomeUnrouted        = "unrouted"         // no TLS or TCP edge serves the name or port
)

// StreamOptions configures [Streams]. The zero value means the documented
// defaults.
type StreamOptions struct {
	// Logger receives one line per connection (at Info: refused ones with
	// the reason, served ones when they end, with bytes each way). Nil
	// discards them.
	Logger *slog.Logger
	// UpstreamNetworks, when not empty, are the only networks connections
	// go to (checked on the dialled address, after name resolution), as
	// [HandlerOptions.UpstreamNetworks]. Ignored when Dial is set.
	UpstreamNetworks []netip.Prefix
	// Dial connects to a tunnel's upstream (host:port from its
	// forwards_to). Nil: a net.Dialer bounded by ConnectTimeout and
	// UpstreamNetworks. A host with a tunnel transport gives its own.
	Dial func(ctx context.Context, network, address string) (net.Conn, error)
	// HandshakeTimeout bounds the ClientHello and the TLS handshake; zero
	// means [DefaultHandshakeTimeout].
	HandshakeTimeout time.Duration
	// ConnectTimeout bounds each connection attempt to an upstream; zero
	// means [DefaultConnectTimeout].
	ConnectTimeout time.Duration
	// IdleTimeout closes a connection on which no byte moved either way
	// for this long; zero means [DefaultIdleTimeout].
	IdleTimeout time.Duration
	// MaxConnsPerEdge bounds the open connections of one edge; more are
	// closed at once. Zero means [DefaultMaxConnsPerEdge].
	MaxConnsPerEdge int
	// FailureBackoff is how long a tunnel whose upstream refused a
	// connection is skipped while another is usable; zero means
	// [DefaultFailureBackoff].
	FailureBackoff time.Duration
	// Clock gives the time of traffic policy evaluation and tunnel
	// leases. Nil: time.Now.
	Clock func() time.Time
	// Metrics receives the connections' outcomes; nil measures nothing.
	Metrics *Metrics
	// Agents reaches the tunnels that agents hold (a tunnel whose
	// TunnelSession is set), as [HandlerOptions.Agents] does: a
	// connection to such a tunnel is a stream Agents.DialTunnel opens
	// (within ConnectTimeout), told the client's address, the protocol
	// ("tls" or "tcp") and, for a TLS edge, whether the bytes are the
	// client's own TLS; Dial is not used for it and the tunnel's
	// forwards_to is never dialed. It also reaches the agents' tls and
	// tcp endpoints, by endpoint ID (see the package doc's # Endpoints).
	// Nil: agents' tunnels are not reachable, and are skipped as tunnels
	// that do not say where they forward are; endpoints' connections are
	// closed.
	Agents agents.Dialer

	// listen opens ServeTCP's listeners; nil means net.Listen. A test
	// hook: the tests hand over a port they held open since they chose
	// it, which no other process can have taken meanwhile.
	listen func(network, address string) (net.Listener, error)
}

// Streams is the data plane of TLS and TCP edges: it serves the TLS edges
// of a [Configs] on the HTTPS port ([Streams.SplitTLS]) and its TCP edges
// on their ports ([Streams.ServeTCP]), and relays each connection's bytes
// to a tunnel of the edge's backend; and the same for the tls and tcp
// endpoints agents bind, relayed to their agents. See the package documentation's
// # TLS and TCP edges. It is safe for concurrent use.
type Streams struct {
	configs *Configs
	log     *slog.Logger
	dial    func(ctx context.Context, network, address string) (net.Conn, error)
	agents  agents.Dialer
	clock   func() time.Time
	metrics *Metrics
	listen  func(network, address string) (net.Listener, error)

	handshake, connect, idle, backoff time.Duration
	maxConns                          int

	mu     sync.Mutex
	open   map[string]*edgeConns // by edge ID
	closed bool
	stop   chan struct{}
	done   chan struct{}
}

// edgeConns are the open connections of one edge.
type edgeConns struct {
	account string
	cancels map[*int]context.CancelFunc // one per connection, by a unique key
}

// NewStreams returns the TLS and TCP data plane of the edges c serves.
// Call [Streams.Close] to end its connections.
func NewStreams(c *Configs, o StreamOptions) *Streams {
	s := &Streams{configs: c, log: o.Logger, dial: o.Dial, agents: o.Agents, clock: o.Clock, metrics: o.Metrics, listen: o.listen,
		handshake: positiveOr(o.HandshakeTimeout, DefaultHandshakeTimeout), connect: positiveOr(o.ConnectTimeout, DefaultConnectTimeout),
		idle: positiveOr(o.IdleTimeout, DefaultIdleTimeout), backoff: positiveOr(o.FailureBackoff, DefaultFailureBackoff),
		maxConns: o.MaxConnsPerEdge, open: map[string]*edgeConns{}, stop: make(chan struct{}), done: make(chan struct{})}
	if s.maxConns <= 0 {
		s.maxConns = DefaultMaxConnsPerEdge
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.clock == nil {
		s.clock = time.Now
	}
	if s.dial == nil {
		s.dial = upstreamDialer(o.UpstreamNetworks, s.connect).DialContext
	}
	if s.listen == nil {
		s.listen = net.Listen
	}
	go s.reap()
	return s
}

// positiveOr returns d, or def when d is not positive.
func positiveOr(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// upstreamDialer returns a dialer bounded by timeout that connects only
// to addresses in nets (any when nets is empty).
func upstreamDialer(nets []netip.Prefix, timeout time.Duration) *net.Dialer {
	d := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
	if nets = slices.Clone(nets); len(nets) > 0 {
		d.Control = func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil || !clientip.Trusted(nets, ap.Addr().Unmap()) {
				return errUpstreamNetwork
			}
			return nil
		}
	}
	return d
}

// Close ends every connection the Streams relays and stops cutting the
// connections of deleted edges. Listeners are the caller's to close
// (ServeTCP's end with its context). It may be called more than once.
func (s *Streams) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	for _, ec := range s.open {
		for _, cancel := range ec.cancels {
			cancel()
		}
	}
	s.mu.Unlock()
	close(s.stop)
	<-s.done
}

// reap cuts the connections of edges that are no longer served (deleted,
// or dropped because their config cannot be built), every reapInterval:
// a deleted edge carries no traffic, while any other change applies to
// new connections only.
func (s *Streams) reap() {
	defer close(s.done)
	t := time.NewTicker(reapInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		s.mu.Lock()
		for id, ec := range s.open {
			if !s.configs.served(ec.account, id) {
				for _, cancel := range ec.cancels {
					cancel()
				}
			}
		}
		s.mu.Unlock()
	}
}

// admit registers a connection of edge e, or reports false when the edge
// has its maximum of open connections (or the Streams is closed). The
// returned context ends when the edge is deleted or the Streams closed;
// release must be called when the connection ends.
func (s *Streams) admit(e *Edge) (ctx context.Context, release func(), ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := e.ID()
	ec := s.open[id]
	if s.closed || (ec != nil && len(ec.cancels) >= s.maxConns) {
		return nil, nil, false
	}
	if ec == nil {
		ec = &edgeConns{account: e.AccountID(), cancels: map[*int]context.CancelFunc{}}
		s.open[id] = ec
	}
	ctx, cancel := context.WithCancel(context.Background())
	key := new(int)
	ec.cancels[key] = cancel
	return ctx, func() {
		cancel()
		s.mu.Lock()
		delete(ec.cancels, key)
		if len(ec.cancels) == 0 && s.open[id] == ec {
			delete(s.open, id)
		}
		s.mu.Unlock()
	}, true
}

// OpenConns returns the number of connections of edge edgeID open now.
func (s *Streams) OpenConns(edgeID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ec := s.open[edgeID]; ec != nil {
		return len(ec.cancels)
	}
	return 0
}

// conn is one connection being served, for its log line and metrics.
type conn struct {
	kind   string // kindTLS or kindTCP
	edge   *Edge
	client netip.AddrPort
	start  time.Time
	// passthrough says that the bytes relayed are the client's own TLS
	// (a TLS edge that terminates at the upstream).
	passthrough bool
}

// The values of [conn.kind], which are also the protocols an agent is
// told ([agents.ConnHeader.Proto]); kindHTTPS is the Handler's, for the
// agent stream metrics.
const (
	kindTLS   = "tls"
	kindTCP   = "tcp"
	kindHTTPS = "https"
)

// agentHeader returns what the agent that serves cn is told of it.
func (cn *conn) agentHeader() agents.ConnHeader {
	h := agents.ConnHeader{ClientAddr: cn.client, Proto: cn.kind, EdgeType: agents.EdgeTCP}
	if cn.kind == kindTLS {
		h.EdgeType, h.PassthroughTLS = agents.EdgeTLS, cn.passthrough
	}
	if cn.edge.ep != nil {
		h.EdgeType = agents.EdgeNone
	}
	return h
}

// refuse counts and logs a refusal of c for a reason, then closes c
// (in that order: whoever sees the close sees the count).
func (s *Streams) refuse(c net.Conn, cn *conn, outcome string) {
	defer c.Close()
	s.metrics.connection(cn.kind, outcome)
	if s.log.Enabled(context.Background(), slog.LevelInfo) {
		attrs := []slog.Attr{slog.String("kind", cn.kind), slog.String("outcome", outcome), slog.String("client", cn.client.String())}
		if cn.edge != nil {
			attrs = append(attrs, slog.String("account", cn.edge.AccountID()), slog.String("edge", cn.edge.ID()))
		}
		s.log.LogAttrs(context.Background(), slog.LevelInfo, "connection refused", attrs...)
	}
}

// addrPort returns the address a of a connection as netip.AddrPort; the
// zero AddrPort when it is not a TCP address.
func addrPort(a net.Addr) netip.AddrPort {
	if ta, ok := a.(*net.TCPAddr); ok {
		ap := ta.AddrPort()
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	}
	if a != nil {
		if ap, err := netip.ParseAddrPort(a.String()); err == nil {
			return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
		}
	}
	return netip.AddrPort{}
}

// relayTo connects to a tunnel of e and relays client's bytes to it and
// back until either side ends, ctx ends (the edge was deleted) or the
// connection is idle for IdleTimeout.
func (s *Streams) relayTo(ctx context.Context, client net.Conn, cn *conn) {
	up, u, outcome := s.connectUpstream(ctx, cn)
	if up == nil {
		s.refuse(client, cn, outcome)
		return
	}
	st, err := relay.Pipe(ctx, client, up, relay.Options{IdleTimeout: s.idle})
	s.metrics.connection(cn.kind, outcomeServed)
	s.metrics.streamBytes(cn.kind, st.ClientToUpstream, st.UpstreamToClient)
	if s.log.Enabled(context.Background(), slog.LevelInfo) {
		attrs := []slog.Attr{slog.String("kind", cn.kind), slog.String("account", cn.edge.AccountID()), slog.String("edge", cn.edge.ID()),
			slog.String("tunnel", u.tunnelID), slog.String("client", cn.client.String()),
			slog.Int64("bytes_in", st.ClientToUpstream), slog.Int64("bytes_out", st.UpstreamToClient),
			slog.Duration("duration", s.clock().Sub(cn.start))}
		if err != nil {
			attrs = append(attrs, slog.String("end", err.Error()))
		}
		s.log.LogAttrs(context.Background(), slog.LevelInfo, "connection", attrs...)
	}
}

// connectUpstream connects to the next usable tunnel of cn's edge,
// trying each tunnel at most once: a tunnel whose upstream refuses is
// skipped for FailureBackoff. No bytes have been sent yet, so another
// tunnel can take the connection. An agent's tunnel is a stream its
// session opens (Agents), any other one a connection to the address of
// its forwards_to (Dial).
func (s *Streams) connectUpstream(ctx context.Context, cn *conn) (net.Conn, *upstream, string) {
	p := cn.edge.stream
	usable := len(p.upstreams)
	if s.agents == nil {
		usable -= p.agents
	}
	tried := 0
	for tried < usable {
		now := s.clock()
		u := p.pick(now, s.agents != nil, localNode(s.agents))
		if u == nil {
			break
		}
		tried++
		dctx, cancel := context.WithTimeout(ctx, s.connect)
		var (
			c   net.Conn
			err error
		)
		if u.agent {
			c, err = s.agents.DialTunnel(dctx, u.node, u.tunnelID, cn.agentHeader())
			s.metrics.agentStream(cn.kind, err)
		} else {
			c, err = s.dial(dctx, "tcp", u.addr)
		}
		cancel()
		if err == nil {
			u.health.succeed()
			return c, u, ""
		}
		u.health.fail(now.Add(s.backoff))
		s.log.Warn("upstream connection failed", "tunnel", u.tunnelID, "err", err)
	}
	if tried == 0 {
		return nil, nil, outcomeNoUpstream
	}
	return nil, nil, outcomeUpstreamFailed
}

// SplitTLS serves the TLS edges (and tls endpoints) on l, the HTTPS
// port, and returns a listener of l's other connections, for the HTTPS
// edges' server (which does its own TLS handshake on them). For each
// connection it reads the ClientHello without consuming it (within
// HandshakeTimeout): when its server name is the host of a TLS edge or
// of a tls endpoint, the Streams serves the connection; otherwise the connection, its ClientHello replayed, is
// returned by the listener's Accept. HTTPS and TLS edges share the
// hostports on port 443 (a hostport is one edge's), so one port serves
// both. A connection that sends no ClientHello in time is closed.
// Closing the returned listener closes l.
func (s *Streams) SplitTLS(l net.Listener) net.Listener {
	f := &front{l: l, s: s, conns: make(chan net.Conn), done: make(chan struct{})}
	go f.run()
	return f
}

// front is the listener SplitTLS returns.
type front struct {
	l     net.Listener
	s     *Streams
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
	err   error // why Accept fails; set before done closes
}

func (f *front) run() { f.shut(acceptLoop(f.l, f.route)) }

// acceptLoop serves each connection of l in a goroutine of its own until
// l is closed (it returns the error saying so). Any other error of
// Accept (too many open files, a connection aborted before it was
// accepted) is retried after a pause of 5 ms, doubling up to 1 s, as
// net/http's servers do: a burst that exhausts file descriptors never
// stops a listener for good.
func acceptLoop(l net.Listener, serve func(net.Conn)) error {
	var delay time.Duration
	for {
		c, err := l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return err
			}
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			time.Sleep(delay)
			continue
		}
		delay = 0
		go serve(c)
	}
}

func (f *front) shut(err error) {
	f.once.Do(func() {
		if errors.Is(err, net.ErrClosed) || err == nil {
			err = net.ErrClosed
		}
		f.err = err
		close(f.done)
	})
}

// route peeks at c's ClientHello and serves it as a TLS edge's or hands
// it to Accept.
func (f *front) route(c net.Conn) {
	hello, replay, err := sni.Peek(context.Background(), c, sni.Options{Timeout: f.s.handshake})
	if err != nil {
		_ = c.Close()
		return
	}
	name := strings.ToLower(strings.TrimSuffix(hello.ServerName, "."))
	// A TLS-ALPN-01 validation (acme-tls/1) is the HTTPS server's to
	// answer, whatever edge serves the name.
	if name != "" && !strings.Contains(name, "*") && !offersACMETLS(hello.Protocols) {
		if e := f.s.configs.siteTLS(name); e != nil && (e.TLS != nil || (e.ep != nil && e.ep.proto == protoTLS)) {
			f.s.serveTLS(replay, name, e)
			return
		}
	}
	select {
	case f.conns <- replay:
	case <-f.done:
		_ = replay.Close()
	}
}

// Accept returns the next connection that is not a TLS edge's.
func (f *front) Accept() (net.Conn, error) {
	select {
	case c := <-f.conns:
		return c, nil
	case <-f.done:
		return nil, f.err
	}
}

// Close closes the underlying listener.
func (f *front) Close() error {
	err := f.l.Close()
	f.shut(net.ErrClosed)
	return err
}

// Addr returns the underlying listener's address.
func (f *front) Addr() net.Addr { return f.l.Addr() }

// serveTLS serves a connection of TLS edge (or tls endpoint) e whose
// ClientHello named host; c replays the ClientHello.
func (s *Streams) serveTLS(c net.Conn, host string, e *Edge) {
	var (
		ipr         *edgeconfig.IPRestriction
		pol         *policy.Policy
		broken      bool // the endpoint's traffic policy does not compile
		passthrough bool
		minVersion  uint16 = tls.VersionTLS12
	)
	edgeID := "" // endpoint.edge_id: none for an endpoint
	if cfg := e.TLS; cfg != nil {
		ipr, pol, minVersion, edgeID = cfg.IPRestriction, cfg.TrafficPolicy, cfg.MinVersion, cfg.EdgeID
		passthrough = cfg.TerminateAt == edges.TerminateAtUpstream
	} else {
		pol, broken, passthrough = e.ep.policy, e.ep.policyErr != nil, e.ep.passthrough
	}
	cn := &conn{kind: kindTLS, edge: e, client: addrPort(c.RemoteAddr()), start: s.clock(), passthrough: passthrough}
	// Everything before any byte goes back: a refused client never
	// completes a handshake.
	ctx, release, ok := s.gate(c, cn, ipr, func() bool {
		return !broken && (pol == nil || pol.Connect(&policy.Conn{ClientAddr: cn.client, ServerAddr: addrPort(c.LocalAddr()),
			Start: cn.start, TLS: &policy.TLSInfo{ServerName: host}, EdgeID: edgeID}, s.clock()).Verdict == policy.Continue)
	})
	if !ok {
		return
	}
	defer release()
	client := c
	if !cn.passthrough {
		// Without a certificate for host the config has none, and the
		// handshake fails with the alert unrecognized_name (crypto/tls
		// sends it when a config has no certificate to choose from), as
		// on the HTTPS server (see Handler.TLSConfig).
		cfg := &tls.Config{MinVersion: minVersion}
		cert := edgeCertificate(e, host)
		if cert != nil {
			cfg.Certificates = []tls.Certificate{*cert}
		}
		tc := tls.Server(c, cfg)
		hctx, cancel := context.WithTimeout(ctx, s.handshake)
		err := tc.HandshakeContext(hctx)
		cancel()
		switch {
		case cert == nil:
			s.metrics.unrouted(reasonNoCertificate)
			s.refuse(c, cn, outcomeNoCertificate)
			return
		case err != nil:
			s.refuse(c, cn, outcomeHandshakeFailed)
			return
		}
		client = tc
	}
	s.relayTo(ctx, client, cn)
}

// gate applies to a connection of edge cn.edge, in order: the account's
// endpoint restrictions, the edge's IP restriction module ipr, connect
// (the traffic policy's on_tcp_connect rules; nil: none) and the bound
// of open connections per edge. It returns what [Streams.admit] does, or
// ok false after refusing c.
func (s *Streams) gate(c net.Conn, cn *conn, ipr *edgeconfig.IPRestriction, connect func() bool) (ctx context.Context, release func(), ok bool) {
	switch {
	case !s.accountAllows(c, cn):
		return nil, nil, false
	case !ipr.Allowed(cn.client.Addr()):
		s.refuse(c, cn, outcomeIPRestricted)
		return nil, nil, false
	case connect != nil && !connect():
		s.refuse(c, cn, outcomePolicyDenied)
		return nil, nil, false
	}
	if ctx, release, ok = s.admit(cn.edge); !ok {
		s.refuse(c, cn, outcomeOverLimit)
	}
	return ctx, release, ok
}

// accountAllows checks the connection's client against its account's
// endpoint restrictions, logging what they say; a refused connection is
// closed and counted.
func (s *Streams) accountAllows(c net.Conn, cn *conn) bool {
	refusedBy, warnings := cn.edge.restrictedBy(cn.client.Addr())
	if refusedBy == "" && warnings == nil {
		return true
	}
	s.configs.logRestricted(s.log, cn.edge, cn.client.Addr(), refusedBy, warnings, s.clock())
	if refusedBy == "" {
		return true
	}
	s.metrics.connection(cn.kind, outcomeIPRestricted)
	_ = c.Close()
	return false
}

// edgeCertificate returns the certificate of host (or of the wildcard
// that covers it) in e's snapshot, or nil.
func edgeCertificate(e *Edge, host string) *tls.Certificate {
	if cert := e.Certificates[host]; cert != nil {
		return cert
	}
	if w, ok := wildcardOf(host); ok {
		return e.Certificates[w]
	}
	return nil
}

// ServeTCP serves the TCP edges (and tcp endpoints) whose ports are
// from lo to hi: it listens on host:port for each such port a TCP edge
// or tcp endpoint serves (a TCP edge's when both claim it), opening and
// closing listeners as they take and leave ports (following the
// Configs), until ctx ends; then it closes its listeners and returns nil.
// A port outside the range is not served (logged when it appears). A
// port that cannot be listened on is logged and tried again at the next
// change, or after a few seconds. Open connections are not cut when their
// port's listener closes (only when their edge or endpoint is deleted).
func (s *Streams) ServeTCP(ctx context.Context, host string, lo, hi int) error {
	if lo < 1 || hi > 65535 || lo > hi {
		return errors.New("proxy: the TCP port range must be within 1-65535, low to high, got " + strconv.Itoa(lo) + "-" + strconv.Itoa(hi))
	}
	listeners := map[int]net.Listener{}
	warned := map[int]bool{}
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	for {
		ports, changed := s.configs.TCPPorts()
		retry := false
		want := map[int]bool{}
		for _, p := range ports {
			if p < lo || p > hi {
				if !warned[p] {
					warned[p] = true
					s.log.Warn("a TCP edge's port is outside the proxy's TCP port range; not served", "port", p, "range", strconv.Itoa(lo)+"-"+strconv.Itoa(hi))
				}
				continue
			}
			want[p] = true
		}
		for p, l := range listeners {
			if !want[p] {
				_ = l.Close()
				delete(listeners, p)
			}
		}
		for p := range want {
			if listeners[p] != nil {
				continue
			}
			l, err := s.listen("tcp", net.JoinHostPort(host, strconv.Itoa(p)))
			if err != nil {
				retry = true
				s.log.Error("cannot listen on a TCP edge's port; retrying", "port", p, "err", err)
				continue
			}
			listeners[p] = l
			go s.acceptTCP(l, p)
		}
		var again <-chan time.Time
		if retry {
			again = time.After(5 * time.Second)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		case <-again:
		}
	}
}

// acceptTCP serves the connections of l, the listener of TCP port port,
// until it is closed.
func (s *Streams) acceptTCP(l net.Listener, port int) {
	_ = acceptLoop(l, func(c net.Conn) { s.serveTCP(c, port) })
}

// serveTCP serves a connection that arrived on TCP port port: the TCP
// edge's, else the tcp endpoint's.
func (s *Streams) serveTCP(c net.Conn, port int) {
	cn := &conn{kind: kindTCP, client: addrPort(c.RemoteAddr()), start: s.clock()}
	e := s.configs.EdgeByPort(port)
	if e == nil {
		e = s.configs.endpointByPort(port)
	}
	if e == nil {
		s.refuse(c, cn, outcomeUnrouted)
		return
	}
	cn.edge = e
	var (
		ipr     *edgeconfig.IPRestriction
		connect func() bool
	)
	if e.TCP != nil {
		ipr = e.TCP.IPRestriction
	} else {
		pol, broken := e.ep.policy, e.ep.policyErr != nil
		connect = func() bool {
			return !broken && (pol == nil || pol.Connect(&policy.Conn{ClientAddr: cn.client, ServerAddr: addrPort(c.LocalAddr()),
				Start: cn.start}, s.clock()).Verdict == policy.Continue) // no edge: endpoint.edge_id is empty
		}
	}
	ctx, release, ok := s.gate(c, cn, ipr, connect)
	if !ok {
		return
	}
	defer release()
	s.relayTo(ctx, c, cn)
}
