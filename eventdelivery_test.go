package edgeplane_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/credentials"
	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/ipaccess"
	"github.com/edgeplane/edgeplane/webhook"
)

// receiver is a webhook receiver: it verifies each request with the
// specification's verifier and records it; while down it answers 503.
type receiver struct {
	t    testing.TB
	srv  *httptest.Server
	wh   *standardwebhooks.Webhook
	down atomic.Bool
	mu   sync.Mutex
	got  []received // every request, in arrival order
	cond chan struct{}
}

type received struct {
	id, typ, object string
	ok              bool // answered 2xx
}

func newReceiver(t testing.TB, secret string) *receiver {
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	r := &receiver{t: t, wh: wh, cond: make(chan struct{}, 1)}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		if err := r.wh.Verify(body, req.Header); err != nil {
			t.Errorf("signature: %v", err)
			http.Error(w, err.Error(), 401)
			return
		}
		var ev events.Event
		if err := json.Unmarshal(body, &ev); err != nil || ev.ID != req.Header.Get("webhook-id") {
			t.Errorf("body %s (%v) for webhook-id %s", body, err, req.Header.Get("webhook-id"))
		}
		var obj struct{ ID string }
		_ = json.Unmarshal(ev.Object, &obj)
		ok := !r.down.Load()
		r.mu.Lock()
		r.got = append(r.got, received{id: ev.ID, typ: ev.Type, object: obj.ID, ok: ok})
		r.mu.Unlock()
		select {
		case r.cond <- struct{}{}:
		default:
		}
		if !ok {
			http.Error(w, "down", 503)
		}
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// delivered returns the objects of the requests answered 2xx, in order,
// without repeats of one event.
func (r *receiver) delivered() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []received
	seen := map[string]bool{}
	for _, g := range r.got {
		if g.ok && !seen[g.id] {
			seen[g.id] = true
			out = append(out, g)
		}
	}
	return out
}

func (r *receiver) requests() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// waitFor waits until cond holds (a functional wait, bounded generously).
func (r *receiver) waitFor(what string, cond func() bool) {
	r.t.Helper()
	deadline := time.After(30 * time.Second)
	for !cond() {
		select {
		case <-r.cond:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			r.t.Fatalf("timed out waiting for %s; requests: %+v", what, r.requests())
		}
	}
}

// startDelivery runs webhook.Run against loopback until the test ends or
// the returned stop is called.
func startDelivery(t testing.TB, h *edgeplane.Host) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = webhook.Run(ctx, h.EventDelivery(), webhook.Options{Networks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
			MinBackoff: time.Millisecond, MaxBackoff: 20 * time.Millisecond, Rescan: 20 * time.Millisecond, Timeout: 5 * time.Second})
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

