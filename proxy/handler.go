package proxy

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mholt/acmez/v3"

	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/clientip"
	"github.com/edgeplane/edgeplane/internal/bulkcopy"
	"github.com/edgeplane/edgeplane/ipaccess"
	"github.com/edgeplane/edgeplane/policy"
	"github.com/edgeplane/edgeplane/proxy/oidcauth"
	"github.com/edgeplane/edgeplane/ratelimit"
)

// Defaults of [HandlerOptions].
const (
	// DefaultUpstreamTimeout bounds the wait for an upstream's response
	// headers.
	DefaultUpstreamTimeout = 30 * time.Second
	// DefaultFailureBackoff is how long a tunnel whose upstream failed a
	// request is skipped while another tunnel of the backend is usable.
	DefaultFailureBackoff = 5 * time.Second
	// DefaultMaxResponseHeaderBytes bounds the status line and headers of
	// an upstream's or an agent's response (net/http's own bound is 10
	// MiB); a client's request headers are bounded at 32 KiB
	// (limits.MaxRequestHeaderBytes).
	DefaultMaxResponseHeaderBytes = 64 << 10
	// upstreamDialTimeout bounds a connection to an upstream: a dial of
	// the default transport, or a stream opened to an agent's tunnel.
	upstreamDialTimeout = 30 * time.Second
)

// HandlerOptions configures a [Handler]. The zero value means the
// documented defaults.
type HandlerOptions struct {
	// Logger receives one line per request (at Info, built only when
	// Info is enabled) and the handler's warnings. Nil discards them.
	Logger *slog.Logger
	// TrustedProxies are the peers whose X-Forwarded-For is believed for
	// conn.client_ip (see [ParseTrustedProxies]). Empty: the client is
	// always the socket's peer.
	TrustedProxies []netip.Prefix
	// Transport carries requests to the upstreams. Nil: a transport like
	// http.DefaultTransport that keeps up to 256 idle connections per
	// upstream, does not ask for compressed responses on its own and waits
	// at most UpstreamTimeout for an upstream's response headers; it
	// carries a request without a body to a plain-HTTP upstream itself,
	// in the request's goroutine (see forward.go), and hands any other to
	// an http.Transport with those settings.
	Transport http.RoundTripper
	// UpstreamTimeout bounds the wait for an upstream's response headers
	// when Transport is nil; past it the client gets 504. For agents'
	// tunnels (whatever Transport is) it also bounds the opening of the
	// stream and each write of the request on it (see the package doc's
	// # Agents' tunnels). Zero means [DefaultUpstreamTimeout].
	UpstreamTimeout time.Duration
	// MaxResponseHeaderBytes bounds the bytes of an upstream's or an
	// agent's response read before its headers end (status line and
	// headers; for an HTTP/2 upstream, its header list): past it the
	// proxy reads no further, closes that connection, logs a warning and
	// answers the client 502. Zero or less means
	// [DefaultMaxResponseHeaderBytes]. It applies to agents' tunnels and
	// to the default transport; a Transport of the caller's brings its
	// own (http.Transport.MaxResponseHeaderBytes).
	MaxResponseHeaderBytes int
	// UpstreamNetworks, when not empty, are the only networks the default
	// transport connects to (checked on the address it dials, after name
	// resolution): a tunnel whose forwards_to reaches anywhere else gets
	// 502. Whoever may register tunnels chooses where the proxy connects;
	// set this to the networks the tunnels' servers live in (see the
	// package doc's # Backends). Empty: any address. Ignored when
	// Transport is set.
	UpstreamNetworks []netip.Prefix
	// FailureBackoff is how long a tunnel whose upstream failed is skipped
	// (passive health). Zero means [DefaultFailureBackoff].
	FailureBackoff time.Duration
	// Clock gives the evaluation time of traffic policies (time.now,
	// rate-limit windows) and of tunnel leases. Nil: time.Now.
	Clock func() time.Time
	// Metrics receives the handler's measurements; nil measures nothing.
	// Register it with a prometheus registry.
	Metrics *Metrics
	// OIDCKey is the key the OIDC module's session cookies are sealed
	// under (at least [oidcauth.MinKeyBytes]; the Service's sealing key
	// will do: each route derives its own key from it). Every proxy that
	// serves the same edges needs the same key, or a session started
	// through one is refused by another. Without it, routes with the OIDC
	// module answer 503 (fail closed).
	OIDCKey []byte
	// OIDCProviders caches the OIDC providers' discovery; nil means one
	// of the Handler's own with the package defaults, which connects to
	// public addresses only (an OIDC module's issuer is chosen by the
	// tenant: see [oidcauth.ProvidersOptions]) unless OIDCNetworks says
	// otherwise.
	OIDCProviders *oidcauth.Providers
	// OIDCNetworks, when not empty and OIDCProviders is nil, are the only
	// networks the Handler's own providers connect to, private ones
	// included (an identity provider inside the operator's network).
	// Empty: public addresses only.
	OIDCNetworks []netip.Prefix
	// Agents reaches the tunnels that agents hold (a tunnel whose
	// TunnelSession is set; package tunnel's Server is one): a request to
	// such a tunnel goes as HTTP/1.1 on a stream of its own that
	// Agents.DialTunnel opens, with the client's socket address in its
	// [agents.ConnHeader] (see the package doc's # Agents' tunnels). It
	// is used whatever Transport is, and the tunnel's forwards_to is
	// never dialed. It also reaches the agents' http and https
	// endpoints, by endpoint ID (see the package doc's # Endpoints).
	// Nil: agents' tunnels are not reachable, and are skipped as tunnels
	// that do not say where they forward are (with none other, the route
	// answers 503 as when no tunnel serves it); endpoints answer 503.
	// When Agents has a method Node() string (package tunnel's Server and
	// package hop's Hop do), a backend's tunnels held on that node are
	// preferred to those of other nodes.
	Agents agents.Dialer
	// DomainBase and DomainBaseCertificate: the tunnel servers' base
	// domain of the names they give endpoints that name none
	// (tunnel.Options.DomainBase), and the operator's certificate of
	// *.DomainBase, presented for the https endpoints under it, which no
	// reserved domain serves (see domainbase.go). Nil: none.
	DomainBase            string
	DomainBaseCertificate *tls.Certificate
}

