package main

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/httpapi"
	"github.com/edgeplane/edgeplane/proxy"
	"github.com/edgeplane/edgeplane/store"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the server's Prometheus metrics (github.com/prometheus/
// client_golang: the reference client, whose registry, collectors and
// exposition handler we would otherwise write again).
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	storeOps *prometheus.HistogramVec
	// restrictions counts what IP restrictions decided: each part of
	// the process that checks them adds itself.
	restrictions *restrictionDecisions

	series  sync.Map     // seriesKey -> series: see seriesOf
	nSeries atomic.Int32 // entries of series
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edgeplane_http_requests_total", Help: "Management API requests by route, method and status code.",
		}, []string{"route", "method", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "edgeplane_http_request_duration_seconds", Help: "Management API request latency by route.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 9),
		}, []string{"route"}),
		storeOps: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "edgeplane_store_operation_duration_seconds", Help: "Store call latency by operation.",
			Buckets: prometheus.ExponentialBuckets(0.00001, 4, 10),
		}, []string{"op"}),
	}
	m.restrictions = newRestrictionDecisions()
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.requests, m.duration, m.storeOps, m.restrictions)
	return m
}

// watchProxy exports the data plane's metrics: the handler's (pm) and
// the counters of the edge configs that follow the store.
func (m *metrics) watchProxy(cfgs *proxy.Configs, pm *proxy.Metrics) {
	stat := func(f func(proxy.Stats) uint64) func() float64 {
		return func() float64 { return float64(f(cfgs.Stats())) }
	}
	m.reg.MustRegister(pm,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "edgeplane_proxy_edges", Help: "Edges (HTTPS, TLS and TCP) the data plane serves."},
			func() float64 { return float64(cfgs.Stats().Edges) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "edgeplane_proxy_config_revision", Help: "Store revision the edge configs reflect: every change up to it is applied."},
			func() float64 { return float64(cfgs.Revision()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "edgeplane_proxy_config_compiles_total", Help: "Edge configs read and compiled (failed attempts included)."},
			stat(func(s proxy.Stats) uint64 { return s.Compiles })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "edgeplane_proxy_config_refreshes_total", Help: "Edge snapshots rebuilt with the same config and new tunnel lists or certificates."},
			stat(func(s proxy.Stats) uint64 { return s.Refreshes })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "edgeplane_proxy_config_reloads_total", Help: "Full reloads after the change feed was compacted past the applied revision."},
			stat(func(s proxy.Stats) uint64 { return s.Reloads })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "edgeplane_proxy_config_store_failures_total", Help: "Failed reads of the store by the edge configs (each retried after a backoff; the last good config is served meanwhile)."},
			stat(func(s proxy.Stats) uint64 { return s.Failures })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "edgeplane_proxy_config_dropped_total", Help: "Edges not served because their stored config cannot be built."},
			stat(func(s proxy.Stats) uint64 { return s.Dropped })),
	)
}

// handler serves the metrics.
func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// observe counts and times a request the API answered (it is the API's
// [httpapi.Options.Observe]), labelled by its route pattern (bounded
// cardinality: never the raw path) and its method, named only when it is
// one of HTTP's (methodLabel). The counter and histogram of each label set
// are looked up once and kept (seriesOf): the client's own lookup hashes
// and checks every label value on every request.
func (m *metrics) observe(s httpapi.Served) {
	c, d := m.seriesOf(s.Route, methodLabel(s.Method), s.Status)
	c.Inc()
	d.Observe(s.Duration.Seconds())
}

// seriesKey names the request metrics of one route, method and status.
type seriesKey struct {
	route, method string
	code          int
}

// series are the request metrics of one seriesKey.
type series struct {
	count    prometheus.Counter
	duration prometheus.Observer
}

// maxSeries bounds the series kept by seriesOf. Routes, methods and
// statuses are bounded sets, so it is not reached; were it, the metrics
// are still counted, through the client's lookup.
const maxSeries = 4096

// seriesOf returns the metrics of a request's route, method and status.
// It reads without a lock (a sync.Map: each key is written once, then
// only read, on every core at once).
func (m *metrics) seriesOf(route, method string, code int) (prometheus.Counter, prometheus.Observer) {
	k := seriesKey{route, method, code}
	if s, ok := m.series.Load(k); ok {
		return s.(series).count, s.(series).duration
	}
	s := series{m.requests.WithLabelValues(route, method, strconv.Itoa(code)), m.duration.WithLabelValues(route)}
	if m.nSeries.Load() < maxSeries {
		if _, loaded := m.series.LoadOrStore(k, s); !loaded {
			m.nSeries.Add(1)
		}
	}
	return s.count, s.duration
}

// methodLabel returns method when it is one of HTTP's, else "other": a
// client may send any token as a method, and each would be a new series.
func methodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return method
	}
	return "other"
}

// timedStore times every store call.
type timedStore struct {
	store.Store
	ops *storeOps
}

