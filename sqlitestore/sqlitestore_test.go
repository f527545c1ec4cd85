package sqlitestore_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/edgeplane/edgeplane/apierr"

	"github.com/edgeplane/edgeplane/sqlitestore"
	"github.com/edgeplane/edgeplane/store"
	"github.com/edgeplane/edgeplane/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return open(t, filepath.Join(t.TempDir(), "store.db"), sqlitestore.Options{})
	})
}

// open opens a Store on path and closes it when the test ends.
func open(t testing.TB, path string, o sqlitestore.Options) *sqlitestore.Store {
	t.Helper()
	s, err := sqlitestore.Open(context.Background(), path, o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

var ctx = context.Background()

func rec(kind store.Kind, acct, id string) store.Record {
	return store.Record{Kind: kind, AccountID: acct, ID: id, Data: []byte(`{"id":"` + id + `"}`)}
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
}

// TestMigrations: a new file gets the current schema version; reopening
// keeps the data; a database with a newer schema is refused, untouched.
func TestMigrations(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.db")
	s, err := sqlitestore.Open(ctx, path, sqlitestore.Options{})
	mustDo(t, err)
	mustDo(t, s.Create(ctx, rec("k", "acct_a", "st_1")))
	mustDo(t, s.Close())
	if v := userVersion(t, path); v != sqlitestore.SchemaVersion() || v < 1 {
		t.Fatalf("user_version = %d, want %d", v, sqlitestore.SchemaVersion())
	}

	s = open(t, path, sqlitestore.Options{}) // the schema is current: nothing to apply
	if _, err := s.Get(ctx, "k", "acct_a", "st_1"); err != nil {
		t.Fatalf("reopened store lost its record: %v", err)
	}
	mustDo(t, s.Close())

	newer := sqlitestore.SchemaVersion() + 1
	setUserVersion(t, path, newer)
	_, err = sqlitestore.Open(ctx, path, sqlitestore.Options{})
	if !errors.Is(err, sqlitestore.ErrNewerSchema) {
		t.Fatalf("Open of a newer schema: %v, want ErrNewerSchema", err)
	}
	if want := fmt.Sprintf("version %d, this code knows up to %d", newer, sqlitestore.SchemaVersion()); !strings.Contains(err.Error(), want) {
		t.Errorf("the error %q does not say %q", err, want)
	}
	if v := userVersion(t, path); v != newer {
		t.Errorf("a refused Open changed user_version to %d", v)
	}
}

// TestMigrationSplitsNotes: migration 2 turns the notes a version 1 file
// holds ("<event>@<RFC 3339 time>", as the Service wrote them) into typed
// ones, and any other note into none, as the reader counted it.
func TestMigrationSplitsNotes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v1.db")
	init, err := os.ReadFile("migrations/0001_init.sql")
	mustDo(t, err)
	db := rawDB(t, path)
	_, err = db.Exec(string(init))
	mustDo(t, err)
	notes := []string{
		"credential_created.v0@2026-01-02T03:04:05.123456789Z",
		"ip_policy_deleted.v0@2026-01-02T03:04:05Z",
		"api_key_updated.v0@2026-01-02T03:04:05.5Z",
		"",
		"made",
		"bad@2026-13-45",
		"worse@2026-13-45T99:99:99Z",
	}
	for i, n := range notes {
		_, err := db.Exec("INSERT INTO feed (revision, op, kind, account_id, id, parent_id, data, note) VALUES (?, 1, 'k', 'acct_a', ?, '', x'7b7d', ?)",
			i+1, fmt.Sprintf("st_%d", i+1), n)
		mustDo(t, err)
	}
	_, err = db.Exec("UPDATE meta SET revision = ?", len(notes))
	mustDo(t, err)
	setUserVersion(t, path, 1)
	mustDo(t, db.Close())

	s := open(t, path, sqlitestore.Options{})
	if v := userVersion(t, path); v != sqlitestore.SchemaVersion() {
		t.Fatalf("user_version = %d after Open, want %d", v, sqlitestore.SchemaVersion())
	}
	cs, err := s.Changes(ctx, 0, 10, store.WithData)
	mustDo(t, err)
	at := func(nsec int) time.Time { return time.Date(2026, 1, 2, 3, 4, 5, nsec, time.UTC) }
	want := []store.Note{
		{Event: "credential_created.v0", At: at(123456789)},
		{Event: "ip_policy_deleted.v0", At: at(0)},
		{Event: "api_key_updated.v0", At: at(500000000)},
		{}, {}, {}, {},
	}
	var got []store.Note
	for _, c := range cs {
		got = append(got, c.Note)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("notes after the migration (-want +got):\n%s", diff)
	}
}

// TestMigrationListVersions: migration 3 upgrades a version 2 file's
// indexes in place; its records are listed by ID and version after it,
// and read back whole.
func TestMigrationListVersions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v2.db")
	db := rawDB(t, path)
	for _, m := range []string{"migrations/0001_init.sql", "migrations/0002_typed_notes.sql"} {
		b, err := os.ReadFile(m)
		mustDo(t, err)
		_, err = db.Exec(string(b))
		mustDo(t, err)
	}
	for i, r := range []struct{ id, parent string }{{"st_1", ""}, {"st_2", "st_1"}, {"st_3", ""}} {
		var parent any
		if r.parent != "" {
			parent = r.parent
		}
		_, err := db.Exec("INSERT INTO records (id, kind, account_id, parent_id, data, keys, refs, idx, version) VALUES (?, 'k', 'acct', ?, x'7b7d', 'null', 'null', 'null', ?)",
			r.id, parent, 10+i)
		mustDo(t, err)
	}
	_, err := db.Exec("UPDATE meta SET revision = 12")
	mustDo(t, err)
	setUserVersion(t, path, 2)
	mustDo(t, db.Close())

	s := open(t, path, sqlitestore.Options{})
	if v := userVersion(t, path); v != sqlitestore.SchemaVersion() || v < 3 {
		t.Fatalf("user_version = %d after Open, want %d", v, sqlitestore.SchemaVersion())
	}
	got, err := s.ListVersions(ctx, store.Query{Kind: "k", AccountID: "acct", Limit: 10})
	mustDo(t, err)
	if diff := cmp.Diff([]store.Version{{ID: "st_3", Version: 12}, {ID: "st_2", Version: 11}, {ID: "st_1", Version: 10}}, got); diff != "" {
		t.Errorf("ListVersions after the migration (-want +got):\n%s", diff)
	}
	got, err = s.ListVersions(ctx, store.Query{Kind: "k", AccountID: "acct", ParentID: "st_1", Limit: 10})
	mustDo(t, err)
	if diff := cmp.Diff([]store.Version{{ID: "st_2", Version: 11}}, got); diff != "" {
		t.Errorf("children after the migration (-want +got):\n%s", diff)
	}
	recs, err := s.GetMany(ctx, "k", "acct", []string{"st_2", "st_1"})
	mustDo(t, err)
	if len(recs) != 2 || recs[0].ID != "st_2" || recs[0].ParentID != "st_1" || string(recs[1].Data) != "{}" {
		t.Errorf("GetMany after the migration: %+v", recs)
	}
	var names []string
	rows, err := rawDB(t, path).Query("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'records' AND name LIKE 'records_by_%' ORDER BY name")
	mustDo(t, err)
	for rows.Next() {
		var n string
		mustDo(t, rows.Scan(&n))
		names = append(names, n)
	}
	mustDo(t, rows.Err())
	if diff := cmp.Diff([]string{"records_by_account_version", "records_by_kind", "records_by_parent_version"}, names); diff != "" {
		t.Errorf("indexes of records after the migration (-want +got):\n%s", diff)
	}
}

