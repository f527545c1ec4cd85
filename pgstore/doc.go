// Package pgstore is a [store.Store] on PostgreSQL, through
// github.com/jackc/pgx/v5 and its pool. Several processes may share one
// store (one database schema): each opens its own [Store] handle on it,
// and each sees the others' writes and wakes on their commits.
//
// # Schema
//
// [Open] applies the package's embedded, versioned migrations (a table
// edgeplane_schema_migrations records the applied versions) in one
// transaction under a transaction-level advisory lock, so concurrent
// Opens of one schema apply them once. A schema newer than this build
// knows is refused. The store lives in the first schema of the
// connection's search_path: pass search_path in the URL (for example
// "postgres://host/db?search_path=edge") to keep several stores in one
// database.
//
// Integrity is the database's. Records are rows of one table; lookup
// keys, references and secondary index entries are rows of their own
// tables with real constraints: a key is a primary key (unique across the
// store), a parent and a reference are foreign keys to a record of the
// same account, children, keys and index entries go with their record
// (ON DELETE CASCADE), and a referenced record cannot be deleted
// (ON DELETE RESTRICT). Errors are mapped by SQLSTATE, never by message
// text: a unique violation (23505) is a [store.DuplicateError] naming the
// ID or key of the statement that failed, a foreign key violation (23503)
// a [store.MissingRefError] naming the parent or reference; a delete
// first finds the referrers from outside the deleted set and reports a
// [store.InUseError] with them, sorted. Any other database error is an
// internal [apierr.Error] whose message says nothing of the SQL (the
// cause stays reachable with errors.As, for logs).
//
// # Writes and the change feed
//
// Every write is one transaction at READ COMMITTED. Its first statement
// locks the one row of the feed_head table (SELECT ... FOR UPDATE), so
// the writes of one store, through any handle in any process, run one
// at a time: a write reads the state its predecessors committed, and
// Update holds the lock across its callback, so no update is lost. The
// write's statements come next, then its changes, whose revisions are
// drawn from the feed_revision SEQUENCE, the records' versions, and the
// new revision in feed_head, and a NOTIFY; then COMMIT. Because the lock
// is held from before the first nextval until the commit, revisions
// commit in the order they were drawn: when a reader sees revision n
// committed, every revision below n that will ever commit already has.
// A reader therefore never skips a change that commits later, without
// any horizon bookkeeping. The price is that writes of one store do not
// run in parallel (reads do); memstore makes the same trade. For the same
// reason [Store.Update]'s callback must not write through the store: that
// write would wait for the lock its own Update holds.
//
// The revisions are drawn after the statements that can fail on a
// constraint, so a refused write consumes none. A write that dies after
// drawing them (its context ends, its connection drops) leaves a hole in
// the numbering: revisions are strictly increasing but not always
// consecutive, and [Store.Changes] skips a hole, which holds no change.
//
// Serialization failures (40001) and deadlocks (40P01) are retried, at
// most 8 attempts in all; with writers serialised they should not occur,
// but a foreign key violation that the write's own checks did not
// predict (only possible if the schema is written to by something other
// than this package) is treated the same way. So [Store.Update]'s
// callback may run more than once, as the contract allows.
//
// A delete removes the record and its descendants (found with a
// recursive query on parent_id) in one statement, and writes one change
// per removed record: the descendants first, in ID order, the named
// record last, which alone carries the note the caller gave. A note is
// two columns of table changes: note_event, and note_at (timestamptz,
// which keeps microseconds; NULL when the note has no time).
//
// # Waiting
//
// Each write sends NOTIFY on a channel named after the schema, with the
// new revision as payload, in its transaction: PostgreSQL delivers it at
// commit. Each Store keeps one dedicated connection (outside the pool)
// that LISTENs on it and wakes every waiting [Store.Wait]; Wait takes
// the wake-up channel before it reads the revision, so a commit between
// the two is not lost. When the listening connection breaks it is
// reopened, and its waiters re-read the revision.
//
// # Retention
//
// The feed keeps the newest [Options].FeedRetention changes (default
// [DefaultFeedRetention]); a reader behind them, or behind
// [Store.Compact], gets a [store.CompactedError], and so does one ahead
// of the store's revision. Older rows are deleted every 32 writes of a
// handle, in the write's transaction, and by Compact. The retention is a
// property of the handle: handles sharing a store should agree on it.
//
// # Queries
//
// Every [store.Query] is served by an index (see [Store.List]).
// [Store.ListVersions] ([store.VersionLister]) runs List's statement
// selecting only the IDs and versions: the index gives the page's rows
// and each row's heap tuple its version, so no document is detoasted,
// decoded or sent. The version is not in the indexes on purpose: a
// column that every write changes would end PostgreSQL's heap-only
// updates of records (every update would then write an entry in each of
// the table's indexes), and an index-only scan would still visit the
// heap for the pages recent writes left not all-visible.
// [Store.GetMany] reads the records of up to [store.MaxGetMany] IDs in
// one statement: the IDs are looked up in the primary key first, then
// filtered by kind and account (a MATERIALIZED step, so that the planner
// cannot choose to walk the account's whole index instead when the
// table's statistics are missing). A page of 100 whose records are all
// cached costs about a quarter of List's time (BenchmarkList).
//
// # Limits
//
// IDs, keys, index names and values are PostgreSQL text: they may not
// contain NUL bytes. A List with Index and Below, or with RefersTo,
// filters on an index and sorts its matches by ID, as memstore does.
package pgstore
