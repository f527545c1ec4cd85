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
// process, run one at a time: a batch reads the state its predecessors
// committed, and Update runs its callback with the lock held, so no
// update is lost. Holding the lock, a batch gives its writes the
// revisions after the feed's head, in order, in Go; it ends by moving
// the head (and the feed_revision SEQUENCE, which older versions drew
// revisions from) to its last revision, one NOTIFY, and COMMIT. No
// write is acknowledged before that commit. Because the lock is held
// from the head's read to the commit, revisions commit in order and
// without holes: when a reader sees revision n committed, every
// revision below n already has.
//
// A batch first takes the fast path: with the lock, it reads every
// record its writes update or replace (one query), plans each write in
// Go against that record as the batch's earlier writes left it (an
// update's callback runs here; a write whose record does not exist or
// whose precondition fails is refused alone, having queued nothing), and
// sends every write's statements, the batch's end and the COMMIT in one
// pipelined round trip (the BEGIN goes with the lock and the read): two
// round trips for the batch, whatever its size, and the feed's rows of
// all its writes are one statement. When a
// statement fails there (a unique key, a missing reference), the
// transaction is rolled back and the batch is taken again on the careful
// path, as is a batch with a delete (which queries the transaction for
// the descendants and referrers): each write reads its record through
// the transaction and runs in a savepoint (a batch of one needs none),
// so that one that fails is rolled back to it, its revisions given back,
// and fails alone while the others commit. A batch stays below 64
// writes because PostgreSQL keeps only 64 subtransaction IDs of a
// transaction in shared memory. For the same reason as the lock, an
// Update's callback must not write through the store: that write would
// wait for the batch its own Update is in.
//
// Serialization failures (40001) and deadlocks (40P01) are retried (a
// write alone from its savepoint, a batch that fails as a whole), at
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
// Concurrent ListVersions and GetMany calls share round trips
// ([store.NewGroupRead]): a call that finds a lane free (half the
// pool's connections are lanes) is sent at once, and the calls that
// arrive while every lane is busy are sent together, up to 64, in one
// pipelined batch when a lane frees: one implicit transaction, whose
// snapshot is taken after each of them was called, so each still sees
// every write acknowledged before it began. A statement that fails in a
// batch aborts the rest of it; from it on, each runs again alone and
// gets its own answer. Under load this saves each list a round trip's
// system calls and wake-ups on both sides of the connection.
//
// # Limits
//
// IDs, keys, index names and values are PostgreSQL text: they may not
// contain NUL bytes. A List with Index and Below, or with RefersTo,
// filters on an index and sorts its matches by ID, as memstore does.
package pgstore
