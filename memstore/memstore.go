// Package memstore is the in-memory [store.Store]: for tests, examples
// and single-process hosts that need no persistence.
//
// # Model
//
// All records live in one table behind one read-write mutex: reads share
// it, writes hold it exclusively, so every write is atomic and
// serialised. Records are copied on the way in and on the way out; a
// caller can never reach stored state.
//
// # Stored form
//
// A store of hundreds of thousands of records is mostly work for the
// garbage collector: each cycle marks every live heap object and follows
// every pointer it finds, one cache miss each. A record kept as a
// [store.Record] with its own slices and strings is half a dozen heap
// objects, and each map, set and index that names it by a string adds a
// pointer more. So a record is stored packed: one immutable string, its
// blob, holds all its bytes (ID, kind, account, parent, document, keys,
// refs, index entries), and it lives with its version in a slot of a
// table, numbered by its handle (a uint32). What names a record holds its
// handle, not its strings: the maps that find it by ID and by lookup key
// are keyed by the strings' hashes (hash/maphash, with a seed of the
// store's own; a string whose hash is taken goes to a small map of its
// own) and hold handles, the sets of referrers and children hold handles,
// and the list and secondary indexes hold handles and copies of the first
// bytes of IDs and values (see below). None of them holds a pointer per
// record, and the collector scans none of their entries: a record is one
// heap object, which holds no pointer, and one pointer, its slot's.
//
// A write packs the record it is given once, outside the lock for a
// create or replace. An update puts a new blob in the record's slot (a
// blob is never written to: the feed and the records handed out share
// it), and moves only the keys, refs and index entries that changed; a
// delete empties the slot, for a later record to take. A read copies the
// fields out (a fresh Data; strings that share the packed, immutable
// bytes). [Store.Update] hands its callback such a copy and returns it,
// with its new Version, as the stored result; [Store.Replace] returns the
// record it was given, with its new Version. Neither shares anything with
// what is stored.
//
// # Lists
//
// Each (kind, account) pair, and each (kind, account, parent) triple, has
// an index of its records in ID order: items that hold a record's handle
// and its ID's first 24 bytes, in sorted chunks of at most 256 (see
// idList). Two items compare by those bytes, and only when they are equal
// by the full IDs, read from the slots. A list is a binary search for the
// cursor and a walk down of at most Limit items: O(log n + page), never
// O(all). The Service's IDs grow with time, so a create appends to the
// last chunk; any other insert or delete moves at most a chunk's items,
// so no write copies a whole index while it holds the lock.
//
// # Secondary indexes
//
// Each (kind, account, index name), and each (kind, index name) across
// accounts, has a B-tree of entries, each a record's handle, the place of
// the entry among the record's, and copies of what orders it: the value's
// first 16 bytes, the value's hash and the ID's first 16 bytes (the full
// value and ID, read from the slot, break ties). The entries of one value
// are one range, in ID order: a query for one value is a descent of at
// most the page. A query for values below a bound, and one for the
// referrers of a record, collect their matches and sort them by ID.
//
// # Update callbacks
//
// [Store.Update] runs its callback while holding the write lock, so the
// callback must not call back into the Store. It runs it once.
//
// # Change feed
//
// Every committed change is appended to an in-memory log under the same
// lock as the write, so the feed's order is the commit order. The log is
// a ring of the newest [Options].FeedRetention changes (default
// [DefaultFeedRetention]), each holding the packed record the write left
// (its blob shared with the record's slot, not copied); a reader behind
// them gets a [store.CompactedError]. [Store.Wait] wakes on the next
// commit through a channel a waiter makes and the next commit closes (a
// write with nobody waiting allocates none).
package memstore

import (
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/store"
)

var _ store.Store = (*Store)(nil)

