package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/policy"
)

// Options configures a [Proxy]. Set either Service (with AccountID and
// EdgeID) for Service mode, or Upstream (with an optional Policy) for
// standalone mode.
type Options struct {
	// Service, AccountID and EdgeID select Service mode: the proxy serves
	// the HTTPS edge EdgeID of the account, reading its routes, modules
	// and backends' tunnels from the Service.
	Service   *edgeplane.Service
	AccountID string
	EdgeID    string
	// Version, in Service mode, returns a number that changes whenever the
	// Service's stored state may have changed (see [storeRevision]). The
	// proxy reuses its snapshot of the edge while the number stays the
	// same and rebuilds it on the first request after a change. Nil
	// rebuilds the snapshot on every request, recompiling the routes'
	// traffic policies each time: correct, but tens of microseconds a
	// request.
	Version func() uint64

	// Upstream selects standalone mode: every request goes to this
	// absolute http(s) URL, through Policy when it is not nil (an HTTP
	// policy, compiled with policy.TargetHTTP).
	Upstream *url.URL
	Policy   *policy.Policy

	// Clock, when set, gives the evaluation time of the traffic policy
	// (time.now, rate-limit windows). Nil: the time the request arrived,
	// the same reading the log line's duration starts from (so the policy
	// engine's own clock is not consulted by the proxy).
	Clock func() time.Time
	// Logger receives one line per request and the proxy's warnings. Nil
	// discards them.
	Logger *slog.Logger
	// TrustedProxies are the peers whose X-Forwarded-For is believed (see
	// [clientAddr]). Empty: conn.client_ip is always the socket's peer.
	TrustedProxies []netip.Prefix
	// Transport carries requests to the upstreams. Nil: a transport like
	// http.DefaultTransport that keeps up to 256 idle connections per
	// upstream, does not ask for compressed responses on its own and waits
	// at most UpstreamTimeout for an upstream's response headers.
	Transport http.RoundTripper
	// UpstreamTimeout bounds the wait for an upstream's response headers
	// when Transport is nil; past it the client gets 504. Zero means
	// [DefaultUpstreamTimeout].
	UpstreamTimeout time.Duration
}

// DefaultUpstreamTimeout is the default of Options.UpstreamTimeout.
const DefaultUpstreamTimeout = 30 * time.Second

// Proxy is the edge proxy: an http.Handler that matches each request to a
// route and runs the route's pipeline (inbound traffic policy rules, the
// backend, then the outbound rules, the response headers module and the
// compression module on the way back). It is safe for concurrent use.
type Proxy struct {
	load    loader // Service mode; nil in standalone mode
	version func() uint64
	mu      sync.Mutex // serialises rebuilds and SetPolicy
	cur     atomic.Pointer[snapshot]
	up      *url.URL // standalone mode's upstream

	clock   func() time.Time
	log     *slog.Logger
	trusted []netip.Prefix
	rp      *httputil.ReverseProxy
	metrics metrics
}

// New returns a Proxy. In Service mode it reads the edge once, so a
// missing edge fails here rather than on the first request.
func New(ctx context.Context, o Options) (*Proxy, error) {
	p := &Proxy{clock: o.Clock, log: o.Logger, trusted: o.TrustedProxies, version: o.Version}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	switch {
	case o.Service != nil && o.Upstream != nil:
		return nil, errors.New("edgeproxy: set either Service or Upstream, not both")
	case o.Upstream != nil:
		if err := checkUpstream(o.Upstream); err != nil {
			return nil, err
		}
		p.up = o.Upstream
		if err := p.SetPolicy(o.Policy); err != nil {
			return nil, err
		}
	case o.Service != nil:
		if o.Policy != nil {
			return nil, errors.New("edgeproxy: Policy is for standalone mode; in Service mode each route has its own")
		}
		p.load = serviceLoader(o.Service, o.AccountID, o.EdgeID, p.log)
		if _, err := p.snapshot(ctx, time.Now()); err != nil {
			return nil, err
		}
	default:
		return nil, errors.New("edgeproxy: set Service (with AccountID and EdgeID) or Upstream")
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
		transport = t
	}
	p.rp = &httputil.ReverseProxy{
		Rewrite:        p.rewrite,
		Transport:      transport,
		ModifyResponse: p.modifyResponse,
		ErrorHandler:   p.upstreamError,
		ErrorLog:       slog.NewLogLogger(p.log.Handler(), slog.LevelWarn),
		BufferPool:     bufferPool{},
	}
	return p, nil
}

