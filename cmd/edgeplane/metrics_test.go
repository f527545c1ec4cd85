package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/httpapi"
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
