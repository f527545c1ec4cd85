package proxy

import (
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/edgeplane/edgeplane/agents"
)

// DefaultMaxSeries is the default of [MetricsOptions.MaxSeries].
const DefaultMaxSeries = 1000

// OtherLabel is the edge and route label of requests to edges past
// [MetricsOptions.MaxSeries].
const OtherLabel = "_other"

// Reasons a request or handshake reached no edge, the values of the
// reason label of edgeplane_proxy_unrouted_total.
const (
	reasonUnknownHost   = "unknown_host"   // no edge serves the Host
	reasonMisdirected   = "misdirected"    // the Host is not the TLS server name
	reasonNoCertificate = "no_certificate" // a handshake for a name without a certificate
)

// Outcomes of opening a stream to an agent's tunnel, the values of the
// outcome label of edgeplane_proxy_agent_streams_total.
const (
	agentOpened    = "opened"     // the stream was opened
	agentNoSession = "no_session" // the Dialer holds no session that serves the tunnel (agents.ErrNoSession)
	agentFailed    = "failed"     // any other error
)

// MetricsOptions configures [NewMetrics].
type MetricsOptions struct {
	// MaxSeries bounds the (edge, route) label pairs the per-route
	// metrics use; requests of pairs seen after it is reached count
	// under edge and route [OtherLabel]. Zero means [DefaultMaxSeries].
	MaxSeries int
	// Buckets are the latency histogram's buckets in seconds. Nil means
	// prometheus.DefBuckets.
	Buckets []float64
}

// Metrics are the data plane's Prometheus metrics, a
// prometheus.Collector the host registers:
//
//   - edgeplane_proxy_requests_total{edge, route, action, code}: requests
//     routed to an edge, by the policy action type that answered ("" when
//     none did: the upstream answered or the proxy failed) and the status
//     class ("2xx" to "5xx"; "closed" when the connection was closed
//     without a response);
//   - edgeplane_proxy_request_duration_seconds{edge, route}: the time
//     from the request's arrival to the end of its response;
//   - edgeplane_proxy_upstream_errors_total{edge, route}: requests whose
//     upstream failed (502, 504);
//   - edgeplane_proxy_unrouted_total{reason}: requests that reached no
//     edge: unknown_host, misdirected (Host is not the TLS server name),
//     no_certificate (handshakes failed for want of a certificate);
//   - edgeplane_proxy_connections_total{kind, outcome}: connections to
//     TLS and TCP edges ([Streams]), kind tls or tcp, by outcome: served,
//     ip_restricted, policy_denied, over_limit, no_certificate,
//     handshake_failed, no_upstream, upstream_failed, unrouted;
//   - edgeplane_proxy_connection_bytes_total{kind, direction}: bytes
//     those connections relayed, direction in (client to upstream) or
//     out;
//   - edgeplane_proxy_agent_streams_total{kind, outcome}: streams opened
//     to agents' tunnels ([HandlerOptions.Agents], [StreamOptions.Agents]),
//     one per request (kind https) or connection (kind tls or tcp), by
//     outcome: opened, no_session (the Dialer holds no session that
//     serves the tunnel) or failed. A request or connection to an agent's
//     tunnel is otherwise counted as any other (requests_total,
//     connections_total, upstream_errors_total).
//
// The edge and route labels are IDs; route is "" for a request no route
// matched, and for an endpoint's request (an agent's endpoint counts as
// an edge whose ID is the endpoint's; its connections count with the
// TLS and TCP edges'). Their cardinality is bounded by [MetricsOptions.MaxSeries];
// action is one of the policy action types, and code one of six values.
// A nil *Metrics measures nothing.
type Metrics struct {
	requests       *prometheus.CounterVec
	duration       *prometheus.HistogramVec
	upstreamErrors *prometheus.CounterVec
	unroutedTotal  *prometheus.CounterVec
	unroutedBy     map[string]prometheus.Counter // the children of unroutedTotal, by reason; read-only
	connections    *prometheus.CounterVec        // {kind, outcome}
	streamBytesVec *prometheus.CounterVec        // {kind, direction}
	agentStreams   *prometheus.CounterVec        // {kind, outcome}

	max    int
	mu     sync.Mutex
	series sync.Map // edge+"/"+route -> struct{}: pairs with their own labels
	count  atomic.Int64
}

