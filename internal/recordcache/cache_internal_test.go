package recordcache

import (
	"fmt"
	"testing"

	"github.com/edgeplane/edgeplane/store"
)

// Store kinds of the tests: the cache knows nothing of them but their
// names.
const (
	kindCredential store.Kind = "credential"
	kindAPIKey     store.Kind = "api_key"
	kindEdge       store.Kind = "https_edge"
	kindRoute      store.Kind = "https_edge_route"
)

// TestCacheNoStaleFill: a value read before an invalidation is never
// cached after it, for the record itself and for a child whose parent was
// deleted.
func TestCacheNoStaleFill(t *testing.T) {
	c := New(0)
	c.SetReady()
	rec := store.Record{Kind: kindCredential, AccountID: "a", ID: "cr_1", Data: []byte(`{}`)}
	t1 := c.Note()
	c.Invalidate(Key{rec.Kind, rec.AccountID, rec.ID}, false)
	c.Put(t1, rec, "old")
	if _, ok := c.Get(Key{rec.Kind, rec.AccountID, rec.ID}); ok {
		t.Error("a value read before an update's invalidation was cached")
	}
	child := store.Record{Kind: kindRoute, AccountID: "a", ID: "edghtsrt_1", ParentID: "edghts_1", Data: []byte(`{}`)}
	t2 := c.Note()
	c.Put(t2, child, "route")
	c.Invalidate(Key{kindEdge, "a", "edghts_1"}, true)
	if _, ok := c.Get(Key{child.Kind, child.AccountID, child.ID}); ok {
		t.Error("a child is cached after its parent's delete")
	}
	t3 := c.Note()
	c.Invalidate(Key{kindEdge, "a", "edghts_2"}, true)
	child.ID, child.ParentID = "edghtsrt_2", "edghts_2"
	c.Put(t3, child, "route")
	if _, ok := c.Get(Key{child.Kind, child.AccountID, child.ID}); ok {
		t.Error("a child read before its parent's delete was cached after it")
	}
}

