package proxy

import (
	"context"
	"errors"

	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/edgeconfig"
	"github.com/edgeplane/edgeplane/kinds"
	"github.com/edgeplane/edgeplane/resource"
	"github.com/edgeplane/edgeplane/store"
	"github.com/edgeplane/edgeplane/store/follow"
)

// Backoff bounds of the retries after a failed read of the store: the
// first retry waits MinBackoff, each next one twice as long, up to
// MaxBackoff (the policy of every follower of the feed,
// [follow.Backoff]).
const (
	MinBackoff = follow.MinBackoff
	MaxBackoff = follow.MaxBackoff
)

// followPage is how many changes the follower reads at a time; the
// changes of one page are applied together, so that a burst of writes
// (tunnel renewals) costs one rebuild per edge, not one per write.
const followPage = follow.DefaultPage

// backendKey names a backend of an account.
type backendKey struct{ account, id string }

// pending is the work the changes read so far ask for.
type pending struct {
	compile map[string]string   // edge ID -> account: read and compile again
	remove  map[string]string   // edge ID -> account: deleted
	tunnels map[backendKey]bool // backends whose tunnel lists to read again
	acctTun map[string]bool     // accounts with tunnel changes: all their used backends
	acctDom map[string]bool     // accounts with reserved domain changes: their edges' certificates
	acctIPX map[string]bool     // accounts whose endpoint restrictions changed: their edges' Restrictions
	// listed are endpoints of compile as a full listing read them, so
	// that loading them reads them no more; a change to one drops it
	// from here (it is read again).
	listed map[string]*agents.Endpoint
}

func newPending() *pending {
	return &pending{compile: map[string]string{}, remove: map[string]string{}, tunnels: map[backendKey]bool{},
		acctTun: map[string]bool{}, acctDom: map[string]bool{}, acctIPX: map[string]bool{}, listed: map[string]*agents.Endpoint{}}
}

func (p *pending) empty() bool {
	return len(p.compile) == 0 && len(p.remove) == 0 && len(p.tunnels) == 0 && len(p.acctTun) == 0 && len(p.acctDom) == 0 && len(p.acctIPX) == 0
}

// configFeed is the follower's handler: it applies the feed's changes,
// and the work p holds, while readers keep the snapshots published so
// far. A failed read of the store is retried after a backoff, and a
// compacted feed makes a full reload, neither of them touching what is
// published until it has something newer. It is owned by the follower's
// goroutine.
type configFeed struct {
	c *Configs
	p *pending
}

// Resync implements [follow.Handler]: it lists every edge again, in the
// background, and leaves the work of loading them in p for Apply.
func (h *configFeed) Resync(ctx context.Context) (int64, error) {
	rev, err := h.c.reload(ctx, h.p)
	if err != nil {
		return 0, err
	}
	h.c.reloads.Add(1)
	return rev, nil
}

// Apply implements [follow.Handler]: it notes the work the changes ask
// for and does all the work p holds; work that failed stays in p for the
// next Apply.
func (h *configFeed) Apply(ctx context.Context, b follow.Batch) error {
	for _, ch := range b.Changes {
		h.c.note(h.p, ch)
	}
	if !h.p.empty() {
		if err := h.c.apply(ctx, h.p, b.Revision); err != nil {
			return err
		}
	}
	h.c.advance(b.Revision)
	return nil
}

// Failed implements [follow.Handler]: it counts and logs every failure
// but a compacted feed (what changed between the applied revision and the
// oldest change kept is unknown: Resync reads everything again).
func (h *configFeed) Failed(f follow.Failure) {
	var compacted *store.CompactedError
	if errors.As(f.Err, &compacted) {
		return
	}
	what := "cannot read the change feed"
	switch f.Step {
	case follow.StepResync:
		what = "cannot list the edges and endpoints"
	case follow.StepApply:
		what = "cannot rebuild edge configs"
	}
	h.c.failures.Add(1)
	h.c.log.Warn("edge configs: "+what+"; serving the last configs read, retrying", "err", f.Err, "attempt", f.Attempt)
}

