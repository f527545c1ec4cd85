package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/store"
	"github.com/google/go-cmp/cmp"
)

// changesAfter reads every change after rev, page by page.
func changesAfter(t *testing.T, s store.Store, rev int64) []store.Change {
	t.Helper()
	var out []store.Change
	for {
		page, err := s.Changes(context.Background(), rev, 7, store.WithData)
		must(t, err)
		if len(page) == 0 {
			return out
		}
		out = append(out, page...)
		rev = page[len(page)-1].Revision
	}
}

// brief is a change without its revision and data, for comparisons.
type brief struct {
	Op         store.Op
	Kind       store.Kind
	ID, Parent string
	Note       store.Note
	Data       string
}

func briefs(cs []store.Change) []brief {
	out := make([]brief, len(cs))
	for i, c := range cs {
		out[i] = brief{c.Op, c.Kind, c.ID, c.ParentID, c.Note, string(c.Data)}
	}
	return out
}

// note returns a note of event at a time with microseconds, as every
// backend keeps it (PostgreSQL keeps no finer), in a zone other than UTC
// (a store returns it in UTC).
func note(event string, sec int) store.Note {
	at := time.Date(2026, 3, 4, 5, 6, sec, 789012000, time.FixedZone("CET", 3600))
	return store.Note{Event: event, At: at}
}

// inUTC returns n with its time in UTC, as a store returns it.
func inUTC(n store.Note) store.Note {
	n.At = n.At.UTC()
	return n
}

