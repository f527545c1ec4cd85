// Package storetest is the conformance suite of [store.Store]. Every
// backend proves itself by running it in a one-line test:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store { return memstore.New() })
//	}
//
// The suite checks CRUD, not-found, account isolation, unique keys,
// references and cascading deletes, newest-first ordering and complete
// paging under concurrent inserts and deletes, atomic concurrent updates,
// copy semantics and context cancellation; record versions, conditional
// writes (Replace) and Update built on them; secondary index queries
// (equality, below a bound, referrers) through updates and deletes; and
// the change feed: order,
// content and notes (the typed [store.Note] of a create, update, replace,
// delete and DeleteIf; never on a returned record), changes without data
// ([store.WithoutData]), cascades, no change for a failed write,
// completeness under concurrent writers, a waiting reader woken by a
// commit, and the resync error behind a compaction. For a backend that
// implements the optional [store.VersionLister] (skipped otherwise), it
// checks that ListVersions answers every List query with the same
// records' IDs and versions, and GetMany's selection, order, bound and
// account isolation.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/internal/ids"
	"github.com/edgeplane/edgeplane/store"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// Run runs the conformance suite. newStore must return a new, empty store
// for each call.
func Run(t *testing.T, newStore func(t *testing.T) store.Store) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"CRUD", testCRUD},
		{"NotFound", testNotFound},
		{"AccountIsolation", testAccountIsolation},
		{"DuplicateID", testDuplicateID},
		{"UniqueKeys", testUniqueKeys},
		{"References", testReferences},
		{"ParentCascade", testParentCascade},
		{"CascadeLeavesNoTrace", testCascadeLeavesNoTrace},
		{"ReferencesHeldByChildren", testReferencesHeldByChildren},
		{"UpdateCallbackError", testUpdateCallbackError},
		{"UpdateImmutableFields", testUpdateImmutableFields},
		{"OrderingAndPaging", testOrderingAndPaging},
		{"PagingUnderConcurrentInserts", testPagingUnderConcurrentInserts},
		{"DeleteWhileListing", testDeleteWhileListing},
		{"AtomicConcurrentUpdates", testAtomicConcurrentUpdates},
		{"Versions", testVersions},
		{"Replace", testReplace},
		{"ConcurrentUpdateByReplace", testConcurrentUpdateByReplace},
		{"DeleteIf", testDeleteIf},
		{"IndexEquality", testIndexEquality},
		{"IndexBelow", testIndexBelow},
		{"RefersTo", testRefersTo},
		{"Leases", testLeases},
		{"FeedOrderAndContent", testFeedOrderAndContent},
		{"FeedFailedWrites", testFeedFailedWrites},
		{"FeedConcurrentWriters", testFeedConcurrentWriters},
		{"ConcurrentWritesWithFailures", testConcurrentWritesWithFailures},
		{"FeedWait", testFeedWait},
		{"FeedCompaction", testFeedCompaction},
		{"ReturnedValuesAreCopies", testCopies},
		{"ContextCancellation", testContextCancellation},
		{"ListVersions", testListVersions},
		{"GetMany", testGetMany},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, newStore(t))
		})
	}
}

const (
	kindA store.Kind = "storetest_a"
	kindB store.Kind = "storetest_b"
)

// fixture makes time-ordered IDs and records.
type fixture struct {
	gen *ids.Generator
}

func newFixture() *fixture {
	return &fixture{gen: ids.NewGenerator(time.Now)}
}

func (f *fixture) account() string { return f.gen.New("acct_") }

func (f *fixture) record(kind store.Kind, account string) store.Record {
	id := f.gen.New("st_")
	return store.Record{Kind: kind, AccountID: account, ID: id, Data: doc(id, 0)}
}

type document struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
}

func doc(name string, n int) []byte {
	b, _ := json.Marshal(document{Name: name, Count: n})
	return b
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
}

func create(t *testing.T, s store.Store, recs ...store.Record) {
	t.Helper()
	for _, r := range recs {
		must(t, s.Create(context.Background(), r))
	}
}

// cmpRecord compares records as written: empty and nil slices alike, and
// the Version the store assigns left out (testVersions checks it).
var cmpRecord = cmp.Options{cmpopts.EquateEmpty(), cmpopts.IgnoreFields(store.Record{}, "Version")}

func wantNotFound(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, apierr.ErrNotFound) {
		t.Errorf("%s: got error %v, want not found", what, err)
	}
}

