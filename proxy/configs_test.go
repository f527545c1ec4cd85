package proxy

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/credentials"
	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/internal/faketimer"
	"github.com/edgeplane/edgeplane/ipaccess"
	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/sqlitestore"
	"github.com/edgeplane/edgeplane/store"
)

// wantCompiles fails the test unless the compile counts moved by diff
// (edge ID -> compiles) since before, and no other edge's did.
func wantCompiles(t *testing.T, before, after map[string]int, diff map[string]int) {
	t.Helper()
	for id := range mapsUnion(before, after) {
		if got, want := after[id]-before[id], diff[id]; got != want {
			t.Errorf("edge %s compiled %d more times, want %d", id, got, want)
		}
	}
}

func mapsUnion(a, b map[string]int) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// TestInitialLoad: every HTTPS edge of both accounts is loaded, each once,
// with its backend's tunnels; an edge is found only under its own account.
func TestInitialLoad(t *testing.T) {
	w := newWorld(t, memstore.New())
	tn, err := w.api.Host().RegisterTunnel(w.ctx, w.tunnelToken, backends.RegisterTunnelParams{Labels: map[string]string{"app": "web"}, ForwardsTo: "http://127.0.0.1:8080"})
	w.check(err)
	h := newHooks(w.api.Host())
	c := w.start(w.api.Host(), w.st, h, Options{})

	for _, tc := range []struct {
		name, account, edge string
		found               bool
	}{
		{"a1", w.a.AccountID, w.a1, true},
		{"a2", w.a.AccountID, w.a2, true},
		{"b1", w.b.AccountID, w.b1, true},
		{"a1 under account b", w.b.AccountID, w.a1, false},
		{"b1 under account a", w.a.AccountID, w.b1, false},
		{"unknown edge", w.a.AccountID, "edghts_00000000000000000000000000", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := c.Edge(tc.account, tc.edge)
			if (e != nil) != tc.found {
				t.Fatalf("Edge(%s, %s) = %v, want found %v", tc.account, tc.edge, e, tc.found)
			}
			if e != nil && (e.Config.EdgeID != tc.edge || e.Config.AccountID != tc.account || len(e.Config.Routes) != 1) {
				t.Errorf("Edge(%s, %s): config %+v", tc.account, tc.edge, e.Config)
			}
		})
	}
	if got := c.Edge(w.a.AccountID, w.a1).Tunnels[w.bk]; len(got) != 1 || got[0].ID != tn.ID || got[0].ForwardsTo != "http://127.0.0.1:8080" {
		t.Errorf("tunnels of backend %s: %+v, want tunnel %s", w.bk, got, tn.ID)
	}
	if got := c.Edge(w.a.AccountID, w.a2).Tunnels; len(got) != 0 {
		t.Errorf("edge a2 has no backend, got tunnels %v", got)
	}
	compiles, _ := h.counts()
	wantCompiles(t, map[string]int{}, compiles, map[string]int{w.a1: 1, w.a2: 1, w.b1: 1})
	if s := c.Stats(); s.Edges != 3 || s.Compiles != 3 {
		t.Errorf("stats %+v, want 3 edges and 3 compiles", s)
	}
	if c.Revision() != w.rev() {
		t.Errorf("revision %d, want the store's %d", c.Revision(), w.rev())
	}
}