// localNode returns the node of d, when d says (a Node() string method):
// its tunnels are preferred.
func localNode(d agents.Dialer) string {
	if n, ok := d.(interface{ Node() string }); ok {
		return n.Node()
	}
	return ""
}

// Handler is the edge data plane for HTTP: an http.Handler that serves
// every HTTPS edge of a [Configs], and its http and https endpoints
// (see the package doc's # Endpoints). It matches a request to its edge
// by the hostport it was addressed to (Host header; on TLS, the
// ClientHello's server name must name the same host), then to a route by
// path, then runs the route's pipeline: the inbound traffic policy
// rules, the backend (round-robin over the tunnels under lease), then on
// the way back the outbound rules, the response headers module and the
// compression module. It is safe for concurrent use.
type Handler struct {
	configs *Configs
	clock   func() time.Time
	// wallClock says that clock is time.Now: a request's arrival time
	// then serves as its evaluation time (one clock read fewer).
	wallClock bool
	log       *slog.Logger
	trusted   []netip.Prefix
	backoff   time.Duration
	metrics   *Metrics
	rp        *httputil.ReverseProxy
	// plain is the default transport (nil with HandlerOptions.Transport):
	// the requests it carries itself take the direct path (forward).
	plain *upstreamTransport
	// maxHeaderBytes is HandlerOptions.MaxResponseHeaderBytes, its
	// default applied.
	maxHeaderBytes int
	// agents and agentRP carry the requests to agents' tunnels; nil
	// without HandlerOptions.Agents.
	agents  agents.Dialer
	agentRP *httputil.ReverseProxy
	// agentTimeout is HandlerOptions.UpstreamTimeout, its default
	// applied: the bound of a stream's opening and of each write of a
	// request to an agent (see dialAgent).
	agentTimeout time.Duration

	oidcKey   []byte
	providers *oidcauth.Providers
	// acmeLimit bounds the HTTP-01 requests of each client (acme.go).
	acmeLimit *ratelimit.Limiter
	// domainBase and baseCert: HandlerOptions.DomainBase (lower case)
	// and DomainBaseCertificate.
	domainBase string
	baseCert   *tls.Certificate
}