func testCRUD(t *testing.T, s store.Store) {
	ctx := context.Background()
	f := newFixture()
	acct := f.account()
	r := f.record(kindA, acct)
	r.Keys = []string{"k:" + r.ID}
	create(t, s, r)

	got, err := s.Get(ctx, kindA, acct, r.ID)
	must(t, err)
	if diff := cmp.Diff(r, got, cmpRecord); diff != "" {
		t.Errorf("Get after Create (-want +got):\n%s", diff)
	}
	got, err = s.Lookup(ctx, kindA, "k:"+r.ID)
	must(t, err)
	if got.ID != r.ID {
		t.Errorf("Lookup returned %s, want %s", got.ID, r.ID)
	}

	updated, err := s.Update(ctx, kindA, acct, r.ID, func(rec *store.Record) error {
		rec.Data = doc("renamed", 7)
		return nil
	})
	must(t, err)
	if string(updated.Data) != string(doc("renamed", 7)) {
		t.Errorf("Update returned data %s", updated.Data)
	}
	got, err = s.Get(ctx, kindA, acct, r.ID)
	must(t, err)
	if string(got.Data) != string(doc("renamed", 7)) {
		t.Errorf("Get after Update returned data %s", got.Data)
	}
	if !slices.Equal(got.Keys, r.Keys) {
		t.Errorf("Update that did not touch keys changed them to %v", got.Keys)
	}

	must(t, s.Delete(ctx, kindA, acct, r.ID, store.Note{}))
	_, err = s.Get(ctx, kindA, acct, r.ID)
	wantNotFound(t, "Get after Delete", err)
	_, err = s.Lookup(ctx, kindA, "k:"+r.ID)
	wantNotFound(t, "Lookup after Delete", err)
	list, err := s.List(ctx, store.Query{Kind: kindA, AccountID: acct, Limit: 10})
	must(t, err)
	if len(list) != 0 {
		t.Errorf("List after Delete returned %d records", len(list))
	}
}

func testNotFound(t *testing.T, s store.Store) {
	ctx := context.Background()
	f := newFixture()
	acct := f.account()
	r := f.record(kindA, acct)
	create(t, s, r)
	missing := f.gen.New("st_")

	_, err := s.Get(ctx, kindA, acct, missing)
	wantNotFound(t, "Get missing", err)
	_, err = s.Get(ctx, kindB, acct, r.ID)
	wantNotFound(t, "Get with another kind", err)
	_, err = s.Update(ctx, kindA, acct, missing, func(*store.Record) error { return nil })
	wantNotFound(t, "Update missing", err)
	_, err = s.Update(ctx, kindB, acct, r.ID, func(*store.Record) error { return nil })
	wantNotFound(t, "Update with another kind", err)
	wantNotFound(t, "Delete missing", s.Delete(ctx, kindA, acct, missing, store.Note{}))
	wantNotFound(t, "Delete with another kind", s.Delete(ctx, kindB, acct, r.ID, store.Note{}))
	_, err = s.Lookup(ctx, kindA, "no such key")
	wantNotFound(t, "Lookup missing", err)
	if _, err := s.Get(ctx, kindA, acct, r.ID); err != nil {
		t.Errorf("record damaged by failed calls: %v", err)
	}
}

func testAccountIsolation(t *testing.T, s store.Store) {
	ctx := context.Background()
	f := newFixture()
	a, b := f.account(), f.account()
	ra := f.record(kindA, a)
	ra.Keys = []string{"iso:" + ra.ID}
	create(t, s, ra, f.record(kindA, b))

	_, err := s.Get(ctx, kindA, b, ra.ID)
	wantNotFound(t, "Get from another account", err)
	called := false
	_, err = s.Update(ctx, kindA, b, ra.ID, func(*store.Record) error { called = true; return nil })
	wantNotFound(t, "Update from another account", err)
	if called {
		t.Error("Update ran its callback on another account's record")
	}
	wantNotFound(t, "Delete from another account", s.Delete(ctx, kindA, b, ra.ID, store.Note{}))
	list, err := s.List(ctx, store.Query{Kind: kindA, AccountID: b, Limit: 100})
	must(t, err)
	for _, r := range list {
		if r.AccountID != b {
			t.Errorf("List for account %s returned a record of %s", b, r.AccountID)
		}
	}
	if len(list) != 1 {
		t.Errorf("List for account b returned %d records, want 1", len(list))
	}
	// A reference to another account's record is a missing reference.
	rb := f.record(kindA, b)
	rb.Refs = []string{ra.ID}
	var miss *store.MissingRefError
	if err := s.Create(ctx, rb); !errors.As(err, &miss) || miss.ID != ra.ID {
		t.Errorf("Create referencing another account's record: got %v, want MissingRefError for %s", err, ra.ID)
	}
	// So is a parent in another account.
	rc := f.record(kindA, b)
	rc.ParentID = ra.ID
	if err := s.Create(ctx, rc); !errors.As(err, &miss) || miss.ID != ra.ID {
		t.Errorf("Create under another account's parent: got %v, want MissingRefError", err)
	}
	// Every-account listing sees both.
	all, err := s.List(ctx, store.Query{Kind: kindA, Limit: 100})
	must(t, err)
	if len(all) != 2 {
		t.Errorf("List across accounts returned %d records, want 2", len(all))
	}
	if _, err := s.Get(ctx, kindA, a, ra.ID); err != nil {
		t.Errorf("owner lost its record: %v", err)
	}
}

func testDuplicateID(t *testing.T, s store.Store) {
	f := newFixture()
	r := f.record(kindA, f.account())
	create(t, s, r)
	dup := r
	dup.Data = doc("other", 1)
	var de *store.DuplicateError
	if err := s.Create(context.Background(), dup); !errors.As(err, &de) || !errors.Is(err, apierr.ErrConflict) {
		t.Errorf("Create with a taken ID: got %v, want DuplicateError/conflict", err)
	}
	got, err := s.Get(context.Background(), kindA, r.AccountID, r.ID)
	must(t, err)
	if string(got.Data) != string(r.Data) {
		t.Error("failed Create overwrote the record")
	}
}

