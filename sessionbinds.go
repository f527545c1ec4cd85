package edgeplane

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strconv"

	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/credentials"
	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/store"
)

// An ACL that narrows applies to what agents hold already, not only to
// their next binds: when a credential's ACL changes, every tunnel that
// an agent session of the credential holds and that the new ACL does
// not allow is removed (reported as deleted), and the tunnel server that
// holds the session, following the change feed, stops it at the agent
// (the protocol's StopTunnel). A tunnel an agent starts in the instant
// between the ACL's update and this check may stay until the agent
// binds again; the next update of the ACL removes it. Endpoints are
// held to the ACL the same way: a domain or an address it no longer
// allows is unbound.
//
// A deactivated bot's credentials are refused from its deactivation on,
// and their agents' sessions are closed (closeSessionsOfOwner): each
// session's record is removed, and the tunnel server that holds it,
// following the feed, closes its connection.

// unbindDisallowed removes the tunnels and endpoints of the credential's
// agent sessions that acl does not allow, and returns how many it
// removed. Failures are logged: the ACL update they follow has
// committed.
func (s *Service) unbindDisallowed(ctx context.Context, accountID, credentialID string, acl *credentials.ACL) int {
	removed := 0
	err := s.eachChild(ctx, KindTunnelSession, accountID, credentialID, func(sess store.Record) error {
		// Endpoints: a domain (http, https, tls) or an address (tcp) the
		// ACL no longer allows. A tcp port the server picked stays only
		// while the ACL allows everything, as at its bind.
		err := s.eachChild(ctx, KindEndpoint, accountID, sess.ID, func(rec store.Record) error {
			r, err := endpointForm.Decode(s.db, rec)
			if err != nil {
				return err
			}
			e := r.Endpoint
			allowed := acl.AllowsDomain(e.Host)
			if e.Proto == agents.ProtoTCP {
				allowed = acl.AllowsAll() || acl.AllowsAddr(net.JoinHostPort(e.Host, strconv.FormatInt(e.Port, 10)))
			}
			if allowed {
				return nil
			}
			return s.removeHeld(ctx, endpointKind, accountID, rec.ID, &removed)
		})
		if err != nil {
			return err
		}
		return s.eachChild(ctx, KindTunnel, accountID, sess.ID, func(rec store.Record) error {
			var t onlineTunnel
			if err := json.Unmarshal(rec.Data, &t); err != nil {
				return apierr.Wrap(apierr.Internal, err, "internal error")
			}
			if acl.AllowsLabels(t.Labels) {
				return nil
			}
			// A tunnel's labels never change (a renewal changes only its
			// lease): it goes whatever its version.
			return s.removeHeld(ctx, tunnelKind, accountID, rec.ID, &removed)
		})
	})
	if err != nil {
		s.log.Error("removing the tunnels a narrowed ACL no longer allows failed; they stay until their sessions bind again", "credential", credentialID, "err", err)
	}
	return removed
}

// eachChild calls visit with every record of kind whose parent is
// parentID, a page at a time, and stops at visit's first error.
func (s *Service) eachChild(ctx context.Context, kind store.Kind, accountID, parentID string, visit func(store.Record) error) error {
	q := store.Query{Kind: kind, AccountID: accountID, ParentID: parentID, Limit: MaxPageSize}
	for {
		recs, err := s.store.List(ctx, q)
		if err != nil {
			return err
		}
		for _, rec := range recs {
			if err := visit(rec); err != nil {
				return err
			}
		}
		if len(recs) < q.Limit {
			return nil
		}
		q.BeforeID = recs[len(recs)-1].ID
	}
}

// closeSessionsOfOwner removes the agent sessions (and with them their
// tunnels and endpoints) of every credential of the account that ownerID
// owns, and returns how many it removed. Failures are logged: the
// deactivation they follow has committed, and refuses the credentials'
// tokens already.
func (s *Service) closeSessionsOfOwner(ctx context.Context, accountID, ownerID string) int {
	closed := 0
	q := store.Query{Kind: KindCredential, AccountID: accountID, Limit: MaxPageSize}
	for {
		recs, err := s.store.List(ctx, q)
		if err != nil {
			s.log.Error("closing a deactivated bot's agent sessions failed; they end when their tunnel servers renew them", "owner", ownerID, "err", err)
			return closed
		}
		for _, rec := range recs {
			if c, err := credentialForm.Decode(s.db, rec); err != nil || c.OwnerID != ownerID {
				continue
			}
			err := s.eachChild(ctx, KindTunnelSession, accountID, rec.ID, func(sess store.Record) error {
				return s.removeHeld(ctx, tunnelSessionKind, accountID, sess.ID, &closed)
			})
			if err != nil {
				s.log.Error("closing a deactivated bot's agent sessions failed; they end when their tunnel servers renew them", "owner", ownerID, "err", err)
			}
		}
		if len(recs) < q.Limit {
			return closed
		}
		q.BeforeID = recs[len(recs)-1].ID
	}
}

// removeHeld removes record id of kind k, reported as k's deleted event,
// and counts it in n; one removed meanwhile is not an error.
func (s *Service) removeHeld(ctx context.Context, k *records.Kind, accountID, id string, n *int) error {
	err := s.store.Delete(ctx, k.StoreKind, accountID, id, s.db.Note(k.Event, events.Deleted))
	switch {
	case err == nil:
		*n++
	case !errors.Is(err, apierr.ErrNotFound):
		return err
	}
	return nil
}
