package proxy

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net/netip"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/edgeconfig"
	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/internal/revwait"
	"github.com/edgeplane/edgeplane/ipaccess"
	"github.com/edgeplane/edgeplane/kinds"
	"github.com/edgeplane/edgeplane/policy"
	"github.com/edgeplane/edgeplane/store"
	"github.com/edgeplane/edgeplane/store/follow"
)

// Options configures [Configs]. The zero value means the documented
// defaults.
type Options struct {
	// Logger receives warnings (the store is unreachable, an edge's
	// config does not compile). Nil discards them.
	Logger *slog.Logger
	// Parallelism bounds how many edges are compiled at once. Zero means
	// runtime.GOMAXPROCS(0).
	Parallelism int
	// After returns a channel that receives once d has passed: the timer
	// of the retry backoff. Nil means a timer of the runtime. Tests give a
	// fake one.
	After func(d time.Duration) <-chan time.Time
	// Endpoints reads the endpoints that agents bind themselves, served
	// without an edge (see the package doc's # Endpoints): they are
	// listed with the edges when the Configs starts, and read again at
	// each change of kind endpoint in the feed. Nil: no endpoint is
	// served.
	Endpoints EndpointSource
	// Policy compiles the endpoints' traffic policies, each with its
	// endpoint's ID as its scope. Give the engine that compiles the
	// Host's configs (the Service's Options.Policy), so that endpoints
	// accept the actions routes do. Nil: an engine of the Configs' own with the built-in
	// actions, whose sink is Logger. Unused without Endpoints.
	Policy *policy.Engine

	// Test hooks in place of the Host's calls.
	hostCalls
}

// hostCalls are the Host's calls a Configs makes: [Host.HTTPSEdgeConfig],
// [Host.TLSEdgeConfig], [Host.TCPEdgeConfig], [Host.BackendTunnels],
// [Host.HostCertificate], [Host.WaitRevision] and
// [Host.EndpointRestrictions] where nil. Tests give their own.
type hostCalls struct {
	compile    func(ctx context.Context, accountID, edgeID string) (*edgeconfig.HTTPSEdge, error)
	compileTLS func(ctx context.Context, accountID, edgeID string) (*edgeconfig.TLSEdge, error)
	compileTCP func(ctx context.Context, accountID, edgeID string) (*edgeconfig.TCPEdge, error)
	tunnels    func(ctx context.Context, accountID, backendID string) ([]backends.Tunnel, error)
	certs      func(ctx context.Context, accountID, host string) (*domains.HostCertificate, error)
	synced     func(ctx context.Context, rev int64) error
	restrict   func(ctx context.Context, accountID string) (*ipaccess.EndpointRestrictions, error)
}

// Edge is the snapshot of one edge (HTTPS, TLS or TCP): its compiled
// config and the online tunnels of the backends it uses; or of one
// endpoint an agent bound (Endpoint is set). It is immutable: a change
// makes a new Edge, so a reader may keep one for the whole of a request
// or connection. Do not modify it or anything it
// holds.
type Edge struct {
	// Config is an HTTPS edge's routes in matching order, their modules
	// and compiled traffic policies ([Host.HTTPSEdgeConfig]);
	// nil for a TLS or TCP edge.
	Config *edgeconfig.HTTPSEdge
	// TLS is a TLS edge's modules ([Host.TLSEdgeConfig]); nil
	// for an HTTPS or TCP edge.
	TLS *edgeconfig.TLSEdge
	// TCP is a TCP edge's modules ([Host.TCPEdgeConfig]); nil
	// for an HTTPS or TLS edge.
	TCP *edgeconfig.TCPEdge
	// Tunnels holds, by backend ID, the online tunnels of each backend
	// that the edge (a TLS or TCP edge's backend module, an HTTPS edge's
	// routes) uses, newest first, as
	// [Host.BackendTunnels] read them. A lease can end without
	// a change in the store (until the reaper deletes the tunnel), so a
	// user must still skip tunnels whose ExpiresAt has passed.
	Tunnels map[string][]backends.Tunnel
	// Certificates holds, by host (the host of a hostport of an HTTPS or
	// TLS edge, wildcards as "*.example.com"), the TLS certificate of the reserved
	// domain that serves it ([Host.HostCertificate]), parsed,
	// with Leaf set. A host whose domain has no certificate (or one that
	// does not parse) is absent: TLS for it fails the handshake.
	Certificates map[string]*tls.Certificate
	// Restrictions are the account's IP restrictions of type endpoints
	// ([Host.EndpointRestrictions]), applied to every request
	// and connection of the edge before its own modules; shared by the
	// account's edges.
	Restrictions *ipaccess.EndpointRestrictions
	// Endpoint is, in the snapshot of an endpoint rather than an edge
	// ([Configs.Endpoint]), the endpoint as its [EndpointSource] read it;
	// Config, TLS, TCP and Tunnels are then nil, and Certificates holds
	// its host's certificate when the proxy terminates its TLS (https,
	// and tls without PassthroughTLS). Nil for an edge.
	Endpoint *agents.Endpoint
	// Revision is the store revision the snapshot was read at: it
	// reflects every change up to it.
	Revision int64

	// routes is the pipeline of each route of Config, by route ID;
	// oidcRoutes those with the OIDC module, in Config order.
	routes     map[string]*route
	oidcRoutes []*route
	// stream is a TLS or TCP edge's (or tls or tcp endpoint's)
	// upstreams.
	stream *pool
	// ep is an endpoint's config; epRoute an http or https endpoint's
	// pipeline.
	ep      *endpointConfig
	epRoute *route
}

