package pgstore

import (
	"context"
	"slices"
	"strings"
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
	// changes are the feed rows of the batch's writes, inserted by run
	// in one statement (see addChanges).
	changes []change
	// final, when set, is queued last by run (after the changes), in
	// the same round trip: the batch's COMMIT, or the RELEASE of a
	// careful write's savepoint.
	final string
	// sent reports that run sent the batch.
	sent bool
}

type step struct {
	mapErr func(error) error // nil, or returns nil for errors it does not map
	scan   []any             // a QueryRow's targets, or nil for Exec
	each   func(pgx.Rows) error
}

func (bt *batch) exec(mapErr func(error) error, sql string, args ...any) {
	bt.b.Queue(sql, args...)
	bt.steps = append(bt.steps, step{mapErr: mapErr})
}

func (bt *batch) row(mapErr func(error) error, scan []any, sql string, args ...any) {
	bt.b.Queue(sql, args...)
	bt.steps = append(bt.steps, step{mapErr: mapErr, scan: scan})
}

// rows queues a query whose every row each scans.
func (bt *batch) rows(each func(pgx.Rows) error, sql string, args ...any) {
	bt.b.Queue(sql, args...)
	bt.steps = append(bt.steps, step{each: each})
}

type batchSender interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// run sends the batch and reads its results in order, stopping at the
// first failure. Sent through the pool, the batch is one implicit
// transaction; through a Tx, part of it.
func (bt *batch) run(ctx context.Context, via batchSender) error {
	bt.flushChanges()
	if bt.final != "" {
		bt.exec(nil, bt.final)
	}
	bt.sent = true
	br := via.SendBatch(ctx, &bt.b)
	var first error
	for _, st := range bt.steps {
		var err error
		switch {
		case st.each != nil:
			err = eachRow(br, st.each)
		case st.scan != nil:
			err = br.QueryRow().Scan(st.scan...)
		default:
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

func eachRow(br pgx.BatchResults, each func(pgx.Rows) error) error {
	rows, err := br.Query()
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := each(rows); err != nil {
			return err
		}
	}
	return rows.Err()
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

// change is a change of the feed.
type change struct {
	op   store.Op
	rec  *store.Record
	note store.Note
	rev  int64
}

// addChanges queues the changes' rows. They are inserted when the batch
// runs, after its other statements, in one statement for all its
// writes: the changes table has no constraint but its key (the
// revisions, given in Go, are distinct) and nothing in the batch reads
// it, so where its rows go in the transaction changes nothing, and a
// statement per row was a quarter of a batch's statements.
func addChanges(bt *batch, changes []change) {
	bt.changes = append(bt.changes, changes...)
}

// flushChanges queues the insert of the changes addChanges gathered.
func (bt *batch) flushChanges() {
	cs := bt.changes
	bt.changes = nil
	switch len(cs) {
	case 0:
		return
	case 1:
		c := cs[0]
		r := c.rec
		var at *time.Time // NULL: no time
		if !c.note.At.IsZero() {
			at = &c.note.At
		}
		bt.exec(nil, `INSERT INTO changes (revision, op, kind, account_id, id, parent_id, data, note_event, note_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
			c.rev, int16(c.op), string(r.Kind), r.AccountID, r.ID, r.ParentID, nonNilBytes(r.Data), c.note.Event, at)
		return
	}
	var (
		revs                    = make([]int64, len(cs))
		ops                     = make([]int16, len(cs))
		kinds, accts, ids, pids = make([]string, len(cs)), make([]string, len(cs)), make([]string, len(cs)), make([]string, len(cs))
		data                    = make([][]byte, len(cs))
		events                  = make([]string, len(cs))
		ats                     = make([]*time.Time, len(cs)) // nil: NULL, no time
	)
	for i, c := range cs {
		r := c.rec
		revs[i], ops[i] = c.rev, int16(c.op)
		kinds[i], accts[i], ids[i], pids[i] = string(r.Kind), r.AccountID, r.ID, r.ParentID
		data[i], events[i] = nonNilBytes(r.Data), c.note.Event
		if !c.note.At.IsZero() {
			ats[i] = &c.note.At
		}
	}
	bt.exec(nil, `INSERT INTO changes (revision, op, kind, account_id, id, parent_id, data, note_event, note_at)
		SELECT * FROM unnest($1::bigint[], $2::smallint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bytea[], $8::text[], $9::timestamptz[])`,
		revs, ops, kinds, accts, ids, pids, data, events, ats)
}

// sideRows queues the rows of r's keys, references and index entries;
// when r replaces old, it first deletes old's, and leaves alone those
// that did not change.
func sideRows(bt *batch, r, old *store.Record) {
	if old == nil || !slices.Equal(r.Keys, old.Keys) {
		if old != nil && len(old.Keys) > 0 {
			bt.exec(nil, `DELETE FROM record_keys WHERE record_id = $1`, r.ID)
		}
		for _, k := range r.Keys {
			bt.exec(on(uniqueViolation, &store.DuplicateError{Key: k}),
				`INSERT INTO record_keys (key, record_id) VALUES ($1, $2)`, k, r.ID)
		}
	}
	if old == nil || !slices.Equal(r.Refs, old.Refs) {
		if old != nil && len(old.Refs) > 0 {
			bt.exec(nil, `DELETE FROM record_refs WHERE record_id = $1`, r.ID)
		}
		for _, ref := range r.Refs {
			if ref == r.ID {
				continue // a record may name itself; it never blocks its own delete
			}
			bt.exec(on(foreignKeyViolation, &store.MissingRefError{ID: ref}),
				`INSERT INTO record_refs (target_id, record_id, account_id) VALUES ($1, $2, $3)`, ref, r.ID, r.AccountID)
		}
	}
	if old == nil || !slices.Equal(r.Indexes, old.Indexes) {
		if old != nil && len(old.Indexes) > 0 {
			bt.exec(nil, `DELETE FROM record_index WHERE record_id = $1`, r.ID)
		}
		if len(r.Indexes) > 0 {
			names, values := indexColumns(r.Indexes)
			bt.exec(nil, `INSERT INTO record_index (kind, account_id, name, value, record_id)
			SELECT $1, $2, n, v, $3 FROM unnest($4::text[], $5::text[]) AS u(n, v)
			ON CONFLICT DO NOTHING`, string(r.Kind), r.AccountID, r.ID, names, values)
		}
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

// Create implements [store.Store].
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
	return s.write(ctx, work{create: r.ID, plan: func(_ context.Context, _ pgx.Tx, _ store.Record, _ bool, rv *revisions, bt *batch) (*store.Record, error) {
		w := r
		w.Version = rv.next()
		bt.exec(func(err error) error {
			switch sqlState(err) {
			case uniqueViolation:
				return &store.DuplicateError{Key: w.ID}
			case foreignKeyViolation:
				return &store.MissingRefError{ID: w.ParentID}
			}
			return nil
		}, `INSERT INTO records (id, kind, account_id, parent_id, data, keys, refs, index_names, index_values, version)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
			w.ID, string(w.Kind), w.AccountID, parent, nonNilBytes(w.Data), nonNil(w.Keys), nonNil(w.Refs), names, values, w.Version)
		sideRows(bt, &w, nil)
		addChanges(bt, []change{{store.OpCreate, &w, w.Note, w.Version}})
		w.Note = store.Note{}
		return &w, nil
	}})
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

func notFound(kind store.Kind, id string) error {
	return apierr.NotFoundf("%s %s not found", kind, id)
}

var errImmutable = apierr.New(apierr.Internal, "update may not change a record's kind, account, id or parent")

// Update implements [store.Store]. The callback runs in the write's
// batch, with the feed locked, on the record as the batch's earlier
// writes left it; it may run again if the batch is retried.
func (s *Store) Update(ctx context.Context, kind store.Kind, accountID, id string, fn func(*store.Record) error) (store.Record, error) {
	var out store.Record
	err := s.write(ctx, work{kind: kind, account: accountID, id: id, plan: func(_ context.Context, _ pgx.Tx, old store.Record, found bool, rv *revisions, bt *batch) (*store.Record, error) {
		if !found {
			return nil, notFound(kind, id)
		}
		w := old.Clone()
		if err := fn(&w); err != nil {
			return nil, err
		}
		after, err := put(bt, rv, old, w)
		if err != nil {
			return nil, err
		}
		out = after.Clone()
		return after, nil
	}})
	if err != nil {
		return store.Record{}, err
	}
	return out, nil
}

// Replace implements [store.Store].
func (s *Store) Replace(ctx context.Context, rec store.Record) (store.Record, error) {
	var out store.Record
	err := s.write(ctx, work{kind: rec.Kind, account: rec.AccountID, id: rec.ID, plan: func(_ context.Context, _ pgx.Tx, old store.Record, found bool, rv *revisions, bt *batch) (*store.Record, error) {
		if !found {
			return nil, notFound(rec.Kind, rec.ID)
		}
		if old.Version != rec.Version {
			return nil, &store.VersionError{ID: rec.ID, Want: rec.Version, Have: old.Version}
		}
		after, err := put(bt, rv, old, rec)
		if err != nil {
			return nil, err
		}
		out = after.Clone()
		return after, nil
	}})
	if err != nil {
		return store.Record{}, err
	}
	return out, nil
}

// put queues the write of rec in place of old at the next revision, and
// returns what it stores. Keys, references and index entries are
// rewritten only when they changed.
func put(bt *batch, rv *revisions, old, rec store.Record) (*store.Record, error) {
	r := prepare(rec)
	if r.Kind != old.Kind || r.AccountID != old.AccountID || r.ID != old.ID || r.ParentID != old.ParentID {
		return nil, errImmutable
	}
	r.Version = rv.next()
	names, values := indexColumns(r.Indexes)
	bt.exec(nil, `UPDATE records SET data = $2, keys = $3, refs = $4, index_names = $5, index_values = $6, version = $7 WHERE id = $1`,
		r.ID, nonNilBytes(r.Data), nonNil(r.Keys), nonNil(r.Refs), names, values, r.Version)
	sideRows(bt, &r, &old)
	addChanges(bt, []change{{store.OpUpdate, &r, r.Note, r.Version}})
	r.Note = store.Note{}
	return &r, nil
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
// is at that version. It queries the batch's transaction for the
// descendants and the referrers.
func (s *Store) delete(ctx context.Context, kind store.Kind, accountID, id string, version int64, note store.Note) error {
	return s.write(ctx, work{kind: kind, account: accountID, id: id, queries: true, plan: func(ctx context.Context, tx pgx.Tx, named store.Record, found bool, rv *revisions, bt *batch) (*store.Record, error) {
		if !found {
			return nil, notFound(kind, id)
		}
		if version >= 0 && named.Version != version {
			return nil, &store.VersionError{ID: id, Want: version, Have: named.Version}
		}
		doomed, err := descendants(ctx, tx, id)
		if err != nil {
			return nil, err
		}
		ids := make([]string, 0, len(doomed)+1)
		for _, d := range doomed {
			ids = append(ids, d.ID)
		}
		ids = append(ids, id)
		if err := checkReferrers(ctx, tx, ids); err != nil {
			return nil, err
		}
		// The references the doomed records hold go first, so that
		// RESTRICT fires only for referrers from outside the set.
		bt.exec(nil, `DELETE FROM record_refs WHERE record_id = ANY($1)`, ids)
		bt.exec(on(foreignKeyViolation, errRetry), `DELETE FROM records WHERE id = ANY($1)`, ids)
		changes := make([]change, 0, len(ids))
		for i := range doomed {
			changes = append(changes, change{store.OpDelete, &doomed[i], store.Note{}, rv.next()}) // cascaded changes carry no note
		}
		changes = append(changes, change{store.OpDelete, &named, note, rv.next()})
		addChanges(bt, changes)
		return nil, nil
	}})
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
