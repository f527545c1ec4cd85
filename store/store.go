// Package store is the storage contract of edgeplane: the [Store]
// interface every backend implements, the [Record] it keeps (with its
// version and secondary index entries), the [Query] that selects records
// by ID, parent, index value or reference, the change [Feed] that a second
// process follows, and the typed errors of key, reference and version
// clashes. It is a leaf: it imports only package apierr and the standard
// library, so a backend depends on nothing else of edgeplane (no Service,
// no CEL, no validator).
//
// Users pick a backend (memstore, sqlitestore, pgstore or their own) and
// hand it to edgeplane.New; a backend proves itself by running
// storetest.Run in a one-line test.
//
// # Versions and the feed
//
// Every committed write of a record gets the next revision of one
// store-wide sequence: it is the record's Version and the Revision of the
// write's [Change] in the feed. [Store.Replace] and [Store.DeleteIf] write
// only at the version the caller read (compare-and-swap). A reader takes
// [Feed.Revision], reads what it needs, then follows [Feed.Changes] after
// that revision, blocking in [Feed.Wait]; one that falls behind what the
// store keeps gets a [*CompactedError] and reads again (package follow
// does all of that for a [follow.Handler]). A write may carry a [Note]
// (the event it reports), which its change shows.
//
// # Optional interfaces
//
// A backend may implement [Exclusive] (no other process writes it: the
// Service's caches need no fence) and [VersionLister] (lists of IDs and
// versions without documents, and reads of several records at once: a
// list then reads from the store only the records the Service's record
// cache does not hold). storetest checks a VersionLister against List.
//
// [follow.Handler]: https://pkg.go.dev/github.com/edgeplane/edgeplane/store/follow#Handler
package store

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/edgeplane/edgeplane/apierr"
)

// Kind names a type of record in a [Store]: "credential", "ip_policy", ...
// The kinds are the host's (edgeplane's root package defines its own); a
// Store treats them as opaque names.
type Kind string

// Record is the unit a [Store] keeps: one resource of one account, stored as
// an opaque document plus the few facts a backend must index.
//
// Records are values: a Store copies them on the way in and on the way out,
// so a caller can never change stored state by mutating a Record.
type Record struct {
	// Kind is the record's type.
	Kind Kind
	// AccountID is the account the record belongs to. Every read and write
	// names it; a record of another account does not exist for the caller.
	AccountID string
	// ID is the record's identifier, unique across the store. Identifiers
	// sort in creation order (see the package doc), and lists are ordered by
	// them.
	ID string
	// ParentID, when set, names a record of the same account that must
	// exist when this one is created; deleting the parent deletes this
	// record too, in the same atomic step. Lists can be filtered by it.
	ParentID string
	// Data is the resource's document (JSON, written by the Service).
	Data []byte
	// Keys are lookup keys, unique across the whole store (all accounts),
	// by which [Store.Lookup] finds the record: a token hash, a domain
	// name. Creating or updating a record to a key another record holds
	// fails with a [*DuplicateError].
	Keys []string
	// Refs are the IDs of records of the same account that this record
	// references. Each must exist when the record is written, checked in
	// the same atomic step as the write (else a [*MissingRefError]), and a
	// referenced record cannot be deleted while the reference stands (a
	// [*InUseError]).
	Refs []string
	// Indexes are the record's entries in non-unique secondary indexes, by
	// which a [Query] selects records: a tunnel's labels, a source's event
	// type, a domain's renewal time. A record may have several values in
	// one index; an entry that appears twice counts once.
	Indexes []IndexEntry
	// Version is the store's revision at the record's last write (create,
	// update or replace): set by the store, ignored on the way in except by
	// [Store.Replace], which writes only when it still equals the stored
	// one. Revisions come from one counter per store, so a later write of
	// any record has a greater version, and a record's version changes on
	// every write.
	Version int64
	// Note labels the write that stores the record ([Store.Create],
	// [Store.Replace], and [Store.Update], whose callback may set it): the
	// write's [Change] in the feed carries it. It is not part of the
	// stored record: reads return it zero, and so do writes.
	Note Note
}