// TestChangesRebuildOnlyWhatTheyAffect: each write, made through the
// Service, is applied, and compiles exactly the edges it affects.
func TestChangesRebuildOnlyWhatTheyAffect(t *testing.T) {
	w := newWorld(t, memstore.New())
	h := newHooks(w.api.Host())
	c := w.start(w.api.Host(), w.st, h, Options{})
	ipp := w.ipPolicy() // used by no route yet
	w.applied(c)

	for _, tc := range []struct {
		name  string
		write func()
		diff  map[string]int
		check func(t *testing.T)
	}{
		{"route traffic policy", func() { w.policy(w.a, w.a1, w.a1r, denyAll) }, map[string]int{w.a1: 1}, func(t *testing.T) {
			if c.Edge(w.a.AccountID, w.a1).Config.Routes[0].TrafficPolicy == nil {
				t.Error("a1's route has no traffic policy")
			}
		}},
		{"credential", func() {
			_, err := w.api.CreateCredential(w.ctx, w.b, credentials.CreateParams{})
			w.check(err)
		}, nil, nil},
		{"rule of an IP policy no route uses", func() {
			_, err := w.api.CreateIPPolicyRule(w.ctx, w.a, ipaccess.CreateRuleParams{IPPolicyID: ipp, CIDR: "203.0.113.9", Action: "deny"})
			w.check(err)
		}, nil, nil},
		{"route of a2 uses the IP policy", func() { w.policy(w.a, w.a2, w.a2r, restrictIPs(ipp)) }, map[string]int{w.a2: 1}, func(t *testing.T) {
			if got := c.Edge(w.a.AccountID, w.a2).Config.Routes[0].IPPolicyIDs; len(got) != 1 || got[0] != ipp {
				t.Errorf("IPPolicyIDs %v, want [%s]", got, ipp)
			}
		}},
		{"rule added to the IP policy", func() {
			_, err := w.api.CreateIPPolicyRule(w.ctx, w.a, ipaccess.CreateRuleParams{IPPolicyID: ipp, CIDR: "198.51.100.0/24", Action: "deny"})
			w.check(err)
		}, map[string]int{w.a2: 1}, nil},
		{"IP policy renamed", func() {
			_, err := w.api.UpdateIPPolicy(w.ctx, w.a, ipp, ipaccess.UpdatePolicyParams{Description: ptr("renamed")})
			w.check(err)
		}, map[string]int{w.a2: 1}, nil},
		{"new route on b1", func() {
			_, err := w.api.CreateHTTPSEdgeRoute(w.ctx, w.b, w.b1, edges.CreateRouteParams{MatchType: edges.MatchPathPrefix, Match: "/api"})
			w.check(err)
		}, map[string]int{w.b1: 1}, func(t *testing.T) {
			if n := len(c.Edge(w.b.AccountID, w.b1).Config.Routes); n != 2 {
				t.Errorf("b1 has %d routes, want 2", n)
			}
		}},
		{"route of b1 deleted", func() { w.check(w.api.DeleteHTTPSEdgeRoute(w.ctx, w.b, w.b1, w.b1r)) }, map[string]int{w.b1: 1}, func(t *testing.T) {
			if n := len(c.Edge(w.b.AccountID, w.b1).Config.Routes); n != 1 {
				t.Errorf("b1 has %d routes, want 1", n)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, _ := h.counts()
			old := map[string]*Edge{w.a1: c.Edge(w.a.AccountID, w.a1), w.a2: c.Edge(w.a.AccountID, w.a2), w.b1: c.Edge(w.b.AccountID, w.b1)}
			tc.write()
			w.applied(c)
			after, _ := h.counts()
			wantCompiles(t, before, after, tc.diff)
			for id, e := range old {
				now := c.Edge(e.Config.AccountID, id)
				if changed := now != e; changed != (tc.diff[id] > 0) {
					t.Errorf("edge %s: snapshot replaced %v, want %v", id, changed, tc.diff[id] > 0)
				}
			}
			if tc.check != nil {
				tc.check(t)
			}
		})
	}
}

// TestTunnelsRefreshWithoutCompile: a tunnel registered, renewed and
// unregistered changes the tunnel list of the backend it matches in the
// snapshots of the edges using it, with no compile.
func TestTunnelsRefreshWithoutCompile(t *testing.T) {
	w := newWorld(t, memstore.New())
	h := newHooks(w.api.Host())
	c := w.start(w.api.Host(), w.st, h, Options{})
	a2 := c.Edge(w.a.AccountID, w.a2)
	tunnels := func() []backends.Tunnel { return c.Edge(w.a.AccountID, w.a1).Tunnels[w.bk] }
	before, _ := h.counts()

	tn, err := w.api.Host().RegisterTunnel(w.ctx, w.tunnelToken, backends.RegisterTunnelParams{Labels: map[string]string{"app": "web"}, ForwardsTo: "http://127.0.0.1:9000"})
	w.check(err)
	w.applied(c)
	if got := tunnels(); len(got) != 1 || got[0].ID != tn.ID {
		t.Fatalf("after register: tunnels %+v, want %s", got, tn.ID)
	}
	w.clock.Advance(20 * time.Second)
	renewed, err := w.api.Host().RenewTunnel(w.ctx, w.a.AccountID, tn.ID)
	w.check(err)
	w.applied(c)
	if got := tunnels(); len(got) != 1 || !got[0].ExpiresAt.Equal(renewed.ExpiresAt) || !renewed.ExpiresAt.After(tn.ExpiresAt) {
		t.Fatalf("after renew: tunnels %+v, want expiry %v", got, renewed.ExpiresAt)
	}
	w.check(w.api.Host().UnregisterTunnel(w.ctx, w.a.AccountID, tn.ID))
	w.applied(c)
	if got := tunnels(); len(got) != 0 {
		t.Fatalf("after unregister: tunnels %+v, want none", got)
	}

	after, _ := h.counts()
	wantCompiles(t, before, after, nil)
	if s := c.Stats(); s.Refreshes != 3 {
		t.Errorf("stats %+v, want 3 tunnel refreshes", s)
	}
	if c.Edge(w.a.AccountID, w.a2) != a2 {
		t.Error("a2 uses no backend, yet its snapshot was replaced")
	}
}

// TestEdgesCreatedAndDeleted: a new edge is added, a deleted one removed.
func TestEdgesCreatedAndDeleted(t *testing.T) {
	w := newWorld(t, memstore.New())
	h := newHooks(w.api.Host())
	c := w.start(w.api.Host(), w.st, h, Options{})

	w.check(w.api.DeleteHTTPSEdge(w.ctx, w.a, w.a2))
	a3, _ := w.edge(w.a)
	w.applied(c)
	if c.Edge(w.a.AccountID, w.a2) != nil {
		t.Error("deleted edge a2 is still served")
	}
	if e := c.Edge(w.a.AccountID, a3); e == nil || len(e.Config.Routes) != 1 {
		t.Errorf("new edge a3: %+v", e)
	}
	if s := c.Stats(); s.Edges != 3 {
		t.Errorf("stats %+v, want 3 edges", s)
	}
}

// TestReadersNotBlockedBySlowRebuild: while an edge compiles (held), its
// readers get the previous snapshot at once.
func TestReadersNotBlockedBySlowRebuild(t *testing.T) {
	w := newWorld(t, memstore.New())
	h := newHooks(w.api.Host())
	c := w.start(w.api.Host(), w.st, h, Options{})
	old := c.Edge(w.a.AccountID, w.a1)
	release := h.holdNext(w.a1)
	defer release()

	w.policy(w.a, w.a1, w.a1r, denyAll)
	<-h.entered
	for range 1000 {
		if e := c.Edge(w.a.AccountID, w.a1); e != old {
			t.Fatalf("during the rebuild Edge returned %p, want the old snapshot %p", e, old)
		}
	}
	if c.Revision() >= w.rev() {
		t.Errorf("revision %d applied before the rebuild ended", c.Revision())
	}
	release()
	w.applied(c)
	if e := c.Edge(w.a.AccountID, w.a1); e == old || e.Config.Routes[0].TrafficPolicy == nil {
		t.Error("the rebuild was not published")
	}
}

// TestStoreFailureKeepsLastGood: while the store cannot be read, the
// snapshots stay, the applied revision holds and the follower backs off
// (doubling); once it answers, the change is applied.
func TestStoreFailureKeepsLastGood(t *testing.T) {
	for _, tc := range []struct {
		name string
		fail func(f *flaky, on bool)
	}{
		{"feed unreadable", func(f *flaky, on bool) { f.feed.Store(on); f.reads.Store(on) }},
		{"records unreadable", func(f *flaky, on bool) { f.reads.Store(on) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := memstore.New()
			w := newWorld(t, mem)
			f := &flaky{Store: mem}
			proxySvc, err := edgeplane.New(f, edgeplane.Options{Clock: w.clock.Now, CacheBytes: -1, AuthCacheTTL: -1})
			if err != nil {
				t.Fatal(err)
			}
			h := newHooks(proxySvc.Host())
			timer := faketimer.New()
			c := w.start(proxySvc.Host(), f, h, Options{After: timer.After})
			old := c.Edge(w.a.AccountID, w.a1)
			applied := c.Revision()

			tc.fail(f, true)
			w.policy(w.a, w.a1, w.a1r, denyAll)
			for i, want := range []time.Duration{MinBackoff, 2 * MinBackoff, 4 * MinBackoff} {
				if d := timer.Next(t, 10*time.Second); d != want {
					t.Errorf("backoff %d: %v, want %v", i, d, want)
				}
				if c.Edge(w.a.AccountID, w.a1) != old || c.Revision() != applied {
					t.Fatal("a failed read replaced the snapshot or moved the revision")
				}
				timer.Fire()
			}
			if got := timer.Next(t, 10*time.Second); got != 8*MinBackoff {
				t.Errorf("backoff 3: %v", got)
			}
			tc.fail(f, false)
			timer.Fire()
			w.applied(c)
			if e := c.Edge(w.a.AccountID, w.a1); e == old || e.Config.Routes[0].TrafficPolicy == nil {
				t.Error("the change was not applied after the store came back")
			}
			if s := c.Stats(); s.Failures < 4 {
				t.Errorf("stats %+v, want at least 4 failures", s)
			}
		})
	}
}

// TestCompactedFeedReloadsEverything: when the feed no longer holds the
// changes after the applied revision, every edge is compiled again and an
// edge deleted meanwhile is removed, while the old snapshots are served.
func TestCompactedFeedReloadsEverything(t *testing.T) {
	mem := memstore.New()
	w := newWorld(t, mem)
	h := newHooks(w.api.Host())
	c := w.start(w.api.Host(), mem, h, Options{})
	release := h.holdNext(w.a1)
	defer release()

	w.policy(w.a, w.a1, w.a1r, denyAll)
	<-h.entered // the follower is busy with this change
	w.check(w.api.DeleteHTTPSEdge(w.ctx, w.a, w.a2))
	w.policy(w.b, w.b1, w.b1r, denyAll)
	w.check(mem.Compact(w.ctx, w.rev()))
	if c.Edge(w.a.AccountID, w.a2) == nil {
		t.Fatal("a2 vanished before the follower saw its deletion")
	}
	before, _ := h.counts()
	release()
	w.applied(c)

	after, _ := h.counts()
	wantCompiles(t, before, after, map[string]int{w.a1: 1, w.b1: 1})
	if c.Edge(w.a.AccountID, w.a2) != nil {
		t.Error("a2, deleted while the feed was compacted, is still served")
	}
	if e := c.Edge(w.b.AccountID, w.b1); e == nil || e.Config.Routes[0].TrafficPolicy == nil {
		t.Error("b1's policy, written while the feed was compacted, was not loaded")
	}
	if s := c.Stats(); s.Reloads != 1 || s.Edges != 2 {
		t.Errorf("stats %+v, want 1 reload and 2 edges", s)
	}
}

// TestWaitsForTheServiceCache: a change made by another process is read
// only once the proxy's Service has dropped what it cached before it, so
// the rebuild never compiles the old document. The proxy's Service's
// cache follower is held at a gate; the follower must ask the Service to
// catch up before it compiles, and compile only once it has.
func TestWaitsForTheServiceCache(t *testing.T) {
	mem := memstore.New()
	w := newWorld(t, mem)
	f := &flaky{Store: mem}
	proxySvc := mustService(edgeplane.New(f, edgeplane.Options{Clock: w.clock.Now})) // record cache on
	t.Cleanup(func() { _ = proxySvc.Close(context.Background()) })
	h := newHooks(proxySvc.Host())
	c := w.start(proxySvc.Host(), mem, h, Options{}) // follows the feed directly
	// The Service's cache is current and holds a1's route.
	ctx, cancel := context.WithTimeout(w.ctx, 10*time.Second)
	defer cancel()
	w.check(proxySvc.Host().WaitRevision(ctx, w.rev()))
	_, err := proxySvc.Host().DataPlane().HTTPSEdgeConfig(w.ctx, w.a.AccountID, w.a1)
	w.check(err)

	gate := make(chan struct{})
	f.gate.Store(&gate)
	var gated atomic.Bool
	gated.Store(true)
	synced, compiledEarly := make(chan int64, 1), make(chan string, 1)
	h.mu.Lock()
	h.onSync = func(rev int64) {
		select {
		case synced <- rev:
		default:
		}
	}
	h.onCompile = func(id string) {
		if gated.Load() {
			select {
			case compiledEarly <- id:
			default:
			}
		}
	}
	h.mu.Unlock()

	w.policy(w.a, w.a1, w.a1r, denyAll) // by another Service: the proxy's cache learns of it from the feed
	select {
	case rev := <-synced:
		if rev < w.rev() {
			t.Errorf("the follower waited for the Service to reach revision %d, want %d", rev, w.rev())
		}
	case id := <-compiledEarly:
		t.Fatalf("edge %s compiled while the proxy's Service cache was behind the change", id)
	case <-ctx.Done():
		t.Fatal("the follower did not apply the change")
	}
	gated.Store(false)
	close(gate)
	w.applied(c)
	if c.Edge(w.a.AccountID, w.a1).Config.Routes[0].TrafficPolicy == nil {
		t.Error("the rebuild read the route as cached before the change")
	}
}

// TestSQLiteOtherProcess: a Configs over one SQLite file follows writes
// made by another Service on its own connection to the file, as another
// process would make them.
func TestSQLiteOtherProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "edgeplane.db")
	open := func() *sqlitestore.Store {
		st, err := sqlitestore.Open(context.Background(), path, sqlitestore.Options{PollInterval: 10 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		return st
	}
	apiStore, proxyStore := open(), open()
	w := newWorld(t, apiStore)
	proxySvc, err := edgeplane.New(proxyStore, edgeplane.Options{Clock: w.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxySvc.Close(context.Background()) })
	h := newHooks(proxySvc.Host())
	c := w.start(proxySvc.Host(), proxyStore, h, Options{})
	if s := c.Stats(); s.Edges != 3 {
		t.Fatalf("stats %+v, want 3 edges", s)
	}
	before, _ := h.counts()

	w.policy(w.a, w.a1, w.a1r, denyAll)
	_, err = w.api.CreateCredential(w.ctx, w.b, credentials.CreateParams{})
	w.check(err)
	w.check(w.api.DeleteHTTPSEdge(w.ctx, w.b, w.b1))
	w.applied(c)

	after, _ := h.counts()
	wantCompiles(t, before, after, map[string]int{w.a1: 1})
	if e := c.Edge(w.a.AccountID, w.a1); e == nil || e.Config.Routes[0].TrafficPolicy == nil {
		t.Error("a1's new policy was not applied")
	}
	if c.Edge(w.b.AccountID, w.b1) != nil {
		t.Error("b1 was deleted by the other process, yet is served")
	}
}

// TestNewFailsWhenTheStoreIsDown: New reports a store that cannot be read
// rather than serving nothing.
func TestNewFailsWhenTheStoreIsDown(t *testing.T) {
	mem := memstore.New()
	w := newWorld(t, mem)
	f := &flaky{Store: mem}
	f.reads.Store(true)
	svc, err := edgeplane.New(f, edgeplane.Options{CacheBytes: -1, AuthCacheTTL: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(w.ctx, svc.Host().DataPlane(), f, Options{}); err == nil {
		t.Fatal("New succeeded on a store that cannot be read")
	}
}

func ptr[T any](v T) *T { return &v }

var _ store.Feed = (*flaky)(nil)

// TestManyEdges: edges beyond one chunk of compiles (and over every
// shard) are all loaded, and all removed when a reload no longer lists
// them.
func TestManyEdges(t *testing.T) {
	mem := memstore.New()
	w := newWorld(t, mem)
	var ids []string
	for range 2*compileChunk + 10 {
		id, _ := w.edge(w.b)
		ids = append(ids, id)
	}
	h := newHooks(w.api.Host())
	c := w.start(w.api.Host(), mem, h, Options{})
	if s := c.Stats(); s.Edges != len(ids)+3 {
		t.Fatalf("stats %+v, want %d edges", s, len(ids)+3)
	}
	for _, id := range ids {
		if c.Edge(w.b.AccountID, id) == nil {
			t.Fatalf("edge %s not loaded", id)
		}
	}
	// Deleting account b's edges while the follower is held, then
	// compacting the feed, makes the follower find them gone by a reload.
	release := h.holdNext(w.a1)
	defer release()
	w.policy(w.a, w.a1, w.a1r, denyAll)
	<-h.entered
	for _, id := range append(ids, w.b1) {
		w.check(w.api.DeleteHTTPSEdge(w.ctx, w.b, id))
	}
	w.check(mem.Compact(w.ctx, w.rev()))
	release()
	w.applied(c)
	if s := c.Stats(); s.Edges != 2 || s.Reloads != 1 {
		t.Fatalf("stats %+v, want 2 edges and 1 reload", s)
	}
	for _, id := range ids {
		if c.Edge(w.b.AccountID, id) != nil {
			t.Fatalf("deleted edge %s still served", id)
		}
	}
}

// TestWaitRevisionAfterClose: waiting for a revision a closed Configs
// will never reach fails at once; one it reached succeeds.
func TestWaitRevisionAfterClose(t *testing.T) {
	w := newWorld(t, memstore.New())
	c := w.start(w.api.Host(), w.st, newHooks(w.api.Host()), Options{})
	c.Close()
	ctx, cancel := context.WithTimeout(w.ctx, 10*time.Second)
	defer cancel()
	if err := c.WaitRevision(ctx, c.Revision()); err != nil {
		t.Errorf("a reached revision: %v", err)
	}
	err := c.WaitRevision(ctx, c.Revision()+1)
	if apierr.CodeOf(err) != apierr.FailedPrecondition {
		t.Errorf("a revision never reached: %v, want failed precondition", err)
	}
}
