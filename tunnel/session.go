package tunnel

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/internal/muxframe"
	"golang.ngrok.com/muxado/v2"
	"golang.org/x/time/rate"
)

// session is one agent connection: TLS, then muxado in the server role.
// Its fields after mu are guarded by mu; id, accountID and credentialID
// are set once, by the Auth that succeeds, before authed is closed.
type session struct {
	srv    *Server
	raw    net.Conn
	frames *muxframe.Conn // raw, writing the session's frames; set by run before the mux
	remote netip.AddrPort

	mux muxado.TypedStreamSession // set by run (under mu, which close reads it under) before any stream is read

	authed    chan struct{} // closed once Auth succeeded
	done      chan struct{} // closed once the session is closed
	closeOnce sync.Once
	stopOnce  sync.Once     // a stop request is carried out once
	rpcs      chan struct{} // a slot per request in progress

	pending bool // counted among the Server's connections not authenticated yet (under the Server's mu)

	id, accountID, credentialID string
	node                        string // the Server's node when the session opened
	stopSupported               bool

	mu        sync.Mutex
	authing   bool                // an Auth is in progress or done
	closing   bool                // close has begun: an Auth that ends now does not count
	counted   bool                // Auth succeeded before close: the session is in the Server's maps and its gauge
	tunnels   map[string]struct{} // held tunnel IDs
	reserved  int                 // slots of MaxTunnelsPerSession taken by binds in progress (see reserve)
	heartbeat bool                // the agent's heartbeat stream is open
	silence   *time.Timer         // closes the session when the heartbeat is silent
	limit     time.Duration       // the silence that closes the session
}

func newSession(s *Server, c net.Conn) *session {
	return &session{srv: s, raw: c, remote: remoteOf(c), authed: make(chan struct{}), done: make(chan struct{}),
		rpcs: make(chan struct{}, maxRPCs), tunnels: map[string]struct{}{}}
}

