package store_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/edgeplane/edgeplane/store"
)

func TestGroupCommit(t *testing.T) {
	const writers, limit = 200, 16
	var (
		running  atomic.Int32
		mu       sync.Mutex
		batches  []int
		gate     = make(chan struct{})
		firstRan = make(chan struct{})
		once     sync.Once
	)
	g := store.NewGroupCommit(limit, func(batch []*store.Pending[int]) {
		if running.Add(1) != 1 {
			t.Error("two batches committed at once")
		}
		defer running.Add(-1)
		once.Do(func() { close(firstRan); <-gate }) // hold the first batch so that the others queue up
		mu.Lock()
		batches = append(batches, len(batch))
		mu.Unlock()
		for _, p := range batch {
			if p.Work%7 == 0 {
				p.Err = fmt.Errorf("write %d refused", p.Work)
			}
		}
	})
	errs := make([]error, writers)
	var wg sync.WaitGroup
	wg.Go(func() { errs[0] = g.Do(context.Background(), 0) })
	<-firstRan
	for i := 1; i < writers; i++ {
		wg.Go(func() { errs[i] = g.Do(context.Background(), i) })
	}
	for g.Waiting() < writers-1 {
		runtime.Gosched() // until every other writer waits behind the first batch
	}
	close(gate)
	wg.Wait()
	total := 0
	for _, n := range batches {
		if n > limit {
			t.Errorf("a batch of %d writes, limit %d", n, limit)
		}
		total += n
	}
	if total != writers {
		t.Fatalf("batches committed %d writes, want %d", total, writers)
	}
	if want := 1 + (writers-1+limit-1)/limit; len(batches) != want {
		t.Errorf("%d batches for %d writers, want %d: writes were not grouped", len(batches), writers, want)
	}
	for i, err := range errs {
		if want := i%7 == 0; (err != nil) != want || (want && err.Error() != fmt.Sprintf("write %d refused", i)) {
			t.Errorf("write %d: %v", i, err)
		}
	}
}

func TestGroupCommitEndedContext(t *testing.T) {
	g := store.NewGroupCommit(4, func(batch []*store.Pending[string]) {
		t.Error("a write whose context had ended reached the commit")
	})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := g.Do(ctx, "x"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Do = %v, want context.Canceled", err)
	}
}

// TestGroupRead: up to lanes batches run at once, every read is
// answered once with its own result, and a reader whose context ends
// while its batch waits stops waiting.
func TestGroupRead(t *testing.T) {
	const lanes, limit, readers = 3, 8, 100
	var (
		running, most atomic.Int32
		served        sync.Map // work -> times
		gate          = make(chan struct{})
	)
	g := store.NewGroupRead(limit, lanes, func(batch []*store.Pending[int]) {
		n := running.Add(1)
		defer running.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		<-gate
		if len(batch) > limit {
			t.Errorf("a batch of %d reads, limit %d", len(batch), limit)
		}
		for _, p := range batch {
			v, _ := served.LoadOrStore(p.Work, new(atomic.Int32))
			v.(*atomic.Int32).Add(1)
			if p.Work%5 == 0 {
				p.Err = fmt.Errorf("read %d failed", p.Work)
			}
		}
	})
	errs := make([]error, readers)
	var wg sync.WaitGroup
	for i := range lanes { // one read per lane, each held
		wg.Go(func() { errs[i] = g.Do(context.Background(), i) })
		for running.Load() != int32(i+1) {
			runtime.Gosched()
		}
	}
	for i := lanes; i < readers; i++ {
		wg.Go(func() { errs[i] = g.Do(context.Background(), i) })
	}
	ctx, cancel := context.WithCancel(context.Background())
	gone := make(chan error)
	go func() { gone <- g.Do(ctx, -1) }()
	for g.Waiting() < readers-lanes+1 {
		runtime.Gosched() // until every other read waits behind the busy lanes
	}
	cancel()
	if err := <-gone; !errors.Is(err, context.Canceled) {
		t.Fatalf("a read whose context ended: %v, want context.Canceled", err)
	}
	close(gate)
	wg.Wait()
	if m := most.Load(); m != lanes {
		t.Errorf("%d batches ran at once, want %d", m, lanes)
	}
	for i, err := range errs {
		if want := i%5 == 0; (err != nil) != want || (want && err.Error() != fmt.Sprintf("read %d failed", i)) {
			t.Errorf("read %d: %v", i, err)
		}
		if v, ok := served.Load(i); !ok || v.(*atomic.Int32).Load() != 1 {
			t.Errorf("read %d was not run exactly once", i)
		}
	}
}
