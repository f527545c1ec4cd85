package main

import (
	"sync"

	"github.com/edgeplane/edgeplane/ipaccess"
	"github.com/prometheus/client_golang/prometheus"
)

// restrictionDecisions is the collector of
// edgeplane_ip_restriction_decisions_total{type,decision}: what the IP
// restrictions checked in this process decided, summed over the parts
// that check them (the Service for api and agent, the data plane for
// endpoints), decision refused (an enforced restriction refused the
// traffic) or warned (one that is not enforced would have; let through
// with a warning).
type restrictionDecisions struct {
	desc *prometheus.Desc

	mu      sync.Mutex
	sources []func() []ipaccess.TypeCount
}

func newRestrictionDecisions() *restrictionDecisions {
	return &restrictionDecisions{desc: prometheus.NewDesc("edgeplane_ip_restriction_decisions_total",
		"Traffic the IP restrictions refused (decision refused) or let through with a warning because they are not enforced (decision warned), by restriction type.",
		[]string{"type", "decision"}, nil)}
}

// add counts the decisions source reports too.
func (d *restrictionDecisions) add(source func() []ipaccess.TypeCount) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.sources = append(d.sources, source)
}

// Describe implements prometheus.Collector.
func (d *restrictionDecisions) Describe(ch chan<- *prometheus.Desc) { ch <- d.desc }

// Collect implements prometheus.Collector.
func (d *restrictionDecisions) Collect(ch chan<- prometheus.Metric) {
	d.mu.Lock()
	sources := d.sources
	d.mu.Unlock()
	var sum [len(ipaccess.Types)]ipaccess.TypeCount
	for _, src := range sources {
		for i, c := range src() {
			sum[i].Refused += c.Refused
			sum[i].Warned += c.Warned
		}
	}
	for i, typ := range ipaccess.Types {
		ch <- prometheus.MustNewConstMetric(d.desc, prometheus.CounterValue, float64(sum[i].Refused), typ, "refused")
		ch <- prometheus.MustNewConstMetric(d.desc, prometheus.CounterValue, float64(sum[i].Warned), typ, "warned")
	}
}
