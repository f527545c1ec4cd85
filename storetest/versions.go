package storetest

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/store"
	"github.com/google/go-cmp/cmp"
)

// versionLister returns s as a [store.VersionLister], or skips the test
// when s is not one.
func versionLister(t *testing.T, s store.Store) store.VersionLister {
	t.Helper()
	vl, ok := s.(store.VersionLister)
	if !ok {
		t.Skipf("%T does not implement store.VersionLister (optional): nothing to check", s)
	}
	return vl
}

// versionsOf returns the IDs and versions of recs.
func versionsOf(recs []store.Record) []store.Version {
	out := make([]store.Version, len(recs))
	for i, r := range recs {
		out[i] = store.Version{ID: r.ID, Version: r.Version}
	}
	return out
}

// testListVersions: ListVersions answers every query List answers with
// the IDs and versions of the same records in the same order, page by
// page (by kind, account, parent, index value, index below, referrers,
// each with a cursor), follows updates and deletes, and refuses what
// List refuses.
func testListVersions(t *testing.T, s store.Store) {
	vl := versionLister(t, s)
	ctx := context.Background()
	f := newFixture()
	acct, other := f.account(), f.account()
	target := f.record(kindB, acct)
	parent := f.record(kindB, acct)
	create(t, s, target, parent)
	var mine []store.Record
	for i := range 12 {
		r := f.record(kindA, acct)
		if i%3 == 0 {
			r.ParentID = parent.ID
		}
		if i%2 == 0 {
			r.Refs = []string{target.ID}
		}
		r.Indexes = []store.IndexEntry{{Name: "label", Value: fmt.Sprintf("n=%d", i%4)}}
		create(t, s, r)
		mine = append(mine, r)
	}
	theirs := f.record(kindA, other)
	theirs.Indexes = []store.IndexEntry{{Name: "label", Value: "n=0"}}
	create(t, s, theirs)
	// Versions that differ from creation order: every third record updated.
	for i := 0; i < len(mine); i += 3 {
		_, err := s.Update(ctx, kindA, acct, mine[i].ID, func(r *store.Record) error { r.Data = doc("updated", i); return nil })
		must(t, err)
	}
	must(t, s.Delete(ctx, kindA, acct, mine[5].ID, store.Note{}))

	queries := map[string]store.Query{
		"kind":                    {Kind: kindA},
		"account":                 {Kind: kindA, AccountID: acct},
		"other account":           {Kind: kindA, AccountID: other},
		"parent":                  {Kind: kindA, AccountID: acct, ParentID: parent.ID},
		"parent, every account":   {Kind: kindA, ParentID: parent.ID},
		"parent of another":       {Kind: kindA, AccountID: other, ParentID: parent.ID},
		"index value":             {Kind: kindA, AccountID: acct, Index: "label", Value: "n=0"},
		"index value, every acct": {Kind: kindA, Index: "label", Value: "n=0"},
		"index value and parent":  {Kind: kindA, AccountID: acct, ParentID: parent.ID, Index: "label", Value: "n=0"},
		"index below":             {Kind: kindA, AccountID: acct, Index: "label", Value: "n=2", Below: true},
		"refers to":               {Kind: kindA, AccountID: acct, RefersTo: target.ID},
		"refers to, every acct":   {Kind: kindA, RefersTo: target.ID},
		"none":                    {Kind: kindA, AccountID: acct, Index: "label", Value: "n=9"},
	}
	for name, q := range queries {
		t.Run(name, func(t *testing.T) {
			for _, n := range []int{1, 4, 100} {
				q := q
				q.Limit = n
				var all []store.Version
				for pages := 0; ; pages++ {
					if pages > 20 {
						t.Fatalf("pages of %d do not end", n)
					}
					want, err := s.List(ctx, q)
					must(t, err)
					got, err := vl.ListVersions(ctx, q)
					must(t, err)
					if diff := cmp.Diff(versionsOf(want), got); diff != "" {
						t.Fatalf("pages of %d before %q (-List +ListVersions):\n%s", n, q.BeforeID, diff)
					}
					all = append(all, got...)
					if len(got) < n {
						break
					}
					q.BeforeID = got[len(got)-1].ID
				}
				if name == "account" && len(all) != len(mine)-1 {
					t.Errorf("pages of %d: %d records, want %d", n, len(all), len(mine)-1)
				}
			}
		})
	}
	// An update shows its new version; the others keep theirs.
	updated, err := s.Update(ctx, kindA, acct, mine[1].ID, func(r *store.Record) error { r.Data = doc("again", 1); return nil })
	must(t, err)
	got, err := vl.ListVersions(ctx, store.Query{Kind: kindA, AccountID: acct, Limit: 100})
	must(t, err)
	if i := slices.IndexFunc(got, func(v store.Version) bool { return v.ID == updated.ID }); i < 0 || got[i].Version != updated.Version {
		t.Errorf("after an update to version %d: %v", updated.Version, got)
	}
	for _, q := range []store.Query{
		{Kind: kindA, AccountID: acct},
		{Kind: kindA, AccountID: acct, Limit: -1},
		{Kind: kindA, Index: "label", RefersTo: target.ID, Limit: 1},
	} {
		_, lerr := s.List(ctx, q)
		_, verr := vl.ListVersions(ctx, q)
		if lerr == nil || apierr.CodeOf(verr) != apierr.CodeOf(lerr) {
			t.Errorf("ListVersions(%+v) = %v, List: %v", q, verr, lerr)
		}
	}
}

