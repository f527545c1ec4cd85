package proxy

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"maps"
	"net/netip"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/internal/revwait"
	"github.com/edgeplane/edgeplane/ipaccess"
	"github.com/edgeplane/edgeplane/store"
)

// Backoff bounds of the retries after a failed read of the store: the
// first retry waits MinBackoff, each next one twice as long, up to
// MaxBackoff.
const (
	MinBackoff = 100 * time.Millisecond
	MaxBackoff = 10 * time.Second
)

// followPage is how many changes the follower reads at a time; the
// changes of one page are applied together, so that a burst of writes
// (tunnel renewals) costs one rebuild per edge, not one per write.
const followPage = 256

// compileChunk is how many edges apply compiles before it publishes
// them.
const compileChunk = 256

// shardCount is the number of maps the edges are spread over: adding or
// removing an edge copies one shard's map, not all of them.
const shardCount = 64

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
	// of the retry backoff. Nil means time.After. Tests give a fake one.
	After func(d time.Duration) <-chan time.Time

	// Test hooks in place of the Host's calls.
	hostCalls
}

// hostCalls are the Host's calls a Configs makes: Host.HTTPSEdgeConfig,
// Host.TLSEdgeConfig, Host.TCPEdgeConfig, Host.BackendTunnels,
// Host.HostCertificate, Host.WaitRevision and Host.EndpointRestrictions
// where nil. Tests give their own.
type hostCalls struct {
	compile    func(ctx context.Context, accountID, edgeID string) (*edges.HTTPSEdgeConfig, error)
	compileTLS func(ctx context.Context, accountID, edgeID string) (*edges.TLSEdgeConfig, error)
	compileTCP func(ctx context.Context, accountID, edgeID string) (*edges.TCPEdgeConfig, error)
	tunnels    func(ctx context.Context, accountID, backendID string) ([]backends.Tunnel, error)
	certs      func(ctx context.Context, accountID, host string) (*edgeplane.HostCertificate, error)
	synced     func(ctx context.Context, rev int64) error
	restrict   func(ctx context.Context, accountID string) (*edgeplane.EndpointRestrictions, error)
}

// Edge is the snapshot of one edge (HTTPS, TLS or TCP): its compiled
// config and the online tunnels of the backends it uses. It is
// immutable: a change makes a new Edge, so a reader may keep one for the
// whole of a request or connection. Do not modify it or anything it
// holds.
type Edge struct {
	// Config is an HTTPS edge's routes in matching order, their modules
	// and compiled traffic policies ([edgeplane.Host.HTTPSEdgeConfig]);
	// nil for a TLS or TCP edge.
	Config *edges.HTTPSEdgeConfig
	// TLS is a TLS edge's modules ([edgeplane.Host.TLSEdgeConfig]); nil
	// for an HTTPS or TCP edge.
	TLS *edges.TLSEdgeConfig
	// TCP is a TCP edge's modules ([edgeplane.Host.TCPEdgeConfig]); nil
	// for an HTTPS or TLS edge.
	TCP *edges.TCPEdgeConfig
	// Tunnels holds, by backend ID, the online tunnels of each backend
	// that the edge (a TLS or TCP edge's backend module, an HTTPS edge's
	// routes) uses, newest first, as
	// [edgeplane.Host.BackendTunnels] read them. A lease can end without
	// a change in the store (until the reaper deletes the tunnel), so a
	// user must still skip tunnels whose ExpiresAt has passed.
	Tunnels map[string][]backends.Tunnel
	// Certificates holds, by host (the host of a hostport of an HTTPS or
	// TLS edge, wildcards as "*.example.com"), the TLS certificate of the reserved
	// domain that serves it ([edgeplane.Host.HostCertificate]), parsed,
	// with Leaf set. A host whose domain has no certificate (or one that
	// does not parse) is absent: TLS for it fails the handshake.
	Certificates map[string]*tls.Certificate
	// Restrictions are the account's IP restrictions of type endpoints
	// ([edgeplane.Host.EndpointRestrictions]), applied to every request
	// and connection of the edge before its own modules; shared by the
	// account's edges.
	Restrictions *edgeplane.EndpointRestrictions
	// Revision is the store revision the snapshot was read at: it
	// reflects every change up to it.
	Revision int64

	// routes is the pipeline of each route of Config, by route ID;
	// oidcRoutes those with the OIDC module, in Config order.
	routes     map[string]*route
	oidcRoutes []*route
	// stream is a TLS or TCP edge's upstreams.
	stream *pool
}

// AccountID returns the account that owns the edge.
func (e *Edge) AccountID() string { a, _, _ := e.names(); return a }

// ID returns the edge's ID.
func (e *Edge) ID() string { _, id, _ := e.names(); return id }

