package edgeplane

import (
	"context"
	"encoding/json"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	jsonv1 "github.com/go-json-experiment/json/v1"
	gojson "github.com/goccy/go-json"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/internal/ids"
	"github.com/edgeplane/edgeplane/internal/jsonenc"
	"github.com/edgeplane/edgeplane/resource"
	"github.com/edgeplane/edgeplane/store"
)

// Stored documents are not the API's JSON. Each kind has a document type
// (credentialDoc, routeDoc, ...) beside its short root file: the fields the
// kind persists, under storage names that are the document's own json
// tags. A document holds no computed field (uri, a backend's tunnels, the
// URIs of Refs: a reference is stored as the bare ID), no ID (the record's
// ID is the resource's) and no secret in the clear (the private key of a
// TLS certificate and the client secret of an OIDC module are sealed under
// [Options.SealingKey]). Renaming a wire field changes a model's json tag,
// not a document: it is never a data migration. A change of a document's
// shape is one, and bumps storeFormat (see bootstrap.go).

// A form is how the Service stores one kind of resource: the kind's row of
// the kinds table, and the conversion between the model M the API shows
// and the document the store keeps. The generic helpers (create, get,
// list, update, remove) take a form, so a resource's root file states its
// document once and calls them.
type form[M any] struct {
	*kindInfo
	save func(s *Service, m *M, rec *store.Record) (any, error)
	// parse decodes a stored document; build makes a model of one. What
	// parse returns may be cached and shared by many reads (cache.go), so
	// build copies what the model must not share with it (slices, maps,
	// pointers) and never changes it.
	parse func(data []byte) (any, error)
	build func(s *Service, doc any, rec store.Record) (*M, error)
	// own, when set, returns a copy of a document save made that shares
	// no memory with the model it was made of and equals what parse
	// makes of its JSON: update caches it as the record's new version
	// (putWritten), so that the next read or update of the record
	// decodes nothing. Unset, a write leaves the next read to decode.
	own func(doc any) any
}

// docForm returns the form of kind k whose document is a D: save makes
// the document of a model (rec names the record being written, for sealing
// bound to it), load makes the model of a document (rec names the record
// read; load sets the model's ID from it). The document save returns is
// only marshalled, so it may share memory with the model; the one load
// gets may be shared with other reads, so the model load returns must
// share no slice, map or pointer with it, and load must not change it.
func docForm[M, D any](k *kindInfo, save func(s *Service, m *M, rec *store.Record) (*D, error), load func(s *Service, d *D, rec store.Record) (*M, error)) form[M] {
	return form[M]{
		kindInfo: k,
		save: func(s *Service, m *M, rec *store.Record) (any, error) {
			return save(s, m, rec)
		},
		parse: func(data []byte) (any, error) {
			d := new(D)
			if err := jsonv2.Unmarshal(data, d, jsonv1Options); err != nil {
				return nil, err
			}
			return d, nil
		},
		build: func(s *Service, doc any, rec store.Record) (*M, error) {
			return load(s, doc.(*D), rec)
		},
	}
}

// jsonv1Options make github.com/go-json-experiment/json (the mirror of
// encoding/json/v2) decode as encoding/json does: it is what encoding/json
// itself runs on from Go 1.25 under GOEXPERIMENT=jsonv2. A stored
// document decodes in less than half encoding/json's time, with a sixth
// of its allocations (BenchmarkParseDoc); every read the record cache
// misses, and every list item it does not hold, pays it.
var jsonv1Options = jsonv1.DefaultOptionsV1()

// plainForm is docForm for a kind whose document needs neither the
// Service (no sealing) nor can fail to convert.
func plainForm[M, D any](k *kindInfo, save func(m *M) *D, load func(d *D, rec store.Record) *M) form[M] {
	return docForm(k,
		func(_ *Service, m *M, _ *store.Record) (*D, error) { return save(m), nil },
		func(_ *Service, d *D, rec store.Record) (*M, error) { return load(d, rec), nil })
}

// withOwn returns f with own (see form.own).
func withOwn[M, D any](f form[M], own func(d *D) *D) form[M] {
	f.own = func(doc any) any { return own(doc.(*D)) }
	return f
}

// encode sets rec.Data to the document of m.
func (f form[M]) encode(s *Service, m *M, rec *store.Record) error {
	_, err := f.encodeDoc(s, m, rec)
	return err
}

