package pgstore

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/store"
	"github.com/jackc/pgx/v5"
)

// batch is a pipeline of statements sent in one round trip. Each
// statement may map its own failure (a constraint it names) to an error
// of ours, and may scan the one row it returns.
type batch struct {
	b     pgx.Batch
	steps []step
	// final, when set, is queued last by run: the RELEASE of the write's
	// savepoint, in the same round trip.
	final string
	// sent reports that run sent the batch.
	sent bool
}

type step struct {
	mapErr func(error) error // nil, or returns nil for errors it does not map
	scan   []any             // a QueryRow's targets, or nil for Exec
}

func (bt *batch) exec(mapErr func(error) error, sql string, args ...any) {
	bt.b.Queue(sql, args...)
	bt.steps = append(bt.steps, step{mapErr: mapErr})
}

func (bt *batch) row(mapErr func(error) error, scan []any, sql string, args ...any) {
	bt.b.Queue(sql, args...)
	bt.steps = append(bt.steps, step{mapErr: mapErr, scan: scan})
}

type batchSender interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// run sends the batch and reads its results in order, stopping at the
// first failure. Sent through the pool, the batch is one implicit
// transaction; through a Tx, part of it.
func (bt *batch) run(ctx context.Context, via batchSender) error {
	if bt.final != "" {
		bt.exec(nil, bt.final)
	}
	bt.sent = true
	br := via.SendBatch(ctx, &bt.b)
	var first error
	for _, st := range bt.steps {
		var err error
		if st.scan != nil {
			err = br.QueryRow().Scan(st.scan...)
		} else {
			_, err = br.Exec()
		}
		if err != nil {
			if st.mapErr != nil {
				if mapped := st.mapErr(err); mapped != nil {
					err = mapped
				}
			}
			first = err
			break
		}
	}
	if cerr := br.Close(); first == nil {
		first = cerr
	}
	return dbErr(ctx, first)
}

// on returns a mapper that turns SQLSTATE code into err.
func on(code string, err error) func(error) error {
	return func(e error) error {
		if sqlState(e) == code {
			return err
		}
		return nil
	}
}

// change is a change of the feed before it has its revision.
type change struct {
	op   store.Op
	rec  *store.Record
	note store.Note
}

// lockFeed queues the statement that makes the batch's transaction the
// store's only writer until it commits (see the package doc).
func lockFeed(bt *batch) {
	var rev int64
	bt.row(nil, []any{&rev}, `SELECT rev FROM feed_head FOR UPDATE`)
}

// tail queues the end of a write: its changes with revisions drawn from
// the sequence and the version of the record written (stamp, unless "").
// *rev receives the write's last revision. The feed's head moves once
// per batch (see commitBatch).
func (s *Store) tail(bt *batch, changes []change, stamp string, rev *int64) {
	for _, c := range changes {
		r := c.rec
		var at *time.Time // NULL: no time
		if !c.note.At.IsZero() {
			at = &c.note.At
		}
		bt.exec(nil, `INSERT INTO changes (revision, op, kind, account_id, id, parent_id, data, note_event, note_at)
			VALUES (nextval('feed_revision'), $1, $2, $3, $4, $5, $6, $7, $8)`,
			int16(c.op), string(r.Kind), r.AccountID, r.ID, r.ParentID, nonNilBytes(r.Data), c.note.Event, at)
	}
	if stamp != "" {
		bt.row(nil, []any{rev}, `UPDATE records SET version = currval('feed_revision') WHERE id = $1 RETURNING version`, stamp)
	} else {
		bt.row(nil, []any{rev}, `SELECT currval('feed_revision')`)
	}
}

// maxBatch bounds the writes one transaction commits together. Each
// write of a batch runs in a savepoint, a subtransaction; PostgreSQL
// keeps up to 64 of a transaction's subtransaction IDs in shared memory
// and beyond that makes every other session's snapshots look them up on
// disk (subtransaction overflow), so a batch stays below it.
const maxBatch = 60

// work is one write of a batch. It runs in the batch's transaction,
// which holds the feed lock: it may read through tx, and it queues its
// statements in bt (which may hold its savepoint already), ending with
// its tail, and runs bt once, last. It may run again (the batch or the
// write retried), so it must start from scratch each time. It returns
// the write's last revision.
type work func(ctx context.Context, tx pgx.Tx, bt *batch) (int64, error)