// Hostports returns the hostports the edge serves, in canonical form.
func (e *Edge) Hostports() []string { _, _, hps := e.names(); return hps }

// names returns the account, ID and hostports of the config e holds.
func (e *Edge) names() (account, id string, hostports []string) {
	switch {
	case e.TLS != nil:
		return e.TLS.AccountID, e.TLS.EdgeID, e.TLS.Hostports
	case e.TCP != nil:
		return e.TCP.AccountID, e.TCP.EdgeID, e.TCP.Hostports
	}
	return e.Config.AccountID, e.Config.EdgeID, e.Config.Hostports
}

// base returns an Edge holding only e's config, for [newEdge].
func (e *Edge) base() Edge {
	return Edge{Config: e.Config, TLS: e.TLS, TCP: e.TCP, Restrictions: e.Restrictions}
}

// backendIDs returns the backends the edge uses, without repeats.
func (e *Edge) backendIDs() []string {
	var ids []string
	add := func(b *edges.BackendConfig) {
		if b != nil && !slices.Contains(ids, b.BackendID) {
			ids = append(ids, b.BackendID)
		}
	}
	switch {
	case e.TLS != nil:
		add(e.TLS.Backend)
	case e.TCP != nil:
		add(e.TCP.Backend)
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

// edgeKind returns the kind of the edge an ID names, by its prefix.
func edgeKind(id string) store.Kind {
	switch {
	case strings.HasPrefix(id, edges.TLSEdgePrefix):
		return edgeplane.KindTLSEdge
	case strings.HasPrefix(id, edges.TCPEdgePrefix):
		return edgeplane.KindTCPEdge
	}
	return edgeplane.KindHTTPSEdge
}

// edgeNoun names the kind of the edge id in log lines.
func edgeNoun(id string) string {
	switch edgeKind(id) {
	case edgeplane.KindTLSEdge:
		return "TLS edge"
	case edgeplane.KindTCPEdge:
		return "TCP edge"
	}
	return "HTTPS edge"
}

// Stats are counters of a [Configs] since it started.
type Stats struct {
	// Edges is the number of edges (of every kind) served now.
	Edges int
	// Compiles counts the edge configs read and compiled (attempts, failed
	// ones included); Refreshes the snapshots rebuilt with the same config
	// and new tunnel lists or certificates.
	Compiles, Refreshes uint64
	// Reloads counts full reloads after the feed was compacted past the
	// applied revision (the initial load is not counted).
	Reloads uint64
	// Failures counts failed reads of the store (each is retried after
	// a backoff); Dropped counts edges dropped because their config
	// cannot be built from what is stored (a traffic policy that does not
	// compile with this Service's engine).
	Failures, Dropped uint64
}

// Configs keeps the runtime config of every edge (HTTPS, TLS and TCP) of
// every account current: it loads them all when it starts, then follows the store's
// change feed and rebuilds, in the background, only the edges a change
// affects. See the package documentation. It is safe for concurrent use.
type Configs struct {
	host  *edgeplane.Host
	feed  store.Feed
	log   *slog.Logger
	par   int
	after func(time.Duration) <-chan time.Time
	hostCalls

	// The published tables: edges by ID; HTTPS and TLS edges by the host
	// of each hostport they serve (exact or wildcard, as the edge lists
	// it); TCP edges by port. HTTPS and TLS edges' hostports are all on
	// port 443 and unique in the store, so a host names one edge; a TCP
	// port serves one TCP edge in the store.
	edges, hosts, ports *table
	count               atomic.Int64

	// The TCP ports served, and a channel closed when they change
	// ([Configs.TCPPorts]).
	portsMu   sync.Mutex
	portList  []int
	portsNext chan struct{}

	compiles, refreshes, reloads, failures, dropped atomic.Uint64

	// Owned by the follower goroutine (and by New before it starts).
	known      map[string]*tracked                   // by edge ID
	byIPPolicy map[string]map[string]map[string]bool // account -> IP policy -> edge IDs
	byBackend  map[string]map[string]map[string]bool // account -> backend -> edge IDs
	byAccount  map[string]map[string]bool            // account -> edge IDs
	hostOf     map[string]string                     // host -> edge ID serving it
	portOf     map[string]string                     // TCP port -> edge ID serving it
	restrictBy map[string]map[string]bool            // account -> IP policies its endpoint restrictions use

	stop     context.CancelFunc
	done     chan struct{}
	stopOnce sync.Once

	applied revwait.Mark // every change up to it is reflected
}

// slot holds the current snapshot of one edge; nil once the edge is gone.
type slot struct{ p atomic.Pointer[Edge] }

// tracked is what the follower knows of a published edge: where it is and
// what its config depends on.
type tracked struct {
	account    string
	slot       *slot
	ipPolicies []string
	backends   []string
	hosts      []string // of an HTTPS or TLS edge
	ports      []string // of a TCP edge
}

// backendKey names a backend of an account.
type backendKey struct{ account, id string }

// pending is the work the changes read so far ask for.
type pending struct {
	compile map[string]string   // edge ID -> account: read and compile again
	remove  map[string]string   // edge ID -> account: deleted
	tunnels map[backendKey]bool // backends whose tunnel lists to read again
	acctTun map[string]bool     // accounts with tunnel changes: all their used backends
	acctDom map[string]bool     // accounts with reserved domain changes: their edges' certificates
	acctIPX map[string]bool     // accounts whose endpoint restrictions changed: their edges' Restrictions
}

func newPending() *pending {
	return &pending{compile: map[string]string{}, remove: map[string]string{}, tunnels: map[backendKey]bool{},
		acctTun: map[string]bool{}, acctDom: map[string]bool{}, acctIPX: map[string]bool{}}
}

func (p *pending) empty() bool {
	return len(p.compile) == 0 && len(p.remove) == 0 && len(p.tunnels) == 0 && len(p.acctTun) == 0 && len(p.acctDom) == 0 && len(p.acctIPX) == 0
}

// New loads the config of every edge (HTTPS, TLS and TCP) of the store that feed is the
// change feed of (the store host's Service reads), and starts following
// the feed. It returns once every edge is loaded, or fails with the first
// read of the store that failed (ctx bounds the load; it is not kept).
// Edges whose config cannot be built from what is stored are left out
// and logged. Call [Configs.Close] to stop following.
func New(ctx context.Context, host *edgeplane.Host, feed store.Feed, opts Options) (*Configs, error) {
	c := &Configs{
		host: host, feed: feed, log: opts.Logger, par: opts.Parallelism, after: opts.After,
		hostCalls: opts.hostCalls,
		edges:     newTable(), hosts: newTable(), ports: newTable(), portsNext: make(chan struct{}),
		known: map[string]*tracked{}, byIPPolicy: map[string]map[string]map[string]bool{}, byBackend: map[string]map[string]map[string]bool{},
		byAccount: map[string]map[string]bool{}, hostOf: map[string]string{}, portOf: map[string]string{}, restrictBy: map[string]map[string]bool{},
		done: make(chan struct{}),
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.par <= 0 {
		c.par = runtime.GOMAXPROCS(0)
	}
	if c.after == nil {
		c.after = time.After
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
	p := newPending()
	rev, err := c.reload(ctx, p)
	if err == nil {
		err = c.apply(ctx, p, rev)
	}
	if err != nil {
		return nil, err
	}
	c.advance(rev)
	fctx, stop := context.WithCancel(context.Background())
	c.stop = stop
	go func() {
		defer close(c.done)
		c.follow(fctx, rev, p)
	}()
	return c, nil
}

// Close stops following the feed and waits for the follower to end. The
// snapshots stay readable (and stop changing). It may be called more than
// once.
func (c *Configs) Close() {
	c.stopOnce.Do(func() {
		c.stop()
		<-c.done
	})
}

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
	err := c.applied.Wait(ctx, rev, c.done)
	if errors.Is(err, revwait.ErrStopped) {
		return apierr.New(apierr.FailedPrecondition, "the edge configs are closed at revision %d; they will not reach revision %d", c.Revision(), rev)
	}
	return err
}

// Stats returns the counters.
func (c *Configs) Stats() Stats {
	return Stats{
		Edges:    int(c.count.Load()),
		Compiles: c.compiles.Load(), Refreshes: c.refreshes.Load(),
		Reloads: c.reloads.Load(), Failures: c.failures.Load(), Dropped: c.dropped.Load(),
	}
}

func (c *Configs) advance(rev int64) { c.applied.Advance(rev) }

// pause waits the backoff of the attempt-th consecutive failure, or until
// ctx ends.
func (c *Configs) pause(ctx context.Context, attempt int) {
	d := MinBackoff
	for i := 1; i < attempt && d < MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, MaxBackoff)
	select {
	case <-c.after(d):
	case <-ctx.Done():
	}
}

// follow applies the feed's changes after rev, and the work p holds,
// until ctx ends. Readers keep the snapshots published so far meanwhile:
// a failed read of the store is retried after a backoff, and a compacted
// feed makes a full reload, neither of them touching what is published
// until it has something newer.
func (c *Configs) follow(ctx context.Context, rev int64, p *pending) {
	attempt := 0
	fail := func(what string, err error) {
		c.failures.Add(1)
		attempt++
		c.log.Warn("edge configs: "+what+"; serving the last configs read, retrying", "err", err, "attempt", attempt)
		c.pause(ctx, attempt)
	}
	current := true
	feed := store.WithoutData(ctx) // only which records changed matters: each is read again
	for ctx.Err() == nil {
		if rev < 0 {
			r, err := c.reload(ctx, p)
			if err != nil {
				if ctx.Err() == nil {
					fail("cannot list the HTTPS edges", err)
				}
				continue
			}
			c.reloads.Add(1)
			rev, current = r, false
		}
		if !p.empty() {
			if err := c.apply(ctx, p, rev); err != nil {
				if ctx.Err() != nil {
					return
				}
				fail("cannot rebuild edge configs", err)
			} else {
				attempt = 0
			}
		}
		if p.empty() {
			c.advance(rev)
			if current {
				_ = c.feed.Wait(ctx, rev) // an error: Changes says what it is
			}
		}
		changes, err := c.feed.Changes(feed, rev, followPage)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			var compacted *store.CompactedError
			if errors.As(err, &compacted) {
				// What changed between rev and the oldest change kept is
				// unknown: read everything again, in the background.
				rev = -1
				continue
			}
			fail("cannot read the change feed", err)
			continue
		}
		for _, ch := range changes {
			c.note(p, ch)
			rev = ch.Revision
		}
		current = len(changes) < followPage
		if p.empty() {
			attempt = 0
		}
	}
}

// note records in p the work a change asks for.
func (c *Configs) note(p *pending, ch store.Change) {
	a := ch.AccountID
	switch ch.Kind {
	case edgeplane.KindHTTPSEdge, edgeplane.KindTLSEdge, edgeplane.KindTCPEdge:
		if ch.Op == store.OpDelete {
			delete(p.compile, ch.ID)
			p.remove[ch.ID] = a
			return
		}
		p.compile[ch.ID] = a
	case edgeplane.KindHTTPSEdgeRoute:
		if _, gone := p.remove[ch.ParentID]; !gone {
			p.compile[ch.ParentID] = a
		}
	case edgeplane.KindIPPolicy:
		c.compileUsers(p, c.byIPPolicy[a][ch.ID], a)
		if c.restrictBy[a][ch.ID] {
			p.acctIPX[a] = true
		}
	case edgeplane.KindIPPolicyRule:
		c.compileUsers(p, c.byIPPolicy[a][ch.ParentID], a)
		if c.restrictBy[a][ch.ParentID] {
			p.acctIPX[a] = true
		}
	case edgeplane.KindIPRestriction:
		// Any restriction of the account: its type says whether it is an
		// endpoints one, and reading them is one listing per page of
		// changes.
		if c.byAccount[a] != nil {
			p.acctIPX[a] = true
		}
	case edgeplane.KindTunnelGroupBackend:
		if c.byBackend[a][ch.ID] != nil {
			p.tunnels[backendKey{a, ch.ID}] = true
		}
	case edgeplane.KindReservedDomain:
		// A domain's certificate changed (attached, detached, issued), or
		// a domain appeared that serves a host more closely than a
		// wildcard: the certificates of the account's edges are read
		// again, once per page of changes.
		if c.byAccount[a] != nil {
			p.acctDom[a] = true
		}
	case edgeplane.KindTunnel:
		// A tunnel's labels say which backends select it, but the
		// backends' labels are not kept here: every backend of the
		// account that an edge uses reads its tunnels again, once per
		// page of changes however many tunnels changed.
		if c.byBackend[a] != nil {
			p.acctTun[a] = true
		}
	}
}

func (c *Configs) compileUsers(p *pending, users map[string]bool, account string) {
	for id := range users {
		if _, gone := p.remove[id]; !gone {
			p.compile[id] = account
		}
	}
}

// reload lists every edge of every kind and puts in p the work of loading them
// all again: each listed edge is compiled, each known one not listed is
// removed. It returns the revision read before the listing: the listing,
// and every read after it, reflects at least that revision.
func (c *Configs) reload(ctx context.Context, p *pending) (int64, error) {
	rev, err := c.feed.Revision(ctx)
	if err != nil {
		return 0, err
	}
	listed := map[string]string{}
	for _, list := range []func(context.Context, edgeplane.ListOptions) ([]edgeplane.EdgeRef, string, error){
		c.host.ListHTTPSEdges, c.host.ListTLSEdges, c.host.ListTCPEdges,
	} {
		opts := edgeplane.ListOptions{}
		for {
			refs, next, err := list(ctx, opts)
			if err != nil {
				return 0, err
			}
			for _, r := range refs {
				listed[r.ID] = r.AccountID
			}
			if next == "" {
				break
			}
			opts.BeforeID = next
		}
	}
	for id, t := range c.known {
		if _, ok := listed[id]; !ok {
			p.remove[id] = t.account
		}
	}
	for id, a := range listed {
		delete(p.remove, id)
		p.compile[id] = a
	}
	// Every edge compiled reads its backends' tunnels and its
	// certificates again.
	clear(p.tunnels)
	clear(p.acctTun)
	clear(p.acctDom)
	clear(p.acctIPX)
	return rev, nil
}

// permanent reports whether err says that an edge's config cannot be
// built from what is stored (retrying reads the same), rather than that
// the store could not be read.
func permanent(err error) bool {
	switch apierr.CodeOf(err) {
	case apierr.NotFound, apierr.FailedPrecondition, apierr.InvalidArgument, apierr.PermissionDenied:
		return true
	}
	return false
}

// reads caches, for one apply, the tunnels of each backend, the
// certificate of each host and the endpoint restrictions of each account
// it read, so that edges sharing them read them once.
type reads struct {
	c        *Configs
	tunnels  memo[backendKey, []backends.Tunnel]
	certs    memo[backendKey, *tls.Certificate] // {account, host}; nil: none
	restrict memo[string, *edgeplane.EndpointRestrictions]
}

func newReads(c *Configs) *reads { return &reads{c: c} }

// memo is one kind of read of an apply: each key read at most once, its
// value shared by every edge that asks. A failed read is not kept, so the
// next edge that asks reads again.
type memo[K comparable, V any] struct {
	mu sync.Mutex
	m  map[K]V
}

// get returns k's value, from read the first time.
func (m *memo[K, V]) get(k K, read func() (V, error)) (V, error) {
	m.mu.Lock()
	v, ok := m.m[k]
	m.mu.Unlock()
	if ok {
		return v, nil
	}
	v, err := read()
	if err != nil {
		var zero V
		return zero, err
	}
	m.mu.Lock()
	if m.m == nil {
		m.m = map[K]V{}
	}
	m.m[k] = v
	m.mu.Unlock()
	return v, nil
}

// restrictionsOf returns the endpoint restrictions of an account. When
// what is stored cannot be read as restrictions (more than the cap, from
// a store written by other code), it returns [unreadableRestrictions]:
// the account's edges stay tracked and refuse every client (fail closed)
// until a change to the account's restrictions reads them again.
func (r *reads) restrictionsOf(ctx context.Context, account string) (*edgeplane.EndpointRestrictions, error) {
	return r.restrict.get(account, func() (*edgeplane.EndpointRestrictions, error) {
		v, err := r.c.restrict(ctx, account)
		if permanent(err) {
			r.c.log.Error("edge configs: the IP restrictions of an account cannot be read; its edges refuse every client", "account", account, "err", err)
			return unreadableRestrictions, nil
		}
		return v, err
	})
}

func (r *reads) tunnelsOf(ctx context.Context, k backendKey) ([]backends.Tunnel, error) {
	return r.tunnels.get(k, func() ([]backends.Tunnel, error) {
		ts, err := r.c.tunnels(ctx, k.account, k.id)
		if apierr.CodeOf(err) == apierr.NotFound {
			// Deleted meanwhile (a route that uses a backend keeps it from
			// being deleted, so the route is changing too): no tunnels.
			return []backends.Tunnel{}, nil
		}
		return ts, err
	})
}

// certOf returns the parsed certificate of a host of an account, nil
// when it has none (no certificate, or one that does not parse: logged).
func (r *reads) certOf(ctx context.Context, k backendKey) (*tls.Certificate, error) {
	return r.certs.get(k, func() (*tls.Certificate, error) {
		hc, err := r.c.certs(ctx, k.account, k.id)
		switch {
		case err == nil:
			pair, perr := tls.X509KeyPair([]byte(hc.CertificatePEM), []byte(hc.KeyPEM))
			if perr != nil {
				r.c.log.Error("edge configs: the TLS certificate of a host does not load; TLS for it fails", "account", k.account, "host", k.id, "certificate", hc.CertificateID, "err", perr)
				return nil, nil
			}
			return &pair, nil
		case permanent(err):
			return nil, nil // no certificate: the host is served without TLS only
		}
		return nil, err
	})
}

// built is the outcome of compiling one edge.
type built struct {
	id, account string
	edge        *Edge
	err         error
}

// updates are the table changes of one apply, published together by
// flush: a new slot or nil (removed) by key.
type updates struct{ edges, hosts, ports map[string]*slot }

func newUpdates() *updates {
	return &updates{edges: map[string]*slot{}, hosts: map[string]*slot{}, ports: map[string]*slot{}}
}

// flush publishes u's changes and empties it.
func (c *Configs) flush(u *updates) {
	c.count.Add(int64(c.edges.set(u.edges)))
	c.hosts.set(u.hosts)
	c.ports.set(u.ports)
	if len(u.ports) > 0 {
		ports := make([]int, 0, len(c.portOf))
		for p := range c.portOf {
			n, _ := strconv.Atoi(p)
			ports = append(ports, n)
		}
		slices.Sort(ports)
		c.portsMu.Lock()
		c.portList = ports
		close(c.portsNext)
		c.portsNext = make(chan struct{})
		c.portsMu.Unlock()
	}
	clear(u.edges)
	clear(u.hosts)
	clear(u.ports)
}

// TCPPorts returns the ports of the TCP edges served now, sorted, and a
// channel that is closed when they next change: a TCP listener manager
// opens a listener per port (those it is configured to serve) and waits
// on the channel to open and close listeners as edges come and go.
func (c *Configs) TCPPorts() (ports []int, changed <-chan struct{}) {
	c.portsMu.Lock()
	defer c.portsMu.Unlock()
	return slices.Clone(c.portList), c.portsNext
}

// apply does the work p holds, reading the store at rev or later, and
// publishes each snapshot as soon as its work is done. Work that fails
// for a reason other than what is stored stays in p, and apply returns
// the first such error.
func (c *Configs) apply(ctx context.Context, p *pending, rev int64) error {
	if err := c.synced(ctx, rev); err != nil {
		return err
	}
	rd := newReads(c)
	var firstErr error
	keep := func(err error) {
		if firstErr == nil {
			firstErr = err
		}
	}
	u := newUpdates()
	for id := range p.remove {
		c.drop(id, u)
	}
	clear(p.remove)

	// Compile the edges, Parallelism at a time, and publish them a chunk
	// at a time: a reload holds at most one chunk of new configs besides
	// the published ones.
	ids := slices.Sorted(maps.Keys(p.compile))
	compiled := map[string]bool{}
	for chunk := range slices.Chunk(ids, compileChunk) {
		results := make([]built, len(chunk))
		sem := make(chan struct{}, c.par)
		var wg sync.WaitGroup
		for i, id := range chunk {
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer func() { <-sem; wg.Done() }()
				results[i] = c.build(ctx, rd, p.compile[id], id, rev)
			}()
		}
		wg.Wait()
		for _, b := range results {
			switch {
			case b.err == nil:
				c.publish(b.id, b.account, b.edge, u)
				compiled[b.id] = true
				delete(p.compile, b.id)
			case permanent(b.err):
				if apierr.CodeOf(b.err) != apierr.NotFound {
					c.dropped.Add(1)
					c.log.Error("edge configs: the config of a "+edgeNoun(b.id)+" cannot be built; it is not served", "account", b.account, "edge", b.id, "err", b.err)
				}
				c.drop(b.id, u)
				delete(p.compile, b.id)
			default:
				keep(b.err)
			}
		}
		c.flush(u)
	}

	// Edges not compiled whose tunnels or certificates changed get a new
	// snapshot with the same config.
	for a := range p.acctTun {
		for id := range c.byBackend[a] {
			p.tunnels[backendKey{a, id}] = true
		}
	}
	clear(p.acctTun)
	type refresh struct {
		tunnels  map[string][]backends.Tunnel // by backend
		certs    bool
		restrict *edgeplane.EndpointRestrictions
	}
	refreshed := map[string]*refresh{} // by edge ID
	get := func(id string) *refresh {
		if refreshed[id] == nil {
			refreshed[id] = &refresh{tunnels: map[string][]backends.Tunnel{}}
		}
		return refreshed[id]
	}
	refreshUsers(p.tunnels, func(k backendKey) map[string]bool { return c.byBackend[k.account][k.id] }, compiled, keep,
		func(k backendKey) ([]backends.Tunnel, error) { return rd.tunnelsOf(ctx, k) },
		func(id string, k backendKey, ts []backends.Tunnel) { get(id).tunnels[k.id] = ts })
	for a := range p.acctDom {
		for id := range c.byAccount[a] {
			if !compiled[id] && len(c.known[id].hosts) > 0 {
				get(id).certs = true
			}
		}
	}
	refreshUsers(p.acctIPX, func(a string) map[string]bool { return c.byAccount[a] }, compiled, keep,
		func(a string) (*edgeplane.EndpointRestrictions, error) {
			v, err := rd.restrictionsOf(ctx, a)
			if err == nil {
				c.noteRestrictions(a, v)
			}
			return v, err
		},
		func(id, _ string, v *edgeplane.EndpointRestrictions) { get(id).restrict = v })
	failedCerts := false
	for id, r := range refreshed {
		t := c.known[id]
		old := t.slot.p.Load()
		tunnels := old.Tunnels
		if len(r.tunnels) > 0 {
			tunnels = maps.Clone(old.Tunnels)
			maps.Copy(tunnels, r.tunnels)
		}
		certs := old.Certificates
		if r.certs {
			var err error
			if certs, err = c.readCerts(ctx, rd, t.account, t.hosts); err != nil {
				keep(err)
				failedCerts = true
				certs = old.Certificates
			}
		}
		base := old.base()
		if r.restrict != nil {
			base.Restrictions = r.restrict
		}
		t.slot.p.Store(newEdge(base, tunnels, certs, rev, old))
		c.refreshes.Add(1)
	}
	if !failedCerts {
		clear(p.acctDom)
	}
	c.flush(u)
	return firstErr
}