func testUniqueKeys(t *testing.T, s store.Store) {
	ctx := context.Background()
	f := newFixture()
	a, b := f.account(), f.account()
	r1 := f.record(kindA, a)
	r1.Keys = []string{"domain:example.com"}
	create(t, s, r1)

	// Keys are unique across accounts and kinds.
	r2 := f.record(kindB, b)
	r2.Keys = []string{"domain:example.com"}
	var de *store.DuplicateError
	if err := s.Create(ctx, r2); !errors.As(err, &de) || de.Key != "domain:example.com" {
		t.Fatalf("Create with a taken key: got %v, want DuplicateError", err)
	}
	if _, err := s.Get(ctx, kindB, b, r2.ID); !errors.Is(err, apierr.ErrNotFound) {
		t.Errorf("failed Create left a record behind: %v", err)
	}
	// Lookup checks the kind.
	_, err := s.Lookup(ctx, kindB, "domain:example.com")
	wantNotFound(t, "Lookup with another kind", err)

	// Updating a record to a taken key fails and changes nothing.
	r3 := f.record(kindA, a)
	r3.Keys = []string{"domain:other.example"}
	create(t, s, r3)
	_, err = s.Update(ctx, kindA, a, r3.ID, func(rec *store.Record) error {
		rec.Keys = []string{"domain:example.com"}
		rec.Data = doc("changed", 1)
		return nil
	})
	if !errors.As(err, &de) {
		t.Errorf("Update to a taken key: got %v, want DuplicateError", err)
	}
	got, err := s.Lookup(ctx, kindA, "domain:other.example")
	must(t, err)
	if got.ID != r3.ID || string(got.Data) != string(r3.Data) {
		t.Error("failed Update changed the record")
	}

	// Moving a key frees the old one.
	_, err = s.Update(ctx, kindA, a, r1.ID, func(rec *store.Record) error {
		rec.Keys = []string{"domain:moved.example"}
		return nil
	})
	must(t, err)
	_, err = s.Lookup(ctx, kindA, "domain:example.com")
	wantNotFound(t, "Lookup of a released key", err)
	r2.Keys = []string{"domain:example.com"}
	must(t, s.Create(ctx, r2))
	// A record may keep its own key across updates.
	_, err = s.Update(ctx, kindB, b, r2.ID, func(rec *store.Record) error { return nil })
	must(t, err)
	// Duplicate keys within one record are refused.
	r4 := f.record(kindA, a)
	r4.Keys = []string{"x:1", "x:1"}
	if err := s.Create(ctx, r4); !errors.As(err, &de) {
		t.Errorf("Create with the same key twice: got %v, want DuplicateError", err)
	}
}

func testReferences(t *testing.T, s store.Store) {
	ctx := context.Background()
	f := newFixture()
	acct := f.account()
	target := f.record(kindA, acct)
	other := f.record(kindA, acct)
	create(t, s, target, other)

	missing := f.gen.New("st_")
	ref := f.record(kindB, acct)
	ref.Refs = []string{target.ID, missing}
	var miss *store.MissingRefError
	if err := s.Create(ctx, ref); !errors.As(err, &miss) || miss.ID != missing {
		t.Fatalf("Create with a missing reference: got %v, want MissingRefError for %s", err, missing)
	}
	ref.Refs = []string{target.ID}
	create(t, s, ref)

	var inUse *store.InUseError
	err := s.Delete(ctx, kindA, acct, target.ID, store.Note{})
	if !errors.As(err, &inUse) || !errors.Is(err, apierr.ErrConflict) {
		t.Fatalf("Delete of a referenced record: got %v, want InUseError", err)
	}
	if inUse.ID != target.ID || !slices.Equal(inUse.Referrers, []string{ref.ID}) {
		t.Errorf("InUseError = %+v, want ID %s referrers [%s]", inUse, target.ID, ref.ID)
	}
	if _, err := s.Get(ctx, kindA, acct, target.ID); err != nil {
		t.Errorf("refused Delete removed the record: %v", err)
	}

	// Moving the reference releases the old target atomically.
	_, err = s.Update(ctx, kindB, acct, ref.ID, func(rec *store.Record) error {
		rec.Refs = []string{other.ID}
		return nil
	})
	must(t, err)
	must(t, s.Delete(ctx, kindA, acct, target.ID, store.Note{}))
	if err := s.Delete(ctx, kindA, acct, other.ID, store.Note{}); !errors.As(err, &inUse) {
		t.Errorf("Delete of the new target: got %v, want InUseError", err)
	}
	// An update to a missing reference fails and keeps the old one.
	_, err = s.Update(ctx, kindB, acct, ref.ID, func(rec *store.Record) error {
		rec.Refs = []string{missing}
		return nil
	})
	if !errors.As(err, &miss) {
		t.Errorf("Update to a missing reference: got %v, want MissingRefError", err)
	}
	got, err := s.Get(ctx, kindB, acct, ref.ID)
	must(t, err)
	if !slices.Equal(got.Refs, []string{other.ID}) {
		t.Errorf("failed Update changed refs to %v", got.Refs)
	}
	// Deleting the referrer frees the target.
	must(t, s.Delete(ctx, kindB, acct, ref.ID, store.Note{}))
	must(t, s.Delete(ctx, kindA, acct, other.ID, store.Note{}))
}