// write commits w, with the writes that wait beside it: one transaction
// and one commit for all (group commit, [store.GroupCommit]). Within a
// batch each write runs in a savepoint, so one that fails (a unique key,
// a failed precondition) is undone alone and the others commit. A write
// is acknowledged only once its batch committed; an error means it was
// not written.
func (s *Store) write(ctx context.Context, w work) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.batches.Do(ctx, w)
}

// batchContext returns the context of a batch's transaction: it ends
// when every write's context has ended (no one waits for the answer any
// more), not when the first does, since the others still want theirs.
func batchContext(writes []*store.Pending[work]) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var left atomic.Int32
	left.Store(int32(len(writes)))
	stops := make([]func() bool, len(writes))
	for i, p := range writes {
		stops[i] = context.AfterFunc(p.Ctx, func() {
			if left.Add(-1) == 0 {
				cancel()
			}
		})
	}
	return ctx, func() {
		for _, stop := range stops {
			stop()
		}
		cancel()
	}
}

// commitBatch commits batch's writes in one transaction and sets each
// one's result. A batch that fails as a whole on a serialization failure
// or a deadlock is run again, at most maxAttempts times in all.
func (s *Store) commitBatch(writes []*store.Pending[work]) {
	ctx, cancel := batchContext(writes)
	defer cancel()
	var err error
	for range maxAttempts {
		for _, p := range writes {
			p.Err = nil
		}
		if err = s.tryBatch(ctx, writes); !retryable(err) {
			break
		}
	}
	switch {
	case err == nil:
		return
	case retryable(err):
		err = apierr.Wrap(apierr.Internal, err, "pgstore: the write kept conflicting with others; try again")
	default:
		err = dbErr(ctx, err)
	}
	for _, p := range writes {
		if p.Err == nil {
			p.Err = err
		}
	}
}

// Savepoint statements of a batch's writes.
const (
	qSavepoint = "SAVEPOINT w"
	qRelease   = "RELEASE SAVEPOINT w"
	qUndo      = "ROLLBACK TO SAVEPOINT w; RELEASE SAVEPOINT w"
)

