package revwait_test

import (
	"context"
	"errors"
	"testing"

	"github.com/edgeplane/edgeplane/internal/revwait"
)

// TestMark: Wait returns once Advance reaches the revision, at once when
// it already has, with ErrStopped when stop closes first, and with ctx's
// error when ctx ends; a lower Advance does not move the mark back.
func TestMark(t *testing.T) {
	ctx := context.Background()
	var m revwait.Mark
	if err := m.Wait(ctx, 0, nil); err != nil {
		t.Fatalf("revision 0 on a zero mark: %v", err)
	}
	done := make(chan error)
	go func() { done <- m.Wait(ctx, 5, nil) }()
	m.Advance(3)
	m.Advance(5)
	if err := <-done; err != nil {
		t.Fatalf("wait for 5 after Advance(5): %v", err)
	}
	m.Advance(2)
	if got := m.Load(); got != 5 {
		t.Errorf("Load after a lower Advance = %d, want 5", got)
	}
	stop := make(chan struct{})
	go func() { done <- m.Wait(ctx, 9, stop) }()
	close(stop)
	if err := <-done; !errors.Is(err, revwait.ErrStopped) {
		t.Errorf("stopped short of the revision: %v, want ErrStopped", err)
	}
	if err := m.Wait(ctx, 5, stop); err != nil {
		t.Errorf("a reached revision after stop: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := m.Wait(cctx, 9, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}
