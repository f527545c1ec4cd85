package events

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of [Options].
const (
	// DefaultQueueSize is the queue size when [Options.QueueSize] is zero.
	DefaultQueueSize = 1024
	// DefaultDeliveryTimeout is the time one [Sink.Deliver] call gets when
	// [Options.DeliveryTimeout] is zero.
	DefaultDeliveryTimeout = 10 * time.Second
	// DefaultResolveTimeout is the time the lookup of a destination's host
	// name gets when [Options.ResolveTimeout] is zero.
	DefaultResolveTimeout = 3 * time.Second
)

// Options configures event delivery. The zero value turns delivery off
// and uses the default registry.
type Options struct {
	// Sink receives the events. Nil turns delivery off: changes are not
	// queued and no goroutine runs.
	Sink Sink
	// QueueSize is how many changes may wait for delivery; a change that
	// finds the queue full is dropped. Zero means [DefaultQueueSize];
	// negative is treated as zero.
	QueueSize int
	// DeliveryTimeout bounds each [Sink.Deliver] call and each lookup of
	// the subscriptions a change goes to. Zero (or negative) means
	// [DefaultDeliveryTimeout].
	DeliveryTimeout time.Duration
	// Registry is the set of event types sources may name. Nil means the
	// Service's default (edgeplane.DefaultEventTypes). It is used whether
	// or not Sink is set.
	Registry *Registry
	// Networks, when not empty, are the only networks event destinations
	// may reach, private ones included; empty means public addresses
	// only (a tenant chooses the URL). A destination whose target URL
	// (target.http.url) has as its host an address outside them, or a
	// name that resolves only to addresses outside them, is refused when
	// it is created or its target is changed. Give delivery (package
	// webhook, its Options.Networks) the same networks: it checks every
	// address it dials again, since a name can resolve elsewhere later.
	Networks []netip.Prefix
	// Resolver looks up the host name of a destination's target URL when
	// the destination is created or its target changed. Nil means
	// net.DefaultResolver.
	Resolver Resolver
	// ResolveTimeout bounds that lookup, so that a create never waits
	// long on DNS: a name that does not resolve in time is refused, as
	// one that does not exist is. Zero (or negative) means
	// [DefaultResolveTimeout].
	ResolveTimeout time.Duration
}

