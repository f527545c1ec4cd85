package webhook

import (
	"context"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	"github.com/edgeplane/edgeplane/events"
)

// Delivery states ([State].State): package events' (the API shows them
// as stored).
const (
	StateOK       = events.StateOK
	StateRetrying = events.StateRetrying
	StateFailing  = events.StateFailing
)

// Destination is a destination as delivery needs it.
type Destination struct {
	// AccountID and ID name it.
	AccountID, ID string
	// URL, Headers and Key are its target: where events go, the headers
	// sent with them, the signing key.
	URL     string
	Headers map[string]string
	Key     []byte
}

// same reports whether d and o deliver alike.
func (d Destination) same(o Destination) bool {
	if d.URL != o.URL || string(d.Key) != string(o.Key) || len(d.Headers) != len(o.Headers) {
		return false
	}
	for k, v := range d.Headers {
		if ov, ok := o.Headers[k]; !ok || ov != v {
			return false
		}
	}
	return true
}

// State is the state of delivery to one destination, which the Source
// keeps in the store.
type State struct {
	// Cursor is the revision through which events were delivered.
	Cursor int64 `json:"cursor"`
	// State is StateOK ("" too), StateRetrying or StateFailing.
	State string `json:"state,omitempty"`
	// Attempts and LastError describe the event being retried (after a
	// success, none).
	Attempts  int    `json:"attempts,omitempty"`
	LastError string `json:"last_error,omitempty"`
	// PendingSince is when the event being retried happened.
	PendingSince *time.Time `json:"pending_since,omitempty"`
	// RetryingSince is when the event being retried was first tried: its
	// retry window goes on across a restart or a takeover.
	RetryingSince *time.Time `json:"retrying_since,omitempty"`
	// LastDeliveredAt is when an event was last delivered.
	LastDeliveredAt *time.Time `json:"last_delivered_at,omitempty"`
	// Delivered, Dropped and Skipped count events delivered, events given
	// up after the retry window, and revisions compacted away before
	// their delivery.
	Delivered int64 `json:"delivered,omitempty"`
	Dropped   int64 `json:"dropped,omitempty"`
	Skipped   int64 `json:"skipped,omitempty"`
	// Gaps counts the times Skipped grew: the feed had been compacted
	// past the cursor. Unlike Skipped, which counts every account's
	// writes, it may be shown to the destination's owner.
	Gaps int64 `json:"gaps,omitempty"`
}

// Event is one event for one destination.
type Event struct {
	// ID is the event's ID: the same for the same change, subscription
	// and destination on every replica and every read.
	ID string
	// Revision is the change's revision.
	Revision int64
	// CreatedAt is when the change happened.
	CreatedAt time.Time
	// Body is the event's JSON.
	Body []byte
}

// Batch is what [Source.Events] read.
type Batch struct {
	// Events are the destination's events, in revision order.
	Events []Event
	// Through is the last revision read: the cursor once Events are
	// delivered (equal to the cursor asked from when nothing is new).
	Through int64
	// Skipped counts revisions the feed no longer held (compacted past
	// the cursor); Through is past them.
	Skipped int64
}

// Source is what delivery reads and writes: edgeplane's Host.
type Source interface {
	// Destinations returns every destination of every account.
	Destinations(ctx context.Context) ([]Destination, error)
	// LoadState returns the state of delivery to d.
	LoadState(ctx context.Context, d Destination) (State, error)
	// SaveState records it.
	SaveState(ctx context.Context, d Destination, st State) error
	// Events returns d's events after revision after, reading at most
	// limit changes.
	Events(ctx context.Context, d Destination, after int64, limit int) (Batch, error)
	// Revision returns the store's revision.
	Revision(ctx context.Context) (int64, error)
	// Wait returns when the store's revision is above after, or ctx ends.
	Wait(ctx context.Context, after int64) error
}

