package edgeplane_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/credentials"
	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/identity"
	"github.com/edgeplane/edgeplane/internal/syncbuf"
	"github.com/edgeplane/edgeplane/ipaccess"
	"github.com/edgeplane/edgeplane/kinds"
	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/resource"
	"github.com/edgeplane/edgeplane/store"
	"github.com/edgeplane/edgeplane/webhook"
)

// eventRecorder is a sink that records every event.
type eventRecorder struct {
	mu  sync.Mutex
	evs []events.Event
}

func (r *eventRecorder) Deliver(_ context.Context, ev events.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, ev)
	return nil
}

func (r *eventRecorder) events() []events.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.evs)
}

// newEventEnv is newEnv with event delivery configured by opts; the
// Service is closed when the test ends. Logs go to the returned buffer.
func newEventEnv(t testing.TB, st store.Store, opts events.Options) (*env, *syncbuf.Buffer) {
	t.Helper()
	logs := new(syncbuf.Buffer)
	e := &env{
		store: st,
		clock: &fakeClock{now: time.Date(2026, 11, 21, 10, 30, 15, 123456789, time.FixedZone("X", 3600))},
		ctx:   context.Background(),
		logs:  new(bytes.Buffer),
	}
	e.svc = mustService(edgeplane.New(st, edgeplane.Options{
		BaseURL: "https://api.example.test",
		Clock:   e.clock.Now,
		Logger:  slog.New(slog.NewTextHandler(logs, nil)),
		Events:  testEvents(opts),
	}))
	t.Cleanup(func() { e.svc.Close(context.Background()) })
	a := e.account(t, "a")
	e.admin = e.subject(t, a, true, false)
	e.user = e.subject(t, a, false, false)
	e.bot = e.subject(t, a, false, true)
	e.other = e.subject(t, e.account(t, "b"), true, false)
	return e, logs
}

// subscribe creates a subscription for p with sources of types.
func (e *env) subscribe(t testing.TB, p edgeplane.Principal, types ...string) *events.Subscription {
	t.Helper()
	sub, err := e.svc.CreateEventSubscription(e.ctx, p, events.CreateSubscriptionParams{Description: "hook"})
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range types {
		if _, err := e.svc.CreateEventSource(e.ctx, p, sub.ID, events.CreateSourceParams{Type: typ}); err != nil {
			t.Fatal(err)
		}
	}
	return sub
}

func (e *env) closeEvents(t testing.TB) {
	t.Helper()
	if err := e.svc.Close(e.ctx); err != nil {
		t.Fatal(err)
	}
}

// delivery is what a test compares of an event.
type delivery struct {
	Sub, Type, ObjectID string
}