func testParentCascade(t *testing.T, s store.Store) {
	ctx := context.Background()
	f := newFixture()
	acct := f.account()
	parent := f.record(kindA, acct)
	create(t, s, parent)

	orphan := f.record(kindB, acct)
	orphan.ParentID = f.gen.New("st_")
	var miss *store.MissingRefError
	if err := s.Create(ctx, orphan); !errors.As(err, &miss) {
		t.Errorf("Create under a missing parent: got %v, want MissingRefError", err)
	}

	child := f.record(kindB, acct)
	child.ParentID = parent.ID
	child.Keys = []string{"child-key"}
	grandchild := f.record(kindB, acct)
	grandchild.ParentID = child.ID
	sibling := f.record(kindB, acct) // no parent
	create(t, s, child, grandchild, sibling)

	kids, err := s.List(ctx, store.Query{Kind: kindB, AccountID: acct, ParentID: parent.ID, Limit: 10})
	must(t, err)
	if len(kids) != 1 || kids[0].ID != child.ID {
		t.Errorf("List by parent returned %v, want [%s]", recordIDs(kids), child.ID)
	}

	// A child referenced from outside the subtree blocks the cascade.
	outside := f.record(kindA, acct)
	outside.Refs = []string{grandchild.ID}
	create(t, s, outside)
	var inUse *store.InUseError
	if err := s.Delete(ctx, kindA, acct, parent.ID, store.Note{}); !errors.As(err, &inUse) || inUse.ID != grandchild.ID {
		t.Fatalf("Delete of a parent whose descendant is referenced: got %v, want InUseError for %s", err, grandchild.ID)
	}
	for _, id := range []string{parent.ID, child.ID, grandchild.ID} {
		if _, err := s.Get(ctx, kindOf(id, parent.ID), acct, id); err != nil {
			t.Errorf("refused cascade removed %s: %v", id, err)
		}
	}
	must(t, s.Delete(ctx, kindA, acct, outside.ID, store.Note{}))

	must(t, s.Delete(ctx, kindA, acct, parent.ID, store.Note{}))
	for _, id := range []string{child.ID, grandchild.ID} {
		_, err := s.Get(ctx, kindB, acct, id)
		wantNotFound(t, "descendant after cascade", err)
	}
	_, err = s.Lookup(ctx, kindB, "child-key")
	wantNotFound(t, "descendant's key after cascade", err)
	if _, err := s.Get(ctx, kindB, acct, sibling.ID); err != nil {
		t.Errorf("cascade removed an unrelated record: %v", err)
	}
	list, err := s.List(ctx, store.Query{Kind: kindB, AccountID: acct, Limit: 10})
	must(t, err)
	if len(list) != 1 {
		t.Errorf("List after cascade returned %v, want only the sibling", recordIDs(list))
	}
}

// testCascadeLeavesNoTrace: a cascade that removes a parent, its child
// and a grandchild that references the child leaves nothing of them
// behind. Records created after it (which an in-memory store may put
// where the removed ones were) have no children, no referrers, and
// delete alone. The cascade's order among the descendants may differ
// from run to run (the in-memory store's does), so it runs several times.
func testCascadeLeavesNoTrace(t *testing.T, s store.Store) {
	ctx := context.Background()
	f := newFixture()
	acct := f.account()
	for range 8 {
		parent := f.record(kindA, acct)
		child := f.record(kindB, acct)
		child.ParentID = parent.ID
		grandchild := f.record(kindB, acct)
		grandchild.ParentID = child.ID
		grandchild.Refs = []string{child.ID}
		create(t, s, parent, child, grandchild)
		must(t, s.Delete(ctx, kindA, acct, parent.ID, store.Note{}))

		fresh := []store.Record{f.record(kindA, acct), f.record(kindB, acct), f.record(kindB, acct)}
		create(t, s, fresh...)
		for i, r := range fresh {
			for _, q := range []store.Query{
				{Kind: kindB, AccountID: acct, ParentID: r.ID, Limit: 10},
				{Kind: kindB, AccountID: acct, RefersTo: r.ID, Limit: 10},
			} {
				got, err := s.List(ctx, q)
				must(t, err)
				if len(got) != 0 {
					t.Fatalf("a record created after a cascade has children or referrers: %v", recordIDs(got))
				}
			}
			must(t, s.Delete(ctx, r.Kind, acct, r.ID, store.Note{}))
			for _, rest := range fresh[i+1:] {
				if _, err := s.Get(ctx, rest.Kind, acct, rest.ID); err != nil {
					t.Fatalf("deleting %s removed %s too: %v", r.ID, rest.ID, err)
				}
			}
		}
	}
}

