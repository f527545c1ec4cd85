package proxy

import (
	"context"
	"crypto/tls"
	"log/slog"
	"slices"
	"strconv"
	"strings"

	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/edgeconfig"
	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/kinds"
	"github.com/edgeplane/edgeplane/policy"
	"github.com/edgeplane/edgeplane/resource"
)

// EndpointSource reads the endpoints agents bind themselves (see the
// package doc's # Endpoints). The Service's Host is one.
type EndpointSource interface {
	// GetEndpoint returns the endpoint id of the account; an error whose
	// code is NotFound when it is gone.
	GetEndpoint(ctx context.Context, accountID, id string) (*agents.Endpoint, error)
	// ListEndpoints returns a page of the endpoints of every account,
	// newest first, and the cursor of the next page ("" after the last).
	ListEndpoints(ctx context.Context, opts resource.ListOptions) ([]agents.Endpoint, string, error)
}

// kindEndpoint is the store kind of endpoints.
const kindEndpoint = kinds.Endpoint

// The protocols of [agents.Endpoint.Proto].
const (
	protoHTTP  = "http"
	protoHTTPS = "https"
	protoTLS   = "tls"
	protoTCP   = "tcp"
)

// endpointTable says which table serves an endpoint: the HTTPS port's
// (https and tls endpoints, by host), the plain HTTP port's (http
// endpoints, by host) or the TCP ports' (tcp endpoints, by port).
type endpointTable uint8

const (
	tableHTTPSPort endpointTable = iota + 1
	tablePlainHTTP
	tableTCPPorts
)

// endpointConfig is what the proxy derives from one version of an
// endpoint: where it is served and its compiled traffic policy. It is
// immutable, and kept across snapshots that only change the account's
// restrictions or certificates.
type endpointConfig struct {
	proto     string
	table     endpointTable
	host      string   // canonical: lower-case, no trailing dot ("*.example.com" for a wildcard); "" for tcp
	port      string   // a tcp endpoint's port
	hostports []string // the one canonical hostport, for [Edge.Hostports]
	// terminates says that the proxy terminates the endpoint's TLS with
	// the certificate of the reserved domain that serves its host (https,
	// and tls without PassthroughTLS); passthrough that the client's TLS
	// goes to the agent as it is.
	terminates, passthrough bool
	// internal says that no listener serves the endpoint (its binding is
	// internal): only forward-internal reaches it, at internalURL
	// (policy.ParseInternalURL's form, "https://api.internal:443").
	internal    bool
	internalURL string

	// source is the traffic policy document compiled (as the endpoint
	// has it); policy the compiled form, nil without one; policyErr why
	// it does not compile (the endpoint then refuses all its traffic).
	source    string
	policy    *policy.Policy
	policyErr error
	// route is the pipeline's view of an http or https endpoint: one
	// route "/" of no edge (EdgeID and RouteID are empty, as the
	// policy's endpoint.edge_id and endpoint.route_id then are), with the
	// endpoint's traffic policy; static what the handler derives from the
	// policy.
	route  *edgeconfig.Route
	static *routeStatic
}

// serves reports whether an http or https endpoint takes a request that
// came over TLS (overTLS) or plain HTTP.
func (ep *endpointConfig) serves(overTLS bool) bool {
	if overTLS {
		return ep.proto == protoHTTPS
	}
	return ep.proto == protoHTTP
}

