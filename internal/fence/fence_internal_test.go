package fence

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/store"
)

// gatedRevisions is a store whose Revision calls are counted and each
// waits for a release.
type gatedRevisions struct {
	store.Store
	calls   atomic.Int64
	entered chan struct{}
	release chan struct{}
}

func (g *gatedRevisions) Revision(ctx context.Context) (int64, error) {
	n := g.calls.Add(1)
	g.entered <- struct{}{}
	<-g.release
	return n, nil
}

// TestRevisionBatcher: readers that arrive while a revision read is in
// flight share the next one (one store call for all), which is sent
// after they arrived: none of them gets the read that began before it.
func TestRevisionBatcher(t *testing.T) {
	g := &gatedRevisions{Store: memstore.New(), entered: make(chan struct{}, 1), release: make(chan struct{})}
	b := &batcher{store: g}
	ctx := context.Background()
	first := make(chan int64, 1)
	go func() { rev, _ := b.revision(ctx); first <- rev }()
	<-g.entered // the first read is in flight
	const n = 50
	revs := make([]int64, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { revs[i], _ = b.revision(ctx) })
	}
	// Every reader joins the pending batch while the first read is in
	// flight.
	for {
		b.mu.Lock()
		joined := b.next != nil && b.next.readers == n
		b.mu.Unlock()
		if joined {
			break
		}
		runtime.Gosched()
	}
	g.release <- struct{}{} // the first read ends; the batch is sent
	<-g.entered
	g.release <- struct{}{}
	wg.Wait()
	if got := <-first; got != 1 {
		t.Errorf("the first reader got revision %d; want 1", got)
	}
	for i, rev := range revs {
		if rev != 2 {
			t.Fatalf("reader %d got revision %d; want 2, the read sent after it arrived", i, rev)
		}
	}
	if c := g.calls.Load(); c != 2 {
		t.Errorf("%d store reads for %d readers; want 2", c, n+1)
	}
}