// Store is an in-memory [store.Store]. The zero value is not usable;
// call [New]. It is safe for concurrent use.
type Store struct {
	mu       sync.RWMutex
	slots    table                 // the records, by handle
	recs     hashed[uint32]        // ID -> handle
	keys     hashed[uint64]        // lookup key -> handle<<32 | the key's place among its record's keys
	refBy    map[uint32]*handleSet // referenced record -> referrers, by handle
	children map[uint32]*handleSet // parent -> children, by handle
	index    map[indexKey]ids      // list indexes: records in ID order
	values   map[valueKey]values   // secondary indexes: (value, id) pairs, ascending
	rev      int64                 // the revision of the last committed change
	floor    int64                 // changes up to this revision are compacted away
	log      feedLog               // the newest changes, the last of revision rev

	// Waiters: Wait takes wake, not mu, so that followers of the feed
	// waiting for the next commit do not queue on the write lock.
	wake      sync.Mutex
	published int64         // rev as of the last commit's wake-up, guarded by wake
	commits   chan struct{} // made by a waiter, closed (and dropped) by the next commit; guarded by wake
}

// DefaultFeedRetention is the default of Options.FeedRetention.
const DefaultFeedRetention = 10_000

// Options configures a Store. The zero value gives the defaults.
type Options struct {
	// FeedRetention is how many of the newest changes the change feed
	// keeps (default DefaultFeedRetention). Each holds its record's
	// document, so the feed's memory is about FeedRetention times the
	// average document size.
	FeedRetention int
}

type indexKey struct {
	kind    store.Kind
	account string
	parent  string
}

// valueKey names one secondary index of one kind, in one account or (with
// account "") in all.
type valueKey struct {
	kind    store.Kind
	account string
	name    string
}

// eachValue calls f with each secondary index entry of the record of
// handle h, laid out as o, and the key of each index it belongs to (its
// account's, and the one across accounts).
func (s *Store) eachValue(h uint32, o *layout, f func(valueKey, entry)) {
	l := o.indexes()
	for i := range o.nindexes {
		name := l.next()
		value := l.next()
		e := entryOf(value, s.recs.hash(value), o.id, h, uint32(i))
		for _, acct := range [2]string{o.account, ""} {
			f(valueKey{o.kind, acct, name}, e)
		}
	}
}

// addValues enters the secondary index entries of the record of handle
// h, laid out as o, which its slot holds. An entry that it names twice is
// entered once. A new index's key is a copy: the strings of o are a blob
// that an update replaces.
func (s *Store) addValues(h uint32, o *layout) {
	s.eachValue(h, o, func(k valueKey, e entry) {
		x, ok := s.values[k]
		if !ok {
			x = newValues(&s.slots)
			s.values[valueKey{store.Kind(strings.Clone(string(k.kind))), strings.Clone(k.account), strings.Clone(k.name)}] = x
		}
		x.add(e)
	})
}

// dropValues removes the secondary index entries of the record of handle
// h, laid out as o, which its slot still holds (the indexes compare
// entries by the values in the slot).
func (s *Store) dropValues(h uint32, o *layout) {
	s.eachValue(h, o, func(k valueKey, e entry) {
		if x, ok := s.values[k]; ok {
			x.drop(e)
			if x.empty() {
				delete(s.values, k)
			}
		}
	})
}

// New returns an empty Store with the default [Options].
func New() *Store { return NewWithOptions(Options{}) }

// Exclusive implements [store.Exclusive]: only this process writes the
// in-memory store.
func (s *Store) Exclusive() bool { return true }

// NewWithOptions returns an empty Store configured by o.
func NewWithOptions(o Options) *Store { return newWithHash(o, seededHash()) }

// newWithHash returns an empty Store configured by o whose maps of IDs
// and keys hash strings with hash.
func newWithHash(o Options, hash func(string) uint64) *Store {
	keep := o.FeedRetention
	if keep <= 0 {
		keep = DefaultFeedRetention
	}
	s := &Store{
		log:      feedLog{keep: keep},
		refBy:    make(map[uint32]*handleSet),
		children: make(map[uint32]*handleSet),
		index:    make(map[indexKey]ids),
		values:   make(map[valueKey]values),
	}
	s.recs = newHashed(hash, func(h uint32, id string) bool {
		r := s.slots.at(h)
		return r.blob != "" && r.id() == id
	})
	s.keys = newHashed(hash, func(v uint64, key string) bool {
		k, ok := s.slots.at(uint32(v >> 32)).key(int(uint32(v)))
		return ok && k == key
	})
	return s
}