// remoteOf returns c's peer, unmapped; the zero AddrPort when it is not
// an IP address and port.
func remoteOf(c net.Conn) netip.AddrPort {
	ap, err := netip.ParseAddrPort(c.RemoteAddr().String())
	if err != nil {
		return netip.AddrPort{}
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

// run serves the session until it ends: the TLS handshake, then every
// stream the agent opens.
func (sess *session) run() {
	s := sess.srv
	defer sess.close("the connection ended")
	raw := muxframe.NewConn(sess.raw)
	tc := tls.Server(raw, s.tlsConfig)
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.HandshakeTimeout)
	err := tc.HandshakeContext(ctx)
	cancel()
	if err != nil {
		s.m.refused(reasonHandshake)
		s.log.Debug("agent TLS handshake failed", "remote", sess.remote.String(), "err", err)
		return
	}
	// Until Auth succeeds, the session lives HandshakeTimeout; after it,
	// as long as its heartbeat does not fall silent (see beat).
	sess.mu.Lock()
	sess.limit = s.opts.HandshakeTimeout
	sess.silence = time.AfterFunc(sess.limit, func() { sess.close("no Auth, or a silent heartbeat") })
	sess.mu.Unlock()
	raw.SetWriteTimeout(s.writeTimeout(0))
	limits := muxframe.Limits{Window: windowSize, Unauthenticated: maxUnauthFrame, UnauthenticatedTotal: maxUnauthBytes}
	mux := muxado.NewTypedStreamSession(muxado.Server(tc, &muxado.Config{MaxWindowSize: windowSize, AcceptBacklog: acceptBacklog, NewFramer: raw.Framer(limits)}))
	sess.mu.Lock() // close may read them meanwhile (a Server closing)
	sess.mux, sess.frames = mux, raw
	sess.mu.Unlock()
	for {
		accepted, err := mux.AcceptTypedStream()
		if err != nil {
			if ferr := raw.Refused(); ferr != nil {
				s.m.refused(reasonProtocol)
				s.log.Info("agent connection closed: it sent a frame longer than the protocol allows", "remote", sess.remote.String(), "session", sess.authedID(), "err", ferr)
				sess.close("a frame longer than the protocol allows")
			}
			if raw.Stalled() {
				s.m.refused(reasonStalled)
				s.log.Info("agent connection closed: the agent read nothing for the write timeout, and the session's writer could go no further",
					"remote", sess.remote.String(), "session", sess.authedID(), "write_timeout", s.writeTimeout(sess.allowance()).String())
				sess.close("the agent stopped reading")
			}
			return
		}
		str := raw.Wrap(accepted)
		switch t := accepted.StreamType(); t {
		case typeHeartbeat:
			sess.mu.Lock()
			first := !sess.heartbeat
			sess.heartbeat = true
			sess.mu.Unlock()
			if !first {
				str.Close() // one heartbeat per session
				continue
			}
			go sess.echo(str)
		case typeAuth, typeBind, typeUnbind, typeStartLabel, typeSrvInfo:
			select {
			case sess.rpcs <- struct{}{}:
				go func() {
					defer func() { <-sess.rpcs }()
					sess.serveRPC(t, str)
				}()
			default:
				str.Close() // too many requests at once
			}
		default:
			str.Close() // not a request an agent makes
		}
	}
}

// echo answers the agent's heartbeat: every four bytes are written back,
// and each resets the silence after which the session is closed. A
// heartbeat faster than the bounds (see beats) closes the session.
func (sess *session) echo(str muxado.Stream) {
	defer str.Close()
	limit := newBeats()
	var b [4]byte
	for {
		if _, err := io.ReadFull(str, b[:]); err != nil {
			return
		}
		if why := limit.allow(time.Now(), sess.isAuthed()); why != "" {
			s := sess.srv
			s.m.refused(reasonHeartbeat)
			s.log.Info("agent connection closed: its heartbeat is faster than the server answers", "remote", sess.remote.String(), "session", sess.authedID(), "why", why)
			sess.frames.GoAway(muxado.EnhanceYourCalm, why)
			sess.close(why)
			return
		}
		sess.beat()
		if _, err := str.Write(b[:]); err != nil {
			return
		}
	}
}

// beats decides which of a session's heartbeats are answered: at most
// HeartbeatsBeforeAuth before Auth, and HeartbeatRate a second in
// bursts of HeartbeatBurst.
type beats struct {
	early int // beats before Auth
	rate  *rate.Limiter
}

func newBeats() *beats {
	return &beats{rate: rate.NewLimiter(HeartbeatRate, HeartbeatBurst)}
}

// allow takes a beat that came at now, the session authenticated or
// not: "" if it is answered, else why the session is closed, in words.
func (b *beats) allow(now time.Time, authed bool) string {
	if !authed {
		if b.early++; b.early > HeartbeatsBeforeAuth {
			return fmt.Sprintf("heartbeats refused: more than %d before Auth", HeartbeatsBeforeAuth)
		}
	}
	if !b.rate.AllowN(now, 1) {
		return fmt.Sprintf("heartbeats refused: faster than %d a second (bursts of %d)", HeartbeatRate, HeartbeatBurst)
	}
	return ""
}

// isAuthed reports whether the session's Auth succeeded.
func (sess *session) isAuthed() bool {
	select {
	case <-sess.authed:
		return true
	default:
		return false
	}
}

// authedID is the session's ID once it authenticated, else "".
func (sess *session) authedID() string {
	if sess.isAuthed() {
		return sess.id
	}
	return ""
}

// beat pushes back the moment a silent session is closed.
func (sess *session) beat() {
	select {
	case <-sess.authed:
	default:
		return // before Auth the handshake's bound holds
	}
	sess.mu.Lock()
	if sess.silence != nil {
		sess.silence.Reset(sess.limit)
	}
	sess.mu.Unlock()
}

// serveRPC reads one request of type t from str, answers it with one
// JSON object and closes its side.
func (sess *session) serveRPC(t muxado.StreamType, str muxado.Stream) {
	defer str.Close()
	_ = str.SetReadDeadline(time.Now().Add(sess.srv.opts.HandshakeTimeout))
	var resp any
	switch t {
	case typeAuth:
		resp = sess.auth(str)
	default:
		select {
		case <-sess.authed:
		default:
			var discard json.RawMessage
			_ = readMessageMax(str, &discard, MaxAuthBytes)
			resp = errorResp{Error: protoError(apierr.New(apierr.Unauthenticated, "authenticate first: the session has no successful Auth"))}
			break
		}
		if resp != nil {
			break
		}
		switch t {
		case typeStartLabel:
			resp = sess.startLabel(str)
		case typeBind:
			resp = sess.bindEndpoint(str)
		case typeUnbind:
			resp = sess.unbind(str)
		case typeSrvInfo:
			var discard json.RawMessage
			if err := readMessage(str, &discard); err != nil {
				resp = errorResp{Error: protoError(err)}
			} else {
				resp = srvInfoResp{Region: sess.srv.opts.Region}
			}
		}
	}
	if resp == nil {
		return
	}
	_ = str.SetWriteDeadline(time.Now().Add(commandTimeout))
	_ = json.NewEncoder(str).Encode(resp)
}

// auth handles the agent's Auth: the authtoken is the Host's to judge;
// a session that fails is closed once its answer is sent.
func (sess *session) auth(str muxado.Stream) any {
	s := sess.srv
	var req authMsg
	fail := func(err error, reason string) any {
		s.m.refused(reason)
		s.log.Info("agent authentication refused", "remote", sess.remote.String(), "err", err)
		go func() {
			// The agent closes its side once it has read the answer (both
			// SDKs do); the server closes the connection only if it has
			// not after commandTimeout. Closing first would cut the
			// agent's session while it writes the request stream's FIN,
			// which races inside muxado's client.
			select {
			case <-time.After(commandTimeout):
			case <-sess.done:
			}
			sess.close("authentication failed")
		}()
		return authResp{Version: protocolVersion, Error: protoError(err), Extra: authRespExtra{Region: s.opts.Region, Version: s.opts.Version}}
	}
	sess.mu.Lock()
	again := sess.authing
	sess.authing = true
	sess.mu.Unlock()
	if again {
		var discard json.RawMessage
		_ = readMessageMax(str, &discard, MaxAuthBytes)
		return authResp{Version: protocolVersion, Error: protoError(apierr.New(apierr.FailedPrecondition, "the session is already authenticated"))}
	}
	if err := readMessageMax(str, &req, MaxAuthBytes); err != nil {
		return fail(err, reasonBadMessage)
	}
	osName := req.Extra.OS
	if req.Extra.Arch != "" {
		osName += "/" + req.Extra.Arch
	}
	params := agents.SessionParams{AgentVersion: req.Extra.Version, OS: osName, ClientType: req.Extra.ClientType,
		Metadata: req.Extra.Metadata, IP: sess.remote.Addr(), Region: s.opts.Region,
		StopSupported: req.Extra.StopUnsupportedError != nil && *req.Extra.StopUnsupportedError == "", Node: s.Node()}
	ctx, cancel := context.WithTimeout(context.Background(), hostTimeout)
	ts, err := s.opts.Host.OpenTunnelSession(ctx, req.Extra.Authtoken, params)
	cancel()
	if err != nil {
		reason := reasonInvalid
		switch {
		case errors.Is(err, apierr.ErrUnauthenticated):
			reason = reasonAuthtoken
		case errors.Is(err, apierr.ErrPermissionDenied):
			reason = reasonIPRestricted
		case errors.Is(err, apierr.ErrResourceExhausted):
			reason = reasonTooManySessions // the account's or the credential's limit
		}
		return fail(err, reason)
	}
	sess.id, sess.accountID, sess.credentialID, sess.node = ts.ID, ts.AccountID, ts.Credential.ID, ts.Node
	sess.stopSupported = params.StopSupported
	interval := heartbeatValue(req.Extra.HeartbeatInterval, DefaultHeartbeatInterval)
	tolerance := heartbeatValue(req.Extra.HeartbeatTolerance, DefaultHeartbeatTolerance)
	sess.mu.Lock()
	sess.limit = interval + tolerance
	sess.silence.Reset(sess.limit)
	sess.mu.Unlock()
	sess.frames.SetWriteTimeout(s.writeTimeout(interval + tolerance))
	// An agent that reconnects names the session it had and brings that
	// session's cookie: a cookie sealed for that ID, account and
	// credential proves the agent is the one that held it, which takes
	// the old session over at once (here or on any server of the store:
	// its record is removed, and the server that holds it follows the
	// feed) instead of letting it linger until its heartbeat times out.
	// Without a valid cookie the old session is left to its heartbeat.
	previous := ""
	if req.ClientID != "" && req.ClientID != ts.ID {
		made, err := s.opts.Host.OpenAgentToken(agents.TokenSession, req.Extra.Cookie, sess.accountID, sess.credentialID, req.ClientID)
		switch {
		case err != nil:
			s.m.refused(reasonResume)
			s.log.Info("an agent's session cookie is not valid for the session it resumes; the old session is left to its heartbeat", "session", ts.ID, "resumes", apierr.Truncate(req.ClientID, 64))
		case !s.fresh(made):
			s.m.refused(reasonResumeExpired)
			s.log.Info("an agent's session cookie is older than the resume token lifetime; the old session is left to its heartbeat", "session", ts.ID, "resumes", req.ClientID, "lifetime", s.opts.ResumeTokenTTL)
		default:
			previous = req.ClientID
		}
	}
	// Counted and registered at once, unless the connection closed
	// meanwhile: close then neither forgets it nor counts it down, and
	// its record (just created) is removed here.
	sess.mu.Lock()
	if sess.closing {
		sess.mu.Unlock()
		go sess.closeRecord()
		return authResp{Version: protocolVersion, Error: protoError(apierr.New(apierr.FailedPrecondition, "the connection closed during Auth"))}
	}
	sess.counted = true
	old := s.authenticated(sess, previous)
	sess.mu.Unlock()
	sess.frames.Authenticate() // before the answer: the agent's next frames may be a window long
	close(sess.authed)
	s.m.sessionUp()
	if old != nil {
		go old.close("the agent reconnected")
	} else if previous != "" {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), hostTimeout)
			defer cancel()
			if err := s.opts.Host.CloseTunnelSession(ctx, sess.accountID, previous); err != nil && !errors.Is(err, apierr.ErrNotFound) {
				s.log.Warn("removing the session an agent took over failed; its lease will end it", "session", previous, "err", err)
			}
		}()
	}
	s.log.Info("agent session opened", "session", sess.id, "account", sess.accountID, "remote", sess.remote.String(),
		"agent", req.Extra.ClientType+"/"+req.Extra.Version)
	return authResp{Version: protocolVersion, ClientID: sess.id,
		Extra: authRespExtra{Region: s.opts.Region, Version: s.opts.Version,
			Cookie: s.opts.Host.AgentToken(agents.TokenSession, sess.accountID, sess.credentialID, sess.id)}}
}