// AccountID returns the account that owns the edge (or endpoint).
func (e *Edge) AccountID() string { a, _, _ := e.names(); return a }

// ID returns the edge's (or endpoint's) ID.
func (e *Edge) ID() string { _, id, _ := e.names(); return id }

// Hostports returns the hostports the edge (or endpoint) serves, in
// canonical form.
func (e *Edge) Hostports() []string { _, _, hps := e.names(); return hps }

// names returns the account, ID and hostports of the config e holds.
func (e *Edge) names() (account, id string, hostports []string) {
	switch {
	case e.TLS != nil:
		return e.TLS.AccountID, e.TLS.EdgeID, e.TLS.Hostports
	case e.TCP != nil:
		return e.TCP.AccountID, e.TCP.EdgeID, e.TCP.Hostports
	case e.ep != nil:
		return e.Endpoint.AccountID, e.Endpoint.ID, e.ep.hostports
	}
	return e.Config.AccountID, e.Config.EdgeID, e.Config.Hostports
}

// base returns an Edge holding only e's config, for [newEdge].
func (e *Edge) base() Edge {
	return Edge{Config: e.Config, TLS: e.TLS, TCP: e.TCP, Endpoint: e.Endpoint, ep: e.ep, Restrictions: e.Restrictions}
}

// backendIDs returns the backends the edge uses, without repeats.
func (e *Edge) backendIDs() []string {
	var ids []string
	add := func(b *edgeconfig.Backend) {
		if b != nil && !slices.Contains(ids, b.BackendID) {
			ids = append(ids, b.BackendID)
		}
	}
	switch {
	case e.TLS != nil:
		add(e.TLS.Backend)
	case e.TCP != nil:
		add(e.TCP.Backend)
	case e.ep != nil: // an agent's session, no backend
	default:
		for _, r := range e.Config.Routes {
			add(r.Backend)
		}
	}
	return ids
}

// ipPolicyIDs returns the IP policies the edge's config was built with,
// without repeats.
func (e *Edge) ipPolicyIDs() []string {
	switch {
	case e.TLS != nil:
		return e.TLS.IPPolicyIDs()
	case e.TCP != nil:
		return e.TCP.IPPolicyIDs()
	case e.ep != nil:
		return nil // its policy names none (no IP policy is resolved for endpoints)
	}
	var ids []string
	for _, r := range e.Config.Routes {
		for _, p := range r.IPPolicyIDs {
			if !slices.Contains(ids, p) {
				ids = append(ids, p)
			}
		}
	}
	return ids
}

// restrictedBy checks ip against the account's endpoint restrictions: the
// ID of the enforced one that refuses it ("" when none does) and those
// not enforced that would.
func (e *Edge) restrictedBy(ip netip.Addr) (refusedBy string, warnings []string) {
	if e.Restrictions == nil {
		return "", nil
	}
	return e.Restrictions.Enforcer.Check(ip)
}

// edgeKind returns the kind of the edge (or endpoint) an ID names, by
// its prefix.
func edgeKind(id string) store.Kind {
	switch {
	case strings.HasPrefix(id, agents.EndpointPrefix):
		return kindEndpoint
	case strings.HasPrefix(id, edges.TLSEdgePrefix):
		return kinds.TLSEdge
	case strings.HasPrefix(id, edges.TCPEdgePrefix):
		return kinds.TCPEdge
	}
	return kinds.HTTPSEdge
}

// edgeNoun names the kind of the edge (or endpoint) id in log lines,
// with its article.
func edgeNoun(id string) string {
	switch edgeKind(id) {
	case kinds.TLSEdge:
		return "a TLS edge"
	case kinds.TCPEdge:
		return "a TCP edge"
	case kindEndpoint:
		return "an endpoint"
	}
	return "an HTTPS edge"
}