// tryBatch runs the batch's writes in one transaction and commits it. It
// returns an error when the transaction failed as a whole (then no write
// was written, whatever their Err); a write that failed alone has its
// Err set.
func (s *Store) tryBatch(ctx context.Context, writes []*store.Pending[work]) error {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // after Commit it is a no-op
	var head batch
	lockFeed(&head)
	if err := head.run(ctx, tx); err != nil {
		return err
	}
	single := len(writes) == 1
	var last int64 // the revision of the batch's last write
	for _, p := range writes {
		if err := p.Ctx.Err(); err != nil {
			p.Err = err
			continue
		}
		rev, own, err := s.runWrite(ctx, tx, p.Work, single)
		if err != nil {
			return err
		}
		if own != nil {
			if single {
				p.Err = own
				return nil // nothing written: the deferred rollback ends it
			}
			p.Err = own
			continue
		}
		last = max(last, rev)
	}
	if last == 0 {
		return nil
	}
	var end batch
	var rev int64
	end.row(nil, []any{&rev}, `UPDATE feed_head SET rev = $1 RETURNING rev`, last)
	end.exec(nil, `SELECT pg_notify($1, $2)`, s.channel, strconv.FormatInt(last, 10))
	if n := int64(len(writes)); (s.writes.Add(n)-n)/pruneEvery != s.writes.Load()/pruneEvery {
		end.exec(nil, `DELETE FROM changes WHERE revision <= $1::bigint - $2`, last, s.keep)
		end.exec(nil, `UPDATE feed_head SET floor = greatest(floor, rev - $1)`, s.keep)
	}
	if err := end.run(ctx, tx); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// runWrite runs one write of a batch, in a savepoint unless it is the
// batch's only one, and retries it alone (from its savepoint) on a
// serialization failure or a deadlock. It returns the write's last
// revision; or its own error, the write undone alone; or an error that
// fails the transaction.
func (s *Store) runWrite(ctx context.Context, tx pgx.Tx, w work, single bool) (rev int64, own, fatal error) {
	for attempt := 1; ; attempt++ {
		var bt batch
		if !single {
			bt.exec(nil, qSavepoint)
			bt.final = qRelease
		}
		rev, err := w(ctx, tx, &bt)
		switch {
		case err == nil:
			return rev, nil, nil
		case single && retryable(err):
			return 0, nil, err // the batch is run again
		case single:
			return 0, err, nil
		}
		if bt.sent {
			// The simple protocol: the transaction is aborted until the
			// rollback, so nothing can be prepared first.
			if _, uerr := tx.Exec(ctx, qUndo, pgx.QueryExecModeSimpleProtocol); uerr != nil {
				return 0, nil, uerr
			}
		}
		if !retryable(err) {
			return 0, err, nil
		}
		if attempt == maxAttempts {
			return 0, apierr.Wrap(apierr.Internal, err, "pgstore: the write kept conflicting with others; try again"), nil
		}
	}
}

// sideRows queues the rows of r's keys, references and index entries.
func sideRows(bt *batch, r *store.Record) {
	for _, k := range r.Keys {
		bt.exec(on(uniqueViolation, &store.DuplicateError{Key: k}),
			`INSERT INTO record_keys (key, record_id) VALUES ($1, $2)`, k, r.ID)
	}
	for _, ref := range r.Refs {
		if ref == r.ID {
			continue // a record may name itself; it never blocks its own delete
		}
		bt.exec(on(foreignKeyViolation, &store.MissingRefError{ID: ref}),
			`INSERT INTO record_refs (target_id, record_id, account_id) VALUES ($1, $2, $3)`, ref, r.ID, r.AccountID)
	}
	if len(r.Indexes) > 0 {
		names, values := indexColumns(r.Indexes)
		bt.exec(nil, `INSERT INTO record_index (kind, account_id, name, value, record_id)
			SELECT $1, $2, n, v, $3 FROM unnest($4::text[], $5::text[]) AS u(n, v)
			ON CONFLICT DO NOTHING`, string(r.Kind), r.AccountID, r.ID, names, values)
	}
}

func indexColumns(es []store.IndexEntry) (names, values []string) {
	names, values = make([]string, len(es)), make([]string, len(es))
	for i, e := range es {
		names[i], values[i] = e.Name, e.Value
	}
	return names, values
}

// prepare returns the copy of rec the store keeps: references deduplicated,
// empty slices nil (as reads return them).
func prepare(rec store.Record) store.Record {
	r := rec.Clone()
	r.Refs = store.UniqueRefs(r.Refs)
	return normalize(r)
}

// normalize makes r's empty slices nil, so that a record reads back
// exactly as a write returned it.
func normalize(r store.Record) store.Record {
	if len(r.Data) == 0 {
		r.Data = nil
	}
	if len(r.Keys) == 0 {
		r.Keys = nil
	}
	if len(r.Refs) == 0 {
		r.Refs = nil
	}
	if len(r.Indexes) == 0 {
		r.Indexes = nil
	}
	return r
}

func nonNil(ss []string) []string {
	if ss == nil {
		return []string{}
	}
	return ss
}

func nonNilBytes(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// Create implements [store.Store]. In its batch it is one pipelined
// round trip.
func (s *Store) Create(ctx context.Context, rec store.Record) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r := prepare(rec)
	names, values := indexColumns(r.Indexes)
	var parent *string
	if r.ParentID != "" {
		parent = &r.ParentID
	}
	return s.write(ctx, func(ctx context.Context, tx pgx.Tx, bt *batch) (int64, error) {
		bt.exec(func(err error) error {
			switch sqlState(err) {
			case uniqueViolation:
				return &store.DuplicateError{Key: r.ID}
			case foreignKeyViolation:
				return &store.MissingRefError{ID: r.ParentID}
			}
			return nil
		}, `INSERT INTO records (id, kind, account_id, parent_id, data, keys, refs, index_names, index_values, version)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 0)`,
			r.ID, string(r.Kind), r.AccountID, parent, nonNilBytes(r.Data), nonNil(r.Keys), nonNil(r.Refs), names, values)
		sideRows(bt, &r)
		var rev int64
		s.tail(bt, []change{{store.OpCreate, &r, r.Note}}, r.ID, &rev)
		return rev, bt.run(ctx, tx)
	})
}

// inTx runs fn in a READ COMMITTED transaction and commits it if fn
// returns nil (for Compact, which writes no change).
func (s *Store) inTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return dbErr(ctx, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // after Commit it is a no-op
	if err := fn(tx); err != nil {
		return err
	}
	return dbErr(ctx, tx.Commit(ctx))
}

// get reads the record in a write's transaction, which holds the feed
// lock.
func get(ctx context.Context, tx pgx.Tx, kind store.Kind, accountID, id string) (store.Record, error) {
	var sr scannedRecord
	err := tx.QueryRow(ctx, `SELECT `+recordColumns+` FROM records r WHERE r.id = $1 AND r.kind = $2 AND r.account_id = $3`,
		id, string(kind), accountID).Scan(sr.targets()...)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Record{}, notFound(kind, id)
	}
	if err != nil {
		return store.Record{}, dbErr(ctx, err)
	}
	return sr.record(), nil
}

