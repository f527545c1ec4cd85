package sqlitestore

import (
	"context"
	"encoding/json"

	"github.com/edgeplane/edgeplane/store"
)

// versionsSQL returns the statement and arguments of q's IDs and
// versions: listSQL's, without the documents.
func versionsSQL(q store.Query) (string, []any) { return selectSQL(q, "r.id, r.version") }

// qGetMany reads the records of one kind and account whose IDs are in
// a JSON array: one primary-key lookup per ID, one statement whatever
// their number.
const qGetMany = "SELECT " + recordColumns + " FROM records r WHERE r.id IN (SELECT value FROM json_each(?)) AND r.kind = ? AND r.account_id = ?"

// ListVersions implements [store.VersionLister]: the statement of List
// selecting the IDs and versions alone, which the indexes of a list by
// kind and account, or by parent, hold (see the package doc, # Queries),
// so that the records' rows are not read.
func (s *Store) ListVersions(ctx context.Context, q store.Query) ([]store.Version, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := q.Check(); err != nil {
		return nil, err
	}
	query, args := versionsSQL(q)
	rows, err := s.rs.query(ctx, query, args...)
	if err != nil {
		return nil, dbError(ctx, err)
	}
	defer rows.Close()
	out := make([]store.Version, 0, min(q.Limit, store.MaxGetMany))
	for rows.Next() {
		var v store.Version
		if err := rows.Scan(&v.ID, &v.Version); err != nil {
			return nil, dbError(ctx, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, dbError(ctx, err)
	}
	return out, nil
}

// GetMany implements [store.VersionLister].
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
	list, err := json.Marshal(ids)
	if err != nil {
		return nil, err
	}
	rows, err := s.rs.query(ctx, qGetMany, string(list), string(kind), accountID)
	if err != nil {
		return nil, dbError(ctx, err)
	}
	recs, err := scanRecords(rows)
	if err != nil {
		return nil, dbError(ctx, err)
	}
	return store.InOrder(recs, ids), nil
}
