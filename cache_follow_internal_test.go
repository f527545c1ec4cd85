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
	"github.com/edgeplane/edgeplane/internal/recordcache"
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
	svc, err := New(st, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Close(context.Background()) })
	acct, err := svc.createAccount(ctx, identity.AccountParams{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	admin, err := svc.createUser(ctx, acct.ID, identity.SubjectParams{Name: "admin", Admin: true})
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
	if err := svc.cacheFollow.WaitApplied(ctx, rev); err != nil {
		t.Fatalf("the cache follower did not reach revision %d: %v", rev, err)
	}
}

func cached(s *Service, kind store.Kind, account, id string) bool {
	_, ok := s.cache.Get(recordcache.Key{Kind: kind, Account: account, ID: id})
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
	e.svc.cacheFollow.Stop() // no help from the feed from here on
	<-e.svc.cacheFollow.Done()
	e.svc.cache.SetReady()
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
	b, err := New(a.store, Options{})
	if err != nil {
		t.Fatal(err)
	}
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
	key, err := a.svc.createAPIKey(a.ctx, a.p.AccountID, identity.CreateAPIKeyParams{OwnerID: a.p.SubjectID})
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
		svc, err := New(memstore.New(), Options{})
		if err != nil {
			t.Fatal(err)
		}
		return svc.cacheFollow.Done()
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

// encodedPage lists svc's credentials through its Transport and returns
// the items' JSON.
func encodedPage(t *testing.T, ctx context.Context, svc *Service, p Principal) string {
	t.Helper()
	page, err := svc.Transport().ListCredentials(ctx, p, ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return string(page.AppendItemsJSON(nil))
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
	b, err := New(a.store, Options{})
	if err != nil {
		t.Fatal(err)
	}
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
	e, ok := b.cache.Get(recordcache.Key{Kind: KindCredential, Account: a.p.AccountID, ID: ids[0]})
	if !ok || e.JSON() == nil {
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
	stale := b.cache.Put(b.cache.Note(), old, e.Doc)
	b.cache.SetJSON(stale, []byte(`{"stale":true}`))
	if got := encodedPage(t, a.ctx, b, a.p); got != want {
		t.Errorf("with an older version cached: encoded page\n%s\nwant\n%s", got, want)
	}
	if e, ok := b.cache.Get(recordcache.Key{Kind: KindCredential, Account: a.p.AccountID, ID: ids[0]}); !ok || e.Rec.Version != rec.Version || e.JSON() == nil {
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
	b, err := New(a.store, Options{})
	if err != nil {
		t.Fatal(err)
	}
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
				if _, err := svc.Transport().ListCredentials(a.ctx, a.p, ListOptions{}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	writersThenReaders(t, errs, done, 2, 2)
	synced(t, a.ctx, a.svc)
	synced(t, a.ctx, b)
	want := valuesPage(t, a.ctx, mustService(New(a.store, Options{CacheBytes: -1})), a.p)
	for name, svc := range map[string]*Service{"writer": a.svc, "other replica": b} {
		if got := encodedPage(t, a.ctx, svc, a.p); got != want {
			t.Errorf("%s: encoded page\n%s\nstore\n%s", name, got, want)
		}
	}
}

// TestCacheAppendJSON: AppendCredentialJSON answers what encoding/json
// makes of GetCredential's result, on a miss, on a hit (from the cached
// encoding), after an update through this Service and after one through
// another replica, and fails as GetCredential does; with the cache off it
// answers the same.
func TestCacheAppendJSON(t *testing.T) {
	a := newCacheEnv(t, Options{})
	b, err := New(a.store, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close(context.Background()) })
	off, err := New(a.store, Options{CacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
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
			got, err := svc.Transport().AppendCredentialJSON(a.ctx, a.p, c.ID, []byte("prefix:"))
			if err != nil || string(got) != "prefix:"+string(want) {
				t.Errorf("%s (read %d): %s, %v; want prefix:%s", when, i, got, err, want)
			}
		}
	}
	check("first reads", a.svc)
	if e, ok := a.svc.cache.Get(recordcache.Key{Kind: KindCredential, Account: a.p.AccountID, ID: c.ID}); !ok || e.JSON() == nil {
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
	if got, _ := b.Transport().AppendCredentialJSON(a.ctx, a.p, c.ID, nil); !strings.Contains(string(got), `"three"`) {
		t.Errorf("the other replica answers %s", got)
	}
	check("with the cache off", off)
	acct, err := a.svc.createAccount(a.ctx, identity.AccountParams{Name: "b"})
	if err != nil {
		t.Fatal(err)
	}
	admin, err := a.svc.createUser(a.ctx, acct.ID, identity.SubjectParams{Name: "admin", Admin: true})
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
		got, err := a.svc.Transport().AppendCredentialJSON(a.ctx, tc.p, tc.id, nil)
		if wantErr == nil || err == nil || apierr.CodeOf(err) != apierr.CodeOf(wantErr) || err.Error() != wantErr.Error() || len(got) != 0 {
			t.Errorf("%s: %q, %v; want GetCredential's error %v", name, got, err, wantErr)
		}
	}
}

// TestCacheWriteFills: an update through the Service caches the version
// it wrote, which the next read is served from (the store is not asked)
// and the follower keeps when it applies that very change; a change of
// the record through another replica still replaces it.
func TestCacheWriteFills(t *testing.T) {
	a := newCacheEnv(t, Options{})
	b, err := New(a.store, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close(context.Background()) })
	synced(t, a.ctx, a.svc)
	c, err := a.svc.CreateCredential(a.ctx, a.p, credentials.CreateParams{Description: "one", ACL: []string{"bind:a.example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	// A fill is refused when the follower applies a change between the
	// write and the fill (the update's own, too): a few tries.
	var (
		e      *recordcache.Entry
		ok     bool
		stored store.Record
	)
	for try := 0; try < 20 && !(ok && e.Rec.Version == stored.Version); try++ {
		d := fmt.Sprint("two-", try)
		if _, err := a.svc.UpdateCredential(a.ctx, a.p, c.ID, credentials.UpdateParams{Description: &d}); err != nil {
			t.Fatal(err)
		}
		var err error
		if stored, err = a.store.Get(a.ctx, KindCredential, a.p.AccountID, c.ID); err != nil {
			t.Fatal(err)
		}
		e, ok = a.svc.cache.Get(recordcache.Key{Kind: KindCredential, Account: a.p.AccountID, ID: c.ID})
	}
	if !ok || e.Rec.Version != stored.Version {
		t.Fatalf("after an update the cache holds %v (version %d); want the stored version %d", ok, versionOf(e), stored.Version)
	}
	synced(t, a.ctx, a.svc) // the follower applies the update it wrote
	if !cached(a.svc, KindCredential, a.p.AccountID, c.ID) {
		t.Error("the follower dropped the version its own Service wrote")
	}
	uncached, err := New(a.store, Options{CacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
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
	if b, err := a.svc.Transport().AppendCredentialJSON(a.ctx, a.p, c.ID, nil); err != nil || string(b) != string(wantJSON) {
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

// TestCacheWritesAndReadsConcurrent: updates through two replicas, with
// reads (models and JSON) through both meanwhile, end with both serving
// the stored values.
func TestCacheWritesAndReadsConcurrent(t *testing.T) {
	a := newCacheEnv(t, Options{})
	b, err := New(a.store, Options{})
	if err != nil {
		t.Fatal(err)
	}
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
				if _, err := svc.Transport().AppendCredentialJSON(a.ctx, a.p, id, nil); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	writersThenReaders(t, errs, done, 2, 2)
	synced(t, a.ctx, a.svc)
	synced(t, a.ctx, b)
	uncached, err := New(a.store, Options{CacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
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
			if j, err := svc.Transport().AppendCredentialJSON(a.ctx, a.p, id, nil); err != nil || string(j) != string(wantJSON) {
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

// versionOf returns the version of the record e caches, 0 for none.
func versionOf(e *recordcache.Entry) int64 {
	if e == nil {
		return 0
	}
	return e.Rec.Version
}
