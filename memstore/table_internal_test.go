package memstore

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/store"
)

// TestManyRecords: records beyond the table's first chunks, and records
// that take the slots of deleted ones, are each found by ID and by key,
// listed in order, and hold their own data.
func TestManyRecords(t *testing.T) {
	ctx := context.Background()
	s := New()
	const n = 3<<chunkBits + 5
	id := func(i int) string { return fmt.Sprintf("r_%05d", i) }
	create := func(i int) {
		t.Helper()
		if err := s.Create(ctx, store.Record{Kind: "k", AccountID: "a", ID: id(i), Data: []byte(id(i)), Keys: []string{"key" + id(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		create(i)
	}
	for i := 0; i < n; i += 2 {
		if err := s.Delete(ctx, "k", "a", id(i), store.Note{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := n; i < n+n/2; i++ { // into the freed slots
		create(i)
	}
	if s.slots.n != n {
		t.Errorf("%d slots taken for at most %d records at once", s.slots.n, n)
	}
	live := func(i int) bool { return i >= n || i%2 == 1 }
	for i := range n + n/2 {
		got, err := s.Get(ctx, "k", "a", id(i))
		if !live(i) {
			if !errors.Is(err, apierr.ErrNotFound) {
				t.Fatalf("deleted %s: %v", id(i), err)
			}
			continue
		}
		if err != nil || string(got.Data) != id(i) {
			t.Fatalf("Get(%s) = %s, %v", id(i), got.Data, err)
		}
		if got, err := s.Lookup(ctx, "k", "key"+id(i)); err != nil || got.ID != id(i) {
			t.Fatalf("Lookup(key%s) = %s, %v", id(i), got.ID, err)
		}
	}
	want := n + n/2 - 1
	for before := ""; ; {
		page, err := s.List(ctx, store.Query{Kind: "k", AccountID: "a", BeforeID: before, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		for _, r := range page {
			for !live(want) {
				want--
			}
			if r.ID != id(want) {
				t.Fatalf("listed %s, want %s", r.ID, id(want))
			}
			want--
		}
		before = page[len(page)-1].ID
	}
	for want >= 0 && !live(want) {
		want--
	}
	if want != -1 {
		t.Errorf("the list ended before %s", id(want))
	}
}

// TestTableFull: a create into a table that has no slot left fails, as
// resource exhausted, and commits nothing; a freed slot is taken again.
func TestTableFull(t *testing.T) {
	ctx := context.Background()
	s := New()
	rec := store.Record{Kind: "k", AccountID: "a", ID: "r_1"}
	if err := s.Create(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "k", "a", "r_1", store.Note{}); err != nil {
		t.Fatal(err)
	}
	n := s.slots.n
	s.slots.n = noHandle // as if every handle but the freed one were taken
	if err := s.Create(ctx, rec); err != nil {
		t.Fatalf("a create into the freed slot: %v", err)
	}
	rec.ID = "r_2"
	err := s.Create(ctx, rec)
	if apierr.CodeOf(err) != apierr.ResourceExhausted {
		t.Fatalf("a create into a full table: %v, want resource exhausted", err)
	}
	if rev, _ := s.Revision(ctx); rev != 3 {
		t.Errorf("revision %d after the failed create, want 3", rev)
	}
	s.slots.n = n
	if _, err := s.Get(ctx, "k", "a", "r_2"); !errors.Is(err, apierr.ErrNotFound) {
		t.Errorf("the failed create left a record: %v", err)
	}
}