// rawDB opens the file directly, bypassing the Store.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(5000)&_pragma=foreign_keys(1)")
	mustDo(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

func userVersion(t *testing.T, path string) int {
	t.Helper()
	var v int
	mustDo(t, rawDB(t, path).QueryRow("PRAGMA user_version").Scan(&v))
	return v
}

func setUserVersion(t *testing.T, path string, v int) {
	t.Helper()
	_, err := rawDB(t, path).Exec(fmt.Sprintf("PRAGMA user_version = %d", v))
	mustDo(t, err)
}

// TestDurableAcrossReopen: records, keys, references, index entries, the
// revision and the feed survive Close and Open.
func TestDurableAcrossReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d.db")
	s, err := sqlitestore.Open(ctx, path, sqlitestore.Options{})
	mustDo(t, err)
	target := rec("t", "acct_a", "st_1")
	r := rec("k", "acct_a", "st_2")
	r.Keys, r.Refs = []string{"key:2"}, []string{target.ID}
	r.Indexes = []store.IndexEntry{{Name: "label", Value: "x"}}
	mustDo(t, s.Create(ctx, target))
	made := store.Note{Event: "made.v0", At: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)}
	r.Note = made
	mustDo(t, s.Create(ctx, r))
	upd, err := s.Update(ctx, "k", "acct_a", r.ID, func(r *store.Record) error { r.Data = []byte(`{"v":2}`); return nil })
	mustDo(t, err)
	mustDo(t, s.Close())

	s = open(t, path, sqlitestore.Options{})
	got, err := s.Lookup(ctx, "k", "key:2")
	mustDo(t, err)
	if got.Version != upd.Version || string(got.Data) != `{"v":2}` || !slices.Equal(got.Refs, r.Refs) || !slices.Equal(got.Indexes, r.Indexes) {
		t.Errorf("after reopen: %+v, want %+v", got, upd)
	}
	if rev, err := s.Revision(ctx); err != nil || rev != upd.Version {
		t.Errorf("Revision after reopen = %d, %v; want %d", rev, err, upd.Version)
	}
	cs, err := s.Changes(ctx, 0, 10, store.WithData)
	mustDo(t, err)
	if len(cs) != 3 || cs[1].Note != made || cs[2].Op != store.OpUpdate {
		t.Errorf("feed after reopen: %+v", cs)
	}
	var inUse *store.InUseError
	if err := s.Delete(ctx, "t", "acct_a", target.ID, store.Note{}); !errors.As(err, &inUse) {
		t.Errorf("the reference did not survive reopen: Delete gave %v", err)
	}
	l, err := s.List(ctx, store.Query{Kind: "k", AccountID: "acct_a", Index: "label", Value: "x", Limit: 5})
	if err != nil || len(l) != 1 {
		t.Errorf("index after reopen: %d records, %v", len(l), err)
	}
}

