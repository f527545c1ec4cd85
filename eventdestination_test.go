package edgeplane_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/store"
	"github.com/edgeplane/edgeplane/webhook"
)

// A destination's secret is sealed at rest: no stored record and no
// change in the feed holds it; the API shows it once.
func TestEventDestinationSecretSealedAtRest(t *testing.T) {
	st := memstore.New()
	e := newEnvWithStore(t, st)
	secret := events.NewSecret()
	d, err := e.svc.CreateEventDestination(e.ctx, e.user, events.CreateDestinationParams{
		Target: &events.TargetParams{HTTP: &events.HTTPTargetParams{URL: "https://h.example.com", Secret: &secret}}})
	if err != nil {
		t.Fatal(err)
	}
	if d.Target.HTTP.Secret == nil || *d.Target.HTTP.Secret != secret {
		t.Fatalf("create shows secret %v", d.Target.HTTP.Secret)
	}
	key, _ := events.ParseSecret(secret)
	changes, err := st.Changes(e.ctx, 0, 10000, store.WithData)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range changes {
		if bytes.Contains(c.Data, []byte(secret)) || bytes.Contains(c.Data, key) || bytes.Contains(c.Data, []byte(strings.TrimPrefix(secret, "whsec_"))) {
			t.Fatalf("change %d (%s) holds the secret: %s", c.Revision, c.Kind, c.Data)
		}
	}
	rec, err := st.Get(e.ctx, edgeplane.KindEventDestination, e.user.AccountID, d.ID)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(rec.Data, &doc); err != nil || doc["sealed_secret"] == nil {
		t.Fatalf("stored document %s: %v", rec.Data, err)
	}
	got, err := e.svc.GetEventDestination(e.ctx, e.user, d.ID)
	if err != nil || got.Target.HTTP.Secret != nil {
		t.Fatalf("get shows secret %v, %v", got, err)
	}
	// Another account does not see it.
	_, err = e.svc.GetEventDestination(e.ctx, e.other, d.ID)
	wantCode(t, err, apierr.NotFound)
}

// Changes of destinations are events of their own.
func TestEventDestinationEvents(t *testing.T) {
	rec := &eventRecorder{}
	e, _ := newEventEnv(t, memstore.New(), events.Options{Sink: rec})
	types := []string{"event_destination_created.v0", "event_destination_updated.v0", "event_destination_deleted.v0"}
	e.subscribe(t, e.user, types...)
	d, err := e.svc.CreateEventDestination(e.ctx, e.user, events.CreateDestinationParams{
		Target: &events.TargetParams{HTTP: &events.HTTPTargetParams{URL: "https://h.example.com"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.UpdateEventDestination(e.ctx, e.user, d.ID, events.UpdateDestinationParams{Description: ptr("x")}); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.DeleteEventDestination(e.ctx, e.user, d.ID); err != nil {
		t.Fatal(err)
	}
	e.closeEvents(t)
	var got []string
	for _, ev := range rec.events() {
		got = append(got, ev.Type)
		if strings.Contains(string(ev.Object), "whsec_") || strings.Contains(string(ev.Object), "sealed") {
			t.Errorf("event %s shows the secret: %s", ev.Type, ev.Object)
		}
	}
	if strings.Join(got, ",") != strings.Join(types, ",") {
		t.Fatalf("events %v, want %v", got, types)
	}
}

// A destination whose secret does not open (the store read under another
// sealing key) gets no events, and says so in the log once, not at every
// rescan.
func TestEventDeliverySkipsUnopenableSecrets(t *testing.T) {
	st := memstore.New()
	e := newEnvWithStore(t, st)
	if _, err := e.svc.CreateEventDestination(e.ctx, e.user, events.CreateDestinationParams{
		Target: &events.TargetParams{HTTP: &events.HTTPTargetParams{URL: "https://h.example.com"}}}); err != nil {
		t.Fatal(err)
	}
	if got, err := e.svc.Host().EventDelivery().Destinations(e.ctx); err != nil || len(got) != 1 || len(got[0].Key) != 32 {
		t.Fatalf("under its own key: %+v, %v", got, err)
	}
	var logs bytes.Buffer
	other, err := edgeplane.New(st, edgeplane.Options{SealingKey: bytes.Repeat([]byte{7}, edgeplane.SealingKeySize),
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(e.ctx)
	src := other.Host().EventDelivery()
	for range 3 {
		if got, err := src.Destinations(e.ctx); err != nil || len(got) != 0 {
			t.Fatalf("under another key: %+v, %v", got, err)
		}
	}
	if n := strings.Count(logs.String(), "cannot open a destination's secret"); n != 1 {
		t.Fatalf("logged %d times:\n%s", n, logs.String())
	}
}

// racingStore runs first, right after each create of an event
// destination, as delivery may when its rescan lists the destination
// before the create has written the delivery state.
type racingStore struct {
	store.Store
	first func(rec store.Record)
}

func (s *racingStore) Create(ctx context.Context, rec store.Record) error {
	if err := s.Store.Create(ctx, rec); err != nil {
		return err
	}
	if rec.Kind == edgeplane.KindEventDestination && s.first != nil {
		s.first(rec)
	}
	return nil
}

// A destination whose delivery state delivery created first is created
// all the same, with that state.
func TestEventDestinationCreateRacesDelivery(t *testing.T) {
	st := &racingStore{Store: memstore.New()}
	e := newEnvWithStore(t, st)
	var loaded webhook.State
	st.first = func(rec store.Record) {
		var err error
		loaded, err = e.svc.Host().EventDelivery().LoadState(e.ctx, webhook.Destination{AccountID: rec.AccountID, ID: rec.ID})
		if err != nil {
			t.Errorf("delivery's LoadState: %v", err)
		}
	}
	d, err := e.svc.CreateEventDestination(e.ctx, e.user, events.CreateDestinationParams{
		Target: &events.TargetParams{HTTP: &events.HTTPTargetParams{URL: "https://h.example.com"}}})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	kept, err := e.svc.Host().EventDelivery().LoadState(e.ctx, webhook.Destination{AccountID: e.user.AccountID, ID: d.ID})
	if err != nil || loaded.Cursor == 0 || kept.Cursor != loaded.Cursor {
		t.Fatalf("cursor %d (%v), want the one delivery created, %d", kept.Cursor, err, loaded.Cursor)
	}
	if _, err := e.svc.GetEventDestination(e.ctx, e.user, d.ID); err != nil {
		t.Fatalf("get: %v", err)
	}
}
