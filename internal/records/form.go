package records

import (
	"context"
	"encoding/json"

	jsonv2 "github.com/go-json-experiment/json"
	jsonv1 "github.com/go-json-experiment/json/v1"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/internal/jsonenc"
	"github.com/edgeplane/edgeplane/internal/recordcache"
	"github.com/edgeplane/edgeplane/store"
)

// A Form is how the Service stores one kind of resource: the kind's row of
// the kinds table, and the conversion between the model M the API shows
// and the document the store keeps. The generic helpers (Create, Get,
// List, Update, Remove) take a form, so a resource's root file states its
// document once and calls them.
type Form[M any] struct {
	*Kind
	save func(db *DB, m *M, rec *store.Record) (any, error)
	// parse decodes a stored document; build makes a model of one. What
	// parse returns may be cached and shared by many reads (the record cache), so
	// build copies what the model must not share with it (slices, maps,
	// pointers) and never changes it.
	parse func(data []byte) (any, error)
	build func(db *DB, doc any, rec store.Record) (*M, error)
	// own, when set, returns a copy of a document save made that shares
	// no memory with the model it was made of and equals what parse
	// makes of its JSON: update caches it as the record's new version
	// (putWritten), so that the next read or update of the record
	// decodes nothing. Unset, a write leaves the next read to decode.
	own func(doc any) any
}

// DocForm returns the form of kind k whose document is a D: save makes
// the document of a model (rec names the record being written, for sealing
// bound to it), load makes the model of a document (rec names the record
// read; load sets the model's ID from it). The document save returns is
// only marshalled, so it may share memory with the model; the one load
// gets may be shared with other reads, so the model load returns must
// share no slice, map or pointer with it, and load must not change it.
func DocForm[M, D any](k *Kind, save func(db *DB, m *M, rec *store.Record) (*D, error), load func(db *DB, d *D, rec store.Record) (*M, error)) Form[M] {
	return Form[M]{
		Kind: k,
		save: func(db *DB, m *M, rec *store.Record) (any, error) {
			return save(db, m, rec)
		},
		parse: func(data []byte) (any, error) {
			d := new(D)
			if err := jsonv2.Unmarshal(data, d, jsonv1Options); err != nil {
				return nil, err
			}
			return d, nil
		},
		build: func(db *DB, doc any, rec store.Record) (*M, error) {
			return load(db, doc.(*D), rec)
		},
	}
}

// jsonv1Options make github.com/go-json-experiment/json (the mirror of
// encoding/json/v2) decode and encode as encoding/json does: it is what encoding/json
// itself runs on from Go 1.25 under GOEXPERIMENT=jsonv2. A stored
// document decodes in less than half encoding/json's time, with a sixth
// of its allocations (BenchmarkParseDoc); every read the record cache
// misses, and every list item it does not hold, pays it.
var jsonv1Options = jsonv1.DefaultOptionsV1()

// PlainForm is DocForm for a kind whose document needs neither the
// Service (no sealing) nor can fail to convert.
func PlainForm[M, D any](k *Kind, save func(m *M) *D, load func(d *D, rec store.Record) *M) Form[M] {
	return DocForm(k,
		func(_ *DB, m *M, _ *store.Record) (*D, error) { return save(m), nil },
		func(_ *DB, d *D, rec store.Record) (*M, error) { return load(d, rec), nil })
}

// WithOwn returns f with own: a copy of a document save made that
// shares no memory with the model it was made of and equals what parse
// makes of its JSON, which an update caches as the record's new version
// so that the next read decodes nothing.
func WithOwn[M, D any](f Form[M], own func(d *D) *D) Form[M] {
	f.own = func(doc any) any { return own(doc.(*D)) }
	return f
}

// Encode sets rec.Data to the document of m.
func (f Form[M]) Encode(db *DB, m *M, rec *store.Record) error {
	_, err := f.EncodeDoc(db, m, rec)
	return err
}