// checkUpstream checks an upstream URL: absolute http or https, with a
// host, without user info, query or fragment.
func checkUpstream(u *url.URL) error {
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("upstream %q: want an absolute http(s) URL such as http://127.0.0.1:3000, without user info, query or fragment", u.Redacted())
	}
	return nil
}

// SetPolicy replaces the traffic policy of standalone mode (nil: none);
// requests that start afterwards use it. Compile the new policy with the
// same Engine and Scope as the old one to keep the rate limiters' counts.
func (p *Proxy) SetPolicy(pol *policy.Policy) error {
	if p.load != nil {
		return errors.New("edgeproxy: SetPolicy is for standalone mode; in Service mode replace the route's traffic policy module")
	}
	if pol != nil && pol.Target() != policy.TargetHTTP {
		return errors.New("edgeproxy: the policy is compiled for connections; compile it with policy.TargetHTTP")
	}
	s, err := standaloneSnapshot(pol, p.up)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cur.Store(s)
	return nil
}

// snapshot returns the configuration to apply to a request.
func (p *Proxy) snapshot(ctx context.Context, now time.Time) (*snapshot, error) {
	if p.load == nil {
		return p.cur.Load(), nil
	}
	if p.version == nil {
		// Keep the newest snapshot alive while the next one compiles: the
		// policy engine keeps a rate limiter (and its counts) only while
		// a compiled policy uses it.
		s, err := p.load(context.WithoutCancel(ctx), 0)
		if err != nil {
			return nil, err
		}
		p.cur.Store(s)
		return s, nil
	}
	fresh := func(s *snapshot, v uint64) bool {
		return s != nil && s.version == v && (s.expires.IsZero() || now.Before(s.expires))
	}
	v := p.version()
	if s := p.cur.Load(); fresh(s, v) {
		return s, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	v = p.version()
	if s := p.cur.Load(); fresh(s, v) {
		return s, nil // another request rebuilt it meanwhile
	}
	// A write that lands while we read bumps the version past v, so the
	// next request rebuilds again: a snapshot is never newer than its
	// version claims, only possibly older, which costs a rebuild.
	s, err := p.load(context.WithoutCancel(ctx), v)
	if err != nil {
		return nil, err
	}
	p.cur.Store(s)
	return s, nil
}

// exchange is the state of one request that the ReverseProxy callbacks
// need; it travels in the request's context.
type exchange struct {
	route     *route
	upstream  *url.URL
	forwarded bool           // conn.client_ip came from a trusted X-Forwarded-For
	out       *outboundState // what outbound rules need; nil when the route has none
	w         responseWriter
	endedBy   string // the location of the policy action that answered, if any
}

// outboundState is what the outbound rules of a request need from the
// inbound phase.
type outboundState struct {
	in  policy.Result  // the inbound result (its action result variables)
	req policy.Request // the request after the inbound rules
}

type exchangeKey struct{}

// errClose is how modifyResponse asks upstreamError to close the client
// connection (an outbound close verdict).
var errClose = errors.New("edgeproxy: the outbound traffic policy closes the connection")

// ServeHTTP runs the pipeline of the request's route.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	p.metrics.requests.Add(1)
	ex := &exchange{w: responseWriter{ResponseWriter: w}} // one allocation for both
	rw := &ex.w
	client, forwarded := clientAddr(r, p.trusted)
	ex.forwarded = forwarded
	defer func() {
		rw.finish()
		p.logRequest(r, ex, client, start)
	}()

	now := start
	if p.clock != nil {
		now = p.clock()
	}
	snap, err := p.snapshot(r.Context(), now)
	if err != nil {
		p.log.Error("loading the edge configuration", "err", err)
		http.Error(rw, "edge configuration unavailable", http.StatusServiceUnavailable)
		return
	}
	rt := snap.match(r.URL.Path)
	if rt == nil {
		http.Error(rw, "no route matches "+r.URL.Path, http.StatusNotFound)
		return
	}
	ex.route = rt

	// 1. Inbound traffic policy rules.
	if rt.policy != nil {
		req := policy.RequestFromHTTPWithClient(r, client, now)
		in := rt.policy.Inbound(&req)
		if in.Verdict != policy.Continue {
			p.count(rt, in.Location)
			ex.endedBy = in.Location
			in.ApplyHTTP(rw, r)
			return
		}
		in.ApplyHTTP(rw, r) // header edits and URL rewrite
		if rt.hasOutbound {
			ex.out = &outboundState{in: in, req: policy.RequestFromHTTPWithClient(r, client, now)} // as the upstream sees it
		}
	}
	if rt.oidc {
		http.Error(rw, "this route requires OIDC authentication, which this proxy does not implement", http.StatusNotImplemented)
		return
	}

	// 2. The backend: an online tunnel's upstream.
	ex.upstream = rt.pick()
	if ex.upstream == nil {
		p.metrics.upstreamErrors.Add(1)
		http.Error(rw, rt.noUpstream, http.StatusServiceUnavailable)
		return
	}

	// 3. On the way back (modifyResponse, then rw): outbound rules,
	// response headers, compression.
	rw.compress = rt.compress && r.Method != http.MethodHead
	rw.acceptGzip = rw.compress && acceptsGzip(r.Header.Values("Accept-Encoding"))
	if rw.acceptGzip {
		r.Header.Del("Accept-Encoding") // the proxy compresses; the upstream sends identity
	}
	p.rp.ServeHTTP(rw, r.WithContext(context.WithValue(r.Context(), exchangeKey{}, ex)))
}

