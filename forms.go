package edgeplane

import (
	"encoding/json"
	"time"

	"github.com/edgeplane/edgeplane/apierr"
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
	load func(s *Service, data []byte, rec store.Record) (*M, error)
}

// docForm returns the form of kind k whose document is a D: save makes
// the document of a model (rec names the record being written, for sealing
// bound to it), load makes the model of a document (rec names the record
// read; load sets the model's ID from it). The document save returns is
// only marshalled, so it may share memory with the model; the one load
// gets is its own.
func docForm[M, D any](k *kindInfo, save func(s *Service, m *M, rec *store.Record) (*D, error), load func(s *Service, d *D, rec store.Record) (*M, error)) form[M] {
	return form[M]{
		kindInfo: k,
		save: func(s *Service, m *M, rec *store.Record) (any, error) {
			return save(s, m, rec)
		},
		load: func(s *Service, data []byte, rec store.Record) (*M, error) {
			d := new(D)
			if err := json.Unmarshal(data, d); err != nil {
				return nil, err
			}
			return load(s, d, rec)
		},
	}
}

// plainForm is docForm for a kind whose document needs neither the
// Service (no sealing) nor can fail to convert.
func plainForm[M, D any](k *kindInfo, save func(m *M) *D, load func(d *D, rec store.Record) *M) form[M] {
	return docForm(k,
		func(_ *Service, m *M, _ *store.Record) (*D, error) { return save(m), nil },
		func(_ *Service, d *D, rec store.Record) (*M, error) { return load(d, rec), nil })
}

// encode sets rec.Data to the document of m.
func (f form[M]) encode(s *Service, m *M, rec *store.Record) error {
	d, err := f.save(s, m, rec)
	if err == nil {
		rec.Data, err = json.Marshal(d)
	}
	if err != nil {
		s.log.Error("cannot encode a stored document", "kind", string(f.kind), "id", rec.ID, "err", err)
		return apierr.Wrap(apierr.Internal, err, "internal error")
	}
	return nil
}

// decode returns the model of the stored record rec, computed fields
// empty (present fills them).
func (f form[M]) decode(s *Service, rec store.Record) (*M, error) {
	m, err := f.load(s, rec.Data, rec)
	if err != nil {
		s.log.Error("cannot decode a stored document", "kind", string(f.kind), "id", rec.ID, "err", err)
		return nil, apierr.Wrap(apierr.Internal, err, "internal error")
	}
	return m, nil
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
