package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/edgeplane/edgeplane/store"
)

// versionsSQL returns the statement and arguments of q's IDs and
// versions: listSQL's selecting them alone, gathered into one row of
// text, "<bytes of the ID>:<ID><version>" for each record, separated by
// ';' (see parseVersions). One row instead of one per record because a
// row costs far more to step through and scan with database/sql than its
// bytes cost to parse (a third of ListVersions' time for a page of 100,
// BenchmarkList). group_concat keeps the subquery's order in practice,
// but SQLite does not promise it, and an ORDER BY inside the aggregate
// costs a temporary B-tree (a quarter of the time): ListVersions sorts
// the page itself when it comes back out of order.
func versionsSQL(q store.Query) (string, []any) {
	inner, args := selectSQL(q, "r.id AS id, r.version AS version")
	return "SELECT group_concat(octet_length(id) || ':' || id || version, ';') FROM (" + inner + ")", args
}

// errMalformedVersions reports a row of versionsSQL that parseVersions
// cannot read (a bug: SQLite wrote it).
var errMalformedVersions = errors.New("sqlitestore: malformed list of versions")

// parseVersions parses what versionsSQL's row holds; the IDs are
// substrings of list.
func parseVersions(list string, out []store.Version) ([]store.Version, error) {
	for list != "" {
		n, rest, ok := strings.Cut(list, ":")
		size, err := strconv.Atoi(n)
		if !ok || err != nil || size < 0 || size > len(rest) {
			return nil, errMalformedVersions
		}
		id, rest := rest[:size], rest[size:]
		num, rest, more := strings.Cut(rest, ";")
		v, err := strconv.ParseInt(num, 10, 64)
		if err != nil || more && rest == "" {
			return nil, errMalformedVersions
		}
		out = append(out, store.Version{ID: id, Version: v})
		list = rest
	}
	return out, nil
}

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
	var list sql.NullString
	if err := s.rs.queryRow(ctx, query, args...).Scan(&list); err != nil {
		return nil, dbError(ctx, err)
	}
	out, err := parseVersions(list.String, make([]store.Version, 0, min(q.Limit, store.MaxGetMany)))
	if err != nil {
		return nil, err
	}
	newestFirst := func(a, b store.Version) int { return strings.Compare(b.ID, a.ID) }
	if !slices.IsSortedFunc(out, newestFirst) {
		slices.SortFunc(out, newestFirst)
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
