package storetest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/store"
	"github.com/google/go-cmp/cmp"
)

// indexed returns the IDs List gives for q, walking every page of size n.
func indexed(t *testing.T, s store.Store, q store.Query, n int) []string {
	t.Helper()
	q.Limit = n
	var out []string
	for {
		page, err := s.List(context.Background(), q)
		must(t, err)
		out = append(out, recordIDs(page)...)
		if len(page) < n {
			return out
		}
		q.BeforeID = page[len(page)-1].ID
	}
}

func reversed(ids ...string) []string {
	out := slices.Clone(ids)
	slices.Reverse(out)
	return out
}

// testIndexEquality: a query by index value finds exactly the records
// with that value, newest first, paged, in one account or all, and
// follows updates and deletes.
func testIndexEquality(t *testing.T, s store.Store) {
	ctx := context.Background()
	f := newFixture()
	acct, other := f.account(), f.account()
	label := func(vs ...string) []store.IndexEntry {
		var es []store.IndexEntry
		for _, v := range vs {
			es = append(es, store.IndexEntry{Name: "label", Value: v})
		}
		return es
	}
	var red []string
	for i := range 7 {
		r := f.record(kindA, acct)
		r.Indexes = label("color=red", "size=s")
		if i%2 == 1 {
			r.Indexes = label("color=blue", "color=red", "color=red") // several values, one repeated
		}
		create(t, s, r)
		red = append(red, r.ID)
	}
	blue := f.record(kindA, acct)
	blue.Indexes = label("color=blue")
	theirs := f.record(kindA, other)
	theirs.Indexes = label("color=red")
	otherKind := f.record(kindB, acct)
	otherKind.Indexes = label("color=red")
	create(t, s, blue, theirs, otherKind)

	q := store.Query{Kind: kindA, AccountID: acct, Index: "label", Value: "color=red"}
	for _, n := range []int{1, 3, 100} {
		if diff := cmp.Diff(reversed(red...), indexed(t, s, q, n)); diff != "" {
			t.Errorf("color=red in pages of %d (-want +got):\n%s", n, diff)
		}
	}
	all := q
	all.AccountID = ""
	if got := indexed(t, s, all, 100); !slices.Contains(got, theirs.ID) || len(got) != len(red)+1 {
		t.Errorf("across accounts: %v", got)
	}
	if got := indexed(t, s, store.Query{Kind: kindA, AccountID: acct, Index: "label", Value: "color=green"}, 10); len(got) != 0 {
		t.Errorf("an absent value matched %v", got)
	}
	if got := indexed(t, s, store.Query{Kind: kindA, AccountID: acct, Index: "other", Value: "color=red"}, 10); len(got) != 0 {
		t.Errorf("another index name matched %v", got)
	}

	// Update moves a record between values; delete removes it.
	_, err := s.Update(ctx, kindA, acct, red[0], func(r *store.Record) error { r.Indexes = label("color=blue"); return nil })
	must(t, err)
	must(t, s.Delete(ctx, kindA, acct, red[1], store.Note{}))
	if diff := cmp.Diff(reversed(red[2:]...), indexed(t, s, q, 2)); diff != "" {
		t.Errorf("color=red after update and delete (-want +got):\n%s", diff)
	}
	blueQ := store.Query{Kind: kindA, AccountID: acct, Index: "label", Value: "color=blue"}
	want := []string{blue.ID, red[5], red[3], red[0]}
	if diff := cmp.Diff(want, indexed(t, s, blueQ, 10)); diff != "" {
		t.Errorf("color=blue (-want +got):\n%s", diff)
	}
	// Returned records carry their entries.
	got, err := s.Get(ctx, kindA, acct, blue.ID)
	must(t, err)
	if diff := cmp.Diff(blue.Indexes, got.Indexes); diff != "" {
		t.Errorf("stored index entries (-want +got):\n%s", diff)
	}
}

// testIndexBelow: a range query finds records with a value before the
// bound (times, as IndexTime writes them), each once.
func testIndexBelow(t *testing.T, s store.Store) {
	f := newFixture()
	acct := f.account()
	base := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	var due []string
	for i := range 6 {
		r := f.record(kindA, acct)
		at := base.Add(time.Duration(i) * time.Hour)
		r.Indexes = []store.IndexEntry{{Name: "due", Value: store.IndexTime(at)}, {Name: "due", Value: store.IndexTime(at.Add(time.Minute))}}
		create(t, s, r)
		if i < 3 {
			due = append(due, r.ID)
		}
	}
	bound := store.IndexTime(base.Add(2*time.Hour + 30*time.Minute))
	for _, n := range []int{1, 2, 10} {
		got := indexed(t, s, store.Query{Kind: kindA, AccountID: acct, Index: "due", Value: bound, Below: true}, n)
		if diff := cmp.Diff(reversed(due...), got); diff != "" {
			t.Errorf("due before the bound, pages of %d (-want +got):\n%s", n, diff)
		}
	}
	if got := store.IndexTime(base.In(time.FixedZone("X", 3600))); got != "2026-11-23T00:00:00.000000000Z" {
		t.Errorf("IndexTime = %q", got)
	}
}

