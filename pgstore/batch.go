package pgstore

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/store"
	"github.com/jackc/pgx/v5"
)

// maxBatch bounds the writes one transaction commits together. A batch
// that takes the careful path runs each write in a savepoint, a
// subtransaction; PostgreSQL keeps up to 64 of a transaction's
// subtransaction IDs in shared memory and beyond that makes every other
// session's snapshots look them up on disk (subtransaction overflow), so
// a batch stays below it.
const maxBatch = 60

// work is one write of a batch.
type work struct {
	// kind, account and id name the record the write reads first (an
	// update's, a delete's); id is "" for a create, whose ID is create.
	kind        store.Kind
	account, id string
	create      string
	// queries says that plan reads through tx (a delete: its
	// descendants and referrers), which only the careful path gives it.
	queries bool
	// plan checks the write against old, the record as the batch's
	// earlier writes left it (found false when there is none), and
	// queues the write's statements in bt at revisions drawn from rv. It
	// returns the record it leaves, nil when it removes it. It fails
	// before it queues or draws anything, so that a failure needs no
	// undo; it may run again (the batch retried, or taken again on the
	// careful path), so it must start from scratch each time.
	plan func(ctx context.Context, tx pgx.Tx, old store.Record, found bool, rv *revisions, bt *batch) (*store.Record, error)
}

// revisions hands out a batch's revisions in Go: the batch holds the
// feed lock, so the feed's head is the last committed revision and the
// next ones are the batch's to give.
type revisions struct{ last int64 }

func (rv *revisions) next() int64 {
	rv.last++
	return rv.last
}

// write commits w, with the writes that wait beside it, in one
// transaction and one commit (group commit, [store.GroupCommit]; see the
// package doc, # Writes and the change feed). A write is acknowledged
// only once its batch committed; an error means it was not written.
func (s *Store) write(ctx context.Context, w work) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.batches.Do(ctx, w)
}

