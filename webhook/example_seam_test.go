package webhook_test

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edgeplane/edgeplane/webhook"
)

// oneDestination is a Source of one destination and the events of a
// feed that holds revisions 1 to len(events): all delivery asks of the
// Service (package edgeplane's Host implements it over the store). It
// keeps every delivery state saved, and says when delivery caught up.
type oneDestination struct {
	d        webhook.Destination
	events   []webhook.Event
	mu       sync.Mutex
	saved    []webhook.State
	caughtUp chan struct{} // closed when delivery waits past the last revision
	once     sync.Once
}

func (s *oneDestination) Destinations(context.Context) ([]webhook.Destination, error) {
	return []webhook.Destination{s.d}, nil
}
func (s *oneDestination) LoadState(context.Context, webhook.Destination) (webhook.State, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.saved) == 0 {
		return webhook.State{}, nil
	}
	return s.saved[len(s.saved)-1], nil
}
func (s *oneDestination) SaveState(_ context.Context, _ webhook.Destination, st webhook.State) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.saved = append(s.saved, st)
	return nil
}
func (s *oneDestination) Events(_ context.Context, _ webhook.Destination, after int64, limit int) (webhook.Batch, error) {
	b := webhook.Batch{Through: after}
	for _, ev := range s.events {
		if ev.Revision > after && len(b.Events) < limit {
			b.Events, b.Through = append(b.Events, ev), ev.Revision
		}
	}
	return b, nil
}
func (s *oneDestination) Revision(context.Context) (int64, error) { return int64(len(s.events)), nil }
func (s *oneDestination) Wait(ctx context.Context, after int64) error {
	if after < int64(len(s.events)) {
		return nil
	}
	s.once.Do(func() { close(s.caughtUp) })
	<-ctx.Done() // nothing more is written
	return ctx.Err()
}

// Run wired to a fake of its Source delivers the events of one
// destination in order, signed (Standard Webhooks); an event the
// receiver refuses is retried, and the states delivery saves through the
// Source say what happened.
func ExampleRun() {
	key := []byte("the destination's signing key")
	var attempts atomic.Int32
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		id, ts := r.Header.Get("webhook-id"), r.Header.Get("webhook-timestamp")
		unix, _ := strconv.ParseInt(ts, 10, 64)
		sig, _ := webhook.Sign(key, id, time.Unix(unix, 0), body)
		if attempts.Add(1) == 1 { // the first attempt is refused
			fmt.Println(id, string(body), "signed:", sig == r.Header.Get("webhook-signature"), "answered 503")
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, "busy")
			return
		}
		fmt.Println(id, string(body), "signed:", sig == r.Header.Get("webhook-signature"), "answered 204")
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()

	src := &oneDestination{caughtUp: make(chan struct{}),
		d: webhook.Destination{AccountID: "ac_1", ID: "ed_1", URL: receiver.URL, Key: key},
		events: []webhook.Event{
			{ID: "ev_1", Revision: 1, CreatedAt: time.Now(), Body: []byte(`{"type":"edge.created"}`)},
			{ID: "ev_2", Revision: 2, CreatedAt: time.Now(), Body: []byte(`{"type":"edge.deleted"}`)},
		}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		// The receiver is on 127.0.0.1: a network delivery must be told
		// it may reach (public addresses only, by default).
		done <- webhook.Run(ctx, src, webhook.Options{Networks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
			MinBackoff: time.Millisecond})
	}()
	<-src.caughtUp
	cancel()
	if err := <-done; err != context.Canceled {
		log.Fatal(err)
	}
	for _, st := range src.saved {
		fmt.Printf("saved: cursor %d, %s, %d delivered, last error: %s\n", st.Cursor, st.State, st.Delivered, cmp.Or(st.LastError, "none"))
	}
	// Output:
	// ev_1 {"type":"edge.created"} signed: true answered 503
	// ev_1 {"type":"edge.created"} signed: true answered 204
	// ev_2 {"type":"edge.deleted"} signed: true answered 204
	// saved: cursor 0, retrying, 0 delivered, last error: answered 503 Service Unavailable: "busy"
	// saved: cursor 0, ok, 1 delivered, last error: none
	// saved: cursor 2, ok, 2 delivered, last error: none
}
