package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"strings"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/store"
)

// recordColumns are the columns scanRecord reads, of records aliased r.
const recordColumns = "r.id, r.kind, r.account_id, coalesce(r.parent_id, ''), r.data, r.keys, r.refs, r.idx, r.version"

// qGetRecord reads one record by ID, kind and account.
const qGetRecord = "SELECT " + recordColumns + " FROM records r WHERE r.id = ? AND r.kind = ? AND r.account_id = ?"

// querier is what getRecord needs of the readers or a write transaction.
type querier interface {
	queryRow(ctx context.Context, query string, args ...any) *sql.Row
}

type scanner interface{ Scan(dest ...any) error }

func scanRecord(row scanner) (store.Record, error) {
	var r store.Record
	var kind, keys, refs, idx string
	if err := row.Scan(&r.ID, &kind, &r.AccountID, &r.ParentID, &r.Data, &keys, &refs, &idx, &r.Version); err != nil {
		return store.Record{}, err
	}
	r.Kind = store.Kind(kind)
	for _, f := range []struct {
		text string
		into any
	}{{keys, &r.Keys}, {refs, &r.Refs}, {idx, &r.Indexes}} {
		if f.text == "null" { // an empty list, the common case
			continue
		}
		if err := json.Unmarshal([]byte(f.text), f.into); err != nil {
			return store.Record{}, err
		}
	}
	return r, nil
}

// scanRecords reads and closes rows.
func scanRecords(rows *sql.Rows) ([]store.Record, error) {
	defer rows.Close()
	var out []store.Record
	for rows.Next() {
		r, err := scanRecord(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

func notFound(kind store.Kind, id string) error {
	return apierr.NotFoundf("%s %s not found", kind, id)
}

// getRecord reads the record of that kind, account and ID.
func getRecord(ctx context.Context, q querier, kind store.Kind, accountID, id string) (store.Record, error) {
	r, err := scanRecord(q.queryRow(ctx, qGetRecord, id, string(kind), accountID))
	if err == sql.ErrNoRows {
		return store.Record{}, notFound(kind, id)
	}
	return r, dbError(ctx, err)
}

// Get implements [store.Store].
func (s *Store) Get(ctx context.Context, kind store.Kind, accountID, id string) (store.Record, error) {
	if err := ctx.Err(); err != nil {
		return store.Record{}, err
	}
	return getRecord(ctx, s.rs, kind, accountID, id)
}

// Lookup implements [store.Store].
func (s *Store) Lookup(ctx context.Context, kind store.Kind, key string) (store.Record, error) {
	if err := ctx.Err(); err != nil {
		return store.Record{}, err
	}
	r, err := scanRecord(s.rs.queryRow(ctx, "SELECT "+recordColumns+" FROM keys k JOIN records r ON r.id = k.id WHERE k.key = ? AND r.kind = ?", key, string(kind)))
	if err == sql.ErrNoRows {
		return store.Record{}, apierr.NotFoundf("no %s with that key", kind)
	}
	return r, dbError(ctx, err)
}

// List implements [store.Store].
func (s *Store) List(ctx context.Context, q store.Query) ([]store.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := q.Check(); err != nil {
		return nil, err
	}
	query, args := listSQL(q)
	rows, err := s.rs.query(ctx, query, args...)
	if err != nil {
		return nil, dbError(ctx, err)
	}
	out, err := scanRecords(rows)
	if err != nil {
		return nil, dbError(ctx, err)
	}
	return out, nil
}

// listSQL returns the statement and arguments of q, each a range scan of
// an index (see the package doc, # Queries):
//   - by kind, account, parent: records_by_account_version, records_by_kind or
//     records_by_parent_version, walked backwards from the cursor;
//   - by index value: idx_by_account or idx_by_kind, walked backwards
//     from (value, cursor);
//   - by index values below a bound: the same indexes up to the bound,
//     the matching records then sorted by ID;
//   - by referrers: the primary key of refs, walked backwards from
//     (target, cursor).
func listSQL(q store.Query) (string, []any) { return selectSQL(q, recordColumns) }

// selectSQL is listSQL selecting cols of records r.
func selectSQL(q store.Query, cols string) (string, []any) {
	var where []string
	var args []any
	cond := func(c string, a any) {
		where = append(where, c)
		args = append(args, a)
	}
	var from, order string
	switch {
	case q.RefersTo != "":
		from, order = "refs f JOIN records r ON r.id = f.from_id", "f.from_id"
		cond("f.to_id = ?", q.RefersTo)
		if q.BeforeID != "" {
			cond("f.from_id < ?", q.BeforeID)
		}
	case q.Index != "" && !q.Below:
		from, order = "idx x JOIN records r ON r.id = x.id", "x.id"
		cond("x.kind = ?", string(q.Kind))
		if q.AccountID != "" {
			cond("x.account_id = ?", q.AccountID)
		}
		cond("x.name = ?", q.Index)
		cond("x.value = ?", q.Value)
		if q.BeforeID != "" {
			cond("x.id < ?", q.BeforeID)
		}
	case q.Index != "":
		from, order = "records r", "r.id"
		sub := "r.id IN (SELECT x.id FROM idx x WHERE x.kind = ?"
		args = append(args, string(q.Kind))
		if q.AccountID != "" {
			sub += " AND x.account_id = ?"
			args = append(args, q.AccountID)
		}
		sub += " AND x.name = ? AND x.value < ?)"
		args = append(args, q.Index, q.Value)
		where = append(where, sub)
		if q.BeforeID != "" {
			cond("r.id < ?", q.BeforeID)
		}
	default:
		from, order = "records r", "r.id"
		if q.ParentID != "" {
			cond("r.parent_id = ?", q.ParentID)
		}
		if q.BeforeID != "" {
			cond("r.id < ?", q.BeforeID)
		}
	}
	cond("r.kind = ?", string(q.Kind))
	switch {
	case q.AccountID != "" && q.ParentID != "" && q.Index == "" && q.RefersTo == "":
		// A parent's children: the account is checked on the entries of
		// records_by_parent_version (which holds it), never used to pick
		// records_by_account_version, which would walk every record of
		// the account's kind.
		cond("+r.account_id = ?", q.AccountID)
	case q.AccountID != "":
		cond("r.account_id = ?", q.AccountID)
	}
	if q.ParentID != "" && (q.Index != "" || q.RefersTo != "") {
		cond("r.parent_id = ?", q.ParentID)
	}
	args = append(args, q.Limit)
	return "SELECT " + cols + " FROM " + from + " WHERE " + strings.Join(where, " AND ") +
		" ORDER BY " + order + " DESC LIMIT ?", args
}
