package ratelimit

import (
	"math/bits"
	"sync"
	"unsafe"
)

// Storage layout.
//
// A limiter has up to 1<<maxShardBits (64) shards picked by the top bits of
// the key hash, each with its own mutex. A shard keeps its entries densely in
// pages of pageSize entries (no per-key pointer, nothing for the garbage
// collector to scan) and finds them through an open-addressing index of uint32 slots
// (linear probing, load at most 13/16). An index slot holds the entry's
// position plus one in its low idxBits bits and a tag of hash bits above,
// so that most mismatches are rejected without touching the entry. Removal
// swaps the last entry into the hole and uses backward-shift deletion in the
// index, so there are no tombstones and no free lists.
const (
	maxShardBits = 6
	pageBits     = 7
	pageSize     = 1 << pageBits
	firstPage    = 4  // entries in a shard's first page, which grows to pageSize
	minIndex     = 16 // smallest index, in slots
	// sweepEvery is how often (in calls to a shard) one entry is examined
	// for reclamation; inserts examine sweepOnInsert more.
	sweepEvery    = 16
	sweepOnInsert = 2
	// evictSample is how many entries a full shard examines to find one to
	// evict.
	evictSample = 8
)

// table is the shard array with the parameters shared by every shard.
type table struct {
	shards    []paddedShard
	shardBits uint
	idxBits   uint   // bits of an index slot that hold position+1
	idxMask   uint32 // (1<<idxBits)-1
}

type paddedShard struct {
	shard
	_ [(128 - unsafe.Sizeof(shard{})%128) % 128]byte
}

// shard is one lock's worth of entries.
type shard struct {
	mu sync.Mutex

	// Slot cache: curSlot is the slot starting at curStart (Unix ns).
	curSlot  uint64
	curStart int64
	// maxSlot is the newest slot any call to this shard has seen.
	maxSlot uint64
	// forgot is the time (Unix ns) before which a key the shard does not
	// track may be one whose bucket it forgot with admissions that would
	// count in that key's window; see newEntry.
	forgot int64

	index []uint32
	pages [][]entry
	n     int // live entries
	limit int // most entries this shard may hold

	sweep int32  // reclamation cursor
	evict int32  // eviction cursor
	ops   uint32 // calls, to pace sweeping
}

func newTable(maxKeys int) table {
	// About 64 keys per shard before using more shards, at most 64 shards.
	sb := uint(0)
	for sb < maxShardBits && maxKeys>>(sb+6) > 0 {
		sb++
	}
	ns := 1 << sb
	t := table{shards: make([]paddedShard, ns), shardBits: sb}
	per := maxKeys / ns
	rem := maxKeys % ns
	if rem > 0 {
		per++
	}
	t.idxBits = uint(bits.Len(uint(per)))
	t.idxMask = 1<<t.idxBits - 1
	for i := range t.shards {
		sh := &t.shards[i].shard
		sh.limit = maxKeys / ns
		if i < rem {
			sh.limit++
		}
		sh.curStart = -1 << 62
		sh.maxSlot = slotOffset
	}
	return t
}

// shardOf returns the shard of hash h.
func (t *table) shardOf(h uint64) *shard {
	return &t.shards[h>>(64-t.shardBits)&(1<<t.shardBits-1)].shard
}

// tag returns the tag bits of h, placed above the position bits. It takes
// hash bits 26 to 57: above those that pick an index slot in any shard of
// fewer than 2^26 slots and below those that pick the shard.
func (t *table) tag(h uint64) uint32 {
	return uint32(h>>26) &^ t.idxMask
}

func (sh *shard) at(i int) *entry { return &sh.pages[i>>pageBits][i&(pageSize-1)] }

// find returns the position of the entry with hash h, or -1 and the index
// slot where it would go.
func (sh *shard) find(t *table, h uint64) (int, uint32) {
	if sh.index == nil {
		return -1, 0
	}
	mask := uint32(len(sh.index) - 1)
	tag := t.tag(h)
	p := uint32(h) & mask
	for {
		v := sh.index[p]
		if v == 0 {
			return -1, p
		}
		if v&^t.idxMask == tag {
			i := int(v&t.idxMask) - 1
			if sh.at(i).hash == h {
				return i, p
			}
		}
		p = (p + 1) & mask
	}
}

// slotOfPos returns the index slot that points at position i, whose hash
// is h.
func (sh *shard) slotOfPos(t *table, h uint64, i int) uint32 {
	mask := uint32(len(sh.index) - 1)
	p := uint32(h) & mask
	for sh.index[p]&t.idxMask != uint32(i+1) {
		p = (p + 1) & mask
	}
	return p
}

// insert adds a fresh entry for h at slot s, with no admissions. The shard
// must have room (sh.n < sh.limit). It returns the entry's position.
func (sh *shard) insert(t *table, h uint64, s uint64, g *geometry) int {
	if sh.index == nil || (sh.n+1)*16 > len(sh.index)*13 {
		sh.rehash(t, max(minIndex, 2*len(sh.index)))
	}
	i := sh.n
	pg := i >> pageBits
	// The first page starts small and doubles, so that a limiter with few
	// keys stays small; later pages are whole, except that no page extends
	// past the shard's limit.
	room := sh.limit - pg<<pageBits
	if pg == len(sh.pages) {
		size := min(pageSize, room)
		if pg == 0 {
			size = min(firstPage, room)
		}
		sh.pages = append(sh.pages, make([]entry, size))
	} else if off := i & (pageSize - 1); off == len(sh.pages[pg]) {
		grown := make([]entry, min(2*off, pageSize, room))
		copy(grown, sh.pages[pg])
		sh.pages[pg] = grown
	}
	sh.n++
	e := sh.at(i)
	*e = entry{hash: h}
	e.set(g, s, g.agoMax)
	_, p := sh.find(t, h)
	sh.index[p] = t.tag(h) | uint32(i+1)
	return i
}

// remove deletes the entry at position i.
func (sh *shard) remove(t *table, i int) {
	mask := uint32(len(sh.index) - 1)
	// Backward-shift deletion of i's index slot.
	p := sh.slotOfPos(t, sh.at(i).hash, i)
	q := p
	for {
		q = (q + 1) & mask
		v := sh.index[q]
		if v == 0 {
			break
		}
		home := uint32(sh.at(int(v&t.idxMask)-1).hash) & mask
		if (q-home)&mask >= (q-p)&mask {
			sh.index[p] = v
			p = q
		}
	}
	sh.index[p] = 0
	// Move the last entry into the hole.
	last := sh.n - 1
	if i != last {
		le := sh.at(last)
		lp := sh.slotOfPos(t, le.hash, last)
		sh.index[lp] = sh.index[lp]&^t.idxMask | uint32(i+1)
		*sh.at(i) = *le
	}
	sh.n--
	// Release pages beyond the one spare after the last used page.
	need := (sh.n + pageSize - 1) >> pageBits
	for len(sh.pages) > need+1 {
		sh.pages[len(sh.pages)-1] = nil
		sh.pages = sh.pages[:len(sh.pages)-1]
	}
	if len(sh.index) > minIndex && sh.n*8 < len(sh.index) {
		sh.rehash(t, len(sh.index)/2)
	}
}

// rehash rebuilds the index with size slots.
func (sh *shard) rehash(t *table, size int) {
	sh.index = make([]uint32, size)
	mask := uint32(size - 1)
	for i := 0; i < sh.n; i++ {
		h := sh.at(i).hash
		p := uint32(h) & mask
		for sh.index[p] != 0 {
			p = (p + 1) & mask
		}
		sh.index[p] = t.tag(h) | uint32(i+1)
	}
}
