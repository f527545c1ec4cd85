package hop

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// Reasons a connection or stream failed: the values of the reason label
// of edgeplane_hop_errors_total.
const (
	reasonAuth      = "auth"       // a peer that is not a node of the store (no certificate, another key, not TLS), either way
	reasonDial      = "dial"       // connecting to a peer node failed (address, TCP, TLS handshake, timeout)
	reasonRefused   = "refused"    // the peer node refused a stream we forwarded
	reasonBadHeader = "bad_header" // a peer's stream header was too large, not JSON, or broke a field rule
	reasonLocal     = "local"      // the local dial to the agent failed for a stream a peer forwarded
)

// errorReasons are every reason, counted from 0.
var errorReasons = [...]string{reasonAuth, reasonDial, reasonRefused, reasonBadHeader, reasonLocal}

// Directions: the values of the direction label.
const (
	dirOut = "out" // streams we forwarded to a peer; connections we dialed
	dirIn  = "in"  // streams we served for a peer; connections we accepted
)

// Metrics are a Hop's Prometheus metrics, a prometheus.Collector the
// host registers:
//
//   - edgeplane_hop_streams_total{peer,direction}: streams opened, "out"
//     (forwarded by this node to peer) and "in" (served for peer);
//   - edgeplane_hop_bytes_total{peer,direction}: the bytes those streams
//     carried, both ways;
//   - edgeplane_hop_errors_total{reason}: failures, by reason (auth,
//     dial, refused, bad_header, local);
//   - edgeplane_hop_peers{direction}: peer connections open now, "out"
//     (dialed) and "in" (accepted).
//
// The peer label is a node ID: there are as many values as nodes. A nil
// *Metrics measures nothing.
type Metrics struct {
	streams, bytes    *prometheus.CounterVec
	errors            *prometheus.CounterVec
	peersIn, peersOut atomic.Int64
	peersG            []prometheus.GaugeFunc
}

// NewMetrics returns the metrics of one Hop.
func NewMetrics() *Metrics {
	m := &Metrics{}
	m.streams = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "edgeplane_hop_streams_total",
		Help: "Streams between nodes, out (forwarded to peer) and in (served for peer)."}, []string{"peer", "direction"})
	m.bytes = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "edgeplane_hop_bytes_total",
		Help: "Bytes the streams between nodes carried, both ways, by peer and direction of the stream."}, []string{"peer", "direction"})
	m.errors = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "edgeplane_hop_errors_total",
		Help: "Hop failures, by reason."}, []string{"reason"})
	for _, r := range errorReasons {
		m.errors.WithLabelValues(r)
	}
	for _, dir := range [...]string{dirOut, dirIn} {
		n := m.peerGauge(dir)
		m.peersG = append(m.peersG, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "edgeplane_hop_peers",
			Help: "Connections to peer nodes open now, out (dialed) and in (accepted).", ConstLabels: prometheus.Labels{"direction": dir}},
			func() float64 { return float64(n.Load()) }))
	}
	return m
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	prometheus.DescribeByCollect(m, ch)
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.streams.Collect(ch)
	m.bytes.Collect(ch)
	m.errors.Collect(ch)
	for _, g := range m.peersG {
		g.Collect(ch)
	}
}

// Peers returns how many peer connections are open now, dialed and
// accepted.
func (m *Metrics) Peers() (out, in int64) {
	if m == nil {
		return 0, 0
	}
	return m.peersOut.Load(), m.peersIn.Load()
}

func (m *Metrics) failed(reason string) {
	if m != nil {
		m.errors.WithLabelValues(reason).Inc()
	}
}

func (m *Metrics) peerUp(dir string) {
	if m != nil {
		m.peerGauge(dir).Add(1)
	}
}

func (m *Metrics) peerDown(dir string) {
	if m != nil {
		m.peerGauge(dir).Add(-1)
	}
}

func (m *Metrics) peerGauge(dir string) *atomic.Int64 {
	if dir == dirIn {
		return &m.peersIn
	}
	return &m.peersOut
}

// peerCounters are the counters of one peer and direction, looked up
// once per connection rather than per stream.
type peerCounters struct {
	streams, bytes prometheus.Counter // nil: nothing measured
}

// counters returns the counters of peer in direction dir.
func (m *Metrics) counters(peer, dir string) peerCounters {
	if m == nil {
		return peerCounters{}
	}
	return peerCounters{streams: m.streams.WithLabelValues(peer, dir), bytes: m.bytes.WithLabelValues(peer, dir)}
}

func (c peerCounters) opened() {
	if c.streams != nil {
		c.streams.Inc()
	}
}
