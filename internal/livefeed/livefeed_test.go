package livefeed_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/internal/livefeed"
	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/store"
)

// bound is how long a test waits for the hub before it fails: a bound on
// a hung test, never a wait for time to pass.
const bound = 10 * time.Second

const (
	shown store.Kind = "shown" // a kind the hub's views show
	other store.Kind = "other" // one they do not
)

var n int

// write creates a record of kind in account and returns the store's
// revision after it.
func write(t *testing.T, st *memstore.Store, kind store.Kind, account string) int64 {
	t.Helper()
	n++
	ctx := context.Background()
	if err := st.Create(ctx, store.Record{Kind: kind, AccountID: account, ID: fmt.Sprintf("r_%d", n), Data: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	rev, err := st.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return rev
}

// applied waits until the hub has woken the waiters of every change up
// to rev.
func applied(t *testing.T, h *livefeed.Hub, rev int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	if err := h.WaitApplied(ctx, rev); err != nil {
		t.Fatalf("the hub did not apply revision %d: %v", rev, err)
	}
}

// woken reports whether w has a wake waiting, and takes it.
func woken(w *livefeed.Waiter) bool {
	select {
	case <-w.C:
		return true
	default:
		return false
	}
}

// TestWake: a change of a shown kind wakes the waiters of its account
// and no one else's; a change of another kind wakes no one; a burst is
// one wake; a waiter closed is woken no more.
func TestWake(t *testing.T) {
	st := memstore.New()
	h := livefeed.New(st, livefeed.Options{Kinds: []store.Kind{shown}})
	rev := write(t, st, other, "a") // so that the follower's start is at a revision above 0
	wa, err := h.Wait("a")
	if err != nil {
		t.Fatal(err)
	}
	defer wa.Close()
	wa2, err := h.Wait("a")
	if err != nil {
		t.Fatal(err)
	}
	wb, err := h.Wait("b")
	if err != nil {
		t.Fatal(err)
	}
	defer wb.Close()
	// The follower's start wakes everyone once: it cannot know what
	// changed before it.
	applied(t, h, rev)
	woken(wa)
	woken(wa2)
	woken(wb)

	write(t, st, shown, "b")
	applied(t, h, write(t, st, other, "a"))
	if woken(wa) || woken(wa2) {
		t.Error("b's change, or a change of a kind not shown, woke a's waiter")
	}
	if !woken(wb) {
		t.Error("b's change did not wake b's waiter")
	}

	write(t, st, shown, "a")
	write(t, st, shown, "a")
	applied(t, h, write(t, st, shown, "a"))
	if !woken(wa) || !woken(wa2) {
		t.Error("a's changes did not wake both of a's waiters")
	}
	if woken(wa) || woken(wb) {
		t.Error("a burst of a's changes is more than one wake, or woke b")
	}

	wa2.Close()
	wa2.Close() // twice is no error
	applied(t, h, write(t, st, shown, "a"))
	if woken(wa2) {
		t.Error("a closed waiter was woken")
	}
	if !woken(wa) {
		t.Error("a's open waiter was not woken")
	}
	if got := h.Waiters(); got != 2 {
		t.Errorf("%d waiters, want 2", got)
	}
}

// TestRestart: when the last waiter closes the follower stops; the next
// waiter starts it again, and it wakes the waiter on each change.
func TestRestart(t *testing.T) {
	st := memstore.New()
	h := livefeed.New(st, livefeed.Options{Kinds: []store.Kind{shown}})
	for i := range 3 {
		w, err := h.Wait("a")
		if err != nil {
			t.Fatal(err)
		}
		applied(t, h, write(t, st, other, "a"))
		woken(w) // the start's wake
		applied(t, h, write(t, st, shown, "a"))
		if !woken(w) {
			t.Errorf("round %d: the change did not wake the waiter", i)
		}
		w.Close()
		if got := h.Waiters(); got != 0 {
			t.Fatalf("%d waiters after the last closed", got)
		}
		write(t, st, shown, "a") // while no one waits
	}
}

// TestBounds: beyond MaxWaiters, or MaxPerAccount of one account, Wait
// fails with ErrBusy; a closed waiter makes room.
func TestBounds(t *testing.T) {
	for _, feed := range []struct {
		name string
		feed store.Feed
	}{{"feed", memstore.New()}, {"no feed", nil}} {
		t.Run(feed.name, func(t *testing.T) {
			h := livefeed.New(feed.feed, livefeed.Options{Kinds: []store.Kind{shown}, MaxWaiters: 3, MaxPerAccount: 2})
			a1, err1 := h.Wait("a")
			a2, err2 := h.Wait("a")
			if err := errors.Join(err1, err2); err != nil {
				t.Fatal(err)
			}
			if _, err := h.Wait("a"); !errors.Is(err, livefeed.ErrBusy) {
				t.Errorf("a third waiter of a: %v, want ErrBusy", err)
			}
			b1, err := h.Wait("b")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := h.Wait("c"); !errors.Is(err, livefeed.ErrBusy) {
				t.Errorf("a fourth waiter: %v, want ErrBusy", err)
			}
			a1.Close()
			c1, err := h.Wait("c")
			if err != nil {
				t.Errorf("after a close: %v", err)
			}
			for _, w := range []*livefeed.Waiter{a2, b1, c1} {
				if w != nil {
					w.Close()
				}
			}
			if got := h.Waiters(); got != 0 {
				t.Errorf("%d waiters after all closed", got)
			}
		})
	}
}

// TestNoFeed: a hub without a feed wakes no one.
func TestNoFeed(t *testing.T) {
	h := livefeed.New(nil, livefeed.Options{Kinds: []store.Kind{shown}})
	w, err := h.Wait("a")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if woken(w) {
		t.Error("a hub without a feed woke a waiter")
	}
}