// EncodeDoc is Encode, and returns the document it encoded (which may
// share memory with m). It encodes with MarshalDoc: a DocAppender's own
// encoding, else github.com/go-json-experiment/json with jsonv1Options,
// as the API's responses are (httpapi). The bytes are encoding/json's
// (every form's round-trip test compares them); the one difference is a
// byte of invalid UTF-8, which it writes as U+FFFD itself where
// encoding/json writes \ufffd, the same string (the API's JSON request
// bodies cannot carry one).
func (f Form[M]) EncodeDoc(db *DB, m *M, rec *store.Record) (any, error) {
	d, err := f.save(db, m, rec)
	if err == nil {
		rec.Data, err = MarshalDoc(d)
	}
	if err != nil {
		db.Log.Error("cannot encode a stored document", "kind", string(f.StoreKind), "id", rec.ID, "err", err)
		return nil, apierr.Wrap(apierr.Internal, err, "internal error")
	}
	return d, nil
}

// DocAppender is a stored document that encodes itself without
// reflection (a kind written often enough for it to pay: the credential).
// AppendDocJSON appends to dst what encoding/json.Marshal makes of the
// document and reports true, or returns dst unchanged and false where
// encoding/json would fail. Every form's round-trip test compares its
// bytes with encoding/json's.
type DocAppender interface {
	AppendDocJSON(dst []byte) ([]byte, bool)
}

// MarshalDoc returns the JSON of the document d: its own encoding when it
// is a DocAppender that succeeds, else go-json-experiment's with
// jsonv1Options (encoding/json's).
func MarshalDoc(d any) ([]byte, error) {
	if a, ok := d.(DocAppender); ok {
		if b, ok := a.AppendDocJSON(nil); ok {
			return b, nil
		}
	}
	return jsonv2.Marshal(d, jsonv1Options)
}

// Decode returns the model of the stored record rec, computed fields
// empty (present fills them). It does not use the record cache: rec may
// be a version no one else reads (inside an update).
func (f Form[M]) Decode(db *DB, rec store.Record) (*M, error) {
	doc, err := f.parse(rec.Data)
	if err != nil {
		return nil, f.corrupt(db, rec, err)
	}
	return f.model(db, doc, rec)
}

// Current returns the model of rec, the version of a record an update is
// about to change: built from the document the record cache holds for
// that version when it holds one, else decoded.
func (f Form[M]) Current(db *DB, rec store.Record) (*M, error) {
	if e, ok := db.Cache.Get(recordcache.Key{Kind: rec.Kind, Account: rec.AccountID, ID: rec.ID}); ok && e.Rec.Version == rec.Version {
		return f.model(db, e.Doc, rec)
	}
	return f.Decode(db, rec)
}

// model builds the model of a parsed document.
func (f Form[M]) model(db *DB, doc any, rec store.Record) (*M, error) {
	m, err := f.build(db, doc, rec)
	if err != nil {
		return nil, f.corrupt(db, rec, err)
	}
	return m, nil
}

func (f Form[M]) corrupt(db *DB, rec store.Record, err error) error {
	db.Log.Error("cannot decode a stored document", "kind", string(f.StoreKind), "id", rec.ID, "err", err)
	return apierr.Wrap(apierr.Internal, err, "internal error")
}

// Read returns the record id of f's kind in accountID and its model,
// from the record cache when it holds it, else from the store (and then
// caches it). The store's errors are returned as they are.
func (f Form[M]) Read(ctx context.Context, db *DB, accountID, id string) (*M, store.Record, error) {
	if e, ok := db.cached(ctx, recordcache.Key{Kind: f.StoreKind, Account: accountID, ID: id}); ok {
		m, err := f.model(db, e.Doc, e.Rec)
		return m, e.Rec, err
	}
	t := db.Cache.Note()
	rec, err := db.Store.Get(ctx, f.StoreKind, accountID, id)
	if err != nil {
		return nil, store.Record{}, err
	}
	doc, err := f.parse(rec.Data)
	if err != nil {
		return nil, store.Record{}, f.corrupt(db, rec, err)
	}
	db.Cache.Put(t, rec, doc)
	m, err := f.model(db, doc, rec)
	return m, rec, err
}

