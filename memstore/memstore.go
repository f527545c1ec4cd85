// Package memstore is the in-memory [store.Store]: for tests, examples
// and single-process hosts that need no persistence.
//
// # Model
//
// All records live in maps behind one read-write mutex: reads share it,
// writes hold it exclusively, so every write is atomic and serialised.
// Records are copied on the way in and on the way out; a caller can
// never reach stored state.
//
// # Stored form
//
// A store of hundreds of thousands of records is mostly work for the
// garbage collector: each cycle marks every live heap object, and a
// record kept as a [store.Record] with its own slices and strings is
// half a dozen of them, and the map of pointers to them. So a record is
// stored packed: one immutable string holds all its bytes (a header of
// lengths, then kind, account, parent, document, keys, refs, index
// entries), and the ID is a second string, kept by the record's updates.
// The packed record, the two strings and the version, is a value in the
// records map, and the lookup keys, index values and set members that
// name it are substrings of its two strings: a record costs two heap
// objects, neither of which the collector has to scan.
//
// A write packs the record it is given once; a read copies the fields
// out (a fresh Data; strings that share the packed, immutable bytes).
// [Store.Update] hands its callback such a copy and returns it, with its
// new Version, as the stored result; [Store.Replace] returns the record
// it was given, with its new Version. Neither shares anything with what
// is stored.
//
// # Lists
//
// Each (kind, account) pair, and each (kind, account, parent) triple, has an
// index of record IDs kept in order in a B-tree (github.com/google/btree).
// A list is a descent from the cursor of at most Limit entries:
// O(log n + page), never O(all). An insert or a delete touches one path of
// small nodes, so no write copies a whole index while it holds the lock.
//
// # Secondary indexes
//
// Each (kind, account, index name), and each (kind, index name) across
// accounts, has a B-tree of (value, record ID) pairs. A query for one
// value is a descent of at most the page; a query for values below a
// bound, and one for the referrers of a record, collect their matches and
// sort them by ID.
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
// (shared with the records map, not copied); a reader behind them gets a
// [store.CompactedError]. [Store.Wait] wakes on the next commit through a
// channel a waiter makes and the next commit closes (a write with nobody
// waiting allocates none).
package memstore

