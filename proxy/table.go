package proxy

import (
	"hash/maphash"
	"maps"
	"sync/atomic"
)

// table is a map from string keys (edge IDs, hostports, hosts) to edge
// slots that readers probe without locks: it is spread over shardCount
// immutable maps, and a writer (the follower, the only one) publishes a
// copy of each shard it changes. Adding or removing keys copies the
// shards that hold them, O(keys/shardCount) each.
type table struct {
	seed   maphash.Seed
	shards [shardCount]atomic.Pointer[map[string]*slot]
}

func newTable() *table {
	t := &table{seed: maphash.MakeSeed()}
	for i := range t.shards {
		t.shards[i].Store(&map[string]*slot{})
	}
	return t
}

func (t *table) shard(key string) *atomic.Pointer[map[string]*slot] {
	return &t.shards[maphash.String(t.seed, key)%shardCount]
}

// get returns the slot of key, or nil. It does not allocate.
func (t *table) get(key string) *slot { return (*t.shard(key).Load())[key] }

// set publishes updates: a slot is added or replaced, nil removes the
// key. It returns how many keys were added minus how many removed.
func (t *table) set(updates map[string]*slot) int {
	if len(updates) == 0 {
		return 0
	}
	byShard := map[*atomic.Pointer[map[string]*slot]][]string{}
	for k := range updates {
		sh := t.shard(k)
		byShard[sh] = append(byShard[sh], k)
	}
	delta := 0
	for sh, keys := range byShard {
		m := maps.Clone(*sh.Load())
		before := len(m)
		for _, k := range keys {
			if s := updates[k]; s != nil {
				m[k] = s
			} else {
				delete(m, k)
			}
		}
		sh.Store(&m)
		delta += len(m) - before
	}
	return delta
}
