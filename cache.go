package edgeplane

import (
	"context"
	"errors"
	"hash/maphash"
	"log/slog"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edgeplane/edgeplane/internal/revwait"
	"github.com/edgeplane/edgeplane/store"
)

// The record cache keeps the decoded documents of records the Service has
// read, by kind, account and ID, so that a read served from it costs
// neither a store round trip nor a JSON decode. It is kept true by two
// paths:
//
//   - every write through this Service invalidates the record it wrote,
//     and a delete the cached records below it (its children, which the
//     store deletes with it), before the write returns: a caller always
//     reads its own writes;
//   - a goroutine follows the store's change feed and invalidates each
//     record another process (another replica, edgeplane admin) wrote,
//     as soon as the feed shows it (PostgreSQL: at its NOTIFY; a SQLite
//     file written by another process: within its 100 ms poll), and at
//     most followGather (1 ms) later, which lets a burst of commits be
//     read as one batch.
//
// A read that misses notes a generation before it reads the store and
// caches what it read only if no invalidation touched the record's shard
// since, so a value read before a write can never be cached after the
// write's invalidation. While the follower is not current (starting, or
// the feed unreadable) the cache is bypassed and emptied: reads go to the
// store. Its size is bounded by [Options.CacheBytes].

// DefaultCacheBytes is the default of [Options.CacheBytes].
const DefaultCacheBytes = 64 << 20

// cacheEntryOverhead is what an entry is counted as beyond its document's
// stored size: the key, the record's fields and the map's share.
const cacheEntryOverhead = 256

// entrySize is what an entry of rec is counted as: its decoded document
// (about its stored size), the overhead, and the bytes of rec as stored,
// which its strings may keep alive: memstore returns a record's strings
// (account, parent, keys, refs, index entries) as substrings of the one
// string it stores the whole record in, document included, so an entry
// that keeps them keeps all of it. For other backends this overcounts
// by about the document's size: the bound holds either way.
func entrySize(rec store.Record) int {
	n := 2*len(rec.Data) + len(rec.Kind) + len(rec.AccountID) + len(rec.ParentID) + cacheEntryOverhead
	for _, k := range rec.Keys {
		n += len(k)
	}
	for _, r := range rec.Refs {
		n += len(r)
	}
	for _, e := range rec.Indexes {
		n += len(e.Name) + len(e.Value)
	}
	return n
}

const cacheShards = 32

type recordKey struct {
	kind        store.Kind
	account, id string
}

// cacheEntry is one cached record: its fields (without Data) and its
// decoded document, which no one changes once cached, and once a list has
// shown it, the JSON the API answers for it (see listEncoded), set once.
type cacheEntry struct {
	rec  store.Record
	doc  any
	json atomic.Pointer[[]byte]
	size int // counted in its shard's bytes; guarded by the shard's mu
}

type cacheShard struct {
	mu    sync.Mutex
	bytes int
	m     map[string]*cacheEntry // by ID: IDs are unique across the store
}

// recordCache is the cache; nil when turned off.
type recordCache struct {
	seed     maphash.Seed
	perShard int // bytes
	maxKids  int // bound of the children index's entries
	ready    atomic.Bool
	gen      atomic.Uint64 // bumped by every invalidation
	shards   [cacheShards]cacheShard

	kids    sync.Mutex
	byKids  map[string]map[recordKey]struct{} // parent ID -> children cached (or once tried)
	nowKids int
}

func newRecordCache(maxBytes int) *recordCache {
	if maxBytes == 0 {
		maxBytes = DefaultCacheBytes
	}
	if maxBytes < 0 {
		return nil
	}
	c := &recordCache{seed: maphash.MakeSeed(), perShard: max(maxBytes/cacheShards, 1), maxKids: max(maxBytes/512, 64),
		byKids: map[string]map[recordKey]struct{}{}}
	for i := range c.shards {
		c.shards[i].m = map[string]*cacheEntry{}
	}
	return c
}

// shard returns the shard of k, chosen by its ID alone: IDs are unique
// across the store, and one string hashes faster than three.
func (c *recordCache) shard(k recordKey) *cacheShard {
	return &c.shards[maphash.String(c.seed, k.id)%cacheShards]
}