// newEndpointConfig checks what the source said of an endpoint and
// derives its config, compiling its traffic policy with engine unless
// old (the config of its previous version; nil for none) was compiled
// from the same document for the same protocol. A compile error is kept
// in policyErr; any other problem is an error (invalid argument: the
// endpoint cannot be served).
func newEndpointConfig(engine *policy.Engine, ep *agents.Endpoint, old *endpointConfig) (*endpointConfig, error) {
	cfg := &endpointConfig{proto: ep.Proto, source: ep.TrafficPolicy}
	invalid := func(format string, args ...any) (*endpointConfig, error) {
		return nil, apierr.New(apierr.InvalidArgument, "endpoint "+ep.ID+": "+format, args...)
	}
	var defaultPort int64
	switch ep.Proto {
	case protoHTTPS:
		cfg.table, cfg.terminates, defaultPort = tableHTTPSPort, true, edges.HTTPSPort
	case protoTLS:
		cfg.table, cfg.passthrough, defaultPort = tableHTTPSPort, ep.PassthroughTLS, edges.HTTPSPort
		cfg.terminates = !ep.PassthroughTLS
	case protoHTTP:
		cfg.table, defaultPort = tablePlainHTTP, 80
	case protoTCP:
		cfg.table = tableTCPPorts
		if ep.Port < 1 || ep.Port > 65535 {
			return invalid("a tcp endpoint's port must be 1-65535, got %d", ep.Port)
		}
		cfg.port = strconv.FormatInt(ep.Port, 10)
		cfg.hostports = []string{strings.ToLower(strings.TrimSuffix(ep.Host, ".")) + ":" + cfg.port}
	default:
		return invalid("protocol %q is none of http, https, tls and tcp", ep.Proto)
	}
	if ep.IsInternal() {
		if err := internalConfig(cfg, ep); err != nil {
			return nil, err
		}
	} else if cfg.table != tableTCPPorts {
		host, ok := endpointHost(ep.Host)
		if !ok {
			return invalid("%q is not a host name", ep.Host)
		}
		if ep.Port != 0 && ep.Port != defaultPort {
			return invalid("an %s endpoint is served on port %d, not %d", ep.Proto, defaultPort, ep.Port)
		}
		cfg.host = host
		cfg.hostports = []string{host + ":" + strconv.FormatInt(defaultPort, 10)}
	}

	target := policy.TargetHTTP
	if cfg.table == tableTCPPorts || ep.Proto == protoTLS {
		target = policy.TargetConnection
	}
	switch {
	case old != nil && old.proto == cfg.proto && old.source == cfg.source:
		cfg.policy, cfg.policyErr, cfg.route, cfg.static = old.policy, old.policyErr, old.route, old.static
		return cfg, nil
	case cfg.source != "":
		// As a route's: the engine compiles it with the endpoint's ID
		// as its scope, so a new version keeps its rate limiters' counts.
		// No IP policy is resolved here: a restrict-ips action that names
		// ip_policies does not compile (allow and deny CIDRs do).
		cfg.policy, cfg.policyErr = engine.CompileJSON([]byte(cfg.source), policy.CompileOptions{Target: target, Scope: ep.ID})
		if cfg.policyErr != nil {
			cfg.policy = nil
		}
	}
	if target == policy.TargetHTTP {
		cfg.route = &edgeconfig.Route{AccountID: ep.AccountID, MatchType: edges.MatchPathPrefix, Match: "/", TrafficPolicy: cfg.policy}
		cfg.static = newRouteStatic(cfg.policy)
	}
	return cfg, nil
}

// endpointHost returns the canonical form of an endpoint's host: lower
// case, without a trailing dot, "*" allowed as the first label. ok is
// false when it is not a host name (a byte no DNS name has, an empty
// label, too long).
func endpointHost(h string) (string, bool) {
	h = strings.ToLower(strings.TrimSuffix(h, "."))
	rest := strings.TrimPrefix(h, "*.")
	if rest == "" || len(h) > maxHostBytes {
		return "", false
	}
	prev := byte('.')
	for i := 0; i < len(rest); i++ {
		switch c := rest[i]; {
		case c == '.' && prev == '.':
			return "", false // an empty label
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '.', c == '_':
		default:
			return "", false
		}
		prev = rest[i]
	}
	if prev == '.' {
		return "", false
	}
	return h, true
}

