// Package revwait is a revision mark that readers can wait on: a follower
// of a store's change feed advances it as it applies changes, and a reader
// that needs a write to be applied waits until the mark reaches the
// write's revision. The zero Mark is at revision 0 and ready to use.
package revwait

import (
	"context"
	"errors"
	"sync"
)

// ErrStopped is returned by [Mark.Wait] when the stop channel closed
// before the mark reached the revision.
var ErrStopped = errors.New("revwait: stopped before the revision was reached")

// Mark is the revision up to which a follower has applied the feed. It is
// safe for concurrent use.
type Mark struct {
	mu    sync.Mutex
	rev   int64
	moved chan struct{} // closed when rev moves; nil until someone waits
}

// Advance moves the mark to rev; a lower rev is ignored.
func (m *Mark) Advance(rev int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if rev <= m.rev {
		return
	}
	m.rev = rev
	if m.moved != nil {
		close(m.moved)
		m.moved = nil
	}
}

// Load returns the mark.
func (m *Mark) Load() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.rev
}

// Wait waits until the mark is at least rev (nil), ctx ends (its error)
// or stop is closed first ([ErrStopped]). A nil stop never closes.
func (m *Mark) Wait(ctx context.Context, rev int64, stop <-chan struct{}) error {
	for {
		m.mu.Lock()
		if m.rev >= rev {
			m.mu.Unlock()
			return nil
		}
		if m.moved == nil {
			m.moved = make(chan struct{})
		}
		moved := m.moved
		m.mu.Unlock()
		select {
		case <-moved:
		case <-stop:
			if m.Load() >= rev {
				return nil
			}
			return ErrStopped
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