// get returns the cached entry of k.
func (c *recordCache) get(k recordKey) (*cacheEntry, bool) {
	if c == nil || !c.ready.Load() {
		return nil, false
	}
	sh := c.shard(k)
	sh.mu.Lock()
	e := sh.m[k.id]
	sh.mu.Unlock()
	if e == nil || e.rec.Kind != k.kind || e.rec.AccountID != k.account {
		return nil, false
	}
	return e, true
}

// ticket is what a reader notes before it reads the store, so as to cache
// what it read only if nothing was invalidated since. One generation for
// the whole cache (not one per shard) because a delete invalidates its
// children, which live in other shards: a fill fails when any write
// committed during its read, which costs a miss, never a stale value.
type ticket struct {
	ok  bool
	gen uint64
}

// note returns the ticket of a read.
func (c *recordCache) note() ticket {
	if c == nil || !c.ready.Load() {
		return ticket{}
	}
	return ticket{ok: true, gen: c.gen.Load()}
}

// put caches doc as the document of rec, read under t, unless an
// invalidation came since. It returns the entry it cached, nil when it
// cached none.
func (c *recordCache) put(t ticket, rec store.Record, doc any) *cacheEntry {
	return c.putRecord(t, rec, doc, false)
}

// putRecord is put; owned says that rec's slices are the cache's to keep
// (a record a write returned, carved from nothing larger), so that they
// need no copy.
func (c *recordCache) putRecord(t ticket, rec store.Record, doc any, owned bool) *cacheEntry {
	if c == nil || !t.ok {
		return nil
	}
	k := recordKey{rec.Kind, rec.AccountID, rec.ID}
	e := &cacheEntry{rec: rec, doc: doc, size: entrySize(rec)}
	if e.size > c.perShard {
		return nil
	}
	// Copies of the slices: those of a listed record may be carved from
	// an array of the whole list (memstore), which the entry must not
	// keep alive uncounted.
	e.rec.Data = nil
	if !owned {
		e.rec.Keys, e.rec.Refs, e.rec.Indexes = slices.Clone(rec.Keys), slices.Clone(rec.Refs), slices.Clone(rec.Indexes)
	}
	// The child is indexed before it is cached: a delete of its parent
	// that bumps the generation after the check below finds it there.
	// Entries of children evicted or never cached stay in the index until
	// it reaches its bound, when the whole cache is emptied.
	if rec.ParentID != "" && !c.addKid(rec.ParentID, k) {
		return nil
	}
	sh := c.shard(k)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if c.gen.Load() != t.gen || !c.ready.Load() {
		return nil
	}
	if old, ok := sh.m[k.id]; ok {
		sh.bytes -= old.size
		delete(sh.m, k.id)
	}
	sh.makeRoom(e.size, c.perShard, nil)
	sh.m[k.id] = e
	sh.bytes += e.size
	return e
}

// putWritten caches doc as the document of rec, which a write through
// this Service just stored, t having been noted before the write. The
// write's own invalidation (invalidating) advanced the generation once
// since t; any other invalidation means another write may have followed
// it, and nothing is cached. rec is what the store's write returned (a
// copy the caller owns): its slices become the cache's, uncopied, and the
// caller must not change them.
func (c *recordCache) putWritten(t ticket, rec store.Record, doc any) {
	t.gen++
	c.putRecord(t, rec, doc, true)
}

// makeRoom evicts random entries other than keep until n more bytes fit
// in the shard's budget of max. The caller holds sh.mu.
func (sh *cacheShard) makeRoom(n, max int, keep *cacheEntry) {
	for k2, e2 := range sh.m {
		if sh.bytes+n <= max {
			return
		}
		if e2 == keep {
			continue
		}
		delete(sh.m, k2)
		sh.bytes -= e2.size
	}
}

// setJSON records b as the API's JSON of the record e caches, counting it
// in the cache's bytes, if e is still cached and nothing is recorded yet.
// b must be a pure function of e's version of the record: a concurrent
// invalidation drops e with what it holds.
func (c *recordCache) setJSON(e *cacheEntry, b []byte) {
	if c == nil || e == nil {
		return
	}
	k := recordKey{e.rec.Kind, e.rec.AccountID, e.rec.ID}
	sh := c.shard(k)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.m[k.id] != e || e.json.Load() != nil || e.size+len(b) > c.perShard {
		return
	}
	sh.makeRoom(len(b), c.perShard, e)
	e.size += len(b)
	sh.bytes += len(b)
	e.json.Store(&b)
}

