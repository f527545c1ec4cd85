// Package elect runs work on one replica of a store at a time: each
// replica calls [Run] with the same lease name; the one that holds the
// lease (hosting.LeaseHost.AcquireLease) runs the work, renewing the lease
// every Renew, and the others ask again every Renew. The holder's work is
// cancelled as soon as it learns it lost the lease, and at the latest one
// term after the start of its last successful renewal (so that it stops
// before another replica can take the lease, clocks agreeing), and Run
// releases the lease when its context ends, so that another replica takes
// over at once.
package elect

import (
	"context"
	"log/slog"
	"time"

	"github.com/edgeplane/edgeplane/hosting"
)

// Leaser is what Run needs of the Service: *hosting.LeaseHost.
type Leaser interface {
	AcquireLease(ctx context.Context, name, holder string, term time.Duration) (*hosting.Lease, error)
	ReleaseLease(ctx context.Context, name, holder string) error
}

// Config configures [Run].
type Config struct {
	// Leaser takes and renews the lease.
	Leaser Leaser
	// Name is the lease's name; Holder this replica's (unique among the
	// replicas: a node ID, a host name and process ID).
	Name, Holder string
	// Term is the lease's term (default 30s); Renew how often the holder
	// renews and the others ask (default Term/3, at most Term/2).
	Term, Renew time.Duration
	// Log receives failures to reach the store; nil logs nothing.
	Log *slog.Logger
	// OnChange, when set, is told when this replica starts (true) and
	// stops (false) holding the lease: for a gauge.
	OnChange func(held bool)
}

func (c *Config) defaults() {
	if c.Term <= 0 {
		c.Term = 30 * time.Second
	}
	if c.Renew <= 0 {
		c.Renew = c.Term / 3
	}
	c.Renew = min(c.Renew, c.Term/2)
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	if c.OnChange == nil {
		c.OnChange = func(bool) {}
	}
}

// Run runs work while this replica holds the lease, as often as it gains
// it, until ctx ends; then it cancels work, waits for it to return,
// releases the lease and returns ctx's error. work must return soon after
// its context ends.
func Run(ctx context.Context, c Config, work func(ctx context.Context)) error {
	c.defaults()
	var (
		stop  context.CancelFunc // cancels the running work; nil when none
		done  chan struct{}      // closed when the running work returned
		until time.Time          // the end of the term we are sure of (monotonic)
	)
	halt := func() {
		if stop == nil {
			return
		}
		stop()
		<-done
		stop, done = nil, nil
		c.OnChange(false)
	}
	defer func() {
		halt()
		// Release whether or not we hold it (a release by another than the
		// holder does nothing): another replica takes over at once.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := c.Leaser.ReleaseLease(rctx, c.Name, c.Holder); err != nil {
			c.Log.Warn("cannot release the lease", "lease", c.Name, "err", err)
		}
	}()
	for {
		if stop != nil && !time.Now().Before(until) {
			c.Log.Warn("lease term over without a renewal: stopping", "lease", c.Name)
			halt()
		}
		asked := time.Now()
		actx, cancel := context.WithTimeout(ctx, c.Renew)
		l, err := c.Leaser.AcquireLease(actx, c.Name, c.Holder, c.Term)
		cancel()
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil:
			c.Log.Warn("cannot renew or take the lease", "lease", c.Name, "err", err)
		case !l.Held:
			halt()
		default:
			until = asked.Add(c.Term)
			if stop == nil {
				var wctx context.Context
				wctx, stop = context.WithCancel(ctx)
				done = make(chan struct{})
				c.OnChange(true)
				go func() {
					defer close(done)
					work(wctx)
				}()
			}
		}
		wait := c.Renew
		if stop != nil {
			wait = min(wait, time.Until(until))
		}
		timer := time.NewTimer(max(wait, 0))
		select {
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-timer.C:
		case <-done:
			// The work returned by itself: keep the lease and run the
			// work again after the next renewal.
			timer.Stop()
			halt()
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(c.Renew):
			}
		}
	}
}
