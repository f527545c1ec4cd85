// Package sqlitestore is a [store.Store] on one SQLite database file,
// through the pure-Go driver modernc.org/sqlite (no cgo). Several Stores,
// in one process or several, may share a file; each sees the others'
// commits and follows their changes.
//
// # Connections and pragmas
//
// [Open] opens two database/sql handles on the file:
//
//   - the writer, one connection: "PATH?_pragma=busy_timeout(MS)
//     &_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)
//     &_pragma=foreign_keys(1)&_pragma=temp_store(2)&_txlock=immediate".
//     Writes are committed in batches (see # Durability), each batch one
//     transaction begun with BEGIN IMMEDIATE, so it takes the file's write
//     lock up front: writes in this process queue for the batch, writes
//     of other processes wait up to the busy timeout for the lock.
//     temp_store(2) keeps temporary files in memory: the sub-journal of
//     each write's savepoint was a file, and its writes took a fifth of
//     the writer's time.
//   - the readers, a pool of [Options].Readers connections:
//     "PATH?_pragma=busy_timeout(MS)&_pragma=query_only(1)". In WAL mode
//     readers never wait for the writer and see only committed data. One
//     more connection of the pool is kept for [Store.Revision], which
//     runs its one prepared statement on it through the driver (no pool,
//     no database/sql rows): the API server reads the revision before it
//     answers from its caches, so it is the most frequent query.
//
// The busy timeout is [Options].BusyTimeout (default 5s).
//
// # Durability
//
// synchronous is FULL: SQLite syncs the write-ahead log at every commit,
// so a write is on disk when the call that made it returns. With WAL,
// NORMAL would survive a crash of the process but could lose the last
// commits to an OS crash or power loss; a control plane's acknowledged
// write (a credential issued, a policy changed) must not come back, so
// the store pays an fsync per commit for FULL. Concurrent writes share a
// commit (group commit, at most 128 writes), and each is answered once
// its batch committed. A batch first runs its writes one after another
// without savepoints; a write that fails after one of its statements
// took effect makes the batch roll back and run again with a savepoint
// per write, so that one is undone alone (a write that fails before any
// statement took effect needs no undo, and fails alone either way). A batch reads the store's revision once, gives
// each write the next ones (a write undone gives its back) and writes
// the new revision once, before its commit. Checkpoints are SQLite's
// automatic ones.
//
// # Schema and migrations
//
// The schema is a list of SQL files embedded in the binary
// (migrations/NNNN_name.sql), applied in order at [Open], each in its own
// transaction that also sets PRAGMA user_version to its number. A
// database whose user_version is above the code's [SchemaVersion] was
// written by newer code: Open refuses it with [ErrNewerSchema].
//
// # Integrity
//
// The database guarantees the store's rules by constraints:
//
//   - records: PRIMARY KEY (id), UNIQUE (account_id, id), and a parent as
//     FOREIGN KEY (account_id, parent_id) ON DELETE CASCADE: a parent is a
//     record of the same account, and deleting it deletes its subtree;
//   - keys: PRIMARY KEY (key), owned by a record (ON DELETE CASCADE);
//   - refs: PRIMARY KEY (to_id, from_id), the referrer ON DELETE CASCADE,
//     the target FOREIGN KEY (account_id, to_id) ON DELETE RESTRICT: a
//     reference names a record of the same account, and a referenced
//     record cannot be deleted;
//   - idx (secondary index entries): owned by a record (ON DELETE CASCADE).
//
// Constraint failures are mapped to the store's errors by SQLite's
// extended result codes, never by message text: a PRIMARY KEY or UNIQUE
// violation is a [*store.DuplicateError] naming the ID or key that was
// being written, a FOREIGN KEY violation a [*store.MissingRefError]
// naming the parent or reference, a refused delete a [*store.InUseError]
// whose referrers are then read, sorted, in the same transaction. Other
// database errors become an [apierr.Internal] error with a fixed message
// ("the database failed", "the database is busy"); the driver's error
// stays its cause, for logs, and no SQL text reaches a caller.
//
// # Writes, versions and the change feed
//
// A write reads what it needs, advances the store-wide revision (the one
// row of table meta) by the number of records it changes, writes the
// records and the change feed rows, all in its transaction. A record's
// Version is the revision of its last write. A delete writes one change
// per removed record: its descendants first, in ID order and without a
// note, the named record last with the note the caller gave. A note is
// two columns of the feed: note_event, and note_at in nanoseconds since
// the Unix epoch (NULL when the note has no time).
// [Store.Update] runs its callback once, inside the write transaction: it
// must not write through the same Store.
//
// The feed keeps the newest [Options].FeedRetention changes (default
// [DefaultFeedRetention]): a write that passes a multiple of a step
// (FeedRetention/8, at most 1024) deletes the rows behind the retention,
// one range delete on the primary key. [Store.Compact] deletes rows up to
// a revision. Both raise meta.floor, so a reader behind it, or ahead of
// the revision, gets a [*store.CompactedError], never a gap.
//
// # Waiting for changes
//
// [Store.Wait] wakes at once on a commit through the same Store (a channel
// closed after each commit). For commits by other Stores on the file, in
// this process or another, one goroutine per Store reads the revision
// every [Options].PollInterval (default 100ms) while anyone waits, and
// stops when no one does: such a commit wakes waiters within about one
// interval.
//
// # Queries
//
// Every [store.Query] is answered from an index range, walked backwards
// from the cursor, never a scan of a table (TestQueryPlans checks with
// EXPLAIN QUERY PLAN):
//
//   - by kind and account (records_by_account_version), kind alone
//     (records_by_kind) or parent (records_by_parent_version);
//   - by index value: idx_by_account or idx_by_kind on (kind, [account,]
//     name, value, id);
//   - by index values below a bound: the same indexes up to the bound;
//     the matching records are then sorted by ID, so the cost grows with
//     the number of matches, as memstore's does;
//   - by referrers: the primary key of refs, (to_id, from_id).
//
// [Store.ListVersions] ([store.VersionLister]) answers the same queries
// with the records' IDs and versions alone. The indexes of a list by
// account, (kind, account_id, id, version), and by parent, (parent_id,
// kind, id, version, account_id), hold both, so such a list is read from
// the index alone and never touches the records' rows or their documents
// (schema version 3 added the version to them; a write rewrites its
// record's entries, a few bytes in its transaction). The other shapes
// read each match's row for its version. The page comes back as one row
// of text (group_concat of each record's ID, length-prefixed, and
// version): with modernc.org/sqlite a row costs more to step through
// and scan than its bytes cost to parse. [Store.GetMany] then reads the
// records a list's caller does not hold: one statement whatever the
// number of IDs (a JSON array, walked with json_each), one lookup of
// records_by_account_version and the primary key per ID. A page of 100
// costs about a seventh of List's time when every record is cached
// (BenchmarkList).
//
// # Limits
//
// A record's keys, references and index entries are also kept as JSON in
// its row, so a read is one row. A Store's file name may not begin with
// "file:" nor contain '?'. IDs are compared bytewise (SQLite's BINARY
// collation), as the store package defines.
package sqlitestore