// TestCacheBounded: the cache never holds more than its bytes, and its
// index of children never more than its bound.
func TestCacheBounded(t *testing.T) {
	const limit = 64 << 10
	c := New(limit)
	c.SetReady()
	data := make([]byte, 300)
	for i := range 10_000 {
		rec := store.Record{Kind: kindCredential, AccountID: "a", ID: fmt.Sprint("r", i), Data: data}
		c.Put(c.Note(), rec, i)
		if i%2 == 0 {
			rec := store.Record{Kind: kindRoute, AccountID: "a", ID: fmt.Sprint("r", i), ParentID: fmt.Sprint("e", i), Data: data}
			c.Put(c.Note(), rec, i)
		}
		total, n := 0, 0
		for i := range c.shards {
			total += c.shards[i].bytes
			for _, e := range c.shards[i].m {
				r := e.Rec
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

// TestCacheBoundedWithJSON: encodings count in the cache's bytes, which
// stay within the bound and equal the sum of the entries' sizes.
func TestCacheBoundedWithJSON(t *testing.T) {
	const limit = 64 << 10
	c := New(limit)
	c.SetReady()
	data, enc := make([]byte, 300), make([]byte, 500)
	for i := range 5_000 {
		rec := store.Record{Kind: kindCredential, AccountID: "a", ID: fmt.Sprint("r", i), Data: data}
		c.SetJSON(c.Put(c.Note(), rec, i), enc)
		if i%3 == 0 { // a second encoding of an entry is not counted again
			if e, ok := c.Get(Key{rec.Kind, rec.AccountID, rec.ID}); ok {
				c.SetJSON(e, enc)
			}
		}
		total, sum := 0, 0
		for i := range c.shards {
			total += c.shards[i].bytes
			for _, e := range c.shards[i].m {
				sum += e.size
				r := e.Rec
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
	rec := store.Record{Kind: kindCredential, AccountID: "a", ID: "gone", Data: data}
	e := c.Put(c.Note(), rec, 0)
	sh := c.shard(Key{rec.Kind, rec.AccountID, rec.ID})
	c.Invalidate(Key{rec.Kind, rec.AccountID, rec.ID}, false)
	before := sh.bytes
	if c.SetJSON(e, enc); sh.bytes != before {
		t.Errorf("an invalidated entry's encoding changed its shard's bytes from %d to %d", before, sh.bytes)
	}
}

// TestCacheKeyedByRecord: the cache is indexed by ID, but an entry
// answers only for its own kind and account: a read naming the same ID
// in another account or as another kind misses.
func TestCacheKeyedByRecord(t *testing.T) {
	c := New(0)
	c.SetReady()
	rec := store.Record{Kind: kindCredential, AccountID: "a", ID: "cr_1", Data: []byte(`{}`)}
	c.Put(c.Note(), rec, "doc")
	if _, ok := c.Get(Key{kindCredential, "a", "cr_1"}); !ok {
		t.Fatal("the entry is not cached")
	}
	for _, k := range []Key{{kindCredential, "b", "cr_1"}, {kindAPIKey, "a", "cr_1"}} {
		if e, ok := c.Get(k); ok {
			t.Errorf("get(%+v) answered with the entry of %s/%s/%s", k, e.Rec.Kind, e.Rec.AccountID, e.Rec.ID)
		}
	}
}

func versionOf(e *Entry) int64 {
	if e == nil {
		return 0
	}
	return e.Rec.Version
}

// TestCacheWriteFillRaces: a write's fill is refused when any other
// invalidation came between the note before the write and the fill; the
// follower keeps an entry at or after a change's revision, drops an older
// one, and drops any on a delete; each change it applies fails the fills
// read before it.
func TestCacheWriteFillRaces(t *testing.T) {
	c := New(0)
	c.SetReady()
	k := Key{kindCredential, "a", "cr_1"}
	rec := store.Record{Kind: k.Kind, AccountID: k.Account, ID: k.ID, Version: 5, Data: []byte(`{}`)}
	held := func() int64 {
		e, ok := c.Get(k)
		if !ok {
			return 0
		}
		return e.Rec.Version
	}

	t1 := c.Note()
	c.Invalidate(k, false) // the write's own
	c.PutWritten(t1, rec, "v5")
	if held() != 5 {
		t.Fatal("a write's fill with no other invalidation was not cached")
	}
	t2 := c.Note()
	c.Invalidate(k, false)                                // the write's own
	c.Invalidate(Key{kindCredential, "a", "cr_2"}, false) // another write
	rec.Version = 6
	c.PutWritten(t2, rec, "v6")
	if held() != 0 {
		t.Error("a write's fill was cached after another invalidation")
	}

	rec.Version = 5
	c.Put(c.Note(), rec, "v5")
	before := c.Note()
	c.ApplyChange(store.Change{Revision: 5, Op: store.OpUpdate, Kind: k.Kind, AccountID: k.Account, ID: k.ID})
	if held() != 5 {
		t.Error("the follower dropped an entry at the change's revision")
	}
	if c.Put(before, rec, "v4") != nil {
		t.Error("a fill read before a change the follower applied was cached")
	}
	c.ApplyChange(store.Change{Revision: 7, Op: store.OpUpdate, Kind: k.Kind, AccountID: k.Account, ID: k.ID})
	if held() != 0 {
		t.Error("the follower kept an entry older than a change")
	}
	rec.Version = 8
	c.Put(c.Note(), rec, "v8")
	child := store.Record{Kind: kindRoute, AccountID: "a", ID: "edghtsrt_1", ParentID: k.ID, Version: 10, Data: []byte(`{}`)}
	c.Put(c.Note(), child, "route")
	c.ApplyChange(store.Change{Revision: 11, Op: store.OpDelete, Kind: k.Kind, AccountID: k.Account, ID: k.ID})
	if held() != 0 {
		t.Error("the follower kept an entry of a deleted record")
	}
	if _, ok := c.Get(Key{child.Kind, child.AccountID, child.ID}); ok {
		t.Error("the follower kept a child of a deleted record")
	}
}

// TestEntrySize: an entry counts its document twice (decoded, and in the
// record as stored, which memstore's strings share) and every string of
// the record it keeps.
func TestEntrySize(t *testing.T) {
	base := store.Record{Kind: kindCredential, AccountID: "acct", ID: "cr_1", Data: make([]byte, 100)}
	for _, tc := range []struct {
		name string
		rec  func(store.Record) store.Record
		want int
	}{
		{"bare", func(r store.Record) store.Record { return r }, 2*100 + len(kindCredential) + len("acct") + EntryOverhead},
		{"parent", func(r store.Record) store.Record { r.ParentID = "edghts_1"; return r }, 2*100 + len(kindCredential) + len("acct") + len("edghts_1") + EntryOverhead},
		{"keys and refs", func(r store.Record) store.Record {
			r.Keys, r.Refs = []string{"k1", "key2"}, []string{"usr_1"}
			return r
		},
			2*100 + len(kindCredential) + len("acct") + len("k1key2") + len("usr_1") + EntryOverhead},
		{"index entries", func(r store.Record) store.Record {
			r.Indexes = []store.IndexEntry{{Name: "label", Value: "env=prod"}}
			return r
		}, 2*100 + len(kindCredential) + len("acct") + len("label") + len("env=prod") + EntryOverhead},
	} {
		if got := entrySize(tc.rec(base)); got != tc.want {
			t.Errorf("%s: entrySize = %d, want %d", tc.name, got, tc.want)
		}
	}
}