func notFound(kind store.Kind, id string) error {
	return apierr.NotFoundf("%s %s not found", kind, id)
}

var errImmutable = apierr.New(apierr.Internal, "update may not change a record's kind, account, id or parent")

// Update implements [store.Store]. The callback runs in the write's
// transaction, with the feed locked; it may run again if the write is
// retried.
func (s *Store) Update(ctx context.Context, kind store.Kind, accountID, id string, fn func(*store.Record) error) (store.Record, error) {
	var out store.Record
	err := s.write(ctx, func(ctx context.Context, tx pgx.Tx, bt *batch) (int64, error) {
		old, err := get(ctx, tx, kind, accountID, id)
		if err != nil {
			return 0, err
		}
		work := old.Clone()
		if err := fn(&work); err != nil {
			return 0, err
		}
		out, err = s.put(ctx, tx, bt, old, work)
		return out.Version, err
	})
	if err != nil {
		return store.Record{}, err
	}
	return out, nil
}

// Replace implements [store.Store].
func (s *Store) Replace(ctx context.Context, rec store.Record) (store.Record, error) {
	var out store.Record
	err := s.write(ctx, func(ctx context.Context, tx pgx.Tx, bt *batch) (int64, error) {
		old, err := get(ctx, tx, rec.Kind, rec.AccountID, rec.ID)
		if err != nil {
			return 0, err
		}
		if old.Version != rec.Version {
			return 0, &store.VersionError{ID: rec.ID, Want: rec.Version, Have: old.Version}
		}
		out, err = s.put(ctx, tx, bt, old, rec)
		return out.Version, err
	})
	if err != nil {
		return store.Record{}, err
	}
	return out, nil
}

// put writes rec in place of old through bt, and returns what it stored.
func (s *Store) put(ctx context.Context, tx pgx.Tx, bt *batch, old, rec store.Record) (store.Record, error) {
	r := prepare(rec)
	if r.Kind != old.Kind || r.AccountID != old.AccountID || r.ID != old.ID || r.ParentID != old.ParentID {
		return store.Record{}, errImmutable
	}
	names, values := indexColumns(r.Indexes)
	bt.exec(nil, `UPDATE records SET data = $2, keys = $3, refs = $4, index_names = $5, index_values = $6 WHERE id = $1`,
		r.ID, nonNilBytes(r.Data), nonNil(r.Keys), nonNil(r.Refs), names, values)
	bt.exec(nil, `DELETE FROM record_keys WHERE record_id = $1`, r.ID)
	bt.exec(nil, `DELETE FROM record_refs WHERE record_id = $1`, r.ID)
	bt.exec(nil, `DELETE FROM record_index WHERE record_id = $1`, r.ID)
	sideRows(bt, &r)
	s.tail(bt, []change{{store.OpUpdate, &r, r.Note}}, r.ID, &r.Version)
	if err := bt.run(ctx, tx); err != nil {
		return store.Record{}, err
	}
	r.Note = store.Note{}
	return r.Clone(), nil
}

// Delete implements [store.Store].
func (s *Store) Delete(ctx context.Context, kind store.Kind, accountID, id string, note store.Note) error {
	return s.delete(ctx, kind, accountID, id, -1, note)
}

// DeleteIf implements [store.Store].
func (s *Store) DeleteIf(ctx context.Context, kind store.Kind, accountID, id string, version int64, note store.Note) error {
	return s.delete(ctx, kind, accountID, id, version, note)
}

