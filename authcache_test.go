package edgeplane_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/identity"
	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/store"
)

// lookupCountingStore counts Lookup calls.
type lookupCountingStore struct {
	store.Store
	lookups atomic.Int64
}

func (s *lookupCountingStore) Lookup(ctx context.Context, kind store.Kind, key string) (store.Record, error) {
	s.lookups.Add(1)
	return s.Store.Lookup(ctx, kind, key)
}

// TestAuthCache: a repeated authentication reads nothing from the store;
// a key revoked through this Service fails at once; one revoked through
// another Service on the same store fails once the TTL has passed.
func TestAuthCache(t *testing.T) {
	ctx := context.Background()
	st := &lookupCountingStore{Store: memstore.New()}
	clock := &fakeClock{now: time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)}
	svc, err := edgeplane.New(st, edgeplane.Options{Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	b, err := svc.Host().Bootstrap(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	newKey := func() *identity.APIKey {
		k, err := svc.Host().CreateAPIKey(ctx, b.AccountID, identity.CreateAPIKeyParams{OwnerID: b.AdminID})
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	k := newKey()
	for range 3 {
		if _, err := svc.Authenticate(ctx, *k.Token); err != nil {
			t.Fatal(err)
		}
	}
	if n := st.lookups.Load(); n != 1 {
		t.Errorf("3 authentications read the store %d times, want 1", n)
	}

	// Revoked through this Service: at once.
	if err := svc.Host().DeleteAPIKey(ctx, b.AccountID, k.ID); err != nil {
		t.Fatal(err)
	}
	_, err = svc.Authenticate(ctx, *k.Token)
	wantCode(t, err, apierr.Unauthenticated)

	// Revoked through another Service (a replica): within the TTL.
	k2 := newKey()
	if _, err := svc.Authenticate(ctx, *k2.Token); err != nil {
		t.Fatal(err)
	}
	replica, err := edgeplane.New(st, edgeplane.Options{Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	if err := replica.Host().DeleteAPIKey(ctx, b.AccountID, k2.ID); err != nil {
		t.Fatal(err)
	}
	clock.Advance(edgeplane.DefaultAuthCacheTTL)
	_, err = svc.Authenticate(ctx, *k2.Token)
	wantCode(t, err, apierr.Unauthenticated)

	// A negative TTL turns the cache off.
	off, err := edgeplane.New(st, edgeplane.Options{Clock: clock.Now, AuthCacheTTL: -1})
	if err != nil {
		t.Fatal(err)
	}
	k3 := newKey()
	before := st.lookups.Load()
	for range 3 {
		if _, err := off.Authenticate(ctx, *k3.Token); err != nil {
			t.Fatal(err)
		}
	}
	if n := st.lookups.Load() - before; n != 3 {
		t.Errorf("without the cache 3 authentications read the store %d times", n)
	}
	// Failures are never cached.
	before = st.lookups.Load()
	for range 2 {
		_, err := svc.Authenticate(ctx, "epk_"+string(make([]byte, 40)))
		wantCode(t, err, apierr.Unauthenticated)
	}
	if n := st.lookups.Load() - before; n != 2 {
		t.Errorf("2 failed authentications read the store %d times", n)
	}
}
