package hop

import (
	"cmp"
	"context"
	"crypto/ed25519"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/internal/muxframe"
	"golang.ngrok.com/muxado/v2"
)

// Defaults of [Options].
const (
	// DefaultDialTimeout bounds connecting to a peer node (TCP and TLS),
	// and a serving node's dial to its agent.
	DefaultDialTimeout = 5 * time.Second
	// DefaultHandshakeTimeout bounds an accepted connection's TLS
	// handshake, and the header of each stream a peer opens.
	DefaultHandshakeTimeout = 10 * time.Second
	// DefaultHeartbeatInterval is how often each end of a connection
	// checks that the other answers.
	DefaultHeartbeatInterval = 10 * time.Second
)

// ErrClosed is the error of [Hop.Serve] after [Hop.Close], and of
// [Hop.DialTunnel] to another node.
var ErrClosed = errors.New("hop: closed")

// Options configures a [Hop]. Node, Key and Local are required; the zero
// value of every other field means its documented default.
type Options struct {
	// Node is this node's ID (agents.NodePrefix and an opaque string, at
	// most MaxNodeIDBytes): DialTunnel for this node goes to Local, and
	// the node tells it to the peers it forwards streams to.
	Node string
	// Key is the Ed25519 private key every node of the store derives from
	// its sealing key (the host's NodeKey): both ends of the hop present
	// the certificate [Identity] derives from it, and accept only a peer
	// that presents the same.
	Key ed25519.PrivateKey
	// Local is this node's tunnel server: it serves the streams peers
	// forward here, and DialTunnel for this node.
	Local agents.Dialer
	// Resolve returns the hop address (host:port) of a node: the host
	// wires it to the store's node records. An error, or "", and
	// DialTunnel to that node fails with an error that wraps
	// [agents.ErrNoSession]. Nil: this node forwards to no other (it
	// still serves the streams peers forward to it).
	Resolve func(ctx context.Context, node string) (addr string, err error)
	// Logger receives the hop's logs; nil discards them.
	Logger *slog.Logger
	// Metrics, when set, measures the hop (see [Metrics]).
	Metrics *Metrics
	// DialTimeout bounds connecting to a peer node (TCP and TLS), and
	// the dial to Local of a stream a peer forwards. Zero means
	// DefaultDialTimeout.
	DialTimeout time.Duration
	// HandshakeTimeout bounds an accepted connection's TLS handshake,
	// and the header of each stream a peer opens. Zero means
	// DefaultHandshakeTimeout.
	HandshakeTimeout time.Duration
	// HeartbeatInterval is how often each end of a connection between
	// nodes checks that the other answers; a connection whose heartbeat
	// goes unanswered for one and a half intervals more is closed. Zero
	// means DefaultHeartbeatInterval.
	HeartbeatInterval time.Duration
}

// Hop carries streams between the edge nodes of one store: it is the
// [agents.Dialer] of an edge proxy that reaches every node's agents, and
// the server of the streams other nodes forward to this one. See the
// package doc. Its methods are safe for concurrent use.
type Hop struct {
	node    string
	local   agents.Dialer
	resolve func(ctx context.Context, node string) (string, error)
	log     *slog.Logger
	m       *Metrics

	dialTimeout, handshakeTimeout, heartbeat time.Duration
	clientTLS, serverTLS                     *tls.Config

	wg sync.WaitGroup // every goroutine the Hop started

	mu        sync.Mutex
	closed    bool
	listeners map[net.Listener]struct{}
	peers     map[string]*peerConn   // by node: the connection streams to that node open on
	dialing   map[string]*dialCall   // by node: the dial in flight
	inbound   map[*inConn]struct{}   // accepted connections
	retired   map[*peerConn]struct{} // dialed connections no longer in peers, open until their streams end
}