// TestWebhookDelivery: a subscription with two sources sends both kinds
// of change to a destination, signed, in commit order; a 503 is retried
// with the same webhook-id; a receiver down for a while gets every event
// in order once it is back; a restart of delivery resumes at the cursor;
// the destination's delivery state shows it all.
func TestWebhookDelivery(t *testing.T) {
	e := newEnv(t)
	d, err := e.svc.CreateEventDestination(e.ctx, e.user, events.CreateDestinationParams{
		Target: &events.TargetParams{HTTP: &events.HTTPTargetParams{URL: "http://placeholder.example.com"}}})
	if err != nil {
		t.Fatal(err)
	}
	rcv := newReceiver(t, *d.Target.HTTP.Secret)
	if _, err := e.svc.UpdateEventDestination(e.ctx, e.user, d.ID, events.UpdateDestinationParams{
		Target: &events.TargetParams{HTTP: &events.HTTPTargetParams{URL: rcv.srv.URL + "/hook"}}}); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.CreateEventSubscription(e.ctx, e.user, events.CreateSubscriptionParams{DestinationIDs: []string{d.ID},
		Sources: []events.CreateSourceParams{{Type: "ip_policy_created.v0"}, {Type: "credential_created.v0"}}})
	if err != nil {
		t.Fatal(err)
	}
	// Another account's changes never reach this destination.
	if _, err := e.svc.CreateIPPolicy(e.ctx, e.other, ipaccess.CreatePolicyParams{Description: "other"}); err != nil {
		t.Fatal(err)
	}
	var want []string // object IDs in commit order
	write := func(i int) {
		if i%2 == 0 {
			p, err := e.svc.CreateIPPolicy(e.ctx, e.user, ipaccess.CreatePolicyParams{Description: strconv.Itoa(i)})
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, p.ID)
			return
		}
		c, err := e.svc.CreateCredential(e.ctx, e.admin, credentials.CreateParams{Description: strconv.Itoa(i)})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, c.ID)
	}
	objects := func() []string {
		var out []string
		for _, g := range rcv.delivered() {
			out = append(out, g.object)
		}
		return out
	}

	// Down first: the first event is retried, with one webhook-id, and
	// later events wait.
	rcv.down.Store(true)
	stop := startDelivery(t, e.svc.Host())
	for i := range 4 {
		write(i)
	}
	rcv.waitFor("3 failed attempts", func() bool { return len(rcv.requests()) >= 3 })
	for _, g := range rcv.requests() {
		if g.id != rcv.requests()[0].id || g.object != want[0] {
			t.Fatalf("while down, another event was attempted: %+v", rcv.requests())
		}
	}
	st, err := e.svc.GetEventDestination(e.ctx, e.user, d.ID)
	if err != nil || st.Delivery.State != events.StateRetrying || st.Delivery.Attempts < 1 || st.Delivery.LastError == "" {
		t.Fatalf("delivery state while down: %+v, %v", st.Delivery, err)
	}
	rcv.down.Store(false)
	rcv.waitFor("4 events", func() bool { return len(rcv.delivered()) == 4 })
	if got := objects(); !slices.Equal(got, want) {
		t.Fatalf("delivered %v, want %v in order", got, want)
	}
	types := map[string]bool{}
	for _, g := range rcv.delivered() {
		types[g.typ] = true
	}
	if !types["ip_policy_created.v0"] || !types["credential_created.v0"] || len(types) != 2 {
		t.Fatalf("types %v", types)
	}

	// Stopped once the cursor is recorded past them, then started again:
	// what was written meanwhile arrives, after what arrived before, and
	// nothing before the cursor is sent again.
	last, err := e.store.Get(e.ctx, edgeplane.KindCredential, e.user.AccountID, want[3]) // write(3)'s
	if err != nil {
		t.Fatal(err)
	}
	rcv.waitFor("the cursor to be recorded past the 4 events", func() bool {
		var state webhook.State
		state, err = e.svc.Host().EventDelivery().LoadState(e.ctx, webhook.Destination{AccountID: e.user.AccountID, ID: d.ID})
		return err != nil || state.Cursor >= last.Version
	})
	if err != nil {
		t.Fatal(err)
	}
	stop()
	before := len(rcv.requests())
	first := map[string]bool{}
	for _, g := range rcv.delivered() {
		first[g.id] = true
	}
	for i := 4; i < 8; i++ {
		write(i)
	}
	startDelivery(t, e.svc.Host())
	rcv.waitFor("8 events", func() bool { return len(rcv.delivered()) == 8 })
	if got := objects(); !slices.Equal(got, want) {
		t.Fatalf("delivered %v, want %v in order", got, want)
	}
	for _, g := range rcv.requests()[before:] {
		if first[g.id] {
			t.Fatalf("after the restart, event %s (before the recorded cursor) was sent again", g.id)
		}
	}
	rcv.waitFor("the state to record 8 deliveries", func() bool {
		st, err = e.svc.GetEventDestination(e.ctx, e.user, d.ID)
		return err != nil || st.Delivery.Delivered >= 8
	})
	if err != nil || st.Delivery.State != events.StateOK || st.Delivery.Delivered < 8 || st.Delivery.LastError != "" || st.Delivery.LastDeliveredAt == nil {
		t.Fatalf("delivery state: %+v, %v", st.Delivery, err)
	}
}
