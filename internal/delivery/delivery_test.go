package delivery_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/internal/delivery"
	"github.com/edgeplane/edgeplane/kinds"
	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/store"
	"github.com/edgeplane/edgeplane/webhook"
)

// fakeRecords reads destinations whose document is their URL ("" gives
// no destination), sources whose document is their event type, and
// reports every change of kinds.IPPolicy as "ip_policy_created.v0"
// showing its document.
type fakeRecords struct{}

func (fakeRecords) Destination(rec store.Record) (webhook.Destination, string, error) {
	if len(rec.Data) == 0 {
		return webhook.Destination{}, "no URL", errors.New("empty")
	}
	return webhook.Destination{AccountID: rec.AccountID, ID: rec.ID, URL: string(rec.Data)}, "", nil
}

func (fakeRecords) Event(c store.Change) (string, time.Time, bool) {
	return "ip_policy_created.v0", time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC), c.Kind == kinds.IPPolicy
}

func (fakeRecords) Object(_ context.Context, c store.Change) ([]byte, error) { return c.Data, nil }

func (fakeRecords) SourceType(rec store.Record) (string, error) { return string(rec.Data), nil }

// TestStates: a delivery state is stored as it was in the root package
// (ID delivery_<destination>, a child of its destination, the
// webhook.State as JSON); the first created stands; Save replaces it.
func TestStates(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	s := delivery.New(st, slog.New(slog.DiscardHandler), fakeRecords{})
	if err := st.Create(ctx, store.Record{Kind: kinds.EventDestination, AccountID: "acct_1", ID: "ed_1", Data: []byte("https://a.example")}); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.Read(ctx, "acct_1", "ed_1"); ok || err != nil {
		t.Fatalf("Read before any state = %v, %v; want none", ok, err)
	}
	if created, err := s.Create(ctx, "acct_1", "ed_1", webhook.State{Cursor: 7}); !created || err != nil {
		t.Fatalf("Create = %v, %v", created, err)
	}
	if created, err := s.Create(ctx, "acct_1", "ed_1", webhook.State{Cursor: 9}); created || err != nil {
		t.Fatalf("a second Create = %v, %v; want false, nil", created, err)
	}
	rec, err := st.Get(ctx, kinds.Delivery, "acct_1", "delivery_ed_1")
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(webhook.State{Cursor: 7})
	if rec.ParentID != "ed_1" || !bytes.Equal(rec.Data, want) {
		t.Errorf("stored %+v; want parent ed_1 and %s", rec, want)
	}
	if err := s.Save(ctx, "acct_1", "ed_1", webhook.State{Cursor: 12, Delivered: 3}); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := s.Read(ctx, "acct_1", "ed_1"); !ok || err != nil || got.Cursor != 12 || got.Delivered != 3 {
		t.Fatalf("Read = %+v, %v, %v", got, ok, err)
	}
}

// TestSource: destinations that give none are left out; a destination
// without a state starts at the current revision; its events are the
// changes of its account that its subscriptions have a source of, one
// per subscription, with IDs that are the same at every read.
func TestSource(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	var log bytes.Buffer
	src := delivery.New(st, slog.New(slog.NewTextHandler(&log, nil)), fakeRecords{}).Source()
	for _, rec := range []store.Record{
		{Kind: kinds.EventDestination, AccountID: "acct_1", ID: "ed_1", Data: []byte("https://a.example")},
		{Kind: kinds.EventDestination, AccountID: "acct_1", ID: "ed_2"},
		{Kind: kinds.EventSubscription, AccountID: "acct_1", ID: "esb_2", Refs: []string{"ed_1"}},
		{Kind: kinds.EventSubscription, AccountID: "acct_1", ID: "esb_1", Refs: []string{"ed_1"}},
		{Kind: kinds.EventSource, AccountID: "acct_1", ID: "es_1", ParentID: "esb_1", Data: []byte("ip_policy_created.v0")},
		{Kind: kinds.EventSource, AccountID: "acct_1", ID: "es_2", ParentID: "esb_2", Data: []byte("ip_policy_created.v0")},
	} {
		if err := st.Create(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	dests, err := src.Destinations(ctx)
	if err != nil || len(dests) != 1 || dests[0].ID != "ed_1" || dests[0].URL != "https://a.example" {
		t.Fatalf("Destinations = %+v, %v; want ed_1 alone", dests, err)
	}
	if _, err := src.Destinations(ctx); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(log.String(), `msg="no URL" id=ed_2 err=empty`); n != 1 {
		t.Errorf("the destination that gives none is logged %d times by two reads; want once:\n%s", n, log.String())
	}
	rev, err := st.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	state, err := src.LoadState(ctx, dests[0])
	if err != nil || state.Cursor != rev {
		t.Fatalf("LoadState = %+v, %v; want the cursor at %d", state, err, rev)
	}
	for _, rec := range []store.Record{
		{Kind: kinds.IPPolicy, AccountID: "acct_2", ID: "ipp_2", Data: []byte(`{"other":true}`)},
		{Kind: kinds.IPPolicy, AccountID: "acct_1", ID: "ipp_1", Data: []byte(`{"id":"ipp_1"}`)},
	} {
		if err := st.Create(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	last, err := st.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := src.Events(ctx, dests[0], state.Cursor, 100)
	if err != nil {
		t.Fatal(err)
	}
	if b.Through != last || len(b.Events) != 2 {
		t.Fatalf("Events through %d, %d events; want 2 through %d", b.Through, len(b.Events), last)
	}
	// The IDs as the root package made them: the first 27 bytes of the
	// SHA-256 of "destination/subscription/revision", each in base62.
	for i, want := range []struct{ id, sub string }{
		{"ev_lh492bq7iPrYmlMnc2RVkchj8iF", "esb_1"},
		{"ev_TY3sulNhYDTefop0VxdUBv07Z9V", "esb_2"},
	} {
		var ev events.Event
		if err := json.Unmarshal(b.Events[i].Body, &ev); err != nil {
			t.Fatal(err)
		}
		if b.Events[i].Revision != 9 || ev.ID != want.id || b.Events[i].ID != want.id || ev.SubscriptionID != want.sub ||
			ev.AccountID != "acct_1" || string(ev.Object) != `{"id":"ipp_1"}` {
			t.Errorf("event %d at revision %d: %s; want %s for %s at revision 9", i, b.Events[i].Revision, b.Events[i].Body, want.id, want.sub)
		}
	}
}