// testReferencesHeldByChildren is how the Service stores edge modules: a
// child record (a route under its edge) whose Refs change by Update. A
// refused Update keeps the old references; deleting the parent releases
// the references its descendants held, in the same step.
func testReferencesHeldByChildren(t *testing.T, s store.Store) {
	ctx := context.Background()
	f := newFixture()
	acct := f.account()
	target, other := f.record(kindA, acct), f.record(kindA, acct)
	parent := f.record(kindA, acct)
	create(t, s, target, other, parent)
	child := f.record(kindB, acct)
	child.ParentID = parent.ID
	create(t, s, child)

	setRefs := func(refs []string, fail error) error {
		_, err := s.Update(ctx, kindB, acct, child.ID, func(rec *store.Record) error {
			rec.Refs = refs
			rec.Data = doc("modules", len(refs))
			return fail
		})
		return err
	}
	must(t, setRefs([]string{target.ID, other.ID}, nil))
	var inUse *store.InUseError
	if err := s.Delete(ctx, kindA, acct, target.ID, store.Note{}); !errors.As(err, &inUse) || !slices.Equal(inUse.Referrers, []string{child.ID}) {
		t.Fatalf("Delete of a record a child references: got %v, want InUseError naming the child", err)
	}
	// A failed callback changes no reference.
	boom := errors.New("boom")
	if err := setRefs(nil, boom); !errors.Is(err, boom) {
		t.Fatalf("Update with a failing callback: %v", err)
	}
	if err := s.Delete(ctx, kindA, acct, other.ID, store.Note{}); !errors.As(err, &inUse) {
		t.Errorf("a failed Update released a reference: Delete returned %v", err)
	}
	// Dropping one reference releases only it.
	must(t, setRefs([]string{target.ID}, nil))
	must(t, s.Delete(ctx, kindA, acct, other.ID, store.Note{}))
	if err := s.Delete(ctx, kindA, acct, target.ID, store.Note{}); !errors.As(err, &inUse) {
		t.Errorf("Delete of a still-referenced record: got %v, want InUseError", err)
	}
	// Deleting the parent deletes the child and releases what it held.
	must(t, s.Delete(ctx, kindA, acct, parent.ID, store.Note{}))
	must(t, s.Delete(ctx, kindA, acct, target.ID, store.Note{}))
}

func kindOf(id, parentID string) store.Kind {
	if id == parentID {
		return kindA
	}
	return kindB
}

func testUpdateCallbackError(t *testing.T, s store.Store) {
	ctx := context.Background()
	f := newFixture()
	r := f.record(kindA, f.account())
	create(t, s, r)
	boom := errors.New("boom")
	_, err := s.Update(ctx, kindA, r.AccountID, r.ID, func(rec *store.Record) error {
		rec.Data = doc("changed", 99)
		rec.Keys = []string{"new-key"}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Errorf("Update returned %v, want the callback's error", err)
	}
	got, err := s.Get(ctx, kindA, r.AccountID, r.ID)
	must(t, err)
	if string(got.Data) != string(r.Data) || len(got.Keys) != 0 {
		t.Error("Update whose callback failed changed the record")
	}
	_, err = s.Lookup(ctx, kindA, "new-key")
	wantNotFound(t, "key from a failed update", err)
}

func testUpdateImmutableFields(t *testing.T, s store.Store) {
	ctx := context.Background()
	f := newFixture()
	r := f.record(kindA, f.account())
	create(t, s, r)
	mutations := map[string]func(*store.Record){
		"kind":    func(rec *store.Record) { rec.Kind = kindB },
		"account": func(rec *store.Record) { rec.AccountID = "acct_other" },
		"id":      func(rec *store.Record) { rec.ID = "st_other" },
		"parent":  func(rec *store.Record) { rec.ParentID = "st_parent" },
	}
	for name, mutate := range mutations {
		_, err := s.Update(ctx, kindA, r.AccountID, r.ID, func(rec *store.Record) error {
			mutate(rec)
			return nil
		})
		if err == nil {
			t.Errorf("Update changing the %s succeeded", name)
		}
	}
	got, err := s.Get(ctx, kindA, r.AccountID, r.ID)
	must(t, err)
	if diff := cmp.Diff(r, got, cmpRecord); diff != "" {
		t.Errorf("record changed (-want +got):\n%s", diff)
	}
}

func recordIDs(recs []store.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.ID
	}
	return out
}

// walk pages through q with the given page size and returns every ID.
func walk(t *testing.T, s store.Store, q store.Query, pageSize int) []string {
	t.Helper()
	var out []string
	q.Limit = pageSize
	for {
		page, err := s.List(context.Background(), q)
		must(t, err)
		if len(page) > pageSize {
			t.Fatalf("List returned %d records for limit %d", len(page), pageSize)
		}
		out = append(out, recordIDs(page)...)
		if len(page) < pageSize {
			return out
		}
		q.BeforeID = page[len(page)-1].ID
	}
}

func testOrderingAndPaging(t *testing.T, s store.Store) {
	f := newFixture()
	acct := f.account()
	var want []string
	for range 57 {
		r := f.record(kindA, acct)
		create(t, s, r)
		want = append(want, r.ID)
		create(t, s, f.record(kindB, acct), f.record(kindA, f.account())) // noise
	}
	slices.Reverse(want)
	for _, size := range []int{1, 7, 57, 100} {
		got := walk(t, s, store.Query{Kind: kindA, AccountID: acct}, size)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("paging with limit %d (-want +got):\n%s", size, diff)
		}
	}
	// A cursor that is not a stored ID still pages correctly.
	mid := want[20]
	page, err := s.List(context.Background(), store.Query{Kind: kindA, AccountID: acct, BeforeID: mid + "0", Limit: 3})
	must(t, err)
	if diff := cmp.Diff(want[20:23], recordIDs(page)); diff != "" {
		t.Errorf("list before a non-stored cursor (-want +got):\n%s", diff)
	}
}

