package agentstate

import (
	"context"
	"encoding/json"
	"net"
	"strconv"

	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/credentials"
	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/store"
)

// UnbindDisallowed removes the tunnels and endpoints of the credential's
// agent sessions that acl, its new ACL, does not allow, each reported
// as deleted, and returns how many it removed. Failures are logged: the
// ACL update they follow has committed.
func (s *State) UnbindDisallowed(ctx context.Context, accountID, credentialID string, acl *credentials.ACL) int {
	removed := 0
	err := s.eachChild(ctx, s.sessions.StoreKind, accountID, credentialID, func(sess store.Record) error {
		// Endpoints: a domain (http, https, tls) or an address (tcp) the
		// ACL no longer allows. A tcp port the server picked stays only
		// while the ACL allows everything, as at its bind.
		err := s.eachChild(ctx, s.ends.StoreKind, accountID, sess.ID, func(rec store.Record) error {
			r, err := s.ends.Decode(s.db, rec)
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
			return s.removeHeld(ctx, s.ends.Kind, accountID, rec.ID, &removed)
		})
		if err != nil {
			return err
		}
		return s.eachChild(ctx, s.tunnels.StoreKind, accountID, sess.ID, func(rec store.Record) error {
			var t onlineTunnel
			if err := json.Unmarshal(rec.Data, &t); err != nil {
				return apierr.Wrap(apierr.Internal, err, "internal error")
			}
			if acl.AllowsLabels(t.Labels) {
				return nil
			}
			// A tunnel's labels never change (a renewal changes only its
			// lease): it goes whatever its version.
			return s.removeHeld(ctx, s.tunnels.Kind, accountID, rec.ID, &removed)
		})
	})
	if err != nil {
		s.db.Log.Error("removing the tunnels a narrowed ACL no longer allows failed; they stay until their sessions bind again", "credential", credentialID, "err", err)
	}
	return removed
}

// CloseSessionsOfOwner removes the agent sessions (and with them their
// tunnels and endpoints) of every credential of the account that
// ownerID owns, each reported as deleted, and returns how many it
// removed: a deactivated bot's. Failures are logged: the deactivation
// they follow has committed, and refuses the credentials' tokens
// already.
func (s *State) CloseSessionsOfOwner(ctx context.Context, accountID, ownerID string) int {
	closed := 0
	q := store.Query{Kind: s.creds.StoreKind, AccountID: accountID, Limit: records.MaxPageSize}
	for {
		recs, err := s.store.List(ctx, q)
		if err != nil {
			s.db.Log.Error("closing a deactivated bot's agent sessions failed; they end when their tunnel servers renew them", "owner", ownerID, "err", err)
			return closed
		}
		for _, rec := range recs {
			if c, err := s.creds.Decode(s.db, rec); err != nil || c.OwnerID != ownerID {
				continue
			}
			err := s.eachChild(ctx, s.sessions.StoreKind, accountID, rec.ID, func(sess store.Record) error {
				return s.removeHeld(ctx, s.sessions.Kind, accountID, sess.ID, &closed)
			})
			if err != nil {
				s.db.Log.Error("closing a deactivated bot's agent sessions failed; they end when their tunnel servers renew them", "owner", ownerID, "err", err)
			}
		}
		if len(recs) < q.Limit {
			return closed
		}
		q.BeforeID = recs[len(recs)-1].ID
	}
}
