package edgeplane_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/hosting"
)

func TestLease(t *testing.T) {
	e := newEnv(t)
	h := e.svc.Host()
	const term = 30 * time.Second
	take := func(holder string) *hosting.Lease {
		t.Helper()
		l, err := h.Leases().AcquireLease(e.ctx, "acme", holder, term)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	first := take("a")
	if !first.Held || first.Holder != "a" || !first.ExpiresAt.Equal(e.clock.Now().UTC().Add(term)) {
		t.Fatalf("first acquire = %+v, want held by a for %s", first, term)
	}
	if l := take("b"); l.Held || l.Holder != "a" || !l.ExpiresAt.Equal(first.ExpiresAt) {
		t.Fatalf("b's acquire during a's term = %+v, want not held, held by a", l)
	}
	e.clock.Advance(term / 2)
	renewed := take("a")
	if !renewed.Held || !renewed.Since.Equal(first.Since) || !renewed.ExpiresAt.Equal(e.clock.Now().UTC().Add(term)) {
		t.Fatalf("renewal = %+v, want held, since %v, a new term", renewed, first.Since)
	}
	e.clock.Advance(term - time.Second)
	if l := take("b"); l.Held {
		t.Fatalf("b took the lease a second before a's renewed term ended: %+v", l)
	}
	e.clock.Advance(time.Second)
	taken := take("b")
	if !taken.Held || taken.Holder != "b" || !taken.Since.Equal(e.clock.Now().UTC()) {
		t.Fatalf("b's acquire after a's term = %+v, want held by b since now", taken)
	}
	if l := take("a"); l.Held || l.Holder != "b" {
		t.Fatalf("a's acquire after b took it = %+v, want held by b", l)
	}
	// Releasing a lease one does not hold does nothing; the holder's
	// release lets the next take it at once.
	if err := h.Leases().ReleaseLease(e.ctx, "acme", "a"); err != nil {
		t.Fatal(err)
	}
	if l := take("a"); l.Held {
		t.Fatalf("a's release of b's lease let it go: %+v", l)
	}
	if err := h.Leases().ReleaseLease(e.ctx, "acme", "b"); err != nil {
		t.Fatal(err)
	}
	if l := take("a"); !l.Held {
		t.Fatalf("after b's release, a's acquire = %+v, want held", l)
	}
	if err := h.Leases().ReleaseLease(e.ctx, "never-taken", "a"); err != nil {
		t.Fatalf("releasing a lease no one took: %v", err)
	}
	// Leases of other names are independent.
	if l, err := h.Leases().AcquireLease(e.ctx, "events", "b", term); err != nil || !l.Held {
		t.Fatalf("another name's lease = %+v, %v; want held", l, err)
	}
}

func TestLeaseRefusesBadArguments(t *testing.T) {
	e := newEnv(t)
	h := e.svc.Host()
	for _, tc := range []struct {
		name, holder string
		term         time.Duration
		field        string
	}{
		{"", "a", time.Minute, "name"},
		{"Acme", "a", time.Minute, "name"},
		{"acme/x", "a", time.Minute, "name"},
		{strings.Repeat("a", hosting.MaxLeaseName+1), "a", time.Minute, "name"},
		{"acme", "", time.Minute, "holder"},
		{"acme", strings.Repeat("h", hosting.MaxLeaseHolder+1), time.Minute, "holder"},
		{"acme", "\xff", time.Minute, "holder"},
		{"acme", "a", time.Millisecond, "term"},
		{"acme", "a", hosting.MaxLeaseTerm + time.Second, "term"},
	} {
		_, err := h.Leases().AcquireLease(e.ctx, tc.name, tc.holder, tc.term)
		if apierr.CodeOf(err) != apierr.InvalidArgument || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("AcquireLease(%q, %q, %s) = %v, want invalid %s", tc.name, tc.holder, tc.term, err, tc.field)
		}
	}
	if l, err := h.Leases().AcquireLease(e.ctx, "acme", "a", time.Minute); err != nil || !l.Held {
		t.Fatalf("after refused calls, the lease = %+v, %v; want free and taken", l, err)
	}
}

// TestLeaseOneHolderAcrossReplicas has replicas of one SQLite file race
// for a lease: exactly one holds it.
func TestLeaseOneHolderAcrossReplicas(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "store.db")
	const replicas = 4
	hosts := make([]*edgeplane.Host, replicas)
	for i := range hosts {
		hosts[i] = replicaOf(t, path).Host()
	}
	for round := range 5 {
		name := "round-" + string(rune('a'+round))
		var wg sync.WaitGroup
		held := make([]bool, replicas)
		for i, h := range hosts {
			wg.Go(func() {
				l, err := h.Leases().AcquireLease(ctx, name, "replica-"+string(rune('0'+i)), time.Minute)
				if err != nil {
					t.Error(err)
					return
				}
				held[i] = l.Held
			})
		}
		wg.Wait()
		n := 0
		for _, ok := range held {
			if ok {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("round %d: %d replicas hold the lease (%v), want exactly 1", round, n, held)
		}
	}
}