// fresh reports whether a resume token made at made may still take
// over what it names (Options.ResumeTokenTTL).
func (s *Server) fresh(made time.Time) bool {
	return time.Since(made) <= s.opts.ResumeTokenTTL
}

// allowance is the silence of the heartbeat that closes the session:
// HandshakeTimeout before Auth, the agent's interval and tolerance after.
func (sess *session) allowance() time.Duration {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	return sess.limit
}

// heartbeatValue is an agent-reported duration in nanoseconds, bounded
// to [MinHeartbeat, MaxHeartbeat]; def when it reported none.
func heartbeatValue(ns int64, def time.Duration) time.Duration {
	if ns <= 0 {
		return def
	}
	return min(max(time.Duration(ns), MinHeartbeat), MaxHeartbeat)
}

// startLabel handles StartTunnelWithLabel: the Host checks the labels
// against the credential's ACL and records the tunnel.
func (sess *session) startLabel(str muxado.Stream) any {
	s := sess.srv
	var req startLabelMsg
	if err := readMessage(str, &req); err != nil {
		return startLabelResp{Error: protoError(err)}
	}
	if len(req.Labels) == 0 {
		s.m.refused(reasonInvalid)
		return startLabelResp{Error: protoError(apierr.Invalidf("Labels", "a labeled tunnel needs at least one label"))}
	}
	if _, reserved := sess.reserve(""); !reserved {
		s.m.refused(reasonTooManyTunnels)
		return startLabelResp{Error: protoError(apierr.New(apierr.ResourceExhausted, "a session holds at most %d tunnels", s.opts.MaxTunnelsPerSession))}
	}
	ctx, cancel := context.WithTimeout(context.Background(), hostTimeout)
	t, err := s.opts.Host.StartLabeledTunnel(ctx, sess.accountID, sess.id,
		agents.LabeledTunnelParams{Labels: req.Labels, ForwardsTo: req.ForwardsTo, Metadata: req.Metadata})
	cancel()
	if err != nil {
		sess.release()
		s.m.refused(refusalReason(err))
		s.log.Info("agent's labeled tunnel refused", "session", sess.id, "err", err)
		return startLabelResp{Error: protoError(err)}
	}
	sess.hold(t.ID, kindLabeled, str)
	s.log.Info("agent tunnel started", "session", sess.id, "tunnel", t.ID, "labels", req.Labels)
	return startLabelResp{ID: t.ID}
}

