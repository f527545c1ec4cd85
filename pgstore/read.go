package pgstore

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/store"
	"github.com/jackc/pgx/v5"
)

// Get implements [store.Store].
func (s *Store) Get(ctx context.Context, kind store.Kind, accountID, id string) (store.Record, error) {
	if err := ctx.Err(); err != nil {
		return store.Record{}, err
	}
	return get(ctx, s.pool, kind, accountID, id)
}

// Lookup implements [store.Store].
func (s *Store) Lookup(ctx context.Context, kind store.Kind, key string) (store.Record, error) {
	if err := ctx.Err(); err != nil {
		return store.Record{}, err
	}
	var sr scannedRecord
	err := s.pool.QueryRow(ctx, `SELECT `+recordColumns+` FROM record_keys k JOIN records r ON r.id = k.record_id
		WHERE k.key = $1 AND r.kind = $2`, key, string(kind)).Scan(sr.targets()...)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Record{}, apierr.NotFoundf("no %s with that key", kind)
	}
	if err != nil {
		return store.Record{}, dbErr(ctx, err)
	}
	return sr.record(), nil
}

// List implements [store.Store]. Each query is served by an index: the
// records by (kind, account, id) or (kind, account, parent, id), an index
// equality by (kind, account, name, value, record id), both walked
// backwards from the cursor; Below by a range of that index, RefersTo by
// the references' (target, record) key.
func (s *Store) List(ctx context.Context, q store.Query) ([]store.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := q.Check(); err != nil {
		return nil, err
	}
	sql, args := listSQL(q, recordColumns)
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, dbErr(ctx, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Record, error) {
		var sr scannedRecord
		err := row.Scan(sr.targets()...)
		return sr.record(), err
	})
	if err != nil {
		return nil, dbErr(ctx, err)
	}
	return out, nil
}

// listSQL returns the statement and arguments of q selecting cols of
// records r (see List).
func listSQL(q store.Query, cols string) (string, []any) {
	var (
		args  []any
		where []string
	)
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	cond := func(format string, v any) { where = append(where, strings.Replace(format, "?", arg(v), 1)) }

	from, order := "records r", "r.id"
	switch {
	case q.Index != "" && !q.Below:
		// Filter and order on the index's columns, so its ordered scan
		// serves the page.
		from, order = "record_index i JOIN records r ON r.id = i.record_id", "i.record_id"
		cond("i.kind = ?", string(q.Kind))
		if q.AccountID != "" {
			cond("i.account_id = ?", q.AccountID)
		}
		cond("i.name = ?", q.Index)
		cond("i.value = ?", q.Value)
		if q.BeforeID != "" {
			cond("i.record_id < ?", q.BeforeID)
		}
	case q.Index != "":
		sub := "SELECT i.record_id FROM record_index i WHERE i.kind = " + arg(string(q.Kind))
		if q.AccountID != "" {
			sub += " AND i.account_id = " + arg(q.AccountID)
		}
		sub += " AND i.name = " + arg(q.Index) + " AND i.value < " + arg(q.Value)
		where = append(where, "r.id IN ("+sub+")")
	case q.RefersTo != "":
		from, order = "record_refs f JOIN records r ON r.id = f.record_id", "f.record_id"
		cond("f.target_id = ?", q.RefersTo)
		if q.BeforeID != "" {
			cond("f.record_id < ?", q.BeforeID)
		}
	}
	cond("r.kind = ?", string(q.Kind))
	if q.AccountID != "" {
		cond("r.account_id = ?", q.AccountID)
	}
	if q.ParentID != "" {
		cond("r.parent_id = ?", q.ParentID)
	}
	if q.BeforeID != "" {
		cond("r.id < ?", q.BeforeID)
	}
	sql := "SELECT " + cols + " FROM " + from + " WHERE " + strings.Join(where, " AND ") +
		" ORDER BY " + order + " DESC LIMIT " + arg(q.Limit)
	return sql, args
}

// Revision implements [store.Feed].
func (s *Store) Revision(ctx context.Context) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	var rev int64
	if err := s.pool.QueryRow(ctx, `SELECT rev FROM feed_head`).Scan(&rev); err != nil {
		return 0, dbErr(ctx, err)
	}
	return rev, nil
}

// Changes implements [store.Feed]. It reads the feed's head and the page
// in one statement, so the range check and the page agree. A revision
// above the store's is also a [store.CompactedError]: the store never
// held it.
func (s *Store) Changes(ctx context.Context, after int64, limit int, payload store.Payload) ([]store.Change, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, apierr.Invalidf("limit", "must be positive")
	}
	data := "c.data"
	if payload == store.WithoutData {
		data = "NULL::bytea"
	}
	rows, err := s.pool.Query(ctx, `SELECT h.rev, h.floor, c.revision, c.op, c.kind, c.account_id, c.id, c.parent_id, `+data+`, c.note_event, c.note_at
		FROM feed_head h LEFT JOIN LATERAL (
			SELECT * FROM changes WHERE revision > $1 ORDER BY revision LIMIT $2
		) c ON true
		ORDER BY c.revision`, after, limit)
	if err != nil {
		return nil, dbErr(ctx, err)
	}
	var (
		rev, floor int64
		out        []store.Change
	)
	for rows.Next() {
		var (
			revision                        *int64
			op                              *int16
			kind, account, id, parent, note *string
			data                            []byte
			at                              *time.Time
		)
		if err := rows.Scan(&rev, &floor, &revision, &op, &kind, &account, &id, &parent, &data, &note, &at); err != nil {
			rows.Close()
			return nil, dbErr(ctx, err)
		}
		if revision == nil {
			continue // no change after the revision: only the head
		}
		c := store.Change{Revision: *revision, Op: store.Op(*op), Kind: store.Kind(*kind), AccountID: *account,
			ID: *id, ParentID: *parent, Data: data, Note: store.Note{Event: *note}}
		if at != nil {
			c.Note.At = at.UTC()
		}
		if len(c.Data) == 0 {
			c.Data = nil
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, dbErr(ctx, err)
	}
	kept := max(floor+1, rev-s.keep+1)
	if after+1 < kept || after > rev {
		return nil, &store.CompactedError{After: after, Oldest: kept}
	}
	// A change committed after the head was read cannot be in the page:
	// the statement reads one snapshot.
	if out == nil {
		out = []store.Change{}
	}
	return out, nil
}

// Compact implements [store.Feed].
func (s *Store) Compact(ctx context.Context, through int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return retry(ctx, func() error {
		return s.inTx(ctx, func(tx pgx.Tx) error {
			var rev, floor int64
			if err := tx.QueryRow(ctx, `SELECT rev, floor FROM feed_head FOR UPDATE`).Scan(&rev, &floor); err != nil {
				return dbErr(ctx, err)
			}
			upTo := min(through, rev)
			if upTo <= floor {
				return nil
			}
			var bt batch
			bt.exec(nil, `DELETE FROM changes WHERE revision <= $1`, upTo)
			bt.exec(nil, `UPDATE feed_head SET floor = $1`, upTo)
			return bt.run(ctx, tx)
		})
	})
}

// Wait implements [store.Feed]. It takes the listener's wake-up channel
// before reading the revision, so that a commit between the two wakes it.
func (s *Store) Wait(ctx context.Context, after int64) error {
	for {
		wake, notified := s.listener.subscribe()
		if notified > after {
			return nil
		}
		rev, err := s.Revision(ctx)
		if err != nil {
			return err
		}
		if rev > after {
			return nil
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