// New returns a Hop configured by opts, or an error that names each
// field that is wrong.
func New(opts Options) (*Hop, error) {
	var vs apierr.Violations
	switch {
	case opts.Node == "":
		vs.Add("Node", "must not be empty")
	case len(opts.Node) > MaxNodeIDBytes:
		vs.Add("Node", "must be at most %d bytes, got %d", MaxNodeIDBytes, len(opts.Node))
	}
	if err := checkKey(opts.Key); err != nil {
		vs.Add("Key", "must be an Ed25519 private key of %d bytes whose public half matches its seed", ed25519.PrivateKeySize)
	}
	if opts.Local == nil {
		vs.Add("Local", "must be set: this node's tunnel server")
	}
	for _, d := range []struct {
		field string
		v     time.Duration
	}{{"DialTimeout", opts.DialTimeout}, {"HandshakeTimeout", opts.HandshakeTimeout}, {"HeartbeatInterval", opts.HeartbeatInterval}} {
		if d.v < 0 {
			vs.Add(d.field, "must not be negative, got %v", d.v)
		}
	}
	if err := vs.Err(); err != nil {
		return nil, err
	}
	cert, err := Identity(opts.Key)
	if err != nil {
		return nil, err
	}
	h := &Hop{
		node: opts.Node, local: opts.Local, resolve: opts.Resolve, log: opts.Logger, m: opts.Metrics,
		dialTimeout:      cmp.Or(opts.DialTimeout, DefaultDialTimeout),
		handshakeTimeout: cmp.Or(opts.HandshakeTimeout, DefaultHandshakeTimeout),
		heartbeat:        cmp.Or(opts.HeartbeatInterval, DefaultHeartbeatInterval),
		listeners:        map[net.Listener]struct{}{},
		peers:            map[string]*peerConn{},
		dialing:          map[string]*dialCall{},
		inbound:          map[*inConn]struct{}{},
		retired:          map[*peerConn]struct{}{},
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	h.clientTLS, h.serverTLS = tlsConfigs(cert, opts.Key.Public().(ed25519.PublicKey))
	return h, nil
}

// Node returns this node's ID: Local's, when Local says (a Node() string
// method, as package tunnel's Server has: it registers a new node should
// its lease end), else [Options.Node]. An edge proxy prefers the tunnels
// held here.
func (h *Hop) Node() string {
	if n, ok := h.local.(interface{ Node() string }); ok {
		return n.Node()
	}
	return h.node
}

// DialTunnel implements [agents.Dialer]. For this node (node is "",
// [Options.Node] or [Hop.Node]) it is Local's DialTunnel. For another node it opens a
// stream over the connection to that node (dialed when there is none,
// or when the node's address changed), tells the node the tunnel and hdr,
// and returns the stream once the node has opened the agent's
// connection: its bytes are the agent's. ctx bounds the dial, the header
// and the node's answer; the returned connection outlives it.
//
// A node that cannot be resolved, or that answers that no agent session
// of its serves the tunnel ([*RefusedError] with NoSession), fails with
// an error that wraps [agents.ErrNoSession].
func (h *Hop) DialTunnel(ctx context.Context, node, tunnelID string, hdr agents.ConnHeader) (net.Conn, error) {
	if self := h.Node(); node == "" || node == h.node || node == self {
		return h.local.DialTunnel(ctx, self, tunnelID, hdr)
	}
	req := header{from: h.node, tunnel: tunnelID, conn: hdr}
	if err := req.validate(); err != nil {
		return nil, fmt.Errorf("hop: tunnel %s: %w", apierr.Truncate(tunnelID, MaxTunnelIDBytes), err)
	}
	for attempt := 0; ; attempt++ {
		pc, fresh, err := h.peer(ctx, node)
		if err != nil {
			return nil, err
		}
		c, lost, err := h.open(ctx, pc, &req)
		if err == nil {
			return c, nil
		}
		// A connection that was already open may have died unnoticed
		// (the peer restarted): once, another is dialed.
		if !lost || fresh || attempt > 0 || ctx.Err() != nil {
			return nil, err
		}
		h.log.Debug("hop: the connection to a peer node was lost; dialing again", "node", node, "addr", pc.addr, "err", err)
		h.drop(pc)
	}
}

// connLost reports whether err, from a stream's open, header write or
// status read, says the whole connection it was on is gone (rather than
// the stream alone).
func connLost(err error) bool {
	if err == io.EOF || err == io.ErrUnexpectedEOF || errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, errBadStatus) {
		return false
	}
	switch code, _ := muxado.GetError(err); code {
	case muxado.SessionClosed, muxado.PeerEOF, muxado.RemoteGoneAway, muxado.StreamsExhausted, muxado.StreamRefused,
		muxado.ErrorUnknown: // the transport's own error
		return true
	}
	return false
}

// requestPool holds the buffers stream requests are written from.
var requestPool = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

// okStatus is what a serving node writes for a stream it opened.
var okStatus = []byte{statusOK}

// aLongTimeAgo is a deadline in the past: operations fail at once.
var aLongTimeAgo = time.Unix(1, 0)