// Metrics receives what delivery does; every method may be called from
// several goroutines. Nil methods are not called.
type Metrics struct {
	// Attempt is told the outcome of each attempt: "delivered",
	// "failed" (to be retried) or "dropped" (given up).
	Attempt func(destination, outcome string)
	// Retry is told of each retry.
	Retry func(destination string)
	// Skipped is told of revisions compacted away before delivery.
	Skipped func(destination string, n int64)
	// Lag is told how far the destination is behind: the store
	// revisions after its cursor and the age of the oldest event not yet
	// delivered. It is told after each batch of events delivered (the
	// age of the last one, at its delivery), after each failed attempt
	// (the age of the event being retried), and, with 0 and 0, when the
	// destination has caught up with the feed (when its worker starts
	// caught up too): nothing pending is a lag of 0, never the last
	// value.
	Lag func(destination string, revisions int64, age time.Duration)
	// Gone is told when a destination is no longer delivered to (deleted,
	// or this replica stopped), to drop its series.
	Gone func(destination string)
}

// Options configure [Run]. The zero value is usable with a Sender from
// Networks and Timeout.
type Options struct {
	// Networks, when set, are the only networks destinations may reach
	// (private ones included); empty means public addresses only.
	Networks []netip.Prefix
	// Timeout bounds each attempt (default 10s).
	Timeout time.Duration
	// RetryWindow is how long an event is retried before it is dropped
	// and the destination marked failing (default 24h).
	RetryWindow time.Duration
	// MinBackoff and MaxBackoff bound the waits between attempts
	// (defaults 1s and 10m).
	MinBackoff, MaxBackoff time.Duration
	// MaxInFlight bounds the attempts running at once (default 64).
	MaxInFlight int
	// Batch is how many changes one read of the feed takes (default 256).
	Batch int
	// Rescan is how often the list of destinations is read again
	// (default 2s).
	Rescan time.Duration
	// Now and After are the clock (defaults time.Now and time.After).
	Now   func() time.Time
	After func(time.Duration) <-chan time.Time
	// Sender makes the attempts; nil means NewSender(Networks, Timeout,
	// Now).
	Sender interface {
		Send(ctx context.Context, r Request) error
	}
	// Metrics receives counts; nil sends none.
	Metrics *Metrics
	// Log receives failures; nil logs nothing.
	Log *slog.Logger
}

func (o *Options) defaults() {
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.RetryWindow <= 0 {
		o.RetryWindow = 24 * time.Hour
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = time.Second
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 10 * time.Minute
	}
	o.MaxBackoff = max(o.MaxBackoff, o.MinBackoff)
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = 64
	}
	if o.Batch <= 0 {
		o.Batch = 256
	}
	if o.Rescan <= 0 {
		o.Rescan = 2 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.After == nil {
		o.After = time.After
	}
	if o.Sender == nil {
		o.Sender = NewSender(o.Networks, o.Timeout, o.Now)
	}
	if o.Metrics == nil {
		o.Metrics = &Metrics{}
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
}

// idleSaveRevisions is how far the cursor of a destination without
// events may run ahead of the one recorded.
const idleSaveRevisions = 10000

// Run delivers the events of every destination src lists until ctx
// ends (then it waits for its goroutines and returns ctx's error).
// Run it on one replica at a time (internal/elect).
func Run(ctx context.Context, src Source, opts Options) error {
	opts.defaults()
	r := &runner{src: src, o: opts, slots: make(chan struct{}, opts.MaxInFlight), workers: map[string]*worker{}}
	defer r.stopAll()
	for {
		r.rescan(ctx)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-opts.After(opts.Rescan):
		}
	}
}

// runner is one Run.
type runner struct {
	src     Source
	o       Options
	slots   chan struct{} // attempts in flight
	workers map[string]*worker
	wg      sync.WaitGroup
}

// worker delivers to one destination.
type worker struct {
	d      Destination
	cancel context.CancelFunc
	done   chan struct{}
}

