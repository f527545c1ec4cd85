package pgstore

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/edgeplane/edgeplane/store"
)

// ListVersions implements [store.VersionLister]: List's statement
// selecting the IDs and versions alone, so that no document is read,
// detoasted or sent (see the package doc, # Queries).
func (s *Store) ListVersions(ctx context.Context, q store.Query) ([]store.Version, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := q.Check(); err != nil {
		return nil, err
	}
	sql, args := listSQL(q, "r.id, r.version")
	var out []store.Version
	err := s.reads.Do(ctx, read{sql, args, func(rows pgx.Rows) error {
		out = make([]store.Version, 0, min(q.Limit, store.MaxGetMany))
		var v store.Version
		_, err := pgx.ForEachRow(rows, []any{&v.ID, &v.Version}, func() error {
			out = append(out, v)
			return nil
		})
		return err
	}})
	if err != nil {
		return nil, dbErr(ctx, err)
	}
	return out, nil
}

// qGetMany reads the records of one kind and account among the IDs $1.
// The IDs are looked up in the primary key first (MATERIALIZED: the
// planner may not fold the kind and account into that step, which on a
// table whose statistics are not yet gathered it would answer with a walk
// of the account's whole index), then filtered by kind and account.
var qGetMany = `WITH m AS MATERIALIZED (SELECT * FROM records WHERE id = ANY($1))
	SELECT ` + recordColumns + ` FROM m r WHERE r.kind = $2 AND r.account_id = $3`

// GetMany implements [store.VersionLister]: one statement, a lookup of
// the primary key for each ID.
func (s *Store) GetMany(ctx context.Context, kind store.Kind, accountID string, ids []string) ([]store.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := store.CheckGetMany(accountID, ids); err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, nil
	}
	var recs []store.Record
	err := s.reads.Do(ctx, read{qGetMany, []any{ids, string(kind), accountID}, func(rows pgx.Rows) (err error) {
		recs, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Record, error) {
			var sr scannedRecord
			err := row.Scan(sr.targets()...)
			return sr.record(), err
		})
		return err
	}})
	if err != nil {
		return nil, dbErr(ctx, err)
	}
	return store.InOrder(recs, ids), nil
}