// NewMetrics returns the metrics of a [Handler] (see
// [HandlerOptions.Metrics]).
func NewMetrics(o MetricsOptions) *Metrics {
	m := &Metrics{max: o.MaxSeries}
	if m.max <= 0 {
		m.max = DefaultMaxSeries
	}
	buckets := o.Buckets
	if buckets == nil {
		buckets = prometheus.DefBuckets
	}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "edgeplane_proxy_requests_total",
		Help: "Requests routed to an edge, by edge, route, the traffic policy action type that answered, and status class.",
	}, []string{"edge", "route", "action", "code"})
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "edgeplane_proxy_request_duration_seconds",
		Help:    "Time from a request's arrival to the end of its response, by edge and route.",
		Buckets: buckets,
	}, []string{"edge", "route"})
	m.upstreamErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "edgeplane_proxy_upstream_errors_total",
		Help: "Requests whose upstream failed or timed out, by edge and route.",
	}, []string{"edge", "route"})
	m.unroutedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "edgeplane_proxy_unrouted_total",
		Help: "Requests and TLS handshakes that reached no edge, by reason.",
	}, []string{"reason"})
	m.connections = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "edgeplane_proxy_connections_total",
		Help: "Connections to TLS and TCP edges, by kind (tls, tcp) and outcome.",
	}, []string{"kind", "outcome"})
	m.streamBytesVec = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "edgeplane_proxy_connection_bytes_total",
		Help: "Bytes relayed by TLS and TCP edges' connections, by kind and direction (in: client to upstream, out: upstream to client).",
	}, []string{"kind", "direction"})
	m.agentStreams = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "edgeplane_proxy_agent_streams_total",
		Help: "Streams opened to agents' tunnels, by kind (https, tls, tcp) and outcome (opened, no_session, failed).",
	}, []string{"kind", "outcome"})
	m.unroutedBy = map[string]prometheus.Counter{}
	for _, r := range []string{reasonUnknownHost, reasonMisdirected, reasonNoCertificate} {
		m.unroutedBy[r] = m.unroutedTotal.WithLabelValues(r)
	}
	return m
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	m.requests.Describe(ch)
	m.duration.Describe(ch)
	m.upstreamErrors.Describe(ch)
	m.unroutedTotal.Describe(ch)
	m.connections.Describe(ch)
	m.streamBytesVec.Describe(ch)
	m.agentStreams.Describe(ch)
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.requests.Collect(ch)
	m.duration.Collect(ch)
	m.upstreamErrors.Collect(ch)
	m.unroutedTotal.Collect(ch)
	m.connections.Collect(ch)
	m.streamBytesVec.Collect(ch)
	m.agentStreams.Collect(ch)
}

// connection counts a TLS or TCP edge's connection by its outcome.
func (m *Metrics) connection(kind, outcome string) {
	if m != nil {
		m.connections.WithLabelValues(kind, outcome).Inc()
	}
}

// streamBytes counts the bytes a connection relayed each way.
func (m *Metrics) streamBytes(kind string, in, out int64) {
	if m != nil {
		m.streamBytesVec.WithLabelValues(kind, "in").Add(float64(in))
		m.streamBytesVec.WithLabelValues(kind, "out").Add(float64(out))
	}
}

// agentStream counts a stream to an agent's tunnel of a request (kind
// https) or connection (tls, tcp) by the error of opening it.
func (m *Metrics) agentStream(kind string, err error) {
	if m == nil {
		return
	}
	outcome := agentOpened
	switch {
	case errors.Is(err, agents.ErrNoSession):
		outcome = agentNoSession
	case err != nil:
		outcome = agentFailed
	}
	m.agentStreams.WithLabelValues(kind, outcome).Inc()
}

