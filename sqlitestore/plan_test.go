package sqlitestore

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/store"
)

// TestQueryPlans: every List and ListVersions shape is answered from an
// index range (SEARCH), never a scan of a table or a whole index (SCAN);
// the versions of a list by account or parent from the index alone.
func TestQueryPlans(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "p.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	base := store.Query{Kind: "k", Limit: 100}
	with := func(edit func(*store.Query)) store.Query {
		q := base
		edit(&q)
		return q
	}
	tests := map[string]store.Query{
		"kind":                      base,
		"kind, cursor":              with(func(q *store.Query) { q.BeforeID = "st_5" }),
		"account":                   with(func(q *store.Query) { q.AccountID = "acct" }),
		"account, cursor":           with(func(q *store.Query) { q.AccountID, q.BeforeID = "acct", "st_5" }),
		"parent":                    with(func(q *store.Query) { q.AccountID, q.ParentID = "acct", "st_p" }),
		"parent, every account":     with(func(q *store.Query) { q.ParentID, q.BeforeID = "st_p", "st_5" }),
		"index value":               with(func(q *store.Query) { q.AccountID, q.Index, q.Value, q.BeforeID = "acct", "label", "x", "st_5" }),
		"index value, all accounts": with(func(q *store.Query) { q.Index, q.Value = "label", "x" }),
		"index below": with(func(q *store.Query) {
			q.AccountID, q.Index, q.Value, q.Below, q.BeforeID = "acct", "due", "2026", true, "st_5"
		}),
		"index below, all accounts": with(func(q *store.Query) { q.Index, q.Value, q.Below = "due", "2026", true }),
		"refers to":                 with(func(q *store.Query) { q.AccountID, q.RefersTo, q.BeforeID = "acct", "st_t", "st_5" }),
		"refers to, all accounts":   with(func(q *store.Query) { q.RefersTo = "st_t" }),
	}
	for name, q := range tests {
		t.Run(name, func(t *testing.T) {
			query, args := listSQL(q)
			plan := explain(t, s, query, args...)
			t.Logf("%q", plan)
			for _, step := range plan {
				if strings.HasPrefix(step, "SCAN") {
					t.Errorf("plan scans: %q\nquery: %s\nplan: %q", step, query, plan)
				}
			}
		})
	}
	// The IDs and versions of a list by account or by parent come from
	// the index alone; every shape is still a range of an index.
	covered := map[string]bool{"account": true, "account, cursor": true, "parent": true, "parent, every account": true}
	for name, q := range tests {
		t.Run("versions of "+name, func(t *testing.T) {
			query, args := versionsSQL(q)
			plan := explain(t, s, query, args...)
			for _, step := range plan {
				// The page's rows are gathered into one (versionsSQL): a
				// scan of the subquery's at most Limit rows.
				if strings.HasPrefix(step, "SCAN") && !strings.HasPrefix(step, "SCAN (subquery") {
					t.Errorf("plan scans: %q\nquery: %s\nplan: %q", step, query, plan)
				}
				if covered[name] && strings.HasPrefix(step, "SEARCH r ") && !strings.Contains(step, "COVERING INDEX") {
					t.Errorf("plan reads the records' rows: %q\nquery: %s\nplan: %q", step, query, plan)
				}
			}
			if covered[name] && !slices.ContainsFunc(plan, func(step string) bool { return strings.HasPrefix(step, "SEARCH r USING COVERING INDEX") }) {
				t.Errorf("no covering index in %q", plan)
			}
		})
	}
	// A parent's children in one account are found by the parent, not by
	// a walk of every record of the account.
	query, args := listSQL(tests["parent"])
	if plan := explain(t, s, query, args...); len(plan) != 1 || !strings.Contains(plan[0], "records_by_parent_version") {
		t.Errorf("children of a parent: %q", plan)
	}
	// GetMany looks each ID up (json_each is the list of IDs it reads).
	for _, step := range explain(t, s, qGetMany, `["st_1"]`, "k", "acct") {
		if strings.HasPrefix(step, "SCAN") && !strings.Contains(step, "json_each") {
			t.Errorf("GetMany scans: %q", step)
		}
	}
	for name, query := range map[string]string{
		"get":    "SELECT " + recordColumns + " FROM records r WHERE r.id = ? AND r.kind = ? AND r.account_id = ?",
		"lookup": "SELECT " + recordColumns + " FROM keys k JOIN records r ON r.id = k.id WHERE k.key = ? AND r.kind = ?",
	} {
		for _, step := range explain(t, s, query, "a", "b", "c") {
			if strings.HasPrefix(step, "SCAN") {
				t.Errorf("%s scans: %q", name, step)
			}
		}
	}
}

func explain(t *testing.T, s *Store, query string, args ...any) []string {
	t.Helper()
	n := strings.Count(query, "?")
	rows, err := s.r.Query("EXPLAIN QUERY PLAN "+query, args[:min(n, len(args))]...)
	if err != nil {
		t.Fatalf("explain %s: %v", query, err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if len(plan) == 0 {
		t.Fatalf("no plan for %s", query)
	}
	return plan
}

// TestPragmas: the writer runs in WAL mode with synchronous=FULL, foreign
// keys and the busy timeout; the readers are query-only.
func TestPragmas(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "p.db"), Options{BusyTimeout: 1234 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, tc := range []struct {
		db     *sql.DB
		pragma string
		want   string
	}{
		{s.w, "journal_mode", "wal"},
		{s.w, "synchronous", "2"}, // FULL
		{s.w, "foreign_keys", "1"},
		{s.w, "busy_timeout", "1234"},
		{s.r, "query_only", "1"},
		{s.r, "busy_timeout", "1234"},
	} {
		var got string
		if err := tc.db.QueryRowContext(ctx, "PRAGMA "+tc.pragma).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("PRAGMA %s = %s, want %s", tc.pragma, got, tc.want)
		}
	}
}
