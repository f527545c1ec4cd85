package webhook_test

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/internal/syncbuf"
	"github.com/edgeplane/edgeplane/webhook"
)

// fakeSource is a Source of one destination whose feed holds the events
// revs, after a compaction that dropped the revisions up to oldest-1.
type fakeSource struct {
	mu     sync.Mutex
	d      webhook.Destination
	events []webhook.Event
	oldest int64 // the oldest revision the feed still holds
	state  webhook.State
	saves  int
}

func (f *fakeSource) Destinations(context.Context) ([]webhook.Destination, error) {
	return []webhook.Destination{f.d}, nil
}

func (f *fakeSource) LoadState(context.Context, webhook.Destination) (webhook.State, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.state, nil
}

func (f *fakeSource) SaveState(_ context.Context, _ webhook.Destination, st webhook.State) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.state = st
	f.saves++
	return nil
}

func (f *fakeSource) last() int64 { return f.events[len(f.events)-1].Revision }

func (f *fakeSource) Events(_ context.Context, _ webhook.Destination, after int64, limit int) (webhook.Batch, error) {
	if after < f.oldest-1 {
		return webhook.Batch{Through: f.oldest - 1, Skipped: f.oldest - 1 - after}, nil
	}
	b := webhook.Batch{Through: after}
	for _, ev := range f.events {
		if ev.Revision > after && len(b.Events) < limit {
			b.Events = append(b.Events, ev)
			b.Through = ev.Revision
		}
	}
	return b, nil
}

func (f *fakeSource) Revision(context.Context) (int64, error) { return f.last(), nil }

func (f *fakeSource) Wait(ctx context.Context, after int64) error {
	if after < f.last() {
		return nil
	}
	<-ctx.Done()
	return ctx.Err()
}

// fakeSender fails while fail says so, and records the attempts.
type fakeSender struct {
	mu       sync.Mutex
	fail     func(id string, attempt int) bool
	attempts map[string]int
	order    []string // IDs of the delivered events
	done     chan struct{}
	want     int
}

func (s *fakeSender) Send(_ context.Context, r webhook.Request) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.attempts[r.ID]++
	if s.fail(r.ID, s.attempts[r.ID]) {
		return errors.New("answered 500 Internal Server Error")
	}
	s.order = append(s.order, r.ID)
	if len(s.order) == s.want {
		close(s.done)
	}
	return nil
}

// fakeClock advances by every wait asked of it, at once; a wait of an
// hour or more (the rescan's) never ends.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	if d >= time.Hour {
		return nil
	}
	c.mu.Lock()
	c.now = c.now.Add(d)
	now := c.now
	c.mu.Unlock()
	ch := make(chan time.Time, 1)
	ch <- now
	return ch
}

func runUntil(t *testing.T, src *fakeSource, snd *fakeSender, clock *fakeClock, window time.Duration) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		done <- webhook.Run(ctx, src, webhook.Options{Sender: snd, Now: clock.Now, After: clock.After, RetryWindow: window,
			MinBackoff: time.Second, MaxBackoff: time.Minute, Rescan: time.Hour})
	}()
	select {
	case <-snd.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("not delivered: %v", snd.order)
	}
	cancel()
	<-done
}

func someEvents(n int) []webhook.Event {
	var out []webhook.Event
	for i := 1; i <= n; i++ {
		out = append(out, webhook.Event{ID: "ev_" + strconv.Itoa(i), Revision: int64(10 + i), Body: []byte("{}")})
	}
	return out
}

// An event that fails for the whole retry window is dropped and the
// destination marked failing; from then on each event gets one attempt
// (a failure drops it) until one succeeds, which makes it ok again.
// Retries repeat the event's ID; later events wait for it.
func TestRunRetryWindow(t *testing.T) {
	src := &fakeSource{d: webhook.Destination{ID: "ed_1", URL: "https://h.example.com"}, events: someEvents(4), state: webhook.State{Cursor: 10}}
	clock := &fakeClock{now: time.Unix(1_800_000_000, 0)}
	snd := &fakeSender{attempts: map[string]int{}, done: make(chan struct{}), want: 2,
		fail: func(id string, _ int) bool { return id == "ev_1" || id == "ev_2" }}
	runUntil(t, src, snd, clock, time.Hour)
	if snd.order[0] != "ev_3" || snd.order[1] != "ev_4" {
		t.Fatalf("delivered %v", snd.order)
	}
	// ev_1: tried with backoff (1s, 2s, 4s ... capped at 1m) for an hour.
	if n := snd.attempts["ev_1"]; n < 60 || n > 200 {
		t.Errorf("ev_1 attempted %d times in a 1h window", n)
	}
	if n := snd.attempts["ev_2"]; n != 1 {
		t.Errorf("ev_2, after the destination was failing, attempted %d times, want 1", n)
	}
	src.mu.Lock()
	defer src.mu.Unlock()
	st := src.state
	if st.State != webhook.StateOK || st.Dropped != 2 || st.Delivered != 2 || st.Cursor != 14 || st.LastError != "" {
		t.Errorf("state %+v", st)
	}
}