// unreadableRestrictions stand for an account's endpoint restrictions
// that cannot be read: one enforced restriction that refuses every
// address.
var unreadableRestrictions = func() *edgeplane.EndpointRestrictions {
	all, err := ipaccess.NewSet([]ipaccess.Rule{{CIDR: "0.0.0.0/0", Action: ipaccess.ActionDeny}, {CIDR: "::/0", Action: ipaccess.ActionDeny}})
	if err != nil {
		panic(err) // two valid rules
	}
	return &edgeplane.EndpointRestrictions{Enforcer: ipaccess.NewEnforcer(
		[]ipaccess.Restriction{{ID: "(unreadable IP restrictions)", Enforced: true}}, []*ipaccess.Set{all})}
}()

// refreshUsers does the refresh work pending holds: for each key whose
// users (edges) include one not compiled in this apply (compiling read
// everything anew), it reads the key's new value once and sets it on each
// such edge, and the key's work is done; a read that fails is kept (keep)
// and stays pending, to be retried.
func refreshUsers[K comparable, V any](pending map[K]bool, users func(K) map[string]bool, compiled map[string]bool, keep func(error),
	read func(K) (V, error), set func(id string, k K, v V)) {
	for k := range pending {
		us := users(k)
		needed := false
		for id := range us {
			if needed = !compiled[id]; needed {
				break
			}
		}
		if !needed {
			delete(pending, k)
			continue
		}
		v, err := read(k)
		if err != nil {
			keep(err)
			continue
		}
		delete(pending, k)
		for id := range us {
			if !compiled[id] {
				set(id, k, v)
			}
		}
	}
}

