package proxy

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/credentials"
	"github.com/edgeplane/edgeplane/edgeconfig"
	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/identity"
	"github.com/edgeplane/edgeplane/ipaccess"
	"github.com/edgeplane/edgeplane/store"
)

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// flaky is a store that fails reads while told to, as an unreachable
// database does, and whose Changes can be held at a gate.
type flaky struct {
	store.Store
	reads, feed atomic.Bool                   // fail Get/Lookup/List; fail Revision/Changes
	gate        atomic.Pointer[chan struct{}] // when set, Changes waits until it is closed
}

var errDown = errors.New("connection refused")

func (f *flaky) Get(ctx context.Context, kind store.Kind, accountID, id string) (store.Record, error) {
	if f.reads.Load() {
		return store.Record{}, errDown
	}
	return f.Store.Get(ctx, kind, accountID, id)
}

func (f *flaky) Lookup(ctx context.Context, kind store.Kind, key string) (store.Record, error) {
	if f.reads.Load() {
		return store.Record{}, errDown
	}
	return f.Store.Lookup(ctx, kind, key)
}

func (f *flaky) List(ctx context.Context, q store.Query) ([]store.Record, error) {
	if f.reads.Load() {
		return nil, errDown
	}
	return f.Store.List(ctx, q)
}

func (f *flaky) Revision(ctx context.Context) (int64, error) {
	if f.feed.Load() {
		return 0, errDown
	}
	return f.Store.Revision(ctx)
}