// A feed compacted past the cursor: the revisions lost are counted as
// skipped, and delivery goes on from the oldest one kept.
func TestRunSkipped(t *testing.T) {
	src := &fakeSource{d: webhook.Destination{ID: "ed_1"}, events: someEvents(5), oldest: 13, state: webhook.State{Cursor: 4}}
	clock := &fakeClock{now: time.Unix(1_800_000_000, 0)}
	snd := &fakeSender{attempts: map[string]int{}, done: make(chan struct{}), want: 3, fail: func(string, int) bool { return false }}
	runUntil(t, src, snd, clock, time.Hour)
	if len(snd.order) != 3 || snd.order[0] != "ev_3" {
		t.Fatalf("delivered %v", snd.order)
	}
	src.mu.Lock()
	defer src.mu.Unlock()
	if src.state.Skipped != 8 || src.state.Gaps != 1 || src.state.Cursor != 15 {
		t.Errorf("state %+v, want 8 skipped (revisions 5 to 12) in 1 gap, cursor 15", src.state)
	}
}

// The retry window goes on across a restart: an event whose retries
// began a window ago (the stored state says so) gets one more attempt,
// then is dropped.
func TestRunRetryWindowSurvivesRestart(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1_800_000_000, 0)}
	began := clock.now.Add(-time.Hour)
	src := &fakeSource{d: webhook.Destination{ID: "ed_1"}, events: someEvents(2),
		state: webhook.State{Cursor: 10, State: webhook.StateRetrying, Attempts: 40, RetryingSince: &began}}
	snd := &fakeSender{attempts: map[string]int{}, done: make(chan struct{}), want: 1, fail: func(id string, _ int) bool { return id == "ev_1" }}
	runUntil(t, src, snd, clock, time.Hour)
	if n := snd.attempts["ev_1"]; n != 1 {
		t.Errorf("ev_1 attempted %d times after the restart, want 1", n)
	}
	src.mu.Lock()
	defer src.mu.Unlock()
	if src.state.Dropped != 1 || src.state.Delivered != 1 {
		t.Errorf("state %+v", src.state)
	}
}

// multiSource is fakeSource with several destinations, each with the
// same events and its own state.
type multiSource struct {
	*fakeSource
	dests []webhook.Destination
}

func (m multiSource) Destinations(context.Context) ([]webhook.Destination, error) {
	return m.dests, nil
}

func (m multiSource) SaveState(context.Context, webhook.Destination, webhook.State) error { return nil }

// concurrencySender counts the attempts in flight, per destination and
// in all.
type concurrencySender struct {
	mu               sync.Mutex
	inFlight, maxAll int
	perDest          map[string]int
	maxPerDest, sent int
	done             chan struct{}
	want             int
}

func (s *concurrencySender) Send(_ context.Context, r webhook.Request) error {
	s.mu.Lock()
	s.inFlight++
	s.perDest[r.URL]++
	s.maxAll = max(s.maxAll, s.inFlight)
	s.maxPerDest = max(s.maxPerDest, s.perDest[r.URL])
	s.mu.Unlock()
	time.Sleep(time.Millisecond) // holds the slot while the others try
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inFlight--
	s.perDest[r.URL]--
	s.sent++
	if s.sent == s.want {
		close(s.done)
	}
	return nil
}

// At most MaxInFlight attempts run at once in all (and that many do),
// and one per destination. When Run ends, Metrics.Gone is told of every
// destination.
func TestRunBoundsInFlight(t *testing.T) {
	src := multiSource{fakeSource: &fakeSource{events: someEvents(5), state: webhook.State{Cursor: 10}}}
	for i := range 6 {
		src.dests = append(src.dests, webhook.Destination{ID: "ed_" + strconv.Itoa(i), URL: "https://h" + strconv.Itoa(i) + ".example.com"})
	}
	snd := &concurrencySender{perDest: map[string]int{}, done: make(chan struct{}), want: 30}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	var goneMu sync.Mutex
	gone := map[string]bool{}
	metrics := &webhook.Metrics{Gone: func(id string) { goneMu.Lock(); gone[id] = true; goneMu.Unlock() }}
	go func() {
		done <- webhook.Run(ctx, src, webhook.Options{Sender: snd, MaxInFlight: 2, Rescan: time.Hour, Metrics: metrics})
	}()
	select {
	case <-snd.done:
	case <-time.After(30 * time.Second):
		t.Fatal("not delivered")
	}
	cancel()
	<-done
	if snd.maxAll != 2 || snd.maxPerDest != 1 {
		t.Fatalf("at most %d in flight in all (want 2), %d per destination (want 1)", snd.maxAll, snd.maxPerDest)
	}
	goneMu.Lock()
	defer goneMu.Unlock()
	if len(gone) != len(src.dests) {
		t.Fatalf("Gone told of %v, want every one of the %d destinations", gone, len(src.dests))
	}
}

