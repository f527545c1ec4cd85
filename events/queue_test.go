package events_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/events"
	"github.com/google/go-cmp/cmp"
)

// recorder is a sink that records what it receives.
type recorder struct {
	mu  sync.Mutex
	evs []events.Event
}

func (r *recorder) Deliver(_ context.Context, ev events.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, ev)
	return nil
}

func (r *recorder) ids() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, ev := range r.evs {
		out = append(out, ev.ID)
	}
	return out
}

// fanOut makes n events per change, with IDs "<object>/<i>".
func fanOut(n int) events.Expander {
	return func(_ context.Context, c events.Change) ([]events.Event, error) {
		var out []events.Event
		for i := range n {
			out = append(out, events.Event{ID: fmt.Sprintf("%s/%d", c.Object, i), Type: c.Type, Object: c.Object})
		}
		return out, nil
	}
}

func change(i int) events.Change {
	return events.Change{AccountID: "acct", Type: "thing_created.v0", Object: []byte(fmt.Sprint(i))}
}

func newLog() (*slog.Logger, *bytes.Buffer) {
	buf := new(bytes.Buffer)
	return slog.New(slog.NewTextHandler(buf, nil)), buf
}

func TestQueueDeliversEveryEventInOrder(t *testing.T) {
	rec := &recorder{}
	q := events.NewQueue(events.Options{Sink: rec}, fanOut(2), nil)
	for i := range 10 {
		if !q.Enqueue(change(i)) {
			t.Fatalf("change %d not accepted", i)
		}
	}
	if err := q.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 10 {
		want = append(want, fmt.Sprintf("%d/0", i), fmt.Sprintf("%d/1", i))
	}
	if diff := cmp.Diff(want, rec.ids()); diff != "" {
		t.Errorf("delivered (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(events.Stats{Accepted: 10, Delivered: 20}, q.Stats()); diff != "" {
		t.Errorf("stats (-want +got):\n%s", diff)
	}
	if err := q.Close(context.Background()); err != nil {
		t.Errorf("second Close = %v", err)
	}
}

// blocker is a sink that signals each call and waits for release (or its
// context).
type blocker struct {
	entered chan events.Event
	release chan struct{}
}

func newBlocker() *blocker {
	return &blocker{entered: make(chan events.Event, 100), release: make(chan struct{})}
}

func (b *blocker) Deliver(ctx context.Context, ev events.Event) error {
	b.entered <- ev
	select {
	case <-b.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func TestQueueFullDropsWithoutBlocking(t *testing.T) {
	b := newBlocker()
	log, logs := newLog()
	q := events.NewQueue(events.Options{Sink: b, QueueSize: 2}, fanOut(1), log)
	q.Enqueue(change(0))
	<-b.entered // the worker holds change 0; the queue is empty
	if !q.Enqueue(change(1)) || !q.Enqueue(change(2)) {
		t.Fatal("the queue did not take two changes")
	}
	if q.Enqueue(change(3)) {
		t.Fatal("a full queue accepted a change")
	}
	if got := q.Stats(); got.Pending != 2 || got.Accepted != 3 || got.Dropped != 1 {
		t.Errorf("stats while full = %+v", got)
	}
	close(b.release)
	if err := q.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := q.Stats(); got.Delivered != 3 || got.Dropped != 1 || got.Pending != 0 {
		t.Errorf("stats after Close = %+v", got)
	}
	if !strings.Contains(logs.String(), `reason="queue full"`) {
		t.Errorf("the drop was not logged with its reason: %s", logs)
	}
}

func TestQueueCloseDeadline(t *testing.T) {
	b := newBlocker()
	log, logs := newLog()
	q := events.NewQueue(events.Options{Sink: b}, fanOut(1), log)
	for i := range 3 {
		q.Enqueue(change(i))
	}
	<-b.entered
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := q.Close(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Close with an ended context = %v", err)
	}
	<-q.Done() // the sink saw its context end and returned
	want := events.Stats{Accepted: 3, Failed: 1, Dropped: 2}
	if diff := cmp.Diff(want, q.Stats()); diff != "" {
		t.Errorf("stats (-want +got):\n%s", diff)
	}
	if !strings.Contains(logs.String(), `reason="shutdown deadline passed"`) {
		t.Errorf("shutdown drops not logged: %s", logs)
	}
	if q.Enqueue(change(9)) {
		t.Error("a closed queue accepted a change")
	}
	if !strings.Contains(logs.String(), `reason="queue closed"`) {
		t.Errorf("closed drop not logged: %s", logs)
	}
}

func TestQueueSinkFailures(t *testing.T) {
	log, logs := newLog()
	var delivered []string
	sink := events.SinkFunc(func(_ context.Context, ev events.Event) error {
		switch string(ev.Object) {
		case "1":
			return errors.New("webhook returned 500")
		case "2":
			panic("sink bug")
		}
		delivered = append(delivered, ev.ID)
		return nil
	})
	q := events.NewQueue(events.Options{Sink: sink}, fanOut(1), log)
	for i := range 4 {
		q.Enqueue(change(i))
	}
	if err := q.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"0/0", "3/0"}, delivered); diff != "" {
		t.Errorf("delivered (-want +got):\n%s", diff)
	}
	if got := q.Stats(); got.Delivered != 2 || got.Failed != 2 {
		t.Errorf("stats = %+v", got)
	}
	for _, want := range []string{"webhook returned 500", "panic: sink bug", "failed=2"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q: %s", want, logs)
		}
	}
}

