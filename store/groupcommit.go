package store

import (
	"context"
	"sync"
)

// Pending is one write waiting in a [GroupCommit]: the caller's context
// and work, and the result the batch's commit gives it.
type Pending[W any] struct {
	// Ctx is the writer's context. A write whose context ended before its
	// batch began should be skipped with Ctx.Err().
	Ctx context.Context
	// Work is the backend's description of the write.
	Work W
	// Err is the write's result, set by the commit: nil only once the
	// write is durable.
	Err  error
	done chan struct{}
}

// GroupCommit lets a backend commit concurrent writes together (one
// transaction and one sync for many writes): each writer hands its write
// to [GroupCommit.Do] and waits; the first writer that finds no batch
// being committed commits the writes that wait, up to a bound, and the
// writes that arrive meanwhile wait for the next batch, which is
// committed on a new goroutine as soon as the current one is done. The
// backend's commit function does the rest: one transaction, a savepoint
// per write so that one write's failure undoes it alone, and each
// [Pending]'s Err set. The zero value is not usable: use
// [NewGroupCommit].
type GroupCommit[W any] struct {
	max     int
	lanes   int  // batches run at once
	abandon bool // a caller whose context ends stops waiting
	commit  func(batch []*Pending[W])

	mu      sync.Mutex
	queue   []*Pending[W]
	leading int // batches running
}

// NewGroupCommit returns a GroupCommit whose batches hold at most limit
// writes (at least 1) and are committed by commit, which must set the
// Err of every write of the batch it is given before it returns. Batches
// are committed one at a time.
func NewGroupCommit[W any](limit int, commit func(batch []*Pending[W])) *GroupCommit[W] {
	return &GroupCommit[W]{max: max(limit, 1), lanes: 1, commit: commit}
}

// NewGroupRead returns a GroupCommit for reads, whose batches hold at
// most limit reads and are run by run, which must set the Err of every
// read of the batch it is given before it returns: one round trip for
// many reads. Reads keep no order among themselves, so up to lanes
// batches run at once (a read that finds a lane free runs at once, and
// reads wait only while every lane is busy); and a read has nothing to
// undo, so a reader whose context ends stops waiting with its context's
// error (run may still be writing to what the read's work points to:
// the reader must not look at it then). A read must be sent after it
// was queued: a batch begun before a read arrived never serves it, so
// the read sees every write acknowledged before it began.
func NewGroupRead[W any](limit, lanes int, run func(batch []*Pending[W])) *GroupCommit[W] {
	return &GroupCommit[W]{max: max(limit, 1), lanes: max(lanes, 1), abandon: true, commit: run}
}

// Do queues work and returns its result once its batch was committed
// (nil) or failed. It is not abandoned when ctx ends, since the batch may
// already be committing it and the answer must say whether it was
// written; a write whose ctx ended before its batch began gets ctx's
// error, unwritten, if the commit function honours Ctx.
func (g *GroupCommit[W]) Do(ctx context.Context, work W) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p := &Pending[W]{Ctx: ctx, Work: work, done: make(chan struct{})}
	g.mu.Lock()
	g.queue = append(g.queue, p)
	lead := g.leading < g.lanes
	if lead {
		g.leading++
	}
	g.mu.Unlock()
	if lead {
		g.lead()
	}
	if g.abandon {
		select {
		case <-p.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	} else {
		<-p.done
	}
	return p.Err
}

// Waiting returns the number of writes queued for a batch that has not
// begun (a gauge of the write backlog).
func (g *GroupCommit[W]) Waiting() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.queue)
}

// lead commits the waiting writes, a batch at a time: the caller's own
// batch, then, while writes wait, it hands the next batch to a new
// goroutine and returns (its caller's write is done). With several
// lanes, another lane may have taken the caller's write already: a lead
// that finds no write waiting ends its lane.
func (g *GroupCommit[W]) lead() {
	g.mu.Lock()
	n := min(len(g.queue), g.max)
	if n == 0 {
		g.queue = nil
		g.leading--
		g.mu.Unlock()
		return
	}
	batch := g.queue[:n:n]
	g.queue = g.queue[n:]
	g.mu.Unlock()
	g.commit(batch)
	for _, p := range batch {
		close(p.done)
	}
	g.mu.Lock()
	if len(g.queue) == 0 {
		g.queue = nil
		g.leading--
		g.mu.Unlock()
		return
	}
	g.mu.Unlock()
	go g.lead()
}
