package fence_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/edgeplane/edgeplane/internal/fence"
	"github.com/edgeplane/edgeplane/internal/revwait"
	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/store"
)

// revisions is a store at a fixed revision whose Revision calls are
// counted, and fail with err when it is set.
type revisions struct {
	store.Store
	rev   int64
	err   error
	calls atomic.Int64
}

func (r *revisions) Revision(context.Context) (int64, error) {
	r.calls.Add(1)
	return r.rev, r.err
}

// TestNilFence: the fence of a store that needs none passes at once and
// leaves contexts as they are.
func TestNilFence(t *testing.T) {
	var f *fence.Fence
	ctx := context.Background()
	if err := f.Wait(ctx); err != nil {
		t.Errorf("Wait = %v; want nil", err)
	}
	if got := f.Context(ctx); got != ctx {
		t.Error("Context changed the context")
	}
}

// TestWait: a fence passes once the follower has applied the store's
// revision, and when the follower has stopped (the caches are bypassed).
func TestWait(t *testing.T) {
	ctx := context.Background()
	st := &revisions{Store: memstore.New(), rev: 7}
	var mark revwait.Mark
	mark.Advance(7)
	if err := fence.New(st, &mark, nil).Wait(ctx); err != nil {
		t.Errorf("Wait with the revision applied = %v; want nil", err)
	}

	var behind revwait.Mark
	stopped := make(chan struct{})
	close(stopped)
	if err := fence.New(st, &behind, stopped).Wait(ctx); err != nil {
		t.Errorf("Wait behind a stopped follower = %v; want nil", err)
	}

	var lagging revwait.Mark
	f := fence.New(st, &lagging, nil)
	done := make(chan error, 1)
	go func() { done <- f.Wait(ctx) }()
	lagging.Advance(7)
	if err := <-done; err != nil {
		t.Errorf("Wait until the follower applies the revision = %v; want nil", err)
	}
}

// TestContext: the reads under a context of Context need no fence of
// their own: they read no revision, and pass or fail as its fence did.
func TestContext(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		err  error // of the store's Revision
		pass bool
	}{
		{"passed", nil, true},
		{"failed", errors.New("the store is down"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &revisions{Store: memstore.New(), rev: 3, err: tc.err}
			var mark revwait.Mark
			mark.Advance(3)
			f := fence.New(st, &mark, nil)
			fenced := f.Context(ctx)
			if f.Context(fenced) != fenced {
				t.Error("Context of a fenced context fenced again")
			}
			for range 3 {
				if err := f.Wait(fenced); (err == nil) != tc.pass {
					t.Errorf("Wait under the fenced context = %v; want passed %v", err, tc.pass)
				}
			}
			if n := st.calls.Load(); n != 1 {
				t.Errorf("%d revision reads; want 1, the context's fence", n)
			}
		})
	}
}