// NewHandler returns the Handler of the edges c serves.
func NewHandler(c *Configs, o HandlerOptions) *Handler {
	h := &Handler{configs: c, clock: o.Clock, log: o.Logger, trusted: o.TrustedProxies, backoff: o.FailureBackoff, metrics: o.Metrics,
		maxHeaderBytes: o.MaxResponseHeaderBytes,
		oidcKey:        o.OIDCKey, providers: o.OIDCProviders, acmeLimit: newACMELimiter()}
	h.domainBase, h.baseCert = strings.ToLower(o.DomainBase), o.DomainBaseCertificate
	if h.providers == nil {
		h.providers = oidcauth.NewProviders(oidcauth.ProvidersOptions{Networks: o.OIDCNetworks})
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.clock == nil {
		h.clock, h.wallClock = time.Now, true
	}
	if h.backoff <= 0 {
		h.backoff = DefaultFailureBackoff
	}
	if h.maxHeaderBytes <= 0 {
		h.maxHeaderBytes = DefaultMaxResponseHeaderBytes
	}
	transport := o.Transport
	if transport == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConns = 1024
		t.MaxIdleConnsPerHost = 256
		t.DisableCompression = true // pass the client's Accept-Encoding on as is; never gunzip behind its back
		t.ResponseHeaderTimeout = o.UpstreamTimeout
		if t.ResponseHeaderTimeout <= 0 {
			t.ResponseHeaderTimeout = DefaultUpstreamTimeout
		}
		t.MaxResponseHeaderBytes = int64(h.maxHeaderBytes)
		if len(o.UpstreamNetworks) > 0 {
			t.DialContext = upstreamDialer(o.UpstreamNetworks, upstreamDialTimeout).DialContext
		}
		h.plain = newUpstreamTransport(t)
		transport = h.plain
	}
	h.rp = h.reverseProxy(transport)
	if o.Agents != nil {
		h.agents = o.Agents
		h.agentTimeout = positiveOr(o.UpstreamTimeout, DefaultUpstreamTimeout)
		h.agentRP = h.reverseProxy(&poolRetry{h: h, next: h.agentTransport(h.agentTimeout)})
	}
	return h
}

// reverseProxy returns the ReverseProxy of the Handler's pipeline over
// transport.
func (h *Handler) reverseProxy(transport http.RoundTripper) *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		Rewrite:        h.rewrite,
		Transport:      transport,
		ModifyResponse: h.modifyResponse,
		ErrorHandler:   h.upstreamError,
		ErrorLog:       slog.NewLogLogger(h.log.Handler(), slog.LevelWarn),
		BufferPool:     bufferPool{},
	}
}

// agentTransport returns the transport of requests to agents' tunnels.
// A stream's ConnHeader names one client, so streams are kept alive per
// tunnel and client connection: each request's URL host is its pool key
// ([agentPoolKey]: the tunnel and the client's socket address), so a
// stream only ever carries the requests of the client connection it was
// opened for (a dial that finished after its request gave up goes to the
// next request of that same key). A client connection's requests then
// reuse one stream, and the agent its connection to its upstream,
// instead of a stream and an upstream connection per request. A stream
// left idle closes after agentIdleTimeout, and at most agentIdlePerKey
// are kept per key (an HTTP/2 client's concurrent requests open several)
// and agentIdleTotal in all. The transport never uses a proxy, waits at
// most upstreamTimeout (zero: [DefaultUpstreamTimeout]) for response
// headers, reads at most the Handler's maxHeaderBytes of them, and passes
// the client's Accept-Encoding on as the default transport does.
func (h *Handler) agentTransport(upstreamTimeout time.Duration) *http.Transport {
	return &http.Transport{
		DialContext:            h.dialAgent,
		MaxIdleConns:           agentIdleTotal,
		MaxIdleConnsPerHost:    agentIdlePerKey,
		IdleConnTimeout:        agentIdleTimeout,
		DisableCompression:     true,
		ResponseHeaderTimeout:  positiveOr(upstreamTimeout, DefaultUpstreamTimeout),
		MaxResponseHeaderBytes: int64(h.maxHeaderBytes),
		ExpectContinueTimeout:  time.Second,
	}
}

// Bounds of the idle streams to agents kept for reuse (agentTransport).
const (
	agentIdleTimeout = 15 * time.Second
	agentIdlePerKey  = 4
	agentIdleTotal   = 4096
)

// agentPoolKey returns the host of the URL of a request to tunnel for a
// client at addr: the key of the transport's pool of streams, a valid
// DNS-like name under .invalid ("tn_1--203-0-113-7-40000.agent.invalid").
func agentPoolKey(tunnel string, addr netip.AddrPort) string {
	b := make([]byte, 0, len(tunnel)+64)
	b = append(b, tunnel...)
	b = append(b, "--"...)
	b = addr.AppendTo(b)
	for i := len(tunnel) + 2; i < len(b); i++ {
		switch b[i] {
		case '.', ':', '[', ']', '%':
			b[i] = '-'
		}
	}
	b = append(b, ".agent.invalid"...)
	return string(b)
}