// testRefersTo: the referrers of a record, by kind and account, paged;
// a reference dropped by an update is gone.
func testRefersTo(t *testing.T, s store.Store) {
	ctx := context.Background()
	f := newFixture()
	acct := f.account()
	target := f.record(kindB, acct)
	create(t, s, target)
	var refs []string
	for range 5 {
		r := f.record(kindA, acct)
		r.Refs = []string{target.ID}
		create(t, s, r)
		refs = append(refs, r.ID)
	}
	unrelated := f.record(kindA, acct)
	create(t, s, unrelated)
	q := store.Query{Kind: kindA, AccountID: acct, RefersTo: target.ID}
	if diff := cmp.Diff(reversed(refs...), indexed(t, s, q, 2)); diff != "" {
		t.Errorf("referrers (-want +got):\n%s", diff)
	}
	_, err := s.Update(ctx, kindA, acct, refs[4], func(r *store.Record) error { r.Refs = nil; return nil })
	must(t, err)
	if diff := cmp.Diff(reversed(refs[:4]...), indexed(t, s, q, 10)); diff != "" {
		t.Errorf("referrers after an update dropped one (-want +got):\n%s", diff)
	}
	if got := indexed(t, s, store.Query{Kind: kindA, AccountID: f.account(), RefersTo: target.ID}, 10); len(got) != 0 {
		t.Errorf("another account sees referrers %v", got)
	}
	_, err = s.List(ctx, store.Query{Kind: kindA, Index: "x", RefersTo: target.ID, Limit: 1})
	if !errors.Is(err, apierr.ErrInvalidArgument) {
		t.Errorf("Index with RefersTo: %v, want invalid argument", err)
	}
}

// testLeases runs the lease protocol a Service builds on a store (a
// tunnel's lease end as an index value; renewals move it; a reaper lists
// what ended before now across accounts and deletes each at the version it
// read): what expired is listed and deleted, in every account; what is
// renewed stops being listed; a renewal between the reaper's list and its
// delete wins (the delete is refused); each reaped record is in the feed.
func testLeases(t *testing.T, s store.Store) {
	ctx := context.Background()
	f := newFixture()
	acct1, acct2 := f.account(), f.account()
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	leased := func(acct string, end time.Time) store.Record {
		r := f.record(kindA, acct)
		r.Indexes = []store.IndexEntry{{Name: "lease_end", Value: store.IndexTime(end)}}
		create(t, s, r)
		return r
	}
	renew := func(r store.Record, end time.Time) {
		t.Helper()
		_, err := s.Update(ctx, kindA, r.AccountID, r.ID, func(rec *store.Record) error {
			rec.Indexes = []store.IndexEntry{{Name: "lease_end", Value: store.IndexTime(end)}}
			return nil
		})
		must(t, err)
	}
	expired1 := leased(acct1, now.Add(-time.Minute))
	expired2 := leased(acct2, now.Add(-time.Second))
	renewed := leased(acct1, now.Add(-30*time.Second))
	live := leased(acct2, now.Add(time.Minute))
	renew(renewed, now.Add(time.Minute))
	due := store.Query{Kind: kindA, Index: "lease_end", Value: store.IndexTime(now), Below: true}
	got := indexed(t, s, due, 10)
	if diff := cmp.Diff(reversed(expired1.ID, expired2.ID), got); diff != "" {
		t.Fatalf("leases ended before now, across accounts (-want +got):\n%s", diff)
	}
	start, err := s.Revision(ctx)
	must(t, err)
	due.Limit = 10
	recs, err := s.List(ctx, due)
	must(t, err)
	// expired2 is renewed after the reaper read it: its delete must fail.
	renew(expired2, now.Add(time.Minute))
	var reaped []string
	for _, rec := range recs {
		err := s.DeleteIf(ctx, rec.Kind, rec.AccountID, rec.ID, rec.Version, store.Note{})
		var ve *store.VersionError
		switch {
		case errors.As(err, &ve):
			continue
		case err != nil:
			t.Fatalf("reaping %s: %v", rec.ID, err)
		}
		reaped = append(reaped, rec.ID)
	}
	if diff := cmp.Diff([]string{expired1.ID}, reaped); diff != "" {
		t.Errorf("reaped (-want +got):\n%s", diff)
	}
	for _, r := range []store.Record{expired2, renewed, live} {
		if _, err := s.Get(ctx, kindA, r.AccountID, r.ID); err != nil {
			t.Errorf("a live lease %s was removed: %v", r.ID, err)
		}
	}
	if got := indexed(t, s, store.Query{Kind: kindA, Index: "lease_end", Value: store.IndexTime(now), Below: true}, 10); len(got) != 0 {
		t.Errorf("leases ended before now after reaping: %v", got)
	}
	changes, err := s.Changes(ctx, start, 100, store.WithData)
	must(t, err)
	var deleted []string
	for _, c := range changes {
		if c.Op == store.OpDelete {
			deleted = append(deleted, c.ID)
		}
	}
	if diff := cmp.Diff([]string{expired1.ID}, deleted); diff != "" {
		t.Errorf("deletes in the feed after reaping (-want +got):\n%s", diff)
	}
}