// open opens a stream to req.tunnel on pc, and returns it once the peer
// answered ok. lost says the error is pc's: the connection is gone.
func (h *Hop) open(ctx context.Context, pc *peerConn, req *header) (c net.Conn, lost bool, err error) {
	opened, err := pc.mux.OpenStream()
	if err != nil {
		return nil, connLost(err), fmt.Errorf("hop: node %s: opening a stream: %w", pc.node, err)
	}
	str := pc.frames.Wrap(opened)
	pc.active.Add(1)
	hc := &conn{str: str, pc: pc, bytes: counter{pc.out.bytes}}
	// ctx's end (its deadline too) fails the header's write and the
	// status's read at once.
	var stop func() bool
	if ctx.Done() != nil {
		stop = context.AfterFunc(ctx, func() { str.SetDeadline(aLongTimeAgo) })
	}
	bp := requestPool.Get().(*[]byte)
	b := appendRequest((*bp)[:0], req)
	_, err = str.Write(b)
	if err == nil {
		*bp = b[:0]
		requestPool.Put(bp) // muxado wrote it: reuse is safe
	}
	var status byte
	var msg string
	if err == nil {
		status, msg, err = readStatus(str)
	}
	if stop != nil && !stop() {
		err = ctx.Err() // the deadline in the past was ctx's
	}
	if err != nil {
		hc.Close()
		if ctx.Err() != nil {
			return nil, false, fmt.Errorf("hop: node %s: opening a stream: %w", pc.node, ctx.Err())
		}
		return nil, connLost(err), fmt.Errorf("hop: node %s: opening a stream: %w", pc.node, err)
	}
	if status != statusOK {
		hc.Close()
		h.m.failed(reasonRefused)
		return nil, false, &RefusedError{Node: pc.node, NoSession: status == statusNoSession, Message: msg}
	}
	pc.out.opened()
	return hc, false, nil
}

// peerConn is a connection this node dialed to a peer node, in the
// muxado client role: the streams this node forwards to the peer open on
// it.
type peerConn struct {
	node, addr string
	mux        *muxado.Heartbeat
	frames     *muxframe.Conn // the socket, writing the frames
	fl         *muxframe.Flusher
	done       chan struct{} // closed once the connection ended
	active     atomic.Int64  // streams open
	retired    atomic.Bool   // no new streams: it closes when the last one does
	out        peerCounters
}

// alive reports whether the connection has not ended.
func (pc *peerConn) alive() bool {
	select {
	case <-pc.done:
		return false
	default:
		return true
	}
}

// release forgets a stream that closed; the last stream of a retired
// connection closes it.
func (pc *peerConn) release() {
	if pc.active.Add(-1) == 0 && pc.retired.Load() {
		pc.mux.Close()
	}
}

// retire closes pc once its last stream closes (now, when none is open).
func (pc *peerConn) retire() {
	pc.retired.Store(true)
	if pc.active.Load() == 0 {
		pc.mux.Close()
	}
}

// dialCall is a dial to a peer in flight, which every DialTunnel to that
// peer meanwhile waits for.
type dialCall struct {
	node, addr string
	cancel     context.CancelFunc
	done       chan struct{} // closed once pc or err is set
	pc         *peerConn
	err        error
}

// peer returns the connection to node, dialing it when there is none
// open to the address Resolve returns. fresh says the connection was
// dialed for this call (or one at the same time).
func (h *Hop) peer(ctx context.Context, node string) (pc *peerConn, fresh bool, err error) {
	if h.resolve == nil {
		return nil, false, fmt.Errorf("hop: node %s: this node forwards to no other (no Resolve): %w", node, agents.ErrNoSession)
	}
	addr, err := h.resolve(ctx, node)
	switch {
	case err != nil:
		return nil, false, fmt.Errorf("hop: node %s: resolving its address: %w: %w", node, agents.ErrNoSession, err)
	case addr == "":
		return nil, false, fmt.Errorf("hop: node %s has no hop address: %w", node, agents.ErrNoSession)
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, false, ErrClosed
	}
	var old *peerConn
	if pc := h.peers[node]; pc != nil {
		if pc.addr == addr && pc.alive() {
			h.mu.Unlock()
			return pc, false, nil
		}
		old = pc
		h.retireLocked(pc) // dead, or the node moved
	}
	call := h.dialing[node]
	if call == nil || call.addr != addr {
		dctx, cancel := context.WithTimeout(context.Background(), h.dialTimeout)
		call = &dialCall{node: node, addr: addr, cancel: cancel, done: make(chan struct{})}
		h.dialing[node] = call // a dial to an older address finishes, retired
		h.wg.Go(func() { h.dial(dctx, call) })
	}
	h.mu.Unlock()
	if old != nil {
		old.retire()
	}
	select {
	case <-call.done:
		return call.pc, true, call.err
	case <-ctx.Done():
		return nil, false, fmt.Errorf("hop: node %s: connecting: %w", node, ctx.Err())
	}
}