// TestTwoStoresOneFile: two Stores on one file see each other's writes,
// and a waiter on one wakes for a commit through the other (by polling).
func TestTwoStoresOneFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shared.db")
	a := open(t, path, sqlitestore.Options{PollInterval: 10 * time.Millisecond})
	b := open(t, path, sqlitestore.Options{PollInterval: 10 * time.Millisecond})
	mustDo(t, a.Create(ctx, rec("k", "acct_a", "st_1")))
	if _, err := b.Get(ctx, "k", "acct_a", "st_1"); err != nil {
		t.Fatalf("b does not see a's write: %v", err)
	}
	rev, err := b.Revision(ctx)
	mustDo(t, err)

	woke := make(chan error, 1)
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second) // a bound on a hung test
	defer cancel()
	go func() { woke <- b.Wait(wctx, rev) }()
	mustDo(t, a.Create(ctx, rec("k", "acct_a", "st_2")))
	if err := <-woke; err != nil {
		t.Fatalf("b's Wait did not wake for a's commit: %v", err)
	}
	cs, err := b.Changes(ctx, rev, 10, store.WithData)
	if err != nil || len(cs) != 1 || cs[0].ID != "st_2" {
		t.Errorf("b's feed after a's commit: %+v, %v", cs, err)
	}
	// Writes through both interleave on one revision sequence.
	upd, err := b.Update(ctx, "k", "acct_a", "st_1", func(*store.Record) error { return nil })
	mustDo(t, err)
	if upd.Version != rev+2 {
		t.Errorf("b's update has version %d, want %d", upd.Version, rev+2)
	}
}