// Stats are counters of a [Configs] since it started.
type Stats struct {
	// Edges is the number of edges (of every kind) served now;
	// Endpoints the number of endpoints.
	Edges, Endpoints int
	// Compiles counts the edge and endpoint configs read and compiled
	// (attempts, failed ones included); Refreshes the snapshots rebuilt
	// with the same config and new tunnel lists, certificates or
	// restrictions.
	Compiles, Refreshes uint64
	// Reloads counts full reloads after the feed was compacted past the
	// applied revision (the initial load is not counted).
	Reloads uint64
	// Failures counts failed reads of the store (each is retried after
	// a backoff); Dropped counts edges dropped because their config
	// cannot be built from what is stored (a traffic policy that does not
	// compile with this Service's engine), and endpoints that cannot be
	// served as their source has them.
	Failures, Dropped uint64
}

// Configs keeps the runtime config of every edge (HTTPS, TLS and TCP) of
// every account current: it loads them all when it starts, then follows the store's
// change feed and rebuilds, in the background, only the edges a change
// affects. See the package documentation. It is safe for concurrent use.
type Configs struct {
	host Host
	feed store.Feed
	log  *slog.Logger
	par  int
	hostCalls
	endpoints EndpointSource // nil: none
	engine    *policy.Engine // compiles the endpoints' traffic policies

	// The published tables: edges by ID; HTTPS and TLS edges by the host
	// of each hostport they serve (exact or wildcard, as the edge lists
	// it); TCP edges by port. HTTPS and TLS edges' hostports are all on
	// port 443 and unique in the store, so a host names one edge; a TCP
	// port serves one TCP edge in the store.
	edges, hosts, ports *table
	count               atomic.Int64
	// The endpoints' tables: by ID; https and tls endpoints by host (the
	// HTTPS port's), http endpoints by host (the plain HTTP port's), tcp
	// endpoints by port. Lookups try the edges' tables first.
	eps, epHosts, epPlain, epPorts *table
	epCount                        atomic.Int64
	// epInternal holds the internal endpoints, by account and URL
	// (forwardinternal.go): no listener's table does.
	epInternal *table

	// The TCP ports served (of edges and endpoints), and a channel closed
	// when they change ([Configs.TCPPorts]).
	portsMu   sync.Mutex
	portList  []int
	portsNext chan struct{}

	compiles, refreshes, reloads, failures, dropped atomic.Uint64

	// What the account's IP restrictions of type endpoints decided (of
	// the handler's and the streams' traffic), and which warnings to log.
	restrictions ipaccess.Tally

	// Owned by the follower goroutine (and by New before it starts).
	known      map[string]*tracked                   // by edge ID
	byIPPolicy map[string]map[string]map[string]bool // account -> IP policy -> edge IDs
	byBackend  map[string]map[string]map[string]bool // account -> backend -> edge IDs
	byAccount  map[string]map[string]bool            // account -> edge IDs
	hostOf     map[string]string                     // host -> edge ID serving it
	portOf     map[string]string                     // TCP port -> edge ID serving it
	restrictBy map[string]map[string]bool            // account -> IP policies its endpoint restrictions use
	epHostOf   map[string]string                     // host -> https or tls endpoint serving it
	epPlainOf  map[string]string                     // host -> http endpoint serving it
	epPortOf   map[string]string                     // TCP port -> tcp endpoint serving it
	groups     map[string]*endpointGroup             // pool key -> the pool of pooled endpoints there (pool.go)

	// epInternalOf: account and URL (internalKey) -> internal endpoint.
	epInternalOf map[string]string

	follower *follow.Follower
	applied  revwait.Mark // every change up to it is reflected
}