// retireLocked moves pc from the peers to the retired connections.
func (h *Hop) retireLocked(pc *peerConn) {
	if h.peers[pc.node] == pc {
		delete(h.peers, pc.node)
	}
	if pc.alive() {
		h.retired[pc] = struct{}{}
	}
}

// drop stops opening streams on pc: the next stream dials anew.
func (h *Hop) drop(pc *peerConn) {
	h.mu.Lock()
	h.retireLocked(pc)
	h.mu.Unlock()
	pc.retire()
}

// dial connects to call's node, and records the connection as the
// node's, unless the Hop closed or a dial to a newer address replaced
// this one meanwhile (the connection is then closed, and the callers
// fail: the node moved while they dialed).
func (h *Hop) dial(ctx context.Context, call *dialCall) {
	defer close(call.done)
	defer call.cancel()
	pc, err := h.connect(ctx, call.node, call.addr)
	h.mu.Lock()
	current := h.dialing[call.node] == call
	if current {
		delete(h.dialing, call.node)
	}
	switch {
	case h.closed:
		err = ErrClosed
	case err == nil && !current:
		err = fmt.Errorf("hop: node %s: its address changed from %s while dialing it", call.node, call.addr)
	}
	if err != nil {
		h.mu.Unlock()
		if pc != nil {
			pc.mux.Close() // it was never counted, nor watched
			pc.fl.Stop()
		}
		call.err = err
		return
	}
	old := h.peers[call.node]
	if old != nil {
		h.retireLocked(old) // not expected: peer dials only when there is none
	}
	h.peers[call.node] = pc
	h.m.peerUp(dirOut)
	h.wg.Go(func() { h.watch(pc) })
	h.mu.Unlock()
	if old != nil {
		old.retire()
	}
	call.pc = pc
}

// connect dials addr and runs TLS and muxado over the connection.
func (h *Hop) connect(ctx context.Context, node, addr string) (*peerConn, error) {
	d := net.Dialer{KeepAlive: 15 * time.Second}
	raw, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		h.m.failed(reasonDial)
		h.log.Warn("hop: dialing a peer node failed", "node", node, "addr", addr, "err", err)
		return nil, fmt.Errorf("hop: node %s: dialing %s: %w", node, addr, err)
	}
	bc := muxframe.NewConn(raw)
	tc := tls.Client(bc, h.clientTLS)
	if err := tc.HandshakeContext(ctx); err != nil {
		raw.Close()
		if errors.Is(err, errNotNode) {
			h.m.failed(reasonAuth)
			h.log.Warn("hop: a peer node's address answered with a certificate of another key", "node", node, "addr", addr)
			return nil, fmt.Errorf("hop: node %s at %s is not a node of this store: %w", node, addr, errNotNode)
		}
		h.m.failed(reasonDial)
		h.log.Warn("hop: the TLS handshake with a peer node failed", "node", node, "addr", addr, "err", err)
		return nil, fmt.Errorf("hop: node %s: TLS handshake with %s: %w", node, addr, err)
	}
	pc := &peerConn{node: node, addr: addr, frames: bc, done: make(chan struct{}), out: h.m.counters(node, dirOut)}
	pc.mux, pc.fl = h.session(tc, bc, true, node)
	h.log.Debug("hop: connected to a peer node", "node", node, "addr", addr)
	return pc, nil
}

// watch serves the heartbeat of a dialed connection (a peer opens no
// other stream on it: a forwarded stream is never forwarded back) until
// the connection ends, then forgets it.
func (h *Hop) watch(pc *peerConn) {
	for {
		str, err := pc.mux.AcceptTypedStream()
		if err != nil {
			break
		}
		str.Close()
	}
	pc.mux.Close()
	pc.fl.Stop()
	close(pc.done)
	h.mu.Lock()
	if h.peers[pc.node] == pc {
		delete(h.peers, pc.node)
	}
	delete(h.retired, pc)
	h.mu.Unlock()
	h.m.peerDown(dirOut)
	h.log.Debug("hop: the connection to a peer node ended", "node", pc.node, "addr", pc.addr)
}