// addKid indexes k as a child of parent; false when the index is full and
// the cache was emptied instead.
func (c *recordCache) addKid(parent string, k recordKey) bool {
	c.kids.Lock()
	full := c.nowKids >= c.maxKids
	if !full {
		set := c.byKids[parent]
		if set == nil {
			set = map[recordKey]struct{}{}
			c.byKids[parent] = set
		}
		if _, ok := set[k]; !ok {
			set[k] = struct{}{}
			c.nowKids++
		}
	}
	c.kids.Unlock()
	if full {
		c.empty()
	}
	return !full
}

// invalidate drops the entry of k and, for a delete, the cached records
// below it, however deep.
func (c *recordCache) invalidate(k recordKey, deleted bool) {
	if c == nil {
		return
	}
	c.gen.Add(1)
	sh := c.shard(k)
	sh.mu.Lock()
	if e, ok := sh.m[k.id]; ok { // whatever its kind and account: the ID is the record's
		delete(sh.m, k.id)
		sh.bytes -= e.size
	}
	sh.mu.Unlock()
	if !deleted {
		return
	}
	c.kids.Lock()
	kids := c.byKids[k.id]
	delete(c.byKids, k.id)
	c.nowKids -= len(kids)
	c.kids.Unlock()
	for kid := range kids {
		c.invalidate(kid, true)
	}
}

// applyChange invalidates what a change the feed shows may have made
// stale, as invalidate does, except that an entry of the record at the
// change's revision or a later one is kept: it was read, or written by
// this Service (putWritten), after the change, whose revision is the
// version it gave the record (see [store.Record.Version]). The generation
// still advances: a fill that read the store before the change is not
// cached.
func (c *recordCache) applyChange(ch store.Change) {
	k := recordKey{ch.Kind, ch.AccountID, ch.ID}
	if ch.Op == store.OpDelete {
		c.invalidate(k, true)
		return
	}
	c.gen.Add(1)
	sh := c.shard(k)
	sh.mu.Lock()
	if e, ok := sh.m[k.id]; ok && e.rec.Version < ch.Revision {
		delete(sh.m, k.id)
		sh.bytes -= e.size
	}
	sh.mu.Unlock()
}

// empty drops every entry; the cache stays in use.
func (c *recordCache) empty() {
	c.gen.Add(1)
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		clear(sh.m)
		sh.bytes = 0
		sh.mu.Unlock()
	}
	c.kids.Lock()
	clear(c.byKids)
	c.nowKids = 0
	c.kids.Unlock()
}

// flush empties the cache and bypasses it until the follower is current
// again.
func (c *recordCache) flush() {
	c.ready.Store(false)
	c.empty()
}

// invalidating is the Service's store: the store the host gave, whose
// writes invalidate what they wrote in the record cache before they
// return. A write that fails invalidates too: whether it committed may be
// unknown.
type invalidating struct {
	store.Store
	cache *recordCache
}

func (st invalidating) Update(ctx context.Context, kind store.Kind, accountID, id string, fn func(*store.Record) error) (store.Record, error) {
	defer st.cache.invalidate(recordKey{kind, accountID, id}, false)
	return st.Store.Update(ctx, kind, accountID, id, fn)
}

func (st invalidating) Replace(ctx context.Context, rec store.Record) (store.Record, error) {
	defer st.cache.invalidate(recordKey{rec.Kind, rec.AccountID, rec.ID}, false)
	return st.Store.Replace(ctx, rec)
}

func (st invalidating) Delete(ctx context.Context, kind store.Kind, accountID, id string) error {
	defer st.cache.invalidate(recordKey{kind, accountID, id}, true)
	return st.Store.Delete(ctx, kind, accountID, id)
}

func (st invalidating) DeleteIf(ctx context.Context, kind store.Kind, accountID, id string, version int64) error {
	defer st.cache.invalidate(recordKey{kind, accountID, id}, true)
	return st.Store.DeleteIf(ctx, kind, accountID, id, version)
}