// dialAgent opens a stream to the agent's tunnel of the request whose
// context ctx is (the exchange's upstream), telling the agent the
// exchange's ConnHeader. The address the transport asks for is
// [agentURL]'s, and is ignored. The stream is opened within the upstream
// timeout (and upstreamDialTimeout), and each write of a request on it
// must be taken by the agent within the upstream timeout (see
// [boundedStream]).
func (h *Handler) dialAgent(ctx context.Context, _, addr string) (net.Conn, error) {
	ex := exchangeOf(ctx)
	u := ex.upstream
	if r := ex.retarget.Load(); r != nil && strings.HasPrefix(addr, r.tunnelID+"--") {
		u = r // a retry on another member of an endpoint pool (pool.go)
	}
	dctx, cancel := context.WithTimeout(ctx, min(upstreamDialTimeout, h.agentTimeout))
	defer cancel()
	c, err := h.agents.DialTunnel(dctx, u.node, u.tunnelID, ex.agentHeader)
	h.metrics.agentStream(kindHTTPS, err)
	if err != nil {
		if c, err = h.redialPool(ctx, ex, u, err); err != nil { // an endpoint pool's other members (pool.go)
			return nil, err
		}
	}
	return &boundedStream{Conn: c, timeout: h.agentTimeout}, nil
}

// boundedStream is a stream to an agent as the agents' transport writes
// requests on it: each write has a deadline, the upstream timeout from
// its start. The transport starts the upstream timeout for the response
// headers only once the request is written; an agent that takes none of
// the request (it stopped reading, or gives its stream no window) would
// hold the client past every timeout. A write that times out fails the
// request with a timeout, which the client gets as 504, and the stream is
// reset (package tunnel: the agent learns that nobody waits for its
// answer).
type boundedStream struct {
	net.Conn
	timeout time.Duration
}

func (c *boundedStream) Write(p []byte) (int, error) {
	_ = c.Conn.SetWriteDeadline(time.Now().Add(c.timeout))
	return c.Conn.Write(p)
}

// ReadFrom copies a request's body to the agent as the stream's own
// ReadFrom would, each write with its deadline.
func (c *boundedStream) ReadFrom(src io.Reader) (int64, error) { return bulkcopy.Copy(c, src) }

// WriteTo copies the agent's answer as the stream's own WriteTo does.
func (c *boundedStream) WriteTo(dst io.Writer) (int64, error) {
	if wt, ok := c.Conn.(io.WriterTo); ok {
		return wt.WriteTo(dst)
	}
	return bulkcopy.Copy(dst, c.Conn)
}

// TLSConfig returns a TLS server config that presents, for each
// ClientHello, the certificate of the reserved domain its server name is
// ([Configs.Certificate]). Certificates follow the store: a new one is
// presented from the next handshake on. TLS 1.2 is the minimum; HTTP/2
// and HTTP/1.1 are offered. A hello that offers acme-tls/1 is a
// TLS-ALPN-01 validation: it gets the validation certificate of the
// name's pending challenge (package certmanager stores them).
//
// A hello for a name with no certificate here (no edge or endpoint
// serves it, its domain has none, or no challenge is pending for an
// acme-tls/1 hello), or with no server name at all, fails the handshake
// with the alert unrecognized_name (112), which crypto/tls clients
// report as "tls: unrecognized name"; only a real failure (the store
// cannot be read for a challenge) sends internal_error (80). crypto/tls
// sends internal_error for any error GetCertificate returns, even a
// [tls.AlertError], and unrecognized_name when it returns no certificate
// and no error and the config has no Certificates: so GetCertificate
// returns (nil, nil) for those names, and the returned config must keep
// Certificates empty (one there would be presented instead).
func (h *Handler) TLSConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"h2", "http/1.1", acmez.ACMETLS1Protocol},
		GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			if offersACMETLS(hello.SupportedProtos) {
				return h.acmeCertificate(hello.Context(), hello.ServerName) // a TLS-ALPN-01 validation
			}
			if cert := h.configs.Certificate(hello.ServerName); cert != nil {
				return cert, nil
			}
			if cert := h.domainBaseCertificate(hello.ServerName); cert != nil {
				return cert, nil // a name the tunnel server picked (domainbase.go)
			}
			h.metrics.unrouted(reasonNoCertificate)
			return nil, nil // unrecognized_name (see above)
		},
	}
}

// errUpstreamNetwork refuses a connection to an upstream outside
// HandlerOptions.UpstreamNetworks.
var errUpstreamNetwork = errors.New("proxy: the upstream's address is outside the allowed upstream networks")

