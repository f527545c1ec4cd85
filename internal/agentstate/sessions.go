package agentstate

import (
	"context"
	"errors"
	"maps"

	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/credentials"
	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/identity"
	"github.com/edgeplane/edgeplane/internal/ids"
	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/ipaccess"
	"github.com/edgeplane/edgeplane/resource"
	"github.com/edgeplane/edgeplane/store"
)

// OpenSession records an agent's session with a tunnel server (the
// Host's OpenTunnelSession): it authenticates token, validates params,
// checks the account's IP restrictions of type agent against params.IP
// and stores the session as a child of the token's credential, held by
// params.Node, a live node, within the account's and the credential's
// limits of sessions. Reported as the session's created event.
func (s *State) OpenSession(ctx context.Context, token string, params agents.SessionParams) (*agents.TunnelSession, error) {
	auth, err := s.recs.Authenticate(ctx, token)
	if err != nil {
		return nil, err
	}
	if err := params.Validate(); err != nil {
		return nil, err
	}
	if err := s.nodes.Live(ctx, params.Node); err != nil {
		return nil, err
	}
	if err := s.recs.CheckAgentIP(ctx, auth.AccountID, params.IP); err != nil {
		return nil, err
	}
	k := s.sessions.Kind
	r := &SessionRecord{TunnelSession: agents.TunnelSession{ID: s.ids.New(agents.SessionPrefix), AccountID: auth.AccountID, AgentVersion: params.AgentVersion,
		Credential: resource.Ref{ID: auth.CredentialID}, IP: ipaccess.AddrString(params.IP), Metadata: params.Metadata, OS: params.OS,
		Region: params.Region, StartedAt: s.db.Timestamp(), Node: params.Node},
		ClientType: params.ClientType, StopSupported: params.StopSupported}
	rec := store.Record{Kind: k.StoreKind, AccountID: auth.AccountID, ID: r.ID, ParentID: auth.CredentialID,
		Indexes: sessionIndexes(r.Node), Note: s.db.Note(k.Event, events.Created)}
	if err := s.sessions.Encode(s.db, r, &rec); err != nil {
		return nil, err
	}
	caps := accountCap(k.StoreKind, auth.AccountID, s.limits.SessionsPerAccount, "simultaneous agent sessions")
	if n := s.limits.SessionsPerCredential; n > 0 {
		caps = append(caps, records.Cap{Kind: k.StoreKind, AccountID: auth.AccountID, ParentID: auth.CredentialID, Capacity: n,
			Full: func() error {
				return apierr.New(apierr.ResourceExhausted, "authtoken %s is limited to %d simultaneous agent sessions; stop one of its agents first", auth.CredentialID, n)
			}})
	}
	err = records.CreateCapped(ctx, s.store, caps, func(slots []string) error {
		rec.Keys = slots
		return s.store.Create(ctx, rec)
	})
	if err != nil {
		var miss *store.MissingRefError
		if errors.As(err, &miss) {
			return nil, s.badToken // the credential was deleted meanwhile
		}
		return nil, s.db.StoreErr(err, k, r.ID)
	}
	s.recs.PresentSession(r)
	return &r.TunnelSession, nil
}

// readSession reads a session of the account from the store, not the
// record cache: a tunnel server that saw the session change in the
// feed reads the change, and a write decides on the current lease.
func (s *State) readSession(ctx context.Context, accountID, id string) (*SessionRecord, store.Record, error) {
	k := s.sessions.Kind
	if !ids.Valid(id, agents.SessionPrefix) || !ids.Valid(accountID, identity.AccountPrefix) {
		return nil, store.Record{}, k.NotFound(id)
	}
	rec, err := s.store.Get(ctx, k.StoreKind, accountID, id)
	if err != nil {
		return nil, store.Record{}, s.db.StoreErr(err, k, id)
	}
	r, err := s.sessions.Decode(s.db, rec)
	if err != nil {
		return nil, store.Record{}, err
	}
	return r, rec, nil
}

// Session returns a session of the account with StopRequested, read
// from the store (the Host's GetTunnelSession).
func (s *State) Session(ctx context.Context, accountID, id string) (*agents.TunnelSession, error) {
	r, _, err := s.readSession(ctx, accountID, id)
	if err != nil {
		return nil, err
	}
	s.recs.PresentSession(r)
	return &r.TunnelSession, nil
}

