package memstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/store"
	"github.com/edgeplane/edgeplane/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return memstore.New() })
}

// TestFeedRetention: the feed keeps the newest FeedRetention changes and
// tells a reader behind them to resync.
func TestFeedRetention(t *testing.T) {
	ctx := context.Background()
	s := memstore.NewWithOptions(memstore.Options{FeedRetention: 4})
	for i := range 25 {
		id := "st_" + string(rune('a'+i))
		if err := s.Create(ctx, store.Record{Kind: "k", AccountID: "acct", ID: id, Data: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Changes(ctx, 21, 100)
	if err != nil || len(got) != 4 || got[0].Revision != 22 || got[3].Revision != 25 {
		t.Fatalf("the newest 4 changes: %d changes, %v", len(got), err)
	}
	var ce *store.CompactedError
	if _, err := s.Changes(ctx, 20, 100); !errors.As(err, &ce) || ce.Oldest != 22 {
		t.Errorf("a reader behind the retention: %v, want a CompactedError with oldest 22", err)
	}
}
