package pgstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/pgstore"
	"github.com/edgeplane/edgeplane/store"
	"github.com/edgeplane/edgeplane/storetest"
	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
)

// urlEnv names the variable that points the tests at a PostgreSQL
// database; without it they skip.
const urlEnv = "EDGEPLANE_TEST_POSTGRES_URL"

// baseURL returns the test database's URL, or skips the test.
func baseURL(tb testing.TB) string {
	tb.Helper()
	u := os.Getenv(urlEnv)
	if u == "" {
		tb.Skip("set " + urlEnv + " (e.g. postgres://user@127.0.0.1:5432/db?sslmode=disable) to run the PostgreSQL tests; .ci/run starts a throwaway cluster and does")
	}
	return u
}

// freshSchema creates an empty schema for one test, dropped at its end,
// and returns a URL whose connections use it.
func freshSchema(tb testing.TB) string {
	tb.Helper()
	base := baseURL(tb)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		tb.Fatalf("connecting to %s: %v", urlEnv, err) // set but unusable: a failure, not a skip
	}
	defer conn.Close(ctx)
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	schema := "edgeplane_test_" + hex.EncodeToString(b)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), base)
		if err != nil {
			tb.Errorf("dropping schema: %v", err)
			return
		}
		defer c.Close(context.Background())
		if _, err := c.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			tb.Errorf("dropping schema: %v", err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		tb.Fatalf("%s is not a URL: %v", urlEnv, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// open opens a Store on u, closed at the test's end.
func open(tb testing.TB, u string, opts pgstore.Options) *pgstore.Store {
	tb.Helper()
	s, err := pgstore.Open(context.Background(), u, opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Close)
	return s
}

func TestConformance(t *testing.T) {
	baseURL(t)
	storetest.Run(t, func(t *testing.T) store.Store { return open(t, freshSchema(t), pgstore.Options{}) })
}

// TestTwoHandles: two Stores on one schema (as two processes would have)
// see each other's writes, and a Wait on one wakes for a commit through
// the other.
func TestTwoHandles(t *testing.T) {
	ctx := context.Background()
	u := freshSchema(t)
	a, b := open(t, u, pgstore.Options{}), open(t, u, pgstore.Options{})
	rec := store.Record{Kind: "k", AccountID: "acct", ID: "st_1", Data: []byte(`{"n":1}`), Keys: []string{"key1"}}
	if err := a.Create(ctx, rec); err != nil {
		t.Fatal(err)
	}
	got, err := b.Lookup(ctx, "k", "key1")
	if err != nil || got.ID != "st_1" || string(got.Data) != `{"n":1}` {
		t.Fatalf("the other handle reads %+v, %v", got, err)
	}
	rev, err := b.Revision(ctx)
	if err != nil || rev != got.Version {
		t.Fatalf("the other handle's revision %d, %v; want %d", rev, err, got.Version)
	}
	// A key taken through one handle is taken for the other.
	var de *store.DuplicateError
	if err := b.Create(ctx, store.Record{Kind: "k", AccountID: "acct", ID: "st_2", Data: []byte(`{}`), Keys: []string{"key1"}}); !errors.As(err, &de) {
		t.Errorf("a key taken through the other handle: %v, want a DuplicateError", err)
	}

	wctx, cancel := context.WithTimeout(ctx, 30*time.Second) // a bound on a hung test
	defer cancel()
	woke := make(chan error, 1)
	go func() { woke <- b.Wait(wctx, rev) }()
	select {
	case err := <-woke:
		t.Fatalf("Wait returned before any commit: %v", err)
	default:
	}
	if _, err := a.Update(ctx, "k", "acct", "st_1", func(r *store.Record) error { r.Data = []byte(`{"n":2}`); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := <-woke; err != nil {
		t.Fatalf("Wait on one handle did not wake for a commit through the other: %v", err)
	}
	cs, err := b.Changes(ctx, rev, 10, store.WithData)
	if err != nil || len(cs) != 1 || cs[0].Op != store.OpUpdate || string(cs[0].Data) != `{"n":2}` {
		t.Errorf("the other handle's feed after the update: %+v, %v", cs, err)
	}
}

// TestFeedRetention: the feed keeps the newest FeedRetention changes and
// tells a reader behind them to resync.
func TestFeedRetention(t *testing.T) {
	ctx := context.Background()
	u := freshSchema(t)
	s := open(t, u, pgstore.Options{FeedRetention: 4})
	for i := range 70 { // past the pruning period, so rows are really deleted
		if err := s.Create(ctx, store.Record{Kind: "k", AccountID: "acct", ID: "st_" + string(rune('A'+i)), Data: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Changes(ctx, 66, 100, store.WithData)
	if err != nil || len(got) != 4 || got[0].Revision != 67 || got[3].Revision != 70 {
		t.Fatalf("the newest 4 changes: %d changes, %v", len(got), err)
	}
	var ce *store.CompactedError
	if _, err := s.Changes(ctx, 65, 100, store.WithData); !errors.As(err, &ce) || ce.Oldest != 67 {
		t.Errorf("a reader behind the retention: %v, want a CompactedError with oldest 67", err)
	}
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var rows int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM changes`).Scan(&rows); err != nil || rows > 4+32 {
		t.Errorf("the feed holds %d rows (%v), want at most the retention plus the pruning period, 36", rows, err)
	}
	// The pruning deleted the rows and recorded it: a handle that would
	// keep more cannot read them.
	wide := open(t, u, pgstore.Options{})
	if _, err := wide.Changes(ctx, 10, 100, store.WithData); !errors.As(err, &ce) || ce.Oldest != 61 {
		t.Errorf("behind the pruned changes through another handle: %v, want a CompactedError with oldest 61", err)
	}
}

// TestMigrations: concurrent Opens of a fresh schema apply the migrations
// once and all succeed; reopening is a no-op; a schema newer than the
// package knows is refused.
func TestMigrations(t *testing.T) {
	ctx := context.Background()
	u := freshSchema(t)
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			s, err := pgstore.Open(ctx, u, pgstore.Options{})
			if err == nil {
				s.Close()
			}
			errs <- err
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Errorf("concurrent Open: %v", err)
		}
	}
	s := open(t, u, pgstore.Options{})
	if err := s.Create(ctx, store.Record{Kind: "k", AccountID: "a", ID: "st_1", Data: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM edgeplane_schema_migrations`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("applied migrations: %d, %v; want 2", n, err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO edgeplane_schema_migrations (version) VALUES (999)`); err != nil {
		t.Fatal(err)
	}
	if s2, err := pgstore.Open(ctx, u, pgstore.Options{}); !errors.Is(err, apierr.ErrFailedPrecondition) {
		if s2 != nil {
			s2.Close()
		}
		t.Errorf("Open of a newer schema: %v, want failed precondition", err)
	}
}

// TestMigrationSplitsNotes: migration 2 turns the notes a version 1
// schema holds ("<event>@<RFC 3339 time>", as the Service wrote them) into
// typed ones (times to the microsecond), and any other note into none, as
// the reader counted it.
func TestMigrationSplitsNotes(t *testing.T) {
	ctx := context.Background()
	u := freshSchema(t)
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	init, err := os.ReadFile("migrations/001_init.sql")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, string(init)); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `CREATE TABLE edgeplane_schema_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now());
		INSERT INTO edgeplane_schema_migrations (version) VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	notes := []string{
		"credential_created.v0@2026-01-02T03:04:05.123456789Z",
		"ip_policy_deleted.v0@2026-01-02T03:04:05Z",
		"",
		"made",
		"worse@2026-13-45T99:99:99Z",
	}
	for i, n := range notes {
		if _, err := conn.Exec(ctx, `INSERT INTO changes (revision, op, kind, account_id, id, parent_id, data, note)
			VALUES ($1, 1, 'k', 'a', $2, '', '{}', $3)`, i+1, fmt.Sprintf("st_%d", i+1), n); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := conn.Exec(ctx, `UPDATE feed_head SET rev = $1`, len(notes)); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `SELECT setval('feed_revision', $1)`, len(notes)); err != nil {
		t.Fatal(err)
	}

	s := open(t, u, pgstore.Options{})
	cs, err := s.Changes(ctx, 0, 10, store.WithData)
	if err != nil {
		t.Fatal(err)
	}
	var got []store.Note
	for _, c := range cs {
		got = append(got, c.Note)
	}
	at := func(nsec int) time.Time { return time.Date(2026, 1, 2, 3, 4, 5, nsec, time.UTC) }
	want := []store.Note{
		{Event: "credential_created.v0", At: at(123457000)}, // rounded to the microsecond
		{Event: "ip_policy_deleted.v0", At: at(0)},
		{}, {}, {},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("notes after the migration (-want +got):\n%s", diff)
	}
}

// TestErrorsNameNoSQL: a database failure reaches the caller as an
// internal error whose message says nothing of the SQL.
func TestErrorsNameNoSQL(t *testing.T) {
	u := freshSchema(t)
	s := open(t, u, pgstore.Options{})
	conn, err := pgx.Connect(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), `DROP TABLE record_keys`); err != nil {
		t.Fatal(err)
	}
	_, err = s.Lookup(context.Background(), "k", "key")
	if apierr.CodeOf(err) != apierr.Internal {
		t.Fatalf("Lookup on a broken schema: %v, want an internal error", err)
	}
	if msg := err.Error(); msg != "pgstore: storage failure" {
		t.Errorf("the error's message is %q, want the generic one", msg)
	}
}

// TestCascadeWithInternalReferences: references among the records a
// delete removes do not block it (RESTRICT fires only for referrers from
// outside), and each removed record has its change, children first.
func TestCascadeWithInternalReferences(t *testing.T) {
	ctx := context.Background()
	s := open(t, freshSchema(t), pgstore.Options{})
	recs := []store.Record{
		{Kind: "k", AccountID: "a", ID: "st_1", Data: []byte(`{}`)},
		{Kind: "k", AccountID: "a", ID: "st_2", ParentID: "st_1", Refs: []string{"st_1"}, Data: []byte(`{}`)},
		{Kind: "k", AccountID: "a", ID: "st_3", ParentID: "st_2", Refs: []string{"st_2", "st_3"}, Data: []byte(`{}`)},
	}
	for _, r := range recs {
		if err := s.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	rev, err := s.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	gone := store.Note{Event: "gone.v0"}
	if err := s.Delete(ctx, "k", "a", "st_1", gone); err != nil {
		t.Fatalf("Delete of a subtree whose records reference each other: %v", err)
	}
	cs, err := s.Changes(ctx, rev, 10, store.WithData)
	if err != nil || len(cs) != 3 {
		t.Fatalf("changes of the cascade: %+v, %v", cs, err)
	}
	for i, want := range []struct {
		id   string
		note store.Note
	}{{"st_2", store.Note{}}, {"st_3", store.Note{}}, {"st_1", gone}} {
		if c := cs[i]; c.ID != want.id || c.Note != want.note || c.Op != store.OpDelete || c.Revision != rev+int64(i)+1 {
			t.Errorf("change %d: %+v, want a delete of %s noted %+v", i, c, want.id, want.note)
		}
	}
}

// TestRevisionsAfterAnAbortedDraw: revisions are the batches' to give
// under the feed lock, so a revision drawn from the sequence by a
// transaction that never committed (an older version of this package
// cancelled between nextval and COMMIT) is given again, and the feed
// stays gapless; and the sequence follows the head, so that a writer
// that draws from it counts on from there.
func TestRevisionsAfterAnAbortedDraw(t *testing.T) {
	ctx := context.Background()
	u := freshSchema(t)
	s := open(t, u, pgstore.Options{})
	if err := s.Create(ctx, store.Record{Kind: "k", AccountID: "a", ID: "st_1", Data: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var drawn int64
	if err := tx.QueryRow(ctx, `SELECT nextval('feed_revision')`).Scan(&drawn); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if drawn != 2 {
		t.Fatalf("the sequence gave %d after the first write, want 2: it does not follow the head", drawn)
	}
	if err := s.Create(ctx, store.Record{Kind: "k", AccountID: "a", ID: "st_2", Data: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	cs, err := s.Changes(ctx, 1, 10, store.WithData)
	if err != nil || len(cs) != 1 || cs[0].ID != "st_2" || cs[0].Revision != 2 {
		t.Fatalf("the feed after the aborted draw: %+v, %v; want st_2 at revision 2", cs, err)
	}
	if rev, err := s.Revision(ctx); err != nil || rev != 2 {
		t.Errorf("Revision() = %d, %v; want 2", rev, err)
	}
	if err := conn.QueryRow(ctx, `SELECT nextval('feed_revision')`).Scan(&drawn); err != nil || drawn != 3 {
		t.Errorf("the sequence after the second write gave %d, %v; want 3", drawn, err)
	}
}

// TestCloseEndsWait: Close makes a Wait in progress return an error
// instead of blocking until its context ends.
func TestCloseEndsWait(t *testing.T) {
	s, err := pgstore.Open(context.Background(), freshSchema(t), pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a bound on a hung test
	defer cancel()
	woke := make(chan error, 1)
	go func() { woke <- s.Wait(ctx, 0) }()
	select {
	case err := <-woke:
		t.Fatalf("Wait returned before Close: %v", err)
	default:
	}
	s.Close()
	if err := <-woke; err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait after Close returned %v, want a store error", err)
	}
}

// TestListenerReconnects: when the listening connection is killed, the
// listener reconnects and wakes its waiters, so a commit made while it was
// down still ends a Wait.
func TestListenerReconnects(t *testing.T) {
	ctx := context.Background()
	u := freshSchema(t)
	a, b := open(t, u, pgstore.Options{}), open(t, u, pgstore.Options{})
	rev, err := a.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var killed int
	if err := conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE query LIKE 'LISTEN "edgeplane_feed_%' AND pid <> pg_backend_pid()`).Scan(&killed); err != nil || killed < 2 {
		t.Fatalf("terminated %d listening connections (%v), want both handles'", killed, err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second) // a bound on a hung test
	defer cancel()
	woke := make(chan error, 1)
	go func() { woke <- a.Wait(wctx, rev) }()
	if err := b.Create(ctx, store.Record{Kind: "k", AccountID: "a", ID: "st_1", Data: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if err := <-woke; err != nil {
		t.Fatalf("Wait across a lost listening connection: %v", err)
	}
	// And the new connection listens: a Wait for the next commit wakes.
	go func() { woke <- a.Wait(wctx, rev+1) }()
	if err := b.Create(ctx, store.Record{Kind: "k", AccountID: "a", ID: "st_2", Data: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if err := <-woke; err != nil {
		t.Fatalf("Wait after the listener reconnected: %v", err)
	}
}

// TestBatchPaths: concurrent writes that all succeed commit on the fast
// path (their statements pipelined, no savepoints); a batch in which one
// breaks a unique key is taken again on the careful path, where that one
// fails alone; a delete takes the careful path.
func TestBatchPaths(t *testing.T) {
	ctx := context.Background()
	s := open(t, freshSchema(t), pgstore.Options{})
	seed := store.Record{Kind: "k", AccountID: "a", ID: "st_seed", Keys: []string{"taken"}, Data: []byte(`{"n":0}`)}
	if err := s.Create(ctx, seed); err != nil {
		t.Fatal(err)
	}
	run := func(n int, write func(i int) error) []error {
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { errs[i] = write(i) })
		}
		wg.Wait()
		return errs
	}
	fast0, careful0 := s.Batches()
	rev0, err := s.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	note := func(i int) store.Note { // with a time for some, without for others
		if i%4 == 0 {
			return store.Note{Event: "k.created", At: time.Unix(1_000_000_000+int64(i), 0).UTC()}
		}
		return store.Note{Event: "k.created"}
	}
	for i, err := range run(32, func(i int) error {
		if i%2 == 0 {
			return s.Create(ctx, store.Record{Kind: "k", AccountID: "a", ID: "st_" + strconv.Itoa(100+i), Data: []byte(`{}`), Note: note(i)})
		}
		_, err := s.Update(ctx, "k", "a", "st_seed", func(r *store.Record) error {
			var d struct{ N int }
			if err := json.Unmarshal(r.Data, &d); err != nil {
				return err
			}
			r.Data = []byte(`{"n":` + strconv.Itoa(d.N+1) + `}`)
			return nil
		})
		return err
	}) {
		if err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	fast1, careful1 := s.Batches()
	if fast1 == fast0 || careful1 != careful0 {
		t.Fatalf("writes that all succeed: %d fast and %d careful batches, want only fast ones", fast1-fast0, careful1-careful0)
	}
	got, err := s.Get(ctx, "k", "a", "st_seed")
	if err != nil || string(got.Data) != `{"n":16}` {
		t.Fatalf("after 16 concurrent increments: %s, %v; want n 16 (updates of one record in a batch see each other)", got.Data, err)
	}
	if fast1-fast0 >= 32 {
		t.Errorf("32 concurrent writes took %d batches: none was grouped", fast1-fast0)
	}
	// The feed rows of a batch's writes, inserted by one statement, are
	// each write's own.
	changes, err := s.Changes(ctx, rev0, 100, store.WithData)
	if err != nil || len(changes) != 32 {
		t.Fatalf("changes after the writes: %d, %v; want 32", len(changes), err)
	}
	increments := 0
	for k, c := range changes {
		if c.Revision != rev0+int64(k)+1 || c.Kind != "k" || c.AccountID != "a" || c.ParentID != "" {
			t.Fatalf("change %d: %+v", k, c)
		}
		if c.Op == store.OpUpdate {
			increments++
			if c.ID != "st_seed" || string(c.Data) != `{"n":`+strconv.Itoa(increments)+`}` || c.Note != (store.Note{}) {
				t.Errorf("change %d, an increment: %+v; want n %d", k, c, increments)
			}
			continue
		}
		i, err := strconv.Atoi(strings.TrimPrefix(c.ID, "st_"))
		if want := note(i - 100); err != nil || c.Op != store.OpCreate || string(c.Data) != `{}` || c.Note.Event != want.Event || !c.Note.At.Equal(want.At) {
			t.Errorf("change %d, a create: %+v; want note %+v", k, c, want)
		}
	}

	errs := run(16, func(i int) error {
		r := store.Record{Kind: "k", AccountID: "a", ID: "st_" + strconv.Itoa(200+i), Data: []byte(`{}`)}
		if i == 7 {
			r.Keys = []string{"taken"}
		}
		return s.Create(ctx, r)
	})
	for i, err := range errs {
		var dup *store.DuplicateError
		if (i == 7) != errors.As(err, &dup) || (i != 7 && err != nil) {
			t.Errorf("create %d: %v", i, err)
		}
	}
	_, careful2 := s.Batches()
	if careful2 == careful1 {
		t.Error("a batch with a broken key committed without the careful path")
	}
	if err := s.Delete(ctx, "k", "a", "st_100", store.Note{}); err != nil {
		t.Fatal(err)
	}
	if _, careful3 := s.Batches(); careful3 == careful2 {
		t.Error("a delete committed without the careful path")
	}
}

// TestReadBatch: reads sent in one round trip each get their own
// result, and a read whose statement fails there fails alone (it
// aborts the batch's implicit transaction, so the reads after it run
// again).
func TestReadBatch(t *testing.T) {
	ctx := context.Background()
	s := open(t, freshSchema(t), pgstore.Options{})
	out, errs := s.RunReads(ctx, []string{"SELECT 'a'", "SELECT 'b'", "SELECT (1/0)::text", "SELECT 'd'", "SELECT 'e'"})
	for i, want := range []string{"a", "b", "", "d", "e"} {
		if out[i] != want || (errs[i] != nil) != (i == 2) {
			t.Errorf("read %d = %q, %v; want %q", i, out[i], errs[i], want)
		}
	}
	if !strings.Contains(fmt.Sprint(errs[2]), "division by zero") {
		t.Errorf("the failed read's error is %v, not its own", errs[2])
	}
}

// TestConcurrentListVersions: lists of many accounts at once, sent in
// shared round trips, each answer its own account's records.
func TestConcurrentListVersions(t *testing.T) {
	ctx := context.Background()
	s := open(t, freshSchema(t), pgstore.Options{})
	const accounts, each, readers, rounds = 16, 5, 64, 20
	for a := range accounts {
		for i := range each + a%3 {
			r := store.Record{Kind: "k", AccountID: fmt.Sprintf("acct%02d", a), ID: fmt.Sprintf("st_%02d_%02d", a, i), Data: []byte(`{}`)}
			if err := s.Create(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
	}
	var wg sync.WaitGroup
	for g := range readers {
		wg.Go(func() {
			for r := range rounds {
				a := (g + r) % accounts
				vs, err := s.ListVersions(ctx, store.Query{Kind: "k", AccountID: fmt.Sprintf("acct%02d", a), Limit: 100})
				if err != nil {
					t.Error(err)
					return
				}
				if len(vs) != each+a%3 {
					t.Errorf("account %d: %d versions, want %d", a, len(vs), each+a%3)
					return
				}
				for i, v := range vs { // newest (greatest ID) first
					if want := fmt.Sprintf("st_%02d_%02d", a, len(vs)-1-i); v.ID != want {
						t.Errorf("account %d: version %d is %s, want %s", a, i, v.ID, want)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	if s.ReadBatches() == 0 {
		t.Error("no two of the concurrent lists shared a round trip")
	}
}