// indexKeys lists the indexes a record belongs to: the first n of ks.
func indexKeys(o *layout) (ks [4]indexKey, n int) {
	ks[0], ks[1] = indexKey{o.kind, o.account, ""}, indexKey{o.kind, "", ""}
	if p := o.parent; p != "" {
		ks[2], ks[3] = indexKey{o.kind, o.account, p}, indexKey{o.kind, "", p}
		return ks, 4
	}
	return ks, 2
}

func notFound(kind store.Kind, id string) error {
	return apierr.NotFoundf("%s %s not found", kind, id)
}

// Create implements [store.Store].
func (s *Store) Create(ctx context.Context, rec store.Record) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	rec.Refs = store.UniqueRefs(rec.Refs)
	r := pack(rec.ID, &rec)
	o := r.open()
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.recs.get(o.id); ok {
		return &store.DuplicateError{Key: strings.Clone(rec.ID)}
	}
	if err := s.checkKeys(&o, noHandle); err != nil {
		return err
	}
	parent := uint32(noHandle)
	if o.parent != "" {
		p, ok := s.recs.get(o.parent)
		if !ok || s.slots.at(p).open().account != o.account {
			return &store.MissingRefError{ID: strings.Clone(rec.ParentID)}
		}
		parent = p
	}
	if err := s.checkRefs(&o); err != nil {
		return err
	}
	if s.slots.full() {
		return apierr.New(apierr.ResourceExhausted, "the store holds as many records as it can")
	}
	s.commit(store.OpCreate, &r, rec.Note)
	h := s.slots.add(r)
	s.recs.put(o.id, h)
	s.addKeys(h, &o)
	s.addRefs(h, &o)
	if parent != noHandle {
		addTo(s.children, parent, h)
	}
	ks, n := indexKeys(&o)
	it := itemOf(o.id, h)
	for _, k := range ks[:n] {
		x, ok := s.index[k]
		if !ok {
			x = newIDs(&s.slots)
			// A copy of the key: o's strings are a blob that an update
			// replaces.
			s.index[indexKey{store.Kind(strings.Clone(string(k.kind))), strings.Clone(k.account), strings.Clone(k.parent)}] = x
		}
		x.add(it)
	}
	s.addValues(h, &o)
	return nil
}

// find returns the handle of the record id of kind in account.
func (s *Store) find(kind store.Kind, account, id string) (uint32, bool) {
	h, ok := s.recs.get(id)
	if !ok {
		return 0, false
	}
	if o := s.slots.at(h).open(); o.kind != kind || o.account != account {
		return 0, false
	}
	return h, true
}

func (s *Store) existsIn(id, account string) bool {
	h, ok := s.recs.get(id)
	return ok && s.slots.at(h).open().account == account
}

// checkKeys fails if one of the keys of a record laid out as o is held by
// a record other than the one of handle self, or named twice by it.
func (s *Store) checkKeys(o *layout, self uint32) error {
	var seen map[string]bool // for records with many keys; few are compared pairwise
	if o.nkeys > 8 {
		seen = make(map[string]bool, o.nkeys)
	}
	l := o.keys()
	for i := range o.nkeys {
		k := l.next()
		if v, ok := s.keys.get(k); ok && uint32(v>>32) != self {
			return &store.DuplicateError{Key: strings.Clone(k)}
		}
		twice := seen[k]
		if seen != nil {
			seen[k] = true
		} else {
			prev := o.keys()
			for range i {
				twice = twice || prev.next() == k
			}
		}
		if twice {
			return &store.DuplicateError{Key: strings.Clone(k)}
		}
	}
	return nil
}

func (s *Store) checkRefs(o *layout) error {
	l := o.refs()
	for range o.nrefs {
		if ref := l.next(); ref != o.id && !s.existsIn(ref, o.account) {
			return &store.MissingRefError{ID: strings.Clone(ref)}
		}
	}
	return nil
}

// addKeys enters the keys of the record of handle h, laid out as o, which
// its slot holds.
func (s *Store) addKeys(h uint32, o *layout) {
	l := o.keys()
	for i := range o.nkeys {
		s.keys.put(l.next(), uint64(h)<<32|uint64(i))
	}
}