// labels returns the edge and route labels of a pair: their own while
// fewer than max pairs have them, else OtherLabel.
func (m *Metrics) labels(edge, route string) (string, string) {
	key := edge + "/" + route
	if _, ok := m.series.Load(key); ok {
		return edge, route
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.series.Load(key); ok {
		return edge, route
	}
	if int(m.count.Load()) >= m.max {
		return OtherLabel, OtherLabel
	}
	m.series.Store(key, struct{}{})
	m.count.Add(1)
	return edge, route
}

func (m *Metrics) unrouted(reason string) {
	if m == nil {
		return
	}
	if c := m.unroutedBy[reason]; c != nil {
		c.Inc()
		return
	}
	m.unroutedTotal.WithLabelValues(reason).Inc()
}

// request counts a request routed to an edge.
func (m *Metrics) request(ex *exchange, action string, d time.Duration) {
	if m == nil {
		return
	}
	if ex.route == nil {
		edge, route := m.labels(ex.edge.ID(), "")
		m.requests.WithLabelValues(edge, route, action, statusClass(ex.w.status)).Inc()
		m.duration.WithLabelValues(edge, route).Observe(d.Seconds())
		return
	}
	s := ex.route.series.Load()
	if s == nil || s.m != m {
		s = m.newRouteSeries(ex.edge.ID(), ex.route.cfg.RouteID)
		ex.route.series.Store(s)
	}
	s.requests(action, ex.w.status).Inc()
	s.duration.Observe(d.Seconds())
	if ex.failed {
		s.upstreamErrors().Inc()
	}
}

// routeSeries are the metric children of one route of a snapshot,
// resolved through the label vectors once instead of at every request
// (hashing the label values and taking the vector's lock). The children
// of requests and upstreamErrors are resolved at their first use, so
// that a route exposes the same series as when every request resolved
// its own. A route keeps the routeSeries of the last Metrics that
// counted it (a Configs may serve several handlers).
type routeSeries struct {
	m           *Metrics
	edge, route string // the labels: the IDs, or OtherLabel past MaxSeries
	duration    prometheus.Observer
	byClass     [len(classes)]atomic.Pointer[prometheus.Counter] // requests with action "", by status class index
	errs        atomic.Pointer[prometheus.Counter]
}

func (m *Metrics) newRouteSeries(edgeID, routeID string) *routeSeries {
	s := &routeSeries{m: m}
	s.edge, s.route = m.labels(edgeID, routeID)
	s.duration = m.duration.WithLabelValues(s.edge, s.route)
	return s
}

// requests returns the requests counter of an action type and status.
func (s *routeSeries) requests(action string, status int) prometheus.Counter {
	i := classIndex(status)
	if action != "" || i < 0 {
		return s.m.requests.WithLabelValues(s.edge, s.route, action, statusClass(status))
	}
	if c := s.byClass[i].Load(); c != nil {
		return *c
	}
	c := s.m.requests.WithLabelValues(s.edge, s.route, "", classes[i])
	s.byClass[i].Store(&c)
	return c
}

// upstreamErrors returns the upstream errors counter.
func (s *routeSeries) upstreamErrors() prometheus.Counter {
	if c := s.errs.Load(); c != nil {
		return *c
	}
	c := s.m.upstreamErrors.WithLabelValues(s.edge, s.route)
	s.errs.Store(&c)
	return c
}

var classes = [...]string{"closed", "1xx", "2xx", "3xx", "4xx", "5xx"}

// statusClass returns the class label of a status code: "2xx" for 200,
// "closed" for 0 (no response).
func statusClass(code int) string {
	if i := classIndex(code); i >= 0 {
		return classes[i]
	}
	return strconv.Itoa(code/100) + "xx"
}

// classIndex returns the index in classes of a status code's class, or
// -1 for a code outside them.
func classIndex(code int) int {
	if c := code / 100; c >= 1 && c <= 5 {
		return c
	}
	if code == 0 {
		return 0
	}
	return -1
}
