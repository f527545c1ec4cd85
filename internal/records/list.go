package records

import (
	"context"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/filter"
	"github.com/edgeplane/edgeplane/identity"
	"github.com/edgeplane/edgeplane/internal/ids"
	"github.com/edgeplane/edgeplane/internal/recordcache"
	"github.com/edgeplane/edgeplane/policy/limits"
	"github.com/edgeplane/edgeplane/store"
)

// MaxPageSize is the largest page, and the default.
const MaxPageSize = 100

// A list reads the records of a chunk (at most MaxPageSize) that the
// cache does not hold with one GetMany, which takes at most
// store.MaxGetMany IDs: the build fails if the two bounds disagree.
var _ [store.MaxGetMany - MaxPageSize]struct{}

// MaxFilterScan is the largest number of resources one filtered page
// reads, matching or not, so that a filter that matches nothing cannot
// make one request read a whole collection.
const MaxFilterScan = 10 * MaxPageSize

// MaxFilterPageCost bounds the total cost, in CEL's cost units, of the
// filter evaluations of one page (each is bounded by
// [limits.MaxEvaluationCost]): a page whose evaluations reach it ends
// after the resource that did, as at [MaxFilterScan].
const MaxFilterPageCost = 10 * limits.MaxEvaluationCost

// Query selects a page of a list: the fields of the root's ListOptions.
type Query struct {
	Limit    int
	BeforeID string
	Filter   string
}

// Listing is one page of a list, newest first.
type Listing[V any] struct {
	// Items are the page's resources; nil when Encoded.
	Items []V
	// JSON holds each item's JSON when Encoded; shared with the cache:
	// never change it.
	JSON [][]byte
	// Encoded says the page holds its items as JSON.
	Encoded bool
	// Limit is the page size in force.
	Limit int
	// Next is the cursor of the next page, "" on the last.
	Next string
}

// List returns one page of records of form f's kind (children of parent
// when set), decoded and presented.
func List[M any](ctx context.Context, db *DB, p identity.Principal, f Form[M], parent string, q Query, present func(*M, store.Record)) (*Listing[M], error) {
	return ListAs(ctx, db, p, f, parent, q, func(v *M, rec store.Record) (*M, error) {
		present(v, rec)
		return v, nil
	}, LateField[M]{})
}

// LateField is a field of a listed V that costs a store read to compute
// (a backend's tunnels): ListAs fills it before filtering when the filter
// reads it, and otherwise only for the resources that match. The zero
// value is no such field.
type LateField[V any] struct {
	Name string           // the field's JSON name
	Fill func(v *V) error // computes it
}

// ListAs returns one page of records of form f's kind (children of
// parent when set), each decoded and turned by show into the V the API
// shows (and completed by late). q.Filter, when set, is compiled for V
// and evaluated on what show returns; the page then scans the store until
// it holds q.Limit matches, the list ends, MaxFilterScan records were
// read or the evaluations cost MaxFilterPageCost, reading from the store
// only the records of each chunk that the record cache does not hold
// (see the package doc, # Lists).
func ListAs[M, V any](ctx context.Context, db *DB, p identity.Principal, f Form[M], parent string, q Query,
	show func(*M, store.Record) (*V, error), late LateField[V]) (*Listing[V], error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	var vs apierr.Violations
	limit := PageLimit(&vs, f.Kind, q)
	var match *filter.Filter[V]
	if q.Filter != "" {
		m, err := filter.Compile[V](db.Filters, q.Filter)
		if err != nil {
			vs.AddError("", err)
		}
		match = m
	}
	if err := vs.Err(); err != nil {
		return nil, err
	}
	fillEarly := late.Fill != nil && match != nil && match.Reads(late.Name)
	page := &Listing[V]{Limit: limit}
	budget, chunk := limit, limit // records to scan in all, and per store read
	switch {
	case fillEarly:
		budget = MaxPageSize // each record scanned costs another store read
	case match != nil:
		budget = MaxFilterScan
	}
	cursor, scanned, spent := q.BeforeID, 0, uint64(0)
	for {
		t := db.Cache.Note()
		want := min(chunk, budget-scanned)
		recs, cached, more, last, err := db.listChunk(ctx, store.Query{Kind: f.StoreKind, AccountID: p.AccountID, ParentID: parent, BeforeID: cursor}, want)
		if err != nil {
			return nil, db.StoreErr(err, f.Kind, "")
		}
		if page.Items == nil {
			page.Items = make([]V, 0, min(len(recs), limit))
		}
		for i, rec := range recs {
			scanned++
			m, err := f.listedModel(db, t, rec, entryAt(cached, i))
			if err != nil {
				return nil, err
			}
			v, err := show(m, rec)
			if err != nil {
				return nil, err
			}
			if fillEarly {
				if err := late.Fill(v); err != nil {
					return nil, err
				}
			}
			matched := true
			if match != nil {
				var c uint64
				matched, c = match.Eval(v)
				spent += c
			}
			if matched {
				if late.Fill != nil && !fillEarly {
					if err := late.Fill(v); err != nil {
						return nil, err
					}
				}
				page.Items = append(page.Items, *v)
			}
			if len(page.Items) == limit || spent >= MaxFilterPageCost {
				if rec.ID != last || more {
					page.Next = rec.ID
				}
				return page, nil
			}
		}
		if !more || last == "" {
			return page, nil
		}
		cursor = last
		if scanned >= budget {
			page.Next = cursor
			return page, nil
		}
		chunk = min(2*chunk, MaxPageSize)
	}
}