// Resolver looks up the addresses of a host name, as [Options.Resolver]:
// *net.Resolver is one.
type Resolver interface {
	// LookupNetIP returns the addresses of host for network "ip", "ip4"
	// or "ip6".
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Change is a resource change waiting for delivery: what the Service
// reports after a successful write.
type Change struct {
	// AccountID is the account whose resource changed.
	AccountID string
	// Type is the event type, such as "ip_policy_created.v0".
	Type string
	// CreatedAt is when the change happened.
	CreatedAt time.Time
	// Object is the resource as the API shows it, as JSON.
	Object json.RawMessage
}

// Expander turns a change into its events: one per subscription of the
// account with a source of the change's type. The [Queue] calls it on its
// worker goroutine.
type Expander func(ctx context.Context, c Change) ([]Event, error)

// Stats are the counters of a [Queue], readable at any time. Counts only
// grow.
type Stats struct {
	// Pending is the number of changes waiting in the queue now.
	Pending int
	// Accepted counts changes that entered the queue.
	Accepted uint64
	// Dropped counts changes that were not delivered because the queue was
	// full, the queue was closed, or Close ran out of time before their
	// turn. Their events are lost.
	Dropped uint64
	// LookupErrors counts accepted changes whose subscriptions could not be
	// found (a store error); their events are lost.
	LookupErrors uint64
	// Delivered counts events the sink accepted.
	Delivered uint64
	// Failed counts events the sink rejected: it returned an error (such
	// as its context's, at the delivery timeout) or panicked. They are
	// not retried.
	Failed uint64
}

// Reasons a change is dropped, as logged.
const (
	reasonFull     = "queue full"
	reasonClosed   = "queue closed"
	reasonShutdown = "shutdown deadline passed"
)

// Queue is the bounded delivery queue: changes go in without ever
// blocking, and one worker goroutine turns each into events and hands them
// to the sink, one at a time, in order. Create it with [NewQueue] and stop
// it with [Queue.Close]. It is safe for concurrent use.
type Queue struct {
	sink    Sink
	expand  Expander
	timeout time.Duration
	log     *slog.Logger

	mu     sync.RWMutex // guards closed and sending on ch
	closed bool
	ch     chan Change

	abort context.CancelFunc // ends the worker's context: in-flight calls stop, the rest is dropped
	done  chan struct{}      // closed when the worker has returned

	accepted, dropped, lookupErrors, delivered, failed atomic.Uint64
}

// NewQueue starts a queue that delivers to opts.Sink the events expand
// makes of each change, logging to log (nil discards). It panics when
// opts.Sink or expand is nil: the caller decides whether delivery is on.
func NewQueue(opts Options, expand Expander, log *slog.Logger) *Queue {
	if opts.Sink == nil || expand == nil {
		panic("events.NewQueue: nil Sink or Expander")
	}
	size := opts.QueueSize
	if size <= 0 {
		size = DefaultQueueSize
	}
	timeout := opts.DeliveryTimeout
	if timeout <= 0 {
		timeout = DefaultDeliveryTimeout
	}
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	ctx, cancel := context.WithCancel(context.Background())
	q := &Queue{
		sink:    opts.Sink,
		expand:  expand,
		timeout: timeout,
		log:     log,
		ch:      make(chan Change, size),
		abort:   cancel,
		done:    make(chan struct{}),
	}
	go q.run(ctx)
	return q
}

// Enqueue hands c to the worker and reports whether it was accepted. It
// never blocks: when the queue is full or closed, c is dropped, counted and
// logged.
func (q *Queue) Enqueue(c Change) bool {
	q.mu.RLock()
	if q.closed {
		q.mu.RUnlock()
		q.drop(c, reasonClosed)
		return false
	}
	select {
	case q.ch <- c:
		q.mu.RUnlock()
		q.accepted.Add(1)
		return true
	default:
		q.mu.RUnlock()
		q.drop(c, reasonFull)
		return false
	}
}

// Put hands c to the worker, waiting while the queue is full, and reports
// whether it was accepted: false when the queue is closed (c is dropped,
// counted and logged) or ctx ends first (c is not counted: the caller
// still holds it).
func (q *Queue) Put(ctx context.Context, c Change) bool {
	q.mu.RLock()
	defer q.mu.RUnlock()
	if q.closed {
		q.drop(c, reasonClosed)
		return false
	}
	select {
	case q.ch <- c:
		q.accepted.Add(1)
		return true
	case <-ctx.Done():
		return false
	}
}

// Close stops accepting changes and waits until every accepted change has
// been delivered, or until ctx ends. In the second case it cancels the
// delivery in progress, drops the changes still waiting (counted) and
// returns ctx.Err() without waiting further; the worker goroutine exits as
// soon as the sink returns. Close may be called more than once; later
// calls wait like the first.
func (q *Queue) Close(ctx context.Context) error {
	q.mu.Lock()
	if !q.closed {
		q.closed = true
		close(q.ch)
	}
	q.mu.Unlock()
	select {
	case <-q.done:
		return nil
	case <-ctx.Done():
		q.abort()
		return ctx.Err()
	}
}

// Done returns a channel that is closed when the worker has finished: after
// [Queue.Close], every accepted change is delivered or dropped.
func (q *Queue) Done() <-chan struct{} { return q.done }

// Stats returns the queue's counters.
func (q *Queue) Stats() Stats {
	return Stats{
		Pending:      len(q.ch),
		Accepted:     q.accepted.Load(),
		Dropped:      q.dropped.Load(),
		LookupErrors: q.lookupErrors.Load(),
		Delivered:    q.delivered.Load(),
		Failed:       q.failed.Load(),
	}
}

// run is the worker: it drains the queue until it is closed.
func (q *Queue) run(ctx context.Context) {
	defer close(q.done)
	defer q.abort()
	for c := range q.ch {
		if ctx.Err() != nil {
			q.drop(c, reasonShutdown)
			continue
		}
		q.handle(ctx, c)
	}
}

// handle expands c and delivers its events.
func (q *Queue) handle(ctx context.Context, c Change) {
	var evs []Event
	err := q.call(ctx, func(ctx context.Context) (err error) {
		evs, err = q.expand(ctx, c)
		return err
	})
	if err != nil {
		n := q.lookupErrors.Add(1)
		if shouldLog(n) {
			q.log.Error("event delivery: cannot find the subscriptions of a change; its events are lost",
				"type", c.Type, "account", c.AccountID, "err", err, "lookup_errors", n)
		}
		return
	}
	for _, ev := range evs {
		ev.Object = slices.Clone(ev.Object)
		err := q.call(ctx, func(ctx context.Context) error { return q.sink.Deliver(ctx, ev) })
		if err == nil {
			q.delivered.Add(1)
			continue
		}
		n := q.failed.Add(1)
		if shouldLog(n) {
			q.log.Warn("event delivery: the sink failed; the event is not retried",
				"event", ev.ID, "type", ev.Type, "subscription", ev.SubscriptionID, "err", err, "failed", n)
		}
	}
}

// call runs fn with a context bounded by the delivery timeout, turning a
// panic into an error.
func (q *Queue) call(ctx context.Context, fn func(context.Context) error) (err error) {
	ctx, cancel := context.WithTimeout(ctx, q.timeout)
	defer cancel()
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return fn(ctx)
}

func (q *Queue) drop(c Change, reason string) {
	n := q.dropped.Add(1)
	if shouldLog(n) {
		q.log.Warn("event delivery: change dropped", "reason", reason, "type", c.Type, "account", c.AccountID, "dropped", n)
	}
}

// shouldLog throttles repeated log lines: the first 16 occurrences, then
// every 1024th, each carrying the running count.
func shouldLog(n uint64) bool { return n <= 16 || n%1024 == 0 }
