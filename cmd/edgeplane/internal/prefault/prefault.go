package prefault

import (
	"context"
	"time"
)

// MaxStep is the most a step populates: a mapping the runtime makes for
// one huge allocation is populated over several steps, so that one step
// never holds its goroutine long, nor makes resident much that the
// program may never write.
const MaxStep = 64 << 20

// Run calls h.Step every interval until ctx ends (it then returns nil) or
// a step fails (it returns that step's error).
func (h *Heap) Run(ctx context.Context, interval time.Duration) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if _, err := h.Step(); err != nil {
				return err
			}
		}
	}
}
