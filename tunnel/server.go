package tunnel

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/ipaccess"
	"github.com/edgeplane/edgeplane/store"
	"github.com/edgeplane/edgeplane/store/follow"
)

// Defaults of [Options].
const (
	// DefaultHandshakeTimeout bounds the TLS handshake and, after it, the
	// wait for the agent's Auth.
	DefaultHandshakeTimeout = 10 * time.Second
	// DefaultRenewInterval is how often the server's node lease (which
	// keeps every session it holds online) is renewed: a third of the
	// Service's default tunnel lease, so that two renewals may fail
	// before the lease ends.
	DefaultRenewInterval = 20 * time.Second
	// DefaultMaxSessions bounds the sessions (connections, authenticated
	// or not) one Server holds.
	DefaultMaxSessions = 100_000
	// DefaultMaxUnauthenticated bounds the connections one Server holds
	// that have not authenticated yet (in their TLS handshake, or waiting
	// for the agent's Auth), from every address together.
	DefaultMaxUnauthenticated = 1024
	// DefaultMaxUnauthenticatedPerIP bounds those from one source
	// address: a peer that opens connections and never authenticates
	// holds at most this many, whatever MaxSessions allows.
	DefaultMaxUnauthenticatedPerIP = 32
	// DefaultResumeTokenTTL is how long after it was made an agent's
	// resume token takes things over (see Options.ResumeTokenTTL).
	DefaultResumeTokenTTL = 24 * time.Hour
	// DefaultMaxTunnelsPerSession bounds the tunnels one session binds.
	DefaultMaxTunnelsPerSession = 100
	// DefaultHeartbeatInterval and DefaultHeartbeatTolerance are the
	// heartbeat timing of an agent that reports none: an agent whose
	// heartbeat is silent for their sum is dropped.
	DefaultHeartbeatInterval  = 10 * time.Second
	DefaultHeartbeatTolerance = 15 * time.Second
	// MaxHeartbeat bounds the interval and the tolerance an agent may
	// report (each): a dead agent is dropped within twice it.
	MaxHeartbeat = time.Minute
	// MinHeartbeat is the least interval or tolerance taken from an
	// agent; smaller values are raised to it.
	MinHeartbeat = 10 * time.Millisecond
	// commandTimeout bounds the wait for an agent's answer to a command
	// (Stop), and for the FIN that follows its read of a response.
	commandTimeout = 5 * time.Second
	// hostTimeout bounds one call of the Host made outside a request (a
	// session's close, a renewal).
	hostTimeout = 10 * time.Second
	// removeNodeTimeout bounds the removal of the node and its sessions'
	// records at Close; what is left then, the node's lease ends.
	removeNodeTimeout = 30 * time.Second
	// maxRPCs bounds the requests of one session handled at once.
	maxRPCs = 16
	// acceptBacklog bounds the streams an agent opened that wait to be
	// accepted (muxado's default is 128, a queue every idle session
	// holds): an agent opens one heartbeat and requests one at a time.
	acceptBacklog = 2 * maxRPCs
)

// Host is what a [Server] asks of the Service: *edgeplane.Host
// implements it. Its errors are *apierr.Error values, sent to the agent
// with their codes.
type Host interface {
	RegisterNode(ctx context.Context, params agents.NodeParams) (*agents.Node, error)
	RenewNode(ctx context.Context, id string) (*agents.Node, error)
	RemoveNode(ctx context.Context, id string) error
	OpenTunnelSession(ctx context.Context, token string, params agents.SessionParams) (*agents.TunnelSession, error)
	CloseTunnelSession(ctx context.Context, accountID, id string) error
	GetTunnelSession(ctx context.Context, accountID, id string) (*agents.TunnelSession, error)
	StartLabeledTunnel(ctx context.Context, accountID, sessionID string, params agents.LabeledTunnelParams) (*backends.Tunnel, error)
	UnregisterTunnel(ctx context.Context, accountID, id string) error
	AgentToken(purpose agents.TokenPurpose, accountID, credentialID, id string) string
	OpenAgentToken(purpose agents.TokenPurpose, token, accountID, credentialID, id string) (time.Time, error)
	BindEndpoint(ctx context.Context, accountID, sessionID string, params agents.EndpointParams) (*agents.Endpoint, error)
	UnbindEndpoint(ctx context.Context, accountID, id string) error
	GetEndpoint(ctx context.Context, accountID, id string) (*agents.Endpoint, error)
	IPRestrictions(ctx context.Context, accountID, typ string) (*ipaccess.Enforcer, error)
}