func testPagingUnderConcurrentInserts(t *testing.T, s store.Store) {
	f := newFixture()
	acct := f.account()
	var before []string
	for range 200 {
		r := f.record(kindA, acct)
		create(t, s, r)
		before = append(before, r.ID)
	}
	slices.Reverse(before)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := s.Create(context.Background(), f.record(kindA, acct)); err != nil {
					t.Errorf("concurrent Create: %v", err)
					return
				}
			}
		}()
	}
	got := walk(t, s, store.Query{Kind: kindA, AccountID: acct}, 9)
	close(stop)
	wg.Wait()

	if !slices.IsSortedFunc(got, func(a, b string) int { return -compare(a, b) }) {
		t.Error("paging under inserts is not strictly newest first")
	}
	seen := make(map[string]int)
	for _, id := range got {
		seen[id]++
	}
	for _, id := range before {
		if seen[id] != 1 {
			t.Errorf("record %s that existed throughout was seen %d times", id, seen[id])
		}
	}
	for id, n := range seen {
		if n > 1 {
			t.Errorf("record %s seen %d times", id, n)
		}
	}
}

func compare(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func testDeleteWhileListing(t *testing.T, s store.Store) {
	f := newFixture()
	acct := f.account()
	var all []string
	for range 300 {
		r := f.record(kindA, acct)
		create(t, s, r)
		all = append(all, r.ID)
	}
	// Delete every third record concurrently with the walk.
	doomed := make(map[string]bool)
	for i := 0; i < len(all); i += 3 {
		doomed[all[i]] = true
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < len(all); i += 3 {
			if err := s.Delete(context.Background(), kindA, acct, all[i], store.Note{}); err != nil {
				t.Errorf("concurrent Delete: %v", err)
			}
		}
	}()
	got := walk(t, s, store.Query{Kind: kindA, AccountID: acct}, 11)
	wg.Wait()

	seen := make(map[string]int)
	for _, id := range got {
		seen[id]++
	}
	for _, id := range all {
		if !doomed[id] && seen[id] != 1 {
			t.Errorf("surviving record %s seen %d times", id, seen[id])
		}
		if seen[id] > 1 {
			t.Errorf("record %s seen %d times", id, seen[id])
		}
	}
	final := walk(t, s, store.Query{Kind: kindA, AccountID: acct}, 100)
	if len(final) != len(all)-len(doomed) {
		t.Errorf("after deletes, list has %d records, want %d", len(final), len(all)-len(doomed))
	}
}

func testAtomicConcurrentUpdates(t *testing.T, s store.Store) {
	f := newFixture()
	r := f.record(kindA, f.account())
	create(t, s, r)
	const workers, each = 8, 50
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				_, err := s.Update(context.Background(), kindA, r.AccountID, r.ID, func(rec *store.Record) error {
					var d document
					if err := json.Unmarshal(rec.Data, &d); err != nil {
						return err
					}
					d.Count++
					rec.Data, _ = json.Marshal(d)
					return nil
				})
				if err != nil {
					t.Errorf("Update: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	got, err := s.Get(context.Background(), kindA, r.AccountID, r.ID)
	must(t, err)
	var d document
	must(t, json.Unmarshal(got.Data, &d))
	if d.Count != workers*each {
		t.Errorf("after %d concurrent increments the count is %d: updates were lost", workers*each, d.Count)
	}
}

func testCopies(t *testing.T, s store.Store) {
	ctx := context.Background()
	f := newFixture()
	acct := f.account()
	target := f.record(kindB, acct)
	create(t, s, target)
	r := f.record(kindA, acct)
	r.Keys = []string{"copy-key"}
	r.Refs = []string{target.ID}
	original := r.Clone()
	create(t, s, r)

	// Mutating what was passed to Create does not reach the store.
	r.Data[0] = 'X'
	r.Keys[0] = "mutated"
	r.Refs[0] = "mutated"
	assertStored := func(when string) {
		t.Helper()
		got, err := s.Get(ctx, kindA, acct, original.ID)
		must(t, err)
		if diff := cmp.Diff(original, got, cmpRecord); diff != "" {
			t.Errorf("%s changed the stored record (-want +got):\n%s", when, diff)
		}
	}
	assertStored("mutating the Create argument")

	// Mutating what Get, Lookup and List return does not either.
	got, err := s.Get(ctx, kindA, acct, original.ID)
	must(t, err)
	got.Data[0], got.Keys[0], got.Refs[0] = 'Y', "y", "y"
	assertStored("mutating a Get result")
	got, err = s.Lookup(ctx, kindA, "copy-key")
	must(t, err)
	got.Data[0], got.Keys[0] = 'Z', "z"
	assertStored("mutating a Lookup result")
	list, err := s.List(ctx, store.Query{Kind: kindA, AccountID: acct, Limit: 1})
	must(t, err)
	list[0].Data[0] = 'W'
	assertStored("mutating a List result")

	// Slices kept by an Update callback or returned by Update are copies.
	var kept *store.Record
	res, err := s.Update(ctx, kindA, acct, original.ID, func(rec *store.Record) error {
		kept = rec
		return nil
	})
	must(t, err)
	kept.Data[0], res.Data[0] = 'V', 'U'
	assertStored("mutating what Update handed out")
}

func testContextCancellation(t *testing.T, s store.Store) {
	f := newFixture()
	acct := f.account()
	existing := f.record(kindA, acct)
	create(t, s, existing)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()

	fresh := f.record(kindA, acct)
	checks := map[string]error{
		"Create": s.Create(ctx, fresh),
		"Delete": s.Delete(ctx, kindA, acct, existing.ID, store.Note{}),
	}
	_, checks["Get"] = s.Get(ctx, kindA, acct, existing.ID)
	_, checks["Lookup"] = s.Lookup(ctx, kindA, "any")
	_, checks["List"] = s.List(ctx, store.Query{Kind: kindA, AccountID: acct, Limit: 1})
	_, checks["Replace"] = s.Replace(ctx, existing)
	checks["DeleteIf"] = s.DeleteIf(ctx, kindA, acct, existing.ID, 1, store.Note{})
	called := false
	_, checks["Update"] = s.Update(ctx, kindA, acct, existing.ID, func(*store.Record) error {
		called = true
		return nil
	})
	for name, err := range checks {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled context returned %v, want context.Canceled", name, err)
		}
	}
	if called {
		t.Error("Update with a cancelled context ran its callback")
	}
	bg := context.Background()
	if _, err := s.Get(bg, kindA, acct, fresh.ID); !errors.Is(err, apierr.ErrNotFound) {
		t.Errorf("Create with a cancelled context stored the record: %v", err)
	}
	if _, err := s.Get(bg, kindA, acct, existing.ID); err != nil {
		t.Errorf("Delete with a cancelled context removed the record: %v", err)
	}
}

// testVersions: every write gives the record a new, greater version, from
// one store-wide sequence; reads report the version of the last write.
func testVersions(t *testing.T, s store.Store) {
	ctx := context.Background()
	f := newFixture()
	acct := f.account()
	a, b := f.record(kindA, acct), f.record(kindB, acct)
	create(t, s, a)
	ga, err := s.Get(ctx, kindA, acct, a.ID)
	must(t, err)
	if ga.Version <= 0 {
		t.Fatalf("a created record has version %d, want > 0", ga.Version)
	}
	create(t, s, b)
	gb, err := s.Get(ctx, kindB, acct, b.ID)
	must(t, err)
	if gb.Version <= ga.Version {
		t.Errorf("a later create of another record has version %d, not above %d", gb.Version, ga.Version)
	}
	upd, err := s.Update(ctx, kindA, acct, a.ID, func(r *store.Record) error { r.Data = doc("v2", 2); return nil })
	must(t, err)
	if upd.Version <= gb.Version {
		t.Errorf("an update returned version %d, not above the store's last write %d", upd.Version, gb.Version)
	}
	// An update that changes nothing is still a write.
	same, err := s.Update(ctx, kindA, acct, a.ID, func(*store.Record) error { return nil })
	must(t, err)
	if same.Version <= upd.Version {
		t.Errorf("an update that changed nothing kept version %d (previous %d)", same.Version, upd.Version)
	}
	for what, read := range map[string]func() (store.Record, error){
		"Get": func() (store.Record, error) { return s.Get(ctx, kindA, acct, a.ID) },
		"List": func() (store.Record, error) {
			l, err := s.List(ctx, store.Query{Kind: kindA, AccountID: acct, Limit: 1})
			return l[0], err
		},
	} {
		got, err := read()
		must(t, err)
		if got.Version != same.Version {
			t.Errorf("%s reports version %d, want %d (the last write's)", what, got.Version, same.Version)
		}
	}
	// A failed update is not a write.
	_, err = s.Update(ctx, kindA, acct, a.ID, func(*store.Record) error { return errors.New("no") })
	if err == nil {
		t.Fatal("a failing callback did not fail the update")
	}
	got, err := s.Get(ctx, kindA, acct, a.ID)
	must(t, err)
	if got.Version != same.Version {
		t.Errorf("a failed update changed the version to %d", got.Version)
	}
	// The version given to Create is ignored.
	c := f.record(kindA, acct)
	c.Version = 1 << 40
	create(t, s, c)
	gc, err := s.Get(ctx, kindA, acct, c.ID)
	must(t, err)
	if gc.Version == c.Version || gc.Version <= got.Version {
		t.Errorf("create kept the caller's version or went backwards: %d", gc.Version)
	}
}

// testReplace: a conditional write succeeds only at the version read, and
// a stale one changes nothing.
func testReplace(t *testing.T, s store.Store) {
	ctx := context.Background()
	f := newFixture()
	acct := f.account()
	target := f.record(kindB, acct)
	other := f.record(kindA, acct)
	other.Keys = []string{"taken:" + other.ID}
	r := f.record(kindA, acct)
	create(t, s, target, other, r)
	read, err := s.Get(ctx, kindA, acct, r.ID)
	must(t, err)

	next := read.Clone()
	next.Data, next.Keys, next.Refs = doc("replaced", 1), []string{"k:" + r.ID}, []string{target.ID}
	out, err := s.Replace(ctx, next)
	must(t, err)
	if out.Version <= read.Version || string(out.Data) != string(doc("replaced", 1)) {
		t.Errorf("Replace returned version %d data %s", out.Version, out.Data)
	}
	if got, err := s.Lookup(ctx, kindA, "k:"+r.ID); err != nil || got.ID != r.ID {
		t.Errorf("the replaced keys are not looked up: %v, %v", got.ID, err)
	}
	if err := s.Delete(ctx, kindB, acct, target.ID, store.Note{}); !errors.Is(err, apierr.ErrConflict) {
		t.Errorf("the replaced refs do not hold: deleting the target gave %v", err)
	}

	// The version first read is stale now.
	stale := read.Clone()
	stale.Data = doc("stale", 9)
	_, err = s.Replace(ctx, stale)
	var ve *store.VersionError
	if !errors.As(err, &ve) || !errors.Is(err, apierr.ErrConflict) || ve.ID != r.ID || ve.Want != read.Version || ve.Have != out.Version {
		t.Fatalf("Replace at a stale version: %v, want a VersionError (want %d, have %d) that is a conflict", err, read.Version, out.Version)
	}
	got, err := s.Get(ctx, kindA, acct, r.ID)
	must(t, err)
	if diff := cmp.Diff(out, got); diff != "" {
		t.Errorf("a failed Replace changed the record (-want +got):\n%s", diff)
	}

	// Key, reference and identity rules are Create's.
	for name, tc := range map[string]struct {
		edit func(*store.Record)
		want error
	}{
		"taken key":    {func(r *store.Record) { r.Keys = []string{"taken:" + other.ID} }, apierr.ErrConflict},
		"missing ref":  {func(r *store.Record) { r.Refs = []string{f.gen.New("st_")} }, apierr.ErrNotFound},
		"other parent": {func(r *store.Record) { r.ParentID = target.ID }, nil},
	} {
		rec := got.Clone()
		tc.edit(&rec)
		_, err := s.Replace(ctx, rec)
		if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Errorf("%s: Replace gave %v, want %v", name, err, tc.want)
		}
		after, err := s.Get(ctx, kindA, acct, r.ID)
		must(t, err)
		if after.Version != got.Version {
			t.Errorf("%s: a refused Replace changed the version", name)
		}
	}
	// Another account's or kind's record does not exist for Replace.
	for name, rec := range map[string]store.Record{
		"other account": {Kind: kindA, AccountID: f.account(), ID: r.ID, Version: got.Version},
		"other kind":    {Kind: kindB, AccountID: acct, ID: r.ID, Version: got.Version},
		"missing":       {Kind: kindA, AccountID: acct, ID: f.gen.New("st_"), Version: 1},
	} {
		_, err := s.Replace(ctx, rec)
		wantNotFound(t, "Replace of "+name, err)
	}
}

// testConcurrentUpdateByReplace: Update built on Replace loses no update
// under contention, and retries only as often as it is allowed.
func testConcurrentUpdateByReplace(t *testing.T, s store.Store) {
	f := newFixture()
	r := f.record(kindA, f.account())
	create(t, s, r)
	const workers, each = 8, 25
	var wg sync.WaitGroup
	var failed atomic.Int64
	for range workers {
		wg.Go(func() {
			for range each {
				_, err := store.UpdateByReplace(context.Background(), s, kindA, r.AccountID, r.ID, 1000, func(rec *store.Record) error {
					var d document
					if err := json.Unmarshal(rec.Data, &d); err != nil {
						return err
					}
					d.Count++
					rec.Data, _ = json.Marshal(d)
					return nil
				})
				if err != nil {
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if failed.Load() > 0 {
		t.Errorf("%d updates failed", failed.Load())
	}
	got, err := s.Get(context.Background(), kindA, r.AccountID, r.ID)
	must(t, err)
	var d document
	must(t, json.Unmarshal(got.Data, &d))
	if d.Count != workers*each {
		t.Errorf("after %d concurrent increments the count is %d: updates were lost", workers*each, d.Count)
	}

	// One attempt against a write that always comes between fails with
	// the VersionError.
	calls := 0
	_, err = store.UpdateByReplace(context.Background(), s, kindA, r.AccountID, r.ID, 1, func(rec *store.Record) error {
		calls++
		_, err := s.Update(context.Background(), kindA, r.AccountID, r.ID, func(*store.Record) error { return nil })
		return err
	})
	var ve *store.VersionError
	if !errors.As(err, &ve) || calls != 1 {
		t.Errorf("UpdateByReplace with one attempt against a racing write: %v after %d calls, want a VersionError after 1", err, calls)
	}
}

// testDeleteIf: a conditional delete removes the record (and its
// children) only at the version read.
func testDeleteIf(t *testing.T, s store.Store) {
	ctx := context.Background()
	f := newFixture()
	acct := f.account()
	r := f.record(kindA, acct)
	child := f.record(kindB, acct)
	child.ParentID = r.ID
	create(t, s, r, child)
	read, err := s.Get(ctx, kindA, acct, r.ID)
	must(t, err)
	_, err = s.Update(ctx, kindA, acct, r.ID, func(rec *store.Record) error { rec.Data = doc("moved on", 1); return nil })
	must(t, err)
	err = s.DeleteIf(ctx, kindA, acct, r.ID, read.Version, store.Note{})
	var ve *store.VersionError
	if !errors.As(err, &ve) || !errors.Is(err, apierr.ErrConflict) {
		t.Fatalf("DeleteIf at a stale version: %v, want a VersionError", err)
	}
	if _, err := s.Get(ctx, kindB, acct, child.ID); err != nil {
		t.Fatalf("a refused DeleteIf removed a child: %v", err)
	}
	now, err := s.Get(ctx, kindA, acct, r.ID)
	must(t, err)
	must(t, s.DeleteIf(ctx, kindA, acct, r.ID, now.Version, store.Note{}))
	_, err = s.Get(ctx, kindA, acct, r.ID)
	wantNotFound(t, "Get after DeleteIf", err)
	_, err = s.Get(ctx, kindB, acct, child.ID)
	wantNotFound(t, "the child after DeleteIf", err)
	wantNotFound(t, "DeleteIf of a missing record", s.DeleteIf(ctx, kindA, acct, r.ID, now.Version, store.Note{}))
}