// Listed returns the model of a record a list read under t: its cached
// document when the cache holds this version of it, else the record's,
// which it then caches.
func (f Form[M]) Listed(db *DB, t recordcache.Ticket, rec store.Record) (*M, error) {
	if e, ok := db.Cache.Get(recordcache.Key{Kind: rec.Kind, Account: rec.AccountID, ID: rec.ID}); ok && e.Rec.Version == rec.Version {
		return f.model(db, e.Doc, rec)
	}
	doc, err := f.parse(rec.Data)
	if err != nil {
		return nil, f.corrupt(db, rec, err)
	}
	db.Cache.Put(t, rec, doc)
	return f.model(db, doc, rec)
}

// ListedJSON returns the JSON of the model of rec, presented, for a list
// that read rec under t (see ListEncoded): the encoding cached with this
// version of the record, else one it makes and caches with it.
func (f Form[M]) ListedJSON(db *DB, t recordcache.Ticket, rec store.Record, present func(*M, store.Record)) ([]byte, error) {
	e, ok := db.Cache.Get(recordcache.Key{Kind: rec.Kind, Account: rec.AccountID, ID: rec.ID})
	var doc any
	if ok && e.Rec.Version == rec.Version {
		if b := e.JSON(); b != nil {
			return b, nil
		}
		doc = e.Doc
	} else {
		d, err := f.parse(rec.Data)
		if err != nil {
			return nil, f.corrupt(db, rec, err)
		}
		doc, e = d, db.Cache.Put(t, rec, d)
	}
	b, err := f.encodeShown(db, doc, rec, present)
	if err != nil {
		return nil, err
	}
	db.Cache.SetJSON(e, b)
	return b, nil
}

// listedModel is Listed for a record of a list (see listChunk): the
// model of e, the cache's entry the list took for rec, when it took one,
// else Listed's.
func (f Form[M]) listedModel(db *DB, t recordcache.Ticket, rec store.Record, e *recordcache.Entry) (*M, error) {
	if e == nil {
		return f.Listed(db, t, rec)
	}
	return f.model(db, e.Doc, rec)
}

// listedJSON is ListedJSON for a record of a list (see listChunk): the
// JSON cached with e, the cache's entry the list took for rec, when it
// took one (made and cached with it when it has none), else ListedJSON's.
func (f Form[M]) listedJSON(db *DB, t recordcache.Ticket, rec store.Record, e *recordcache.Entry, present func(*M, store.Record)) ([]byte, error) {
	if e == nil {
		return f.ListedJSON(db, t, rec, present)
	}
	if b := e.JSON(); b != nil {
		return b, nil
	}
	b, err := f.encodeShown(db, e.Doc, rec, present)
	if err != nil {
		return nil, err
	}
	db.Cache.SetJSON(e, b)
	return b, nil
}

// encodeShown returns the JSON of the model of doc, a parse of rec,
// presented: the model's own encoding when it is a [jsonenc.Appender]
// that succeeds, else encoding/json's.
func (f Form[M]) encodeShown(db *DB, doc any, rec store.Record, present func(*M, store.Record)) ([]byte, error) {
	m, err := f.model(db, doc, rec)
	if err != nil {
		return nil, err
	}
	present(m, rec)
	if a, ok := any(m).(jsonenc.Appender); ok {
		if b, ok := a.AppendJSON(nil); ok {
			return b, nil
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		db.Log.Error("cannot encode a resource", "kind", string(f.StoreKind), "id", rec.ID, "err", err)
		return nil, apierr.Wrap(apierr.Internal, err, "internal error")
	}
	return b, nil
}

// Save returns the document of m as the form stores it, unencoded (for
// tests that compare it with its encoding).
func (f Form[M]) Save(db *DB, m *M, rec *store.Record) (any, error) { return f.save(db, m, rec) }

// Parse decodes a stored document of the form.
func (f Form[M]) Parse(data []byte) (any, error) { return f.parse(data) }

// Own returns the form's own copy of a document Save made (see
// [WithOwn]), and false for a form without one.
func (f Form[M]) Own(doc any) (any, bool) {
	if f.own == nil {
		return nil, false
	}
	return f.own(doc), true
}

// Model builds the model of a document Parse returned, as reads do from
// a document the record cache holds.
func (f Form[M]) Model(db *DB, doc any, rec store.Record) (*M, error) { return f.model(db, doc, rec) }
