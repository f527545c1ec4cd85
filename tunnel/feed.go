package tunnel

import (
	"context"
	"errors"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/ipaccess"
	"github.com/edgeplane/edgeplane/kinds"
	"github.com/edgeplane/edgeplane/store"
	"github.com/edgeplane/edgeplane/store/follow"
)

// feedHandler follows the change feed for the Server: changes made
// elsewhere to the sessions, tunnels and endpoints it holds. It implements
// [follow.Handler].
type feedHandler struct{ s *Server }

// Resync checks every held session with the Host: one that is gone is
// closed, one asked to stop is stopped.
func (h *feedHandler) Resync(ctx context.Context) (int64, error) {
	rev, err := h.s.opts.Feed.Revision(ctx)
	if err != nil {
		return 0, err
	}
	h.s.mu.Lock()
	held := make([]*session, 0, len(h.s.sessions))
	for _, sess := range h.s.sessions {
		held = append(held, sess)
	}
	h.s.mu.Unlock()
	for _, sess := range held {
		if err := h.check(ctx, sess); err != nil {
			return 0, err
		}
	}
	if err := h.checkAccess(ctx, nil); err != nil {
		return 0, err
	}
	return rev, nil
}

// Apply acts on the changes of held sessions, tunnels and endpoints.
func (h *feedHandler) Apply(ctx context.Context, b follow.Batch) error {
	// A session removed in this batch is closed, not told of each of its
	// tunnels: a command written to a session that is closing races with
	// its close inside muxado.
	removed := map[string]bool{}
	var access map[string]bool // accounts whose IP restrictions may decide otherwise now
	for _, c := range b.Changes {
		if c.Kind == kinds.TunnelSession && c.Op == store.OpDelete {
			removed[c.ID] = true
		}
		switch role, _ := kinds.DataPlaneRoleOf(c.Kind); role {
		case kinds.DataPlaneIPRestriction, kinds.DataPlaneIPPolicy, kinds.DataPlaneIPPolicyRule:
			if access == nil {
				access = map[string]bool{}
			}
			access[c.AccountID] = true
		}
	}
	if access != nil {
		if err := h.checkAccess(ctx, access); err != nil {
			return err
		}
	}
	for _, c := range b.Changes {
		switch c.Kind {
		case kinds.TunnelSession:
			h.s.mu.Lock()
			sess := h.s.sessions[c.ID]
			h.s.mu.Unlock()
			if sess == nil {
				continue
			}
			if c.Op == store.OpDelete {
				go sess.close("the session was removed")
				continue
			}
			if err := h.check(ctx, sess); err != nil {
				return err
			}
		case kinds.Tunnel:
			if c.Op != store.OpDelete {
				continue
			}
			h.s.mu.Lock()
			bd := h.s.tunnels[c.ID]
			h.s.mu.Unlock()
			if bd != nil && !removed[bd.sess.id] {
				go bd.sess.stopTunnel(c.ID, "the tunnel was removed: its credential's ACL no longer allows it, or it was deleted", apierr.NotFound)
			}
		case kinds.Endpoint:
			if c.Op != store.OpDelete {
				continue
			}
			h.s.mu.Lock()
			bd := h.s.tunnels[c.ID]
			h.s.mu.Unlock()
			if bd == nil || removed[bd.sess.id] {
				continue
			}
			// A rebind deletes the endpoint and creates it again under the
			// agent's new session: one that is still there, the holder's,
			// stays.
			ep, err := h.s.opts.Host.GetEndpoint(ctx, bd.sess.accountID, c.ID)
			switch {
			case err == nil && ep.TunnelSession != nil && ep.TunnelSession.ID == bd.sess.id:
			case err == nil, errors.Is(err, apierr.ErrNotFound):
				go bd.sess.stopTunnel(c.ID, "the endpoint was removed: its credential's ACL no longer allows it, or it was deleted", apierr.NotFound)
			default:
				return err
			}
		}
	}
	return nil
}

// check reads sess's record: gone, it closes the session; asked to stop,
// it stops it.
func (h *feedHandler) check(ctx context.Context, sess *session) error {
	ts, err := h.s.opts.Host.GetTunnelSession(ctx, sess.accountID, sess.id)
	switch {
	case errors.Is(err, apierr.ErrNotFound):
		go sess.close("the session was removed")
	case err != nil:
		return err
	case ts.StopRequested:
		go sess.stop()
	}
	return nil
}

// checkAccess closes the held sessions of accounts (every account when
// nil) whose agent's address an enforced IP restriction of type agent
// refuses now.
func (h *feedHandler) checkAccess(ctx context.Context, accounts map[string]bool) error {
	held := map[string][]*session{}
	h.s.mu.Lock()
	for _, sess := range h.s.sessions {
		if accounts == nil || accounts[sess.accountID] {
			held[sess.accountID] = append(held[sess.accountID], sess)
		}
	}
	h.s.mu.Unlock()
	for account, list := range held {
		e, err := h.s.opts.Host.IPRestrictions(ctx, account, ipaccess.TypeAgent)
		if err != nil {
			return err
		}
		for _, sess := range list {
			refusedBy, _ := e.Check(sess.remote.Addr())
			if refusedBy == "" {
				continue
			}
			h.s.m.refused(reasonIPRestricted)
			why := "IP restriction " + refusedBy + " of the account refuses the agent's address " + sess.remote.Addr().String()
			h.s.log.Info("closing an agent session: an IP restriction refuses its address", "session", sess.id, "account", account,
				"ip_restriction", refusedBy, "remote", sess.remote.String())
			go sess.close(why)
		}
	}
	return nil
}

// Failed logs a failed read of the feed; the follower retries.
func (h *feedHandler) Failed(f follow.Failure) {
	h.s.log.Warn("following the change feed failed; retrying", "step", f.Step.String(), "attempt", f.Attempt, "backoff", f.Backoff, "err", f.Err)
}
