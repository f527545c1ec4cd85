// Package memstore is the in-memory [store.Store]: for tests, examples
// and single-process hosts that need no persistence.
//
// # Model
//
// All records live in maps behind one read-write mutex: reads share it,
// writes hold it exclusively, so every write is atomic and serialised.
// Records are deep-copied on the way in and on the way out; a caller can
// never reach stored state.
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
// lock as the write, so the feed's order is the commit order. The log
// keeps the newest [Options].FeedRetention changes (default
// [DefaultFeedRetention]); a reader behind them gets a
// [store.CompactedError]. [Store.Wait] wakes on the next commit through a
// channel a waiter makes and the next commit closes (a write with nobody
// waiting allocates none).
package memstore

import (
	"context"
	"slices"
	"sort"
	"sync"

	"github.com/edgeplane/edgeplane/store"

	"github.com/edgeplane/edgeplane/apierr"
)

var _ store.Store = (*Store)(nil)

// Store is an in-memory [store.Store]. The zero value is not usable;
// call [New]. It is safe for concurrent use.
type Store struct {
	mu       sync.RWMutex
	recs     map[string]*store.Record       // by ID
	keys     map[string]string              // lookup key -> ID
	refBy    map[string]map[string]struct{} // referenced ID -> referrer IDs
	children map[string]map[string]struct{} // parent ID -> child IDs
	index    map[indexKey]ids               // record IDs, ascending
	values   map[valueKey]values            // secondary indexes: (value, id) pairs, ascending
	rev      int64                          // the revision of the last committed change
	floor    int64                          // changes up to this revision are compacted away
	log      []store.Change                 // the newest changes, log[i].Revision == rev-len(log)+1+i
	keep     int                            // how many changes log keeps

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

// addValues and dropValues keep r's secondary index entries.
func (s *Store) addValues(r *store.Record) {
	for _, e := range store.UniqueIndexes(r.Indexes) {
		for _, acct := range []string{r.AccountID, ""} {
			k := valueKey{r.Kind, acct, e.Name}
			x, ok := s.values[k]
			if !ok {
				x = newValues()
				s.values[k] = x
			}
			x.add(valueEntry{e.Value, r.ID})
		}
	}
}

func (s *Store) dropValues(r *store.Record) {
	for _, e := range store.UniqueIndexes(r.Indexes) {
		for _, acct := range []string{r.AccountID, ""} {
			k := valueKey{r.Kind, acct, e.Name}
			if x, ok := s.values[k]; ok {
				x.drop(valueEntry{e.Value, r.ID})
				if x.empty() {
					delete(s.values, k)
				}
			}
		}
	}
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
		keep:     keep,
		recs:     make(map[string]*store.Record),
		keys:     make(map[string]string),
		refBy:    make(map[string]map[string]struct{}),
		children: make(map[string]map[string]struct{}),
		index:    make(map[indexKey]ids),
		values:   make(map[valueKey]values),
	}
}

// indexKeys lists the indexes a record belongs to.
func indexKeys(r *store.Record) []indexKey {
	ks := []indexKey{{r.Kind, r.AccountID, ""}, {r.Kind, "", ""}}
	if r.ParentID != "" {
		ks = append(ks, indexKey{r.Kind, r.AccountID, r.ParentID}, indexKey{r.Kind, "", r.ParentID})
	}
	return ks
}

func notFound(kind store.Kind, id string) error {
	return apierr.NotFoundf("%s %s not found", kind, id)
}

// Create implements [store.Store].
func (s *Store) Create(ctx context.Context, rec store.Record) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r := rec.Clone()
	r.Refs = store.UniqueRefs(r.Refs)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.recs[r.ID]; ok {
		return &store.DuplicateError{Key: r.ID}
	}
	if err := s.checkKeys(&r, ""); err != nil {
		return err
	}
	if r.ParentID != "" && !s.existsIn(r.ParentID, r.AccountID) {
		return &store.MissingRefError{ID: r.ParentID}
	}
	if err := s.checkRefs(&r); err != nil {
		return err
	}
	r.Version = s.commit(ctx, store.OpCreate, &r)
	s.recs[r.ID] = &r
	for _, k := range r.Keys {
		s.keys[k] = r.ID
	}
	s.addRefs(r.ID, r.Refs)
	if r.ParentID != "" {
		addTo(s.children, r.ParentID, r.ID)
	}
	for _, k := range indexKeys(&r) {
		x, ok := s.index[k]
		if !ok {
			x = newIDs()
			s.index[k] = x
		}
		x.add(r.ID)
	}
	s.addValues(&r)
	return nil
}

func (s *Store) existsIn(id, account string) bool {
	r, ok := s.recs[id]
	return ok && r.AccountID == account
}

