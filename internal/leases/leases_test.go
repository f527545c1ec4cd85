package leases_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/internal/leases"
	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/kinds"
	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/store"
)

// clock is a fake clock that moves only when told.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newRegistry(t *testing.T) (*leases.Registry, store.Store, *clock) {
	t.Helper()
	c := &clock{t: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)}
	st := memstore.New()
	db := &records.DB{Store: st, Log: slog.New(slog.DiscardHandler), Now: c.now}
	return leases.New(st, db, c.now), st, c
}

// TestStoredForm: a lease is the record lease_<name> of kind lease under
// the account "lease", with the document {holder, since, expires_at};
// a lease a store already holds in that form is read as such. Stores
// written before the leases moved to this package read the same.
func TestStoredForm(t *testing.T) {
	ctx := context.Background()
	r, st, c := newRegistry(t)
	if _, err := r.Acquire(ctx, "acme", "a", time.Minute); err != nil {
		t.Fatal(err)
	}
	rec, err := st.Get(ctx, kinds.Lease, "lease", "lease_acme")
	if err != nil {
		t.Fatalf("the lease's record: %v", err)
	}
	want := `{"holder":"a","since":"2025-03-01T12:00:00Z","expires_at":"2025-03-01T12:01:00Z"}`
	if string(rec.Data) != want {
		t.Errorf("stored document %s; want %s", rec.Data, want)
	}

	// A lease written by another replica, in the stored form, is held.
	other := store.Record{Kind: kinds.Lease, AccountID: "lease", ID: "lease_dns",
		Data: []byte(`{"holder":"b","since":"2025-03-01T11:59:00Z","expires_at":"2025-03-01T12:00:30Z"}`)}
	if err := st.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	l, err := r.Acquire(ctx, "dns", "a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if l.Held || l.Holder != "b" || !l.ExpiresAt.Equal(c.t.Add(30*time.Second)) {
		t.Errorf("a's acquire of b's lease = %+v; want held by b until 12:00:30", l)
	}
	if err := r.Release(ctx, "dns", "b"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get(ctx, kinds.Lease, "lease", "lease_dns"); !errors.Is(err, apierr.ErrNotFound) {
		t.Errorf("b's released lease: %v; want not found", err)
	}
}

// TestRenewKeepsSince: a holder's renewal keeps Since; after the term
// another holder takes the lease with a Since of its own.
func TestRenewKeepsSince(t *testing.T) {
	ctx := context.Background()
	r, _, c := newRegistry(t)
	first, err := r.Acquire(ctx, "acme", "a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	c.t = c.t.Add(30 * time.Second)
	renewed, err := r.Acquire(ctx, "acme", "a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if !renewed.Held || !renewed.Since.Equal(first.Since) || !renewed.ExpiresAt.Equal(c.t.Add(time.Minute)) {
		t.Errorf("renewal = %+v; want held since %v until %v", renewed, first.Since, c.t.Add(time.Minute))
	}
	c.t = renewed.ExpiresAt
	taken, err := r.Acquire(ctx, "acme", "b", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if !taken.Held || taken.Holder != "b" || !taken.Since.Equal(c.t) {
		t.Errorf("b's acquire at the end of a's term = %+v; want held by b since %v", taken, c.t)
	}
}

// TestBadArguments: each argument's violation names its field.
func TestBadArguments(t *testing.T) {
	ctx := context.Background()
	r, _, _ := newRegistry(t)
	for _, tc := range []struct {
		name, holder string
		term         time.Duration
		field        string
	}{
		{"", "a", time.Minute, "name"},
		{"Acme", "a", time.Minute, "name"},
		{"acme", "", time.Minute, "holder"},
		{"acme", "a", time.Second - 1, "term"},
		{"acme", "a", leases.MaxTerm + 1, "term"},
	} {
		_, err := r.Acquire(ctx, tc.name, tc.holder, tc.term)
		var ae *apierr.Error
		if !errors.As(err, &ae) || ae.Code != apierr.InvalidArgument || len(ae.Violations) != 1 || ae.Violations[0].Field != tc.field {
			t.Errorf("Acquire(%q, %q, %s) = %v; want one violation of %s", tc.name, tc.holder, tc.term, err, tc.field)
		}
	}
}