// PageLimit returns the page size q asks for, and adds to vs what is
// wrong with its limit and cursor for a list of kind k.
func PageLimit(vs *apierr.Violations, k *Kind, q Query) int {
	limit := q.Limit
	switch {
	case limit == 0:
		limit = MaxPageSize
	case limit < 1 || limit > MaxPageSize:
		vs.Add("limit", "must be between 1 and %d, got %d", MaxPageSize, limit)
	}
	if q.BeforeID != "" && !ids.Valid(q.BeforeID, k.Prefix) {
		vs.Add("before_id", "must be a %s ID (%s followed by %d characters)", k.Noun, k.Prefix, ids.Len)
	}
	return limit
}

// ListEncoded is List for a kind whose items' JSON is a function of the
// stored record alone: present must read nothing but the model, the
// record and the Service's configuration (no clock, no other record).
// Without a filter, it answers the page as the JSON of its items (JSON,
// Encoded), each the encoding cached with its record's version when the
// cache holds it (made and cached otherwise), so that a page costs a
// store list (of IDs and versions alone on a [store.VersionLister]: see
// the package doc, # Lists) and copies, not a decode, a model and an
// encode per item; with one, it is List.
func ListEncoded[M any](ctx context.Context, db *DB, p identity.Principal, f Form[M], parent string, q Query, present func(*M, store.Record)) (*Listing[M], error) {
	if q.Filter != "" {
		return List(ctx, db, p, f, parent, q, present)
	}
	if err := p.Check(); err != nil {
		return nil, err
	}
	var vs apierr.Violations
	limit := PageLimit(&vs, f.Kind, q)
	if err := vs.Err(); err != nil {
		return nil, err
	}
	t := db.Cache.Note()
	recs, cached, more, last, err := db.listChunk(ctx, store.Query{Kind: f.StoreKind, AccountID: p.AccountID, ParentID: parent, BeforeID: q.BeforeID}, limit)
	if err != nil {
		return nil, db.StoreErr(err, f.Kind, "")
	}
	page := &Listing[M]{Encoded: true, Limit: limit}
	if more {
		page.Next = last
	}
	page.JSON = make([][]byte, len(recs))
	for i, rec := range recs {
		b, err := f.listedJSON(db, t, rec, entryAt(cached, i), present)
		if err != nil {
			return nil, err
		}
		page.JSON[i] = b
	}
	return page, nil
}

// entryAt returns cached[i], nil when cached is nil (see listChunk).
func entryAt(cached []*recordcache.Entry, i int) *recordcache.Entry {
	if cached == nil {
		return nil
	}
	return cached[i]
}