// note records in p the work a change asks for, by the part its kind's
// kind plays in them ([kinds.DataPlaneRoleOf]). A change of
// a kind the Service does not declare is logged and ignored.
func (c *Configs) note(p *pending, ch store.Change) {
	a := ch.AccountID
	role, known := kinds.DataPlaneRoleOf(ch.Kind)
	if !known {
		c.log.Error("proxy: a change of an unknown kind in the feed; it is ignored", "kind", string(ch.Kind), "id", ch.ID, "revision", ch.Revision)
		return
	}
	switch role {
	case kinds.DataPlaneEndpoint:
		// Read again from the source (or dropped).
		if c.endpoints == nil {
			return
		}
		delete(p.listed, ch.ID)
		if ch.Op == store.OpDelete {
			delete(p.compile, ch.ID)
			p.remove[ch.ID] = a
			return
		}
		p.compile[ch.ID] = a
	case kinds.DataPlaneEdge:
		if ch.Op == store.OpDelete {
			delete(p.compile, ch.ID)
			p.remove[ch.ID] = a
			return
		}
		p.compile[ch.ID] = a
	case kinds.DataPlaneRoute:
		if _, gone := p.remove[ch.ParentID]; !gone {
			p.compile[ch.ParentID] = a
		}
	case kinds.DataPlaneIPPolicy:
		c.compileUsers(p, c.byIPPolicy[a][ch.ID], a)
		if c.restrictBy[a][ch.ID] {
			p.acctIPX[a] = true
		}
	case kinds.DataPlaneIPPolicyRule:
		c.compileUsers(p, c.byIPPolicy[a][ch.ParentID], a)
		if c.restrictBy[a][ch.ParentID] {
			p.acctIPX[a] = true
		}
	case kinds.DataPlaneIPRestriction:
		// Any restriction of the account: its type says whether it is an
		// endpoints one, and reading them is one listing per page of
		// changes.
		if c.byAccount[a] != nil {
			p.acctIPX[a] = true
		}
	case kinds.DataPlaneBackend:
		if c.byBackend[a][ch.ID] != nil {
			p.tunnels[backendKey{a, ch.ID}] = true
		}
	case kinds.DataPlaneDomain:
		// A domain's certificate changed (attached, detached, issued), or
		// a domain appeared that serves a host more closely than a
		// wildcard: the certificates of the account's edges are read
		// again, once per page of changes.
		if c.byAccount[a] != nil {
			p.acctDom[a] = true
		}
	case kinds.DataPlaneTunnel:
		// A tunnel's labels say which backends select it, but the
		// backends' labels are not kept here: every backend of the
		// account that an edge uses reads its tunnels again, once per
		// page of changes however many tunnels changed.
		if c.byBackend[a] != nil {
			p.acctTun[a] = true
		}
	}
}

func (c *Configs) compileUsers(p *pending, users map[string]bool, account string) {
	for id := range users {
		if _, gone := p.remove[id]; !gone {
			p.compile[id] = account
		}
	}
}

// reload lists every edge of every kind, and every endpoint, and puts in
// p the work of loading them all again: each listed edge is compiled
// (each endpoint built from its listing), each known one not listed is
// removed. It returns the revision read before the listing: the listing,
// and every read after it, reflects at least that revision.
func (c *Configs) reload(ctx context.Context, p *pending) (int64, error) {
	rev, err := c.feed.Revision(ctx)
	if err != nil {
		return 0, err
	}
	listed := map[string]string{}
	for _, list := range []func(context.Context, resource.ListOptions) ([]edgeconfig.EdgeRef, string, error){
		c.host.ListHTTPSEdges, c.host.ListTLSEdges, c.host.ListTCPEdges,
	} {
		opts := resource.ListOptions{}
		for {
			refs, next, err := list(ctx, opts)
			if err != nil {
				return 0, err
			}
			for _, r := range refs {
				listed[r.ID] = r.AccountID
			}
			if next == "" {
				break
			}
			opts.BeforeID = next
		}
	}
	clear(p.listed)
	if c.endpoints != nil {
		if err := c.listEndpoints(ctx, listed, p.listed); err != nil {
			clear(p.listed)
			return 0, err
		}
	}
	for id, t := range c.known {
		if _, ok := listed[id]; !ok {
			p.remove[id] = t.account
		}
	}
	for id, a := range listed {
		delete(p.remove, id)
		p.compile[id] = a
	}
	// Every edge compiled reads its backends' tunnels and its
	// certificates again.
	clear(p.tunnels)
	clear(p.acctTun)
	clear(p.acctDom)
	clear(p.acctIPX)
	return rev, nil
}