// Options configures a [Server]. Host, TLSConfig and Feed are required;
// the zero value of every other field means its documented default.
type Options struct {
	// Host authenticates agents and records their sessions and tunnels.
	Host Host
	// TLSConfig is the server side of the agents' TLS: its certificate
	// (or GetCertificate) is what agents verify (ngrok.WithCA). The
	// Server does not change it; it never asks for client certificates.
	TLSConfig *tls.Config
	// Feed is followed for the changes that end sessions and tunnels
	// made elsewhere: a session deleted (its credential deleted, taken
	// over by the agent's reconnect to another node, or reaped) is
	// closed, a stop requested through the API stops it, a tunnel of a
	// held session deleted is stopped at the agent, and a held session
	// whose address an IP restriction of type agent now refuses (one
	// created or changed, or its IP policies' rules) is closed.
	Feed store.Feed
	// NodeAddr is the address other nodes of the store reach this one
	// at for the hop (package hop), host:port, recorded with the node
	// the Server registers; "" when it takes no hop.
	NodeAddr string
	// Logger receives the server's log lines; nil discards them.
	Logger *slog.Logger
	// Region is reported to agents and recorded with their sessions.
	Region string
	// Version is the server version reported to agents.
	Version string
	// HandshakeTimeout: see [DefaultHandshakeTimeout].
	HandshakeTimeout time.Duration
	// RenewInterval: see [DefaultRenewInterval]. It must be well below
	// the Service's tunnel lease (Options.TunnelLease).
	RenewInterval time.Duration
	// MaxSessions: see [DefaultMaxSessions].
	MaxSessions int
	// MaxUnauthenticated: see [DefaultMaxUnauthenticated].
	MaxUnauthenticated int
	// MaxUnauthenticatedPerIP: see [DefaultMaxUnauthenticatedPerIP].
	MaxUnauthenticatedPerIP int
	// WriteTimeout bounds the session's writer, which writes every
	// stream's frames to the agent's socket in turn: a write during
	// which the socket takes no byte for WriteTimeout (the agent stopped
	// reading, or the network is gone) closes the session, counted as a
	// refusal of reason stalled. Zero means the session's heartbeat
	// allowance, the silence after which the agent itself gives the
	// session up (its heartbeat interval and tolerance, 25 s for the
	// SDK's defaults; HandshakeTimeout before Auth): a writer stuck that
	// long has held back the heartbeat's answers as long. An honest
	// agent reads its socket all the time (muxado buffers each stream up
	// to its window), so only a dead network or an agent that stopped
	// reading meets it. A client's connection never waits for a stalled
	// session that long: its writes are bounded by their own deadlines
	// (the proxy's upstream timeout), and its close does not wait.
	WriteTimeout time.Duration
	// ResumeTokenTTL is how long after it was made an agent's resume
	// token may take over what it names (see [DefaultResumeTokenTTL]):
	// a session cookie the session an agent reconnects from (closed at
	// once, wherever it is held), a bind token the endpoint of its ID
	// still held by another session. An agent brings the cookie of its
	// last Auth, but the SDK keeps an endpoint's first bind token for as
	// long as it runs; so an older token is not refused: a reconnect with
	// an older cookie opens a fresh session (the old one ends with its
	// heartbeat), and a rebind with an older bind token binds the ID
	// only once no other session holds it (refused with
	// FailedPrecondition until then, which the SDK retries). A leaked
	// token therefore takes nothing over after ResumeTokenTTL, and an
	// honest agent loses at most its heartbeat allowance.
	ResumeTokenTTL time.Duration
	// MaxTunnelsPerSession: see [DefaultMaxTunnelsPerSession]. A
	// session's endpoints count with its tunnels, and so do its binds in
	// progress: each takes its slot before it asks the Host (and gives it
	// back if refused), so binds at once never hold more between them.
	MaxTunnelsPerSession int
	// TCPHost, TCPLow and TCPHigh are where the edge proxy serves tcp
	// endpoints: the ports from TCPLow to TCPHigh (inclusive) of the
	// public host TCPHost. A tcp endpoint's address must have a port of
	// the range; one that names none gets a free port of the range on
	// TCPHost. TCPLow and TCPHigh 0 (the default): tcp endpoints are
	// refused; otherwise TCPHost is required.
	TCPHost         string
	TCPLow, TCPHigh int
	// DomainBase, when not "", gives http and https endpoints that name
	// no domain one: <label>.DomainBase, the label derived from the
	// endpoint's ID, so that the agent's rebinds after reconnects get the
	// same name (see the package doc's # Names the server picks). It
	// must be a DNS name (no wildcard, no port) whose wildcard DNS record
	// and certificate the operator provides. "": such binds are refused,
	// saying that a domain is needed.
	DomainBase string
	// Metrics receives the server's measurements; nil measures nothing.
	Metrics *Metrics
}

