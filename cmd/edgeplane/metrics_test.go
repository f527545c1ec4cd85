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
	"github.com/prometheus/client_golang/prometheus"
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

// TestTimedStoreKeepsExclusive: timing a store keeps what it says of its
// writers, or serve on memory would fence every cached read.
func TestTimedStoreKeepsExclusive(t *testing.T) {
	ops := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "ops"}, []string{"op"})
	var mem store.Store = newTimedStore(memstore.New(), ops)
	if ex, ok := mem.(store.Exclusive); !ok || !ex.Exclusive() {
		t.Error("a timed memstore does not say it is exclusive")
	}
	sq, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "s.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sq.Close()
	var timed store.Store = newTimedStore(sq, ops)
	if ex, ok := timed.(store.Exclusive); ok && ex.Exclusive() {
		t.Error("a timed SQLite store says it is exclusive")
	}
}