// A destination that turns failing is logged once, and once when it
// recovers: not at each attempt, nor at each event dropped while it is
// failing. Two episodes, two of each.
func TestRunLogsFailingAndRecoveryOnce(t *testing.T) {
	src := &fakeSource{d: webhook.Destination{AccountID: "acct_1", ID: "ed_1"}, events: someEvents(7), state: webhook.State{Cursor: 10}}
	clock := &fakeClock{now: time.Unix(1_800_000_000, 0)}
	failing := map[string]bool{"ev_1": true, "ev_2": true, "ev_4": true, "ev_5": true, "ev_6": true}
	snd := &fakeSender{attempts: map[string]int{}, done: make(chan struct{}), want: 2, fail: func(id string, _ int) bool { return failing[id] }}
	logs := new(syncbuf.Buffer)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		done <- webhook.Run(ctx, src, webhook.Options{Sender: snd, Now: clock.Now, After: clock.After, RetryWindow: time.Hour,
			MinBackoff: time.Second, MaxBackoff: time.Minute, Rescan: time.Hour, Log: slog.New(slog.NewTextHandler(logs, nil))})
	}()
	select {
	case <-snd.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("not delivered: %v", snd.order)
	}
	cancel()
	<-done
	out := logs.String()
	if n := strings.Count(out, "a destination is failing"); n != 2 {
		t.Errorf("logged failing %d times, want 2 (ev_1 and ev_4 each turned it failing):\n%s", n, out)
	}
	if n := strings.Count(out, "a failing destination recovered"); n != 2 {
		t.Errorf("logged recovered %d times, want 2 (ev_3 and ev_7):\n%s", n, out)
	}
	if n := strings.Count(out, "\n"); n != 4 {
		t.Errorf("%d log lines, want the 4 above:\n%s", n, out)
	}
	for _, want := range []string{"level=WARN", "destination=ed_1", "account=acct_1", "retry_window=1h0m0s", "answered 500"} {
		if !strings.Contains(out, want) {
			t.Errorf("the logs do not say %s:\n%s", want, out)
		}
	}
	if snd.attempts["ev_5"] != 1 || snd.attempts["ev_6"] != 1 || snd.order[0] != "ev_3" || snd.order[1] != "ev_7" {
		t.Errorf("attempts %v, delivered %v", snd.attempts, snd.order)
	}
}

// Metrics.Lag is 0, 0 once the destination has caught up, not the lag
// of its last delivery (which an API reader sees as nothing pending).
func TestRunLagZeroWhenCaughtUp(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1_800_000_000, 0)}
	evs := someEvents(3)
	for i := range evs {
		evs[i].CreatedAt = clock.now.Add(-time.Minute)
	}
	src := &fakeSource{d: webhook.Destination{ID: "ed_1"}, events: evs, state: webhook.State{Cursor: 10}}
	snd := &fakeSender{attempts: map[string]int{}, done: make(chan struct{}), want: 3, fail: func(id string, n int) bool { return id == "ev_2" && n < 3 }}
	type lag struct {
		revs int64
		age  time.Duration
	}
	lags := make(chan lag, 100)
	metrics := &webhook.Metrics{Lag: func(dest string, revs int64, age time.Duration) { lags <- lag{revs, age} }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		done <- webhook.Run(ctx, src, webhook.Options{Sender: snd, Now: clock.Now, After: clock.After, RetryWindow: time.Hour,
			MinBackoff: time.Second, MaxBackoff: time.Minute, Rescan: time.Hour, Metrics: metrics})
	}()
	defer func() { cancel(); <-done }()
	var got []lag
	deadline := time.After(10 * time.Second)
	for {
		select {
		case l := <-lags:
			got = append(got, l)
		case <-deadline:
			t.Fatalf("no lag of 0 after the deliveries: %v", got)
		}
		if last := got[len(got)-1]; len(got) > 1 && last == (lag{}) {
			break
		}
	}
	// While ev_2 was retried, its age was shown, growing.
	var retried []time.Duration
	for _, l := range got[:len(got)-1] {
		if l.age <= 0 {
			t.Errorf("lag %+v before catching up, want an age above 0", l)
		}
		retried = append(retried, l.age)
	}
	if len(retried) < 3 || retried[1] <= retried[0] {
		t.Errorf("ages reported while behind %v, want one per failed attempt, growing, then the delivery's", retried)
	}
}