// encodeDoc is encode, and returns the document it encoded (which may
// share memory with m). It encodes with marshalDoc: a docAppender's own
// encoding, else github.com/goccy/go-json, as the API's responses are
// (httpapi). The bytes are encoding/json's (every form's round-trip test
// compares them; go-json differs only in writing \b and \f in a string as
// \u0008 and \u000c, which decode alike), in about half the time or
// less, which every write pays.
func (f form[M]) encodeDoc(s *Service, m *M, rec *store.Record) (any, error) {
	d, err := f.save(s, m, rec)
	if err == nil {
		rec.Data, err = marshalDoc(d)
	}
	if err != nil {
		s.log.Error("cannot encode a stored document", "kind", string(f.kind), "id", rec.ID, "err", err)
		return nil, apierr.Wrap(apierr.Internal, err, "internal error")
	}
	return d, nil
}

// docAppender is a stored document that encodes itself without
// reflection (a kind written often enough for it to pay: the credential).
// appendJSON appends to dst what encoding/json.Marshal makes of the
// document and reports true, or returns dst unchanged and false where
// encoding/json would fail. Every form's round-trip test compares its
// bytes with encoding/json's.
type docAppender interface {
	appendJSON(dst []byte) ([]byte, bool)
}

// marshalDoc returns the JSON of the document d: its own encoding when it
// is a docAppender that succeeds, else github.com/goccy/go-json's.
func marshalDoc(d any) ([]byte, error) {
	if a, ok := d.(docAppender); ok {
		if b, ok := a.appendJSON(nil); ok {
			return b, nil
		}
	}
	return gojson.Marshal(d)
}

// decode returns the model of the stored record rec, computed fields
// empty (present fills them). It does not use the record cache: rec may
// be a version no one else reads (inside an update).
func (f form[M]) decode(s *Service, rec store.Record) (*M, error) {
	doc, err := f.parse(rec.Data)
	if err != nil {
		return nil, f.corrupt(s, rec, err)
	}
	return f.model(s, doc, rec)
}

// current returns the model of rec, the version of a record an update is
// about to change: built from the document the record cache holds for
// that version when it holds one, else decoded.
func (f form[M]) current(s *Service, rec store.Record) (*M, error) {
	if e, ok := s.cache.get(recordKey{rec.Kind, rec.AccountID, rec.ID}); ok && e.rec.Version == rec.Version {
		return f.model(s, e.doc, rec)
	}
	return f.decode(s, rec)
}

// model builds the model of a parsed document.
func (f form[M]) model(s *Service, doc any, rec store.Record) (*M, error) {
	m, err := f.build(s, doc, rec)
	if err != nil {
		return nil, f.corrupt(s, rec, err)
	}
	return m, nil
}

func (f form[M]) corrupt(s *Service, rec store.Record, err error) error {
	s.log.Error("cannot decode a stored document", "kind", string(f.kind), "id", rec.ID, "err", err)
	return apierr.Wrap(apierr.Internal, err, "internal error")
}

// read returns the record id of f's kind in accountID and its model,
// from the record cache when it holds it, else from the store (and then
// caches it). The store's errors are returned as they are.
func (f form[M]) read(ctx context.Context, s *Service, accountID, id string) (*M, store.Record, error) {
	k := recordKey{f.kind, accountID, id}
	if e, ok := s.cache.get(k); ok {
		m, err := f.model(s, e.doc, e.rec)
		return m, e.rec, err
	}
	t := s.cache.note()
	rec, err := s.store.Get(ctx, f.kind, accountID, id)
	if err != nil {
		return nil, store.Record{}, err
	}
	doc, err := f.parse(rec.Data)
	if err != nil {
		return nil, store.Record{}, f.corrupt(s, rec, err)
	}
	s.cache.put(t, rec, doc)
	m, err := f.model(s, doc, rec)
	return m, rec, err
}

// listed returns the model of a record a list read under t: its cached
// document when the cache holds this version of it, else the record's,
// which it then caches.
func (f form[M]) listed(s *Service, t ticket, rec store.Record) (*M, error) {
	if e, ok := s.cache.get(recordKey{rec.Kind, rec.AccountID, rec.ID}); ok && e.rec.Version == rec.Version {
		return f.model(s, e.doc, rec)
	}
	doc, err := f.parse(rec.Data)
	if err != nil {
		return nil, f.corrupt(s, rec, err)
	}
	s.cache.put(t, rec, doc)
	return f.model(s, doc, rec)
}