// CloseSession removes a session of the account and what it holds, in
// one atomic store delete (they are its children), reported as the
// session's deleted event (the Host's CloseTunnelSession).
func (s *State) CloseSession(ctx context.Context, accountID, id string) error {
	return s.remove(ctx, s.sessions.Kind, accountID, id)
}

// StartTunnel records a labeled tunnel an agent starts in its session
// (the Host's StartLabeledTunnel): a child of the session, whose labels
// the ACL of the session's credential as it is now must permit, within
// the account's limit of tunnels. Reported as the tunnel's created
// event.
func (s *State) StartTunnel(ctx context.Context, accountID, sessionID string, params agents.LabeledTunnelParams) (*backends.Tunnel, error) {
	sess, sessRec, err := s.readSession(ctx, accountID, sessionID)
	if err != nil {
		return nil, err
	}
	if err := s.nodes.SessionLive(ctx, sessionID, sess.Node); err != nil {
		return nil, err
	}
	if err := validateLabeledTunnel(params); err != nil {
		return nil, err
	}
	acl, err := s.sessionACL(ctx, accountID, sessionID, sessRec.ParentID)
	if err != nil {
		return nil, err
	}
	if err := checkLabelsAllowed(acl, params.Labels); err != nil {
		return nil, err
	}
	k := s.tunnels.Kind
	t := backends.Tunnel{ID: s.ids.New(backends.TunnelPrefix), AccountID: accountID, StartedAt: s.db.Timestamp(), Labels: maps.Clone(params.Labels),
		Credential: resource.Ref{ID: sessRec.ParentID}, ForwardsTo: params.ForwardsTo,
		TunnelSession: &resource.Ref{ID: sessionID}, Node: sess.Node, Metadata: params.Metadata}
	rec := store.Record{Kind: k.StoreKind, AccountID: accountID, ID: t.ID, ParentID: sessionID, Indexes: tunnelIndexes(&t),
		Note: s.db.Note(k.Event, events.Created)}
	if err := s.tunnels.Encode(s.db, &t, &rec); err != nil {
		return nil, err
	}
	err = records.CreateCapped(ctx, s.store, accountCap(k.StoreKind, accountID, s.limits.TunnelsPerAccount, "labeled tunnels"), func(slots []string) error {
		rec.Keys = slots
		return s.store.Create(ctx, rec)
	})
	if err != nil {
		var miss *store.MissingRefError
		if errors.As(err, &miss) {
			return nil, s.sessions.NotFound(sessionID) // closed, reaped or deleted with its credential meanwhile
		}
		return nil, s.db.StoreErr(err, k, t.ID)
	}
	s.recs.PresentTunnel(&t)
	return &t, nil
}

// sessionACL returns the ACL of credentialID, the credential of the
// session sessionID, as it is now, not as it was when the session
// opened: an update that narrows it applies to the next tunnel or
// endpoint. A credential deleted meanwhile (and the session with it)
// makes the session not found.
func (s *State) sessionACL(ctx context.Context, accountID, sessionID, credentialID string) (*credentials.ACL, error) {
	credRec, err := s.store.Get(ctx, s.creds.StoreKind, accountID, credentialID)
	if errors.Is(err, apierr.ErrNotFound) {
		return nil, s.sessions.NotFound(sessionID)
	}
	if err != nil {
		return nil, s.db.StoreErr(err, s.creds.Kind, credentialID)
	}
	cred, err := s.creds.Decode(s.db, credRec)
	if err != nil {
		return nil, err
	}
	acl, err := credentials.ParseACL(cred.ACL)
	if err != nil {
		// Stored ACLs were validated on write; a failure here is corruption.
		return nil, apierr.Wrap(apierr.Internal, err, "internal error")
	}
	return acl, nil
}

// validateLabeledTunnel reports every broken rule of p at once: at least
// one label, each valid (backends.ValidateLabels); forwards_to and
// metadata valid UTF-8 within their bounds. forwards_to is informational:
// any text, not the URL of [backends.RegisterTunnelParams].
func validateLabeledTunnel(p agents.LabeledTunnelParams) error {
	var vs apierr.Violations
	if len(p.Labels) == 0 {
		vs.Add("labels", "must have at least one label; a labeled tunnel is selected by its labels")
	} else {
		vs.AddError("", backends.ValidateLabels(p.Labels))
	}
	vs.CheckText("forwards_to", p.ForwardsTo, agents.MaxForwardsToBytes)
	vs.CheckText("metadata", p.Metadata, agents.MaxMetadataBytes)
	return vs.Err()
}