// dropKeys removes the keys of a record laid out as o, which its slot
// still holds.
func (s *Store) dropKeys(o *layout) {
	l := o.keys()
	for range o.nkeys {
		s.keys.del(l.next())
	}
}

// addRefs enters the record of handle h, laid out as o, in the referrers
// of each record it references (which exist: checkRefs said so).
func (s *Store) addRefs(h uint32, o *layout) {
	s.eachRef(o, func(to uint32) { addTo(s.refBy, to, h) })
}

// dropRefs removes the record of handle h, laid out as o, from the
// referrers of each record it references.
func (s *Store) dropRefs(h uint32, o *layout) {
	s.eachRef(o, func(to uint32) { removeFrom(s.refBy, to, h) })
}

// eachRef calls f with the handle of each stored record that the record
// laid out as o references, other than itself.
func (s *Store) eachRef(o *layout, f func(to uint32)) {
	l := o.refs()
	for range o.nrefs {
		if ref := l.next(); ref != o.id {
			if to, ok := s.recs.get(ref); ok {
				f(to)
			}
		}
	}
}

// addTo adds v to the set of k in m.
func addTo(m map[uint32]*handleSet, k, v uint32) {
	set := m[k]
	if set == nil {
		set = newHandleSet()
		m[k] = set
	}
	set.add(v)
}

// removeFrom removes v from the set of k in m, and the set when it is
// left empty.
func removeFrom(m map[uint32]*handleSet, k, v uint32) {
	if set := m[k]; set != nil {
		set.remove(v)
		if set.len() == 0 {
			delete(m, k)
		}
	}
}