// testFeedOrderAndContent: each committed write is one change, in commit
// order, with consecutive revisions that are the records' versions; a
// cascade shows every removed record, children first; the notes of the
// writes that carry one (create, update, replace, delete and DeleteIf)
// show in their changes, and no record a read or write returns has one.
func testFeedOrderAndContent(t *testing.T, s store.Store) {
	ctx := context.Background()
	f := newFixture()
	acct := f.account()
	start, err := s.Revision(ctx)
	must(t, err)

	a := f.record(kindA, acct)
	a.Note = note("a_created.v0", 1)
	must(t, s.Create(ctx, a))
	child := f.record(kindB, acct)
	child.ParentID = a.ID
	create(t, s, child)
	upd, err := s.Update(ctx, kindA, acct, a.ID, func(r *store.Record) error {
		if !r.Note.IsZero() {
			t.Errorf("Update's callback got a record with a note: %+v", r.Note)
		}
		r.Data = doc("a2", 2)
		r.Note = note("a_updated.v0", 2)
		return nil
	})
	must(t, err)
	rep := upd.Clone()
	rep.Data = doc("a3", 3)
	replaced, err := s.Replace(ctx, rep)
	must(t, err)
	rep = replaced.Clone()
	rep.Data = doc("a4", 4)
	rep.Note = store.Note{Event: "a_replaced.v0"} // an event without a time
	replaced2, err := s.Replace(ctx, rep)
	must(t, err)
	for _, r := range []store.Record{upd, replaced, replaced2} {
		if !r.Note.IsZero() {
			t.Errorf("a write returned a record with a note: %+v", r.Note)
		}
	}
	read, err := s.Get(ctx, kindA, acct, a.ID)
	must(t, err)
	if !read.Note.IsZero() {
		t.Errorf("Get returned a record with a note: %+v", read.Note)
	}
	must(t, s.Delete(ctx, kindA, acct, a.ID, note("a_deleted.v0", 5)))
	b := f.record(kindA, acct)
	create(t, s, b)
	readB, err := s.Get(ctx, kindA, acct, b.ID)
	must(t, err)
	must(t, s.DeleteIf(ctx, kindA, acct, b.ID, readB.Version, note("b_deleted.v0", 6)))

	got := changesAfter(t, s, start)
	want := []brief{
		{store.OpCreate, kindA, a.ID, "", inUTC(note("a_created.v0", 1)), string(a.Data)},
		{store.OpCreate, kindB, child.ID, a.ID, store.Note{}, string(child.Data)},
		{store.OpUpdate, kindA, a.ID, "", inUTC(note("a_updated.v0", 2)), string(doc("a2", 2))},
		{store.OpUpdate, kindA, a.ID, "", store.Note{}, string(doc("a3", 3))},
		{store.OpUpdate, kindA, a.ID, "", store.Note{Event: "a_replaced.v0"}, string(doc("a4", 4))},
		{store.OpDelete, kindB, child.ID, a.ID, store.Note{}, string(child.Data)},
		{store.OpDelete, kindA, a.ID, "", inUTC(note("a_deleted.v0", 5)), string(doc("a4", 4))},
		{store.OpCreate, kindA, b.ID, "", store.Note{}, string(b.Data)},
		{store.OpDelete, kindA, b.ID, "", inUTC(note("b_deleted.v0", 6)), string(b.Data)},
	}
	if diff := cmp.Diff(want, briefs(got)); diff != "" {
		t.Fatalf("the feed (-want +got):\n%s", diff)
	}
	for i, c := range got {
		if c.Revision != start+int64(i)+1 || c.AccountID != acct {
			t.Errorf("change %d: revision %d account %s, want %d %s", i, c.Revision, c.AccountID, start+int64(i)+1, acct)
		}
	}
	if got[2].Revision != upd.Version || got[3].Revision != replaced.Version {
		t.Errorf("update revisions %d, %d are not the versions %d, %d", got[2].Revision, got[3].Revision, upd.Version, replaced.Version)
	}
	for i, c := range got {
		if c.Note.At.Location() != time.UTC {
			t.Errorf("change %d: the note's time is in %v, want UTC", i, c.Note.At.Location())
		}
	}
	if rev, err := s.Revision(ctx); err != nil || rev != got[len(got)-1].Revision {
		t.Errorf("Revision() = %d, %v; want the last change's %d", rev, err, got[len(got)-1].Revision)
	}
	// Returned changes are copies.
	again, err := s.Changes(ctx, start, 1, store.WithData)
	must(t, err)
	again[0].Data[0] = 'X'
	if fresh := changesAfter(t, s, start); string(fresh[0].Data) != string(a.Data) {
		t.Error("mutating a returned change changed the feed")
	}
	if _, err := s.Changes(ctx, start, 0, store.WithData); !errors.Is(err, apierr.ErrInvalidArgument) {
		t.Errorf("Changes with limit 0: %v, want invalid argument", err)
	}
	// Without data: the same changes, each Data nil.
	bare, err := s.Changes(ctx, start, len(got), store.WithoutData)
	must(t, err)
	if len(bare) != len(got) {
		t.Fatalf("Changes without data gave %d changes, want %d", len(bare), len(got))
	}
	for i, c := range bare {
		if c.Data != nil {
			t.Errorf("change %d without data has Data %q", i, c.Data)
		}
		if got[i].Data == nil {
			t.Errorf("change %d with data has none", i)
		}
		c.Data = got[i].Data
		if diff := cmp.Diff(got[i], c); diff != "" {
			t.Errorf("change %d without data differs (-with +without):\n%s", i, diff)
		}
	}
}

// testFeedFailedWrites: a write that fails leaves no change.
func testFeedFailedWrites(t *testing.T, s store.Store) {
	ctx := context.Background()
	f := newFixture()
	acct := f.account()
	target := f.record(kindB, acct)
	r := f.record(kindA, acct)
	r.Keys = []string{"key:" + r.ID}
	r.Refs = []string{target.ID}
	create(t, s, target, r)
	start, err := s.Revision(ctx)
	must(t, err)

	dup := f.record(kindA, acct)
	dup.Keys = r.Keys
	if err := s.Create(ctx, dup); err == nil {
		t.Fatal("a duplicate key was created")
	}
	if _, err := s.Update(ctx, kindA, acct, r.ID, func(*store.Record) error { return errors.New("no") }); err == nil {
		t.Fatal("a failing callback did not fail")
	}
	stale := r.Clone()
	stale.Version = 0
	if _, err := s.Replace(ctx, stale); err == nil {
		t.Fatal("a stale replace succeeded")
	}
	if err := s.Delete(ctx, kindB, acct, target.ID, note("target_deleted.v0", 1)); err == nil {
		t.Fatal("a referenced record was deleted")
	}
	if got := changesAfter(t, s, start); len(got) != 0 {
		t.Errorf("failed writes left changes: %+v", briefs(got))
	}
	if rev, _ := s.Revision(ctx); rev != start {
		t.Errorf("failed writes moved the revision from %d to %d", start, rev)
	}
}

