// Package policyprom is a Prometheus collector (github.com/prometheus/
// client_golang) for the traffic policy engine: a [policy.Observer] that
// counts evaluations, matched rules and executed actions and measures
// evaluation time. The host creates one, passes it as
// policy.Options.Observer and registers it:
//
//	c := policyprom.New(policyprom.Options{})
//	reg.MustRegister(c)
//	e, err := policy.NewEngine(policy.Options{Observer: c})
//
// # Metrics
//
//	edgeplane_policy_evaluations_total{target, phase, verdict}   counter
//	edgeplane_policy_evaluation_duration_seconds{target, phase}  histogram
//	edgeplane_policy_rules_matched_total{phase, rule}             counter
//	edgeplane_policy_actions_total{phase, action}                 counter
//
// # Cardinality
//
// target, phase and verdict take a few fixed values. rule is the rule's
// name (its location, such as "on_http_request[2]", when it has none) and
// action the action type; both come from documents, so each label keeps
// at most Options.MaxRuleLabels (MaxActionLabels) distinct values, the
// first seen, and counts the rest under "other". A value is cut to
// MaxLabelBytes bytes (at a UTF-8 boundary; invalid UTF-8 is replaced).
package policyprom

import (
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/edgeplane/edgeplane/policy"
)

// Bounds of the rule and action labels.
const (
	// DefaultMaxRuleLabels is Options.MaxRuleLabels when it is 0.
	DefaultMaxRuleLabels = 100
	// DefaultMaxActionLabels is Options.MaxActionLabels when it is 0.
	DefaultMaxActionLabels = 50
	// MaxLabelBytes is the longest label value; longer ones are cut.
	MaxLabelBytes = 64
	// OtherLabel is the label value of the rules or actions beyond the
	// bound.
	OtherLabel = "other"
)

// Options configures a [Collector]; the zero value gives the defaults.
type Options struct {
	// MaxRuleLabels bounds the distinct values of the rule label; 0 means
	// DefaultMaxRuleLabels.
	MaxRuleLabels int
	// MaxActionLabels bounds the distinct values of the action label; 0
	// means DefaultMaxActionLabels.
	MaxActionLabels int
	// Buckets are the duration histogram's buckets in seconds; nil means
	// exponential buckets from 1µs to about 4s.
	Buckets []float64
}

// Collector is a prometheus.Collector and a policy.Observer. It is safe
// for concurrent use.
type Collector struct {
	evals    *prometheus.CounterVec
	duration *prometheus.HistogramVec
	rules    *prometheus.CounterVec
	actions  *prometheus.CounterVec
	ruleSet  labelSet
	typeSet  labelSet
}

var _ policy.Observer = (*Collector)(nil)
var _ prometheus.Collector = (*Collector)(nil)

// New returns a Collector.
func New(o Options) *Collector {
	if o.MaxRuleLabels <= 0 {
		o.MaxRuleLabels = DefaultMaxRuleLabels
	}
	if o.MaxActionLabels <= 0 {
		o.MaxActionLabels = DefaultMaxActionLabels
	}
	if o.Buckets == nil {
		o.Buckets = prometheus.ExponentialBuckets(1e-6, 4, 12)
	}
	return &Collector{
		evals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edgeplane_policy_evaluations_total", Help: "Traffic policy evaluations by target, phase and verdict.",
		}, []string{"target", "phase", "verdict"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "edgeplane_policy_evaluation_duration_seconds", Help: "Traffic policy evaluation time by target and phase.",
			Buckets: o.Buckets,
		}, []string{"target", "phase"}),
		rules: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edgeplane_policy_rules_matched_total", Help: "Traffic policy rules that applied, by phase and rule name (bounded; the rest as other).",
		}, []string{"phase", "rule"}),
		actions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edgeplane_policy_actions_total", Help: "Traffic policy actions executed, by phase and action type (bounded; the rest as other).",
		}, []string{"phase", "action"}),
		ruleSet: labelSet{max: o.MaxRuleLabels},
		typeSet: labelSet{max: o.MaxActionLabels},
	}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	c.evals.Describe(ch)
	c.duration.Describe(ch)
	c.rules.Describe(ch)
	c.actions.Describe(ch)
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.evals.Collect(ch)
	c.duration.Collect(ch)
	c.rules.Collect(ch)
	c.actions.Collect(ch)
}

// RuleMatched implements policy.Observer.
func (c *Collector) RuleMatched(r policy.RuleEvent) {
	name := r.Rule
	if name == "" {
		name = r.Location
	}
	c.rules.WithLabelValues(r.Phase.String(), c.ruleSet.label(name)).Inc()
}

// ActionRan implements policy.Observer.
func (c *Collector) ActionRan(a policy.ActionEvent) {
	c.actions.WithLabelValues(a.Phase.String(), c.typeSet.label(a.Type)).Inc()
}

// Evaluated implements policy.Observer.
func (c *Collector) Evaluated(e policy.EvaluationEvent) {
	t, ph := e.Target.String(), e.Phase.String()
	c.evals.WithLabelValues(t, ph, e.Verdict.String()).Inc()
	c.duration.WithLabelValues(t, ph).Observe(e.Duration.Seconds())
}

// labelSet admits at most max distinct label values.
type labelSet struct {
	max  int
	mu   sync.RWMutex
	seen map[string]string // value as given -> label
}

// label returns the label of v: v itself (cut and made valid UTF-8) while
// fewer than max values have been seen, OtherLabel after.
func (s *labelSet) label(v string) string {
	s.mu.RLock()
	l, ok := s.seen[v]
	s.mu.RUnlock()
	if ok {
		return l
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if l, ok := s.seen[v]; ok {
		return l
	}
	if len(s.seen) >= s.max {
		return OtherLabel
	}
	if s.seen == nil {
		s.seen = map[string]string{}
	}
	l = clean(v)
	s.seen[strings.Clone(v)] = l
	return l
}

// clean makes v a label value: valid UTF-8 of at most MaxLabelBytes.
func clean(v string) string {
	v = strings.ToValidUTF8(v, "\uFFFD")
	if len(v) > MaxLabelBytes {
		n := MaxLabelBytes
		for n > 0 && !utf8.RuneStart(v[n]) {
			n--
		}
		v = v[:n]
	}
	return strings.Clone(v)
}