// IndexEntry is one value of a record in a named secondary index. Values
// compare bytewise; times are written so that they sort (fixed-width UTC
// RFC 3339, as [IndexTime] does).
type IndexEntry struct {
	Name, Value string
}

// IndexTime formats t as an index value that sorts in time order.
func IndexTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000000Z") }

// Clone returns a deep copy of r.
func (r Record) Clone() Record {
	r.Data = append([]byte(nil), r.Data...)
	r.Keys = append([]string(nil), r.Keys...)
	r.Refs = append([]string(nil), r.Refs...)
	r.Indexes = append([]IndexEntry(nil), r.Indexes...)
	return r
}

// Query selects records for [Store.List].
type Query struct {
	// Kind selects records of one kind. Required.
	Kind Kind
	// AccountID selects one account's records. Empty selects every
	// account's: the Service uses that only for host-level work, never for
	// a caller's request.
	AccountID string
	// ParentID, when set, selects only the children of that record.
	ParentID string
	// BeforeID, when set, selects only records whose ID sorts before it:
	// the cursor of the next page.
	BeforeID string
	// Limit is the most records to return; it must be positive.
	Limit int

	// Index, when set, selects only records with an entry in that
	// secondary index whose value equals Value, or, when Below is set,
	// sorts before Value. Results are still ordered and paged by ID.
	Index string
	Value string
	Below bool
	// RefersTo, when set, selects only records whose Refs include that ID
	// (the referrers of a record). It cannot be combined with Index.
	RefersTo string
}

// Store is the storage interface every backend implements. The edgeplane
// Service is its only caller; users pick a backend ([memstore] or their
// own) and hand it to edgeplane.New.
//
// Every method honours ctx: a cancelled context makes it return ctx.Err()
// (possibly wrapped) without effect. Every write is atomic: it happens
// whole or not at all, and concurrent writes to one record never lose an
// update. Reads see only committed writes. Errors carry an [apierr] code: [apierr.ErrNotFound] for a record
// that does not exist in the named account with the named kind, and the
// typed errors of this file for key and reference clashes.
//
// A backend proves itself by running storetest.Run in a one-line test.
//
// [memstore]: https://pkg.go.dev/github.com/edgeplane/edgeplane/memstore
type Store interface {
	// Create inserts rec. It fails with a [*DuplicateError] when rec.ID or
	// one of rec.Keys is taken, and with a [*MissingRefError] when
	// rec.ParentID or one of rec.Refs does not exist in rec.AccountID.
	Create(ctx context.Context, rec Record) error
	// Get returns the record of that kind, account and ID.
	Get(ctx context.Context, kind Kind, accountID, id string) (Record, error)
	// Lookup returns the record of that kind holding key, in any account.
	Lookup(ctx context.Context, kind Kind, key string) (Record, error)
	// Update runs fn on a copy of the record and stores the result
	// atomically: no other write to the record happens between the read fn
	// sees and the write. fn may change Data, Keys, Refs and Indexes, and
	// set Note to label the write; if it returns an error, nothing changes
	// and Update returns that error. Key and reference rules are those of
	// Create. Update returns the stored result, with its new Version.
	//
	// fn may run more than once (a backend may implement Update as read,
	// fn, conditional write, and retry when another write came between;
	// see [UpdateByReplace]), so it must be pure: it may change only the
	// record it is given, and must decide from that record alone.
	Update(ctx context.Context, kind Kind, accountID, id string, fn func(*Record) error) (Record, error)
	// Replace stores rec in place of the record of its kind, account and
	// ID, if that record's Version still equals rec.Version: a
	// compare-and-swap. When another write came first it fails with a
	// [*VersionError] and changes nothing. Data, Keys and Refs are
	// replaced; ParentID must be unchanged. Key and reference rules are
	// those of Create. Replace returns the stored record with its new
	// Version.
	Replace(ctx context.Context, rec Record) (Record, error)
	// Delete removes the record and, in the same atomic step, its
	// descendants (records whose ParentID chain leads to it). It fails with
	// an [*InUseError] when a record outside that set references one inside
	// it. note labels the change of the named record (see [Record].Note);
	// those of its descendants carry none.
	Delete(ctx context.Context, kind Kind, accountID, id string, note Note) error
	// DeleteIf is Delete conditional on the record's Version: when another
	// write came after the caller read version, it fails with a
	// [*VersionError] and deletes nothing.
	DeleteIf(ctx context.Context, kind Kind, accountID, id string, version int64, note Note) error
	// List returns the records that q selects, newest (greatest ID) first,
	// at most q.Limit of them. Paging by BeforeID is stable under
	// concurrent writes: no record appears twice, and every record that
	// exists throughout the paging appears exactly once.
	List(ctx context.Context, q Query) ([]Record, error)

	// Feed: every committed write, in order.
	Feed
}