// listedJSON returns the JSON of the model of rec, presented, for a list
// that read rec under t (see listEncoded): the encoding cached with this
// version of the record, else one it makes and caches with it.
func (f form[M]) listedJSON(s *Service, t ticket, rec store.Record, present func(*M, store.Record)) ([]byte, error) {
	e, ok := s.cache.get(recordKey{rec.Kind, rec.AccountID, rec.ID})
	var doc any
	if ok && e.rec.Version == rec.Version {
		if b := e.json.Load(); b != nil {
			return *b, nil
		}
		doc = e.doc
	} else {
		d, err := f.parse(rec.Data)
		if err != nil {
			return nil, f.corrupt(s, rec, err)
		}
		doc, e = d, s.cache.put(t, rec, d)
	}
	b, err := f.encodeShown(s, doc, rec, present)
	if err != nil {
		return nil, err
	}
	s.cache.setJSON(e, b)
	return b, nil
}

// appendJSON appends to dst the JSON of the record id of f's kind in p's
// account as present shows it (see listEncoded: present must be a pure
// function of the model and the record): the encoding cached with the
// record when there is one, else one it makes and caches. Errors are
// get's.
func appendJSON[M any](ctx context.Context, s *Service, p Principal, f form[M], id string, present func(*M, store.Record), dst []byte) ([]byte, error) {
	if err := p.check(); err != nil {
		return dst, err
	}
	if !ids.Valid(id, f.prefix) {
		return dst, f.notFound(id)
	}
	e, ok := s.cache.get(recordKey{f.kind, p.AccountID, id})
	var (
		doc any
		rec store.Record
	)
	if ok {
		if b := e.json.Load(); b != nil {
			return append(dst, *b...), nil
		}
		doc, rec = e.doc, e.rec
	} else {
		t := s.cache.note()
		r, err := s.store.Get(ctx, f.kind, p.AccountID, id)
		if err != nil {
			return dst, s.storeErr(err, *f.kindInfo, id)
		}
		d, err := f.parse(r.Data)
		if err != nil {
			return dst, f.corrupt(s, r, err)
		}
		doc, rec, e = d, r, s.cache.put(t, r, d)
	}
	b, err := f.encodeShown(s, doc, rec, present)
	if err != nil {
		return dst, err
	}
	s.cache.setJSON(e, b)
	return append(dst, b...), nil
}

// encodeShown returns the JSON of the model of doc, a parse of rec,
// presented: the model's own encoding when it is a [jsonenc.Appender]
// that succeeds, else encoding/json's.
func (f form[M]) encodeShown(s *Service, doc any, rec store.Record, present func(*M, store.Record)) ([]byte, error) {
	m, err := f.model(s, doc, rec)
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
		s.log.Error("cannot encode a resource", "kind", string(f.kind), "id", rec.ID, "err", err)
		return nil, apierr.Wrap(apierr.Internal, err, "internal error")
	}
	return b, nil
}

// clonePtr returns a pointer to a copy of *p, nil when p is.
func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// refIDs returns the IDs of refs; nil for none.
func refIDs(refs []resource.Ref) []string {
	if len(refs) == 0 {
		return nil
	}
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = r.ID
	}
	return out
}

// idRefs returns Refs with the IDs ids and no URI (present fills it);
// never nil.
func idRefs(ids []string) []resource.Ref {
	out := make([]resource.Ref, len(ids))
	for i, id := range ids {
		out[i] = resource.Ref{ID: id}
	}
	return out
}

// idRef returns a Ref to id, nil when id is "".
func idRef(id string) *resource.Ref {
	if id == "" {
		return nil
	}
	return &resource.Ref{ID: id}
}

// refID returns the ID of r, "" when r is nil.
func refID(r *resource.Ref) string {
	if r == nil {
		return ""
	}
	return r.ID
}

// common is the part of most documents every resource with a description
// has: when it was created, and the user's description and metadata.
type common struct {
	CreatedAt   time.Time `json:"created_at"`
	Description string    `json:"description,omitempty"`
	Metadata    string    `json:"metadata,omitempty"`
}

// appendOpening appends to dst the opening of the object encoding/json
// makes of a document that embeds c first: '{' and c's fields. It returns
// dst unchanged and false where encoding/json fails (see
// [jsonenc.AppendTime]). (It is not named appendJSON: every document that
// embeds common would then be a docAppender.)
func (c *common) appendOpening(dst []byte) ([]byte, bool) {
	n := len(dst)
	dst, ok := jsonenc.AppendTime(append(dst, `{"created_at":`...), c.CreatedAt)
	if !ok {
		return dst[:n], false
	}
	if c.Description != "" {
		dst = append(dst, `,"description":`...)
		dst = jsonenc.AppendString(dst, c.Description)
	}
	if c.Metadata != "" {
		dst = append(dst, `,"metadata":`...)
		dst = jsonenc.AppendString(dst, c.Metadata)
	}
	return dst, true
}