// reserve takes one of the session's MaxTunnelsPerSession slots for a
// bind about to ask the Host, in one step with the count it checks (the
// tunnels held and the slots of the binds in progress), so that
// concurrent binds never hold more than the limit between them. id is
// the ID a bind names (a rebind), or "": again reports that the session
// holds it already, which takes a slot even when none is free (the
// tunnel has its own; the reservation keeps one for it should an Unbind
// free it meanwhile). reserved is false when no slot was free. A slot
// reserved is given back by release, or becomes the tunnel's by fill.
func (sess *session) reserve(id string) (again, reserved bool) {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if id != "" {
		_, again = sess.tunnels[id]
	}
	if !again && len(sess.tunnels)+sess.reserved >= sess.srv.opts.MaxTunnelsPerSession {
		return false, false
	}
	sess.reserved++
	return again, true
}

// release gives back a slot reserve took, for a bind that failed.
func (sess *session) release() {
	sess.mu.Lock()
	sess.reserved--
	sess.mu.Unlock()
}

// fill makes a slot reserve took tunnel id's.
func (sess *session) fill(id string) {
	sess.mu.Lock()
	sess.reserved--
	sess.tunnels[id] = struct{}{}
	sess.mu.Unlock()
}

// hold records that the session holds tunnel id (a labeled tunnel's or
// an endpoint's, of kind), bound by the request on str, in the slot its
// bind reserved. The agent registers the tunnel once it has read the
// answer, just after it closes the request stream: connections for the
// tunnel wait for that FIN (or a bound), else the agent would drop them.
func (sess *session) hold(id, kind string, str muxado.Stream) {
	s := sess.srv
	b := &binding{sess: sess, id: id, kind: kind, ready: make(chan struct{})}
	sess.fill(id)
	s.bind(b)
	select {
	case <-sess.done: // closed meanwhile: its close may have missed the tunnel
		s.unbind(sess, id)
	default:
	}
	go func() {
		defer close(b.ready)
		_ = str.SetReadDeadline(time.Now().Add(commandTimeout))
		_, _ = io.Copy(io.Discard, io.LimitReader(str, 1<<10))
	}()
}