// checkKeys fails if one of r's keys is held by a record other than self.
func (s *Store) checkKeys(r *store.Record, self string) error {
	seen := make(map[string]bool, len(r.Keys))
	for _, k := range r.Keys {
		if owner, ok := s.keys[k]; (ok && owner != self) || seen[k] {
			return &store.DuplicateError{Key: k}
		}
		seen[k] = true
	}
	return nil
}

func (s *Store) checkRefs(r *store.Record) error {
	for _, ref := range r.Refs {
		if ref == r.ID {
			continue
		}
		if !s.existsIn(ref, r.AccountID) {
			return &store.MissingRefError{ID: ref}
		}
	}
	return nil
}

func (s *Store) addRefs(from string, refs []string) {
	for _, ref := range refs {
		if ref != from {
			addTo(s.refBy, ref, from)
		}
	}
}

func (s *Store) dropRefs(from string, refs []string) {
	for _, ref := range refs {
		removeFrom(s.refBy, ref, from)
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
	if !ok || r.Kind != kind || r.AccountID != accountID {
		return store.Record{}, notFound(kind, id)
	}
	return r.Clone(), nil
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
	if r.Kind != kind {
		return store.Record{}, apierr.NotFoundf("no %s with that key", kind)
	}
	return r.Clone(), nil
}

// Update implements [store.Store].
func (s *Store) Update(ctx context.Context, kind store.Kind, accountID, id string, fn func(*store.Record) error) (store.Record, error) {
	if err := ctx.Err(); err != nil {
		return store.Record{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.recs[id]
	if !ok || old.Kind != kind || old.AccountID != accountID {
		return store.Record{}, notFound(kind, id)
	}
	work := old.Clone()
	if err := fn(&work); err != nil {
		return store.Record{}, err
	}
	return s.put(ctx, old, work)
}

// Replace implements [store.Store].
func (s *Store) Replace(ctx context.Context, rec store.Record) (store.Record, error) {
	if err := ctx.Err(); err != nil {
		return store.Record{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.recs[rec.ID]
	if !ok || old.Kind != rec.Kind || old.AccountID != rec.AccountID {
		return store.Record{}, notFound(rec.Kind, rec.ID)
	}
	if old.Version != rec.Version {
		return store.Record{}, &store.VersionError{ID: rec.ID, Want: rec.Version, Have: old.Version}
	}
	return s.put(ctx, old, rec)
}

// put writes rec in place of old, under the write lock, and returns a copy
// of what it stored.
func (s *Store) put(ctx context.Context, old *store.Record, rec store.Record) (store.Record, error) {
	r := rec.Clone() // the caller may keep the record or the slices it set
	r.Refs = store.UniqueRefs(r.Refs)
	if r.Kind != old.Kind || r.AccountID != old.AccountID || r.ID != old.ID || r.ParentID != old.ParentID {
		return store.Record{}, apierr.New(apierr.Internal, "update may not change a record's kind, account, id or parent")
	}
	if err := s.checkKeys(&r, r.ID); err != nil {
		return store.Record{}, err
	}
	if err := s.checkRefs(&r); err != nil {
		return store.Record{}, err
	}
	for _, k := range old.Keys {
		delete(s.keys, k)
	}
	for _, k := range r.Keys {
		s.keys[k] = r.ID
	}
	s.dropRefs(r.ID, old.Refs)
	s.addRefs(r.ID, r.Refs)
	s.dropValues(old)
	s.addValues(&r)
	r.Version = s.commit(ctx, store.OpUpdate, &r)
	s.recs[r.ID] = &r
	return r.Clone(), nil
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
	if !ok || r.Kind != kind || r.AccountID != accountID {
		return notFound(kind, id)
	}
	if version >= 0 && r.Version != version {
		return &store.VersionError{ID: id, Want: version, Have: r.Version}
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
		s.commit(context.Background(), store.OpDelete, s.recs[d]) // cascaded changes carry no note
		s.remove(s.recs[d])
	}
	s.commit(ctx, store.OpDelete, r)
	s.remove(r)
	return nil
}

// commit appends the change op of r to the feed and wakes its waiters,
// under the write lock, and returns its revision.
func (s *Store) commit(ctx context.Context, op store.Op, r *store.Record) int64 {
	s.rev++
	// Stored records are never mutated in place, so sharing Data is safe.
	c := store.Change{Revision: s.rev, Op: op, Kind: r.Kind, AccountID: r.AccountID, ID: r.ID, ParentID: r.ParentID, Data: r.Data, Note: store.NoteFrom(ctx)}
	if len(s.log) >= 2*s.keep {
		s.log = append(make([]store.Change, 0, 2*s.keep), s.log[len(s.log)-s.keep+1:]...)
	}
	s.log = append(s.log, c)
	s.wake.Lock()
	s.published = s.rev
	if s.commits != nil { // someone waits: wake them; writes without waiters allocate nothing
		close(s.commits)
		s.commits = nil
	}
	s.wake.Unlock()
	return s.rev
}

// Revision implements [store.Feed].
func (s *Store) Revision(ctx context.Context) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.rev, nil
}

// Changes implements [store.Feed]. A revision above the store's is also
// a [store.CompactedError]: this store never held it.
func (s *Store) Changes(ctx context.Context, after int64, limit int) ([]store.Change, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, apierr.Invalidf("limit", "must be positive")
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	oldest := s.rev - int64(len(s.log)) + 1 // revision of s.log[0], or rev+1 when empty
	kept := max(oldest, s.rev-int64(s.keep)+1, s.floor+1)
	if after+1 < kept || after > s.rev {
		return nil, &store.CompactedError{After: after, Oldest: kept}
	}
	i := int(after + 1 - oldest)
	n := min(limit, len(s.log)-i)
	out := make([]store.Change, n)
	for j := range n {
		out[j] = s.log[i+j].Clone()
	}
	return out, nil
}

// Compact implements [store.Feed].
func (s *Store) Compact(ctx context.Context, through int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	through = min(through, s.rev)
	if through <= s.floor {
		return nil
	}
	s.floor = through
	oldest := s.rev - int64(len(s.log)) + 1
	if drop := int(through - oldest + 1); drop > 0 {
		s.log = append([]store.Change(nil), s.log[drop:]...)
	}
	return nil
}

// Wait implements [store.Feed].
func (s *Store) Wait(ctx context.Context, after int64) error {
	for {
		s.wake.Lock()
		if s.published > after {
			s.wake.Unlock()
			return nil
		}
		if s.commits == nil {
			s.commits = make(chan struct{})
		}
		ch := s.commits
		s.wake.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (s *Store) remove(r *store.Record) {
	s.dropValues(r)
	for _, k := range r.Keys {
		delete(s.keys, k)
	}
	s.dropRefs(r.ID, r.Refs)
	delete(s.refBy, r.ID)
	delete(s.children, r.ID)
	if r.ParentID != "" {
		removeFrom(s.children, r.ParentID, r.ID)
	}
	for _, k := range indexKeys(r) {
		if x, ok := s.index[k]; ok {
			x.drop(r.ID)
			if x.empty() {
				delete(s.index, k)
			}
		}
	}
	delete(s.recs, r.ID)
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
	page := pageOf(x, q.BeforeID, q.Limit)
	out := make([]store.Record, 0, len(page))
	for _, id := range page {
		out = append(out, *s.recs[id])
	}
	own(out)
	return out, nil
}

// own turns out, shallow copies of stored records, into copies the caller
// owns, as [store.Record.Clone] would, with a few allocations for the
// whole answer instead of several per record: the copies' Data, Keys,
// Refs and Indexes are carved from arrays the answer shares, each with
// its capacity clipped to its length, so that a caller's append
// reallocates rather than write over a neighbour.
func own(out []store.Record) {
	var nd, ns, ni int
	for _, r := range out {
		nd, ns, ni = nd+len(r.Data), ns+len(r.Keys)+len(r.Refs), ni+len(r.Indexes)
	}
	data := make([]byte, 0, nd)
	strs := make([]string, 0, ns)
	idx := make([]store.IndexEntry, 0, ni)
	for i := range out {
		r := &out[i]
		r.Data = carve(&data, r.Data)
		r.Keys = carve(&strs, r.Keys)
		r.Refs = carve(&strs, r.Refs)
		r.Indexes = carve(&idx, r.Indexes)
	}
}

// carve appends s to *arena and returns the appended part, capacity
// clipped; nil when s is empty (as Clone gives).
func carve[T any](arena *[]T, s []T) []T {
	if len(s) == 0 {
		return nil
	}
	start := len(*arena)
	*arena = append(*arena, s...)
	return (*arena)[start:len(*arena):len(*arena)]
}

// listSelected answers a List by secondary index or by reference, under
// the read lock. An equality match is a binary search and a walk of at
// most the page; a Below match and a RefersTo match collect their matches
// and sort them: O(m log m) for m matching records.
func (s *Store) listSelected(q store.Query) []store.Record {
	keep := func(id string) bool {
		r := s.recs[id]
		return r.Kind == q.Kind && (q.AccountID == "" || r.AccountID == q.AccountID) &&
			(q.ParentID == "" || r.ParentID == q.ParentID) && (q.BeforeID == "" || id < q.BeforeID)
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
		var out []store.Record
		if x, ok := s.values[valueKey{q.Kind, q.AccountID, q.Index}]; ok {
			equal(x, q.Value, q.BeforeID, func(id string) bool {
				if keep(id) {
					out = append(out, *s.recs[id])
				}
				return len(out) < q.Limit
			})
		}
		if out == nil {
			out = []store.Record{}
		}
		own(out)
		return out
	}
	n := min(q.Limit, len(ids))
	out := make([]store.Record, 0, n)
	for i := len(ids) - 1; i >= len(ids)-n; i-- {
		out = append(out, *s.recs[ids[i]])
	}
	own(out)
	return out
}
