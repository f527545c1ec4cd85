package store

import (
	"context"
	"strconv"

	"github.com/edgeplane/edgeplane/apierr"
)

// Op is what a committed write did to one record.
type Op uint8

// The operations of a [Change].
const (
	OpCreate Op = iota + 1
	OpUpdate
	OpDelete
)

// String returns "create", "update" or "delete".
func (o Op) String() string {
	switch o {
	case OpCreate:
		return "create"
	case OpUpdate:
		return "update"
	case OpDelete:
		return "delete"
	}
	return "op(" + strconv.Itoa(int(o)) + ")"
}

// Change is one entry of a store's change feed: one committed write of one
// record. A write that touches several records (a delete that cascades to
// children) makes one change per record, committed together, with
// consecutive revisions: the named record's last.
type Change struct {
	// Revision is the write's place in the store's total order; after a
	// create or update it is the record's Version.
	Revision int64
	// Op is what the write did.
	Op Op
	// Kind, AccountID, ID and ParentID name the record, enough to fetch it
	// again.
	Kind      Kind
	AccountID string
	ID        string
	ParentID  string
	// Data is the record's document as a create or update wrote it, or as
	// it was when a delete removed it: enough for a reader to report the
	// change without reading the record again.
	Data []byte
	// Note is the label the writer gave the write through [WithNote] (the
	// Service: the event type the write reports). Changes of records a
	// delete removed by cascade have no note.
	Note string
}

// Clone returns a deep copy of c.
func (c Change) Clone() Change {
	if c.Data != nil {
		c.Data = append([]byte(nil), c.Data...)
	}
	return c
}

// Feed is the change feed every [Store] keeps: a totally ordered log of
// committed writes that a reader in this process or another follows, as
// etcd's watch and Kubernetes' resourceVersion do. A reader takes the
// current revision, reads the state it needs, then asks for the changes
// after that revision (changes it already saw in its reads are harmless
// to apply again: they say what to fetch). A store keeps a bounded tail
// of the feed; a reader that falls behind it is told to resync with a
// [*CompactedError], never handed a feed with a gap.
type Feed interface {
	// Revision returns the revision of the last committed change; 0 for a
	// store that has never been written.
	Revision(ctx context.Context) (int64, error)
	// Changes returns up to limit changes with revisions above after, in
	// revision order: every committed change of that range exactly once,
	// and none that is not committed. limit must be positive. When the
	// store no longer holds the change after+1 it fails with a
	// [*CompactedError]. Under a context from [WithoutData] a change's
	// Data may be nil.
	Changes(ctx context.Context, after int64, limit int) ([]Change, error)
	// Wait blocks until the store's revision is above after, and returns
	// nil then (at once if it already is), or ctx's error when ctx ends
	// first. It wakes within a short time of a commit by any process that
	// shares the store, without the caller polling.
	Wait(ctx context.Context, after int64) error
	// Compact discards the changes up to and including revision through,
	// to bound the feed's storage: readers behind it will get a
	// [*CompactedError]. Stores may also compact on their own (memstore
	// keeps a fixed number of changes). Revisions are never reused.
	Compact(ctx context.Context, through int64) error
}

// CompactedError reports that a feed reader asked for changes the store
// no longer holds: it must read the state again and follow the feed from
// the revision it read at. It unwraps to [apierr.ErrFailedPrecondition].
type CompactedError struct {
	// After is the revision the reader asked to follow from.
	After int64
	// Oldest is the revision of the oldest change the store still holds.
	Oldest int64
}

func (e *CompactedError) Error() string {
	return "the change feed no longer holds changes after revision " + strconv.FormatInt(e.After, 10) +
		" (oldest kept: " + strconv.FormatInt(e.Oldest, 10) + "); read the state again and follow from its revision"
}

// Unwrap returns [apierr.ErrFailedPrecondition].
func (e *CompactedError) Unwrap() error { return apierr.ErrFailedPrecondition }

type noteKey struct{}

// WithNote returns a context whose writes label their changes with note
// (see [Change].Note). A backend reads it with [NoteFrom].
func WithNote(ctx context.Context, note string) context.Context {
	return context.WithValue(ctx, noteKey{}, note)
}

type noDataKey struct{}

// WithoutData returns a context under which [Feed.Changes] may leave each
// change's Data nil: for a reader that only needs to know which records
// changed (a cache that invalidates them), so that a backend need not
// copy or fetch documents it will not read. A backend reads it with
// [DataWanted]; one that ignores it returns Data as always.
func WithoutData(ctx context.Context) context.Context {
	return context.WithValue(ctx, noDataKey{}, true)
}

// DataWanted reports whether Changes under ctx must fill each change's
// Data: true unless ctx comes from [WithoutData].
func DataWanted(ctx context.Context) bool {
	no, _ := ctx.Value(noDataKey{}).(bool)
	return !no
}

// NoteFrom returns the note [WithNote] put in ctx, or "".
func NoteFrom(ctx context.Context) string {
	n, _ := ctx.Value(noteKey{}).(string)
	return n
}