// unbind handles Unbind: the tunnel is unregistered, or the endpoint
// unbound. An ID the session does not hold is a success (the SDK unbinds
// a labeled tunnel under the ID it had before a reconnect).
func (sess *session) unbind(str muxado.Stream) any {
	s := sess.srv
	var req unbindMsg
	if err := readMessage(str, &req); err != nil {
		return unbindResp{Error: protoError(err)}
	}
	sess.mu.Lock()
	_, held := sess.tunnels[req.ID]
	delete(sess.tunnels, req.ID)
	sess.mu.Unlock()
	if !held {
		return unbindResp{}
	}
	mine := s.unbind(sess, req.ID)
	if isEndpoint(req.ID) {
		if !mine {
			return unbindResp{} // bound again in a newer session here, which holds it now
		}
		if err := sess.unbindEndpoint(req.ID); err != nil {
			s.log.Warn("unbinding an agent's endpoint failed", "endpoint", req.ID, "err", err)
			return unbindResp{Error: protoError(err)}
		}
		s.log.Info("agent endpoint unbound", "session", sess.id, "endpoint", req.ID)
		return unbindResp{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), hostTimeout)
	err := s.opts.Host.UnregisterTunnel(ctx, sess.accountID, req.ID)
	cancel()
	if err != nil && !errors.Is(err, apierr.ErrNotFound) {
		s.log.Warn("unregistering an agent's tunnel failed", "tunnel", req.ID, "err", err)
		return unbindResp{Error: protoError(err)}
	}
	s.log.Info("agent tunnel stopped", "session", sess.id, "tunnel", req.ID)
	return unbindResp{}
}

