package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/hosting"
	"github.com/edgeplane/edgeplane/internal/elect"
	"github.com/edgeplane/edgeplane/proxy"
	"github.com/edgeplane/edgeplane/webhook"
)

// eventConfig is what serve's event delivery flags say.
type eventConfig struct {
	deliver     bool
	networks    string
	nets        []netip.Prefix // networks parsed, by check
	retryWindow time.Duration
	timeout     time.Duration
	lease       time.Duration
	// feedRetention is how many changes the store's feed keeps.
	feedRetention int
}

// flagGroup is the heading of the flags that flags registers, for -h.
func (c *eventConfig) flagGroup(fs *flag.FlagSet) flagGroup {
	return flagGroup{"Events", fs, []string{"event-delivery", "event-networks", "event-retry-window", "event-timeout", "event-lease", "feed-retention"}}
}

func (c *eventConfig) flags(fs *flag.FlagSet) {
	fs.BoolVar(&c.deliver, "event-delivery", true, "deliver events to the event destinations (signed webhooks); one replica of a store delivers at a time (a lease), the others take over when it stops")
	fs.StringVar(&c.networks, "event-networks", "", "comma-separated CIDR prefixes or addresses: the only networks event destinations may reach, private ones included; a destination whose URL's host is, or resolves only to, an address outside them is refused when it is created or changed (default: public addresses only, since a tenant chooses the URL)")
	fs.DurationVar(&c.retryWindow, "event-retry-window", 24*time.Hour, "how long a failed event is retried, later events of its destination waiting, before it is dropped and the destination marked failing; keep the store's change feed longer than this")
	fs.DurationVar(&c.timeout, "event-timeout", 10*time.Second, "how long one delivery attempt may take")
	fs.DurationVar(&c.lease, "event-lease", 30*time.Second, "term of the lease by which one replica delivers: when the delivering replica dies, another takes over within about this long")
	fs.IntVar(&c.feedRetention, "feed-retention", 0, "how many of the newest changes the store's change feed keeps (SQLite and PostgreSQL; default 10000): a destination that fails for longer than the feed holds loses the events compacted away (counted as skipped), so keep at least your writes per -event-retry-window")
}

// check validates the flags.
func (c *eventConfig) check() error {
	var err error
	if c.nets, err = proxy.ParseNetworks(c.networks); err != nil {
		return usageError{"-event-networks: " + err.Error()}
	}
	if c.retryWindow <= 0 {
		return usageError{fmt.Sprintf("-event-retry-window %v: want a positive duration", c.retryWindow)}
	}
	if c.lease < time.Second || c.lease > hosting.MaxLeaseTerm {
		return usageError{fmt.Sprintf("-event-lease %v: want 1s to %v", c.lease, hosting.MaxLeaseTerm)}
	}
	if c.feedRetention < 0 {
		return usageError{fmt.Sprintf("-feed-retention %d: want 0 (the default) or more", c.feedRetention)}
	}
	if c.timeout <= 0 {
		return usageError{fmt.Sprintf("-event-timeout %v: want a positive duration", c.timeout)}
	}
	return nil
}

// serviceOptions are the Service's event options: destinations are
// refused at create and update where delivery could not reach them
// (-event-networks).
func (c *eventConfig) serviceOptions() events.Options {
	return events.Options{Networks: c.nets}
}

// startEvents delivers events, while this replica holds the "events"
// lease, until the returned stop is called.
func startEvents(ctx context.Context, host *edgeplane.Host, c eventConfig, log *slog.Logger, m *metrics) (stop func()) {
	if !c.deliver {
		return func() {}
	}
	em := m.watchDelivery()
	holder := holderName()
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = elect.Run(ctx, elect.Config{Leaser: host.Leases(), Name: "events", Holder: holder, Term: c.lease, Log: log,
			OnChange: func(held bool) {
				if held {
					em.leader.Set(1)
					log.Info("event delivery: this replica delivers", "holder", holder)
				} else {
					em.leader.Set(0)
				}
			}}, func(ctx context.Context) {
			_ = webhook.Run(ctx, host.EventDelivery(), webhook.Options{Networks: c.nets, Timeout: c.timeout, RetryWindow: c.retryWindow,
				Log: log, Metrics: em.callbacks()})
		})
	}()
	return func() { cancel(); <-done }
}

// holderName names this replica for the lease: host, process and a
// random part (a restarted process is another holder).
func holderName() string {
	host, _ := os.Hostname()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%.64s/%s/%s", host, strconv.Itoa(os.Getpid()), hex.EncodeToString(b))
}

// deliveryMetrics are event delivery's series.
type deliveryMetrics struct {
	attempts   *prometheus.CounterVec
	retries    *prometheus.CounterVec
	skipped    *prometheus.CounterVec
	lagRevs    *prometheus.GaugeVec
	lagSeconds *prometheus.GaugeVec
	leader     prometheus.Gauge
}

// watchDelivery registers event delivery's series.
func (m *metrics) watchDelivery() *deliveryMetrics {
	d := &deliveryMetrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "edgeplane_event_deliveries_total",
			Help: "Webhook delivery attempts by destination and outcome (delivered, failed: to be retried, dropped: given up after the retry window)."},
			[]string{"destination", "outcome"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "edgeplane_event_retries_total", Help: "Webhook delivery retries by destination."},
			[]string{"destination"}),
		skipped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "edgeplane_event_skipped_revisions_total",
			Help: "Store revisions the change feed compacted away before they were delivered, by destination."}, []string{"destination"}),
		lagRevs: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "edgeplane_event_lag_revisions",
			Help: "Store revisions (writes of every account) after a destination's cursor: at its last delivery or failed attempt; 0 once it has caught up."}, []string{"destination"}),
		lagSeconds: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "edgeplane_event_lag_seconds",
			Help: "How long a destination's oldest event not yet delivered has waited: the event being retried, or the last one delivered, at its delivery; 0 once the destination has caught up."}, []string{"destination"}),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{Name: "edgeplane_event_delivery_leader", Help: "1 while this replica delivers events (holds the lease)."}),
	}
	m.reg.MustRegister(d.attempts, d.retries, d.skipped, d.lagRevs, d.lagSeconds, d.leader)
	return d
}

// callbacks returns the Metrics webhook.Run reports to.
func (d *deliveryMetrics) callbacks() *webhook.Metrics {
	return &webhook.Metrics{
		Attempt: func(dest, outcome string) { d.attempts.WithLabelValues(dest, outcome).Inc() },
		Retry:   func(dest string) { d.retries.WithLabelValues(dest).Inc() },
		Skipped: func(dest string, n int64) { d.skipped.WithLabelValues(dest).Add(float64(n)) },
		Lag: func(dest string, revs int64, age time.Duration) {
			d.lagRevs.WithLabelValues(dest).Set(float64(revs))
			d.lagSeconds.WithLabelValues(dest).Set(age.Seconds())
		},
		Gone: func(dest string) {
			d.lagRevs.DeleteLabelValues(dest)
			d.lagSeconds.DeleteLabelValues(dest)
		},
	}
}