// TestWaitEndsAtClose: a waiter is released by Close, and Wait on a
// closed Store fails at once.
func TestWaitEndsAtClose(t *testing.T) {
	s, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "c.db"), sqlitestore.Options{})
	mustDo(t, err)
	woke := make(chan error, 1)
	go func() { woke <- s.Wait(ctx, 0) }()
	mustDo(t, s.Close())
	if err := <-woke; err == nil { // ErrClosed, or the closed database's error if it was reading
		t.Error("Wait across Close returned nil, though no commit came")
	}
	if err := s.Wait(ctx, 0); !errors.Is(err, sqlitestore.ErrClosed) {
		t.Errorf("Wait on a closed store: %v, want ErrClosed", err)
	}
}

// TestConstraintErrors: each constraint failure comes back as the
// store's typed error, naming the right key or record, with no SQL in
// its message; and the database itself refuses what the store would.
func TestConstraintErrors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.db")
	s := open(t, path, sqlitestore.Options{})
	target := rec("t", "acct_a", "st_t")
	keyed := rec("k", "acct_a", "st_k")
	keyed.Keys = []string{"taken"}
	foreign := rec("t", "acct_b", "st_f")
	for _, r := range []store.Record{target, keyed, foreign} {
		mustDo(t, s.Create(ctx, r))
	}
	// Referrers created out of ID order, to check the sort.
	for _, id := range []string{"st_r3", "st_r1", "st_r2"} {
		r := rec("k", "acct_a", id)
		r.Refs = []string{target.ID}
		mustDo(t, s.Create(ctx, r))
	}
	with := func(edit func(*store.Record)) store.Record {
		r := rec("k", "acct_a", "st_new")
		edit(&r)
		return r
	}
	tests := []struct {
		name string
		err  error
		want error
	}{
		{"duplicate id", s.Create(ctx, with(func(r *store.Record) { r.ID = keyed.ID })), &store.DuplicateError{Key: keyed.ID}},
		{"duplicate key", s.Create(ctx, with(func(r *store.Record) { r.Keys = []string{"free", "taken"} })), &store.DuplicateError{Key: "taken"}},
		{"key twice", s.Create(ctx, with(func(r *store.Record) { r.Keys = []string{"x", "x"} })), &store.DuplicateError{Key: "x"}},
		{"missing parent", s.Create(ctx, with(func(r *store.Record) { r.ParentID = "st_none" })), &store.MissingRefError{ID: "st_none"}},
		{"parent in another account", s.Create(ctx, with(func(r *store.Record) { r.ParentID = foreign.ID })), &store.MissingRefError{ID: foreign.ID}},
		{"missing ref", s.Create(ctx, with(func(r *store.Record) { r.Refs = []string{target.ID, "st_none"} })), &store.MissingRefError{ID: "st_none"}},
		{"ref in another account", s.Create(ctx, with(func(r *store.Record) { r.Refs = []string{foreign.ID} })), &store.MissingRefError{ID: foreign.ID}},
		{"in use", s.Delete(ctx, "t", "acct_a", target.ID, store.Note{}), &store.InUseError{ID: target.ID, Referrers: []string{"st_r1", "st_r2", "st_r3"}}},
		{"stale version", s.DeleteIf(ctx, "t", "acct_a", target.ID, 99, store.Note{}), &store.VersionError{ID: target.ID, Want: 99, Have: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.err); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := s.Get(ctx, "k", "acct_a", "st_new"); !errors.Is(err, apierr.ErrNotFound) {
		t.Errorf("a refused Create left a record: %v", err)
	}

	// The database refuses a reference to a missing record and the
	// delete of a referenced one, whoever writes.
	db := rawDB(t, path)
	if _, err := db.Exec("INSERT INTO refs (to_id, from_id, account_id) VALUES ('st_none', ?, 'acct_a')", keyed.ID); err == nil {
		t.Error("the database took a reference to a missing record")
	}
	if _, err := db.Exec("DELETE FROM records WHERE id = ?", target.ID); err == nil {
		t.Error("the database deleted a referenced record")
	}

	// A failure of the database itself says nothing of SQL.
	mustDo(t, s.Close())
	_, err := s.Get(ctx, "k", "acct_a", keyed.ID)
	if !errors.Is(err, apierr.ErrInternal) || err.Error() != "the database failed" {
		t.Errorf("Get on a closed store: %q, want an internal error without detail", err)
	}
}

// TestFeedRetention: the feed keeps the newest FeedRetention changes and
// tells a reader behind them to resync; the rows behind are deleted.
func TestFeedRetention(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.db")
	s := open(t, path, sqlitestore.Options{FeedRetention: 4})
	for i := range 25 {
		mustDo(t, s.Create(ctx, rec("k", "acct", fmt.Sprintf("st_%02d", i))))
	}
	got, err := s.Changes(ctx, 21, 100, store.WithData)
	if err != nil || len(got) != 4 || got[0].Revision != 22 || got[3].Revision != 25 {
		t.Fatalf("the newest 4 changes: %d changes, %v", len(got), err)
	}
	var ce *store.CompactedError
	if _, err := s.Changes(ctx, 20, 100, store.WithData); !errors.As(err, &ce) || ce.Oldest != 22 {
		t.Errorf("a reader behind the retention: %v, want a CompactedError with oldest 22", err)
	}
	var rows int
	mustDo(t, rawDB(t, path).QueryRow("SELECT count(*) FROM feed").Scan(&rows))
	if rows > 4+4 { // at most one step (retention/8, at least 1) behind
		t.Errorf("the feed table holds %d rows, want at most 8", rows)
	}
}

// TestWaitWakesOnOwnCommit: a commit through the same Store wakes a
// waiter at once, not at the next poll (an hour away here).
func TestWaitWakesOnOwnCommit(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "w.db"), sqlitestore.Options{PollInterval: time.Hour})
	woke := make(chan error, 1)
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second) // a bound on a hung test
	defer cancel()
	go func() { woke <- s.Wait(wctx, 0) }()
	mustDo(t, s.Create(ctx, rec("k", "acct", "st_1")))
	if err := <-woke; err != nil {
		t.Errorf("Wait did not wake on the Store's own commit: %v", err)
	}
}