// openProxy opens a proxied connection to tunnel id: a stream of type
// proxy, the header, then the connection's bytes.
func (sess *session) openProxy(ctx context.Context, id string, h agents.ConnHeader) (net.Conn, error) {
	hdr, err := json.Marshal(proxyHeader{ID: id, ClientAddr: h.ClientAddr.String(), Proto: h.Proto,
		EdgeType: string(h.EdgeType), PassthroughTLS: h.PassthroughTLS})
	if err != nil {
		return nil, err
	}
	str, err := sess.open()
	if err != nil {
		return nil, err
	}
	// The stream's type and the header go in one frame.
	buf := make([]byte, 4+8, 4+8+len(hdr))
	binary.BigEndian.PutUint32(buf, uint32(typeProxy))
	binary.LittleEndian.PutUint64(buf[4:], uint64(len(hdr)))
	buf = append(buf, hdr...)
	if dl, ok := ctx.Deadline(); ok {
		_ = str.SetWriteDeadline(dl)
	}
	if _, err := str.Write(buf); err != nil {
		str.Reset(muxado.StreamCancelled)
		return nil, err
	}
	_ = str.SetWriteDeadline(time.Time{})
	sess.srv.m.streamOpened()
	return sess.srv.m.count(str), nil
}

// open opens a stream to the agent, wrapped before anything is written
// on it (muxado's OpenTypedStream writes the type itself): the caller
// writes the stream's type (4 bytes, big-endian) first.
func (sess *session) open() (*muxframe.Stream, error) {
	opened, err := sess.mux.OpenStream()
	if err != nil {
		return nil, err
	}
	return sess.frames.Wrap(opened), nil
}

// openTyped opens a stream of type t to the agent, its type written with
// a deadline of commandTimeout.
func (sess *session) openTyped(t muxado.StreamType) (*muxframe.Stream, error) {
	str, err := sess.open()
	if err != nil {
		return nil, err
	}
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], uint32(t))
	_ = str.SetWriteDeadline(time.Now().Add(commandTimeout))
	if _, err := str.Write(b[:]); err != nil {
		str.Reset(muxado.StreamCancelled)
		return nil, err
	}
	return str, nil
}

