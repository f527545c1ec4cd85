package memstore

import (
	"encoding/binary"
	"strings"

	"github.com/edgeplane/edgeplane/store"
)

// packed is the stored form of a record: one immutable string, blob,
// holds all its bytes (kind, account, parent, document, then its keys,
// refs and index entries, each a uvarint length and its bytes), and the
// fields are offsets into it. The ID is a string of its own, made once
// when the record is created and kept by its updates, because every
// index holds it: were it part of the blob, each index would keep the
// first version's blob alive after an update.
//
// So a record is two heap objects that hold no pointers (the blob and
// the ID), stored by value in the records map: the garbage collector
// marks them without scanning them. Everything else that names the
// record (lookup keys, index values, set members) is a substring of one
// of the two. The struct stays well under the 128 bytes above which a Go
// map stores its values out of line.
type packed struct {
	id   string
	blob string
	// version is the record's Version.
	version int64
	// The ends of the kind, account, parent and document in blob; the
	// lists follow the document.
	kindEnd, accountEnd, parentEnd, dataEnd int
	// How many keys, refs and index entries the lists hold.
	nkeys, nrefs, nindexes int32
}

func (r *packed) kind() store.Kind { return store.Kind(r.blob[:r.kindEnd]) }
func (r *packed) account() string  { return r.blob[r.kindEnd:r.accountEnd] }
func (r *packed) parent() string   { return r.blob[r.accountEnd:r.parentEnd] }
func (r *packed) data() string     { return r.blob[r.parentEnd:r.dataEnd] }

// keys returns a reader of r's keys, then its refs, then its index
// entries (name, value).
func (r *packed) keys() lists { return lists(r.blob[r.dataEnd:]) }

// refs returns a reader of r's refs, then its index entries.
func (r *packed) refs() lists {
	l := r.keys()
	l.skip(int(r.nkeys))
	return l
}

// indexes returns a reader of r's index entries, name then value.
func (r *packed) indexes() lists {
	l := r.refs()
	l.skip(int(r.nrefs))
	return l
}

// sections returns r's packed keys, refs and index entries, as stored:
// two records whose sections are equal have equal lists.
func (r *packed) sections() (keys, refs, indexes string) {
	all := r.blob[r.dataEnd:]
	l := r.keys()
	l.skip(int(r.nkeys))
	afterKeys := len(all) - len(l)
	l.skip(int(r.nrefs))
	afterRefs := len(all) - len(l)
	return all[:afterKeys], all[afterKeys:afterRefs], all[afterRefs:]
}

// lists reads the strings of a packed record's lists in turn.
type lists string

// next returns the next string; the caller knows how many there are.
func (l *lists) next() string {
	var n int
	for i, shift := 0, 0; ; i, shift = i+1, shift+7 {
		c := (*l)[i]
		n |= int(c&0x7f) << shift
		if c < 0x80 {
			s := string((*l)[i+1 : i+1+n])
			*l = (*l)[i+1+n:]
			return s
		}
	}
}

func (l *lists) skip(n int) {
	for range n {
		l.next()
	}
}

// pack returns the stored form of rec with ID id (rec.ID is not read).
// rec.Refs must be unique already (store.UniqueRefs). It makes one
// allocation, the blob, which shares nothing with rec.
func pack(id string, rec *store.Record) packed {
	n := len(rec.Kind) + len(rec.AccountID) + len(rec.ParentID) + len(rec.Data)
	for _, k := range rec.Keys {
		n += packedLen(k)
	}
	for _, ref := range rec.Refs {
		n += packedLen(ref)
	}
	for _, e := range rec.Indexes {
		n += packedLen(e.Name) + packedLen(e.Value)
	}
	var b strings.Builder
	b.Grow(n)
	r := packed{id: id, nkeys: int32(len(rec.Keys)), nrefs: int32(len(rec.Refs)), nindexes: int32(len(rec.Indexes))}
	b.WriteString(string(rec.Kind))
	r.kindEnd = b.Len()
	b.WriteString(rec.AccountID)
	r.accountEnd = b.Len()
	b.WriteString(rec.ParentID)
	r.parentEnd = b.Len()
	b.Write(rec.Data)
	r.dataEnd = b.Len()
	for _, k := range rec.Keys {
		putString(&b, k)
	}
	for _, ref := range rec.Refs {
		putString(&b, ref)
	}
	for _, e := range rec.Indexes {
		putString(&b, e.Name)
		putString(&b, e.Value)
	}
	r.blob = b.String()
	return r
}

func packedLen(s string) int {
	n := 1
	for x := len(s); x >= 0x80; x >>= 7 {
		n++
	}
	return n + len(s)
}

func putString(b *strings.Builder, s string) {
	var buf [binary.MaxVarintLen64]byte
	b.Write(buf[:binary.PutUvarint(buf[:], uint64(len(s)))])
	b.WriteString(s)
}

// copies holds the arrays the copies of one answer's records are carved
// from: a few allocations for the whole answer instead of several per
// record. Each copy's Data, Keys, Refs and Indexes has its capacity
// clipped to its length, so that a caller's append reallocates rather
// than write over a neighbour.
type copies struct {
	data []byte
	strs []string
	idx  []store.IndexEntry
	// What the arrays must hold, counted by need before they are made.
	nd, ns, ni int
}

// need counts what a copy of r takes.
func (c *copies) need(r *packed) {
	c.nd += r.dataEnd - r.parentEnd
	c.ns += int(r.nkeys + r.nrefs)
	c.ni += int(r.nindexes)
}

func (c *copies) alloc() {
	if c.nd > 0 {
		c.data = make([]byte, 0, c.nd)
	}
	if c.ns > 0 {
		c.strs = make([]string, 0, c.ns)
	}
	if c.ni > 0 {
		c.idx = make([]store.IndexEntry, 0, c.ni)
	}
}

// record returns a copy of r that the caller owns, carved from c's
// arrays. Its strings share r's immutable bytes.
func (c *copies) record(r *packed) store.Record {
	out := store.Record{Kind: r.kind(), AccountID: r.account(), ID: r.id, ParentID: r.parent(), Version: r.version}
	if d := r.data(); d != "" {
		start := len(c.data)
		c.data = append(c.data, d...)
		out.Data = c.data[start:len(c.data):len(c.data)]
	}
	l := r.keys()
	out.Keys = c.strings(&l, int(r.nkeys))
	out.Refs = c.strings(&l, int(r.nrefs))
	if r.nindexes > 0 {
		start := len(c.idx)
		for range r.nindexes {
			name := l.next()
			c.idx = append(c.idx, store.IndexEntry{Name: name, Value: l.next()})
		}
		out.Indexes = c.idx[start:len(c.idx):len(c.idx)]
	}
	return out
}

// strings carves the next n strings of l; nil when n is 0 (as
// [store.Record.Clone] gives).
func (c *copies) strings(l *lists, n int) []string {
	if n == 0 {
		return nil
	}
	start := len(c.strs)
	for range n {
		c.strs = append(c.strs, l.next())
	}
	return c.strs[start:len(c.strs):len(c.strs)]
}

// record returns a copy of r that the caller owns.
func (r *packed) record() store.Record {
	var c copies
	c.need(r)
	c.alloc()
	return c.record(r)
}
