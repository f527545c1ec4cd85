package pgstore_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/edgeplane/edgeplane/pgstore"
	"github.com/edgeplane/edgeplane/store"
)

// TestVersionPlans: on a fresh table (no statistics gathered, where the
// planner once chose to walk an account's whole index), GetMany looks its
// IDs up in the primary key, and a page of versions is an index scan,
// never a scan of the table.
func TestVersionPlans(t *testing.T) {
	u := freshSchema(t)
	s := open(t, u, pgstore.Options{})
	seeded(t, s, 300)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	explain := func(sql string, args ...any) string {
		t.Helper()
		rows, err := conn.Query(ctx, "EXPLAIN "+sql, args...)
		if err != nil {
			t.Fatalf("explain %s: %v", sql, err)
		}
		var lines []string
		for rows.Next() {
			var l string
			if err := rows.Scan(&l); err != nil {
				t.Fatal(err)
			}
			lines = append(lines, l)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return strings.Join(lines, "\n")
	}
	plan := explain(pgstore.GetManySQL(), []string{benchID(3), benchID(200)}, "bench", "acct")
	if !strings.Contains(plan, "Index Cond: (id = ANY") || strings.Contains(plan, "records_kind_account") || strings.Contains(plan, "Seq Scan") {
		t.Errorf("GetMany's plan does not look its IDs up:\n%s", plan)
	}
	for _, q := range []store.Query{
		{Kind: "bench", AccountID: "acct", Limit: 100},
		{Kind: "bench", AccountID: "acct", BeforeID: benchID(150), Limit: 100},
		{Kind: "bench", AccountID: "acct", Index: "label", Value: "env=prod", Limit: 100},
	} {
		sql, args := pgstore.ListVersionsSQL(q)
		if plan := explain(sql, args...); strings.Contains(plan, "Seq Scan") || !strings.Contains(plan, "Index") {
			t.Errorf("ListVersions(%+v) scans:\n%s", q, plan)
		}
	}
}
