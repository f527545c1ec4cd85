package store

import (
	"context"
	"strconv"
	"time"

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
	// Note is the label the writer gave the write (see [Record].Note and
	// [Store.Delete]); zero when it gave none. Changes of records a delete
	// removed by cascade have none.
	Note Note
}

// Note is the label of a write, which its [Change] carries into the feed:
// the event type the write reports (the Service's, e.g.
// "credential_created.v0") and the time of the change. The zero Note
// labels nothing. A store keeps it as given, At to the microsecond at
// least (PostgreSQL keeps microseconds), and returns At in UTC.
type Note struct {
	// Event is the type of the event the write reports.
	Event string
	// At is when the change happened, as the writer's clock says.
	At time.Time
}

// IsZero reports whether n labels nothing.
func (n Note) IsZero() bool { return n.Event == "" && n.At.IsZero() }

// Payload says whether [Feed.Changes] fills each change's Data.
type Payload bool

// The payloads of [Feed.Changes].
const (
	// WithData asks for each change's Data: for a reader that reports
	// what a change wrote without reading the record again.
	WithData Payload = true
	// WithoutData asks for changes without Data (nil): for a reader that
	// only needs to know which records changed (a cache that invalidates
	// them, a follower that reads each again), so that the store need
	// not copy or fetch documents no one will read.
	WithoutData Payload = false
)

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
	// [*CompactedError]. With payload [WithoutData] every change's Data
	// is nil; everything else is as with [WithData].
	Changes(ctx context.Context, after int64, limit int, payload Payload) ([]Change, error)
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