// New loads the config of every edge (HTTPS, TLS and TCP) of the store
// that feed is the change feed of (the store host's Service reads), and
// every endpoint of [Options.Endpoints], and starts following the feed.
// It returns once every edge and endpoint is loaded, or fails with the
// first read that failed (ctx bounds the load; it is not kept). Edges
// whose config cannot be built from what is stored, and endpoints that
// cannot be served, are left out and logged. Call [Configs.Close] to
// stop following.
func New(ctx context.Context, host Host, feed store.Feed, opts Options) (*Configs, error) {
	c := &Configs{
		host: host, feed: feed, log: opts.Logger, par: opts.Parallelism,
		hostCalls: opts.hostCalls,
		edges:     newTable(), hosts: newTable(), ports: newTable(), portsNext: make(chan struct{}),
		known: map[string]*tracked{}, byIPPolicy: map[string]map[string]map[string]bool{}, byBackend: map[string]map[string]map[string]bool{},
		byAccount: map[string]map[string]bool{}, hostOf: map[string]string{}, portOf: map[string]string{}, restrictBy: map[string]map[string]bool{},
		endpoints: opts.Endpoints, engine: opts.Policy,
		eps: newTable(), epHosts: newTable(), epPlain: newTable(), epPorts: newTable(),
		epHostOf: map[string]string{}, epPlainOf: map[string]string{}, epPortOf: map[string]string{},
		epInternal: newTable(), epInternalOf: map[string]string{},
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.par <= 0 {
		c.par = runtime.GOMAXPROCS(0)
	}
	if c.compile == nil {
		c.compile = host.HTTPSEdgeConfig
	}
	if c.compileTLS == nil {
		c.compileTLS = host.TLSEdgeConfig
	}
	if c.compileTCP == nil {
		c.compileTCP = host.TCPEdgeConfig
	}
	if c.tunnels == nil {
		c.tunnels = host.BackendTunnels
	}
	if c.certs == nil {
		c.certs = host.HostCertificate
	}
	if c.synced == nil {
		c.synced = host.WaitRevision
	}
	if c.restrict == nil {
		c.restrict = host.EndpointRestrictions
	}
	if c.endpoints != nil && c.engine == nil {
		engine, err := policy.NewEngine(policy.Options{Sink: policy.NewSlogSink(c.log)})
		if err != nil {
			return nil, err // a bug: the built-in actions always register
		}
		c.engine = engine
	}
	p := newPending()
	rev, err := c.reload(ctx, p)
	if err == nil {
		err = c.apply(ctx, p, rev)
	}
	if err != nil {
		return nil, err
	}
	c.advance(rev)
	// Only which records changed matters: each is read again.
	c.follower = follow.Start(feed, &configFeed{c: c, p: p}, rev,
		follow.Options{Page: followPage, Payload: store.WithoutData, After: opts.After})
	return c, nil
}

// Close stops following the feed and waits for the follower to end. The
// snapshots stay readable (and stop changing). It may be called more than
// once.
func (c *Configs) Close() { c.follower.Stop() }

// Edge returns the current snapshot of the edge edgeID (HTTPS, TLS or
// TCP) of the account, or nil when the account has no such edge (or it is not loaded:
// its config cannot be built). It never waits for a rebuild: a rebuild
// in progress publishes its result when done, and until then Edge returns
// the previous snapshot. It does not allocate.
func (c *Configs) Edge(accountID, edgeID string) *Edge {
	s := c.edges.get(edgeID)
	if s == nil {
		return nil
	}
	e := s.p.Load()
	if e == nil || e.AccountID() != accountID {
		return nil
	}
	return e
}

// Revision returns the applied revision: every change of the feed up to
// it is reflected in the snapshots.
func (c *Configs) Revision() int64 { return c.applied.Load() }

// WaitRevision waits until every change of the feed up to rev is
// reflected in the snapshots ([Configs.Revision] is at least rev), or ctx
// ends (its error), or the Configs is closed before (a failed
// precondition: the revision will never move). After a write through a
// Service that returned, waiting for the feed's revision then makes the
// write visible to [Configs.Edge].
func (c *Configs) WaitRevision(ctx context.Context, rev int64) error {
	err := c.applied.Wait(ctx, rev, c.follower.Done())
	if errors.Is(err, revwait.ErrStopped) {
		return apierr.New(apierr.FailedPrecondition, "the edge configs are closed at revision %d; they will not reach revision %d", c.Revision(), rev)
	}
	return err
}

// IPRestrictionCounts returns how many requests and connections the
// accounts' IP restrictions of type endpoints refused, and let through
// with a warning, on the edges of c (for metrics; the other types count
// nothing here).
func (c *Configs) IPRestrictionCounts() []ipaccess.TypeCount { return c.restrictions.Counts() }

// Stats returns the counters.
func (c *Configs) Stats() Stats {
	return Stats{
		Edges: int(c.count.Load()), Endpoints: int(c.epCount.Load()),
		Compiles: c.compiles.Load(), Refreshes: c.refreshes.Load(),
		Reloads: c.reloads.Load(), Failures: c.failures.Load(), Dropped: c.dropped.Load(),
	}
}

func (c *Configs) advance(rev int64) { c.applied.Advance(rev) }

// TCPPorts returns the ports of the TCP edges and tcp endpoints served
// now, sorted, and a channel that is closed when they next change: a
// TCP listener manager opens a listener per port (those it is configured
// to serve) and waits on the channel to open and close listeners as
// edges and endpoints come and go.
func (c *Configs) TCPPorts() (ports []int, changed <-chan struct{}) {
	c.portsMu.Lock()
	defer c.portsMu.Unlock()
	return slices.Clone(c.portList), c.portsNext
}