// storeOps are the duration series of the store's operations, resolved
// once: a label lookup per call (hashing the label, a locked map) would
// cost every request.
type storeOps struct {
	create, get, lookup, update, replace, delete, list, changes prometheus.Observer
	listVersions, getMany                                       prometheus.Observer
}

// newTimedStore returns st, each call timed into the series of ops. A
// [store.VersionLister] stays one (the Service lists pages through it),
// its two calls timed as list_versions and get_many.
func newTimedStore(st store.Store, ops *prometheus.HistogramVec) store.Store {
	ts := timedStore{Store: st, ops: &storeOps{
		create: ops.WithLabelValues("create"), get: ops.WithLabelValues("get"),
		lookup: ops.WithLabelValues("lookup"), update: ops.WithLabelValues("update"),
		replace: ops.WithLabelValues("replace"), delete: ops.WithLabelValues("delete"),
		list: ops.WithLabelValues("list"), changes: ops.WithLabelValues("changes"),
		listVersions: ops.WithLabelValues("list_versions"), getMany: ops.WithLabelValues("get_many"),
	}}
	if vl, ok := st.(store.VersionLister); ok {
		return timedVersionStore{timedStore: ts, vl: vl}
	}
	return ts
}

// timedVersionStore is a timedStore of a [store.VersionLister].
type timedVersionStore struct {
	timedStore
	vl store.VersionLister
}

func (s timedVersionStore) ListVersions(ctx context.Context, q store.Query) ([]store.Version, error) {
	defer observe(s.ops.listVersions, time.Now())
	return s.vl.ListVersions(ctx, q)
}

func (s timedVersionStore) GetMany(ctx context.Context, kind store.Kind, accountID string, ids []string) ([]store.Record, error) {
	defer observe(s.ops.getMany, time.Now())
	return s.vl.GetMany(ctx, kind, accountID, ids)
}

// Exclusive reports what the store it times reports ([store.Exclusive]):
// a Service on a timed memstore still knows that no other process writes
// it, and answers from its caches without a fence.
func (s timedStore) Exclusive() bool {
	ex, ok := s.Store.(store.Exclusive)
	return ok && ex.Exclusive()
}

func observe(o prometheus.Observer, start time.Time) { o.Observe(time.Since(start).Seconds()) }

func (s timedStore) Create(ctx context.Context, rec store.Record) error {
	defer observe(s.ops.create, time.Now())
	return s.Store.Create(ctx, rec)
}

func (s timedStore) Get(ctx context.Context, kind store.Kind, accountID, id string) (store.Record, error) {
	defer observe(s.ops.get, time.Now())
	return s.Store.Get(ctx, kind, accountID, id)
}

func (s timedStore) Lookup(ctx context.Context, kind store.Kind, key string) (store.Record, error) {
	defer observe(s.ops.lookup, time.Now())
	return s.Store.Lookup(ctx, kind, key)
}

func (s timedStore) Update(ctx context.Context, kind store.Kind, accountID, id string, fn func(*store.Record) error) (store.Record, error) {
	defer observe(s.ops.update, time.Now())
	return s.Store.Update(ctx, kind, accountID, id, fn)
}

func (s timedStore) Replace(ctx context.Context, rec store.Record) (store.Record, error) {
	defer observe(s.ops.replace, time.Now())
	return s.Store.Replace(ctx, rec)
}

func (s timedStore) Delete(ctx context.Context, kind store.Kind, accountID, id string, note store.Note) error {
	defer observe(s.ops.delete, time.Now())
	return s.Store.Delete(ctx, kind, accountID, id, note)
}

func (s timedStore) DeleteIf(ctx context.Context, kind store.Kind, accountID, id string, version int64, note store.Note) error {
	defer observe(s.ops.delete, time.Now())
	return s.Store.DeleteIf(ctx, kind, accountID, id, version, note)
}

func (s timedStore) List(ctx context.Context, q store.Query) ([]store.Record, error) {
	defer observe(s.ops.list, time.Now())
	return s.Store.List(ctx, q)
}

func (s timedStore) Changes(ctx context.Context, after int64, limit int, payload store.Payload) ([]store.Change, error) {
	defer observe(s.ops.changes, time.Now())
	return s.Store.Changes(ctx, after, limit, payload)
}

// watchNodes exports the number of live edge nodes of the store, read
// at each scrape.
func (m *metrics) watchNodes(host *edgeplane.Host) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "edgeplane_nodes",
		Help: "Edge nodes (tunnel servers) of the store whose lease holds, as this node sees them."},
		func() float64 {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			nodes, err := host.Nodes().ListNodes(ctx)
			if err != nil {
				return math.NaN()
			}
			live, now := 0, time.Now()
			for _, n := range nodes {
				if now.Before(n.ExpiresAt) {
					live++
				}
			}
			return float64(live)
		}))
}