func TestSinkSeesExactlySubscribedEvents(t *testing.T) {
	rec := &eventRecorder{}
	e, _ := newEventEnv(t, memstore.New(), events.Options{Sink: rec})
	subA1 := e.subscribe(t, e.admin, "ip_policy_created.v0", "credential_created.v0", "credential_deleted.v0", "tunnel_group_backend_updated.v0")
	subA2 := e.subscribe(t, e.user, "ip_policy_created.v0")
	subB := e.subscribe(t, e.other, "ip_policy_created.v0", "ip_policy_updated.v0")

	// Account A.
	polA, err := e.svc.CreateIPPolicy(e.ctx, e.user, ipaccess.CreatePolicyParams{Description: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.UpdateIPPolicy(e.ctx, e.user, polA.ID, ipaccess.UpdatePolicyParams{Description: ptr("a2")}); err != nil {
		t.Fatal(err) // ip_policy_updated: only account B subscribes
	}
	cred, err := e.svc.CreateCredential(e.ctx, e.user, credentials.CreateParams{Description: "c"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.UpdateCredential(e.ctx, e.user, cred.ID, credentials.UpdateParams{Description: ptr("c2")}); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.DeleteCredential(e.ctx, e.user, cred.ID); err != nil {
		t.Fatal(err)
	}
	b := e.backend(t, e.user, map[string]string{"env": "prod"})
	if _, err := e.svc.UpdateTunnelGroupBackend(e.ctx, e.user, b.ID, backends.UpdateParams{Description: ptr("x")}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.CreateIPPolicy(e.ctx, e.user, ipaccess.CreatePolicyParams{Description: strings.Repeat("x", 256)}); err == nil {
		t.Fatal("an invalid create succeeded") // failed writes report nothing
	}
	// Account B.
	polB, err := e.svc.CreateIPPolicy(e.ctx, e.other, ipaccess.CreatePolicyParams{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.UpdateIPPolicy(e.ctx, e.other, polB.ID, ipaccess.UpdatePolicyParams{Metadata: ptr("m")}); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.DeleteIPPolicy(e.ctx, e.other, polB.ID); err != nil {
		t.Fatal(err)
	}
	e.closeEvents(t)

	want := []delivery{
		{subA1.ID, "ip_policy_created.v0", polA.ID},
		{subA2.ID, "ip_policy_created.v0", polA.ID},
		{subA1.ID, "credential_created.v0", cred.ID},
		{subA1.ID, "credential_deleted.v0", cred.ID},
		{subA1.ID, "tunnel_group_backend_updated.v0", b.ID},
		{subB.ID, "ip_policy_created.v0", polB.ID},
		{subB.ID, "ip_policy_updated.v0", polB.ID},
	}
	got := rec.events()
	var gotD []delivery
	seen := map[string]bool{}
	for _, ev := range got {
		var obj struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(ev.Object, &obj); err != nil {
			t.Fatalf("event %s object %s: %v", ev.ID, ev.Object, err)
		}
		gotD = append(gotD, delivery{ev.SubscriptionID, ev.Type, obj.ID})
		if !strings.HasPrefix(ev.ID, "ev_") || len(ev.ID) != 3+27 || seen[ev.ID] {
			t.Errorf("event ID %q is not a fresh ev_ ID", ev.ID)
		}
		seen[ev.ID] = true
		wantAcct := e.user.AccountID
		if ev.SubscriptionID == subB.ID {
			wantAcct = e.other.AccountID
		}
		if ev.AccountID != wantAcct || !ev.CreatedAt.Equal(time.Date(2026, 11, 21, 9, 30, 15, 0, time.UTC)) {
			t.Errorf("event %+v: wrong account or time", ev)
		}
	}
	sortD := func(ds []delivery) {
		slices.SortFunc(ds, func(a, b delivery) int { return strings.Compare(a.Sub+a.Type+a.ObjectID, b.Sub+b.Type+b.ObjectID) })
	}
	sortD(want)
	sortD(gotD)
	if diff := cmp.Diff(want, gotD); diff != "" {
		t.Errorf("deliveries (-want +got):\n%s", diff)
	}
	if st := e.svc.EventStats(); st.Delivered != uint64(len(want)) || st.Failed != 0 || st.Dropped != 0 || st.LookupErrors != 0 {
		t.Errorf("stats %+v", st)
	}

	// Objects are the API representation at the time of the change.
	for _, ev := range got {
		switch ev.Type {
		case "credential_created.v0":
			var c map[string]any
			json.Unmarshal(ev.Object, &c)
			if c["token"] != nil || c["description"] != "c" || c["uri"] != "https://api.example.test/credentials/"+cred.ID {
				t.Errorf("credential_created object %s: want the API shape with a null token", ev.Object)
			}
		case "credential_deleted.v0":
			if string(ev.Object) != `{"id":"`+cred.ID+`","uri":"https://api.example.test/credentials/`+cred.ID+`"}` {
				t.Errorf("credential_deleted object %s, want the Ref", ev.Object)
			}
		case "tunnel_group_backend_updated.v0":
			if !strings.Contains(string(ev.Object), `"description":"x"`) || !strings.Contains(string(ev.Object), `"tunnels":[]`) {
				t.Errorf("backend object %s", ev.Object)
			}
		}
	}
}

func TestEventSources(t *testing.T) {
	e := newEnv(t)
	sub, err := e.svc.CreateEventSubscription(e.ctx, e.user, events.CreateSubscriptionParams{})
	if err != nil {
		t.Fatal(err)
	}
	base := "https://api.example.test/event_subscriptions/" + sub.ID + "/sources"

	empty, err := e.svc.ListEventSources(e.ctx, e.user, sub.ID)
	if err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(empty)
	if string(js) != `{"sources":[],"uri":"`+base+`"}` {
		t.Errorf("empty list JSON %s", js)
	}

	src, err := e.svc.CreateEventSource(e.ctx, e.user, sub.ID, events.CreateSourceParams{Type: "ip_policy_created.v0"})
	if err != nil {
		t.Fatal(err)
	}
	want := &events.Source{Type: "ip_policy_created.v0", URI: base + "/ip_policy_created.v0"}
	if diff := cmp.Diff(want, src); diff != "" {
		t.Errorf("create (-want +got):\n%s", diff)
	}
	js, _ = json.Marshal(src)
	if string(js) != `{"type":"ip_policy_created.v0","uri":"`+base+`/ip_policy_created.v0"}` {
		t.Errorf("source JSON %s", js)
	}
	if _, err := e.svc.CreateEventSource(e.ctx, e.bot, sub.ID, events.CreateSourceParams{Type: "ip_policy_updated.v0"}); err != nil {
		t.Fatal(err)
	}

	list, err := e.svc.ListEventSources(e.ctx, e.admin, sub.ID)
	if err != nil {
		t.Fatal(err)
	}
	wantList := &events.SourceList{URI: base, Sources: []events.Source{
		{Type: "ip_policy_updated.v0", URI: base + "/ip_policy_updated.v0"}, *want}}
	if diff := cmp.Diff(wantList, list); diff != "" {
		t.Errorf("list, newest first (-want +got):\n%s", diff)
	}
	got, err := e.svc.GetEventSource(e.ctx, e.user, sub.ID, "ip_policy_created.v0")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("get (-want +got):\n%s", diff)
	}
	got, err = e.svc.UpdateEventSource(e.ctx, e.user, sub.ID, "ip_policy_created.v0", events.UpdateSourceParams{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("update (-want +got):\n%s", diff)
	}

	// Refusals.
	_, err = e.svc.CreateEventSource(e.ctx, e.user, sub.ID, events.CreateSourceParams{Type: "ip_policy_created.v0"})
	wantCode(t, err, apierr.Conflict)
	if !strings.Contains(err.Error(), `already has a source of type "ip_policy_created.v0"`) {
		t.Errorf("conflict message %q", err)
	}
	_, err = e.svc.CreateEventSource(e.ctx, e.user, sub.ID, events.CreateSourceParams{Type: "ip_policy_create.v0"})
	wantViolation(t, err, "type", `unknown event type "ip_policy_create.v0"; did you mean "ip_policy_created.v0"?`)
	_, err = e.svc.CreateEventSource(e.ctx, e.user, sub.ID, events.CreateSourceParams{Type: "ip_policy_created"})
	wantViolation(t, err, "type", "<event_name>.v<N>")
	_, err = e.svc.CreateEventSource(e.ctx, e.user, sub.ID, events.CreateSourceParams{})
	wantViolation(t, err, "type", "is required")
	for name, typ := range map[string]string{"absent": "credential_created.v0", "malformed": "x y", "huge": strings.Repeat("x", 5000)} {
		_, err = e.svc.GetEventSource(e.ctx, e.user, sub.ID, typ)
		wantCode(t, err, apierr.NotFound)
		if len(err.Error()) > 300 {
			t.Errorf("%s: not-found message is %d bytes long", name, len(err.Error()))
		}
		_, err = e.svc.UpdateEventSource(e.ctx, e.user, sub.ID, typ, events.UpdateSourceParams{})
		wantCode(t, err, apierr.NotFound)
		wantCode(t, e.svc.DeleteEventSource(e.ctx, e.user, sub.ID, typ), apierr.NotFound)
	}

	// Delete.
	if err := e.svc.DeleteEventSource(e.ctx, e.user, sub.ID, "ip_policy_created.v0"); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.GetEventSource(e.ctx, e.user, sub.ID, "ip_policy_created.v0")
	wantCode(t, err, apierr.NotFound)
	if err.Error() != "event subscription "+sub.ID+` has no source of type "ip_policy_created.v0"` {
		t.Errorf("message %q", err)
	}
	wantCode(t, e.svc.DeleteEventSource(e.ctx, e.user, sub.ID, "ip_policy_created.v0"), apierr.NotFound)
	// Deleted, it may be added again.
	if _, err := e.svc.CreateEventSource(e.ctx, e.user, sub.ID, events.CreateSourceParams{Type: "ip_policy_created.v0"}); err != nil {
		t.Fatal(err)
	}
}

func TestEventSourcesNeedASubscriptionOfTheAccount(t *testing.T) {
	e := newEnv(t)
	sub, err := e.svc.CreateEventSubscription(e.ctx, e.user, events.CreateSubscriptionParams{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.CreateEventSource(e.ctx, e.user, sub.ID, events.CreateSourceParams{Type: "credential_created.v0"}); err != nil {
		t.Fatal(err)
	}
	missing := sub.ID[:len(sub.ID)-4] + "zzzz"
	typ := "credential_created.v0"
	cases := map[string]struct {
		p  edgeplane.Principal
		id string
	}{
		"another account's": {e.other, sub.ID},
		"missing":           {e.user, missing},
		"malformed":         {e.user, "esb_nope"},
		"wrong prefix":      {e.user, e.user.SubjectID},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			msg := "event subscription " + tc.id + " not found"
			check := func(err error) {
				t.Helper()
				wantCode(t, err, apierr.NotFound)
				if err.Error() != msg {
					t.Errorf("message %q, want %q", err, msg)
				}
			}
			_, err := e.svc.CreateEventSource(e.ctx, tc.p, tc.id, events.CreateSourceParams{Type: "ip_policy_created.v0"})
			check(err)
			_, err = e.svc.ListEventSources(e.ctx, tc.p, tc.id)
			check(err)
			_, err = e.svc.GetEventSource(e.ctx, tc.p, tc.id, typ)
			check(err)
			_, err = e.svc.UpdateEventSource(e.ctx, tc.p, tc.id, typ, events.UpdateSourceParams{})
			check(err)
			check(e.svc.DeleteEventSource(e.ctx, tc.p, tc.id, typ))
		})
	}
	// The source is untouched, and deleting the subscription deletes it.
	if _, err := e.svc.GetEventSource(e.ctx, e.user, sub.ID, typ); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.DeleteEventSubscription(e.ctx, e.user, sub.ID); err != nil {
		t.Fatal(err)
	}
	recs, err := e.store.List(e.ctx, store.Query{Kind: edgeplane.KindEventSource, AccountID: e.user.AccountID, Limit: 10})
	if err != nil || len(recs) != 0 {
		t.Errorf("sources left after deleting their subscription: %d, %v", len(recs), err)
	}
	_, err = e.svc.ListEventSources(e.ctx, e.user, sub.ID)
	wantCode(t, err, apierr.NotFound)
}

func TestEventSubscriptionCRUD(t *testing.T) {
	e := newEnv(t)
	sub, err := e.svc.CreateEventSubscription(e.ctx, e.user, events.CreateSubscriptionParams{Description: "hooks", Metadata: "m"})
	if err != nil {
		t.Fatal(err)
	}
	want := &events.Subscription{ID: sub.ID, URI: "https://api.example.test/event_subscriptions/" + sub.ID,
		CreatedAt: time.Date(2026, 11, 21, 9, 30, 15, 0, time.UTC), Description: "hooks", Metadata: "m", Sources: []events.Source{},
		Destinations: []resource.Ref{}}
	if diff := cmp.Diff(want, sub); diff != "" {
		t.Errorf("create (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(sub.ID, "esb_") {
		t.Errorf("ID %q", sub.ID)
	}
	got, err := e.svc.GetEventSubscription(e.ctx, e.bot, sub.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("get (-want +got):\n%s", diff)
	}
	page, err := e.svc.ListEventSubscriptions(e.ctx, e.user, edgeplane.ListOptions{})
	if err != nil || len(page.Items) != 1 || page.URI != "https://api.example.test/event_subscriptions" {
		t.Errorf("list %+v, %v", page, err)
	}
	upd, err := e.svc.UpdateEventSubscription(e.ctx, e.user, sub.ID, events.UpdateSubscriptionParams{Metadata: ptr("")})
	if err != nil {
		t.Fatal(err)
	}
	want.Metadata = ""
	if diff := cmp.Diff(want, upd); diff != "" {
		t.Errorf("update (-want +got):\n%s", diff)
	}
	_, err = e.svc.CreateEventSubscription(e.ctx, e.user, events.CreateSubscriptionParams{Description: strings.Repeat("é", 128)})
	wantViolation(t, err, "description", "at most 255 bytes")
	_, err = e.svc.UpdateEventSubscription(e.ctx, e.user, sub.ID, events.UpdateSubscriptionParams{Metadata: ptr(strings.Repeat("m", 4097))})
	wantViolation(t, err, "metadata", "at most 4096 bytes")

	// Isolation.
	_, err = e.svc.GetEventSubscription(e.ctx, e.other, sub.ID)
	wantCode(t, err, apierr.NotFound)
	_, err = e.svc.UpdateEventSubscription(e.ctx, e.other, sub.ID, events.UpdateSubscriptionParams{})
	wantCode(t, err, apierr.NotFound)
	wantCode(t, e.svc.DeleteEventSubscription(e.ctx, e.other, sub.ID), apierr.NotFound)
	if page, _ := e.svc.ListEventSubscriptions(e.ctx, e.other, edgeplane.ListOptions{}); len(page.Items) != 0 {
		t.Error("another account lists the subscription")
	}

	if err := e.svc.DeleteEventSubscription(e.ctx, e.user, sub.ID); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.GetEventSubscription(e.ctx, e.user, sub.ID)
	wantCode(t, err, apierr.NotFound)
}

// gateSink blocks every delivery until open is closed.
type gateSink struct {
	open  chan struct{}
	calls atomic.Int64
}

func (g *gateSink) Deliver(ctx context.Context, _ events.Event) error {
	g.calls.Add(1)
	select {
	case <-g.open:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TestSlowSinkNeverBlocksOperations: a stuck sink blocks no operation and
// loses no change: the queue stays bounded, the rest waits in the store's
// change feed, and everything is delivered once the sink moves.
func TestSlowSinkNeverBlocksOperations(t *testing.T) {
	sink := &gateSink{open: make(chan struct{})}
	e, _ := newEventEnv(t, memstore.New(), events.Options{Sink: sink, QueueSize: 2})
	e.subscribe(t, e.user, "ip_policy_created.v0")
	const n = 50
	for i := range n {
		if _, err := e.svc.CreateIPPolicy(e.ctx, e.user, ipaccess.CreatePolicyParams{Description: strconv.Itoa(i)}); err != nil {
			t.Fatalf("create %d with a stuck sink: %v", i, err)
		}
	}
	if st := e.svc.EventStats(); st.Dropped != 0 || st.Pending > 2 {
		t.Errorf("stats with a stuck sink: %+v; want nothing dropped and at most 2 pending", st)
	}
	close(sink.open)
	e.closeEvents(t)
	if st := e.svc.EventStats(); st.Pending != 0 || st.Delivered != n || st.Dropped != 0 || sink.calls.Load() != n {
		t.Errorf("stats after close: %+v, %d sink calls; want all %d delivered", st, sink.calls.Load(), n)
	}
}

func TestFailingSinkNeverFailsOperations(t *testing.T) {
	sink := events.SinkFunc(func(context.Context, events.Event) error { return errors.New("webhook answered 503") })
	e, logs := newEventEnv(t, memstore.New(), events.Options{Sink: sink})
	e.subscribe(t, e.user, "credential_created.v0", "credential_updated.v0")
	c, err := e.svc.CreateCredential(e.ctx, e.user, credentials.CreateParams{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.UpdateCredential(e.ctx, e.user, c.ID, credentials.UpdateParams{}); err != nil {
		t.Fatal(err)
	}
	e.closeEvents(t)
	if st := e.svc.EventStats(); st.Failed != 2 || st.Delivered != 0 {
		t.Errorf("stats %+v, want 2 failed", st)
	}
	if !strings.Contains(logs.String(), "webhook answered 503") {
		t.Errorf("sink error not logged: %s", logs)
	}
}

// sourceFailStore fails listing event sources while fail is set.
type sourceFailStore struct {
	store.Store
	fail atomic.Bool
}

func (s *sourceFailStore) List(ctx context.Context, q store.Query) ([]store.Record, error) {
	if q.Kind == edgeplane.KindEventSource && q.ParentID == "" && s.fail.Load() {
		return nil, errDisk
	}
	return s.Store.List(ctx, q)
}

func TestEventLookupErrorsAreCountedAndLogged(t *testing.T) {
	st := &sourceFailStore{Store: memstore.New()}
	rec := &eventRecorder{}
	e, logs := newEventEnv(t, st, events.Options{Sink: rec})
	e.subscribe(t, e.user, "ip_policy_created.v0")
	st.fail.Store(true)
	if _, err := e.svc.CreateIPPolicy(e.ctx, e.user, ipaccess.CreatePolicyParams{}); err != nil {
		t.Fatalf("a store failure in delivery failed the operation: %v", err)
	}
	e.closeEvents(t)
	// Changes still queued from the subscription's setup may fail too.
	if st := e.svc.EventStats(); st.LookupErrors < 1 || st.Delivered != 0 || len(rec.events()) != 0 {
		t.Errorf("stats %+v, %d delivered", st, len(rec.events()))
	}
	if !strings.Contains(logs.String(), "disk on fire") {
		t.Errorf("lookup error not logged: %s", logs)
	}
}

// TestCloseStopsDelivery: Close delivers what was committed before it;
// changes after it are not reported.
func TestCloseStopsDelivery(t *testing.T) {
	rec := &eventRecorder{}
	e, _ := newEventEnv(t, memstore.New(), events.Options{Sink: rec})
	e.subscribe(t, e.user, "ip_policy_created.v0")
	before, err := e.svc.CreateIPPolicy(e.ctx, e.user, ipaccess.CreatePolicyParams{})
	if err != nil {
		t.Fatal(err)
	}
	e.closeEvents(t)
	e.closeEvents(t) // idempotent
	if _, err := e.svc.CreateIPPolicy(e.ctx, e.user, ipaccess.CreatePolicyParams{}); err != nil {
		t.Fatalf("operations after Close: %v", err)
	}
	got := rec.events()
	if len(got) != 1 || !strings.Contains(string(got[0].Object), before.ID) {
		t.Errorf("after Close: delivered %+v; want only the change committed before it", got)
	}
}

// TestEventsInCommitOrder: under concurrent writers, events arrive in the
// order the store committed the writes.
func TestEventsInCommitOrder(t *testing.T) {
	rec := &eventRecorder{}
	st := memstore.New()
	e, _ := newEventEnv(t, st, events.Options{Sink: rec})
	e.subscribe(t, e.user, "ip_policy_created.v0", "ip_policy_updated.v0")
	start, err := st.Revision(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 10 {
				pol, err := e.svc.CreateIPPolicy(e.ctx, e.user, ipaccess.CreatePolicyParams{})
				if err != nil {
					t.Error(err)
					return
				}
				if _, err := e.svc.UpdateIPPolicy(e.ctx, e.user, pol.ID, ipaccess.UpdatePolicyParams{Metadata: ptr("m")}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	e.closeEvents(t)
	changes, err := st.Changes(e.ctx, start, 1000, store.WithoutData)
	if err != nil {
		t.Fatal(err)
	}
	var want, got []string
	for _, c := range changes {
		if c.Kind == edgeplane.KindIPPolicy {
			want = append(want, c.Op.String()+" "+c.ID)
		}
	}
	for _, ev := range rec.events() {
		var obj struct{ ID string }
		if err := json.Unmarshal(ev.Object, &obj); err != nil {
			t.Fatal(err)
		}
		op := map[string]string{"ip_policy_created.v0": "create", "ip_policy_updated.v0": "update"}[ev.Type]
		got = append(got, op+" "+obj.ID)
	}
	if len(want) != 160 || !slices.Equal(want, got) {
		t.Errorf("events in another order than the commits (%d changes, %d events)", len(want), len(got))
	}
}

// TestEventsOnlyForCommittedWrites: a write the store refuses is never
// reported; a write committed through another Service over the same store
// (another replica, or a process that stopped before reporting) is.
func TestEventsOnlyForCommittedWrites(t *testing.T) {
	rec := &eventRecorder{}
	st := memstore.New()
	e, _ := newEventEnv(t, st, events.Options{Sink: rec})
	e.subscribe(t, e.user, "reserved_domain_created.v0")
	e.reservedDomain(t, e.user, domains.CreateParams{Domain: "taken.example.com"})
	_, err := e.svc.CreateReservedDomain(e.ctx, e.user, domains.CreateParams{Domain: "taken.example.com"})
	wantCode(t, err, apierr.Conflict)

	replica := mustService(edgeplane.New(st, edgeplane.Options{})) // no sink: it reports nothing itself
	d, err := replica.CreateReservedDomain(e.ctx, e.user, domains.CreateParams{Domain: "other.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	e.closeEvents(t)
	got := rec.events()
	if len(got) != 2 || !strings.Contains(string(got[1].Object), d.ID) {
		t.Errorf("delivered %d events; want the first domain's and the replica's, not the refused one's", len(got))
	}
}

func TestEventsOffWithoutSink(t *testing.T) {
	e := newEnv(t)
	if err := e.svc.Close(e.ctx); err != nil {
		t.Errorf("Close without a sink = %v", err)
	}
	if st := e.svc.EventStats(); st != (events.Stats{}) {
		t.Errorf("stats without a sink = %+v", st)
	}
	if e.svc.EventTypes().Len() != len(edgeplane.DefaultEventTypes()) {
		t.Error("the default registry is not used")
	}
	if err := e.svc.Host().Publish(e.ctx, e.user.AccountID, "credential_created.v0", 1); err != nil {
		t.Errorf("Publish without a sink = %v", err)
	}
}

func TestPublishWithAHostRegistry(t *testing.T) {
	reg, err := events.NewRegistry(append(edgeplane.DefaultEventTypes(), "agent_connected.v0")...)
	if err != nil {
		t.Fatal(err)
	}
	rec := &eventRecorder{}
	e, _ := newEventEnv(t, memstore.New(), events.Options{Sink: rec, Registry: reg})
	sub := e.subscribe(t, e.user, "agent_connected.v0")
	if err := e.svc.Host().Publish(e.ctx, e.user.AccountID, "agent_connected.v0", map[string]string{"agent": "a1"}); err != nil {
		t.Fatal(err)
	}
	err = e.svc.Host().Publish(e.ctx, e.user.AccountID, "agent_conected.v0", nil)
	wantViolation(t, err, "type", `did you mean "agent_connected.v0"?`)
	err = e.svc.Host().Publish(e.ctx, "acct_nope", "agent_connected.v0", nil)
	wantViolation(t, err, "account_id", "must be an account ID")
	err = e.svc.Host().Publish(e.ctx, e.user.AccountID, "agent_connected.v0", func() {})
	wantViolation(t, err, "object", "cannot be encoded")
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	if err := e.svc.Host().Publish(ctx, e.user.AccountID, "agent_connected.v0", nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Publish with a cancelled context = %v", err)
	}
	e.closeEvents(t)
	got := rec.events()
	if len(got) != 1 || got[0].SubscriptionID != sub.ID || got[0].Type != "agent_connected.v0" || string(got[0].Object) != `{"agent":"a1"}` {
		t.Errorf("delivered %+v", got)
	}
}

// TestEdgeModuleEventsAreDelivered checks at run time the event names the
// edge module operations compute: a subscription to every default type
// receives the module changes of each family (route, TLS edge, TCP edge).
func TestEdgeModuleEventsAreDelivered(t *testing.T) {
	rec := &eventRecorder{}
	e, _ := newEventEnv(t, memstore.New(), events.Options{Sink: rec})
	e.subscribe(t, e.user, edgeplane.DefaultEventTypes()...)
	https, err := e.svc.CreateHTTPSEdge(e.ctx, e.user, edges.CreateEdgeParams{})
	if err != nil {
		t.Fatal(err)
	}
	route, err := e.svc.CreateHTTPSEdgeRoute(e.ctx, e.user, https.ID, edges.CreateRouteParams{MatchType: "path_prefix", Match: "/"})
	if err != nil {
		t.Fatal(err)
	}
	tls, err := e.svc.CreateTLSEdge(e.ctx, e.user, edges.CreateTLSEdgeParams{})
	if err != nil {
		t.Fatal(err)
	}
	tcp, err := e.svc.CreateTCPEdge(e.ctx, e.user, edges.CreateTCPEdgeParams{})
	if err != nil {
		t.Fatal(err)
	}
	pol := e.policy(t, e.user)
	b := e.backend(t, e.user, map[string]string{"env": "prod"})
	steps := []error{
		second(e.svc.ReplaceHTTPSRouteCompression(e.ctx, e.user, https.ID, route.ID, edges.CompressionParams{})),
		e.svc.DeleteHTTPSRouteCompression(e.ctx, e.user, https.ID, route.ID),
		second(e.svc.ReplaceTLSEdgeTLSTermination(e.ctx, e.user, tls.ID, edges.TLSTerminationParams{})),
		second(e.svc.ReplaceTLSEdgeIPRestriction(e.ctx, e.user, tls.ID, edges.IPRestrictionParams{IPPolicyIDs: []string{pol.ID}})),
		second(e.svc.ReplaceTCPEdgeBackend(e.ctx, e.user, tcp.ID, edges.BackendParams{BackendID: b.ID})),
		e.svc.DeleteTCPEdgeBackend(e.ctx, e.user, tcp.ID),
		second(e.svc.ReplaceTCPEdgeIPRestriction(e.ctx, e.user, tcp.ID, edges.IPRestrictionParams{IPPolicyIDs: []string{pol.ID}})),
	}
	for i, err := range steps {
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	e.closeEvents(t)
	got := map[string]bool{}
	for _, ev := range rec.events() {
		got[ev.Type] = true
	}
	for _, want := range []string{
		"https_edge_created.v0", "https_edge_route_created.v0", "tls_edge_created.v0", "tcp_edge_created.v0",
		"https_edge_route_compression_module_updated.v0", "https_edge_route_compression_module_deleted.v0",
		"tls_edge_tls_termination_module_updated.v0", "tls_edge_ip_restriction_module_updated.v0",
		"tcp_edge_backend_module_updated.v0", "tcp_edge_backend_module_deleted.v0", "tcp_edge_ip_restriction_module_updated.v0",
	} {
		if !got[want] {
			t.Errorf("no %s event; delivered types: %v", want, slices.Sorted(maps.Keys(got)))
		}
	}
}

func second[T any](_ T, err error) error { return err }

// Subscribe to a type and receive its events in a sink.
func ExampleService_CreateEventSource() {
	ctx := context.Background()
	sink := events.SinkFunc(func(_ context.Context, ev events.Event) error {
		fmt.Println("event:", ev.Type, string(ev.Object)[:11])
		return nil
	})
	svc, err := edgeplane.New(memstore.New(), edgeplane.Options{
		BaseURL: "https://api.example.com",
		Events:  events.Options{Sink: sink},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer svc.Close(ctx)
	acct, _ := svc.Host().CreateAccount(ctx, identity.AccountParams{Name: "acme"})
	admin, _ := svc.Host().CreateUser(ctx, acct.ID, identity.SubjectParams{Name: "ada", Admin: true})
	p := edgeplane.Principal{AccountID: acct.ID, SubjectID: admin.ID, Admin: true}

	sub, _ := svc.CreateEventSubscription(ctx, p, events.CreateSubscriptionParams{Description: "audit"})
	src, _ := svc.CreateEventSource(ctx, p, sub.ID, events.CreateSourceParams{Type: "ip_policy_created.v0"})
	fmt.Println("source:", src.Type)
	_, err = svc.CreateEventSource(ctx, p, sub.ID, events.CreateSourceParams{Type: "ip_policy_creatd.v0"})
	fmt.Println(err)

	svc.CreateIPPolicy(ctx, p, ipaccess.CreatePolicyParams{Description: "office"})
	svc.CreateCredential(ctx, p, credentials.CreateParams{}) // not subscribed
	svc.Close(ctx)                                           // delivers what is queued
	fmt.Printf("%+v\n", svc.EventStats())
	// Output:
	// source: ip_policy_created.v0
	// invalid request: type: unknown event type "ip_policy_creatd.v0"; did you mean "ip_policy_created.v0"?
	// event: ip_policy_created.v0 {"id":"ipp_
	// {Pending:0 Accepted:4 Dropped:0 LookupErrors:0 Delivered:1 Failed:0}
}

func TestEventFanOutAcrossScanPages(t *testing.T) {
	rec := &eventRecorder{}
	e, _ := newEventEnv(t, memstore.New(), events.Options{Sink: rec, QueueSize: 4096})
	const subs = 501 // more than one page of the source scan
	want := map[string]bool{}
	for range subs {
		want[e.subscribe(t, e.user, "ip_policy_created.v0").ID] = true
	}
	pol, err := e.svc.CreateIPPolicy(e.ctx, e.user, ipaccess.CreatePolicyParams{})
	if err != nil {
		t.Fatal(err)
	}
	e.closeEvents(t)
	got := map[string]bool{}
	for _, ev := range rec.events() {
		if ev.Type != "ip_policy_created.v0" || !strings.Contains(string(ev.Object), pol.ID) || got[ev.SubscriptionID] {
			t.Fatalf("unexpected event %+v", ev)
		}
		got[ev.SubscriptionID] = true
	}
	if !maps.Equal(want, got) {
		t.Errorf("%d of %d subscriptions got the event", len(got), len(want))
	}
}

func TestUnregisteredTypesAreNotQueued(t *testing.T) {
	reg, err := events.NewRegistry("ip_policy_created.v0")
	if err != nil {
		t.Fatal(err)
	}
	e, _ := newEventEnv(t, memstore.New(), events.Options{Sink: &eventRecorder{}, Registry: reg})
	if _, err := e.svc.CreateCredential(e.ctx, e.user, credentials.CreateParams{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.CreateIPPolicy(e.ctx, e.user, ipaccess.CreatePolicyParams{}); err != nil {
		t.Fatal(err)
	}
	e.closeEvents(t)
	if st := e.svc.EventStats(); st.Accepted != 1 {
		t.Errorf("stats %+v: only the registered type should be queued", st)
	}
	sub, _ := e.svc.CreateEventSubscription(e.ctx, e.user, events.CreateSubscriptionParams{})
	_, err = e.svc.CreateEventSource(e.ctx, e.user, sub.ID, events.CreateSourceParams{Type: "credential_created.v0"})
	wantViolation(t, err, "type", `did you mean "ip_policy_created.v0"?`)
}

// TestSourcesByTypeIndex: finding the subscriptions of a change reads only
// the sources of its type, through the store's index, however many
// sources of other types the account has.
func TestSourcesByTypeIndex(t *testing.T) {
	rec := &eventRecorder{}
	st := &countingStore{Store: memstore.New()}
	e, _ := newEventEnv(t, st, events.Options{Sink: rec})
	want := []string{e.subscribe(t, e.user, "ip_policy_created.v0").ID}
	for range 100 {
		e.subscribe(t, e.user, "ip_policy_updated.v0", "ip_policy_deleted.v0", "credential_created.v0")
	}
	want = append(want, e.subscribe(t, e.user, "credential_created.v0", "ip_policy_created.v0").ID)
	st.listed.Store(0)
	if _, err := e.svc.CreateIPPolicy(e.ctx, e.user, ipaccess.CreatePolicyParams{}); err != nil {
		t.Fatal(err)
	}
	e.closeEvents(t)
	var got []string
	for _, ev := range rec.events() {
		got = append(got, ev.SubscriptionID)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("delivered to %v, want %v", got, want)
	}
	if n := st.listed.Load(); n != 2 {
		t.Errorf("delivery read %d source records, want the 2 of the type", n)
	}
}

// The cost event delivery adds to a management operation: marshal and a
// non-blocking enqueue (the sink runs elsewhere).
func BenchmarkUpdateIPPolicy(b *testing.B) {
	for _, sink := range []bool{false, true} {
		b.Run(map[bool]string{false: "no sink", true: "with sink"}[sink], func(b *testing.B) {
			opts := events.Options{}
			if sink {
				opts = events.Options{Sink: events.SinkFunc(func(context.Context, events.Event) error { return nil }), QueueSize: 1 << 16}
			}
			e, _ := newEventEnv(b, memstore.New(), opts)
			e.subscribe(b, e.user, "ip_policy_updated.v0")
			pol, err := e.svc.CreateIPPolicy(e.ctx, e.user, ipaccess.CreatePolicyParams{})
			if err != nil {
				b.Fatal(err)
			}
			params := ipaccess.UpdatePolicyParams{Description: ptr("d")}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := e.svc.UpdateIPPolicy(e.ctx, e.user, pol.ID, params); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestCascadeDeletesAreReported: records deleted with their parent are
// reported as deleted: the routes of a deleted edge, the tunnels of a
// deleted credential.
func TestCascadeDeletesAreReported(t *testing.T) {
	rec := &eventRecorder{}
	e, _ := newEventEnv(t, memstore.New(), events.Options{Sink: rec})
	e.subscribe(t, e.user, "https_edge_deleted.v0", "https_edge_route_deleted.v0", "tunnel_deleted.v0", "credential_deleted.v0")
	edge, err := e.svc.CreateHTTPSEdge(e.ctx, e.user, edges.CreateEdgeParams{})
	if err != nil {
		t.Fatal(err)
	}
	var routes []string
	for _, m := range []string{"/a", "/b"} {
		r, err := e.svc.CreateHTTPSEdgeRoute(e.ctx, e.user, edge.ID, edges.CreateRouteParams{MatchType: "path_prefix", Match: m})
		if err != nil {
			t.Fatal(err)
		}
		routes = append(routes, r.ID)
	}
	cred, token := e.token(t, e.user)
	tn := e.tunnel(t, token, nil)
	if err := e.svc.DeleteHTTPSEdge(e.ctx, e.user, edge.ID); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.DeleteCredential(e.ctx, e.user, cred.ID); err != nil {
		t.Fatal(err)
	}
	e.closeEvents(t)
	var got []string
	for _, ev := range rec.events() {
		var ref struct{ ID, URI string }
		if err := json.Unmarshal(ev.Object, &ref); err != nil {
			t.Fatal(err)
		}
		got = append(got, ev.Type+" "+ref.ID)
		if ev.Type == "https_edge_route_deleted.v0" && ref.URI != testBase+"edges/https/"+edge.ID+"/routes/"+ref.ID {
			t.Errorf("route Ref URI %q", ref.URI)
		}
	}
	want := []string{"https_edge_route_deleted.v0 " + routes[0], "https_edge_route_deleted.v0 " + routes[1], "https_edge_deleted.v0 " + edge.ID,
		"tunnel_deleted.v0 " + tn.ID, "credential_deleted.v0 " + cred.ID}
	if !slices.Equal(got, want) {
		t.Errorf("events:\n%v\nwant\n%v", got, want)
	}
}

// TestUnknownKindInTheFeedIsLogged: a change of a kind the Service does
// not declare (written by newer code sharing the store, say) is logged by
// event delivery and by the record cache's follower, never skipped
// silently.
func TestUnknownKindInTheFeedIsLogged(t *testing.T) {
	st := memstore.New()
	e, logs := newEventEnv(t, st, events.Options{Sink: &eventRecorder{}})
	// The record cache's follower starts from the revision it reads in
	// the background: wait until it has, so that the write below comes
	// after it (else it starts past the write and never sees it).
	before, err := st.Revision(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.svc.Host().WaitRevision(e.ctx, before); err != nil {
		t.Fatal(err)
	}
	if err := st.Create(e.ctx, store.Record{Kind: "agent_session", AccountID: e.admin.AccountID, ID: "as_1", Data: []byte(`{}`),
		Note: store.Note{Event: "agent_session_created.v0", At: e.clock.Now()}}); err != nil {
		t.Fatal(err)
	}
	rev, err := st.Revision(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.svc.Host().WaitRevision(e.ctx, rev); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.Close(e.ctx); err != nil { // delivers what was committed: the change is behind it
		t.Fatal(err)
	}
	for _, want := range []string{"event delivery: a change of an unknown kind", "record cache: a change of an unknown kind"} {
		if !strings.Contains(logs.String(), want) || !strings.Contains(logs.String(), "kind=agent_session") {
			t.Errorf("the logs do not say %q naming the kind:\n%s", want, logs)
		}
	}
}

// TestInternalKindsAreKnown: the Service's own records (the sealing
// check, written on a store's first use) are known to every follower of
// the feed: nothing logs them as a change of an unknown kind.
func TestInternalKindsAreKnown(t *testing.T) {
	st := memstore.New()
	e, logs := newEventEnv(t, st, events.Options{Sink: &eventRecorder{}})
	before, err := st.Revision(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.svc.Host().WaitRevision(e.ctx, before); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.Host().CheckSealingKey(e.ctx); err != nil { // writes the check on first use
		t.Fatal(err)
	}
	// A node's records too: registered, renewed, removed.
	node, err := e.svc.Host().Tunnels().RegisterNode(e.ctx, agents.NodeParams{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Host().Tunnels().RenewNode(e.ctx, node.ID); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.Host().Tunnels().RemoveNode(e.ctx, node.ID); err != nil {
		t.Fatal(err)
	}
	// And a lease's: taken, renewed, released.
	for range 2 {
		if _, err := e.svc.Host().Leases().AcquireLease(e.ctx, "acme", "me", time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.svc.Host().Leases().ReleaseLease(e.ctx, "acme", "me"); err != nil {
		t.Fatal(err)
	}
	// And the certificate manager's: an account key, a challenge put,
	// replaced and deleted.
	if _, err := e.svc.Host().Certificates().ACMEAccountKey(e.ctx, "https://acme.example.test/dir", func() ([]byte, error) { return []byte("k"), nil }); err != nil {
		t.Fatal(err)
	}
	ch := edgeplane.ACMEChallenge{Type: edgeplane.ChallengeTLSALPN01, Name: "a.example.com", KeyAuthorization: "a.b", ExpiresAt: e.clock.Now().Add(time.Minute)}
	for range 2 {
		if err := e.svc.Host().Certificates().PutACMEChallenge(e.ctx, ch); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.svc.Host().Certificates().DeleteACMEChallenge(e.ctx, ch.Type, ch.Name, ""); err != nil {
		t.Fatal(err)
	}
	// And an event destination's delivery state: created with it, saved
	// by delivery, deleted with it.
	dest, err := e.svc.CreateEventDestination(e.ctx, e.user, events.CreateDestinationParams{
		Target: &events.TargetParams{HTTP: &events.HTTPTargetParams{URL: "https://h.example.com"}}})
	if err != nil {
		t.Fatal(err)
	}
	src := e.svc.Host().EventDelivery()
	dests, err := src.Destinations(e.ctx)
	if err != nil || len(dests) != 1 {
		t.Fatalf("destinations %v, %v", dests, err)
	}
	if err := src.SaveState(e.ctx, dests[0], webhook.State{Cursor: 1}); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.DeleteEventDestination(e.ctx, e.user, dest.ID); err != nil {
		t.Fatal(err)
	}
	rev, err := st.Revision(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rev == before {
		t.Fatal("CheckSealingKey wrote nothing: the test tests nothing")
	}
	if err := e.svc.Host().WaitRevision(e.ctx, rev); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.Close(e.ctx); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs.String(), "unknown kind") {
		t.Errorf("the sealing check or a node was logged as an unknown kind:\n%s", logs)
	}
	for _, k := range []store.Kind{"sealing_check", "node", "lease", "acme_account", "acme_challenge", "event_delivery"} {
		if role, known := kinds.DataPlaneRoleOf(k); !known || role != kinds.DataPlaneNone {
			t.Errorf("DataPlaneRoleOf(%s) = %v, %v; want none, known", k, role, known)
		}
	}
}