// rewrite points the outgoing request at the upstream and sets the
// X-Forwarded-* headers. X-Forwarded-For is the incoming chain plus the
// peer when the peer is a trusted proxy, else just the peer.
func (p *Proxy) rewrite(pr *httputil.ProxyRequest) {
	ex := pr.In.Context().Value(exchangeKey{}).(*exchange)
	pr.SetURL(ex.upstream)
	if ex.forwarded {
		pr.Out.Header["X-Forwarded-For"] = pr.In.Header["X-Forwarded-For"]
	}
	pr.SetXForwarded()
}

// modifyResponse runs the outbound rules and the response headers module
// on the upstream's response.
func (p *Proxy) modifyResponse(resp *http.Response) error {
	ex := resp.Request.Context().Value(exchangeKey{}).(*exchange)
	rt := ex.route
	if ex.out != nil {
		out := rt.policy.Outbound(&ex.out.req, &policy.Response{StatusCode: resp.StatusCode, Header: resp.Header}, &ex.out.in)
		switch out.Verdict {
		case policy.Respond:
			p.count(rt, out.Location)
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
			p.count(rt, out.Location)
			ex.endedBy = out.Location
			return errClose
		default:
			applyEdits(resp.Header, out.HeaderEdits)
		}
	}
	rt.headers.Apply(resp.Header)
	return nil
}

// applyEdits applies outbound add-headers and remove-headers edits.
func applyEdits(h http.Header, edits []policy.HeaderEdit) {
	for _, e := range edits {
		if e.Remove {
			h.Del(e.Name)
			continue
		}
		h.Add(e.Name, e.Value)
	}
}

