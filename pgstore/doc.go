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
// Writes are committed in groups ([store.GroupCommit]): the writes that
// arrive while a batch commits wait for the next, which the first of
// them commits for all, up to 60 writes in one transaction at READ
// COMMITTED and one commit (one WAL flush). The transaction's first
// statement locks the one row of the feed_head table (SELECT ... FOR
// UPDATE), so the batches of one store, through any handle in any
// process, run one at a time: a write reads the state its predecessors
// committed, and Update holds the lock across its callback, so no update
// is lost. Each write of a batch runs in a savepoint (a batch of one
// needs none): its statements, its changes, whose revisions are drawn
// from the feed_revision SEQUENCE, and the record's version go in one
// pipelined round trip with the savepoint and its release; a write that
// fails there (a unique key, a missing reference, a failed precondition)
// is rolled back to its savepoint and fails alone, and the others
// commit. The batch ends with the feed's new head in feed_head and one
// NOTIFY, then COMMIT; no write is acknowledged before it. A batch stays
// below 64 writes because PostgreSQL keeps only 64 subtransaction IDs of
// a transaction in shared memory. Because the lock is held from before
// the first nextval until the commit, revisions commit in the order they
// were drawn: when a reader sees revision n committed, every revision
// below n that will ever commit already has. A reader therefore never
// skips a change that commits later, without any horizon bookkeeping.
// The price is that batches of one store do not run in parallel (reads
// do). For the same reason [Store.Update]'s callback must not write
// through the store: that write would wait for the batch its own Update
// is in.
//
// The revisions are drawn after the statements that can fail on a
// constraint, so a refused write consumes none. A write that dies after
// drawing them (its context ends, its connection drops, its batch fails)
// leaves a hole in the numbering: revisions are strictly increasing but
// not always consecutive, and [Store.Changes] skips a hole, which holds
// no change.
//
// Serialization failures (40001) and deadlocks (40P01) are retried (a
// write alone from its savepoint, a batch that fails at its commit as a
// whole), at most 8 attempts in all; with writers serialised they should not occur,
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
// Each batch sends NOTIFY on a channel named after the schema, with the
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
// handle, in the transaction of the batch that passes the mark, and by
// Compact. The retention is a property of the handle: handles sharing a
// store should agree on it.
//
// # Limits
//
// IDs, keys, index names and values are PostgreSQL text: they may not
// contain NUL bytes. A List with Index and Below, or with RefersTo,
// filters on an index and sorts its matches by ID, as memstore does.
package pgstore