// exchange is the state of one request that the ReverseProxy callbacks
// need. It travels as the request's context: it is the request's context
// (embedded) that answers Value(exchangeKey{}) with itself, which saves
// the context.WithValue allocation of every request.
type exchange struct {
	context.Context
	edge     *Edge
	route    *route
	upstream *upstream
	// redialed is the member of an endpoint pool that took the request
	// when upstream's dial failed (redialPool), whose health it already
	// marked; nil otherwise. Atomic: the transport dials in a goroutine
	// of its own.
	redialed atomic.Pointer[upstream]
	// retarget is the member of an endpoint pool a retry sends the
	// request to (poolRetry): a dial for its pool key goes there.
	retarget  atomic.Pointer[upstream]
	forwarded bool           // conn.client_ip came from a trusted X-Forwarded-For
	out       *outboundState // what outbound rules need; nil when the route has none
	w         responseWriter
	endedBy   string // the location of the policy action that answered, if any
	failed    bool   // the upstream failed (not the client)
	// agentHeader is what the agent is told of the request's client when
	// upstream is an agent's tunnel.
	agentHeader agents.ConnHeader
}

// outboundState is what the outbound rules of a request need from the
// inbound phase.
type outboundState struct {
	in  policy.Result  // the inbound result (its action result variables)
	req policy.Request // the request after the inbound rules
}

type exchangeKey struct{}

// Value returns the exchange for exchangeKey, else the request context's
// value.
func (ex *exchange) Value(key any) any {
	if _, ok := key.(exchangeKey); ok {
		return ex
	}
	return ex.Context.Value(key)
}

// exchangeOf returns the exchange a request forwarded by ServeHTTP
// carries in its context.
func exchangeOf(ctx context.Context) *exchange {
	if ex, ok := ctx.(*exchange); ok {
		return ex
	}
	return ctx.Value(exchangeKey{}).(*exchange)
}

// errClose is how modifyResponse asks upstreamError to close the client
// connection (an outbound close verdict).
var errClose = errors.New("proxy: the outbound traffic policy closes the connection")

