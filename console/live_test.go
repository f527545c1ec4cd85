package console_test

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/console"
)

// liveBound is how long a test waits for an event of the overview's
// stream: a bound on a hung test, never a wait for time to pass.
const liveBound = 20 * time.Second

// event is one server-sent event.
type event struct {
	name, data string
}

// stream is an open /console/live of a browser.
type stream struct {
	t      *testing.T
	events chan event
	cancel context.CancelFunc
}

// live opens the overview's stream of b.
func (b *browser) live() *stream {
	b.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", b.s.srv.URL+"/console/live", nil)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := b.c.Do(req)
	if err != nil {
		cancel()
		b.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		cancel()
		resp.Body.Close()
		b.t.Fatalf("GET /console/live: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	s := &stream{t: b.t, events: make(chan event, 64), cancel: cancel}
	go func() {
		defer resp.Body.Close()
		defer close(s.events)
		r := bufio.NewReader(resp.Body)
		var e event
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			line = strings.TrimRight(line, "\n")
			switch {
			case line == "":
				s.events <- e
				e = event{}
			case strings.HasPrefix(line, "event: "):
				e.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				e.data += strings.TrimPrefix(line, "data: ") + "\n"
			}
		}
	}()
	b.t.Cleanup(cancel)
	return s
}

// next returns the stream's next event; ok is false when the stream
// closed.
func (s *stream) next() (event, bool) {
	s.t.Helper()
	select {
	case e, ok := <-s.events:
		return e, ok
	case <-time.After(liveBound):
		s.t.Fatalf("no event in %v", liveBound)
		return event{}, false
	}
}

// until returns the first event for which ok holds, checking every
// event before it with each.
func (s *stream) until(what string, ok func(event) bool, each func(event)) event {
	s.t.Helper()
	for {
		e, open := s.next()
		if !open {
			s.t.Fatalf("the stream closed before %s", what)
		}
		if each != nil {
			each(e)
		}
		if ok(e) {
			return e
		}
	}
}

// TestLiveFeed: with the store's feed, an account's change reaches its
// open overview without waiting for the poll (which is an hour here):
// another account's agent does not show in it; a revoked key ends the
// stream at once.
func TestLiveFeed(t *testing.T) {
	s := newServer(t, console.Options{PollInterval: time.Hour})
	b := s.browser(t)
	b.signIn(s.a.key)
	if page := b.get("/console/"); !strings.Contains(page.body, "the lists update as it changes.") {
		t.Errorf("the overview does not say it is live: %s", page.body)
	}
	st := b.live()
	if first, _ := st.next(); first.name != "update" || !strings.Contains(first.data, "No agent is connected.") {
		t.Fatalf("the first event: %+v", first)
	}

	bSession, bEndpoint := s.openSession(s.b, "b.example.com")
	ts, ep := s.openSession(s.a, "app.example.com")
	st.until("a's endpoint shows", func(e event) bool {
		return e.name == "update" && strings.Contains(e.data, ep.URL) && strings.Contains(e.data, ts.ID)
	}, func(e event) {
		if e.name != "update" {
			t.Fatalf("event %+v", e)
		}
		if strings.Contains(e.data, bSession.ID) || strings.Contains(e.data, bEndpoint.URL) {
			t.Errorf("a's overview shows b's agent: %s", e.data)
		}
	})

	keys, err := s.svc.ListAPIKeys(context.Background(), s.a.p, edgeplane.ListOptions{})
	must(t, err)
	must(t, s.svc.DeleteAPIKey(context.Background(), s.a.p, keys.Items[0].ID))
	st.until("the end", func(e event) bool { return e.name == "end" }, nil)
	if e, open := st.next(); open {
		t.Errorf("after the end: %+v", e)
	}
}

// TestLivePoll: without a feed, the overview polls the Service.
func TestLivePoll(t *testing.T) {
	s := newServerFeed(t, console.Options{PollInterval: 20 * time.Millisecond}, false)
	b := s.browser(t)
	b.signIn(s.a.key)
	if page := b.get("/console/"); !strings.Contains(page.body, "the lists update every 20ms.") {
		t.Errorf("the overview does not say it polls: %s", page.body)
	}
	st := b.live()
	_, ep := s.openSession(s.a, "app.example.com")
	st.until("the endpoint shows", func(e event) bool { return e.name == "update" && strings.Contains(e.data, ep.URL) }, nil)
}

// TestLiveBusy: beyond MaxLiveStreams (an account may hold a tenth, at
// least one), a stream is told live updates are busy, and closes.
func TestLiveBusy(t *testing.T) {
	for _, feed := range []bool{true, false} {
		s := newServerFeed(t, console.Options{MaxLiveStreams: 2}, feed)
		b := s.browser(t)
		b.signIn(s.a.key)
		first := b.live()
		if e, _ := first.next(); e.name != "update" {
			t.Fatalf("the first stream: %+v", e)
		}
		second := b.live()
		if e, _ := second.next(); e.name != "busy" || !strings.Contains(e.data, "too many live views") {
			t.Errorf("feed %v: the second stream of the account: %+v, want busy", feed, e)
		}
		if e, open := second.next(); open {
			t.Errorf("after busy: %+v", e)
		}
		other := s.browser(t)
		other.signIn(s.b.key)
		if e, _ := other.live().next(); e.name != "update" {
			t.Errorf("feed %v: another account's stream: %+v", feed, e)
		}
	}
}