// readCerts reads the certificates of an edge's hosts.
func (c *Configs) readCerts(ctx context.Context, rd *reads, account string, hosts []string) (map[string]*tls.Certificate, error) {
	certs := make(map[string]*tls.Certificate, len(hosts))
	for _, h := range hosts {
		cert, err := rd.certOf(ctx, backendKey{account, h})
		if err != nil {
			return nil, err
		}
		if cert != nil {
			certs[h] = cert
		}
	}
	return certs, nil
}

// build reads and compiles one edge, its backends' tunnels and its hosts'
// certificates.
func (c *Configs) build(ctx context.Context, rd *reads, account, id string, rev int64) built {
	b := built{id: id, account: account}
	var (
		base Edge
		err  error
	)
	switch edgeKind(id) {
	case edgeplane.KindTLSEdge:
		base.TLS, err = c.compileTLS(ctx, account, id)
	case edgeplane.KindTCPEdge:
		base.TCP, err = c.compileTCP(ctx, account, id)
	default:
		base.Config, err = c.compile(ctx, account, id)
	}
	c.compiles.Add(1)
	if err == nil {
		base.Restrictions, err = rd.restrictionsOf(ctx, account)
	}
	if err != nil {
		b.err = err
		return b
	}
	tunnels := map[string][]backends.Tunnel{}
	for _, bid := range base.backendIDs() {
		ts, err := rd.tunnelsOf(ctx, backendKey{account, bid})
		if err != nil {
			b.err = err
			return b
		}
		tunnels[bid] = ts
	}
	var certs map[string]*tls.Certificate
	if base.TCP == nil {
		if certs, err = c.readCerts(ctx, rd, account, hostsOf(base.Hostports())); err != nil {
			b.err = err
			return b
		}
	}
	b.edge = newEdge(base, tunnels, certs, rev, nil)
	return b
}

