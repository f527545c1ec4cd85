package memstore_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/store"
	"github.com/edgeplane/edgeplane/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return memstore.New() })
}

// TestFeedRetention: the feed keeps the newest FeedRetention changes and
// tells a reader behind them to resync.
func TestFeedRetention(t *testing.T) {
	ctx := context.Background()
	s := memstore.NewWithOptions(memstore.Options{FeedRetention: 4})
	for i := range 25 {
		id := "st_" + string(rune('a'+i))
		if err := s.Create(ctx, store.Record{Kind: "k", AccountID: "acct", ID: id, Data: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Changes(ctx, 21, 100)
	if err != nil || len(got) != 4 || got[0].Revision != 22 || got[3].Revision != 25 {
		t.Fatalf("the newest 4 changes: %d changes, %v", len(got), err)
	}
	var ce *store.CompactedError
	if _, err := s.Changes(ctx, 20, 100); !errors.As(err, &ce) || ce.Oldest != 22 {
		t.Errorf("a reader behind the retention: %v, want a CompactedError with oldest 22", err)
	}
}

// TestListCopiesShareNothing: the records of one List answer, copied from
// arrays the answer shares, are each the caller's: appending to one's
// Data, Keys, Refs or Indexes leaves the next record as it was, and
// writing into one changes neither its neighbours nor the store.
func TestListCopiesShareNothing(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	if err := s.Create(ctx, store.Record{Kind: "t", AccountID: "acct", ID: "t_1", Data: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"r_1", "r_2", "r_3"} {
		rec := store.Record{Kind: "k", AccountID: "acct", ID: id, Data: []byte(`{"id":"` + id + `"}`),
			Keys: []string{"key-" + id}, Refs: []string{"t_1"}, Indexes: []store.IndexEntry{{Name: "i", Value: id}}}
		if err := s.Create(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []store.Query{
		{Kind: "k", AccountID: "acct", Limit: 3},
		{Kind: "k", AccountID: "acct", Index: "i", Below: true, Value: "r_4", Limit: 3},
		{Kind: "k", AccountID: "acct", RefersTo: "t_1", Limit: 3},
	} {
		list, err := s.List(ctx, q)
		if err != nil || len(list) != 3 {
			t.Fatalf("%+v: %d records, %v", q, len(list), err)
		}
		want := make([]store.Record, len(list))
		for i := range list {
			want[i] = list[i].Clone()
		}
		for i := range list[:2] {
			r := &list[i]
			_ = append(r.Data, "XXXXXXXXXXXXXXXXXXXX"...)
			_ = append(r.Keys, "x", "x")
			_ = append(r.Refs, "x", "x")
			_ = append(r.Indexes, store.IndexEntry{Name: "x"}, store.IndexEntry{Name: "x"})
		}
		list[0].Data[0], list[0].Keys[0], list[0].Refs[0], list[0].Indexes[0].Value = 'X', "x", "x", "x"
		for i := 1; i < 3; i++ {
			if !reflect.DeepEqual(list[i], want[i]) {
				t.Errorf("%+v: record %d changed by writes to another:\n%+v\nwant\n%+v", q, i, list[i], want[i])
			}
		}
		got, err := s.Get(ctx, "k", "acct", want[0].ID)
		if err != nil || !reflect.DeepEqual(got, want[0]) {
			t.Errorf("%+v: the stored record changed by a write to a listed copy: %+v, %v", q, got, err)
		}
	}
}