func TestQueueLookupErrors(t *testing.T) {
	log, logs := newLog()
	rec := &recorder{}
	expand := func(ctx context.Context, c events.Change) ([]events.Event, error) {
		if string(c.Object) == "1" {
			return nil, errors.New("store unavailable")
		}
		return fanOut(1)(ctx, c)
	}
	q := events.NewQueue(events.Options{Sink: rec}, expand, log)
	for i := range 3 {
		q.Enqueue(change(i))
	}
	q.Close(context.Background())
	if diff := cmp.Diff([]string{"0/0", "2/0"}, rec.ids()); diff != "" {
		t.Errorf("delivered (-want +got):\n%s", diff)
	}
	if got := q.Stats(); got.LookupErrors != 1 || got.Delivered != 2 {
		t.Errorf("stats = %+v", got)
	}
	if !strings.Contains(logs.String(), "store unavailable") {
		t.Errorf("lookup error not logged: %s", logs)
	}
}

func TestQueueDeliveryTimeout(t *testing.T) {
	var deadline time.Duration
	sink := events.SinkFunc(func(ctx context.Context, _ events.Event) error {
		d, ok := ctx.Deadline()
		if !ok {
			return errors.New("no deadline")
		}
		deadline = time.Until(d)
		<-ctx.Done() // a sink that hangs until its deadline
		return ctx.Err()
	})
	q := events.NewQueue(events.Options{Sink: sink, DeliveryTimeout: 5 * time.Millisecond}, fanOut(1), nil)
	q.Enqueue(change(0))
	q.Close(context.Background())
	if deadline <= 0 || deadline > 5*time.Millisecond {
		t.Errorf("sink deadline in %v, want within 5ms", deadline)
	}
	if got := q.Stats(); got.Failed != 1 {
		t.Errorf("stats = %+v", got)
	}
}

func TestQueueEventsOwnTheirObject(t *testing.T) {
	var objs []string
	sink := events.SinkFunc(func(_ context.Context, ev events.Event) error {
		objs = append(objs, string(ev.Object))
		ev.Object[0] = 'X' // a careless sink
		return nil
	})
	q := events.NewQueue(events.Options{Sink: sink}, fanOut(2), nil)
	q.Enqueue(change(7))
	q.Close(context.Background())
	if diff := cmp.Diff([]string{"7", "7"}, objs); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
}

func TestQueueConcurrentEnqueueAndClose(t *testing.T) {
	rec := &recorder{}
	q := events.NewQueue(events.Options{Sink: rec, QueueSize: 64}, fanOut(1), nil)
	const writers, each = 8, 500
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				q.Enqueue(change(w*each + i))
			}
		})
	}
	closed := make(chan error)
	go func() { closed <- q.Close(context.Background()) }()
	wg.Wait()
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	got := q.Stats()
	if got.Accepted+got.Dropped != writers*each || got.Delivered != got.Accepted || len(rec.ids()) != int(got.Delivered) {
		t.Errorf("stats %+v, %d recorded: every change must be delivered or dropped exactly once", got, len(rec.ids()))
	}
}

func TestNewQueuePanicsWithoutSink(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("NewQueue without a sink did not panic")
		}
	}()
	events.NewQueue(events.Options{}, fanOut(1), nil)
}

func BenchmarkEnqueue(b *testing.B) {
	sink := events.SinkFunc(func(context.Context, events.Event) error { return nil })
	q := events.NewQueue(events.Options{Sink: sink, QueueSize: 1 << 16}, func(context.Context, events.Change) ([]events.Event, error) { return nil, nil }, nil)
	defer q.Close(context.Background())
	c := change(1)
	b.ReportAllocs()
	for b.Loop() {
		q.Enqueue(c)
	}
}

// TestQueuePut: Put waits while the queue is full, gives up when its
// context ends (not counting the change), and drops (counting) once the
// queue is closed.
func TestQueuePut(t *testing.T) {
	release := make(chan struct{})
	sink := events.SinkFunc(func(context.Context, events.Event) error { <-release; return nil })
	expand := func(_ context.Context, c events.Change) ([]events.Event, error) {
		return []events.Event{{Type: c.Type}}, nil
	}
	q := events.NewQueue(events.Options{Sink: sink, QueueSize: 1}, expand, nil)
	c := events.Change{Type: "x_created.v0"}
	if !q.Put(context.Background(), c) || !q.Put(context.Background(), c) { // one in the worker, one waiting
		t.Fatal("Put refused with room")
	}
	full, cancel := context.WithCancel(context.Background())
	cancel()
	// The worker may not have taken the first change yet; either way the
	// queue has no room for a third.
	for q.Stats().Pending < 1 {
		runtime.Gosched()
	}
	if q.Put(full, c) {
		t.Error("Put into a full queue with an ended context succeeded")
	}
	done := make(chan bool)
	go func() { done <- q.Put(context.Background(), c) }()
	close(release) // the sink moves: room appears
	if !<-done {
		t.Error("a waiting Put was not accepted when room appeared")
	}
	if err := q.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if q.Put(context.Background(), c) {
		t.Error("Put after Close succeeded")
	}
	if st := q.Stats(); st.Accepted != 3 || st.Delivered != 3 || st.Dropped != 1 {
		t.Errorf("stats %+v; want 3 accepted and delivered, 1 dropped (after Close)", st)
	}
}