// hostsOf returns the hosts of hostports, without repeats.
func hostsOf(hostports []string) []string {
	var hosts []string
	for _, hp := range hostports {
		if h := edges.HostportHost(hp); !slices.Contains(hosts, h) {
			hosts = append(hosts, h)
		}
	}
	return hosts
}

// publish makes e the snapshot of edge id and indexes what it depends on
// and the hosts it serves. A new edge's slot, and the hosts table
// changes, go to u.
func (c *Configs) publish(id, account string, e *Edge, u *updates) {
	t := c.known[id]
	if t == nil {
		t = &tracked{account: account, slot: &slot{}}
		c.known[id] = t
		u.edges[id] = t.slot
		if c.byAccount[account] == nil {
			c.byAccount[account] = map[string]bool{}
		}
		c.byAccount[account][id] = true
	}
	c.unindex(id, t)
	t.ipPolicies, t.backends = e.ipPolicyIDs(), e.backendIDs()
	c.noteRestrictions(account, e.Restrictions)
	for _, p := range t.ipPolicies {
		addEdge(c.byIPPolicy, account, p, id)
	}
	for _, b := range t.backends {
		addEdge(c.byBackend, account, b, id)
	}
	// The snapshot first, then the tables: a reader that finds the slot
	// by a new host finds the edge that serves it.
	t.slot.p.Store(e)
	if e.TCP != nil {
		c.servePorts(id, t, e.TCP.Hostports, u)
	} else {
		c.serve(id, t, e.Hostports(), u)
	}
}

