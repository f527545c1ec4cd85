package hop

import "github.com/prometheus/client_golang/prometheus/testutil"

// MetricValue returns the value of one series of m: metric is streams
// or bytes (labels peer, direction) or errors (label reason).
func MetricValue(m *Metrics, metric string, labels ...string) float64 {
	switch metric {
	case "streams":
		return testutil.ToFloat64(m.streams.WithLabelValues(labels...))
	case "bytes":
		return testutil.ToFloat64(m.bytes.WithLabelValues(labels...))
	case "errors":
		return testutil.ToFloat64(m.errors.WithLabelValues(labels...))
	}
	panic("no metric " + metric)
}