// testGetMany: GetMany returns the records of one kind and account among
// the IDs, whole and in the order asked, each once; IDs of records of
// another account or kind, deleted or never made, are left out; it
// refuses more than store.MaxGetMany IDs and an empty account, and
// honours a cancelled context.
func testGetMany(t *testing.T, s store.Store) {
	vl := versionLister(t, s)
	ctx := context.Background()
	f := newFixture()
	acct, other := f.account(), f.account()
	parent := f.record(kindA, acct)
	create(t, s, parent)
	var mine []store.Record
	for i := range 5 {
		r := f.record(kindA, acct)
		r.Keys = []string{"k:" + r.ID}
		r.Refs = []string{parent.ID}
		r.Indexes = []store.IndexEntry{{Name: "label", Value: "x"}}
		if i == 2 {
			r.ParentID = parent.ID
		}
		create(t, s, r)
		mine = append(mine, r)
	}
	theirs, otherKind, gone := f.record(kindA, other), f.record(kindB, acct), f.record(kindA, acct)
	create(t, s, theirs, otherKind, gone)
	must(t, s.Delete(ctx, kindA, acct, gone.ID, store.Note{}))
	updated, err := s.Update(ctx, kindA, acct, mine[3].ID, func(r *store.Record) error { r.Data = doc("updated", 3); return nil })
	must(t, err)
	mine[3] = updated

	ids := []string{mine[3].ID, theirs.ID, mine[0].ID, "st_never", otherKind.ID, mine[2].ID, gone.ID, mine[0].ID, mine[4].ID}
	got, err := vl.GetMany(ctx, kindA, acct, ids)
	must(t, err)
	want := []store.Record{mine[3], mine[0], mine[2], mine[4]}
	for i := range want {
		w, err := s.Get(ctx, kindA, acct, want[i].ID)
		must(t, err)
		want[i] = w // as Get returns it, Version included
	}
	if diff := cmp.Diff(want, got, cmpRecord); diff != "" {
		t.Errorf("GetMany (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(versionsOf(want), versionsOf(got)); diff != "" {
		t.Errorf("GetMany's versions (-want +got):\n%s", diff)
	}
	// Another account sees none of them, only its own.
	got, err = vl.GetMany(ctx, kindA, other, ids)
	must(t, err)
	if len(got) != 1 || got[0].ID != theirs.ID || got[0].AccountID != other {
		t.Errorf("GetMany of the other account: %v", versionsOf(got))
	}
	if got, err := vl.GetMany(ctx, kindA, acct, nil); err != nil || len(got) != 0 {
		t.Errorf("GetMany of no IDs: %v, %v", got, err)
	}
	// Returned records are copies.
	got, err = vl.GetMany(ctx, kindA, acct, []string{mine[0].ID})
	must(t, err)
	got[0].Data[0] = 'X'
	again, err := s.Get(ctx, kindA, acct, mine[0].ID)
	must(t, err)
	if again.Data[0] == 'X' {
		t.Error("changing a record GetMany returned changed the store")
	}

	many := make([]string, store.MaxGetMany+1)
	for i := range many {
		many[i] = mine[0].ID
	}
	if _, err := vl.GetMany(ctx, kindA, acct, many); apierr.CodeOf(err) != apierr.InvalidArgument {
		t.Errorf("GetMany of %d IDs: %v, want invalid argument", len(many), err)
	}
	if got, err := vl.GetMany(ctx, kindA, acct, many[:store.MaxGetMany]); err != nil || len(got) != 1 {
		t.Errorf("GetMany of %d IDs: %d records, %v", store.MaxGetMany, len(got), err)
	}
	if _, err := vl.GetMany(ctx, kindA, "", ids); apierr.CodeOf(err) != apierr.InvalidArgument {
		t.Errorf("GetMany of no account: %v, want invalid argument", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := vl.GetMany(cancelled, kindA, acct, ids); err == nil {
		t.Error("GetMany with a cancelled context succeeded")
	}
	if _, err := vl.ListVersions(cancelled, store.Query{Kind: kindA, AccountID: acct, Limit: 10}); err == nil {
		t.Error("ListVersions with a cancelled context succeeded")
	}
}
