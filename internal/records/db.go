package records

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/filter"
	"github.com/edgeplane/edgeplane/internal/recordcache"
	"github.com/edgeplane/edgeplane/internal/seal"
	"github.com/edgeplane/edgeplane/resource"
	"github.com/edgeplane/edgeplane/store"
)

// DB is the record machinery of one Service: the store and the record
// cache in front of it, and what reading, writing and showing records
// needs. Its fields are set once, before first use.
type DB struct {
	// Store is the store; its writes invalidate Cache
	// ([recordcache.Invalidating]).
	Store store.Store
	// Cache is the record cache; nil when it is off.
	Cache *recordcache.Cache
	// Versions, when set, is the store's [store.VersionLister] (the
	// store under Store, whose reads need no invalidation): lists read
	// their pages' IDs and versions from it and the documents from Cache,
	// reading from the store only the records Cache does not hold at
	// those versions (see [ListAs]).
	Versions store.VersionLister
	// Fence, when set, is called before a read is answered from Cache:
	// it returns once Cache reflects every change committed to the store
	// before the call (another process's too). On its error the read goes
	// to the store.
	Fence func(ctx context.Context) error
	// Log receives failures that are not the caller's.
	Log *slog.Logger
	// Now is the clock of event labels.
	Now func() time.Time
	// Sealer seals the secrets that documents keep.
	Sealer *seal.Sealer
	// Filters compiles the filters of lists.
	Filters *filter.Compiler
	// BaseURL is the {base_url} of URIs, without a trailing slash.
	BaseURL string
	// Kinds is the list of every kind, for messages naming an ID.
	Kinds Kinds
	// ExplainInUse, when set, words a store's in-use error whose
	// referrers need more than their IDs to be understood (the module of
	// an edge that holds a reference); nil leaves the usual message.
	ExplainInUse func(ctx context.Context, accountID string, err error) error
}

// URI returns {base_url}/<collection>/<id>.
func (db *DB) URI(collection, id string) string {
	return db.BaseURL + "/" + collection + "/" + id
}

// Ref returns the Ref of id in collection.
func (db *DB) Ref(collection, id string) resource.Ref {
	return resource.Ref{ID: id, URI: db.URI(collection, id)}
}

// Refs returns the Refs of ids in collection; never nil.
func (db *DB) Refs(collection string, ids []string) []resource.Ref {
	out := make([]resource.Ref, 0, len(ids))
	for _, id := range ids {
		out = append(out, db.Ref(collection, id))
	}
	return out
}

// Timestamp returns the current time as resources record it.
func (db *DB) Timestamp() time.Time { return resource.Timestamp(db.Now()) }

// Note returns the note that labels a write reported as the change verb
// of the event name ev (see package events), at the current time: the
// zero Note, which labels nothing, when ev is "" (a kind that reports no
// changes).
func (db *DB) Note(ev, verb string) store.Note {
	if ev == "" {
		return store.Note{}
	}
	return store.Note{Event: events.TypeOf(ev, verb), At: db.Now()}
}

// StoreErr turns a store error into the error a caller sees: typed
// errors keep their identity but get a client-safe message; context
// errors pass through; anything unexpected becomes Internal and is
// logged.
func (db *DB) StoreErr(err error, k *Kind, id string) error {
	if err == nil {
		return nil
	}
	var (
		ae   *apierr.Error
		dup  *store.DuplicateError
		miss *store.MissingRefError
		use  *store.InUseError
	)
	switch {
	case errors.As(err, &use):
		return &apierr.Error{Code: apierr.Conflict, Err: err,
			Msg: db.Kinds.Describe(use.ID) + " is still referenced by " + db.Kinds.DescribeAll(use.Referrers) + "; remove those references first"}
	case errors.As(err, &dup):
		return &apierr.Error{Code: apierr.Conflict, Err: err, Msg: "another " + k.Noun + " already has that value"}
	case errors.As(err, &miss):
		return &apierr.Error{Code: apierr.InvalidArgument, Err: err, Msg: db.Kinds.Describe(miss.ID) + " does not exist",
			Violations: []apierr.Violation{{Reason: db.Kinds.Describe(miss.ID) + " does not exist"}}}
	case errors.Is(err, apierr.ErrNotFound) && id != "":
		return k.NotFound(id)
	case errors.As(err, &ae):
		return err
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	}
	db.Log.Error("store failure", "kind", string(k.StoreKind), "id", id, "err", err)
	return apierr.Wrap(apierr.Internal, err, "internal error")
}

// cached returns the cache's entry of k, once [DB.Fence] has made sure
// the cache reflects every change committed before the call; a miss, or
// a failed fence, says to read the store.
func (db *DB) cached(ctx context.Context, k recordcache.Key) (*recordcache.Entry, bool) {
	e, ok := db.Cache.Get(k)
	if !ok || db.Fence == nil {
		return e, ok
	}
	if err := db.Fence(ctx); err != nil {
		return nil, false
	}
	return db.Cache.Get(k) // the fence's wait may have invalidated it
}
