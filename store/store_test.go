package store_test

import (
	"slices"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/store"
)

func TestUniqueRefs(t *testing.T) {
	for _, tc := range []struct{ in, want []string }{
		{nil, nil},
		{[]string{"a"}, []string{"a"}},
		{[]string{"b", "a", "b", "c", "a"}, []string{"b", "a", "c"}},
	} {
		in := slices.Clone(tc.in)
		if got := store.UniqueRefs(in); !slices.Equal(got, tc.want) {
			t.Errorf("UniqueRefs(%v) = %v, want %v", tc.in, got, tc.want)
		}
		if !slices.Equal(in, tc.in) {
			t.Errorf("UniqueRefs changed its argument to %v", in)
		}
	}
}

func TestUniqueIndexes(t *testing.T) {
	in := []store.IndexEntry{{"label", "b"}, {"due", "x"}, {"label", "a"}, {"label", "b"}}
	want := []store.IndexEntry{{"due", "x"}, {"label", "a"}, {"label", "b"}}
	if got := store.UniqueIndexes(slices.Clone(in)); !slices.Equal(got, want) {
		t.Errorf("UniqueIndexes = %v, want %v", got, want)
	}
}

func TestIndexTimeSorts(t *testing.T) {
	base := time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("X", 7200))
	prev := ""
	for _, d := range []time.Duration{0, time.Nanosecond, time.Second, time.Hour, 400 * 24 * time.Hour} {
		v := store.IndexTime(base.Add(d))
		if v <= prev {
			t.Errorf("IndexTime(+%v) = %q does not sort after %q", d, v, prev)
		}
		prev = v
	}
}

func TestQueryCheck(t *testing.T) {
	for _, tc := range []struct {
		q     store.Query
		field string // "" when valid
	}{
		{store.Query{Kind: "k", Limit: 1}, ""},
		{store.Query{Kind: "k", Limit: 1, Index: "i", Value: "v"}, ""},
		{store.Query{Kind: "k"}, "limit"},
		{store.Query{Kind: "k", Limit: -1}, "limit"},
		{store.Query{Kind: "k", Limit: 1, Index: "i", RefersTo: "x"}, "index"},
	} {
		err := tc.q.Check()
		vs := apierr.ViolationsOf(err)
		if (tc.field == "") != (err == nil) || (err != nil && (len(vs) != 1 || vs[0].Field != tc.field)) {
			t.Errorf("Check(%+v) = %v, want a violation of %q", tc.q, err, tc.field)
		}
	}
}