// stop ends the session as a stop request asks: the agent's Stop
// command when it accepts one, then the connection is closed. The feed
// may show the request more than once (a resync reads it again): the
// agent is told once.
func (sess *session) stop() { sess.stopOnce.Do(sess.stopNow) }

func (sess *session) stopNow() {
	if sess.stopSupported && sess.mux != nil {
		if str, err := sess.openTyped(typeStop); err == nil {
			_ = str.SetDeadline(time.Now().Add(commandTimeout))
			if json.NewEncoder(str).Encode(struct{}{}) == nil {
				var resp errorResp
				_ = json.NewDecoder(io.LimitReader(str, MaxMessageBytes)).Decode(&resp)
			}
			str.Close()
		}
	}
	sess.close("a stop was requested")
}

// stopTunnel tells the agent that tunnel id ended (a StopTunnel
// command, which has no answer) and forgets it.
func (sess *session) stopTunnel(id, msg string, code apierr.Code) {
	sess.mu.Lock()
	_, held := sess.tunnels[id]
	delete(sess.tunnels, id)
	sess.mu.Unlock()
	if !held {
		return
	}
	sess.srv.unbind(sess, id)
	select {
	case <-sess.done:
		return // closing: nothing to tell (and a write would race the close in muxado)
	default:
	}
	str, err := sess.openTyped(typeStopTunnel)
	if err != nil {
		return
	}
	defer str.Close()
	_ = str.SetWriteDeadline(time.Now().Add(commandTimeout))
	_ = json.NewEncoder(str).Encode(stopTunnelMsg{ID: id, Message: msg, ErrorCode: code.Wire()})
}

// close ends the session once: the connection is closed, its tunnels
// are forgotten and, if it authenticated, its record (and its tunnels')
// is removed through the Host.
func (sess *session) close(why string) {
	sess.closeOnce.Do(func() {
		close(sess.done)
		sess.mu.Lock()
		sess.closing = true
		counted := sess.counted
		if sess.silence != nil {
			sess.silence.Stop()
		}
		mux, frames := sess.mux, sess.frames
		sess.mu.Unlock()
		// The socket first: a frame stuck in a write to an agent that
		// reads nothing fails. Then the writer reads no frame again (a
		// write that fails because the session died leaves its bytes to
		// its caller), and the session dies.
		sess.raw.Close()
		if mux != nil {
			frames.Stop()
			mux.Close()
		}
		sess.srv.forget(sess, counted)
		if counted {
			sess.srv.m.sessionDown()
			sess.srv.log.Info("agent session closed", "session", sess.id, "why", why)
			if !sess.srv.shutdown.Load() {
				sess.closeRecord() // else Close removes the node's records at once
			}
		}
	})
}

// closeRecord removes the session's record through the Host.
func (sess *session) closeRecord() {
	ctx, cancel := context.WithTimeout(context.Background(), hostTimeout)
	defer cancel()
	if err := sess.srv.opts.Host.CloseTunnelSession(ctx, sess.accountID, sess.id); err != nil && !errors.Is(err, apierr.ErrNotFound) {
		sess.srv.log.Warn("removing a closed agent session failed; its lease will end it", "session", sess.id, "err", err)
	}
}

// refusalReason is the metrics reason of a Host's refusal.
func refusalReason(err error) string {
	switch {
	case errors.Is(err, apierr.ErrPermissionDenied):
		return reasonACL
	case errors.Is(err, apierr.ErrConflict):
		return reasonConflict
	case errors.Is(err, apierr.ErrNotFound):
		return reasonGone
	case errors.Is(err, apierr.ErrResourceExhausted):
		return reasonTooManyTunnels // the account's limit
	default:
		return reasonInvalid
	}
}