// upstreamError answers a request whose upstream failed: 504 when it
// timed out (no response headers within UpstreamTimeout), else 502;
// counted and logged. It also carries out an outbound close verdict.
func (p *Proxy) upstreamError(w http.ResponseWriter, r *http.Request, err error) {
	ex := r.Context().Value(exchangeKey{}).(*exchange)
	ex.w.compress = false
	if errors.Is(err, errClose) {
		closeConn(w)
		return
	}
	if r.Context().Err() != nil {
		// The client went away; nobody reads the answer, and it is not
		// the upstream's failure.
		w.WriteHeader(http.StatusBadGateway)
		return
	}
	p.metrics.upstreamErrors.Add(1)
	p.log.Warn("upstream error", "route", ex.route.id, "upstream", ex.upstream.Redacted(), "err", err)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		http.Error(w, "gateway timeout: the upstream did not answer in time", http.StatusGatewayTimeout)
		return
	}
	http.Error(w, "bad gateway: the upstream did not answer", http.StatusBadGateway)
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

// count classifies a request the traffic policy answered or closed, by the
// type of the action that ended evaluation: rate-limit is rate limited,
// deny and restrict-ips (and a close) are denied; custom-response and
// redirect are answers, not refusals.
func (p *Proxy) count(rt *route, location string) {
	switch rt.actionTypes[location] {
	case policy.ActionRateLimit:
		p.metrics.rateLimited.Add(1)
	case policy.ActionDeny, policy.ActionRestrictIPs:
		p.metrics.denied.Add(1)
	case policy.ActionCustomResponse, policy.ActionRedirect:
	default: // a host action, or an internal error
		p.metrics.denied.Add(1)
	}
}

// logRequest writes the request's log line.
func (p *Proxy) logRequest(r *http.Request, ex *exchange, client netip.AddrPort, start time.Time) {
	if !p.log.Enabled(r.Context(), slog.LevelInfo) {
		return
	}
	status := ex.w.status // 0: closed without a response
	attrs := []slog.Attr{
		slog.String("method", r.Method),
		slog.String("path", r.URL.Path),
		slog.String("client_ip", client.Addr().String()),
		slog.Int("status", status),
		slog.Int64("bytes", ex.w.bytes),
		slog.Duration("duration", time.Since(start)),
	}
	if ex.route != nil {
		attrs = append(attrs, slog.String("route", ex.route.id))
		if ex.endedBy != "" {
			attrs = append(attrs, slog.String("policy_action", ex.route.actionTypes[ex.endedBy]), slog.String("policy_location", ex.endedBy))
		}
	}
	p.log.LogAttrs(r.Context(), slog.LevelInfo, "request", attrs...)
}

// bufferPool recycles the buffers ReverseProxy copies response bodies
// with (else it allocates 32 KiB per request).
type bufferPool struct{}

var buffers = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

func (bufferPool) Get() []byte  { return *buffers.Get().(*[]byte) }
func (bufferPool) Put(b []byte) { buffers.Put(&b) }

// metrics are the proxy's counters.
type metrics struct {
	requests, denied, rateLimited, upstreamErrors atomic.Uint64
}

// MetricsHandler serves the counters in the Prometheus text exposition
// format.
func (p *Proxy) MetricsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		for _, c := range []struct {
			name, help string
			v          *atomic.Uint64
		}{
			{"edgeproxy_requests_total", "Requests received.", &p.metrics.requests},
			{"edgeproxy_denied_total", "Requests refused by a deny or restrict-ips action of a traffic policy.", &p.metrics.denied},
			{"edgeproxy_rate_limited_total", "Requests refused with 429 by a rate-limit action of a traffic policy.", &p.metrics.rateLimited},
			{"edgeproxy_upstream_errors_total", "Requests that got no upstream response: no online tunnel, or the upstream failed.", &p.metrics.upstreamErrors},
		} {
			fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s counter\n%s %d\n", c.name, c.help, c.name, c.name, c.v.Load())
		}
	})
}