import (
	"context"
	"slices"
	"sort"
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
	recs     map[string]packed              // by ID
	keys     map[string]string              // lookup key -> ID
	refBy    map[string]map[string]struct{} // referenced ID -> referrer IDs
	children map[string]map[string]struct{} // parent ID -> child IDs
	index    map[indexKey]ids               // record IDs, ascending
	values   map[valueKey]values            // secondary indexes: (value, id) pairs, ascending
	rev      int64                          // the revision of the last committed change
	floor    int64                          // changes up to this revision are compacted away
	log      feedLog                        // the newest changes, the last of revision rev

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

// eachValue calls f with each of r's secondary index entries and the key
// of each index it belongs to (its account's, and the one across
// accounts).
func eachValue(r *packed, o *layout, f func(valueKey, valueEntry)) {
	l := o.indexes()
	for range o.nindexes {
		name := l.next()
		value := l.next()
		for _, acct := range [2]string{o.account, ""} {
			f(valueKey{o.kind, acct, name}, valueEntry{value, r.id})
		}
	}
}

// addValues and dropValues keep r's secondary index entries. An entry
// that r names twice is kept once.
func (s *Store) addValues(r *packed, o *layout) {
	eachValue(r, o, func(k valueKey, e valueEntry) {
		x, ok := s.values[k]
		if !ok {
			x = newValues()
			s.values[k] = x
		}
		x.add(e)
	})
}

func (s *Store) dropValues(r *packed, o *layout) {
	eachValue(r, o, func(k valueKey, e valueEntry) {
		if x, ok := s.values[k]; ok {
			x.drop(e)
			if x.empty() {
				delete(s.values, k)
			}
		}
	})
}

// repointValues makes r's secondary index entries, which are in place,
// hold r's strings: an update that leaves them equal moves none.
func (s *Store) repointValues(r *packed, o *layout) {
	eachValue(r, o, func(k valueKey, e valueEntry) {
		if x, ok := s.values[k]; ok {
			x.repoint(e)
		}
	})
}

// New returns an empty Store with the default [Options].
func New() *Store { return NewWithOptions(Options{}) }

// NewWithOptions returns an empty Store configured by o.
func NewWithOptions(o Options) *Store {
	keep := o.FeedRetention
	if keep <= 0 {
		keep = DefaultFeedRetention
	}
	return &Store{
		log:      feedLog{keep: keep},
		recs:     make(map[string]packed),
		keys:     make(map[string]string),
		refBy:    make(map[string]map[string]struct{}),
		children: make(map[string]map[string]struct{}),
		index:    make(map[indexKey]ids),
		values:   make(map[valueKey]values),
	}
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
	r := pack(strings.Clone(rec.ID), &rec)
	o := r.open()
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.recs[r.id]; ok {
		return &store.DuplicateError{Key: r.id}
	}
	if err := s.checkKeys(&r, &o, ""); err != nil {
		return err
	}
	var parent packed
	if o.parent != "" {
		var ok bool
		if parent, ok = s.recs[o.parent]; !ok || parent.open().account != o.account {
			return &store.MissingRefError{ID: o.parent}
		}
	}
	if err := s.checkRefs(&r, &o); err != nil {
		return err
	}
	s.commit(ctx, store.OpCreate, &r)
	s.recs[r.id] = r
	s.addKeys(&r, &o)
	s.addRefs(&r, &o)
	if o.parent != "" {
		addTo(s.children, parent.id, r.id)
	}
	ks, n := indexKeys(&o)
	for _, k := range ks[:n] {
		x, ok := s.index[k]
		if !ok {
			x = newIDs()
			s.index[k] = x
		}
		x.add(r.id)
	}
	s.addValues(&r, &o)
	return nil
}

func (s *Store) existsIn(id, account string) bool {
	r, ok := s.recs[id]
	return ok && r.open().account == account
}

// checkKeys fails if one of r's keys is held by a record other than self,
// or named twice by r.
func (s *Store) checkKeys(r *packed, o *layout, self string) error {
	var seen map[string]bool // for records with many keys; few are compared pairwise
	if o.nkeys > 8 {
		seen = make(map[string]bool, o.nkeys)
	}
	l := o.keys()
	for i := range o.nkeys {
		k := l.next()
		if owner, ok := s.keys[k]; ok && owner != self {
			return &store.DuplicateError{Key: k}
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
			return &store.DuplicateError{Key: k}
		}
	}
	return nil
}

func (s *Store) checkRefs(r *packed, o *layout) error {
	l := o.refs()
	for range o.nrefs {
		if ref := l.next(); ref != r.id && !s.existsIn(ref, o.account) {
			return &store.MissingRefError{ID: ref}
		}
	}
	return nil
}

func (s *Store) addKeys(r *packed, o *layout) {
	l := o.keys()
	for range o.nkeys {
		s.keys[l.next()] = r.id
	}
}

func (s *Store) dropKeys(o *layout) {
	l := o.keys()
	for range o.nkeys {
		delete(s.keys, l.next())
	}
}

// addRefs enters r in the referrers of each record it references (which
// exist: checkRefs said so), under that record's own ID string.
func (s *Store) addRefs(r *packed, o *layout) {
	l := o.refs()
	for range o.nrefs {
		if ref := l.next(); ref != r.id {
			addTo(s.refBy, s.recs[ref].id, r.id)
		}
	}
}

func (s *Store) dropRefs(r *packed, o *layout) {
	l := o.refs()
	for range o.nrefs {
		removeFrom(s.refBy, l.next(), r.id)
	}
}

func addTo(m map[string]map[string]struct{}, k, v string) {
	set := m[k]
	if set == nil {
		set = make(map[string]struct{})
		m[k] = set
	}
	set[v] = struct{}{}
}

func removeFrom(m map[string]map[string]struct{}, k, v string) {
	if set := m[k]; set != nil {
		delete(set, v)
		if len(set) == 0 {
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
	r, ok := s.recs[id]
	if !ok {
		return store.Record{}, notFound(kind, id)
	}
	if o := r.open(); o.kind != kind || o.account != accountID {
		return store.Record{}, notFound(kind, id)
	}
	return r.record(), nil
}

// Lookup implements [store.Store].
func (s *Store) Lookup(ctx context.Context, kind store.Kind, key string) (store.Record, error) {
	if err := ctx.Err(); err != nil {
		return store.Record{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	id, ok := s.keys[key]
	if !ok {
		return store.Record{}, apierr.NotFoundf("no %s with that key", kind)
	}
	r := s.recs[id]
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
	old, ok := s.recs[id]
	if !ok {
		return store.Record{}, notFound(kind, id)
	}
	if o := old.open(); o.kind != kind || o.account != accountID {
		return store.Record{}, notFound(kind, id)
	}
	work := old.record()
	if err := fn(&work); err != nil {
		return store.Record{}, err
	}
	if err := sameIdentity(&work, &old); err != nil {
		return store.Record{}, err
	}
	work.Refs = store.UniqueRefs(work.Refs)
	r := pack(old.id, &work)
	if err := s.put(ctx, &old, &r); err != nil {
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
	r := pack("", &rec) // the ID is the stored record's own, below
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.recs[rec.ID]
	if !ok {
		return store.Record{}, notFound(rec.Kind, rec.ID)
	}
	if o := old.open(); o.kind != rec.Kind || o.account != rec.AccountID {
		return store.Record{}, notFound(rec.Kind, rec.ID)
	}
	if old.version != rec.Version {
		return store.Record{}, &store.VersionError{ID: rec.ID, Want: rec.Version, Have: old.version}
	}
	if err := sameIdentity(&rec, &old); err != nil {
		return store.Record{}, err
	}
	r.id = old.id
	if err := s.put(ctx, &old, &r); err != nil {
		return store.Record{}, err
	}
	return stored(rec, r.version), nil
}

// sameIdentity fails unless rec is old's kind, account, ID and parent.
func sameIdentity(rec *store.Record, old *packed) error {
	if o := old.open(); rec.Kind != o.kind || rec.AccountID != o.account || rec.ID != old.id || rec.ParentID != o.parent {
		return apierr.New(apierr.Internal, "update may not change a record's kind, account, id or parent")
	}
	return nil
}

// stored returns rec, which a write just stored, as a read of it would:
// at version, empty slices nil.
func stored(rec store.Record, version int64) store.Record {
	rec.Version = version
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

// put stores r in place of old, under the write lock, if r's keys and
// refs hold.
func (s *Store) put(ctx context.Context, old, r *packed) error {
	o := r.open()
	if err := s.checkKeys(r, &o, r.id); err != nil {
		return err
	}
	if err := s.checkRefs(r, &o); err != nil {
		return err
	}
	// What names the record must name it by r's strings, not old's, so
	// that old's blob can go; the refs name it by its ID, which r keeps.
	oo := old.open()
	oldKeys, oldRefs, oldIndexes := oo.sections()
	keys, refs, indexes := o.sections()
	if keys != oldKeys {
		s.dropKeys(&oo)
	}
	s.addKeys(r, &o)
	if refs != oldRefs {
		s.dropRefs(old, &oo)
		s.addRefs(r, &o)
	}
	if indexes != oldIndexes {
		s.dropValues(old, &oo)
		s.addValues(r, &o)
	} else {
		s.repointValues(r, &o)
	}
	s.commit(ctx, store.OpUpdate, r)
	s.recs[r.id] = *r
	return nil
}

// Delete implements [store.Store].
func (s *Store) Delete(ctx context.Context, kind store.Kind, accountID, id string) error {
	return s.delete(ctx, kind, accountID, id, -1)
}

// DeleteIf implements [store.Store].
func (s *Store) DeleteIf(ctx context.Context, kind store.Kind, accountID, id string, version int64) error {
	return s.delete(ctx, kind, accountID, id, version)
}

// delete deletes the record and its descendants; when version is not
// negative, only if the record is at that version.
func (s *Store) delete(ctx context.Context, kind store.Kind, accountID, id string, version int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.recs[id]
	if !ok {
		return notFound(kind, id)
	}
	if o := r.open(); o.kind != kind || o.account != accountID {
		return notFound(kind, id)
	}
	if version >= 0 && r.version != version {
		return &store.VersionError{ID: id, Want: version, Have: r.version}
	}
	// Collect the record and its descendants.
	doomed := map[string]bool{id: true}
	queue := []string{id}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		for c := range s.children[cur] {
			if !doomed[c] {
				doomed[c] = true
				queue = append(queue, c)
			}
		}
	}
	for d := range doomed {
		var refs []string
		for by := range s.refBy[d] {
			if !doomed[by] {
				refs = append(refs, by)
			}
		}
		if len(refs) > 0 {
			sort.Strings(refs)
			return &store.InUseError{ID: d, Referrers: refs}
		}
	}
	// Children first, in ID order, the named record last: one change each.
	delete(doomed, id)
	cascade := make([]string, 0, len(doomed))
	for d := range doomed {
		cascade = append(cascade, d)
	}
	slices.Sort(cascade)
	for _, d := range cascade {
		c := s.recs[d]
		s.commit(context.Background(), store.OpDelete, &c) // cascaded changes carry no note
		s.remove(&c)
	}
	s.commit(ctx, store.OpDelete, &r)
	s.remove(&r)
	return nil
}

func (s *Store) remove(r *packed) {
	o := r.open()
	s.dropValues(r, &o)
	s.dropKeys(&o)
	s.dropRefs(r, &o)
	delete(s.refBy, r.id)
	delete(s.children, r.id)
	if o.parent != "" {
		removeFrom(s.children, o.parent, r.id)
	}
	ks, n := indexKeys(&o)
	for _, k := range ks[:n] {
		if x, ok := s.index[k]; ok {
			x.drop(r.id)
			if x.empty() {
				delete(s.index, k)
			}
		}
	}
	delete(s.recs, r.id)
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
	return s.newestFirst(pageOf(x, q.BeforeID, q.Limit)), nil
}

// newestFirst returns copies of the records ids names, newest first (ids
// sort descending), under the read lock. The copies are
// carved from a few arrays for the whole answer (see copies).
func (s *Store) newestFirst(ids []string) []store.Record {
	var c copies
	for _, id := range ids {
		r := s.recs[id]
		o := r.open()
		c.need(&o)
	}
	c.alloc()
	out := make([]store.Record, 0, len(ids))
	for _, id := range ids {
		r := s.recs[id]
		o := r.open()
		out = append(out, c.record(&r, &o))
	}
	return out
}

// listSelected answers a List by secondary index or by reference, under
// the read lock. An equality match is a B-tree descent and a walk of at
// most the page; a Below match and a RefersTo match collect their matches
// and sort them: O(m log m) for m matching records.
func (s *Store) listSelected(q store.Query) []store.Record {
	keep := func(id string) bool {
		r := s.recs[id]
		o := r.open()
		return o.kind == q.Kind && (q.AccountID == "" || o.account == q.AccountID) &&
			(q.ParentID == "" || o.parent == q.ParentID) && (q.BeforeID == "" || id < q.BeforeID)
	}
	var ids []string // matching IDs, ascending, possibly more than a page
	switch {
	case q.RefersTo != "":
		for id := range s.refBy[q.RefersTo] {
			if keep(id) {
				ids = append(ids, id)
			}
		}
		slices.Sort(ids)
	case q.Below:
		if x, ok := s.values[valueKey{q.Kind, q.AccountID, q.Index}]; ok {
			below(x, q.Value, func(id string) {
				if keep(id) {
					ids = append(ids, id)
				}
			})
		}
		slices.Sort(ids)
		ids = slices.Compact(ids) // several values of one record below the bound
	default:
		var page []string // descending
		if x, ok := s.values[valueKey{q.Kind, q.AccountID, q.Index}]; ok {
			equal(x, q.Value, q.BeforeID, func(id string) bool {
				if keep(id) {
					page = append(page, id)
				}
				return len(page) < q.Limit
			})
		}
		return s.newestFirst(page)
	}
	page := ids[len(ids)-min(q.Limit, len(ids)):]
	slices.Reverse(page)
	return s.newestFirst(page)
}