// session runs muxado over tc, whose socket is bc, in the client or
// server role, with heartbeats both ways. The flusher writes its frames:
// stop it once the session ended.
func (h *Hop) session(tc *tls.Conn, bc *muxframe.Conn, client bool, peer string) (*muxado.Heartbeat, *muxframe.Flusher) {
	fl := bc.NewFlusher(tc)
	h.wg.Go(fl.Run)
	cfg := &muxado.Config{NewFramer: fl.NewFramer}
	var sess muxado.Session
	if client {
		sess = muxado.Client(tc, cfg)
	} else {
		sess = muxado.Server(tc, cfg)
	}
	hbc := muxado.NewHeartbeatConfig()
	hbc.Interval, hbc.Tolerance = h.heartbeat, h.heartbeat*3/2
	hb := muxado.NewHeartbeat(muxado.NewTypedStreamSession(sess), func(_ time.Duration, timeout bool) {
		if timeout {
			h.log.Warn("hop: a peer node's heartbeat went unanswered; closing the connection", "peer", peer, "remote", tc.RemoteAddr().String())
			sess.Close()
		}
	}, hbc)
	hb.Start()
	return hb, fl
}

func (h *Hop) isClosed() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closed
}

// inConn is a connection a peer node dialed to this one, in the muxado
// server role: it serves the streams the peer forwards here.
type inConn struct {
	raw    net.Conn
	remote string
	mux    *muxado.Heartbeat // set once the handshake succeeded (under Hop.mu)

	mu   sync.Mutex
	from string // the node of the first stream: every stream's must be the same
	in   peerCounters
}

// Serve accepts peer nodes' connections on ln until [Hop.Close] (it then
// returns ErrClosed) or ln fails (it returns that error). Each
// connection must be TLS with the node certificate (see [Identity]);
// over it, the peer opens a stream for each connection it forwards
// here, which Local serves. Serve closes ln when it returns. It may be
// called for several listeners.
func (h *Hop) Serve(ln net.Listener) error {
	defer ln.Close()
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return ErrClosed
	}
	h.listeners[ln] = struct{}{}
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.listeners, ln)
		h.mu.Unlock()
	}()
	for {
		raw, err := ln.Accept()
		if err != nil {
			if h.isClosed() {
				return ErrClosed
			}
			return fmt.Errorf("hop: accepting a peer node's connection: %w", err)
		}
		ic := &inConn{raw: raw, remote: raw.RemoteAddr().String()}
		h.mu.Lock()
		if h.closed {
			h.mu.Unlock()
			raw.Close()
			return ErrClosed
		}
		h.inbound[ic] = struct{}{}
		h.wg.Go(func() { h.serveConn(ic) })
		h.mu.Unlock()
	}
}

// serveConn authenticates an accepted connection and serves the streams
// the peer opens on it until it ends.
func (h *Hop) serveConn(ic *inConn) {
	defer func() {
		h.mu.Lock()
		delete(h.inbound, ic)
		h.mu.Unlock()
		ic.raw.Close()
	}()
	bc := muxframe.NewConn(ic.raw)
	tc := tls.Server(bc, h.serverTLS)
	ctx, cancel := context.WithTimeout(context.Background(), h.handshakeTimeout)
	err := tc.HandshakeContext(ctx)
	cancel()
	if err != nil {
		h.m.failed(reasonAuth)
		if errors.Is(err, errNotNode) {
			h.log.Warn("hop: refused a connection with a certificate of another key (a node of another store, or another sealing key?)", "remote", ic.remote)
		} else {
			h.log.Info("hop: refused a connection that is not a node's (no TLS, or no certificate)", "remote", ic.remote, "err", err)
		}
		return
	}
	mux, fl := h.session(tc, bc, false, ic.remote)
	defer fl.Stop()
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		mux.Close()
		return
	}
	ic.mux = mux
	h.mu.Unlock()
	h.m.peerUp(dirIn)
	defer h.m.peerDown(dirIn)
	h.log.Debug("hop: a peer node connected", "remote", ic.remote)
	// The streams' dials to Local end with the connection.
	sctx, scancel := context.WithCancel(context.Background())
	defer scancel()
	for {
		str, err := mux.AcceptTypedStream()
		if err != nil {
			break
		}
		if str.StreamType() != streamType {
			str.Close() // not a stream of this protocol (version)
			continue
		}
		h.wg.Go(func() { h.serveStream(sctx, ic, bc.Wrap(str)) })
	}
	mux.Close()
	h.log.Debug("hop: a peer node's connection ended", "remote", ic.remote, "node", ic.node())
}

