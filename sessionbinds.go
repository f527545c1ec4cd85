package edgeplane

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/credentials"
	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/store"
)

// An ACL that narrows applies to what agents hold already, not only to
// their next binds: when a credential's ACL changes, every tunnel that
// an agent session of the credential holds and that the new ACL does
// not allow is removed (reported as deleted), and the tunnel server that
// holds the session, following the change feed, stops it at the agent
// (the protocol's StopTunnel). A tunnel an agent starts in the instant
// between the ACL's update and this check may stay until the agent
// binds again; the next update of the ACL removes it.

// unbindDisallowed removes the tunnels of the credential's agent
// sessions that acl does not allow, and returns how many it removed.
// Failures are logged: the ACL update they follow has committed.
func (s *Service) unbindDisallowed(ctx context.Context, accountID, credentialID string, acl *credentials.ACL) int {
	removed := 0
	err := s.eachChild(ctx, KindTunnelSession, accountID, credentialID, func(sess store.Record) error {
		return s.eachChild(ctx, KindTunnel, accountID, sess.ID, func(rec store.Record) error {
			var t onlineTunnel
			if err := json.Unmarshal(rec.Data, &t); err != nil {
				return apierr.Wrap(apierr.Internal, err, "internal error")
			}
			if acl.AllowsLabels(t.Labels) {
				return nil
			}
			// A tunnel's labels never change (a renewal changes only its
			// lease): delete it whatever its version.
			err := s.store.Delete(ctx, KindTunnel, accountID, rec.ID, s.db.Note(tunnelKind.Event, events.Deleted))
			switch {
			case err == nil:
				removed++
			case !errors.Is(err, apierr.ErrNotFound):
				return err
			}
			return nil
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
