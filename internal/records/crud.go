package records

import (
	"context"
	"errors"

	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/identity"
	"github.com/edgeplane/edgeplane/internal/ids"
	"github.com/edgeplane/edgeplane/store"
)

// Get loads and decodes the record id of form f's kind in p's account. A
// malformed ID is simply not found.
func Get[M any](ctx context.Context, db *DB, p identity.Principal, f Form[M], id string) (*M, store.Record, error) {
	if err := p.Check(); err != nil {
		return nil, store.Record{}, err
	}
	if !ids.Valid(id, f.Prefix) {
		return nil, store.Record{}, f.NotFound(id)
	}
	v, rec, err := f.Read(ctx, db, p.AccountID, id)
	if err != nil {
		return nil, store.Record{}, db.StoreErr(err, f.Kind, id)
	}
	return v, rec, nil
}

// Create stores v as a new record of form f's kind in p's account,
// reported as the kind's created event. A missing reference is returned
// as the store's error, for the caller to name the field that held it.
func Create[M any](ctx context.Context, db *DB, p identity.Principal, f Form[M], id, parent string, v *M, refs []string, keys ...string) error {
	rec := store.Record{Kind: f.StoreKind, AccountID: p.AccountID, ID: id, ParentID: parent, Refs: refs, Keys: keys,
		Note: db.Note(f.Event, events.Created)}
	if err := f.Encode(db, v, &rec); err != nil {
		return err
	}
	if err := db.Store.Create(ctx, rec); err != nil {
		var miss *store.MissingRefError
		if errors.As(err, &miss) {
			return err // the caller names the field
		}
		return db.StoreErr(err, f.Kind, id)
	}
	return nil
}

// Update runs mutate on the decoded record inside the store's atomic
// update and returns the stored result, reported as the kind's updated
// event. mutate may also set the record's Keys and Refs. Like the
// store's callback, mutate may run more than once and must have no
// effect but on its arguments.
func Update[M any](ctx context.Context, db *DB, p identity.Principal, f Form[M], id string, mutate func(v *M, rec *store.Record) error) (*M, error) {
	return UpdateAs(ctx, db, p, f, id, f.Event, events.Updated, mutate)
}

// UpdateAs is Update reported as the change verb of the event name ev (a
// module of an edge, say, whose changes are events of their own). mutate
// may label the write otherwise by setting rec.Note.
func UpdateAs[M any](ctx context.Context, db *DB, p identity.Principal, f Form[M], id, ev, verb string, mutate func(v *M, rec *store.Record) error) (*M, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	if !ids.Valid(id, f.Prefix) {
		return nil, f.NotFound(id)
	}
	var (
		out *M
		doc any // what out was saved as
	)
	note := db.Note(ev, verb)
	t := db.Cache.Note()
	rec, err := db.Store.Update(ctx, f.StoreKind, p.AccountID, id, func(rec *store.Record) error {
		v, err := f.Current(db, *rec)
		if err != nil {
			return err
		}
		rec.Note = note
		if err := mutate(v, rec); err != nil {
			return err
		}
		d, err := f.EncodeDoc(db, v, rec)
		if err != nil {
			return err
		}
		out, doc = v, d
		return nil
	})
	if err != nil {
		return nil, db.StoreErr(err, f.Kind, id)
	}
	if f.own != nil {
		db.Cache.PutWritten(t, rec, f.own(doc))
	}
	return out, nil
}

// Remove deletes the record id of kind k in p's account, reported as the
// kind's deleted event.
func Remove(ctx context.Context, db *DB, p identity.Principal, k *Kind, id string) error {
	if err := p.Check(); err != nil {
		return err
	}
	if !ids.Valid(id, k.Prefix) {
		return k.NotFound(id)
	}
	if err := db.Store.Delete(ctx, k.StoreKind, p.AccountID, id, db.Note(k.Event, events.Deleted)); err != nil {
		if db.ExplainInUse != nil {
			if inUse := db.ExplainInUse(ctx, p.AccountID, err); inUse != nil {
				return inUse // names the edge modules that hold the reference
			}
		}
		return db.StoreErr(err, k, id)
	}
	return nil
}
