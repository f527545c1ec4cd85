package cachesync_test

import (
	"context"
	"crypto/sha256"
	"log/slog"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/identity"
	"github.com/edgeplane/edgeplane/internal/authcache"
	"github.com/edgeplane/edgeplane/internal/cachesync"
	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/store"
)

// kinds says what a change means in these tests: "key" is an API key
// (its authentications are dropped), "user" a user (all are), "own" the
// Service's own kind, any other unknown.
func kinds(k store.Kind) (known, internal bool, auth cachesync.AuthEffect) {
	switch k {
	case "key":
		return true, false, cachesync.AuthForgetRecord
	case "user":
		return true, false, cachesync.AuthForgetAll
	case "own":
		return false, true, cachesync.AuthUnaffected
	}
	return false, false, cachesync.AuthUnaffected
}

// TestAuthForgotten: another process's change of an API key drops the
// authentications of that key, one of a user or of an unknown kind drops
// them all (even a create), and one of the Service's own kinds or the
// create of a known kind drops none.
// Each case waits until the follower has applied the change
// (WaitApplied), then looks.
func TestAuthForgotten(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st := memstore.New()
	auth := authcache.New(time.Hour)
	f := cachesync.Start(cachesync.Config{Store: st, Auth: auth, Log: slog.New(slog.DiscardHandler), KindOf: kinds})
	defer f.Stop()
	now := time.Now()
	keyA, keyB := sha256.Sum256([]byte("a")), sha256.Sum256([]byte("b"))
	put := func() {
		auth.Put(keyA, "key_a", identity.Principal{AccountID: "ac_1"}, now, auth.Note())
		auth.Put(keyB, "key_b", identity.Principal{AccountID: "ac_1"}, now, auth.Note())
	}
	for _, kind := range []store.Kind{"key", "user", "own", "other"} {
		for _, id := range []string{"key_a", "key_b"} {
			if err := st.Create(ctx, store.Record{Kind: kind, AccountID: "ac_1", ID: id + "_" + string(kind), Data: []byte(`{}`)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Even a create of an unknown kind drops every authentication: let
	// the follower apply these before the cases cache theirs.
	applied := func(t *testing.T) {
		t.Helper()
		rev, err := st.Revision(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.WaitApplied(ctx, rev); err != nil {
			t.Fatal(err)
		}
		if f.Applied().Load() < rev {
			t.Errorf("applied %d after WaitApplied(%d)", f.Applied().Load(), rev)
		}
	}
	applied(t)
	for _, tc := range []struct {
		kind       store.Kind
		id         string
		keepA      bool
		keepB      bool
		createOnly bool
	}{
		{kind: "key", id: "key_a", keepA: false, keepB: true},
		{kind: "user", id: "key_a", keepA: false, keepB: false},
		{kind: "own", id: "key_a", keepA: true, keepB: true},
		{kind: "other", id: "key_a", keepA: false, keepB: false},
		{kind: "key", id: "key_new", keepA: true, keepB: true, createOnly: true},
	} {
		t.Run(string(tc.kind)+"/"+tc.id, func(t *testing.T) {
			put()
			var err error
			if tc.createOnly {
				err = st.Create(ctx, store.Record{Kind: tc.kind, AccountID: "ac_1", ID: tc.id, Data: []byte(`{}`)})
			} else {
				// The record's ID is what an API key's authentications
				// are remembered by.
				err = st.Delete(ctx, tc.kind, "ac_1", tc.id+"_"+string(tc.kind), store.Note{})
				if err == nil && tc.kind == "key" {
					err = st.Create(ctx, store.Record{Kind: "key", AccountID: "ac_1", ID: tc.id, Data: []byte(`{}`)})
					if err == nil {
						err = st.Delete(ctx, "key", "ac_1", tc.id, store.Note{})
					}
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			applied(t)
			if _, ok := auth.Get(keyA, now); ok != tc.keepA {
				t.Errorf("key a cached: %v, want %v", ok, tc.keepA)
			}
			if _, ok := auth.Get(keyB, now); ok != tc.keepB {
				t.Errorf("key b cached: %v, want %v", ok, tc.keepB)
			}
		})
	}
}

// TestStop: once stopped, Done is closed and WaitApplied returns nil at
// once, whatever the revision (the caches are bypassed from then on);
// Stop may be called again.
func TestStop(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f := cachesync.Start(cachesync.Config{Store: memstore.New(), Auth: authcache.New(time.Hour), Log: slog.New(slog.DiscardHandler), KindOf: kinds})
	f.Stop()
	f.Stop()
	select {
	case <-f.Done():
	default:
		t.Fatal("Done is not closed after Stop")
	}
	if err := f.WaitApplied(ctx, 1<<40); err != nil {
		t.Fatalf("WaitApplied after Stop = %v, want nil", err)
	}
}
