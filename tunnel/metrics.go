package tunnel

import (
	"net"
	"sync/atomic"

	"github.com/edgeplane/edgeplane/internal/muxframe"

	"github.com/prometheus/client_golang/prometheus"
)

// Reasons an agent's connection or request was refused: the values of
// the reason label of edgeplane_tunnel_refusals_total.
const (
	reasonHandshake       = "tls_handshake"     // the TLS handshake failed or timed out
	reasonAuthtoken       = "authtoken"         // unknown, malformed or deactivated authtoken
	reasonBadMessage      = "bad_message"       // a request that is not the expected JSON, or too large
	reasonInvalid         = "invalid"           // a request that breaks a field rule
	reasonACL             = "acl"               // the credential's ACL does not permit the bind
	reasonConflict        = "conflict"          // what the bind asks for is taken
	reasonGone            = "gone"              // the session was removed meanwhile
	reasonUnsupported     = "unsupported"       // a bind this server does not serve
	reasonTooManySessions = "too_many_sessions" // the server holds MaxSessions, or the account or credential its limit of sessions
	reasonTooManyTunnels  = "too_many_tunnels"  // the session holds MaxTunnelsPerSession, or the account its limit of tunnels or endpoints
	reasonResume          = "resume"            // a session cookie or bind token that is not valid
	reasonResumeExpired   = "resume_expired"    // a session cookie too old to take its session over (the session opens all the same)
	reasonIPRestricted    = "ip_restricted"     // an IP restriction of type agent refuses the agent's address

	reasonTooManyUnauthenticated = "too_many_unauthenticated" // the server, or the connection's address, holds its most connections not authenticated yet
	reasonProtocol               = "protocol"                 // a frame longer than the protocol allows (the connection is closed)
	reasonHeartbeat              = "heartbeat"                // heartbeats faster than the server answers (the connection is closed)
	reasonStalled                = "stalled"                  // the agent read nothing for the write timeout (the connection is closed)
)

// Metrics are a tunnel server's Prometheus metrics, a
// prometheus.Collector the host registers:
//
//   - edgeplane_tunnel_sessions: authenticated agent sessions held now;
//   - edgeplane_tunnel_tunnels{kind}: labeled tunnels and endpoints
//     those sessions hold now, kind labeled, http, https, tcp or tls;
//   - edgeplane_tunnel_refusals_total{reason}: connections and requests
//     refused, by reason (tls_handshake, authtoken, bad_message, invalid,
//     acl, conflict, gone, unsupported, too_many_sessions,
//     too_many_tunnels, too_many_unauthenticated, resume, ip_restricted,
//     protocol, heartbeat, stalled);
//   - edgeplane_tunnel_streams_total: connections handed to agents;
//   - edgeplane_tunnel_stream_bytes_total{direction}: their bytes, "in"
//     (to the agent) and "out" (from it).
//
// A nil *Metrics measures nothing.
type Metrics struct {
	sessions          atomic.Int64
	tunnels           [len(tunnelKinds)]atomic.Int64 // by kind, as tunnelKinds
	sessionsG         prometheus.GaugeFunc
	tunnelsG          []prometheus.GaugeFunc
	refusals          *prometheus.CounterVec
	streams           prometheus.Counter
	bytesIn, bytesOut prometheus.Counter
}

// NewMetrics returns the metrics of one Server.
func NewMetrics() *Metrics {
	m := &Metrics{}
	m.sessionsG = prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "edgeplane_tunnel_sessions",
		Help: "Authenticated agent sessions held."}, func() float64 { return float64(m.sessions.Load()) })
	for i, k := range tunnelKinds {
		m.tunnelsG = append(m.tunnelsG, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "edgeplane_tunnel_tunnels",
			Help: "Labeled tunnels and endpoints the agent sessions hold, by kind.", ConstLabels: prometheus.Labels{"kind": k}},
			func() float64 { return float64(m.tunnels[i].Load()) }))
	}
	m.refusals = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "edgeplane_tunnel_refusals_total",
		Help: "Agent connections and requests refused, by reason."}, []string{"reason"})
	m.streams = prometheus.NewCounter(prometheus.CounterOpts{Name: "edgeplane_tunnel_streams_total",
		Help: "Connections handed to agents."})
	bytes := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "edgeplane_tunnel_stream_bytes_total",
		Help: "Bytes of the connections handed to agents, in (to the agent) and out."}, []string{"direction"})
	m.bytesIn, m.bytesOut = bytes.WithLabelValues("in"), bytes.WithLabelValues("out")
	return m
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	prometheus.DescribeByCollect(m, ch)
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.sessionsG.Collect(ch)
	for _, g := range m.tunnelsG {
		g.Collect(ch)
	}
	m.refusals.Collect(ch)
	m.streams.Collect(ch)
	m.bytesIn.Collect(ch)
	m.bytesOut.Collect(ch)
}

// Sessions returns how many authenticated sessions the Server holds.
func (m *Metrics) Sessions() int64 {
	if m == nil {
		return 0
	}
	return m.sessions.Load()
}

// Tunnels returns how many tunnels and endpoints the Server's sessions
// hold.
func (m *Metrics) Tunnels() int64 {
	if m == nil {
		return 0
	}
	var n int64
	for i := range m.tunnels {
		n += m.tunnels[i].Load()
	}
	return n
}

// tunnelKinds are the values of the kind label of
// edgeplane_tunnel_tunnels: a labeled tunnel, or an endpoint's proto.
var tunnelKinds = [...]string{kindLabeled, "http", "https", "tcp", "tls"}

// kindLabeled is the kind of a labeled tunnel.
const kindLabeled = "labeled"

// kindIndex returns the index of kind in tunnelKinds.
func kindIndex(kind string) int {
	for i, k := range tunnelKinds {
		if k == kind {
			return i
		}
	}
	return 0
}

func (m *Metrics) refused(reason string) {
	if m != nil {
		m.refusals.WithLabelValues(reason).Inc()
	}
}

func (m *Metrics) sessionUp() {
	if m != nil {
		m.sessions.Add(1)
	}
}

func (m *Metrics) sessionDown() {
	if m != nil {
		m.sessions.Add(-1)
	}
}

func (m *Metrics) tunnelUp(kind string) {
	if m != nil {
		m.tunnels[kindIndex(kind)].Add(1)
	}
}

func (m *Metrics) tunnelDown(kind string) {
	if m != nil {
		m.tunnels[kindIndex(kind)].Add(-1)
	}
}

func (m *Metrics) streamOpened() {
	if m != nil {
		m.streams.Inc()
	}
}

// count returns the agent connection of stream c, counting its bytes
// when m measures.
func (m *Metrics) count(str *muxframe.Stream) net.Conn {
	return &agentConn{Conn: str, str: str, m: m}
}