// serve makes the hosts table send the hosts of edge id's hostports to
// its slot, and drop the ones it no longer serves.
func (c *Configs) serve(id string, t *tracked, hostports []string, u *updates) {
	t.hosts = claim(id, t.slot, t.hosts, hostsOf(hostports), c.hostOf, u.hosts)
}

// servePorts makes the ports table send the ports of TCP edge id's
// hostports to its slot, and drop the ones it no longer serves.
func (c *Configs) servePorts(id string, t *tracked, hostports []string, u *updates) {
	var ports []string
	for _, hp := range hostports {
		if p := hostportPort(hp); !slices.Contains(ports, p) {
			ports = append(ports, p)
		}
	}
	t.ports = claim(id, t.slot, t.ports, ports, c.portOf, u.ports)
}

// claim records in owner, and in the table updates u, that edge id (its
// slot) serves keys, and drops the keys it held (held) and no longer
// serves, unless another edge took them meanwhile (changes are applied in
// any order). It returns keys.
func claim(id string, s *slot, held, keys []string, owner map[string]string, u map[string]*slot) []string {
	for _, k := range held {
		if !slices.Contains(keys, k) && owner[k] == id {
			delete(owner, k)
			u[k] = nil
		}
	}
	for _, k := range keys {
		if owner[k] != id {
			owner[k] = id
			u[k] = s
		}
	}
	return keys
}