// delete deletes the record and its descendants, the named record's
// change labelled note; when version is not negative, only if the record
// is at that version.
func (s *Store) delete(ctx context.Context, kind store.Kind, accountID, id string, version int64, note store.Note) error {
	return s.write(ctx, func(ctx context.Context, tx pgx.Tx, bt *batch) (int64, error) {
		named, err := get(ctx, tx, kind, accountID, id)
		if err != nil {
			return 0, err
		}
		if version >= 0 && named.Version != version {
			return 0, &store.VersionError{ID: id, Want: version, Have: named.Version}
		}
		doomed, err := descendants(ctx, tx, id)
		if err != nil {
			return 0, err
		}
		ids := make([]string, 0, len(doomed)+1)
		for _, d := range doomed {
			ids = append(ids, d.ID)
		}
		ids = append(ids, id)
		if err := checkReferrers(ctx, tx, ids); err != nil {
			return 0, err
		}
		// The references the doomed records hold go first, so that
		// RESTRICT fires only for referrers from outside the set.
		bt.exec(nil, `DELETE FROM record_refs WHERE record_id = ANY($1)`, ids)
		bt.exec(on(foreignKeyViolation, errRetry), `DELETE FROM records WHERE id = ANY($1)`, ids)
		changes := make([]change, 0, len(ids))
		for i := range doomed {
			changes = append(changes, change{store.OpDelete, &doomed[i], store.Note{}}) // cascaded changes carry no note
		}
		changes = append(changes, change{store.OpDelete, &named, note})
		var rev int64
		s.tail(bt, changes, "", &rev)
		return rev, bt.run(ctx, tx)
	})
}

// descendants returns the records whose parent chain leads to id, in ID
// order.
func descendants(ctx context.Context, tx pgx.Tx, id string) ([]store.Record, error) {
	rows, err := tx.Query(ctx, `WITH RECURSIVE d(id) AS (
			SELECT r.id FROM records r WHERE r.parent_id = $1
			UNION
			SELECT r.id FROM records r JOIN d ON r.parent_id = d.id
		)
		SELECT r.id, r.kind, r.account_id, coalesce(r.parent_id, ''), r.data FROM records r JOIN d USING (id)
		WHERE r.id <> $1 ORDER BY r.id`, id)
	if err != nil {
		return nil, dbErr(ctx, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Record, error) {
		var r store.Record
		var kind string
		err := row.Scan(&r.ID, &kind, &r.AccountID, &r.ParentID, &r.Data)
		r.Kind = store.Kind(kind)
		return r, err
	})
	return out, dbErr(ctx, err)
}

// checkReferrers fails with an InUseError when a record outside ids
// references one inside: the smallest such ID, with all its outside
// referrers, sorted.
func checkReferrers(ctx context.Context, tx pgx.Tx, ids []string) error {
	rows, err := tx.Query(ctx, `SELECT target_id, record_id FROM record_refs
		WHERE target_id = ANY($1) AND record_id <> ALL($1)
		ORDER BY target_id, record_id`, ids)
	if err != nil {
		return dbErr(ctx, err)
	}
	type pair struct{ target, by string }
	pairs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (pair, error) {
		var p pair
		err := row.Scan(&p.target, &p.by)
		return p, err
	})
	if err != nil {
		return dbErr(ctx, err)
	}
	if len(pairs) == 0 {
		return nil
	}
	e := &store.InUseError{ID: pairs[0].target}
	for _, p := range pairs {
		if p.target == e.ID {
			e.Referrers = append(e.Referrers, p.by)
		}
	}
	return e
}

// recordColumns are the columns a scannedRecord reads, of records r.
var recordColumns = strings.Join([]string{
	"r.id", "r.kind", "r.account_id", "coalesce(r.parent_id, '')", "r.data",
	"r.keys", "r.refs", "r.index_names", "r.index_values", "r.version",
}, ", ")

type scannedRecord struct {
	kind          string
	rec           store.Record
	names, values []string
}

func (sr *scannedRecord) targets() []any {
	r := &sr.rec
	return []any{&r.ID, &sr.kind, &r.AccountID, &r.ParentID, &r.Data, &r.Keys, &r.Refs, &sr.names, &sr.values, &r.Version}
}

func (sr *scannedRecord) record() store.Record {
	r := sr.rec
	r.Kind = store.Kind(sr.kind)
	if len(sr.names) > 0 {
		r.Indexes = make([]store.IndexEntry, len(sr.names))
		for i := range sr.names {
			r.Indexes[i] = store.IndexEntry{Name: sr.names[i], Value: sr.values[i]}
		}
	}
	return normalize(r)
}