// ServeHTTP serves a request of one of the edges.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	ex := &exchange{w: responseWriter{ResponseWriter: w}} // one allocation for both
	rw := &ex.w
	client, forwarded := clientip.Of(r, h.trusted)
	ex.forwarded = forwarded
	defer func() {
		rw.finish()
		h.observe(r, ex, client, start)
	}()

	host, ok := requestHost(r)
	if ok && strings.HasPrefix(r.URL.Path, acmeChallengePath) && h.serveACMEHTTP(rw, r, host, client.Addr()) {
		return // an HTTP-01 validation (or one redirected to HTTPS), before the edges
	}
	switch {
	case !ok:
		h.metrics.unrouted(reasonUnknownHost)
		http.Error(rw, "no edge serves this host", http.StatusNotFound)
		return
	case r.TLS != nil && !strings.EqualFold(strings.TrimSuffix(r.TLS.ServerName, "."), host):
		// The connection's certificate was chosen for another name: do
		// not let one tenant's TLS connection reach another's edge.
		h.metrics.unrouted(reasonMisdirected)
		http.Error(rw, "misdirected request: the Host header does not name the TLS server name", http.StatusMisdirectedRequest)
		return
	}
	// An HTTPS edge, or the http or https endpoint of the listener's
	// protocol (see the package doc's # Endpoints).
	var e *Edge
	if r.TLS != nil {
		e = h.configs.siteTLS(host)
	} else {
		e = h.configs.sitePlain(host)
	}
	if e != nil && e.Config == nil && (e.ep == nil || !e.ep.serves(r.TLS != nil)) {
		e = nil // a TLS edge's or a tls endpoint's host
	}
	if e == nil {
		h.metrics.unrouted(reasonUnknownHost)
		http.Error(rw, "no edge serves this host", http.StatusNotFound)
		return
	}
	ex.edge = e
	// The account's IP restrictions of type endpoints, before anything
	// of the edge's.
	if refusedBy, warnings := e.restrictedBy(client.Addr()); refusedBy != "" || warnings != nil {
		now := start
		if !h.wallClock {
			now = h.clock()
		}
		h.configs.logRestricted(h.log, e, client.Addr(), refusedBy, warnings, now)
		if refusedBy != "" {
			http.Error(rw, "forbidden: an IP restriction of this endpoint refuses the client's address", http.StatusForbidden)
			return
		}
	}
	oidcauth.StripHeaders(r.Header) // only the OIDC module sets them
	var rt *route
	if e.ep != nil {
		// An endpoint is one route "/" of no edge, without modules.
		if e.ep.policyErr != nil {
			http.Error(rw, "service unavailable: this endpoint's traffic policy cannot be applied", http.StatusServiceUnavailable)
			return
		}
		rt = e.epRoute
	} else {
		if len(e.oidcRoutes) > 0 && h.oidcCallback(rw, r, e) {
			return
		}
		rc := e.Config.Route(r.URL.Path)
		if rc == nil {
			http.Error(rw, "no route of this edge matches the path", http.StatusNotFound)
			return
		}
		rt = e.routes[rc.RouteID]
	}
	rc := rt.cfg
	ex.route = rt
	now := start
	if !h.wallClock {
		now = h.clock()
	}

	// 1. The OIDC module.
	var id policy.OIDCIdentity // the oidc.* variables: none without the module
	if rc.OIDC != nil {
		var ok bool
		if id, ok = h.authenticate(rw, r, e, rt); !ok {
			return
		}
	}

	// 2. Inbound traffic policy rules.
	if pol := rc.TrafficPolicy; pol != nil {
		req := policy.RequestFromHTTPWithClient(r, client, now)
		req.OIDC, req.RouteID, req.Conn.EdgeID = id, rc.RouteID, rc.EdgeID
		if rt.static.forwardsInternal {
			req.Internal = &internalResolver{c: h.configs, account: e.AccountID(), agents: h.agents != nil}
		}
		in := pol.Inbound(&req)
		switch in.Verdict {
		case policy.Forward: // to an internal endpoint (forwardinternal.go)
			if e, rt = h.forwardInternal(rw, r, ex, &in, client, now); rt == nil {
				return
			}
			rc = rt.cfg
		case policy.Continue:
			in.ApplyHTTP(rw, r) // header edits and URL rewrite
			if rt.static.hasOutbound {
				ex.out = &outboundState{in: in, req: policy.RequestFromHTTPWithClient(r, client, now)} // as the upstream sees it
				ex.out.req.OIDC, ex.out.req.RouteID, ex.out.req.Conn.EdgeID = id, rc.RouteID, rc.EdgeID
			}
		default:
			ex.endedBy = in.Location
			in.ApplyHTTP(rw, r)
			return
		}
	}
	// 3. The backend: a tunnel under lease, round-robin.
	ex.upstream = rt.pick(now, h.agents != nil, localNode(h.agents))
	if ex.upstream == nil {
		http.Error(rw, rt.noUpstream, http.StatusServiceUnavailable)
		return
	}
	rp := h.rp
	if ex.upstream.agent {
		rp = h.agentRP
		ex.agentHeader = agents.ConnHeader{ClientAddr: client, Proto: "http", EdgeType: agents.EdgeHTTPS}
		if e.ep != nil {
			ex.agentHeader.EdgeType = agents.EdgeNone
		}
		if forwarded {
			ex.agentHeader.ClientAddr, _ = clientip.Peer(r) // the socket's peer, not X-Forwarded-For's client
		}
		if r.TLS != nil {
			ex.agentHeader.Proto = "https"
		}
	}

	// 4. On the way back (modifyResponse, then rw): outbound rules,
	// response headers, compression.
	rw.compress = rc.Compression && r.Method != http.MethodHead
	rw.acceptGzip = rw.compress && acceptsGzip(r.Header.Values("Accept-Encoding"))
	if rw.acceptGzip {
		r.Header.Del("Accept-Encoding") // the proxy compresses; the upstream sends identity
	}
	ex.Context = r.Context()
	if h.plain != nil && !ex.upstream.agent && h.forward(rw, r, ex) {
		return // the direct path (forwardplain.go)
	}
	rp.ServeHTTP(rw, r.WithContext(ex))
}

// logRestricted counts and logs what an account's endpoint restrictions
// said at now of a client of edge e: a refusal at Info, each warning of a
// restriction not enforced at Warn, at most once per restriction and
// address per [ipaccess.WarnInterval].
func (c *Configs) logRestricted(log *slog.Logger, e *Edge, ip netip.Addr, refusedBy string, warnings []string, now time.Time) {
	ctx := context.Background()
	for _, id := range warnings {
		if c.restrictions.Warned(ipaccess.TypeEndpoints, id, ip, now) {
			log.LogAttrs(ctx, slog.LevelWarn, "an IP restriction that is not enforced would refuse this client; let through", slog.String("account", e.AccountID()),
				slog.String("edge", e.ID()), slog.String("restriction", id), slog.String("client_ip", ip.String()))
		}
	}
	if refusedBy == "" {
		return
	}
	c.restrictions.Refused(ipaccess.TypeEndpoints)
	if log.Enabled(ctx, slog.LevelInfo) {
		log.LogAttrs(ctx, slog.LevelInfo, "refused by an IP restriction", slog.String("account", e.AccountID()),
			slog.String("edge", e.ID()), slog.String("restriction", refusedBy), slog.String("client_ip", ip.String()))
	}
}