// VersionError reports that a conditional write ([Store.Replace]) found
// the record at another version than the caller read. It unwraps to
// [apierr.ErrConflict].
type VersionError struct {
	// ID is the record's identifier.
	ID string
	// Want is the version the caller expected; Have the stored one.
	Want, Have int64
}

func (e *VersionError) Error() string {
	return "record " + e.ID + " changed: version " + strconv.FormatInt(e.Have, 10) + ", not " + strconv.FormatInt(e.Want, 10)
}

// Unwrap returns [apierr.ErrConflict].
func (e *VersionError) Unwrap() error { return apierr.ErrConflict }

// UpdateByReplace implements [Store.Update] on [Store.Get] and
// [Store.Replace], for backends that do not hold a lock across the
// callback: it reads the record, runs fn on it and writes the result
// conditionally, and starts again, at most attempts times in all, when
// another write came between. It then fails with the last
// [*VersionError].
func UpdateByReplace(ctx context.Context, s Store, kind Kind, accountID, id string, attempts int, fn func(*Record) error) (Record, error) {
	var err error
	for range max(attempts, 1) {
		var rec Record
		if rec, err = s.Get(ctx, kind, accountID, id); err != nil {
			return Record{}, err
		}
		version := rec.Version
		if err = fn(&rec); err != nil {
			return Record{}, err
		}
		if rec.Kind != kind || rec.AccountID != accountID || rec.ID != id {
			return Record{}, apierr.New(apierr.Internal, "update may not change a record's kind, account, id or parent")
		}
		rec.Version = version
		var out Record
		out, err = s.Replace(ctx, rec)
		var ve *VersionError
		if !errors.As(err, &ve) {
			return out, err
		}
	}
	return Record{}, err
}

// DuplicateError reports that a record's ID or one of its lookup keys is
// already taken. It unwraps to [apierr.ErrConflict].
type DuplicateError struct {
	// Key is the ID or lookup key that is taken.
	Key string
}

func (e *DuplicateError) Error() string { return "duplicate key " + e.Key }

// Unwrap returns [apierr.ErrConflict].
func (e *DuplicateError) Unwrap() error { return apierr.ErrConflict }

// MissingRefError reports that a record names a parent or reference that
// does not exist in its account. It unwraps to [apierr.ErrNotFound].
type MissingRefError struct {
	// ID is the missing record's identifier.
	ID string
}

func (e *MissingRefError) Error() string { return "referenced record " + e.ID + " does not exist" }

// Unwrap returns [apierr.ErrNotFound].
func (e *MissingRefError) Unwrap() error { return apierr.ErrNotFound }

// InUseError reports that a record cannot be deleted because others
// reference it. It unwraps to [apierr.ErrConflict].
type InUseError struct {
	// ID is the record that could not be deleted.
	ID string
	// Referrers are the IDs of the records that reference it, sorted.
	Referrers []string
}

func (e *InUseError) Error() string {
	return e.ID + " is referenced by " + strings.Join(e.Referrers, ", ")
}

// Unwrap returns [apierr.ErrConflict].
func (e *InUseError) Unwrap() error { return apierr.ErrConflict }