// listChunk returns the first want records that q selects (q.Limit is
// set here), newest first; more reports whether any remain after them,
// and last is the ID of the last of them as the store listed them: the
// cursor after them, "" when there are none. cached[i], when cached is
// not nil, is the record cache's entry of recs[i] at the version the
// store listed (and recs[i] its Rec, Data nil), or nil when recs[i] was
// read whole from the store.
//
// When the store is a [store.VersionLister] (DB.Versions) and the record
// cache is in use, it reads the IDs and versions alone, takes from the
// cache each record it holds at the listed version, and reads the others
// with one GetMany (which the caller caches under its ticket, as it does
// what List returns). An entry is taken only at the version the store
// listed, and a record's version changes on every write, so the entry is
// the record as the store holds it at that version: no fence is needed
// (unlike a read by ID, which learns no version from the store). A record
// the store no longer holds when GetMany reads (deleted between the two
// reads) is left out: it did not exist throughout the paging, so the
// paging contract of [store.Store.List] holds; one written between them
// comes at its newer version. Otherwise (no VersionLister, the cache off
// or not current, or a list across accounts) it is List's page.
func (db *DB) listChunk(ctx context.Context, q store.Query, want int) (recs []store.Record, cached []*recordcache.Entry, more bool, last string, err error) {
	q.Limit = want + 1 // the one more says whether records remain
	if db.Versions == nil || q.AccountID == "" || !db.Cache.Ready() {
		if recs, err = db.Store.List(ctx, q); err != nil {
			return nil, nil, false, "", err
		}
		more = len(recs) > want
		recs = recs[:min(len(recs), want)]
		if len(recs) > 0 {
			last = recs[len(recs)-1].ID
		}
		return recs, nil, more, last, nil
	}
	vs, err := db.Versions.ListVersions(ctx, q)
	if err != nil {
		return nil, nil, false, "", err
	}
	more = len(vs) > want
	vs = vs[:min(len(vs), want)]
	if len(vs) > 0 {
		last = vs[len(vs)-1].ID
	}
	recs, cached = make([]store.Record, len(vs)), make([]*recordcache.Entry, len(vs))
	var missed []string
	for i, v := range vs {
		if e, ok := db.Cache.Get(recordcache.Key{Kind: q.Kind, Account: q.AccountID, ID: v.ID}); ok && e.Rec.Version == v.Version {
			recs[i], cached[i] = e.Rec, e
		} else {
			missed = append(missed, v.ID)
		}
	}
	if len(missed) == 0 {
		return recs, cached, more, last, nil
	}
	read, err := db.Versions.GetMany(ctx, q.Kind, q.AccountID, missed)
	if err != nil {
		return nil, nil, false, "", err
	}
	n, j := 0, 0 // read is in the order of missed, a subsequence of vs
	for i, v := range vs {
		switch {
		case cached[i] != nil:
			recs[n], cached[n] = recs[i], cached[i]
			n++
		case j < len(read) && read[j].ID == v.ID:
			recs[n], cached[n] = read[j], nil
			n++
			j++
		}
	}
	return recs[:n], cached[:n], more, last, nil
}

// AppendJSON appends to dst the JSON of the record id of f's kind in p's
// account as present shows it (see ListEncoded: present must be a pure
// function of the model and the record): the encoding cached with the
// record when there is one, else one it makes and caches. Errors are
// Get's.
func AppendJSON[M any](ctx context.Context, db *DB, p identity.Principal, f Form[M], id string, present func(*M, store.Record), dst []byte) ([]byte, error) {
	if err := p.Check(); err != nil {
		return dst, err
	}
	if !ids.Valid(id, f.Prefix) {
		return dst, f.NotFound(id)
	}
	e, ok := db.cached(ctx, recordcache.Key{Kind: f.StoreKind, Account: p.AccountID, ID: id})
	var (
		doc any
		rec store.Record
	)
	if ok {
		if b := e.JSON(); b != nil {
			return append(dst, b...), nil
		}
		doc, rec = e.Doc, e.Rec
	} else {
		t := db.Cache.Note()
		r, err := db.Store.Get(ctx, f.StoreKind, p.AccountID, id)
		if err != nil {
			return dst, db.StoreErr(err, f.Kind, id)
		}
		d, err := f.parse(r.Data)
		if err != nil {
			return dst, f.corrupt(db, r, err)
		}
		doc, rec, e = d, r, db.Cache.Put(t, r, d)
	}
	b, err := f.encodeShown(db, doc, rec, present)
	if err != nil {
		return dst, err
	}
	db.Cache.SetJSON(e, b)
	return append(dst, b...), nil
}

// HostList returns one page, newest first, of the records of kind k
// across all accounts, each turned into a T by conv, and the cursor of
// the next page ("" on the last): the paging of the host's list
// operations.
func HostList[T any](ctx context.Context, db *DB, k *Kind, q Query, conv func(store.Record) (T, error)) ([]T, string, error) {
	limit := q.Limit
	switch {
	case limit == 0:
		limit = MaxPageSize
	case limit < 1 || limit > MaxPageSize:
		return nil, "", apierr.Invalidf("limit", "must be between 1 and %d, got %d", MaxPageSize, limit)
	}
	recs, err := db.Store.List(ctx, store.Query{Kind: k.StoreKind, BeforeID: q.BeforeID, Limit: limit + 1})
	if err != nil {
		return nil, "", db.StoreErr(err, k, "")
	}
	out := make([]T, 0, min(len(recs), limit))
	next := ""
	for i, rec := range recs {
		if i == limit {
			next = recs[limit-1].ID
			break
		}
		v, err := conv(rec)
		if err != nil {
			return nil, "", err
		}
		out = append(out, v)
	}
	return out, next, nil
}