// requestHost returns the host a request was addressed to: the Host
// header's host, lower-cased and without a trailing dot; a port in it is
// ignored (HTTPS edges serve port 443, and the proxy may listen behind a
// port mapping, a load balancer or, in development, on a high port). ok
// is false for a Host that cannot name an edge: empty, too long, with a
// malformed port, or with a byte no host name has (an IPv6 literal, or
// the "*" of a wildcard: a wildcard hostport serves the names it covers,
// not a request for "*.example.com" itself).
func requestHost(r *http.Request) (host string, ok bool) {
	host = r.Host
	if host == "" || len(host) > maxHostBytes+6 {
		return "", false
	}
	if i := strings.LastIndexByte(host, ':'); i >= 0 {
		port := host[i+1:]
		if port == "" || len(port) > 5 {
			return "", false
		}
		for j := 0; j < len(port); j++ {
			if port[j] < '0' || port[j] > '9' {
				return "", false // also an IPv6 literal: no edge serves one
			}
		}
		host = host[:i]
	}
	host = strings.TrimSuffix(host, ".")
	upper := false
	for j := 0; j < len(host); j++ {
		switch c := host[j]; {
		case 'A' <= c && c <= 'Z':
			upper = true
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '.', c == '_':
		default:
			return "", false // not a DNS name an edge can serve
		}
	}
	if upper {
		b := []byte(host)
		for j, c := range b {
			if 'A' <= c && c <= 'Z' {
				b[j] = c + 'a' - 'A'
			}
		}
		host = string(b)
	}
	return host, host != ""
}

// rewrite points the outgoing request at the upstream and sets the
// X-Forwarded-* headers. X-Forwarded-For is the incoming chain plus the
// peer when the peer is a trusted proxy, else just the peer.
func (h *Handler) rewrite(pr *httputil.ProxyRequest) {
	ex := exchangeOf(pr.In.Context())
	pr.SetURL(ex.upstream.url)
	if ex.upstream.agent {
		pr.Out.URL.Host = agentPoolKey(ex.upstream.tunnelID, ex.agentHeader.ClientAddr)
	}
	if ex.forwarded {
		pr.Out.Header["X-Forwarded-For"] = pr.In.Header["X-Forwarded-For"]
	}
	pr.SetXForwarded()
	pr.Out.Host = pr.In.Host // the upstream sees the edge's host, as behind a tunnel
}

// modifyResponse runs the outbound rules and the response headers module
// on the upstream's response.
func (h *Handler) modifyResponse(resp *http.Response) error {
	return h.modify(exchangeOf(resp.Request.Context()), resp)
}

// modify is modifyResponse of the exchange ex.
func (h *Handler) modify(ex *exchange, resp *http.Response) error {
	if ex.redialed.Load() == nil { // else upstream failed: its backoff stays
		ex.upstream.health.succeed()
	}
	rt := ex.route
	if ex.out != nil {
		out := rt.cfg.TrafficPolicy.Outbound(&ex.out.req, &policy.Response{StatusCode: resp.StatusCode, Header: resp.Header}, &ex.out.in)
		switch out.Verdict {
		case policy.Respond:
			ex.endedBy = out.Location
			_ = resp.Body.Close()
			resp.StatusCode, resp.Status = out.StatusCode, ""
			resp.Header = http.Header{}
			for k, v := range out.Header {
				resp.Header[http.CanonicalHeaderKey(k)] = append([]string(nil), v...)
			}
			resp.Body = io.NopCloser(strings.NewReader(out.Body))
			resp.ContentLength = int64(len(out.Body))
			resp.Header.Set("Content-Length", strconv.Itoa(len(out.Body)))
			resp.TransferEncoding = nil
		case policy.Close:
			ex.endedBy = out.Location
			return errClose
		default:
			applyEdits(resp.Header, out.HeaderEdits)
		}
	}
	rt.cfg.ResponseHeaders.Apply(resp.Header)
	return nil
}

// applyEdits applies outbound add-headers and remove-headers edits.
func applyEdits(hd http.Header, edits []policy.HeaderEdit) {
	for _, e := range edits {
		if e.Remove {
			hd.Del(e.Name)
			continue
		}
		hd.Add(e.Name, e.Value)
	}
}

