package elect_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/hosting"
	"github.com/edgeplane/edgeplane/internal/elect"
	"github.com/edgeplane/edgeplane/memstore"
)

// flaky is a Leaser whose store can be cut off.
type flaky struct {
	elect.Leaser
	down atomic.Bool
}

var errDown = errors.New("store unreachable")

func (f *flaky) AcquireLease(ctx context.Context, name, holder string, term time.Duration) (*hosting.Lease, error) {
	if f.down.Load() {
		return nil, errDown
	}
	return f.Leaser.AcquireLease(ctx, name, holder, term)
}

func (f *flaky) ReleaseLease(ctx context.Context, name, holder string) error {
	if f.down.Load() {
		return errDown
	}
	return f.Leaser.ReleaseLease(ctx, name, holder)
}

// replica runs elect.Run for holder and counts what its work does.
type replica struct {
	leaser  *flaky
	running atomic.Bool
	started atomic.Int32
	cancel  context.CancelFunc
	done    chan error
}

func start(t *testing.T, host *edgeplane.Host, holder string, overlap *atomic.Int32) *replica {
	r := &replica{leaser: &flaky{Leaser: host.Leases()}, done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() {
		r.done <- elect.Run(ctx, elect.Config{Leaser: r.leaser, Name: "work", Holder: holder, Term: time.Second, Renew: 50 * time.Millisecond},
			func(ctx context.Context) {
				if overlap.Add(1) > 1 {
					t.Errorf("%s started while another replica's work runs", holder)
				}
				r.started.Add(1)
				r.running.Store(true)
				<-ctx.Done()
				r.running.Store(false)
				overlap.Add(-1)
			})
	}()
	t.Cleanup(func() { r.stop(t) })
	return r
}

func (r *replica) stop(t *testing.T) {
	r.cancel()
	if err := <-r.done; !errors.Is(err, context.Canceled) {
		t.Errorf("Run returned %v, want context.Canceled", err)
	}
	r.done <- context.Canceled // a second stop returns at once
}

// eventually polls cond for up to 10 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestOneReplicaWorksAndAnotherTakesOver(t *testing.T) {
	svc, err := edgeplane.New(memstore.New(), edgeplane.Options{})
	if err != nil {
		t.Fatal(err)
	}
	host := svc.Host()
	var overlap atomic.Int32
	a := start(t, host, "a", &overlap)
	eventually(t, "a works", a.running.Load)
	b := start(t, host, "b", &overlap)
	time.Sleep(200 * time.Millisecond) // several of b's attempts
	if b.started.Load() != 0 {
		t.Fatal("b worked while a held the lease")
	}

	// a stops: it releases the lease and b takes over at its next attempt.
	a.stop(t)
	eventually(t, "b works after a stopped", b.running.Load)

	// b loses the store: it stops its work within the term, and a third
	// replica takes over once b's term has ended.
	b.leaser.down.Store(true)
	c := start(t, host, "c", &overlap)
	eventually(t, "b stops working when it cannot renew", func() bool { return !b.running.Load() })
	eventually(t, "c works after b's term", c.running.Load)
	if c.started.Load() != 1 {
		t.Fatalf("c started %d times", c.started.Load())
	}
}

// TestWorkThatReturnsRunsAgain: work that ends by itself is started again
// while the replica keeps the lease.
func TestWorkThatReturnsRunsAgain(t *testing.T) {
	svc, err := edgeplane.New(memstore.New(), edgeplane.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	runs := 0
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- elect.Run(ctx, elect.Config{Leaser: svc.Host().Leases(), Name: "work", Holder: "a", Term: time.Second, Renew: 20 * time.Millisecond},
			func(context.Context) {
				mu.Lock()
				runs++
				mu.Unlock()
			})
	}()
	eventually(t, "the work runs three times", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return runs >= 3
	})
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v", err)
	}
	// Run released the lease on its way out: another holder takes it now.
	if l, err := svc.Host().Leases().AcquireLease(context.Background(), "work", "b", time.Minute); err != nil || !l.Held {
		t.Fatalf("after Run returned, b's acquire = %+v, %v; want held", l, err)
	}
}