// Server accepts agents' sessions and hands them connections: it
// implements [agents.Dialer] for the tunnels its sessions hold. Its
// methods are safe for concurrent use.
type Server struct {
	opts      Options
	tlsConfig *tls.Config // opts.TLSConfig with full-size records
	log       *slog.Logger
	m         *Metrics

	mu        sync.Mutex
	conns     map[*session]struct{} // every connection, authenticated or not
	pending   map[netip.Addr]int    // connections not authenticated yet, by source address
	npending  int                   // their sum
	warnedAt  time.Time             // when a refusal of admit was last logged
	sessions  map[string]*session   // authenticated, by session ID
	tunnels   map[string]*binding   // by tunnel ID
	listeners map[net.Listener]struct{}
	closed    bool

	node      atomic.Pointer[agents.Node] // the node the Server registered, renewed
	shutdown  atomic.Bool                 // Close has begun: RemoveNode removes the sessions' records at once
	follower  *follow.Follower
	stopRenew chan struct{}
	wg        sync.WaitGroup
}

// binding is a tunnel a session holds.
type binding struct {
	sess  *session
	id    string
	kind  string        // kindLabeled, or the endpoint's proto
	ready chan struct{} // closed once the agent has the tunnel (see startLabel)
}

// NewServer returns a Server with opts: it registers its node through
// the Host (the error of that registration is returned), starts
// following opts.Feed and renewing the node's lease, until
// [Server.Close].
func NewServer(opts Options) (*Server, error) {
	var vs apierr.Violations
	if opts.Host == nil {
		vs.Add("Host", "is required")
	}
	if opts.Feed == nil {
		vs.Add("Feed", "is required: it brings the changes made elsewhere to the sessions held here")
	}
	if opts.TLSConfig == nil {
		vs.Add("TLSConfig", "is required: agents speak only TLS")
	}
	if opts.RenewInterval < 0 || opts.HandshakeTimeout < 0 || opts.WriteTimeout < 0 || opts.ResumeTokenTTL < 0 || opts.MaxSessions < 0 || opts.MaxTunnelsPerSession < 0 {
		vs.Add("", "durations and bounds must not be negative")
	}
	if reason := validTCPRange(opts.TCPHost, opts.TCPLow, opts.TCPHigh); reason != "" {
		vs.Add("TCPLow", "%s", reason)
	}
	if reason := DomainBaseProblem(opts.DomainBase); reason != "" {
		vs.Add("DomainBase", "%s", reason)
	}
	if err := vs.Err(); err != nil {
		return nil, err
	}
	if opts.HandshakeTimeout == 0 {
		opts.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if opts.RenewInterval == 0 {
		opts.RenewInterval = DefaultRenewInterval
	}
	if opts.MaxSessions == 0 {
		opts.MaxSessions = DefaultMaxSessions
	}
	if opts.MaxUnauthenticated == 0 {
		opts.MaxUnauthenticated = DefaultMaxUnauthenticated
	}
	if opts.MaxUnauthenticatedPerIP == 0 {
		opts.MaxUnauthenticatedPerIP = DefaultMaxUnauthenticatedPerIP
	}
	if opts.MaxTunnelsPerSession == 0 {
		opts.MaxTunnelsPerSession = DefaultMaxTunnelsPerSession
	}
	if opts.ResumeTokenTTL == 0 {
		opts.ResumeTokenTTL = DefaultResumeTokenTTL
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// A session multiplexes many connections: its TLS records are always
	// full-size (16 KiB), never first small after an idle spell.
	tlsConfig := opts.TLSConfig.Clone()
	tlsConfig.DynamicRecordSizingDisabled = true
	s := &Server{opts: opts, tlsConfig: tlsConfig, log: log, m: opts.Metrics,
		conns: map[*session]struct{}{}, pending: map[netip.Addr]int{}, sessions: map[string]*session{}, tunnels: map[string]*binding{},
		listeners: map[net.Listener]struct{}{}, stopRenew: make(chan struct{})}
	if err := s.register(); err != nil {
		return nil, err
	}
	s.follower = follow.Start(opts.Feed, &feedHandler{s: s}, -1, follow.Options{})
	s.wg.Add(1)
	go s.renewLoop()
	return s, nil
}

// register records a new node for the Server through the Host.
func (s *Server) register() error {
	ctx, cancel := context.WithTimeout(context.Background(), hostTimeout)
	defer cancel()
	n, err := s.opts.Host.RegisterNode(ctx, agents.NodeParams{Addr: s.opts.NodeAddr, Region: s.opts.Region, Version: s.opts.Version})
	if err != nil {
		return fmt.Errorf("tunnel: registering the node: %w", err)
	}
	s.node.Store(n)
	s.log.Info("edge node registered", "node", n.ID, "addr", n.Addr)
	return nil
}

// writeTimeout is the bound of a session's writer (Options.WriteTimeout)
// for a session whose heartbeat allowance is allowance (0: before Auth).
func (s *Server) writeTimeout(allowance time.Duration) time.Duration {
	switch {
	case s.opts.WriteTimeout > 0:
		return s.opts.WriteTimeout
	case allowance > 0:
		return allowance
	default:
		return s.opts.HandshakeTimeout
	}
}

// Node returns the ID of the node the Server registered: the sessions it
// holds name it. It changes only if the node's lease ended (the Server
// could not renew it in time): its sessions are then closed, and it
// registers anew.
func (s *Server) Node() string { return s.node.Load().ID }

// ErrServerClosed is returned by [Server.Serve] after [Server.Close].
var ErrServerClosed = errors.New("tunnel: server closed")

// Serve accepts agents' TCP connections on ln, each in a goroutine of
// its own that speaks TLS with opts.TLSConfig, until ln fails or the
// Server is closed (then ErrServerClosed). It closes ln when it returns.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ln.Close()
		return ErrServerClosed
	}
	s.listeners[ln] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, ln)
		s.mu.Unlock()
		ln.Close()
	}()
	var delay time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				time.Sleep(delay)
				continue
			}
			return err
		}
		delay = 0
		sess, ok := s.admit(c)
		if !ok {
			continue
		}
		go sess.run()
	}
}