// UniqueRefs returns refs without repeats, in first-seen order: a record
// references an ID once however often Refs names it. Backends store this.
func UniqueRefs(refs []string) []string {
	if len(refs) < 2 {
		return refs
	}
	out := refs[:0:0]
	seen := make(map[string]bool, len(refs))
	for _, r := range refs {
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	return out
}

// UniqueIndexes returns es sorted by name and value, without repeats: an
// entry that appears twice counts once. Backends store this.
func UniqueIndexes(es []IndexEntry) []IndexEntry {
	if len(es) < 2 {
		return es
	}
	out := slices.Clone(es)
	slices.SortFunc(out, func(a, b IndexEntry) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.Value, b.Value)
	})
	return slices.Compact(out)
}

// Check reports whether q is a query a Store answers: Limit positive, and
// Index and RefersTo not both set. Backends call it first, so every
// backend refuses the same queries with the same error.
func (q Query) Check() error {
	if q.Limit <= 0 {
		return apierr.Invalidf("limit", "must be positive")
	}
	if q.Index != "" && q.RefersTo != "" {
		return apierr.Invalidf("index", "cannot be combined with refers_to")
	}
	return nil
}

// Exclusive is implemented by a Store that no other process can write
// (memstore): the caches a Service keeps in front of it are made true by
// its own writes alone, so its reads need no fence (see the root
// package's doc, # Storage). A Store that does not implement it, or
// answers false, may be shared.
type Exclusive interface {
	Exclusive() bool
}

// MaxGetMany is the most IDs one [VersionLister.GetMany] takes: a page
// of a list and then some.
const MaxGetMany = 256

// Version is a record's ID and [Record].Version: what
// [VersionLister.ListVersions] returns of each record it selects.
type Version struct {
	ID      string
	Version int64
}

// VersionLister is implemented by a Store that can list records without
// their documents, and read the documents of several records in one step
// (sqlitestore, pgstore): a list can then read the IDs and versions of a
// page from the store and take the documents the Service's record cache
// holds at those versions, and read from the store only the records it
// does not hold. A Store whose List is as cheap as that (memstore) need
// not implement it.
type VersionLister interface {
	// ListVersions returns the ID and version of each record that List
	// would return for q, in the same order and with the same errors
	// (q is checked with [Query.Check]): the same selection by kind,
	// account, parent, index value and reference, the same paging.
	ListVersions(ctx context.Context, q Query) ([]Version, error)
	// GetMany returns the records of that kind in accountID whose IDs are
	// among ids, in the order of ids; an ID that names no such record
	// (none, another kind's, another account's) is left out, and an ID
	// repeated is returned once. accountID must not be empty, and ids
	// holds at most [MaxGetMany] IDs: more is refused with an
	// [apierr.InvalidArgument] error naming "ids".
	GetMany(ctx context.Context, kind Kind, accountID string, ids []string) ([]Record, error)
}

// CheckGetMany reports whether a [VersionLister.GetMany] of accountID
// and ids is one a Store answers. Backends call it first, so every
// backend refuses the same calls with the same error.
func CheckGetMany(accountID string, ids []string) error {
	if accountID == "" {
		return apierr.Invalidf("account_id", "must not be empty")
	}
	if len(ids) > MaxGetMany {
		return apierr.Invalidf("ids", "must hold at most %d IDs, got %d", MaxGetMany, len(ids))
	}
	return nil
}

// InOrder returns recs in the order of ids, each once, as
// [VersionLister.GetMany] answers: a backend that reads the records in
// another order calls it last. recs must hold only records whose IDs
// are among ids; it may be reordered.
func InOrder(recs []Record, ids []string) []Record {
	if len(recs) < 2 {
		return recs
	}
	at := make(map[string]int, len(ids))
	for i, id := range ids {
		if _, ok := at[id]; !ok {
			at[id] = i
		}
	}
	slices.SortFunc(recs, func(a, b Record) int { return at[a.ID] - at[b.ID] })
	return slices.CompactFunc(recs, func(a, b Record) bool { return a.ID == b.ID })
}
