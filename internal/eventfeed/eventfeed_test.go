package eventfeed_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/internal/eventfeed"
	"github.com/edgeplane/edgeplane/internal/ids"
	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/store"
)

// createSource stores subscription sub with a source of type typ.
func createSource(t *testing.T, st store.Store, account, sub, id, typ string) {
	t.Helper()
	if err := st.Create(context.Background(), store.Record{Kind: "sub", AccountID: account, ID: sub, Data: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	err := st.Create(context.Background(), store.Record{Kind: "src", AccountID: account, ID: id, ParentID: sub, Data: []byte(`{}`),
		Indexes: []store.IndexEntry{{Name: "event_type", Value: typ}}})
	if err != nil {
		t.Fatal(err)
	}
}

// TestExpand: a change becomes one event per source of its type in its
// account, across pages, each naming the source's subscription; other
// types and accounts get none.
func TestExpand(t *testing.T) {
	st := memstore.New()
	for i := range 5 {
		createSource(t, st, "ac_1", "sub_"+strconv.Itoa(i), "src_"+strconv.Itoa(i), "a.v0")
	}
	createSource(t, st, "ac_1", "sub_b", "src_b", "b.v0")
	createSource(t, st, "ac_2", "sub_other", "src_other", "a.v0")
	expand := eventfeed.Expand(st, ids.NewGenerator(time.Now), "src", "event_type", 2)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	evs, err := expand(context.Background(), events.Change{AccountID: "ac_1", Type: "a.v0", CreatedAt: at, Object: []byte(`{"x":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	var subs []string
	for _, ev := range evs {
		subs = append(subs, ev.SubscriptionID)
		if ev.Type != "a.v0" || ev.AccountID != "ac_1" || !ev.CreatedAt.Equal(at) || string(ev.Object) != `{"x":1}` || ev.ID == "" {
			t.Errorf("event %+v: want the change's type, account, time and object, and an ID", ev)
		}
	}
	slices.Sort(subs)
	if want := []string{"sub_0", "sub_1", "sub_2", "sub_3", "sub_4"}; !slices.Equal(subs, want) {
		t.Errorf("events for subscriptions %v, want %v", subs, want)
	}
}

// records reports every change of kind "thing" as "thing_changed.v0"
// and fails to show those whose ID is "bad".
type records struct{}

func (records) Event(c store.Change) (string, time.Time, bool) {
	return "thing_changed.v0", time.Unix(0, 0), c.Kind == "thing"
}

func (records) Object(_ context.Context, c store.Change) ([]byte, error) {
	if c.ID == "bad" {
		return nil, errors.New("cannot show it")
	}
	return []byte(`"` + c.ID + `"`), nil
}

// TestStartStop: the follower reports the changes committed after it
// started that the root says report an event, in commit order, and Stop
// returns once every change committed before it is reported.
func TestStartStop(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st := memstore.New()
	if err := st.Create(ctx, store.Record{Kind: "thing", AccountID: "ac_1", ID: "before", Data: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	createSource(t, st, "ac_1", "sub_1", "src_1", "thing_changed.v0")
	var mu sync.Mutex
	var got []string
	sink := events.SinkFunc(func(_ context.Context, ev events.Event) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, string(ev.Object))
		return nil
	})
	log := slog.New(slog.DiscardHandler)
	q := events.NewQueue(events.Options{Sink: sink}, eventfeed.Expand(st, ids.NewGenerator(time.Now), "src", "event_type", 100), log)
	f := eventfeed.Start(st, q, log, records{})
	for _, rec := range []store.Record{
		{Kind: "thing", AccountID: "ac_1", ID: "one"},
		{Kind: "other", AccountID: "ac_1", ID: "ignored"},
		{Kind: "thing", AccountID: "ac_1", ID: "bad"},
		{Kind: "thing", AccountID: "ac_1", ID: "two"},
	} {
		rec.Data = []byte(`{}`)
		if err := st.Create(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := q.Close(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{`"one"`, `"two"`}; !slices.Equal(got, want) {
		t.Errorf("delivered %v, want %v", got, want)
	}
}
