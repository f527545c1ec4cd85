// Package livefeed wakes the live views of an account (the web
// console's overview) when the store's change feed reports a change of a
// kind they show, so that a view reads again only when there is
// something new to read, instead of polling.
//
// # Model
//
// A [Hub] keeps the open views as [Waiter]s, each of one account. While
// at least one waiter is open, one goroutine (a [follow.Follower]) reads
// the feed, without the changes' data, and, for each change of one of the
// hub's kinds, wakes the waiters of the change's account: a wake is a
// value in the waiter's channel, which holds one, so that a burst of
// changes is one wake. When the last waiter closes the follower stops;
// the next waiter starts it again. A follower that starts, or that finds
// the feed compacted past it, cannot know what changed meanwhile: it
// wakes every waiter once. A waiter says only that something may have
// changed: the view reads what it shows again, as its reader is allowed
// to see it, and the hub shows nothing of a change to anyone.
//
// # Bounds
//
// A hub holds at most [Options].MaxWaiters waiters, and at most
// [Options].MaxPerAccount of one account; [Hub.Wait] beyond either
// fails with [ErrBusy]. A hub without a feed (nil) wakes no one, but
// bounds its waiters all the same.
package livefeed

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"github.com/edgeplane/edgeplane/internal/revwait"
	"github.com/edgeplane/edgeplane/store"
	"github.com/edgeplane/edgeplane/store/follow"
)

// Defaults of [Options].
const (
	DefaultMaxWaiters    = 1000
	DefaultMaxPerAccount = 100
)

// ErrBusy is returned by [Hub.Wait] when the hub holds as many waiters
// as its bounds allow.
var ErrBusy = errors.New("livefeed: too many live views are open")

// Options configures a [Hub]. The zero value means the documented
// defaults.
type Options struct {
	// Kinds are the kinds of record whose changes wake the waiters of
	// their account.
	Kinds []store.Kind
	// MaxWaiters bounds the waiters of the hub. Zero means
	// [DefaultMaxWaiters].
	MaxWaiters int
	// MaxPerAccount bounds the waiters of one account. Zero means
	// [DefaultMaxPerAccount].
	MaxPerAccount int
	// Logger hears of the follower's failures. Nil discards them.
	Logger *slog.Logger
	// Follow configures the follower (its backoff; tests give a timer).
	Follow follow.Options
}

// Hub wakes the waiters of an account when the feed reports a change of
// one of its kinds in the account. Its methods are safe for concurrent
// use.
type Hub struct {
	feed  store.Feed
	opts  Options
	log   *slog.Logger
	kinds map[store.Kind]bool

	mu        sync.Mutex
	byAccount map[string]map[*Waiter]struct{}
	n         int
	f         *follow.Follower // running while n > 0

	applied revwait.Mark // the revision through which waiters were woken
}

// New returns a hub that follows feed; with a nil feed it wakes no one.
func New(feed store.Feed, opts Options) *Hub {
	if opts.MaxWaiters <= 0 {
		opts.MaxWaiters = DefaultMaxWaiters
	}
	if opts.MaxPerAccount <= 0 {
		opts.MaxPerAccount = DefaultMaxPerAccount
	}
	h := &Hub{feed: feed, opts: opts, log: opts.Logger, kinds: make(map[store.Kind]bool, len(opts.Kinds)), byAccount: make(map[string]map[*Waiter]struct{})}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	for _, k := range opts.Kinds {
		h.kinds[k] = true
	}
	return h
}

// Waiter is one live view of an account. Receive from C to wait for a
// change; Close it when the view ends.
type Waiter struct {
	// C receives a value when the account may have changed; it holds
	// one, so that the changes made since the last receive are one wake.
	C <-chan struct{}

	c       chan struct{}
	hub     *Hub
	account string
	once    sync.Once
}

// Wait returns a waiter of the account, or [ErrBusy] beyond the hub's
// bounds.
func (h *Hub) Wait(accountID string) (*Waiter, error) {
	c := make(chan struct{}, 1)
	w := &Waiter{C: c, c: c, hub: h, account: accountID}
	h.mu.Lock()
	defer h.mu.Unlock()
	set := h.byAccount[accountID]
	if h.n >= h.opts.MaxWaiters || len(set) >= h.opts.MaxPerAccount {
		return nil, ErrBusy
	}
	if set == nil {
		set = make(map[*Waiter]struct{})
		h.byAccount[accountID] = set
	}
	set[w] = struct{}{}
	h.n++
	if h.f == nil && h.feed != nil {
		// Start returns at once; the follower's calls take h.mu in its
		// own goroutine.
		h.f = follow.Start(h.feed, (*handler)(h), -1, h.opts.Follow)
	}
	return w, nil
}

// Close removes the waiter from its hub; the last one stops the
// follower, and waits for its goroutine. It may be called more than
// once.
func (w *Waiter) Close() {
	w.once.Do(func() {
		h := w.hub
		h.mu.Lock()
		set := h.byAccount[w.account]
		delete(set, w)
		if len(set) == 0 {
			delete(h.byAccount, w.account)
		}
		h.n--
		var f *follow.Follower
		if h.n == 0 {
			f, h.f = h.f, nil
		}
		h.mu.Unlock()
		if f != nil {
			f.Stop()
		}
	})
}

// Waiters returns how many waiters the hub holds.
func (h *Hub) Waiters() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n
}

// WaitApplied waits until the hub has woken the waiters of every change
// up to revision rev (nil), or ctx ends (its error). A hub wakes only
// while it has waiters.
func (h *Hub) WaitApplied(ctx context.Context, rev int64) error {
	return h.applied.Wait(ctx, rev, nil)
}

// wake wakes w, unless a wake is already waiting in its channel.
func wake(w *Waiter) {
	select {
	case w.c <- struct{}{}:
	default:
	}
}

// handler is the hub as the follower's [follow.Handler].
type handler Hub

// Resync implements [follow.Handler]: what changed before the revision
// it returns is unknown, so every waiter is woken.
func (h *handler) Resync(ctx context.Context) (int64, error) {
	rev, err := h.feed.Revision(ctx)
	if err != nil {
		return 0, err
	}
	h.mu.Lock()
	for _, set := range h.byAccount {
		for w := range set {
			wake(w)
		}
	}
	h.mu.Unlock()
	h.applied.Advance(rev)
	return rev, nil
}

// Apply implements [follow.Handler]: the waiters of each account with a
// change of one of the hub's kinds are woken.
func (h *handler) Apply(_ context.Context, b follow.Batch) error {
	h.mu.Lock()
	for _, c := range b.Changes {
		if !h.kinds[c.Kind] {
			continue
		}
		for w := range h.byAccount[c.AccountID] {
			wake(w)
		}
	}
	h.mu.Unlock()
	h.applied.Advance(b.Revision)
	return nil
}

// Failed implements [follow.Handler]: failures are logged; the views
// keep what they show until the follower reads again.
func (h *handler) Failed(f follow.Failure) {
	h.log.Warn("livefeed: reading the change feed failed", "step", f.Step.String(), "attempt", f.Attempt, "backoff", f.Backoff, "err", f.Err)
}
