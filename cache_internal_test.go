package edgeplane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/credentials"
	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/identity"
	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/store"
)

// cacheEnv is a Service over a memstore with an account and its admin.
type cacheEnv struct {
	ctx   context.Context
	store *memstore.Store
	svc   *Service
	p     Principal
}

func newCacheEnv(t *testing.T, opts Options) *cacheEnv {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	st := memstore.New()
	svc := New(st, opts)
	t.Cleanup(func() { _ = svc.Close(context.Background()) })
	acct, err := svc.createAccount(ctx, AccountParams{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	admin, err := svc.createUser(ctx, acct.ID, SubjectParams{Name: "admin", Admin: true})
	if err != nil {
		t.Fatal(err)
	}
	return &cacheEnv{ctx: ctx, store: st, svc: svc, p: Principal{AccountID: acct.ID, SubjectID: admin.ID, Admin: true}}
}

// synced waits until svc's cache follower has applied every change the
// store has committed.
func synced(t *testing.T, ctx context.Context, svc *Service) {
	t.Helper()
	rev, err := svc.store.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.cacheFollow.waitApplied(ctx, rev); err != nil {
		t.Fatalf("the cache follower did not reach revision %d: %v", rev, err)
	}
}

func cached(s *Service, kind store.Kind, account, id string) bool {
	_, ok := s.cache.get(recordKey{kind, account, id})
	return ok
}

// TestCacheServesReads: a second read of a record is served from the
// cache (the store is not asked), and a write through the Service is seen
// by the next read at once.
func TestCacheServesReads(t *testing.T) {
	e := newCacheEnv(t, Options{})
	synced(t, e.ctx, e.svc)
	c, err := e.svc.CreateCredential(e.ctx, e.p, credentials.CreateParams{Description: "one"})
	if err != nil {
		t.Fatal(err)
	}
	synced(t, e.ctx, e.svc)
	if _, err := e.svc.GetCredential(e.ctx, e.p, c.ID); err != nil {
		t.Fatal(err)
	}
	if !cached(e.svc, KindCredential, e.p.AccountID, c.ID) {
		t.Fatal("a credential read is not cached")
	}
	gets := countGets(e.svc)
	if _, err := e.svc.GetCredential(e.ctx, e.p, c.ID); err != nil {
		t.Fatal(err)
	}
	if n := gets(); n != 0 {
		t.Errorf("a cached read asked the store %d times", n)
	}
	two := "two"
	if _, err := e.svc.UpdateCredential(e.ctx, e.p, c.ID, credentials.UpdateParams{Description: &two}); err != nil {
		t.Fatal(err)
	}
	got, err := e.svc.GetCredential(e.ctx, e.p, c.ID)
	if err != nil || got.Description != "two" {
		t.Fatalf("read after update: %+v, %v; want description two", got, err)
	}
	if err := e.svc.DeleteCredential(e.ctx, e.p, c.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.GetCredential(e.ctx, e.p, c.ID); !errors.Is(err, apierr.ErrNotFound) {
		t.Fatalf("read after delete: %v, want not found", err)
	}
}

// countGets wraps the Service's store to count Get calls from now on; the
// returned func reports the count.
func countGets(s *Service) func() int {
	cs := &countingStore{Store: s.store}
	s.store = cs
	return func() int { return int(cs.gets) }
}

type countingStore struct {
	store.Store
	gets int64
}

func (c *countingStore) Get(ctx context.Context, kind store.Kind, accountID, id string) (store.Record, error) {
	c.gets++
	return c.Store.Get(ctx, kind, accountID, id)
}

// TestCacheCascade: deleting an edge through the Service makes its cached
// routes unreadable at once, before any feed is followed.
func TestCacheCascade(t *testing.T) {
	e := newCacheEnv(t, Options{})
	synced(t, e.ctx, e.svc)
	edge, err := e.svc.CreateHTTPSEdge(e.ctx, e.p, edges.CreateEdgeParams{})
	if err != nil {
		t.Fatal(err)
	}
	route, err := e.svc.CreateHTTPSEdgeRoute(e.ctx, e.p, edge.ID, edges.CreateRouteParams{MatchType: edges.MatchPathPrefix, Match: "/"})
	if err != nil {
		t.Fatal(err)
	}
	synced(t, e.ctx, e.svc)
	e.svc.cacheFollow.stop() // no help from the feed from here on
	<-e.svc.cacheFollow.done
	e.svc.cache.ready.Store(true)
	if _, err := e.svc.GetHTTPSEdgeRoute(e.ctx, e.p, edge.ID, route.ID); err != nil {
		t.Fatal(err)
	}
	if !cached(e.svc, KindHTTPSEdgeRoute, e.p.AccountID, route.ID) {
		t.Fatal("a route read is not cached")
	}
	if err := e.svc.DeleteHTTPSEdge(e.ctx, e.p, edge.ID); err != nil {
		t.Fatal(err)
	}
	if cached(e.svc, KindHTTPSEdgeRoute, e.p.AccountID, route.ID) {
		t.Error("a route deleted with its edge is still cached")
	}
	if _, err := e.svc.GetHTTPSEdgeRoute(e.ctx, e.p, edge.ID, route.ID); !errors.Is(err, apierr.ErrNotFound) {
		t.Errorf("route after its edge was deleted: %v, want not found", err)
	}
}

// TestCacheFollowsOtherWriters: two Services share a store (two replicas);
// what one writes, the other reads once its follower has applied the
// change, also for a record it had cached and for API keys it had
// authenticated.
func TestCacheFollowsOtherWriters(t *testing.T) {
	a := newCacheEnv(t, Options{})
	b := New(a.store, Options{})
	t.Cleanup(func() { _ = b.Close(context.Background()) })
	synced(t, a.ctx, a.svc)
	synced(t, a.ctx, b)
	c, err := a.svc.CreateCredential(a.ctx, a.p, credentials.CreateParams{Description: "one"})
	if err != nil {
		t.Fatal(err)
	}
	synced(t, a.ctx, b)
	if _, err := b.GetCredential(a.ctx, a.p, c.ID); err != nil {
		t.Fatal(err)
	}
	if !cached(b, KindCredential, a.p.AccountID, c.ID) {
		t.Fatal("not cached")
	}
	key, err := a.svc.createAPIKey(a.ctx, a.p.AccountID, APIKeyParams{OwnerID: a.p.SubjectID})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Authenticate(a.ctx, *key.Token); err != nil {
		t.Fatal(err)
	}
	two := "two"
	if _, err := a.svc.UpdateCredential(a.ctx, a.p, c.ID, credentials.UpdateParams{Description: &two}); err != nil {
		t.Fatal(err)
	}
	if err := a.svc.deleteAPIKey(a.ctx, a.p.AccountID, key.ID); err != nil {
		t.Fatal(err)
	}
	synced(t, a.ctx, b)
	got, err := b.GetCredential(a.ctx, a.p, c.ID)
	if err != nil || got.Description != "two" {
		t.Errorf("replica read after the other's update: %+v, %v; want description two", got, err)
	}
	if _, err := b.Authenticate(a.ctx, *key.Token); !errors.Is(err, apierr.ErrUnauthenticated) {
		t.Errorf("a key revoked through the other replica still authenticates: %v", err)
	}
}

// TestCacheNoStaleFill: a value read before an invalidation is never
// cached after it, for the record itself and for a child whose parent was
// deleted.
func TestCacheNoStaleFill(t *testing.T) {
	c := newRecordCache(0)
	c.ready.Store(true)
	rec := store.Record{Kind: KindCredential, AccountID: "a", ID: "cr_1", Data: []byte(`{}`)}
	t1 := c.note()
	c.invalidate(recordKey{rec.Kind, rec.AccountID, rec.ID}, false)
	c.put(t1, rec, "old")
	if _, ok := c.get(recordKey{rec.Kind, rec.AccountID, rec.ID}); ok {
		t.Error("a value read before an update's invalidation was cached")
	}
	child := store.Record{Kind: KindHTTPSEdgeRoute, AccountID: "a", ID: "edghtsrt_1", ParentID: "edghts_1", Data: []byte(`{}`)}
	t2 := c.note()
	c.put(t2, child, "route")
	c.invalidate(recordKey{KindHTTPSEdge, "a", "edghts_1"}, true)
	if _, ok := c.get(recordKey{child.Kind, child.AccountID, child.ID}); ok {
		t.Error("a child is cached after its parent's delete")
	}
	t3 := c.note()
	c.invalidate(recordKey{KindHTTPSEdge, "a", "edghts_2"}, true)
	child.ID, child.ParentID = "edghtsrt_2", "edghts_2"
	c.put(t3, child, "route")
	if _, ok := c.get(recordKey{child.Kind, child.AccountID, child.ID}); ok {
		t.Error("a child read before its parent's delete was cached after it")
	}
}

// TestCacheBounded: the cache never holds more than its bytes, and its
// index of children never more than its bound.
func TestCacheBounded(t *testing.T) {
	const limit = 64 << 10
	c := newRecordCache(limit)
	c.ready.Store(true)
	data := make([]byte, 300)
	for i := range 10_000 {
		rec := store.Record{Kind: KindCredential, AccountID: "a", ID: fmt.Sprint("r", i), Data: data}
		c.put(c.note(), rec, i)
		if i%2 == 0 {
			rec := store.Record{Kind: KindHTTPSEdgeRoute, AccountID: "a", ID: fmt.Sprint("r", i), ParentID: fmt.Sprint("e", i), Data: data}
			c.put(c.note(), rec, i)
		}
		total, n := 0, 0
		for i := range c.shards {
			total += c.shards[i].bytes
			for _, e := range c.shards[i].m {
				r := e.rec
				r.Data = data // what the entry was made of: it keeps no Data
				n += entrySize(r)
			}
		}
		if total > limit || n != total {
			t.Fatalf("after %d puts the cache holds %d bytes (%d counted from its entries), limit %d", i+1, n, total, limit)
		}
	}
	if c.nowKids > c.maxKids || len(c.byKids) > c.maxKids {
		t.Errorf("children index holds %d (%d parents), bound %d", c.nowKids, len(c.byKids), c.maxKids)
	}
}

// TestCacheOff: with CacheBytes negative nothing is cached and reads
// still work.
func TestCacheOff(t *testing.T) {
	e := newCacheEnv(t, Options{CacheBytes: -1})
	c, err := e.svc.CreateCredential(e.ctx, e.p, credentials.CreateParams{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.GetCredential(e.ctx, e.p, c.ID); err != nil {
		t.Fatal(err)
	}
	if e.svc.cache != nil || cached(e.svc, KindCredential, e.p.AccountID, c.ID) {
		t.Error("the cache is on")
	}
}

// TestAuthRevokedAtOnce: with no help from the change feed (its follower
// stopped), a key deleted through the Service and a bot deactivated
// through it stop authenticating on this Service at once.
func TestAuthRevokedAtOnce(t *testing.T) {
	e := newCacheEnv(t, Options{})
	synced(t, e.ctx, e.svc)
	e.svc.stopCache()
	bot, err := e.svc.CreateBotUser(e.ctx, e.p, identity.CreateBotUserParams{Name: "b"})
	if err != nil {
		t.Fatal(err)
	}
	botKey, err := e.svc.CreateAPIKey(e.ctx, e.p, identity.CreateAPIKeyParams{OwnerID: bot.ID})
	if err != nil {
		t.Fatal(err)
	}
	userKey, err := e.svc.CreateAPIKey(e.ctx, e.p, identity.CreateAPIKeyParams{})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []*identity.APIKey{botKey, userKey} {
		if _, err := e.svc.Authenticate(e.ctx, *k.Token); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.svc.DeleteAPIKey(e.ctx, e.p, userKey.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Authenticate(e.ctx, *userKey.Token); !errors.Is(err, apierr.ErrUnauthenticated) {
		t.Errorf("a key deleted through this Service: %v", err)
	}
	off := false
	if _, err := e.svc.UpdateBotUser(e.ctx, e.p, bot.ID, identity.UpdateBotUserParams{Active: &off}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Authenticate(e.ctx, *botKey.Token); !errors.Is(err, apierr.ErrUnauthenticated) {
		t.Errorf("a key of a bot deactivated through this Service: %v", err)
	}
}

// TestCacheFollowerStopsWithAnUnclosedService: a Service dropped without
// Close is collected, and its cache follower goroutine ends with it.
func TestCacheFollowerStopsWithAnUnclosedService(t *testing.T) {
	done := func() <-chan struct{} {
		svc := New(memstore.New(), Options{})
		return svc.cacheFollow.done
	}()
	for range 100 {
		runtime.GC()
		select {
		case <-done:
			return
		default:
			runtime.Gosched()
		}
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the cache follower of a collected Service is still running")
	}
}

// encodedPage lists svc's credentials with ItemsAsJSON and returns the
// items' JSON.
func encodedPage(t *testing.T, ctx context.Context, svc *Service, p Principal) string {
	t.Helper()
	page, err := svc.ListCredentials(ctx, p, ListOptions{ItemsAsJSON: true})
	if err != nil {
		t.Fatal(err)
	}
	if !page.Encoded() {
		t.Fatal("the credentials' page is not encoded")
	}
	b, err := page.AppendItemsJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// valuesPage lists svc's credentials as values and returns their JSON.
func valuesPage(t *testing.T, ctx context.Context, svc *Service, p Principal) string {
	t.Helper()
	page, err := svc.ListCredentials(ctx, p, ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(page.Items)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestCacheListedJSON: a list answered as JSON caches each item's
// encoding with its record and reuses it; an encoding cached for another
// version of a record is never served for this one; a write through
// another replica is seen by the next list once the feed shows it.
func TestCacheListedJSON(t *testing.T) {
	a := newCacheEnv(t, Options{})
	b := New(a.store, Options{})
	t.Cleanup(func() { _ = b.Close(context.Background()) })
	var ids []string
	for _, d := range []string{"one", "<two> & \u2028", "three"} {
		c, err := a.svc.CreateCredential(a.ctx, a.p, credentials.CreateParams{Description: d, ACL: []string{"bind:x.example.com"}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, c.ID)
	}
	synced(t, a.ctx, a.svc)
	synced(t, a.ctx, b)
	want := valuesPage(t, a.ctx, b, a.p)
	if got := encodedPage(t, a.ctx, b, a.p); got != want {
		t.Fatalf("encoded page\n%s\nvalues\n%s", got, want)
	}
	e, ok := b.cache.get(recordKey{KindCredential, a.p.AccountID, ids[0]})
	if !ok || e.json.Load() == nil {
		t.Fatal("a listed credential's encoding is not cached")
	}
	// An entry of an older version, with an encoding of its own, must not
	// answer for the stored version.
	rec, err := a.store.Get(a.ctx, KindCredential, a.p.AccountID, ids[0])
	if err != nil {
		t.Fatal(err)
	}
	old := rec
	old.Version--
	stale := b.cache.put(b.cache.note(), old, e.doc)
	b.cache.setJSON(stale, []byte(`{"stale":true}`))
	if got := encodedPage(t, a.ctx, b, a.p); got != want {
		t.Errorf("with an older version cached: encoded page\n%s\nwant\n%s", got, want)
	}
	if e, ok := b.cache.get(recordKey{KindCredential, a.p.AccountID, ids[0]}); !ok || e.rec.Version != rec.Version || e.json.Load() == nil {
		t.Error("the list did not cache the stored version's encoding in place of the older one")
	}
	// A write through the other replica.
	two := "renamed"
	if _, err := a.svc.UpdateCredential(a.ctx, a.p, ids[1], credentials.UpdateParams{Description: &two}); err != nil {
		t.Fatal(err)
	}
	synced(t, a.ctx, b)
	want = valuesPage(t, a.ctx, a.svc, a.p)
	if got := encodedPage(t, a.ctx, b, a.p); got != want || !strings.Contains(got, `"renamed"`) {
		t.Errorf("after an update through the other replica: encoded page\n%s\nwant\n%s", got, want)
	}
}

// TestCacheListedJSONConcurrentWrites: lists answered as JSON while
// updates run (through this Service and through another) end showing the
// last values: no encoding of an overwritten version stays cached.
func TestCacheListedJSONConcurrentWrites(t *testing.T) {
	a := newCacheEnv(t, Options{})
	b := New(a.store, Options{})
	t.Cleanup(func() { _ = b.Close(context.Background()) })
	var ids []string
	for range 5 {
		c, err := a.svc.CreateCredential(a.ctx, a.p, credentials.CreateParams{})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, c.ID)
	}
	done := make(chan struct{})
	errs := make(chan error, 4)
	for w, svc := range []*Service{a.svc, b} {
		go func() {
			for i := range 200 {
				d := fmt.Sprint("w", w, "-", i)
				if _, err := svc.UpdateCredential(a.ctx, a.p, ids[i%len(ids)], credentials.UpdateParams{Description: &d}); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for _, svc := range []*Service{a.svc, b} {
		go func() {
			for {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				if _, err := svc.ListCredentials(a.ctx, a.p, ListOptions{ItemsAsJSON: true}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	writersThenReaders(t, errs, done, 2, 2)
	synced(t, a.ctx, a.svc)
	synced(t, a.ctx, b)
	want := valuesPage(t, a.ctx, New(a.store, Options{CacheBytes: -1}), a.p)
	for name, svc := range map[string]*Service{"writer": a.svc, "other replica": b} {
		if got := encodedPage(t, a.ctx, svc, a.p); got != want {
			t.Errorf("%s: encoded page\n%s\nstore\n%s", name, got, want)
		}
	}
}

// TestCacheBoundedWithJSON: encodings count in the cache's bytes, which
// stay within the bound and equal the sum of the entries' sizes.
func TestCacheBoundedWithJSON(t *testing.T) {
	const limit = 64 << 10
	c := newRecordCache(limit)
	c.ready.Store(true)
	data, enc := make([]byte, 300), make([]byte, 500)
	for i := range 5_000 {
		rec := store.Record{Kind: KindCredential, AccountID: "a", ID: fmt.Sprint("r", i), Data: data}
		c.setJSON(c.put(c.note(), rec, i), enc)
		if i%3 == 0 { // a second encoding of an entry is not counted again
			if e, ok := c.get(recordKey{rec.Kind, rec.AccountID, rec.ID}); ok {
				c.setJSON(e, enc)
			}
		}
		total, sum := 0, 0
		for i := range c.shards {
			total += c.shards[i].bytes
			for _, e := range c.shards[i].m {
				sum += e.size
				r := e.rec
				r.Data = data
				if want := entrySize(r) + len(enc); e.json.Load() != nil && e.size != want {
					t.Fatalf("an entry with an encoding counts %d bytes, want %d", e.size, want)
				}
			}
		}
		if total > limit || sum != total {
			t.Fatalf("after %d puts the cache counts %d bytes (its entries %d), limit %d", i+1, total, sum, limit)
		}
	}
	// An encoding of an entry invalidated meanwhile is not counted.
	rec := store.Record{Kind: KindCredential, AccountID: "a", ID: "gone", Data: data}
	e := c.put(c.note(), rec, 0)
	sh := c.shard(recordKey{rec.Kind, rec.AccountID, rec.ID})
	c.invalidate(recordKey{rec.Kind, rec.AccountID, rec.ID}, false)
	before := sh.bytes
	if c.setJSON(e, enc); sh.bytes != before {
		t.Errorf("an invalidated entry's encoding changed its shard's bytes from %d to %d", before, sh.bytes)
	}
}

// TestCacheAppendJSON: AppendCredentialJSON answers what encoding/json
// makes of GetCredential's result, on a miss, on a hit (from the cached
// encoding), after an update through this Service and after one through
// another replica, and fails as GetCredential does; with the cache off it
// answers the same.
func TestCacheAppendJSON(t *testing.T) {
	a := newCacheEnv(t, Options{})
	b := New(a.store, Options{})
	t.Cleanup(func() { _ = b.Close(context.Background()) })
	off := New(a.store, Options{CacheBytes: -1})
	c, err := a.svc.CreateCredential(a.ctx, a.p, credentials.CreateParams{Description: "<one> & \u2028", ACL: []string{"bind:x.example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	synced(t, a.ctx, a.svc)
	synced(t, a.ctx, b)
	check := func(when string, svc *Service) {
		t.Helper()
		v, err := svc.GetCredential(a.ctx, a.p, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(v)
		for i := range 2 {
			got, err := svc.AppendCredentialJSON(a.ctx, a.p, c.ID, []byte("prefix:"))
			if err != nil || string(got) != "prefix:"+string(want) {
				t.Errorf("%s (read %d): %s, %v; want prefix:%s", when, i, got, err, want)
			}
		}
	}
	check("first reads", a.svc)
	if e, ok := a.svc.cache.get(recordKey{KindCredential, a.p.AccountID, c.ID}); !ok || e.json.Load() == nil {
		t.Error("the credential's encoding is not cached")
	}
	two := "two"
	if _, err := a.svc.UpdateCredential(a.ctx, a.p, c.ID, credentials.UpdateParams{Description: &two}); err != nil {
		t.Fatal(err)
	}
	check("after an update", a.svc)
	check("on the other replica, before it reads", b)
	three := "three"
	if _, err := a.svc.UpdateCredential(a.ctx, a.p, c.ID, credentials.UpdateParams{Description: &three}); err != nil {
		t.Fatal(err)
	}
	synced(t, a.ctx, b)
	check("on the other replica after an update through the first", b)
	if got, _ := b.AppendCredentialJSON(a.ctx, a.p, c.ID, nil); !strings.Contains(string(got), `"three"`) {
		t.Errorf("the other replica answers %s", got)
	}
	check("with the cache off", off)
	acct, err := a.svc.createAccount(a.ctx, AccountParams{Name: "b"})
	if err != nil {
		t.Fatal(err)
	}
	admin, err := a.svc.createUser(a.ctx, acct.ID, SubjectParams{Name: "admin", Admin: true})
	if err != nil {
		t.Fatal(err)
	}
	other := Principal{AccountID: acct.ID, SubjectID: admin.ID, Admin: true}
	for name, tc := range map[string]struct {
		p  Principal
		id string
	}{
		"missing": {a.p, "cr_" + strings.Repeat("0", len(c.ID)-3)}, "malformed": {a.p, "x"}, "another account": {other, c.ID},
		"no principal": {Principal{}, c.ID},
	} {
		_, wantErr := a.svc.GetCredential(a.ctx, tc.p, tc.id)
		got, err := a.svc.AppendCredentialJSON(a.ctx, tc.p, tc.id, nil)
		if wantErr == nil || err == nil || apierr.CodeOf(err) != apierr.CodeOf(wantErr) || err.Error() != wantErr.Error() || len(got) != 0 {
			t.Errorf("%s: %q, %v; want GetCredential's error %v", name, got, err, wantErr)
		}
	}
}

// TestCacheKeyedByRecord: the cache is indexed by ID, but an entry
// answers only for its own kind and account: a read naming the same ID
// in another account or as another kind misses.
func TestCacheKeyedByRecord(t *testing.T) {
	c := newRecordCache(0)
	c.ready.Store(true)
	rec := store.Record{Kind: KindCredential, AccountID: "a", ID: "cr_1", Data: []byte(`{}`)}
	c.put(c.note(), rec, "doc")
	if _, ok := c.get(recordKey{KindCredential, "a", "cr_1"}); !ok {
		t.Fatal("the entry is not cached")
	}
	for _, k := range []recordKey{{KindCredential, "b", "cr_1"}, {KindAPIKey, "a", "cr_1"}} {
		if e, ok := c.get(k); ok {
			t.Errorf("get(%+v) answered with the entry of %s/%s/%s", k, e.rec.Kind, e.rec.AccountID, e.rec.ID)
		}
	}
}

// TestCacheWriteFills: an update through the Service caches the version
// it wrote, which the next read is served from (the store is not asked)
// and the follower keeps when it applies that very change; a change of
// the record through another replica still replaces it.
func TestCacheWriteFills(t *testing.T) {
	a := newCacheEnv(t, Options{})
	b := New(a.store, Options{})
	t.Cleanup(func() { _ = b.Close(context.Background()) })
	synced(t, a.ctx, a.svc)
	c, err := a.svc.CreateCredential(a.ctx, a.p, credentials.CreateParams{Description: "one", ACL: []string{"bind:a.example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	// A fill is refused when the follower applies a change between the
	// write and the fill (the update's own, too): a few tries.
	var (
		e      *cacheEntry
		ok     bool
		stored store.Record
	)
	for try := 0; try < 20 && !(ok && e.rec.Version == stored.Version); try++ {
		d := fmt.Sprint("two-", try)
		if _, err := a.svc.UpdateCredential(a.ctx, a.p, c.ID, credentials.UpdateParams{Description: &d}); err != nil {
			t.Fatal(err)
		}
		var err error
		if stored, err = a.store.Get(a.ctx, KindCredential, a.p.AccountID, c.ID); err != nil {
			t.Fatal(err)
		}
		e, ok = a.svc.cache.get(recordKey{KindCredential, a.p.AccountID, c.ID})
	}
	if !ok || e.rec.Version != stored.Version {
		t.Fatalf("after an update the cache holds %v (version %d); want the stored version %d", ok, versionOf(e), stored.Version)
	}
	synced(t, a.ctx, a.svc) // the follower applies the update it wrote
	if !cached(a.svc, KindCredential, a.p.AccountID, c.ID) {
		t.Error("the follower dropped the version its own Service wrote")
	}
	uncached := New(a.store, Options{CacheBytes: -1})
	want, err := uncached.GetCredential(a.ctx, a.p, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	gets := countGets(a.svc)
	got, err := a.svc.GetCredential(a.ctx, a.p, c.ID)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("read after an update: %+v, %v; want %+v", got, err, want)
	}
	wantJSON, _ := json.Marshal(want)
	if b, err := a.svc.AppendCredentialJSON(a.ctx, a.p, c.ID, nil); err != nil || string(b) != string(wantJSON) {
		t.Errorf("JSON after an update: %s, %v; want %s", b, err, wantJSON)
	}
	if n := gets(); n != 0 {
		t.Errorf("reads after an update asked the store %d times", n)
	}
	three := "three"
	if _, err := b.UpdateCredential(a.ctx, a.p, c.ID, credentials.UpdateParams{Description: &three}); err != nil {
		t.Fatal(err)
	}
	synced(t, a.ctx, a.svc)
	if got, err := a.svc.GetCredential(a.ctx, a.p, c.ID); err != nil || got.Description != "three" {
		t.Errorf("read after the other replica's update: %+v, %v; want description three", got, err)
	}
}

func versionOf(e *cacheEntry) int64 {
	if e == nil {
		return 0
	}
	return e.rec.Version
}

// TestCacheWriteFillRaces: a write's fill is refused when any other
// invalidation came between the note before the write and the fill; the
// follower keeps an entry at or after a change's revision, drops an older
// one, and drops any on a delete; each change it applies fails the fills
// read before it.
func TestCacheWriteFillRaces(t *testing.T) {
	c := newRecordCache(0)
	c.ready.Store(true)
	k := recordKey{KindCredential, "a", "cr_1"}
	rec := store.Record{Kind: k.kind, AccountID: k.account, ID: k.id, Version: 5, Data: []byte(`{}`)}
	held := func() int64 {
		e, ok := c.get(k)
		if !ok {
			return 0
		}
		return e.rec.Version
	}

	t1 := c.note()
	c.invalidate(k, false) // the write's own
	c.putWritten(t1, rec, "v5")
	if held() != 5 {
		t.Fatal("a write's fill with no other invalidation was not cached")
	}
	t2 := c.note()
	c.invalidate(k, false)                                      // the write's own
	c.invalidate(recordKey{KindCredential, "a", "cr_2"}, false) // another write
	rec.Version = 6
	c.putWritten(t2, rec, "v6")
	if held() != 0 {
		t.Error("a write's fill was cached after another invalidation")
	}

	rec.Version = 5
	c.put(c.note(), rec, "v5")
	before := c.note()
	c.applyChange(store.Change{Revision: 5, Op: store.OpUpdate, Kind: k.kind, AccountID: k.account, ID: k.id})
	if held() != 5 {
		t.Error("the follower dropped an entry at the change's revision")
	}
	if c.put(before, rec, "v4") != nil {
		t.Error("a fill read before a change the follower applied was cached")
	}
	c.applyChange(store.Change{Revision: 7, Op: store.OpUpdate, Kind: k.kind, AccountID: k.account, ID: k.id})
	if held() != 0 {
		t.Error("the follower kept an entry older than a change")
	}
	rec.Version = 8
	c.put(c.note(), rec, "v8")
	child := store.Record{Kind: KindHTTPSEdgeRoute, AccountID: "a", ID: "edghtsrt_1", ParentID: k.id, Version: 10, Data: []byte(`{}`)}
	c.put(c.note(), child, "route")
	c.applyChange(store.Change{Revision: 11, Op: store.OpDelete, Kind: k.kind, AccountID: k.account, ID: k.id})
	if held() != 0 {
		t.Error("the follower kept an entry of a deleted record")
	}
	if _, ok := c.get(recordKey{child.Kind, child.AccountID, child.ID}); ok {
		t.Error("the follower kept a child of a deleted record")
	}
}

// TestCacheWritesAndReadsConcurrent: updates through two replicas, with
// reads (models and JSON) through both meanwhile, end with both serving
// the stored values.
func TestCacheWritesAndReadsConcurrent(t *testing.T) {
	a := newCacheEnv(t, Options{})
	b := New(a.store, Options{})
	t.Cleanup(func() { _ = b.Close(context.Background()) })
	var ids []string
	for range 3 {
		c, err := a.svc.CreateCredential(a.ctx, a.p, credentials.CreateParams{ACL: []string{"bind:x.example.com"}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, c.ID)
	}
	done := make(chan struct{})
	errs := make(chan error, 4)
	for w, svc := range []*Service{a.svc, b} {
		go func() {
			for i := range 300 {
				d := fmt.Sprint("w", w, "-", i)
				acl := []string{fmt.Sprintf("bind:w%d-%d.example.com", w, i)}
				if _, err := svc.UpdateCredential(a.ctx, a.p, ids[i%len(ids)], credentials.UpdateParams{Description: &d, ACL: &acl}); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for _, svc := range []*Service{a.svc, b} {
		go func() {
			for i := 0; ; i++ {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				id := ids[i%len(ids)]
				if _, err := svc.GetCredential(a.ctx, a.p, id); err != nil {
					errs <- err
					return
				}
				if _, err := svc.AppendCredentialJSON(a.ctx, a.p, id, nil); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	writersThenReaders(t, errs, done, 2, 2)
	synced(t, a.ctx, a.svc)
	synced(t, a.ctx, b)
	uncached := New(a.store, Options{CacheBytes: -1})
	for _, id := range ids {
		want, err := uncached.GetCredential(a.ctx, a.p, id)
		if err != nil {
			t.Fatal(err)
		}
		wantJSON, _ := json.Marshal(want)
		for name, svc := range map[string]*Service{"writer a": a.svc, "writer b": b} {
			got, err := svc.GetCredential(a.ctx, a.p, id)
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("%s: %+v, %v; store has %+v", name, got, err, want)
			}
			if j, err := svc.AppendCredentialJSON(a.ctx, a.p, id, nil); err != nil || string(j) != string(wantJSON) {
				t.Errorf("%s: JSON %s, %v; store has %s", name, j, err, wantJSON)
			}
		}
	}
}

// writersThenReaders waits for writers results on errs, then closes done
// (the readers' signal to stop) and waits for readers more; the first
// error fails the test, and done is closed then too, so that no reader
// outlives the test.
func writersThenReaders(t *testing.T, errs <-chan error, done chan struct{}, writers, readers int) {
	t.Helper()
	stop := sync.OnceFunc(func() { close(done) })
	defer stop()
	for range writers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	stop()
	for range readers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// TestEntrySize: an entry counts its document twice (decoded, and in the
// record as stored, which memstore's strings share) and every string of
// the record it keeps.
func TestEntrySize(t *testing.T) {
	base := store.Record{Kind: KindCredential, AccountID: "acct", ID: "cr_1", Data: make([]byte, 100)}
	for _, tc := range []struct {
		name string
		rec  func(store.Record) store.Record
		want int
	}{
		{"bare", func(r store.Record) store.Record { return r }, 2*100 + len(KindCredential) + len("acct") + cacheEntryOverhead},
		{"parent", func(r store.Record) store.Record { r.ParentID = "edghts_1"; return r }, 2*100 + len(KindCredential) + len("acct") + len("edghts_1") + cacheEntryOverhead},
		{"keys and refs", func(r store.Record) store.Record {
			r.Keys, r.Refs = []string{"k1", "key2"}, []string{"usr_1"}
			return r
		},
			2*100 + len(KindCredential) + len("acct") + len("k1key2") + len("usr_1") + cacheEntryOverhead},
		{"index entries", func(r store.Record) store.Record {
			r.Indexes = []store.IndexEntry{{Name: "label", Value: "env=prod"}}
			return r
		}, 2*100 + len(KindCredential) + len("acct") + len("label") + len("env=prod") + cacheEntryOverhead},
	} {
		if got := entrySize(tc.rec(base)); got != tc.want {
			t.Errorf("%s: entrySize = %d, want %d", tc.name, got, tc.want)
		}
	}
}