// admit registers a new connection, or refuses it when the server is
// closed, holds MaxSessions, or holds MaxUnauthenticated connections not
// authenticated yet (MaxUnauthenticatedPerIP from its address).
func (s *Server) admit(c net.Conn) (*session, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		c.Close()
		return nil, false
	}
	// Decided before a session is made: a refused connection costs no
	// allocation under the lock.
	remote := remoteOf(c)
	ip := remote.Addr()
	reason, why := "", ""
	switch {
	case len(s.conns) >= s.opts.MaxSessions:
		reason, why = reasonTooManySessions, "the server holds its most sessions"
	case s.npending >= s.opts.MaxUnauthenticated:
		reason, why = reasonTooManyUnauthenticated, "the server holds its most connections that have not authenticated yet"
	case s.pending[ip] >= s.opts.MaxUnauthenticatedPerIP:
		reason, why = reasonTooManyUnauthenticated, "its address holds its most connections that have not authenticated yet"
	}
	if reason != "" {
		s.m.refused(reason) // counted before the peer can see the close
		c.Close()
		// One line a minute: a flood of connections is not a flood of
		// lines (the metric counts each).
		if now := time.Now(); now.Sub(s.warnedAt) >= time.Minute {
			s.warnedAt = now
			s.log.Warn("agent connection refused: "+why+" (logged once a minute; edgeplane_tunnel_refusals_total counts each)",
				"remote", remote.String(), "max_sessions", s.opts.MaxSessions, "max_unauthenticated", s.opts.MaxUnauthenticated,
				"max_unauthenticated_per_ip", s.opts.MaxUnauthenticatedPerIP)
		}
		return nil, false
	}
	sess := newSession(s, c)
	s.conns[sess] = struct{}{}
	s.pending[ip]++
	s.npending++
	sess.pending = true
	return sess, true
}