// upstreamError answers a request whose upstream failed: 504 when it
// timed out (no response headers within UpstreamTimeout), else 502 (its
// response headers too large, or any other failure); the tunnel is
// skipped for FailureBackoff. The body names no upstream. It also
// carries out an outbound close verdict.
func (h *Handler) upstreamError(w http.ResponseWriter, r *http.Request, err error) {
	h.upstreamFailed(r.Context(), w, exchangeOf(r.Context()), err)
}

// upstreamFailed is upstreamError of the exchange ex, whose client's
// request context is ctx.
func (h *Handler) upstreamFailed(ctx context.Context, w http.ResponseWriter, ex *exchange, err error) {
	ex.w.compress = false
	if errors.Is(err, errClose) {
		closeConn(w)
		return
	}
	if ctx.Err() != nil {
		// The client went away; nobody reads the answer, and it is not
		// the upstream's failure.
		w.WriteHeader(http.StatusBadGateway)
		return
	}
	ex.failed = true
	ex.upstream.health.fail(h.clock().Add(h.backoff))
	if headersTooLarge(err) {
		h.log.Warn("upstream response headers too large: the proxy stopped reading them and answered 502", "account", ex.edge.AccountID(),
			"edge", ex.edge.ID(), "route", ex.route.cfg.RouteID, "tunnel", ex.upstream.tunnelID, "max_bytes", h.maxHeaderBytes)
		http.Error(w, "bad gateway: the upstream's response headers are larger than this proxy accepts", http.StatusBadGateway)
		return
	}
	h.log.Warn("upstream error", "account", ex.edge.AccountID(), "edge", ex.edge.ID(), "route", ex.route.cfg.RouteID,
		"tunnel", ex.upstream.tunnelID, "err", err)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		http.Error(w, "gateway timeout: the upstream did not answer in time", http.StatusGatewayTimeout)
		return
	}
	http.Error(w, "bad gateway: the upstream did not answer", http.StatusBadGateway)
}

// headersTooLarge says whether err is a transport's refusal of a
// response whose headers exceed its MaxResponseHeaderBytes. net/http
// exports no error value for it (HTTP/1.1: "net/http: server response
// headers exceeded N bytes; aborted"; HTTP/2: "http2: response header
// list larger than advertised limit"), so its text is matched; a test
// pins the HTTP/1.1 text, and a wording net/http changes only makes the
// answer the generic 502.
func headersTooLarge(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "net/http: server response headers exceeded ") ||
		strings.Contains(msg, "http2: response header list larger than advertised limit")
}

// closeConn closes the client connection without a response, or answers
// 403 where that is impossible (HTTP/2), as policy.Result.ApplyHTTP does.
func closeConn(w http.ResponseWriter) {
	if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
		_ = conn.Close()
		return
	}
	w.WriteHeader(http.StatusForbidden)
}

// observe counts the request and writes its log line.
func (h *Handler) observe(r *http.Request, ex *exchange, client netip.AddrPort, start time.Time) {
	d := time.Since(start)
	action := ""
	if ex.route != nil && ex.endedBy != "" {
		action = ex.route.static.actionTypes[ex.endedBy]
		if action == "" {
			action = "policy" // a host action, or the engine failing closed
		}
	}
	if ex.edge != nil {
		h.metrics.request(ex, action, d)
	}
	if !h.log.Enabled(r.Context(), slog.LevelInfo) {
		return
	}
	attrs := []slog.Attr{
		slog.String("method", r.Method),
		slog.String("host", r.Host),
		slog.String("path", r.URL.Path),
		slog.String("client_ip", client.Addr().String()),
		slog.Int("status", ex.w.status), // 0: closed without a response
		slog.Int64("bytes", ex.w.bytes),
		slog.Duration("duration", d),
	}
	if ex.edge != nil {
		attrs = append(attrs, slog.String("account", ex.edge.AccountID()), slog.String("edge", ex.edge.ID()))
	}
	if ex.route != nil {
		attrs = append(attrs, slog.String("route", ex.route.cfg.RouteID))
		if ex.upstream != nil {
			attrs = append(attrs, slog.String("tunnel", ex.upstream.tunnelID))
		}
		if ex.endedBy != "" {
			attrs = append(attrs, slog.String("policy_action", action), slog.String("policy_location", ex.endedBy))
		}
	}
	h.log.LogAttrs(r.Context(), slog.LevelInfo, "request", attrs...)
}

// bufferPool recycles the buffers ReverseProxy copies response bodies
// with (else it allocates 32 KiB per request).
type bufferPool struct{}

var buffers = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

func (bufferPool) Get() []byte  { return *buffers.Get().(*[]byte) }
func (bufferPool) Put(b []byte) { buffers.Put(&b) }
