package memstore

import (
	"encoding/binary"
	"unsafe"

	"github.com/edgeplane/edgeplane/store"
)

// packed is the stored form of a record: one immutable string, blob,
// holds all its bytes, ID included, and version its Version.
//
// The blob is the ID (a uvarint length and its bytes), then a header of
// seven uvarints (the lengths of the kind, account, parent and document,
// the numbers of keys, refs and index entries), then the kind, account,
// parent and document, then the keys, refs and index entries (name,
// value), each a uvarint length and its bytes. [packed.open] takes it
// apart without allocating; [packed.id] reads just the ID.
//
// A record is thus one heap object that holds no pointers, which the
// garbage collector marks without scanning, and the one pointer to it is
// its slot in the store's table (see [table]). Nothing else that names the
// record holds a string of it: the maps and sets that find it hold its
// handle (its slot's number; the keys map also the key's place among the
// record's keys), the list indexes a handle and a copy of the ID's first
// bytes, and the secondary indexes a handle, the entry's place among the
// record's and copies of the first bytes of the ID and the value. So an
// update replaces the blob whole, and the old one goes once no change in
// the feed and no answer handed out holds it: a blob is never written to
// after it is made.
type packed struct {
	blob    string
	version int64 // the record's Version
}

// layout is a packed record taken apart: its fields, substrings of the
// blob.
type layout struct {
	id                     string
	kind                   store.Kind
	account, parent, data  string
	lists                  lists // keys, then refs, then index entries
	nkeys, nrefs, nindexes int
}

// id returns r's ID.
func (r *packed) id() string {
	l := lists(r.blob)
	return l.next()
}

// open takes r apart.
func (r *packed) open() layout {
	l := lists(r.blob)
	id := l.next()
	nk, na, np, nd := l.uvarint(), l.uvarint(), l.uvarint(), l.uvarint()
	o := layout{id: id, nkeys: l.uvarint(), nrefs: l.uvarint(), nindexes: l.uvarint()}
	rest := string(l)
	o.kind = store.Kind(rest[:nk])
	rest = rest[nk:]
	o.account, rest = rest[:na], rest[na:]
	o.parent, rest = rest[:np], rest[np:]
	o.data, o.lists = rest[:nd], lists(rest[nd:])
	return o
}

// key returns r's i-th key, if it has one.
func (r *packed) key(i int) (string, bool) {
	if r.blob == "" {
		return "", false
	}
	o := r.open()
	if i >= o.nkeys {
		return "", false
	}
	l := o.keys()
	l.skip(i)
	return l.next(), true
}

// value returns the value of r's i-th index entry ("" if it has none).
func (r *packed) value(i int) string {
	if r.blob == "" {
		return ""
	}
	o := r.open()
	if i >= o.nindexes {
		return ""
	}
	l := o.indexes()
	l.skip(2*i + 1)
	return l.next()
}

// keys returns a reader of the keys, then the refs, then the index
// entries (name, value).
func (o *layout) keys() lists { return o.lists }

// refs returns a reader of the refs, then the index entries.
func (o *layout) refs() lists {
	l := o.lists
	l.skip(o.nkeys)
	return l
}

// indexes returns a reader of the index entries, name then value.
func (o *layout) indexes() lists {
	l := o.refs()
	l.skip(o.nrefs)
	return l
}

// sections returns the packed keys, refs and index entries: two records
// whose sections are equal have equal lists.
func (o *layout) sections() (keys, refs, indexes string) {
	all := string(o.lists)
	l := o.lists
	l.skip(o.nkeys)
	afterKeys := len(all) - len(l)
	l.skip(o.nrefs)
	afterRefs := len(all) - len(l)
	return all[:afterKeys], all[afterKeys:afterRefs], all[afterRefs:]
}

// lists reads the strings of a packed record in turn.
type lists string

func (l *lists) uvarint() int {
	var n int
	for i, shift := 0, 0; ; i, shift = i+1, shift+7 {
		c := (*l)[i]
		n |= int(c&0x7f) << shift
		if c < 0x80 {
			*l = (*l)[i+1:]
			return n
		}
	}
}

// next returns the next string; the caller knows how many there are.
func (l *lists) next() string {
	n := l.uvarint()
	s := string((*l)[:n])
	*l = (*l)[n:]
	return s
}

func (l *lists) skip(n int) {
	for range n {
		l.next()
	}
}

// pack returns the stored form of rec with ID id (rec.ID is not read)
// at version 0. rec.Refs must be unique already (store.UniqueRefs). It
// makes one allocation, the blob, which shares nothing with rec or id.
func pack(id string, rec *store.Record) packed {
	head := [...]int{len(id), len(rec.Kind), len(rec.AccountID), len(rec.ParentID), len(rec.Data), len(rec.Keys), len(rec.Refs), len(rec.Indexes)}
	n := len(id) + len(rec.Kind) + len(rec.AccountID) + len(rec.ParentID) + len(rec.Data)
	for _, x := range head {
		n += uvarintLen(x)
	}
	for _, k := range rec.Keys {
		n += uvarintLen(len(k)) + len(k)
	}
	for _, ref := range rec.Refs {
		n += uvarintLen(len(ref)) + len(ref)
	}
	for _, e := range rec.Indexes {
		n += uvarintLen(len(e.Name)) + len(e.Name) + uvarintLen(len(e.Value)) + len(e.Value)
	}
	// The blob is written into an array of exactly its size, made here
	// and referenced by nothing else, then viewed as a string without a
	// copy: nothing writes to the array once it is the blob (b does not
	// escape pack), so the string is immutable, as a string must be.
	b := make([]byte, 0, n)
	b = putString(b, id)
	for _, x := range head[1:] {
		b = binary.AppendUvarint(b, uint64(x))
	}
	b = append(b, rec.Kind...)
	b = append(b, rec.AccountID...)
	b = append(b, rec.ParentID...)
	b = append(b, rec.Data...)
	for _, k := range rec.Keys {
		b = putString(b, k)
	}
	for _, ref := range rec.Refs {
		b = putString(b, ref)
	}
	for _, e := range rec.Indexes {
		b = putString(b, e.Name)
		b = putString(b, e.Value)
	}
	return packed{blob: unsafe.String(unsafe.SliceData(b), len(b))}
}

func uvarintLen(x int) int {
	n := 1
	for ; x >= 0x80; x >>= 7 {
		n++
	}
	return n
}

func putString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
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

// need counts what a copy of a record laid out as o takes.
func (c *copies) need(o *layout) {
	c.nd += len(o.data)
	c.ns += o.nkeys + o.nrefs
	c.ni += o.nindexes
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

// record returns a copy of r, laid out as o, that the caller owns, carved
// from c's arrays. Its strings share r's immutable bytes.
func (c *copies) record(r *packed, o *layout) store.Record {
	out := store.Record{Kind: o.kind, AccountID: o.account, ID: o.id, ParentID: o.parent, Version: r.version}
	if o.data != "" {
		start := len(c.data)
		c.data = append(c.data, o.data...)
		out.Data = c.data[start:len(c.data):len(c.data)]
	}
	l := o.keys()
	out.Keys = c.strings(&l, o.nkeys)
	out.Refs = c.strings(&l, o.nrefs)
	if o.nindexes > 0 {
		start := len(c.idx)
		for range o.nindexes {
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
	o := r.open()
	c.need(&o)
	c.alloc()
	return c.record(r, &o)
}