// buildEndpoint reads one endpoint (or takes the one listed, when given)
// and builds its snapshot: its config, the account's restrictions and,
// when the proxy terminates its TLS, its host's certificate.
func (c *Configs) buildEndpoint(ctx context.Context, rd *reads, account, id string, listed *agents.Endpoint, old *Edge, rev int64) built {
	b := built{id: id, account: account}
	c.compiles.Add(1)
	ep := listed
	if ep == nil {
		var err error
		if ep, err = c.endpoints.GetEndpoint(ctx, account, id); err != nil {
			b.err = err
			return b
		}
	}
	ep = cloneEndpoint(ep)
	if ep.AccountID == "" {
		ep.AccountID = account
	}
	if ep.ID != id || ep.AccountID != account {
		b.err = apierr.New(apierr.InvalidArgument, "the endpoint source answered endpoint %s of account %s for endpoint %s of account %s", ep.ID, ep.AccountID, id, account)
		return b
	}
	var oldCfg *endpointConfig
	if old != nil {
		oldCfg = old.ep
	}
	cfg, err := newEndpointConfig(c.engine, ep, oldCfg)
	if err != nil {
		b.err = err
		return b
	}
	if cfg.policyErr != nil && (oldCfg == nil || oldCfg.policyErr != cfg.policyErr) {
		c.log.Error("endpoint configs: the traffic policy of an endpoint does not compile; its traffic is refused (503)", "account", account, "endpoint", id, "err", cfg.policyErr)
	}
	base := Edge{Endpoint: ep, ep: cfg}
	if base.Restrictions, err = rd.restrictionsOf(ctx, account); err != nil {
		b.err = err
		return b
	}
	var certs map[string]*tls.Certificate
	if cfg.terminates {
		if certs, err = c.readCerts(ctx, rd, account, []string{cfg.host}); err != nil {
			b.err = err
			return b
		}
	}
	b.edge = newEdge(base, nil, certs, rev, old)
	return b
}

// cloneEndpoint returns a copy of ep that shares nothing with it.
func cloneEndpoint(ep *agents.Endpoint) *agents.Endpoint {
	cp := *ep
	if ep.Domain != nil {
		d := *ep.Domain
		cp.Domain = &d
	}
	if ep.TunnelSession != nil {
		s := *ep.TunnelSession
		cp.TunnelSession = &s
	}
	cp.Bindings = slices.Clone(ep.Bindings)
	return &cp
}

// listEndpoints reads every page of the source's endpoints into listed.
func (c *Configs) listEndpoints(ctx context.Context, listed map[string]string, eps map[string]*agents.Endpoint) error {
	opts := resource.ListOptions{}
	for {
		page, next, err := c.endpoints.ListEndpoints(ctx, opts)
		if err != nil {
			return err
		}
		for i := range page {
			ep := &page[i]
			listed[ep.ID] = ep.AccountID
			eps[ep.ID] = ep
		}
		if next == "" {
			return nil
		}
		opts.BeforeID = next
	}
}

// serveEndpoint makes the endpoint tables send the host or port of
// endpoint id (cfg; nil: none) to its slot and drop what it no longer
// serves. A key an edge holds stays the edge's (lookups try edges
// first): that is logged.
func (c *Configs) serveEndpoint(id string, t *tracked, cfg *endpointConfig, u *updates) {
	var hosts, plain, ports []string
	c.serveInternal(id, t, cfg) // an internal endpoint is in no listener's table
	if cfg != nil && !cfg.internal {
		switch cfg.table {
		case tableHTTPSPort:
			hosts = []string{cfg.host}
		case tablePlainHTTP:
			plain = []string{cfg.host}
		case tableTCPPorts:
			ports = []string{cfg.port}
		}
	}
	t.hosts = claim(id, t.slot, t.hosts, hosts, c.epHostOf, u.epHosts)
	t.plain = claim(id, t.slot, t.plain, plain, c.epPlainOf, u.epPlain)
	t.ports = claim(id, t.slot, t.ports, ports, c.epPortOf, u.epPorts)
	for _, h := range hosts {
		c.clash(c.hostOf[h], id, h)
	}
	for _, p := range ports {
		c.clash(c.portOf[p], id, p)
	}
}