// Get implements [store.Store].
func (s *Store) Get(ctx context.Context, kind store.Kind, accountID, id string) (store.Record, error) {
	if err := ctx.Err(); err != nil {
		return store.Record{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	h, ok := s.find(kind, accountID, id)
	if !ok {
		return store.Record{}, notFound(kind, id)
	}
	return s.slots.at(h).record(), nil
}

// Lookup implements [store.Store].
func (s *Store) Lookup(ctx context.Context, kind store.Kind, key string) (store.Record, error) {
	if err := ctx.Err(); err != nil {
		return store.Record{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	v, ok := s.keys.get(key)
	if !ok {
		return store.Record{}, apierr.NotFoundf("no %s with that key", kind)
	}
	r := s.slots.at(uint32(v >> 32))
	if r.open().kind != kind {
		return store.Record{}, apierr.NotFoundf("no %s with that key", kind)
	}
	return r.record(), nil
}

// Update implements [store.Store]. It returns the record its callback
// changed (a copy the store made for the callback, which nothing stored
// shares), with its new Version.
func (s *Store) Update(ctx context.Context, kind store.Kind, accountID, id string, fn func(*store.Record) error) (store.Record, error) {
	if err := ctx.Err(); err != nil {
		return store.Record{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.find(kind, accountID, id)
	if !ok {
		return store.Record{}, notFound(kind, id)
	}
	old := *s.slots.at(h)
	work := old.record()
	if err := fn(&work); err != nil {
		return store.Record{}, err
	}
	if err := sameIdentity(&work, &old); err != nil {
		return store.Record{}, err
	}
	work.Refs = store.UniqueRefs(work.Refs)
	r := pack(work.ID, &work)
	if err := s.put(h, &old, &r, work.Note); err != nil {
		return store.Record{}, err
	}
	return stored(work, r.version), nil
}

// Replace implements [store.Store]. It returns rec, with its new Version:
// the store keeps a copy of its own.
func (s *Store) Replace(ctx context.Context, rec store.Record) (store.Record, error) {
	if err := ctx.Err(); err != nil {
		return store.Record{}, err
	}
	rec.Refs = store.UniqueRefs(rec.Refs)
	r := pack(rec.ID, &rec)
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.find(rec.Kind, rec.AccountID, rec.ID)
	if !ok {
		return store.Record{}, notFound(rec.Kind, rec.ID)
	}
	old := *s.slots.at(h)
	if old.version != rec.Version {
		return store.Record{}, &store.VersionError{ID: rec.ID, Want: rec.Version, Have: old.version}
	}
	if err := sameIdentity(&rec, &old); err != nil {
		return store.Record{}, err
	}
	if err := s.put(h, &old, &r, rec.Note); err != nil {
		return store.Record{}, err
	}
	return stored(rec, r.version), nil
}

// sameIdentity fails unless rec is old's kind, account, ID and parent.
func sameIdentity(rec *store.Record, old *packed) error {
	if o := old.open(); rec.Kind != o.kind || rec.AccountID != o.account || rec.ID != o.id || rec.ParentID != o.parent {
		return apierr.New(apierr.Internal, "update may not change a record's kind, account, id or parent")
	}
	return nil
}

// stored returns rec, which a write just stored, as a read of it would:
// at version, empty slices nil, no note.
func stored(rec store.Record, version int64) store.Record {
	rec.Version = version
	rec.Note = store.Note{}
	if len(rec.Data) == 0 {
		rec.Data = nil
	}
	if len(rec.Keys) == 0 {
		rec.Keys = nil
	}
	if len(rec.Refs) == 0 {
		rec.Refs = nil
	}
	if len(rec.Indexes) == 0 {
		rec.Indexes = nil
	}
	return rec
}

// put stores r in the slot of handle h in place of old, its change
// labelled note, under the write lock, if r's keys and refs hold.
func (s *Store) put(h uint32, old, r *packed, note store.Note) error {
	o := r.open()
	if err := s.checkKeys(&o, h); err != nil {
		return err
	}
	if err := s.checkRefs(&o); err != nil {
		return err
	}
	// The maps, sets and indexes name the record by its handle and its
	// ID, which it keeps; its keys and index entries are entered by their
	// place among the record's, so only changed lists move. The old keys
	// and index entries go while the slot still holds them (the keys map
	// and the indexes compare their entries by what the slot holds), the
	// new come once it holds them.
	oo := old.open()
	oldKeys, oldRefs, oldIndexes := oo.sections()
	keys, refs, indexes := o.sections()
	if keys != oldKeys {
		s.dropKeys(&oo)
	}
	if refs != oldRefs {
		s.dropRefs(h, &oo)
		s.addRefs(h, &o)
	}
	if indexes != oldIndexes {
		s.dropValues(h, &oo)
	}
	s.commit(store.OpUpdate, r, note)
	*s.slots.at(h) = *r
	if keys != oldKeys {
		s.addKeys(h, &o)
	}
	if indexes != oldIndexes {
		s.addValues(h, &o)
	}
	return nil
}

// Delete implements [store.Store].
func (s *Store) Delete(ctx context.Context, kind store.Kind, accountID, id string, note store.Note) error {
	return s.delete(ctx, kind, accountID, id, -1, note)
}

// DeleteIf implements [store.Store].
func (s *Store) DeleteIf(ctx context.Context, kind store.Kind, accountID, id string, version int64, note store.Note) error {
	return s.delete(ctx, kind, accountID, id, version, note)
}

// delete deletes the record and its descendants, the named record's
// change labelled note; when version is not negative, only if the record
// is at that version.
func (s *Store) delete(ctx context.Context, kind store.Kind, accountID, id string, version int64, note store.Note) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.find(kind, accountID, id)
	if !ok {
		return notFound(kind, id)
	}
	r := *s.slots.at(h)
	if version >= 0 && r.version != version {
		return &store.VersionError{ID: id, Want: version, Have: r.version}
	}
	// Collect the record and its descendants.
	doomed := map[uint32]bool{h: true}
	queue := []uint32{h}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		for c := range s.children[cur].all() {
			if !doomed[c] {
				doomed[c] = true
				queue = append(queue, c)
			}
		}
	}
	for d := range doomed {
		var refs []string
		for by := range s.refBy[d].all() {
			if !doomed[by] {
				refs = append(refs, strings.Clone(s.slots.at(by).id()))
			}
		}
		if len(refs) > 0 {
			slices.Sort(refs)
			return &store.InUseError{ID: strings.Clone(s.slots.at(d).id()), Referrers: refs}
		}
	}
	// Children first, in ID order, the named record last: one change each.
	delete(doomed, h)
	cascade := make([]uint32, 0, len(doomed))
	for d := range doomed {
		cascade = append(cascade, d)
	}
	s.sortByID(cascade)
	for _, d := range cascade {
		c := *s.slots.at(d)
		s.commit(store.OpDelete, &c, store.Note{}) // cascaded changes carry no note
		s.remove(d, &c)
	}
	s.commit(store.OpDelete, &r, note)
	s.remove(h, &r)
	return nil
}

// sortByID sorts the handles hs in the order of their records' IDs.
func (s *Store) sortByID(hs []uint32) {
	slices.SortFunc(hs, func(a, b uint32) int { return strings.Compare(s.slots.at(a).id(), s.slots.at(b).id()) })
}

// remove removes the record r of handle h from everything that names it,
// then empties its slot.
func (s *Store) remove(h uint32, r *packed) {
	o := r.open()
	s.dropValues(h, &o)
	s.dropKeys(&o)
	s.dropRefs(h, &o)
	delete(s.refBy, h)
	delete(s.children, h)
	if o.parent != "" {
		if p, ok := s.recs.get(o.parent); ok { // not when the cascade removed it first
			removeFrom(s.children, p, h)
		}
	}
	ks, n := indexKeys(&o)
	it := itemOf(o.id, h)
	for _, k := range ks[:n] {
		if x, ok := s.index[k]; ok {
			x.drop(it)
			if x.empty() {
				delete(s.index, k)
			}
		}
	}
	s.recs.del(o.id)
	s.slots.release(h)
}

// List implements [store.Store].
func (s *Store) List(ctx context.Context, q store.Query) ([]store.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := q.Check(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if q.Index != "" || q.RefersTo != "" {
		return s.listSelected(q), nil
	}
	x, ok := s.index[indexKey{q.Kind, q.AccountID, q.ParentID}]
	if !ok {
		return []store.Record{}, nil
	}
	return s.newestFirst(pageOf(x, &s.slots, q.BeforeID, q.Limit)), nil
}

// newestFirst returns copies of the records of handles hs, in that order
// (newest first: their IDs descending), under the read lock. The copies
// are carved from a few arrays for the whole answer (see copies).
func (s *Store) newestFirst(hs []uint32) []store.Record {
	var c copies
	for _, h := range hs {
		o := s.slots.at(h).open()
		c.need(&o)
	}
	c.alloc()
	out := make([]store.Record, 0, len(hs))
	for _, h := range hs {
		r := s.slots.at(h)
		o := r.open()
		out = append(out, c.record(r, &o))
	}
	return out
}

// listSelected answers a List by secondary index or by reference, under
// the read lock. An equality match is a B-tree descent and a walk of at
// most the page; a Below match and a RefersTo match collect their matches
// and sort them: O(m log m) for m matching records.
func (s *Store) listSelected(q store.Query) []store.Record {
	keep := func(h uint32) bool {
		o := s.slots.at(h).open()
		return o.kind == q.Kind && (q.AccountID == "" || o.account == q.AccountID) &&
			(q.ParentID == "" || o.parent == q.ParentID) && (q.BeforeID == "" || o.id < q.BeforeID)
	}
	var hs []uint32 // matching records, ascending by ID, possibly more than a page
	switch {
	case q.RefersTo != "":
		if to, ok := s.recs.get(q.RefersTo); ok {
			for by := range s.refBy[to].all() {
				if keep(by) {
					hs = append(hs, by)
				}
			}
		}
		s.sortByID(hs)
	case q.Below:
		if x, ok := s.values[valueKey{q.Kind, q.AccountID, q.Index}]; ok {
			below(x, &s.slots, q.Value, func(h uint32) {
				if keep(h) {
					hs = append(hs, h)
				}
			})
		}
		s.sortByID(hs)
		hs = slices.Compact(hs) // several values of one record below the bound
	default:
		var page []uint32 // descending
		if x, ok := s.values[valueKey{q.Kind, q.AccountID, q.Index}]; ok {
			equal(x, &s.slots, q.Value, s.recs.hash(q.Value), q.BeforeID, func(h uint32) bool {
				if keep(h) {
					page = append(page, h)
				}
				return len(page) < q.Limit
			})
		}
		return s.newestFirst(page)
	}
	page := hs[len(hs)-min(q.Limit, len(hs)):]
	slices.Reverse(page)
	return s.newestFirst(page)
}