// batchContext returns the context of a batch's transaction (or of a
// read batch's round trip): it ends when every caller's context has
// ended (no one waits for the answer any more), not when the first
// does, since the others still want theirs.
func batchContext[W any](writes []*store.Pending[W]) (context.Context, func()) {
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

// errCareful says that the fast path met a write that failed in the
// database (a unique key, a missing reference): the transaction is
// aborted, and the batch is taken again on the careful path.
var errCareful = errors.New("pgstore: batch needs savepoints")

// commitBatch commits the writes of a batch in one transaction and sets
// each one's result. It first takes the fast path (one round trip for
// every write's statements); when a write fails in the database there,
// or one must query, it takes the careful path (a savepoint and a round
// trip per write). A batch that fails as a whole on a serialization
// failure or a deadlock is run again, at most maxAttempts times in all.
func (s *Store) commitBatch(writes []*store.Pending[work]) {
	ctx, cancel := batchContext(writes)
	defer cancel()
	careful := false
	for _, p := range writes {
		careful = careful || p.Work.queries
	}
	var err error
	for range maxAttempts {
		for _, p := range writes {
			p.Err = nil
		}
		if careful {
			err = s.carefulBatch(ctx, writes)
		} else if err = s.fastBatch(ctx, writes); errors.Is(err, errCareful) {
			careful = true
			continue
		}
		if !retryable(err) {
			break
		}
	}
	switch {
	case err == nil:
		return
	case retryable(err), errors.Is(err, errCareful):
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

// begin opens a batch's transaction and locks the feed, which makes the
// batch the store's only writer until it commits (see the package doc),
// with more statements pipelined after the lock (pre, when set). It
// returns the feed's head.
func (s *Store) begin(ctx context.Context, pre func(bt *batch)) (pgx.Tx, int64, error) {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return nil, 0, err
	}
	var bt batch
	head := lockFeed(&bt)
	if pre != nil {
		pre(&bt)
	}
	if err := bt.run(ctx, tx); err != nil {
		tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // the error that matters is err
		return nil, 0, err
	}
	return tx, *head, nil
}

// lockFeed queues the lock of the feed and returns where the feed's head
// is read to when the batch runs.
func lockFeed(bt *batch) *int64 {
	head := new(int64)
	bt.row(nil, []any{head}, `SELECT rev FROM feed_head FOR UPDATE`)
	return head
}

// end queues the end of a batch whose writes took revisions up to last:
// the feed's new head, the sequence set to it (so that a writer that
// draws revisions from it, as older versions of this package do, keeps
// counting from there), the NOTIFY and, every pruneEvery writes of this
// handle, the pruning of changes past the retention.
func (s *Store) end(bt *batch, last int64, n int) {
	bt.exec(nil, `UPDATE feed_head SET rev = $1`, last)
	bt.exec(nil, `SELECT setval('feed_revision', $1)`, last)
	bt.exec(nil, `SELECT pg_notify($1, $2)`, s.channel, strconv.FormatInt(last, 10))
	if k := int64(n); (s.writes.Add(k)-k)/pruneEvery != s.writes.Load()/pruneEvery {
		bt.exec(nil, `DELETE FROM changes WHERE revision <= $1::bigint - $2`, last, s.keep)
		bt.exec(nil, `UPDATE feed_head SET floor = greatest(floor, rev - $1)`, s.keep)
	}
}

// fastBatch runs the batch in two round trips whatever its size: the
// transaction's start, the feed lock and the records the writes read;
// then every write's statements, planned in Go against those records
// and what the batch's earlier writes left of them, with the batch's
// end and the commit. The transaction is begun and committed by
// statements in those pipelines (BEGIN, COMMIT) on a connection of the
// pool's, not through a pgx.Tx, which would give each a round trip of
// its own; a statement that fails makes the server skip the rest up to
// the pipeline's end, the COMMIT included, and the transaction is rolled
// back before the connection goes back to the pool (pgxpool closes one
// that is still in a transaction). When a statement fails, it returns
// errCareful. A write that fails in Go (a failed precondition, a record
// that does not exist) fails alone, having queued nothing.
func (s *Store) fastBatch(ctx context.Context, writes []*store.Pending[work]) error {
	ids := make([]string, 0, len(writes))
	for _, p := range writes {
		if p.Work.id != "" {
			ids = append(ids, p.Work.id)
		}
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	open := true
	defer func() {
		if open {
			conn.Exec(context.WithoutCancel(ctx), "ROLLBACK") //nolint:errcheck // a connection left in the transaction is closed on release
		}
	}()
	read := map[string]store.Record{}
	var start batch
	start.exec(nil, "BEGIN ISOLATION LEVEL READ COMMITTED")
	headAt := lockFeed(&start)
	if len(ids) > 0 {
		start.rows(func(rows pgx.Rows) error {
			var sr scannedRecord
			if err := rows.Scan(sr.targets()...); err != nil {
				return err
			}
			read[sr.rec.ID] = sr.record()
			return nil
		}, `SELECT `+recordColumns+` FROM records r WHERE r.id = ANY($1)`, ids)
	}
	if err := start.run(ctx, conn); err != nil {
		return err
	}
	head := *headAt
	left := map[string]*store.Record{} // what the batch's writes left of a record: nil when removed
	rv := revisions{last: head}
	var bt batch
	for _, p := range writes {
		if err := p.Ctx.Err(); err != nil {
			p.Err = err
			continue
		}
		w := p.Work
		var (
			old   store.Record
			found bool
		)
		if w.id != "" {
			if r, ok := left[w.id]; ok {
				found = r != nil
				if found {
					old = *r
				}
			} else {
				old, found = read[w.id]
			}
			found = found && old.Kind == w.kind && old.AccountID == w.account
		}
		after, err := w.plan(ctx, nil, old, found, &rv, &bt)
		if err != nil {
			p.Err = err
			continue
		}
		if id := w.id + w.create; after != nil || w.id != "" {
			left[id] = after
		}
	}
	if rv.last == head {
		return nil // nothing to write: the deferred rollback ends it
	}
	s.end(&bt, rv.last, len(writes))
	bt.final = "COMMIT"
	if err := bt.run(ctx, conn); err != nil {
		if ctx.Err() != nil || !isStatementError(err) {
			return err
		}
		return errCareful
	}
	open = false
	s.fast.Add(1)
	return nil
}

// isStatementError reports whether err is a statement's failure that a
// write may cause alone (a constraint it breaks, a typed error a step
// mapped it to), rather than the connection's or the server's.
func isStatementError(err error) bool {
	var (
		dup  *store.DuplicateError
		miss *store.MissingRefError
	)
	if errors.As(err, &dup) || errors.As(err, &miss) || errors.Is(err, errRetry) {
		return true
	}
	state := sqlState(err)
	return len(state) == 5 && (state[:2] == "23" || state[:2] == "22") // integrity constraint violation, data exception
}

// Savepoint statements of the careful path.
const (
	qSavepoint = "SAVEPOINT w"
	qRelease   = "RELEASE SAVEPOINT w"
	qUndo      = "ROLLBACK TO SAVEPOINT w; RELEASE SAVEPOINT w"
)

// carefulBatch runs the batch's writes one after another in one
// transaction, each in a savepoint unless it is the batch's only one,
// and commits. It returns an error when the transaction failed as a
// whole (then no write was written, whatever their Err); a write that
// failed alone has its Err set.
func (s *Store) carefulBatch(ctx context.Context, writes []*store.Pending[work]) error {
	tx, head, err := s.begin(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // after Commit it is a no-op
	single := len(writes) == 1
	rv := revisions{last: head}
	for _, p := range writes {
		if err := p.Ctx.Err(); err != nil {
			p.Err = err
			continue
		}
		own, err := s.carefulWrite(ctx, tx, p.Work, &rv, single)
		if err != nil {
			return err
		}
		if own != nil {
			p.Err = own
			if single {
				return nil // nothing written: the deferred rollback ends it
			}
		}
	}
	if rv.last == head {
		return nil
	}
	var bt batch
	s.end(&bt, rv.last, len(writes))
	if err := bt.run(ctx, tx); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	s.careful.Add(1)
	return nil
}

// carefulWrite runs one write of a careful batch: it reads the record
// the write reads through the transaction, plans the write and runs its
// statements in a savepoint (unless single), and retries it alone from
// its savepoint on a serialization failure or a deadlock. It returns the
// write's own error (the write undone alone, its revisions given back),
// or an error that fails the transaction.
func (s *Store) carefulWrite(ctx context.Context, tx pgx.Tx, w work, rv *revisions, single bool) (own, fatal error) {
	for attempt := 1; ; attempt++ {
		var (
			old   store.Record
			found bool
		)
		if w.id != "" {
			var err error
			old, err = get(ctx, tx, w.kind, w.account, w.id)
			switch {
			case err == nil:
				found = true
			case !errors.Is(err, apierr.ErrNotFound):
				return nil, err
			}
		}
		var bt batch
		if !single {
			bt.exec(nil, qSavepoint)
			bt.final = qRelease
		}
		before := rv.last
		_, err := w.plan(ctx, tx, old, found, rv, &bt)
		if err == nil {
			err = bt.run(ctx, tx)
		}
		if err == nil {
			return nil, nil
		}
		rv.last = before
		switch {
		case single && retryable(err):
			return nil, err // the batch is run again
		case single:
			return err, nil
		}
		if bt.sent {
			// The simple protocol: the transaction is aborted until the
			// rollback, so nothing can be prepared first.
			if _, uerr := tx.Exec(ctx, qUndo, pgx.QueryExecModeSimpleProtocol); uerr != nil {
				return nil, uerr
			}
		}
		if !retryable(err) {
			return err, nil
		}
		if attempt == maxAttempts {
			return apierr.Wrap(apierr.Internal, err, "pgstore: the write kept conflicting with others; try again"), nil
		}
	}
}

// rowQuerier is what get reads through: the pool, or a batch's
// transaction (which holds the feed lock).
type rowQuerier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// get reads the record of that kind, account and ID through q.
func get(ctx context.Context, q rowQuerier, kind store.Kind, accountID, id string) (store.Record, error) {
	var sr scannedRecord
	err := q.QueryRow(ctx, `SELECT `+recordColumns+` FROM records r WHERE r.id = $1 AND r.kind = $2 AND r.account_id = $3`,
		id, string(kind), accountID).Scan(sr.targets()...)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Record{}, notFound(kind, id)
	}
	if err != nil {
		return store.Record{}, dbErr(ctx, err)
	}
	return sr.record(), nil
}