// testFeedConcurrentWriters: under concurrent writers, a follower that
// waits and reads sees every write exactly once, in revision order without
// gaps, and each record's changes in the order of its versions.
func testFeedConcurrentWriters(t *testing.T, s store.Store) {
	ctx := context.Background()
	f := newFixture()
	acct := f.account()
	start, err := s.Revision(ctx)
	must(t, err)
	const writers, each = 6, 20 // each writer: one create, then updates
	total := writers * each

	var mu sync.Mutex
	versions := map[string][]int64{} // record -> versions its writes returned, in order
	var wg sync.WaitGroup
	for range writers {
		r := f.record(kindA, acct)
		wg.Go(func() {
			if err := s.Create(ctx, r); err != nil {
				t.Errorf("Create: %v", err)
				return
			}
			got, err := s.Get(ctx, kindA, acct, r.ID)
			if err != nil {
				t.Errorf("Get: %v", err)
				return
			}
			vs := []int64{got.Version}
			for i := 1; i < each; i++ {
				u, err := s.Update(ctx, kindA, acct, r.ID, func(rec *store.Record) error { rec.Data = doc(r.ID, i); return nil })
				if err != nil {
					t.Errorf("Update: %v", err)
					return
				}
				vs = append(vs, u.Version)
			}
			mu.Lock()
			versions[r.ID] = vs
			mu.Unlock()
		})
	}

	followed := make(chan []store.Change, 1)
	go func() {
		var seen []store.Change
		rev := start
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second) // a bound on a hung test
		defer cancel()
		for len(seen) < total {
			if err := s.Wait(wctx, rev); err != nil {
				break
			}
			page, err := s.Changes(ctx, rev, 50, store.WithoutData)
			if err != nil {
				break
			}
			for _, c := range page {
				seen = append(seen, c)
				rev = c.Revision
			}
		}
		followed <- seen
	}()
	wg.Wait()
	seen := <-followed
	if len(seen) != total {
		t.Fatalf("the follower saw %d changes, want %d", len(seen), total)
	}
	perRecord := map[string][]int64{}
	for i, c := range seen {
		if c.Revision != start+int64(i)+1 {
			t.Fatalf("change %d has revision %d, want %d: a gap or a repeat", i, c.Revision, start+int64(i)+1)
		}
		perRecord[c.ID] = append(perRecord[c.ID], c.Revision)
	}
	if diff := cmp.Diff(versions, perRecord); diff != "" {
		t.Errorf("per-record revisions in the feed differ from the versions the writes returned (-writes +feed):\n%s", diff)
	}
}

