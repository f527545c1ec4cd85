package main

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/httpapi"
	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/sqlitestore"
	"github.com/edgeplane/edgeplane/store"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestMetricsObserve: each request is counted once under its route,
// method (or "other") and status, and timed under its route, also past
// the bound of the series kept, which holds.
func TestMetricsObserve(t *testing.T) {
	m := newMetrics()
	for i := range maxSeries + 10 {
		m.observe(httpapi.Served{Route: fmt.Sprint("GET /r", i), Method: "GET", Status: 200, Duration: time.Millisecond})
	}
	last := fmt.Sprint("GET /r", maxSeries+9)
	for range 2 {
		m.observe(httpapi.Served{Route: last, Method: "GET", Status: 200, Duration: time.Millisecond})
		m.observe(httpapi.Served{Route: "GET /r0", Method: "BREW", Status: 405, Duration: time.Millisecond})
	}
	if n := m.nSeries.Load(); n > maxSeries {
		t.Errorf("%d series kept; the bound is %d", n, maxSeries)
	}
	for _, c := range []struct {
		route, method, code string
		want                float64
	}{
		{"GET /r0", "GET", "200", 1},
		{last, "GET", "200", 3},
		{"GET /r0", "other", "405", 2},
	} {
		if got := testutil.ToFloat64(m.requests.WithLabelValues(c.route, c.method, c.code)); got != c.want {
			t.Errorf("requests{%s %s %s} = %v, want %v", c.route, c.method, c.code, got, c.want)
		}
	}
	if n := testutil.CollectAndCount(m.duration); n != maxSeries+10 {
		t.Errorf("%d duration series, want %d", n, maxSeries+10)
	}
}

// TestTimedStoreKeepsVersionLister: the timed store of a
// store.VersionLister (SQLite) is one, so that the Service's lists read
// versions through it, timed as list_versions and get_many; memstore's is
// not one.
func TestTimedStoreKeepsVersionLister(t *testing.T) {
	ctx := context.Background()
	sq, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "s.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sq.Close()
	m := newMetrics()
	ts := newTimedStore(sq, m.storeOps)
	vl, ok := ts.(store.VersionLister)
	if !ok {
		t.Fatalf("the timed store of a VersionLister is a %T, not one", ts)
	}
	if err := ts.Create(ctx, store.Record{Kind: "k", AccountID: "a", ID: "st_1", Data: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if vs, err := vl.ListVersions(ctx, store.Query{Kind: "k", AccountID: "a", Limit: 10}); err != nil || len(vs) != 1 {
		t.Fatalf("ListVersions: %v, %v", vs, err)
	}
	if recs, err := vl.GetMany(ctx, "k", "a", []string{"st_1"}); err != nil || len(recs) != 1 {
		t.Fatalf("GetMany: %v, %v", recs, err)
	}
	mfs, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]uint64{}
	for _, mf := range mfs {
		if mf.GetName() != "edgeplane_store_operation_duration_seconds" {
			continue
		}
		for _, mt := range mf.GetMetric() {
			for _, l := range mt.GetLabel() {
				if l.GetName() == "op" {
					counts[l.GetValue()] = mt.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	for _, op := range []string{"list_versions", "get_many", "create"} {
		if counts[op] != 1 {
			t.Errorf("%s timed %d calls, want 1 (all: %v)", op, counts[op], counts)
		}
	}
	if _, ok := newTimedStore(memstore.New(), m.storeOps).(store.VersionLister); ok {
		t.Error("the timed store of memstore claims to be a VersionLister")
	}
}

// TestTimedStoreKeepsExclusive: timing a store keeps what it says of its
// writers, or serve on memory would fence every cached read.
func TestTimedStoreKeepsExclusive(t *testing.T) {
	m := newMetrics()
	if ex, ok := newTimedStore(memstore.New(), m.storeOps).(store.Exclusive); !ok || !ex.Exclusive() {
		t.Error("a timed memstore does not say it is exclusive")
	}
	sq, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "s.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sq.Close()
	if ex, ok := newTimedStore(sq, m.storeOps).(store.Exclusive); ok && ex.Exclusive() {
		t.Error("a timed SQLite store says it is exclusive")
	}
}