// authenticatedLocked counts sess (whose Auth succeeded, or which
// closed) out of the connections not authenticated yet; s.mu is held.
func (s *Server) authenticatedLocked(sess *session) {
	if !sess.pending {
		return
	}
	sess.pending = false
	ip := sess.remote.Addr()
	if s.pending[ip]--; s.pending[ip] <= 0 {
		delete(s.pending, ip)
	}
	s.npending--
}

// Close stops accepting, closes every session (their records and
// tunnels are removed through the Host), stops following the feed and
// waits for that.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.shutdown.Store(true)
	for ln := range s.listeners {
		ln.Close()
	}
	conns := make([]*session, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	close(s.stopRenew)
	s.follower.Stop()
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Go(func() { c.close("the tunnel server is shutting down") })
	}
	wg.Wait()
	s.wg.Wait()
	// The node goes with its sessions' records, removed one after
	// another rather than by every session's close at once (10,000
	// concurrent deletes time out on a SQLite file).
	ctx, cancel := context.WithTimeout(context.Background(), removeNodeTimeout)
	defer cancel()
	if err := s.opts.Host.RemoveNode(ctx, s.Node()); err != nil && !errors.Is(err, apierr.ErrNotFound) {
		s.log.Warn("removing the edge node failed; its lease will end it", "node", s.Node(), "err", err)
	}
	return nil
}

