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
	got, err := s.Changes(ctx, 21, 100, store.WithData)
	if err != nil || len(got) != 4 || got[0].Revision != 22 || got[3].Revision != 25 {
		t.Fatalf("the newest 4 changes: %d changes, %v", len(got), err)
	}
	for i, c := range got {
		if id := "st_" + string(rune('a'+21+i)); c.ID != id || c.Op != store.OpCreate || string(c.Data) != `{}` {
			t.Errorf("change %d: %s %s %s, want a create of %s", c.Revision, c.Op, c.ID, c.Data, id)
		}
	}
	var ce *store.CompactedError
	if _, err := s.Changes(ctx, 20, 100, store.WithData); !errors.As(err, &ce) || ce.Oldest != 22 {
		t.Errorf("a reader behind the retention: %v, want a CompactedError with oldest 22", err)
	}
	// Compacting, then writing past the retention again.
	if err := s.Compact(ctx, 23); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Changes(ctx, 22, 100, store.WithData); !errors.As(err, &ce) || ce.Oldest != 24 {
		t.Errorf("a reader behind the compaction: %v, want a CompactedError with oldest 24", err)
	}
	for i := range 3 {
		if _, err := s.Update(ctx, "k", "acct", "st_a", func(r *store.Record) error {
			r.Data = []byte(`{"n":` + string(rune('0'+i)) + `}`)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Delete(ctx, "k", "acct", "st_b", store.Note{}); err != nil {
		t.Fatal(err)
	}
	got, err = s.Changes(ctx, 25, 100, store.WithData)
	if err != nil || len(got) != 4 {
		t.Fatalf("the newest 4 changes after the compaction: %d changes, %v", len(got), err)
	}
	for i, want := range []string{`update st_a {"n":0}`, `update st_a {"n":1}`, `update st_a {"n":2}`, `delete st_b {}`} {
		if c := got[i]; c.Revision != int64(26+i) || c.Op.String()+" "+c.ID+" "+string(c.Data) != want {
			t.Errorf("change %d: %d %s %s %s, want %d %s", i, c.Revision, c.Op, c.ID, c.Data, 26+i, want)
		}
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

// TestCopies: the records and changes the store hands out, and the
// records it is given, share nothing with what it stores: writing into or
// appending to any of their Data, Keys, Refs and Indexes changes no read
// of the store, neither of the record nor of its keys and index entries.
// (The conformance suite checks some of these; this checks each.)
func TestCopies(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	if err := s.Create(ctx, store.Record{Kind: "t", AccountID: "acct", ID: "t_1"}); err != nil {
		t.Fatal(err)
	}
	in := store.Record{Kind: "k", AccountID: "acct", ID: "r_1", Data: []byte(`{"a":1}`),
		Keys: []string{"key"}, Refs: []string{"t_1"}, Indexes: []store.IndexEntry{{Name: "i", Value: "v"}}}
	scribble := func(r *store.Record) {
		if len(r.Data) > 0 {
			r.Data[0] = 'X'
		}
		if len(r.Keys) > 0 {
			r.Keys[0] = "x"
		}
		if len(r.Refs) > 0 {
			r.Refs[0] = "x"
		}
		if len(r.Indexes) > 0 {
			r.Indexes[0] = store.IndexEntry{Name: "x", Value: "x"}
		}
		_ = append(r.Data, 'X')
		_ = append(r.Keys, "x")
		_ = append(r.Refs, "x")
		_ = append(r.Indexes, store.IndexEntry{Name: "x"})
	}
	want := in.Clone()
	check := func(when string) {
		t.Helper()
		got, err := s.Get(ctx, "k", "acct", "r_1")
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		want.Version = got.Version
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s changed the stored record:\n%+v\nwant\n%+v", when, got, want)
		}
		if got, err := s.Lookup(ctx, "k", "key"); err != nil || got.ID != "r_1" {
			t.Errorf("%s: Lookup by the key: %+v, %v", when, got, err)
		}
		for _, q := range []store.Query{
			{Kind: "k", AccountID: "acct", Index: "i", Value: "v", Limit: 1},
			{Kind: "k", AccountID: "acct", RefersTo: "t_1", Limit: 1},
		} {
			if list, err := s.List(ctx, q); err != nil || len(list) != 1 || !reflect.DeepEqual(list[0], got) {
				t.Errorf("%s: List %+v: %+v, %v", when, q, list, err)
			}
		}
		if cs, err := s.Changes(ctx, got.Version-1, 1, store.WithData); err != nil || len(cs) != 1 || string(cs[0].Data) != string(want.Data) {
			t.Errorf("%s: the record's change: %+v, %v", when, cs, err)
		}
	}
	if err := s.Create(ctx, in); err != nil {
		t.Fatal(err)
	}
	scribble(&in)
	check("writing into the Create argument")

	got, err := s.Get(ctx, "k", "acct", "r_1")
	if err != nil {
		t.Fatal(err)
	}
	scribble(&got)
	check("writing into a Get result")
	got, err = s.Lookup(ctx, "k", "key")
	if err != nil {
		t.Fatal(err)
	}
	scribble(&got)
	check("writing into a Lookup result")
	list, err := s.List(ctx, store.Query{Kind: "k", AccountID: "acct", Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	scribble(&list[0])
	check("writing into a List result")
	cs, err := s.Changes(ctx, 1, 1, store.WithData)
	if err != nil {
		t.Fatal(err)
	}
	cs[0].Data[0] = 'X'
	check("writing into a change")

	var kept *store.Record
	got, err = s.Update(ctx, "k", "acct", "r_1", func(r *store.Record) error {
		kept = r
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	scribble(kept)
	scribble(&got)
	check("writing into what Update handed out")

	next := want.Clone()
	next.Data = []byte(`{"a":2}`)
	got, err = s.Replace(ctx, next)
	if err != nil {
		t.Fatal(err)
	}
	want = next.Clone()
	scribble(&next)
	scribble(&got)
	check("writing into the Replace argument and result")
}

// TestUpdateReturnsStored: what Update and Replace return is what a Get
// reads after them, exactly: refs named twice once, empty slices nil, the
// new version.
func TestUpdateReturnsStored(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	if err := s.Create(ctx, store.Record{Kind: "t", AccountID: "acct", ID: "t_1"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Create(ctx, store.Record{Kind: "k", AccountID: "acct", ID: "r_1", Data: []byte(`{}`),
		Keys: []string{"key"}, Indexes: []store.IndexEntry{{Name: "i", Value: "v"}}}); err != nil {
		t.Fatal(err)
	}
	for name, edit := range map[string]func(*store.Record){
		"unchanged":  func(*store.Record) {},
		"new data":   func(r *store.Record) { r.Data = []byte(`{"n":1}`) },
		"refs twice": func(r *store.Record) { r.Refs = []string{"t_1", "t_1"} },
		"all emptied": func(r *store.Record) {
			r.Data, r.Keys, r.Refs, r.Indexes = []byte{}, []string{}, []string{}, []store.IndexEntry{}
		},
		"refilled": func(r *store.Record) {
			r.Data, r.Keys, r.Indexes = []byte(`{}`), []string{"key", "key2"}, []store.IndexEntry{{Name: "i", Value: "v"}, {Name: "i", Value: "v"}}
		},
	} {
		out, err := s.Update(ctx, "k", "acct", "r_1", func(r *store.Record) error {
			edit(r)
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := s.Get(ctx, "k", "acct", "r_1")
		if err != nil || !reflect.DeepEqual(out, got) {
			t.Errorf("%s: Update returned\n%+v\nGet reads\n%+v, %v", name, out, got, err)
		}
		rec := got.Clone()
		edit(&rec)
		if out, err = s.Replace(ctx, rec); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err = s.Get(ctx, "k", "acct", "r_1")
		if err != nil || !reflect.DeepEqual(out, got) {
			t.Errorf("%s: Replace returned\n%+v\nGet reads\n%+v, %v", name, out, got, err)
		}
	}
}

// TestRepeatedIndexEntries: a record that names one index entry twice is
// found once by it, and its update and its delete leave no entry behind,
// even when its slot is taken by the next record.
func TestRepeatedIndexEntries(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	twice := func(v string) []store.IndexEntry {
		return []store.IndexEntry{{Name: "i", Value: v}, {Name: "j", Value: v}, {Name: "i", Value: v}}
	}
	found := func(when, value string, want ...string) {
		t.Helper()
		for _, name := range []string{"i", "j"} {
			for _, q := range []store.Query{
				{Kind: "k", AccountID: "acct", Index: name, Value: value, Limit: 10},
				{Kind: "k", Index: name, Value: value, Limit: 10},
				{Kind: "k", AccountID: "acct", Index: name, Value: value + "\x00", Below: true, Limit: 10},
			} {
				list, err := s.List(ctx, q)
				if err != nil {
					t.Fatalf("%s: %+v: %v", when, q, err)
				}
				var got []string
				for _, r := range list {
					got = append(got, r.ID)
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s: %+v found %q, want %q", when, q, got, want)
				}
			}
		}
	}
	if err := s.Create(ctx, store.Record{Kind: "k", AccountID: "acct", ID: "r_1", Indexes: twice("a")}); err != nil {
		t.Fatal(err)
	}
	found("created", "a", "r_1")
	if _, err := s.Update(ctx, "k", "acct", "r_1", func(r *store.Record) error {
		r.Indexes = append(twice("b"), store.IndexEntry{Name: "i", Value: "a"})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	found("updated", "b", "r_1")
	if _, err := s.Update(ctx, "k", "acct", "r_1", func(r *store.Record) error {
		r.Indexes = twice("b")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	found("updated again", "a")
	found("updated again", "b", "r_1")
	if err := s.Delete(ctx, "k", "acct", "r_1", store.Note{}); err != nil {
		t.Fatal(err)
	}
	found("deleted", "b")
	if err := s.Create(ctx, store.Record{Kind: "k", AccountID: "acct", ID: "r_2", Indexes: twice("c")}); err != nil {
		t.Fatal(err)
	}
	found("another created in its place", "b")
	found("another created in its place", "c", "r_2")
}