// rescan starts a worker for each new destination, restarts the one of
// a changed destination, and stops those of destinations gone.
func (r *runner) rescan(ctx context.Context) {
	list, err := r.src.Destinations(ctx)
	if err != nil {
		if ctx.Err() == nil {
			r.o.Log.Error("event delivery: cannot list the destinations; trying again", "err", err)
		}
		return
	}
	seen := make(map[string]bool, len(list))
	for _, d := range list {
		seen[d.ID] = true
		if w, ok := r.workers[d.ID]; ok {
			if w.d.same(d) {
				continue
			}
			r.stop(w)
		}
		r.start(ctx, d)
	}
	for id, w := range r.workers {
		if !seen[id] {
			r.stop(w)
			r.o.callGone(id)
		}
	}
}

func (o *Options) callGone(id string) {
	if o.Metrics.Gone != nil {
		o.Metrics.Gone(id)
	}
}

func (r *runner) start(ctx context.Context, d Destination) {
	wctx, cancel := context.WithCancel(ctx)
	w := &worker{d: d, cancel: cancel, done: make(chan struct{})}
	r.workers[d.ID] = w
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer close(w.done)
		r.deliver(wctx, d)
	}()
}

func (r *runner) stop(w *worker) {
	w.cancel()
	<-w.done
	delete(r.workers, w.d.ID)
}

// stopAll stops every worker and tells Metrics.Gone of each destination
// (this replica no longer delivers to it).
func (r *runner) stopAll() {
	for _, w := range r.workers {
		w.cancel()
	}
	r.wg.Wait()
	for id := range r.workers {
		r.o.callGone(id)
	}
}

// sleep waits d or until ctx ends (false).
func (r *runner) sleep(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-r.o.After(d):
		return true
	}
}

// deliver delivers d's events until ctx ends.
func (r *runner) deliver(ctx context.Context, d Destination) {
	log := r.o.Log.With("destination", d.ID)
	var st State
	for {
		var err error
		if st, err = r.src.LoadState(ctx, d); err == nil {
			break
		}
		if ctx.Err() != nil {
			return
		}
		log.Error("event delivery: cannot read the delivery state; trying again", "err", err)
		if !r.sleep(ctx, time.Second) {
			return
		}
	}
	save := func() bool {
		// The state is saved even as ctx ends (a lost lease, a shutdown):
		// what was delivered is not delivered again.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.o.Timeout)
		defer cancel()
		if err := r.src.SaveState(sctx, d, st); err != nil {
			log.Error("event delivery: cannot record the delivery state", "err", err)
			return false
		}
		return true
	}
	saved := st.Cursor // the cursor the store holds
	lagging := true    // Metrics.Lag may hold a lag above 0 (or none yet)
	for ctx.Err() == nil {
		b, err := r.src.Events(ctx, d, st.Cursor, r.o.Batch)
		if err != nil {
			if ctx.Err() == nil {
				log.Error("event delivery: cannot read the change feed; trying again", "err", err)
				r.sleep(ctx, time.Second)
			}
			continue
		}
		if b.Skipped > 0 {
			st.Skipped += b.Skipped
			st.Gaps++
			log.Error("event delivery: the change feed was compacted past the destination's cursor; events lost", "revisions", b.Skipped, "cursor", st.Cursor)
			if r.o.Metrics.Skipped != nil {
				r.o.Metrics.Skipped(d.ID, b.Skipped)
			}
		}
		if b.Through <= st.Cursor && b.Skipped == 0 {
			// Caught up: nothing is pending.
			if lagging && r.o.Metrics.Lag != nil {
				r.o.Metrics.Lag(d.ID, 0, 0)
			}
			lagging = false
			if err := r.src.Wait(ctx, st.Cursor); err != nil {
				break
			}
			continue
		}
		for _, ev := range b.Events {
			if !r.deliverOne(ctx, d, &st, ev, save) {
				save()
				return
			}
		}
		st.Cursor = b.Through
		st.PendingSince = nil
		// A batch without events is recorded only now and then: the
		// state's own write is a revision that wakes every destination,
		// which must not write in turn.
		if len(b.Events) > 0 || b.Skipped > 0 || st.Cursor-saved >= idleSaveRevisions {
			if save() {
				saved = st.Cursor
			}
		}
		if len(b.Events) > 0 {
			r.lag(ctx, d, st.Cursor, b.Events[len(b.Events)-1].CreatedAt)
			lagging = true
		}
	}
	if st.Cursor != saved {
		save()
	}
}