// DialTunnel implements [agents.Dialer]: it opens a stream to the agent
// whose session here holds tunnelID, writes the proxy header h, and
// returns the stream. Bytes written to it reach the agent's listener;
// its reads are the agent's answer. node is not consulted: the Server
// serves the tunnels its own sessions hold, and no other (package hop
// reaches other nodes').
func (s *Server) DialTunnel(ctx context.Context, node, tunnelID string, h agents.ConnHeader) (net.Conn, error) {
	s.mu.Lock()
	b := s.tunnels[tunnelID]
	s.mu.Unlock()
	if b == nil {
		return nil, fmt.Errorf("tunnel %s: %w", tunnelID, agents.ErrNoSession)
	}
	select {
	case <-b.ready:
	case <-b.sess.done:
		return nil, fmt.Errorf("tunnel %s: %w", tunnelID, agents.ErrNoSession)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return b.sess.openProxy(ctx, tunnelID, h)
}

// StopSession ends the session id held here, as a stop request through
// the API asks: with the agent's Stop command when it accepts it (the
// agent then does not reconnect), else by closing its connection. It
// reports whether this Server holds the session.
func (s *Server) StopSession(id string) bool {
	s.mu.Lock()
	sess := s.sessions[id]
	s.mu.Unlock()
	if sess == nil {
		return false
	}
	go sess.stop()
	return true
}

// bind records that b.sess holds tunnel b.id: an endpoint bound again
// in a newer session replaces the binding of its older one, which counts
// once.
func (s *Server) bind(b *binding) {
	s.mu.Lock()
	_, replaced := s.tunnels[b.id]
	s.tunnels[b.id] = b
	s.mu.Unlock()
	if !replaced {
		s.m.tunnelUp(b.kind)
	}
}

// unbind forgets tunnel id if sess holds it, and reports whether it did.
func (s *Server) unbind(sess *session, id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b := s.tunnels[id]; b != nil && b.sess == sess {
		delete(s.tunnels, id)
		s.m.tunnelDown(b.kind)
		return true
	}
	return false
}

// authenticated records sess under its session ID; the session held
// here under previous, the ID the agent resumes (its cookie checked), is
// returned to be closed: the agent took over. The caller holds sess.mu
// (s.mu is taken inside it, never the other way).
func (s *Server) authenticated(sess *session, previous string) (old *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.authenticatedLocked(sess)
	s.sessions[sess.id] = sess
	if p := s.sessions[previous]; previous != "" && p != nil && p != sess {
		old = p
	}
	return old
}

// forget removes a closed session and its tunnels from the maps; counted
// says that its Auth succeeded (it is in the sessions map).
func (s *Server) forget(sess *session, counted bool) {
	sess.mu.Lock() // sess.tunnels is sess's
	held := make([]string, 0, len(sess.tunnels))
	for id := range sess.tunnels {
		held = append(held, id)
	}
	sess.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.conns, sess)
	s.authenticatedLocked(sess)
	if counted && s.sessions[sess.id] == sess {
		delete(s.sessions, sess.id)
	}
	for _, id := range held {
		if b := s.tunnels[id]; b != nil && b.sess == sess {
			delete(s.tunnels, id)
			s.m.tunnelDown(b.kind)
		}
	}
}

// renewLoop renews the node's lease every RenewInterval: one write for
// every session the Server holds. A lease that ended (the store was
// unreachable too long) cannot be renewed: the node's sessions are
// offline and reaped, so the Server closes them (their agents
// reconnect) and registers a new node.
func (s *Server) renewLoop() {
	defer s.wg.Done()
	t := time.NewTicker(s.opts.RenewInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stopRenew:
			return
		case <-t.C:
		}
		id := s.Node()
		ctx, cancel := context.WithTimeout(context.Background(), hostTimeout)
		n, err := s.opts.Host.RenewNode(ctx, id)
		cancel()
		switch {
		case err == nil:
			s.node.Store(n)
			continue
		case !errors.Is(err, apierr.ErrNotFound) && !errors.Is(err, apierr.ErrFailedPrecondition):
			s.log.Warn("renewing the edge node's lease failed", "node", id, "err", err)
			continue
		}
		s.log.Error("the edge node's lease ended; closing its sessions and registering a new node", "node", id, "err", err)
		if err := s.register(); err != nil {
			s.log.Error("registering a new edge node failed; retrying", "err", err)
			continue
		}
		s.mu.Lock()
		var old []*session
		for _, sess := range s.sessions {
			if sess.node != s.Node() {
				old = append(old, sess)
			}
		}
		s.mu.Unlock()
		for _, sess := range old {
			go sess.close("the edge node's lease ended")
		}
	}
}
