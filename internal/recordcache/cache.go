package recordcache

import (
	"context"
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/edgeplane/edgeplane/store"
)

// DefaultBytes is the bound of a cache made with New(0).
const DefaultBytes = 64 << 20

// EntryOverhead is what an entry is counted as beyond its document's
// stored size: the key, the record's fields and the map's share.
const EntryOverhead = 256

// entrySize is what an entry of rec is counted as: its decoded document
// (about its stored size), the overhead, and the bytes of rec as stored,
// which its strings may keep alive: memstore returns a record's strings
// (account, parent, keys, refs, index entries) as substrings of the one
// string it stores the whole record in, document included, so an entry
// that keeps them keeps all of it. For other backends this overcounts
// by about the document's size: the bound holds either way.
func entrySize(rec store.Record) int {
	n := 2*len(rec.Data) + len(rec.Kind) + len(rec.AccountID) + len(rec.ParentID) + EntryOverhead
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

const numShards = 32

type Key struct {
	Kind        store.Kind
	Account, ID string
}

// Entry is one cached record: its fields (without Data) and its
// decoded document, which no one changes once cached, and once a list has
// shown it, the JSON the API answers for it (see [Cache.SetJSON]), set once.
type Entry struct {
	// Rec is the record's fields, Data nil. Never change it.
	Rec store.Record
	// Doc is the decoded document. Never change it.
	Doc  any
	json atomic.Pointer[[]byte]
	size int // counted in its shard's bytes; guarded by the shard's mu
}

type shard struct {
	mu    sync.Mutex
	bytes int
	m     map[string]*Entry // by ID: IDs are unique across the store
}

// Cache is the record cache. A nil *Cache is a cache that is turned off:
// every method works on it and caches nothing. It is safe for concurrent
// use.
type Cache struct {
	seed     maphash.Seed
	perShard int // bytes
	maxKids  int // bound of the children index's entries
	ready    atomic.Bool
	gen      atomic.Uint64 // bumped by every invalidation
	shards   [numShards]shard

	kids    sync.Mutex
	byKids  map[string]map[Key]struct{} // parent ID -> children cached (or once tried)
	nowKids int
}

// New returns a cache bounded by maxBytes (0 means [DefaultBytes]), nil
// (off) when maxBytes is negative. It is bypassed until [Cache.SetReady].
func New(maxBytes int) *Cache {
	if maxBytes == 0 {
		maxBytes = DefaultBytes
	}
	if maxBytes < 0 {
		return nil
	}
	c := &Cache{seed: maphash.MakeSeed(), perShard: max(maxBytes/numShards, 1), maxKids: max(maxBytes/512, 64),
		byKids: map[string]map[Key]struct{}{}}
	for i := range c.shards {
		c.shards[i].m = map[string]*Entry{}
	}
	return c
}

// shard returns the shard of k, chosen by its ID alone: IDs are unique
// across the store, and one string hashes faster than three.
func (c *Cache) shard(k Key) *shard {
	return &c.shards[maphash.String(c.seed, k.ID)%numShards]
}

// get returns the cached entry of k.
func (c *Cache) Get(k Key) (*Entry, bool) {
	if c == nil || !c.ready.Load() {
		return nil, false
	}
	sh := c.shard(k)
	sh.mu.Lock()
	e := sh.m[k.ID]
	sh.mu.Unlock()
	if e == nil || e.Rec.Kind != k.Kind || e.Rec.AccountID != k.Account {
		return nil, false
	}
	return e, true
}

// Ticket is what a reader notes before it reads the store, so as to cache
// what it read only if nothing was invalidated since. One generation for
// the whole cache (not one per shard) because a delete invalidates its
// children, which live in other shards: a fill fails when any write
// committed during its read, which costs a miss, never a stale value.
type Ticket struct {
	ok  bool
	gen uint64
}

// note returns the Ticket of a read.
func (c *Cache) Note() Ticket {
	if c == nil || !c.ready.Load() {
		return Ticket{}
	}
	return Ticket{ok: true, gen: c.gen.Load()}
}

// put caches doc as the document of rec, read under t, unless an
// invalidation came since. It returns the entry it cached, nil when it
// cached none.
func (c *Cache) Put(t Ticket, rec store.Record, doc any) *Entry {
	return c.putRecord(t, rec, doc, false)
}

// putRecord is put; owned says that rec's slices are the cache's to keep
// (a record a write returned, carved from nothing larger), so that they
// need no copy.
func (c *Cache) putRecord(t Ticket, rec store.Record, doc any, owned bool) *Entry {
	if c == nil || !t.ok {
		return nil
	}
	k := Key{rec.Kind, rec.AccountID, rec.ID}
	e := &Entry{Rec: rec, Doc: doc, size: entrySize(rec)}
	if e.size > c.perShard {
		return nil
	}
	// Copies of the slices: those of a listed record may be carved from
	// an array of the whole list (memstore), which the entry must not
	// keep alive uncounted.
	e.Rec.Data = nil
	if !owned {
		e.Rec.Keys, e.Rec.Refs, e.Rec.Indexes = slices.Clone(rec.Keys), slices.Clone(rec.Refs), slices.Clone(rec.Indexes)
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
	if old, ok := sh.m[k.ID]; ok {
		sh.bytes -= old.size
		delete(sh.m, k.ID)
	}
	sh.makeRoom(e.size, c.perShard, nil)
	sh.m[k.ID] = e
	sh.bytes += e.size
	return e
}

// PutWritten caches doc as the document of rec, which a write through
// this Service just stored, t having been noted before the write. The
// write's own invalidation ([Invalidating]) advanced the generation once
// since t; any other invalidation means another write may have followed
// it, and nothing is cached. rec is what the store's write returned (a
// copy the caller owns): its slices become the cache's, uncopied, and the
// caller must not change them.
func (c *Cache) PutWritten(t Ticket, rec store.Record, doc any) {
	t.gen++
	c.putRecord(t, rec, doc, true)
}

// makeRoom evicts random entries other than keep until n more bytes fit
// in the shard's budget of max. The caller holds sh.mu.
func (sh *shard) makeRoom(n, max int, keep *Entry) {
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
func (c *Cache) SetJSON(e *Entry, b []byte) {
	if c == nil || e == nil {
		return
	}
	k := Key{e.Rec.Kind, e.Rec.AccountID, e.Rec.ID}
	sh := c.shard(k)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.m[k.ID] != e || e.json.Load() != nil || e.size+len(b) > c.perShard {
		return
	}
	sh.makeRoom(len(b), c.perShard, e)
	e.size += len(b)
	sh.bytes += len(b)
	e.json.Store(&b)
}

// addKid indexes k as a child of parent; false when the index is full and
// the cache was emptied instead.
func (c *Cache) addKid(parent string, k Key) bool {
	c.kids.Lock()
	full := c.nowKids >= c.maxKids
	if !full {
		set := c.byKids[parent]
		if set == nil {
			set = map[Key]struct{}{}
			c.byKids[parent] = set
		}
		if _, ok := set[k]; !ok {
			set[k] = struct{}{}
			c.nowKids++
		}
	}
	c.kids.Unlock()
	if full {
		c.Empty()
	}
	return !full
}

// invalidate drops the entry of k and, for a delete, the cached records
// below it, however deep.
func (c *Cache) Invalidate(k Key, deleted bool) {
	if c == nil {
		return
	}
	c.gen.Add(1)
	sh := c.shard(k)
	sh.mu.Lock()
	if e, ok := sh.m[k.ID]; ok { // whatever its kind and account: the ID is the record's
		delete(sh.m, k.ID)
		sh.bytes -= e.size
	}
	sh.mu.Unlock()
	if !deleted {
		return
	}
	c.kids.Lock()
	kids := c.byKids[k.ID]
	delete(c.byKids, k.ID)
	c.nowKids -= len(kids)
	c.kids.Unlock()
	for kid := range kids {
		c.Invalidate(kid, true)
	}
}

// applyChange invalidates what a change the feed shows may have made
// stale, as invalidate does, except that an entry of the record at the
// change's revision or a later one is kept: it was read, or written by
// this Service ([Cache.PutWritten]), after the change, whose revision is the
// version it gave the record (see [store.Record.Version]). The generation
// still advances: a fill that read the store before the change is not
// cached.
func (c *Cache) ApplyChange(ch store.Change) {
	k := Key{ch.Kind, ch.AccountID, ch.ID}
	if ch.Op == store.OpDelete {
		c.Invalidate(k, true)
		return
	}
	c.gen.Add(1)
	sh := c.shard(k)
	sh.mu.Lock()
	if e, ok := sh.m[k.ID]; ok && e.Rec.Version < ch.Revision {
		delete(sh.m, k.ID)
		sh.bytes -= e.size
	}
	sh.mu.Unlock()
}

// empty drops every entry; the cache stays in use.
func (c *Cache) Empty() {
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
func (c *Cache) Flush() {
	c.ready.Store(false)
	c.Empty()
}

// SetReady marks the cache current (its follower has applied the feed up
// to now): from then on it is used. [Cache.Flush] bypasses it again.
func (c *Cache) SetReady() {
	if c != nil {
		c.ready.Store(true)
	}
}

// Ready reports whether the cache is in use.
func (c *Cache) Ready() bool { return c != nil && c.ready.Load() }

// JSON returns the API's JSON of the entry's record recorded with
// [Cache.SetJSON], nil when none is.
func (e *Entry) JSON() []byte {
	if b := e.json.Load(); b != nil {
		return *b
	}
	return nil
}

// Invalidating returns st with its writes invalidating what they wrote
// in c before they return; st itself when c is nil.
func Invalidating(st store.Store, c *Cache) store.Store {
	if c == nil {
		return st
	}
	return invalidating{Store: st, cache: c}
}

// invalidating is the Service's store: the store the host gave, whose
// writes invalidate what they wrote in the record cache before they
// return. A write that fails invalidates too: whether it committed may be
// unknown.
type invalidating struct {
	store.Store
	cache *Cache
}

func (st invalidating) Update(ctx context.Context, kind store.Kind, accountID, id string, fn func(*store.Record) error) (store.Record, error) {
	defer st.cache.Invalidate(Key{kind, accountID, id}, false)
	return st.Store.Update(ctx, kind, accountID, id, fn)
}

func (st invalidating) Replace(ctx context.Context, rec store.Record) (store.Record, error) {
	defer st.cache.Invalidate(Key{rec.Kind, rec.AccountID, rec.ID}, false)
	return st.Store.Replace(ctx, rec)
}

func (st invalidating) Delete(ctx context.Context, kind store.Kind, accountID, id string, note store.Note) error {
	defer st.cache.Invalidate(Key{kind, accountID, id}, true)
	return st.Store.Delete(ctx, kind, accountID, id, note)
}

func (st invalidating) DeleteIf(ctx context.Context, kind store.Kind, accountID, id string, version int64, note store.Note) error {
	defer st.cache.Invalidate(Key{kind, accountID, id}, true)
	return st.Store.DeleteIf(ctx, kind, accountID, id, version, note)
}