// hostportPort returns the port of a canonical hostport.
func hostportPort(hp string) string { return hp[strings.LastIndexByte(hp, ':')+1:] }

// drop removes edge id: its snapshot at once, its slot and hosts from
// the tables with the next flush, and its index entries.
func (c *Configs) drop(id string, u *updates) {
	t := c.known[id]
	if t == nil {
		return
	}
	c.serve(id, t, nil, u)
	c.servePorts(id, t, nil, u)
	c.unindex(id, t)
	delete(c.known, id)
	delete(c.byAccount[t.account], id)
	if len(c.byAccount[t.account]) == 0 {
		delete(c.byAccount, t.account)
		delete(c.restrictBy, t.account)
	}
	t.slot.p.Store(nil)
	u.edges[id] = nil
}

// noteRestrictions records the IP policies the endpoint restrictions of
// account use, so that a change to one refreshes the account's edges.
func (c *Configs) noteRestrictions(account string, r *edgeplane.EndpointRestrictions) {
	if r == nil || len(r.IPPolicyIDs) == 0 {
		delete(c.restrictBy, account)
		return
	}
	m := make(map[string]bool, len(r.IPPolicyIDs))
	for _, p := range r.IPPolicyIDs {
		m[p] = true
	}
	c.restrictBy[account] = m
}

func (c *Configs) unindex(id string, t *tracked) {
	for _, p := range t.ipPolicies {
		removeEdge(c.byIPPolicy, t.account, p, id)
	}
	for _, b := range t.backends {
		removeEdge(c.byBackend, t.account, b, id)
	}
}

func addEdge(idx map[string]map[string]map[string]bool, account, dep, edgeID string) {
	byDep := idx[account]
	if byDep == nil {
		byDep = map[string]map[string]bool{}
		idx[account] = byDep
	}
	users := byDep[dep]
	if users == nil {
		users = map[string]bool{}
		byDep[dep] = users
	}
	users[edgeID] = true
}

func removeEdge(idx map[string]map[string]map[string]bool, account, dep, edgeID string) {
	users := idx[account][dep]
	delete(users, edgeID)
	if len(users) == 0 {
		delete(idx[account], dep)
		if len(idx[account]) == 0 {
			delete(idx, account)
		}
	}
}