func (f *flaky) Changes(ctx context.Context, after int64, limit int, payload store.Payload) ([]store.Change, error) {
	if g := f.gate.Load(); g != nil {
		select {
		case <-*g:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if f.feed.Load() {
		return nil, errDown
	}
	return f.Store.Changes(ctx, after, limit, payload)
}

// hooks count the compiles of each edge and the tunnel reads of each
// backend, and can hold one edge's next compile until released.
type hooks struct {
	host *edgeplane.Host

	mu       sync.Mutex
	compiles map[string]int
	reads    map[string]int
	hold     map[string]chan struct{} // edge ID -> released when closed
	entered  chan string              // an edge whose compile is held

	onCompile func(edgeID string) // called at each compile when set
	onSync    func(rev int64)     // called before each Host.WaitRevision when set
}

func newHooks(host *edgeplane.Host) *hooks {
	return &hooks{host: host, compiles: map[string]int{}, reads: map[string]int{}, hold: map[string]chan struct{}{}, entered: make(chan string, 1)}
}

func (h *hooks) options(o Options) Options {
	o.compile = func(ctx context.Context, accountID, edgeID string) (*edgeconfig.HTTPSEdge, error) {
		h.compiling(edgeID)
		return h.host.DataPlane().HTTPSEdgeConfig(ctx, accountID, edgeID)
	}
	o.compileTLS = func(ctx context.Context, accountID, edgeID string) (*edgeconfig.TLSEdge, error) {
		h.compiling(edgeID)
		return h.host.DataPlane().TLSEdgeConfig(ctx, accountID, edgeID)
	}
	o.compileTCP = func(ctx context.Context, accountID, edgeID string) (*edgeconfig.TCPEdge, error) {
		h.compiling(edgeID)
		return h.host.DataPlane().TCPEdgeConfig(ctx, accountID, edgeID)
	}
	o.tunnels = func(ctx context.Context, accountID, backendID string) ([]backends.Tunnel, error) {
		h.mu.Lock()
		h.reads[backendID]++
		h.mu.Unlock()
		ts, err := h.host.DataPlane().BackendTunnels(ctx, accountID, backendID)
		return asAgents(ts), err
	}
	o.synced = func(ctx context.Context, rev int64) error {
		h.mu.Lock()
		onSync := h.onSync
		h.mu.Unlock()
		if onSync != nil {
			onSync(rev)
		}
		return h.host.WaitRevision(ctx, rev)
	}
	return o
}

// compiling counts a compile of edgeID, and holds it when a test asked.
func (h *hooks) compiling(edgeID string) {
	h.mu.Lock()
	h.compiles[edgeID]++
	release := h.hold[edgeID]
	delete(h.hold, edgeID)
	onCompile := h.onCompile
	h.mu.Unlock()
	if onCompile != nil {
		onCompile(edgeID)
	}
	if release != nil {
		h.entered <- edgeID
		<-release
	}
}

// holdNext makes the next compile of edgeID wait until the returned
// function is called; h.entered receives edgeID when it starts waiting.
func (h *hooks) holdNext(edgeID string) (release func()) {
	ch := make(chan struct{})
	h.mu.Lock()
	h.hold[edgeID] = ch
	h.mu.Unlock()
	return sync.OnceFunc(func() { close(ch) })
}

func (h *hooks) counts() (compiles, reads map[string]int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	compiles, reads = map[string]int{}, map[string]int{}
	for k, v := range h.compiles {
		compiles[k] = v
	}
	for k, v := range h.reads {
		reads[k] = v
	}
	return compiles, reads
}

// world is a store with two accounts: account a has edges a1 (one route,
// backend bk, labels app=web) and a2 (one route, no backend); account b
// has edge b1 (one route). api writes as a user would; host is the
// proxy's Service's Host (the same Service unless a test says otherwise).
type world struct {
	t     testing.TB
	ctx   context.Context
	st    store.Store
	clock *fakeClock
	api   *edgeplane.Service

	a, b          edgeplane.Principal
	a1, a2, b1    string // edge IDs
	a1r, a2r, b1r string // their route IDs
	bk            string // backend of a1's route
	tunnelToken   string // binds app=web in account a
}

func newWorld(t testing.TB, st store.Store) *world {
	t.Helper()
	w := &world{t: t, ctx: context.Background(), st: st, clock: &fakeClock{now: time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)}}
	w.api = mustService(edgeplane.New(st, edgeplane.Options{Clock: w.clock.Now}))
	t.Cleanup(func() { _ = w.api.Close(context.Background()) })
	w.a = w.principal("a")
	w.b = w.principal("b")
	w.a1, w.a1r = w.edge(w.a)
	w.a2, w.a2r = w.edge(w.a)
	w.b1, w.b1r = w.edge(w.b)
	bk, err := w.api.CreateTunnelGroupBackend(w.ctx, w.a, backends.CreateParams{Labels: map[string]string{"app": "web"}})
	w.check(err)
	w.bk = bk.ID
	_, err = w.api.ReplaceHTTPSRouteBackend(w.ctx, w.a, w.a1, w.a1r, edges.BackendParams{BackendID: w.bk})
	w.check(err)
	cred, err := w.api.CreateCredential(w.ctx, w.a, credentials.CreateParams{ACL: []string{"bind:app=web"}})
	w.check(err)
	w.tunnelToken = *cred.Token
	return w
}

func (w *world) check(err error) {
	w.t.Helper()
	if err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) principal(name string) edgeplane.Principal {
	w.t.Helper()
	acct, err := w.api.Host().CreateAccount(w.ctx, identity.AccountParams{Name: name})
	w.check(err)
	u, err := w.api.Host().CreateUser(w.ctx, acct.ID, identity.SubjectParams{Name: "admin", Admin: true})
	w.check(err)
	return edgeplane.Principal{AccountID: acct.ID, SubjectID: u.ID, Admin: true}
}

// edge creates an HTTPS edge of p with one path_prefix route "/".
func (w *world) edge(p edgeplane.Principal) (edgeID, routeID string) {
	w.t.Helper()
	e, err := w.api.CreateHTTPSEdge(w.ctx, p, edges.CreateEdgeParams{})
	w.check(err)
	r, err := w.api.CreateHTTPSEdgeRoute(w.ctx, p, e.ID, edges.CreateRouteParams{MatchType: edges.MatchPathPrefix, Match: "/"})
	w.check(err)
	return e.ID, r.ID
}

// policy puts a traffic policy on a route.
func (w *world) policy(p edgeplane.Principal, edgeID, routeID, doc string) {
	w.t.Helper()
	_, err := w.api.ReplaceHTTPSRouteTrafficPolicy(w.ctx, p, edgeID, routeID, edges.TrafficPolicyParams{Value: doc})
	w.check(err)
}

// ipPolicy creates an IP policy of account a.
func (w *world) ipPolicy() string {
	w.t.Helper()
	ipp, err := w.api.CreateIPPolicy(w.ctx, w.a, ipaccess.CreatePolicyParams{})
	w.check(err)
	return ipp.ID
}

// rev returns the store's revision now.
func (w *world) rev() int64 {
	w.t.Helper()
	r, err := w.st.Revision(w.ctx)
	w.check(err)
	return r
}

// start starts a Configs on host and feed with the hooks.
func (w *world) start(host *edgeplane.Host, feed store.Feed, h *hooks, o Options) *Configs {
	w.t.Helper()
	c, err := New(w.ctx, host.DataPlane(), feed, h.options(o))
	w.check(err)
	w.t.Cleanup(c.Close)
	return c
}

// applied waits until c reflects every change up to the store's revision
// now.
func (w *world) applied(c *Configs) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(w.ctx, 10*time.Second)
	defer cancel()
	if err := c.WaitRevision(ctx, w.rev()); err != nil {
		w.t.Fatalf("the configs did not apply revision %d (applied %d): %v", w.rev(), c.Revision(), err)
	}
}

const denyAll = `{"inbound":[{"actions":[{"type":"deny"}]}]}`

func restrictIPs(ipp string) string {
	return `{"inbound":[{"actions":[{"type":"restrict-ips","config":{"ip_policies":["` + ipp + `"]}}]}]}`
}