// testFeedWait: Wait returns at once for a revision already passed, wakes
// on the next commit, and ends with its context.
func testFeedWait(t *testing.T, s store.Store) {
	ctx := context.Background()
	f := newFixture()
	acct := f.account()
	create(t, s, f.record(kindA, acct))
	rev, err := s.Revision(ctx)
	must(t, err)
	if err := s.Wait(ctx, rev-1); err != nil {
		t.Errorf("Wait for a passed revision: %v", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.Wait(cancelled, rev); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait with a cancelled context: %v", err)
	}

	woke := make(chan error, 1)
	wctx, stop := context.WithTimeout(ctx, 30*time.Second) // a bound on a hung test
	defer stop()
	go func() { woke <- s.Wait(wctx, rev) }()
	select {
	case err := <-woke:
		t.Fatalf("Wait returned before any commit: %v", err)
	default:
	}
	create(t, s, f.record(kindA, acct))
	if err := <-woke; err != nil {
		t.Errorf("Wait did not wake on a commit: %v", err)
	}
}

// testFeedCompaction: a reader behind what the store holds is told to
// resync, never handed a gap; so is one ahead of the store.
func testFeedCompaction(t *testing.T, s store.Store) {
	ctx := context.Background()
	f := newFixture()
	acct := f.account()
	start, err := s.Revision(ctx)
	must(t, err)
	for range 5 {
		create(t, s, f.record(kindA, acct))
	}
	must(t, s.Compact(ctx, start+3))
	_, err = s.Changes(ctx, start+2, 10, store.WithData)
	var ce *store.CompactedError
	if !errors.As(err, &ce) || !errors.Is(err, apierr.ErrFailedPrecondition) || ce.After != start+2 || ce.Oldest != start+4 {
		t.Fatalf("Changes behind the compaction: %v, want a CompactedError (after %d, oldest %d)", err, start+2, start+4)
	}
	got := changesAfter(t, s, start+3)
	if len(got) != 2 || got[0].Revision != start+4 {
		t.Errorf("after the compaction the feed holds %d changes from %v", len(got), fmt.Sprint(briefs(got)))
	}
	rev, err := s.Revision(ctx)
	must(t, err)
	if _, err := s.Changes(ctx, rev+1, 10, store.WithData); !errors.As(err, &ce) {
		t.Errorf("Changes after a revision the store never had: %v, want a CompactedError", err)
	}
	must(t, s.Compact(ctx, start)) // compacting less than before is a no-op
	if _, err := s.Changes(ctx, start+2, 10, store.WithoutData); !errors.As(err, &ce) {
		t.Errorf("a smaller Compact brought back compacted changes: %v", err)
	}
}

// testConcurrentWritesWithFailures: many writers at once, a third of
// whose writes fail (a taken unique key, a callback's refusal, a stale
// version): each failed write fails alone, with its own error, and leaves
// nothing; every other write is there, and the feed holds exactly those,
// at consecutive revisions. A store that commits concurrent writes
// together (group commit) must undo a failed one without the others.
func testConcurrentWritesWithFailures(t *testing.T, s store.Store) {
	ctx := context.Background()
	f := newFixture()
	acct := f.account()
	taken := f.record(kindA, acct)
	taken.Keys = []string{"key:taken"}
	held := f.record(kindA, acct)
	create(t, s, taken, held)
	start, err := s.Revision(ctx)
	must(t, err)

	const writers = 48
	var (
		mu      sync.Mutex
		created []string
		updates int
	)
	refused := errors.New("refused by the callback")
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			switch i % 6 {
			case 0, 1, 2: // a create that succeeds
				r := f.record(kindB, acct)
				r.Keys = []string{"key:" + r.ID}
				if err := s.Create(ctx, r); err != nil {
					t.Errorf("create %s: %v", r.ID, err)
					return
				}
				mu.Lock()
				created = append(created, r.ID)
				mu.Unlock()
			case 3: // a taken unique key
				r := f.record(kindB, acct)
				r.Keys = []string{"key:taken"}
				var de *store.DuplicateError
				if err := s.Create(ctx, r); !errors.As(err, &de) {
					t.Errorf("create with a taken key: %v; want a key conflict", err)
				}
				if _, err := s.Get(ctx, kindB, acct, r.ID); !errors.Is(err, apierr.ErrNotFound) {
					t.Errorf("the refused create %s is there: %v", r.ID, err)
				}
			case 4: // a callback that refuses
				if _, err := s.Update(ctx, kindA, acct, held.ID, func(*store.Record) error { return refused }); !errors.Is(err, refused) {
					t.Errorf("a refusing update: %v; want its callback's error", err)
				}
			case 5: // an update that succeeds
				if _, err := s.Update(ctx, kindA, acct, held.ID, func(r *store.Record) error { r.Data = doc("held", i); return nil }); err != nil {
					t.Errorf("update: %v", err)
					return
				}
				mu.Lock()
				updates++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	got := changesAfter(t, s, start)
	if want := len(created) + updates; len(got) != want {
		t.Fatalf("%d changes after %d successful writes: %+v", len(got), want, briefs(got))
	}
	for i, c := range got {
		if c.Revision != start+int64(i)+1 {
			t.Fatalf("change %d at revision %d; want %d (consecutive)", i, c.Revision, start+int64(i)+1)
		}
	}
	for _, id := range created {
		if _, err := s.Get(ctx, kindB, acct, id); err != nil {
			t.Errorf("created %s: %v", id, err)
		}
	}
	if rev, err := s.Revision(ctx); err != nil || rev != start+int64(len(got)) {
		t.Errorf("revision %d, %v; want %d", rev, err, start+int64(len(got)))
	}
}
