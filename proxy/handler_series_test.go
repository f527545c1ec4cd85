package proxy

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// series returns every sample of the registry as "name{label=value,...}"
// -> value (counters: their value; histograms: their sample count).
func series(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			key := mf.GetName() + "{" + strings.Join(labels, ",") + "}"
			switch {
			case m.GetCounter() != nil:
				out[key] = m.GetCounter().GetValue()
			case m.GetHistogram() != nil:
				out[key] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}

// routeTransport answers 200 in memory, and fails requests for /fail as
// an unreachable upstream does.
type routeTransport struct{}

func (routeTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Path == "/fail" {
		return nil, errors.New("connection refused")
	}
	return fixedTransport{}.RoundTrip(r)
}

func serveOne(h http.Handler, hostport, path string) int {
	r := httptest.NewRequest(http.MethodGet, path, nil)
	r.Host, r.RemoteAddr = hostport, "192.0.2.1:50000"
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Code
}

// TestMetricsSeries pins the series the handler's metrics expose: one
// per (edge, route, action, class) actually seen, the pairs past
// MaxSeries under _other, upstream errors, unrouted requests by reason,
// and each Metrics counting only its own handler's requests when two
// handlers share a Configs.
func TestMetricsSeries(t *testing.T) {
	c := fleet(t, 3, "http://127.0.0.1:1", "")
	ids := func(i int) (string, string) {
		e := c.EdgeByHostport(benchHostport(i))
		return e.Config.EdgeID, e.Config.Routes[0].RouteID
	}
	e0, r0 := ids(0)
	e1, r1 := ids(1)
	newHandler := func() (*Handler, *prometheus.Registry) {
		m := NewMetrics(MetricsOptions{MaxSeries: 2})
		reg := prometheus.NewRegistry()
		reg.MustRegister(m)
		return NewHandler(c, HandlerOptions{Transport: routeTransport{}, Metrics: m}), reg
	}
	h, reg := newHandler()
	h2, reg2 := newHandler()
	for _, rq := range []struct {
		h        *Handler
		hostport string
		path     string
		want     int
	}{
		{h, benchHostport(0), "/", 200},
		{h, benchHostport(0), "/", 200},
		{h, benchHostport(0), "/fail", 502},
		{h, benchHostport(1), "/", 200},
		{h, benchHostport(2), "/", 200}, // a third pair: past MaxSeries
		{h, "nobody.example.net:443", "/", 404},
		{h2, benchHostport(1), "/", 200}, // the other handler, the same routes
	} {
		if got := serveOne(rq.h, rq.hostport, rq.path); got != rq.want {
			t.Fatalf("%s%s: status %d, want %d", rq.hostport, rq.path, got, rq.want)
		}
	}
	want := map[string]float64{
		fmt.Sprintf("edgeplane_proxy_requests_total{action=,code=2xx,edge=%s,route=%s}", e0, r0): 2,
		fmt.Sprintf("edgeplane_proxy_requests_total{action=,code=5xx,edge=%s,route=%s}", e0, r0): 1,
		fmt.Sprintf("edgeplane_proxy_requests_total{action=,code=2xx,edge=%s,route=%s}", e1, r1): 1,
		"edgeplane_proxy_requests_total{action=,code=2xx,edge=_other,route=_other}":              1,
		fmt.Sprintf("edgeplane_proxy_request_duration_seconds{edge=%s,route=%s}", e0, r0):        3,
		fmt.Sprintf("edgeplane_proxy_request_duration_seconds{edge=%s,route=%s}", e1, r1):        1,
		"edgeplane_proxy_request_duration_seconds{edge=_other,route=_other}":                     1,
		fmt.Sprintf("edgeplane_proxy_upstream_errors_total{edge=%s,route=%s}", e0, r0):           1,
		"edgeplane_proxy_unrouted_total{reason=unknown_host}":                                    1,
		"edgeplane_proxy_unrouted_total{reason=misdirected}":                                     0,
		"edgeplane_proxy_unrouted_total{reason=no_certificate}":                                  0,
	}
	if got := series(t, reg); !maps.Equal(got, want) {
		t.Errorf("series:\n%s\nwant:\n%s", dump(got), dump(want))
	}
	want2 := map[string]float64{
		fmt.Sprintf("edgeplane_proxy_requests_total{action=,code=2xx,edge=%s,route=%s}", e1, r1): 1,
		fmt.Sprintf("edgeplane_proxy_request_duration_seconds{edge=%s,route=%s}", e1, r1):        1,
		"edgeplane_proxy_unrouted_total{reason=unknown_host}":                                    0,
		"edgeplane_proxy_unrouted_total{reason=misdirected}":                                     0,
		"edgeplane_proxy_unrouted_total{reason=no_certificate}":                                  0,
	}
	if got := series(t, reg2); !maps.Equal(got, want2) {
		t.Errorf("second handler's series:\n%s\nwant:\n%s", dump(got), dump(want2))
	}
}

// TestMetricsSeriesAction pins the action label of a request a traffic
// policy answered, beside the requests it let through.
func TestMetricsSeriesAction(t *testing.T) {
	c := fleet(t, 1, "http://127.0.0.1:1", benchRefuse)
	e := c.EdgeByHostport(benchHostport(0))
	e0, r0 := e.Config.EdgeID, e.Config.Routes[0].RouteID
	m := NewMetrics(MetricsOptions{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	h := NewHandler(c, HandlerOptions{Transport: routeTransport{}, Metrics: m})
	for i, want := range []int{200, 429, 429} {
		if got := serveOne(h, benchHostport(0), "/"); got != want {
			t.Fatalf("request %d: status %d, want %d", i, got, want)
		}
	}
	got := series(t, reg)
	for k, v := range map[string]float64{
		fmt.Sprintf("edgeplane_proxy_requests_total{action=,code=2xx,edge=%s,route=%s}", e0, r0):           1,
		fmt.Sprintf("edgeplane_proxy_requests_total{action=rate-limit,code=4xx,edge=%s,route=%s}", e0, r0): 2,
		fmt.Sprintf("edgeplane_proxy_request_duration_seconds{edge=%s,route=%s}", e0, r0):                  3,
	} {
		if got[k] != v {
			t.Errorf("%s = %v, want %v; series:\n%s", k, got[k], v, dump(got))
		}
	}
}

func dump(m map[string]float64) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(m)) {
		fmt.Fprintf(&b, "  %s %v\n", k, m[k])
	}
	return b.String()
}

type ctxKey struct{}

// waitTransport checks that the upstream request's context carries the
// client request's values, then waits until that context ends.
type waitTransport struct {
	entered chan any
}

func (t waitTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.entered <- r.Context().Value(ctxKey{})
	<-r.Context().Done()
	return nil, r.Context().Err()
}

// TestHandlerRequestContext: the request forwarded upstream keeps the
// incoming request's context: its values, and its cancellation when
// the client goes away.
func TestHandlerRequestContext(t *testing.T) {
	c := fleet(t, 1, "http://127.0.0.1:1", "")
	tr := waitTransport{entered: make(chan any, 1)}
	h := NewHandler(c, HandlerOptions{Transport: tr})
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "client value"))
	defer cancel()
	r := httptest.NewRequest(http.MethodGet, "/", nil).WithContext(ctx)
	r.Host, r.RemoteAddr = benchHostport(0), "192.0.2.1:50000"
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.ServeHTTP(httptest.NewRecorder(), r)
	}()
	select {
	case v := <-tr.entered:
		if v != "client value" {
			t.Errorf("upstream request's context value = %v, want the client's", v)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the request did not reach the transport")
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("cancelling the client's context did not end the upstream request")
	}
}

// TestHandlerClock: an injected clock, not the wall clock, decides
// whether a tunnel's lease has ended.
func TestHandlerClock(t *testing.T) {
	c := fleet(t, 1, "http://127.0.0.1:1", "") // the lease: 24 hours from now
	for _, tc := range []struct {
		name  string
		clock func() time.Time
		want  int
	}{
		{"wall clock", nil, http.StatusOK},
		{"within the lease", func() time.Time { return time.Now().Add(23 * time.Hour) }, http.StatusOK},
		{"after the lease", func() time.Time { return time.Now().Add(25 * time.Hour) }, http.StatusServiceUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := NewHandler(c, HandlerOptions{Transport: fixedTransport{}, Clock: tc.clock})
			if got := serveOne(h, benchHostport(0), "/"); got != tc.want {
				t.Errorf("status %d, want %d", got, tc.want)
			}
		})
	}
}