// clash logs that an edge and an endpoint both claim a host or port
// (the control plane's store keys prevent it): the edge serves it.
func (c *Configs) clash(edgeID, endpointID, key string) {
	if edgeID != "" && endpointID != "" {
		c.log.LogAttrs(context.Background(), slog.LevelError, "edge configs: an edge and an endpoint claim the same hostport; the edge serves it",
			slog.String("edge", edgeID), slog.String("endpoint", endpointID), slog.String("host_or_port", key))
	}
}

// Endpoint returns the current snapshot of the endpoint id of the
// account (its [Edge.Endpoint] is set), or nil when the account has no
// such endpoint served. Like [Configs.Edge] it never waits and does not
// allocate.
func (c *Configs) Endpoint(accountID, id string) *Edge {
	s := c.eps.get(id)
	if s == nil {
		return nil
	}
	e := s.p.Load()
	if e == nil || e.Endpoint.AccountID != accountID {
		return nil
	}
	return e
}

// served reports whether the edge or endpoint id of the account is
// served now.
func (c *Configs) served(accountID, id string) bool {
	if edgeKind(id) == kindEndpoint {
		return c.Endpoint(accountID, id) != nil
	}
	return c.Edge(accountID, id) != nil
}

// endpointListing returns the snapshot of the endpoint that table t
// sends host (or port) to, when it still serves it there.
func endpointListing(t *table, key string, want endpointTable) *Edge {
	if t == nil { // a Configs built by hand, in a test
		return nil
	}
	s := t.get(key)
	if s == nil {
		return nil
	}
	e := s.p.Load()
	// As for edges: the table may still name an endpoint that just moved.
	if e == nil || e.ep == nil || e.ep.table != want || (e.ep.host != key && e.ep.port != key) {
		return nil
	}
	return e
}

// siteTLS returns the snapshot of what serves host on the HTTPS port:
// an HTTPS or TLS edge, or an https or tls endpoint. An exact host comes
// before a wildcard that covers it; for the same host an edge comes
// before an endpoint (they never share one in a consistent store).
func (c *Configs) siteTLS(host string) *Edge {
	if e := c.listingTLS(host); e != nil {
		return e
	}
	if w, ok := wildcardOf(host); ok {
		return c.listingTLS(w)
	}
	return nil
}

// listingTLS returns the snapshot of the edge that lists host:443, else
// of the https or tls endpoint whose host is host.
func (c *Configs) listingTLS(host string) *Edge {
	if e := c.edgeListing(host); e != nil {
		return e
	}
	return endpointListing(c.epHosts, host, tableHTTPSPort)
}

// sitePlain returns the snapshot of what serves host on the plain HTTP
// port: an http endpoint, else an HTTPS edge (which the plain port
// serves too). An exact host comes before a wildcard; for the same host
// the http endpoint comes first (its hostport is host:80, the edge's
// host:443).
func (c *Configs) sitePlain(host string) *Edge {
	if e := endpointListing(c.epPlain, host, tablePlainHTTP); e != nil {
		return e
	}
	if e := c.edgeListing(host); e != nil {
		return e
	}
	if w, ok := wildcardOf(host); ok {
		if e := endpointListing(c.epPlain, w, tablePlainHTTP); e != nil {
			return e
		}
		return c.edgeListing(w)
	}
	return nil
}

// endpointByPort returns the snapshot of the tcp endpoint that serves
// port, or nil.
func (c *Configs) endpointByPort(port int) *Edge {
	if port < 1 || port > 65535 {
		return nil
	}
	return endpointListing(c.epPorts, strconv.Itoa(port), tableTCPPorts)
}