// lag tells Metrics.Lag how far d, at cursor, is behind, the oldest
// event not yet delivered having happened at oldest.
func (r *runner) lag(ctx context.Context, d Destination, cursor int64, oldest time.Time) {
	if r.o.Metrics.Lag == nil {
		return
	}
	if rev, err := r.src.Revision(ctx); err == nil {
		r.o.Metrics.Lag(d.ID, max(rev-cursor, 0), max(r.o.Now().Sub(oldest), 0))
	}
}

// deliverOne delivers ev, retrying, or drops it after the retry window;
// false when ctx ended first. A destination that turns failing is
// logged once, as is one that recovers (its next delivery); the
// attempts between are counted, not logged.
func (r *runner) deliverOne(ctx context.Context, d Destination, st *State, ev Event, save func() bool) bool {
	first := r.o.Now()
	attempts := 0
	if st.State == StateRetrying && st.RetryingSince != nil && st.Cursor == ev.Revision-1 {
		// Retried before a restart or a takeover: the window goes on.
		first, attempts = *st.RetryingSince, st.Attempts
	}
	for {
		attempts++
		select {
		case r.slots <- struct{}{}:
		case <-ctx.Done():
			return false
		}
		actx, cancel := context.WithTimeout(ctx, r.o.Timeout)
		err := r.o.Sender.Send(actx, Request{URL: d.URL, Headers: d.Headers, Key: d.Key, ID: ev.ID, Body: ev.Body})
		cancel()
		<-r.slots
		if err == nil {
			now := r.o.Now()
			changed := st.State != StateOK && st.State != ""
			if st.State == StateFailing {
				r.o.Log.Warn("event delivery: a failing destination recovered: an event was delivered; its events are retried for the whole retry window again",
					"destination", d.ID, "account", d.AccountID, "event", ev.ID, "dropped", st.Dropped)
			}
			st.State, st.Attempts, st.LastError, st.LastDeliveredAt, st.RetryingSince, st.PendingSince = StateOK, 0, "", &now, nil, nil
			st.Delivered++
			r.count(d.ID, "delivered")
			if changed {
				st.Cursor = ev.Revision - 1
				save()
			}
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		msg := err.Error()
		if len(msg) > 512 {
			msg = msg[:512]
		}
		at := ev.CreatedAt
		since := first
		st.Attempts, st.LastError, st.PendingSince, st.Cursor, st.RetryingSince = attempts, msg, &at, ev.Revision-1, &since
		r.lag(ctx, d, st.Cursor, at)
		if st.State == StateFailing || r.o.Now().Sub(first) >= r.o.RetryWindow {
			if st.State != StateFailing {
				r.o.Log.Warn("event delivery: a destination is failing: an event failed for the whole retry window and was dropped; "+
					"from now on each event gets one attempt and is dropped when it fails, until one is delivered (the destination's delivery.last_error says why)",
					"destination", d.ID, "account", d.AccountID, "event", ev.ID, "attempts", attempts, "retry_window", r.o.RetryWindow, "err", msg)
			}
			st.State, st.RetryingSince = StateFailing, nil
			st.Dropped++
			r.count(d.ID, "dropped")
			save()
			return true
		}
		r.count(d.ID, "failed")
		st.State = StateRetrying
		save()
		if !r.sleep(ctx, min(Backoff(attempts, r.o.MinBackoff, r.o.MaxBackoff, nil), max(r.o.RetryWindow-r.o.Now().Sub(first), 0))) {
			return false
		}
		if r.o.Metrics.Retry != nil {
			r.o.Metrics.Retry(d.ID)
		}
	}
}

func (r *runner) count(id, outcome string) {
	if r.o.Metrics.Attempt != nil {
		r.o.Metrics.Attempt(id, outcome)
	}
}
