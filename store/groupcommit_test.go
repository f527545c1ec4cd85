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