// TestCascadeWithReferencesInside: references between records of one
// subtree (a child to its parent, a child to a sibling) do not stop the
// subtree's delete, which the database would refuse (ON DELETE RESTRICT)
// if those references were still there when it cascades.
func TestCascadeWithReferencesInside(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "c.db"), sqlitestore.Options{})
	parent := rec("p", "acct", "st_1")
	c1, c2 := rec("c", "acct", "st_2"), rec("c", "acct", "st_3")
	c1.ParentID, c2.ParentID = parent.ID, parent.ID
	c2.Refs = []string{parent.ID, c1.ID, c2.ID} // parent, sibling, itself
	for _, r := range []store.Record{parent, c1, c2} {
		mustDo(t, s.Create(ctx, r))
	}
	start, err := s.Revision(ctx)
	mustDo(t, err)
	mustDo(t, s.Delete(ctx, "p", "acct", parent.ID, store.Note{}))
	cs, err := s.Changes(ctx, start, 10, store.WithData)
	mustDo(t, err)
	var got []string
	for _, c := range cs {
		got = append(got, c.Op.String()+" "+c.ID)
	}
	if want := []string{"delete st_2", "delete st_3", "delete st_1"}; !slices.Equal(got, want) {
		t.Errorf("changes of the cascade: %v, want %v", got, want)
	}
	if _, err := s.Get(ctx, "c", "acct", c2.ID); !errors.Is(err, apierr.ErrNotFound) {
		t.Errorf("a child survived the cascade: %v", err)
	}
}