// cacheFollower reads the change feed and invalidates what it shows. It
// holds what it needs, never the Service: a Service dropped without Close
// is collected, and its cleanup (startCache) stops the follower.
type cacheFollower struct {
	store   store.Store
	cache   *recordCache // nil when off
	auth    *authCache   // nil when off
	log     *slog.Logger
	stop    context.CancelFunc
	done    chan struct{}
	applied revwait.Mark // every change up to it is applied
}

// waitApplied waits until every change up to rev is applied, or ctx ends,
// or the follower stops (the cache is bypassed from then on, so reads
// reflect every change).
func (f *cacheFollower) waitApplied(ctx context.Context, rev int64) error {
	if err := f.applied.Wait(ctx, rev, f.done); err != nil && !errors.Is(err, revwait.ErrStopped) {
		return err
	}
	return nil
}

// startCache starts the goroutine that keeps the record cache and the
// authentication cache true to writes made by other processes. It stops
// with [Service.Close], or when the Service is garbage collected without
// one (a test or a short-lived host that never closes it leaks nothing).
func (s *Service) startCache() {
	if s.cache == nil && s.auth == nil {
		return
	}
	ctx, stop := context.WithCancel(context.Background())
	f := &cacheFollower{store: s.store, cache: s.cache, auth: s.auth, log: s.log, stop: stop, done: make(chan struct{})}
	s.cacheFollow = f
	go func() {
		defer close(f.done)
		f.follow(ctx)
	}()
	runtime.AddCleanup(s, func(stop context.CancelFunc) { stop() }, stop)
}

// stopCache stops the cache's follower and waits for it; the cache is
// bypassed from then on.
func (s *Service) stopCache() {
	if f := s.cacheFollow; f != nil {
		f.stop()
		<-f.done
	}
}

// followGather is how long the cache's follower lets commits gather
// after it wakes for one, before it reads them: under a stream of writes
// it reads a batch per followGather instead of waking (a goroutine
// switch, a feed read, a new wait) for every commit. It delays the
// invalidation of another process's write by as much; a write through
// this Service invalidates its own records before it returns.
const followGather = time.Millisecond

// follow is the cache's follower: it invalidates every change after the
// revision it starts at, and keeps the cache bypassed while it is not
// current.
func (f *cacheFollower) follow(ctx context.Context) {
	c := f.cache
	defer func() {
		if c != nil {
			c.flush()
		}
	}()
	rev := int64(-1)
	feed := store.WithoutData(ctx) // invalidation needs only which records changed
	gather := time.NewTimer(followGather)
	defer gather.Stop()
	for ctx.Err() == nil {
		if rev < 0 {
			r, err := f.store.Revision(ctx)
			if err != nil {
				pause(ctx)
				continue
			}
			rev = r
		}
		changes, err := f.store.Changes(feed, rev, followPage)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			// Behind what the feed holds (compacted) or the store is
			// unreachable: what other processes wrote meanwhile is
			// unknown, so nothing cached can be trusted.
			if c != nil {
				c.flush()
			}
			f.auth.clear()
			var compacted *store.CompactedError
			if errors.As(err, &compacted) {
				rev = -1
				continue
			}
			f.log.Warn("record cache: cannot read the change feed; reads go to the store until it answers", "err", err)
			pause(ctx)
			continue
		}
		for _, ch := range changes {
			rev = ch.Revision
			if ch.Op == store.OpCreate {
				// Nothing is cached of a record before it exists (IDs
				// are never reused): invalidating would only make
				// concurrent fills fail.
				continue
			}
			if c != nil {
				c.applyChange(ch)
			}
			f.forgetAuth(ch)
		}
		if len(changes) < followPage {
			if c != nil {
				c.ready.Store(true) // current: every change up to rev is applied
			}
			f.applied.Advance(rev)
			if f.store.Wait(ctx, rev) == nil {
				// A commit: let the next ones gather, so that a busy
				// store wakes the follower once per followGather, not
				// once per commit.
				gather.Reset(followGather)
				select {
				case <-gather.C:
				case <-ctx.Done():
				}
			}
		}
	}
}

// forgetAuth drops the cached authentications a change may end: those of
// a changed or deleted API key, and all of them when a user or bot changes
// (rare: an admin flag or a deactivation).
func (f *cacheFollower) forgetAuth(ch store.Change) {
	switch ch.Kind {
	case KindAPIKey:
		f.auth.forget(ch.ID)
	case KindUser, KindBot, KindAccount:
		f.auth.clear()
	}
}
