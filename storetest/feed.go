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
		page, err := s.Changes(context.Background(), rev, 7)
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
	Op               store.Op
	Kind             store.Kind
	ID, Parent, Note string
	Data             string
}

func briefs(cs []store.Change) []brief {
	out := make([]brief, len(cs))
	for i, c := range cs {
		out[i] = brief{c.Op, c.Kind, c.ID, c.ParentID, c.Note, string(c.Data)}
	}
	return out
}

// testFeedOrderAndContent: each committed write is one change, in commit
// order, with consecutive revisions that are the records' versions; a
// cascade shows every removed record, children first; notes follow the
// writes that carry them.
func testFeedOrderAndContent(t *testing.T, s store.Store) {
	ctx := context.Background()
	f := newFixture()
	acct := f.account()
	start, err := s.Revision(ctx)
	must(t, err)

	a := f.record(kindA, acct)
	must(t, s.Create(store.WithNote(ctx, "a created"), a))
	child := f.record(kindB, acct)
	child.ParentID = a.ID
	create(t, s, child)
	upd, err := s.Update(store.WithNote(ctx, "a updated"), kindA, acct, a.ID, func(r *store.Record) error { r.Data = doc("a2", 2); return nil })
	must(t, err)
	rep := upd.Clone()
	rep.Data = doc("a3", 3)
	replaced, err := s.Replace(ctx, rep)
	must(t, err)
	must(t, s.Delete(store.WithNote(ctx, "a deleted"), kindA, acct, a.ID))

	got := changesAfter(t, s, start)
	want := []brief{
		{store.OpCreate, kindA, a.ID, "", "a created", string(a.Data)},
		{store.OpCreate, kindB, child.ID, a.ID, "", string(child.Data)},
		{store.OpUpdate, kindA, a.ID, "", "a updated", string(doc("a2", 2))},
		{store.OpUpdate, kindA, a.ID, "", "", string(doc("a3", 3))},
		{store.OpDelete, kindB, child.ID, a.ID, "", string(child.Data)},
		{store.OpDelete, kindA, a.ID, "", "a deleted", string(doc("a3", 3))},
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
	if rev, err := s.Revision(ctx); err != nil || rev != got[len(got)-1].Revision {
		t.Errorf("Revision() = %d, %v; want the last change's %d", rev, err, got[len(got)-1].Revision)
	}
	// Returned changes are copies.
	again, err := s.Changes(ctx, start, 1)
	must(t, err)
	again[0].Data[0] = 'X'
	if fresh := changesAfter(t, s, start); string(fresh[0].Data) != string(a.Data) {
		t.Error("mutating a returned change changed the feed")
	}
	if _, err := s.Changes(ctx, start, 0); !errors.Is(err, apierr.ErrInvalidArgument) {
		t.Errorf("Changes with limit 0: %v, want invalid argument", err)
	}
	// Without data: the same changes, each Data nil or as it is with data.
	bare, err := s.Changes(store.WithoutData(ctx), start, len(got))
	must(t, err)
	if len(bare) != len(got) {
		t.Fatalf("Changes without data gave %d changes, want %d", len(bare), len(got))
	}
	for i, c := range bare {
		if c.Data == nil {
			c.Data = got[i].Data // left out, as it may be
		}
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
	if err := s.Delete(ctx, kindB, acct, target.ID); err == nil {
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
			page, err := s.Changes(ctx, rev, 50)
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
	_, err = s.Changes(ctx, start+2, 10)
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
	if _, err := s.Changes(ctx, rev+1, 10); !errors.As(err, &ce) {
		t.Errorf("Changes after a revision the store never had: %v, want a CompactedError", err)
	}
	must(t, s.Compact(ctx, start)) // compacting less than before is a no-op
	if _, err := s.Changes(ctx, start+2, 10); !errors.As(err, &ce) {
		t.Errorf("a smaller Compact brought back compacted changes: %v", err)
	}
}

// LeavesDataOut checks what a backend that honours [store.WithoutData]
// promises beyond the suite (which allows Data either way): under it,
// Changes leaves every change's Data nil, and without it fills them.
func LeavesDataOut(t *testing.T, s store.Store) {
	t.Helper()
	ctx := context.Background()
	f := newFixture()
	start, err := s.Revision(ctx)
	must(t, err)
	a := f.record(kindA, f.account())
	create(t, s, a)
	_, err = s.Update(ctx, kindA, a.AccountID, a.ID, func(r *store.Record) error { r.Data = doc("a2", 2); return nil })
	must(t, err)
	must(t, s.Delete(ctx, kindA, a.AccountID, a.ID))
	with, err := s.Changes(ctx, start, 10)
	must(t, err)
	without, err := s.Changes(store.WithoutData(ctx), start, 10)
	must(t, err)
	if len(with) != 3 || len(without) != 3 {
		t.Fatalf("%d changes with data, %d without; want 3 and 3", len(with), len(without))
	}
	for i := range with {
		if with[i].Data == nil || without[i].Data != nil {
			t.Errorf("change %d: Data %q with data, %q without; want it filled, then nil", i, with[i].Data, without[i].Data)
		}
	}
}