// node returns the node of the connection's streams ("" before the
// first).
func (ic *inConn) node() string {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	return ic.from
}

// pin records from as the connection's node, or refuses it when the
// connection's first stream named another; it returns the connection's
// counters.
func (ic *inConn) pin(m *Metrics, from string) (peerCounters, error) {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	switch ic.from {
	case "":
		ic.from, ic.in = from, m.counters(from, dirIn)
	case from:
	default:
		return peerCounters{}, apierr.Invalidf("from", "must be the node of the connection's first stream, %q", ic.from)
	}
	return ic.in, nil
}

// serveStream serves one stream a peer forwarded: its header, then the
// local dial to the agent (never another hop: Local, for this node), then
// the bytes both ways.
func (h *Hop) serveStream(ctx context.Context, ic *inConn, str muxado.Stream) {
	str.SetReadDeadline(time.Now().Add(h.handshakeTimeout))
	req, err := readHeader(str)
	var counters peerCounters
	if err == nil {
		counters, err = ic.pin(h.m, req.from)
	}
	if err != nil {
		h.m.failed(reasonBadHeader)
		var ae *apierr.Error
		if errors.As(err, &ae) {
			h.log.Info("hop: refused a stream with a bad header", "remote", ic.remote, "node", ic.node(), "err", err)
			h.refuse(str, statusRefused, ae.Error())
		} else {
			h.log.Info("hop: a stream ended before its header", "remote", ic.remote, "node", ic.node(), "err", err)
		}
		str.Close()
		return
	}
	str.SetReadDeadline(time.Time{})
	dctx, cancel := context.WithTimeout(ctx, h.dialTimeout)
	local, err := h.local.DialTunnel(dctx, h.node, req.tunnel, req.conn)
	cancel()
	if err == nil && local == nil {
		err = errors.New("hop: Local.DialTunnel returned neither a connection nor an error")
	}
	if err != nil {
		h.m.failed(reasonLocal)
		if errors.Is(err, agents.ErrNoSession) {
			h.log.Debug("hop: no agent session here serves a forwarded stream's tunnel", "from", req.from, "tunnel", req.tunnel)
			h.refuse(str, statusNoSession, "no agent session of node "+h.node+" serves tunnel "+req.tunnel)
		} else {
			h.log.Warn("hop: dialing the agent of a forwarded stream failed", "from", req.from, "tunnel", req.tunnel, "err", err)
			h.refuse(str, statusRefused, "node "+h.node+" could not open a connection to the agent of tunnel "+req.tunnel)
		}
		str.Close()
		return
	}
	counters.opened()
	if _, err := str.Write(okStatus); err != nil {
		local.Close()
		str.Close()
		return
	}
	var s net.Conn = str
	if counters.bytes != nil {
		s = &countedConn{Conn: str, bytes: counter{counters.bytes}}
	}
	relay(s, local)
}

// refuse writes a refusal status and its message, within a bound: a
// peer that reads nothing does not hold the stream.
func (h *Hop) refuse(str muxado.Stream, status byte, msg string) {
	str.SetWriteDeadline(time.Now().Add(h.handshakeTimeout))
	str.Write(appendStatus(make([]byte, 0, 3+len(msg)), status, msg))
}

// Close stops the Hop: it closes the listeners, every connection to and
// from peer nodes (and so every stream on them) and cancels the dials in
// flight, then waits for the Hop's goroutines to end. DialTunnel to
// other nodes fails with ErrClosed after it. Close is idempotent.
func (h *Hop) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		h.wg.Wait()
		return nil
	}
	h.closed = true
	var closers []func() error
	for ln := range h.listeners {
		closers = append(closers, ln.Close)
	}
	for _, pc := range h.peers {
		closers = append(closers, pc.mux.Close)
	}
	for pc := range h.retired {
		closers = append(closers, pc.mux.Close)
	}
	for ic := range h.inbound {
		if ic.mux != nil {
			closers = append(closers, ic.mux.Close)
		}
		closers = append(closers, ic.raw.Close)
	}
	for _, call := range h.dialing {
		call.cancel()
	}
	h.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range closers {
		wg.Go(func() { c() })
	}
	wg.Wait()
	h.wg.Wait()
	return nil
}
