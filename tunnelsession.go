package edgeplane

import (
	"context"
	"errors"
	"maps"
	"net/netip"
	"time"

	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/credentials"
	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/internal/ids"
	"github.com/edgeplane/edgeplane/internal/nodes"
	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/ipaccess"
	"github.com/edgeplane/edgeplane/resource"
	"github.com/edgeplane/edgeplane/store"
)

// Tunnel sessions (package agents has the model): an agent's connection
// to a tunnel server, opened with a credential's authtoken
// ([TunnelHost.OpenTunnelSession]). A session record is a child of its
// credential, and the labeled tunnels the agent starts
// ([TunnelHost.StartLabeledTunnel]) are tunnel records that are children of
// the session: closing the session, or deleting the credential, removes
// them in the same atomic step. A session names the edge node whose
// tunnel server holds it (package internal/nodes) and has no lease of
// its own: it is online while its node's lease is, and
// [Host.ReapTunnels] removes it, with its tunnels and endpoints, once the
// node's lease ended. The API lists and reads sessions and asks one to
// stop (POST /tunnel_sessions/{id}/stop): a store update of the session
// that its tunnel server sees in the change feed.

// tunnelSessionDoc is the stored form of a tunnel session (see package
// internal/records). Its account is its record's and its credential the
// record's parent; its transport is always agents.Transport.
type tunnelSessionDoc struct {
	StartedAt     time.Time `json:"started_at"`
	Node          string    `json:"node"`
	AgentVersion  string    `json:"agent_version,omitempty"`
	OS            string    `json:"os,omitempty"`
	IP            string    `json:"ip,omitempty"`
	Metadata      string    `json:"metadata,omitempty"`
	Region        string    `json:"region,omitempty"`
	ClientType    string    `json:"client_type,omitempty"`
	StopSupported bool      `json:"stop_supported,omitempty"`
	StopRequested bool      `json:"stop_requested,omitempty"`
}

// tunnelSessionRecord is a tunnel session as the Service holds it: the
// API model and what only its tunnel server knows of the agent, which
// the API does not show.
type tunnelSessionRecord struct {
	agents.TunnelSession
	ClientType    string
	StopSupported bool
}

// The identity of the kind this file declares (see kindList).
var (
	tunnelSessionKind = &records.Kind{StoreKind: KindTunnelSession, Prefix: agents.SessionPrefix, Collection: "tunnel_sessions",
		Noun: "tunnel session", Event: "tunnel_session", Parent: credentialKind}
)

var tunnelSessionForm = &kind[tunnelSessionRecord]{Form: records.PlainForm(tunnelSessionKind,
	func(r *tunnelSessionRecord) *tunnelSessionDoc {
		return &tunnelSessionDoc{StartedAt: r.StartedAt, Node: r.Node, AgentVersion: r.AgentVersion, OS: r.OS, IP: r.IP,
			Metadata: r.Metadata, Region: r.Region, ClientType: r.ClientType, StopSupported: r.StopSupported, StopRequested: r.StopRequested}
	},
	func(d *tunnelSessionDoc, rec store.Record) *tunnelSessionRecord {
		return &tunnelSessionRecord{TunnelSession: agents.TunnelSession{ID: rec.ID, AccountID: rec.AccountID, AgentVersion: d.AgentVersion,
			Credential: resource.Ref{ID: rec.ParentID}, IP: d.IP, Metadata: d.Metadata, OS: d.OS, Region: d.Region,
			StartedAt: d.StartedAt, Node: d.Node, StopRequested: d.StopRequested},
			ClientType: d.ClientType, StopSupported: d.StopSupported}
	}), present: (*Service).presentTunnelSession, shown: showTunnelSession}

// showTunnelSession shows a session as the API does: without what only
// its tunnel server knows.
func showTunnelSession(_ context.Context, _ *Service, r *tunnelSessionRecord, _ store.Record) (any, error) {
	return &r.TunnelSession, nil
}

func (s *Service) presentTunnelSession(r *tunnelSessionRecord, _ store.Record) {
	r.URI = s.uri(tunnelSessionKind.Collection, r.ID)
	r.Credential = s.ref(credentialKind.Collection, r.Credential.ID)
	r.Transport = agents.Transport
}

// tunnelSessionIndexes returns a session record's index entries: its
// node, read when the node is removed or reaped.
func tunnelSessionIndexes(node string) []store.IndexEntry {
	return []store.IndexEntry{{Name: nodes.SessionIndex, Value: node}}
}

// GetTunnelSession returns a tunnel session of the account (GET
// /tunnel_sessions/{id}): an agent connected with one of the account's
// credentials.
func (s *Service) GetTunnelSession(ctx context.Context, p Principal, id string) (*agents.TunnelSession, error) {
	r, rec, err := records.Get(ctx, s.db, p, tunnelSessionForm.Form, id)
	if err != nil {
		return nil, err
	}
	s.presentTunnelSession(r, rec)
	return &r.TunnelSession, nil
}

// ListTunnelSessions returns a page of the account's tunnel sessions,
// newest first (GET /tunnel_sessions).
func (s *Service) ListTunnelSessions(ctx context.Context, p Principal, opts ListOptions) (*Page[agents.TunnelSession], error) {
	return listAs(ctx, s, p, tunnelSessionForm.Form, "", tunnelSessionKind.Collection, opts,
		func(r *tunnelSessionRecord, rec store.Record) (*agents.TunnelSession, error) {
			s.presentTunnelSession(r, rec)
			return &r.TunnelSession, nil
		}, records.LateField[agents.TunnelSession]{})
}

// StopTunnelSession asks the agent of a tunnel session of the account to
// stop (POST /tunnel_sessions/{id}/stop): the session is marked, its
// tunnel server sees the mark in the store's change feed and tells the
// agent to exit, or closes its connection when the agent does not accept
// the command. The session and its tunnels stay until the agent is gone.
// Asking again is no error. Reported as a tunnel_session_updated event.
func (s *Service) StopTunnelSession(ctx context.Context, p Principal, id string) error {
	_, err := records.Update(ctx, s.db, p, tunnelSessionForm.Form, id, func(r *tunnelSessionRecord, _ *store.Record) error {
		r.StopRequested = true
		return nil
	})
	return err
}

// openTunnelSession is [TunnelHost.OpenTunnelSession].
func (s *Service) openTunnelSession(ctx context.Context, token string, params agents.SessionParams) (*agents.TunnelSession, error) {
	auth, err := s.authenticateTunnelToken(ctx, token)
	if err != nil {
		return nil, err
	}
	if err := params.Validate(); err != nil {
		return nil, err
	}
	if err := s.nodes.Live(ctx, params.Node); err != nil {
		return nil, err
	}
	if err := s.checkIPRestrictions(ctx, auth.AccountID, ipaccess.TypeAgent, params.IP, false); err != nil {
		return nil, err
	}
	r := &tunnelSessionRecord{TunnelSession: agents.TunnelSession{ID: s.ids.New(agents.SessionPrefix), AccountID: auth.AccountID, AgentVersion: params.AgentVersion,
		Credential: resource.Ref{ID: auth.Credential.ID}, IP: addrString(params.IP), Metadata: params.Metadata, OS: params.OS,
		Region: params.Region, StartedAt: s.timestamp(), Node: params.Node},
		ClientType: params.ClientType, StopSupported: params.StopSupported}
	rec := store.Record{Kind: KindTunnelSession, AccountID: auth.AccountID, ID: r.ID, ParentID: auth.Credential.ID,
		Indexes: tunnelSessionIndexes(r.Node), Note: s.db.Note(tunnelSessionKind.Event, events.Created)}
	if err := tunnelSessionForm.Encode(s.db, r, &rec); err != nil {
		return nil, err
	}
	caps := s.accountCap(KindTunnelSession, auth.AccountID, s.limits.SessionsPerAccount, "simultaneous agent sessions")
	if n := s.limits.SessionsPerCredential; n > 0 {
		caps = append(caps, records.Cap{Kind: KindTunnelSession, AccountID: auth.AccountID, ParentID: auth.Credential.ID, Capacity: n,
			Full: func() error {
				return apierr.New(apierr.ResourceExhausted, "authtoken %s is limited to %d simultaneous agent sessions; stop one of its agents first", auth.Credential.ID, n)
			}})
	}
	err = records.CreateCapped(ctx, s.store, caps, func(slots []string) error {
		rec.Keys = slots
		return s.store.Create(ctx, rec)
	})
	if err != nil {
		var miss *store.MissingRefError
		if errors.As(err, &miss) {
			return nil, errBadToken // the credential was deleted meanwhile
		}
		return nil, s.db.StoreErr(err, tunnelSessionKind, r.ID)
	}
	s.presentTunnelSession(r, rec)
	return &r.TunnelSession, nil
}

// accountCap is the cap of limit records of kind in the account, what
// they are in words (for the refusal); none when limit is negative (no
// limit).
func (s *Service) accountCap(kind store.Kind, accountID string, limit int, what string) []records.Cap {
	if limit <= 0 {
		return nil
	}
	return []records.Cap{{Kind: kind, AccountID: accountID, Capacity: limit, Full: func() error {
		return apierr.New(apierr.ResourceExhausted, "your account is limited to %d %s; close one first", limit, what)
	}}}
}

// addrString returns a's text form, "" for the zero Addr.
func addrString(a netip.Addr) string {
	if !a.IsValid() {
		return ""
	}
	return a.String()
}

// readTunnelSession reads a session of the account from the store, not
// the record cache: a tunnel server that saw the session change in the
// feed reads the change, and a write decides on the current lease.
func (s *Service) readTunnelSession(ctx context.Context, accountID, id string) (*tunnelSessionRecord, store.Record, error) {
	if !ids.Valid(id, agents.SessionPrefix) || !ids.Valid(accountID, AccountPrefix) {
		return nil, store.Record{}, tunnelSessionKind.NotFound(id)
	}
	rec, err := s.store.Get(ctx, KindTunnelSession, accountID, id)
	if err != nil {
		return nil, store.Record{}, s.db.StoreErr(err, tunnelSessionKind, id)
	}
	r, err := tunnelSessionForm.Decode(s.db, rec)
	if err != nil {
		return nil, store.Record{}, err
	}
	return r, rec, nil
}

// getTunnelSession is [TunnelHost.GetTunnelSession].
func (s *Service) getTunnelSession(ctx context.Context, accountID, id string) (*agents.TunnelSession, error) {
	r, rec, err := s.readTunnelSession(ctx, accountID, id)
	if err != nil {
		return nil, err
	}
	s.presentTunnelSession(r, rec)
	return &r.TunnelSession, nil
}

// closeTunnelSession is [TunnelHost.CloseTunnelSession].
func (s *Service) closeTunnelSession(ctx context.Context, accountID, id string) error {
	if !ids.Valid(id, agents.SessionPrefix) {
		return tunnelSessionKind.NotFound(id)
	}
	if err := s.store.Delete(ctx, KindTunnelSession, accountID, id, s.db.Note(tunnelSessionKind.Event, events.Deleted)); err != nil {
		return s.db.StoreErr(err, tunnelSessionKind, id)
	}
	return nil
}

// startLabeledTunnel is [TunnelHost.StartLabeledTunnel].
func (s *Service) startLabeledTunnel(ctx context.Context, accountID, sessionID string, params agents.LabeledTunnelParams) (*backends.Tunnel, error) {
	sess, sessRec, err := s.readTunnelSession(ctx, accountID, sessionID)
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
	t := backends.Tunnel{ID: s.ids.New(backends.TunnelPrefix), AccountID: accountID, StartedAt: s.timestamp(), Labels: maps.Clone(params.Labels),
		Credential: resource.Ref{ID: sessRec.ParentID}, ForwardsTo: params.ForwardsTo,
		TunnelSession: &resource.Ref{ID: sessionID}, Node: sess.Node, Metadata: params.Metadata}
	rec := store.Record{Kind: KindTunnel, AccountID: accountID, ID: t.ID, ParentID: sessionID, Indexes: tunnelIndexes(&t),
		Note: s.db.Note(tunnelKind.Event, events.Created)}
	if err := tunnelForm.Encode(s.db, &t, &rec); err != nil {
		return nil, err
	}
	err = records.CreateCapped(ctx, s.store, s.accountCap(KindTunnel, accountID, s.limits.TunnelsPerAccount, "labeled tunnels"), func(slots []string) error {
		rec.Keys = slots
		return s.store.Create(ctx, rec)
	})
	if err != nil {
		var miss *store.MissingRefError
		if errors.As(err, &miss) {
			return nil, tunnelSessionKind.NotFound(sessionID) // closed, reaped or deleted with its credential meanwhile
		}
		return nil, s.db.StoreErr(err, tunnelKind, t.ID)
	}
	s.presentTunnel(&t, rec)
	return &t, nil
}

// sessionACL returns the ACL of credentialID, the credential of the
// session sessionID, as it is now, not as it was when the session
// opened: an update that narrows it applies to the next tunnel or
// endpoint. A credential deleted meanwhile (and the session with it)
// makes the session not found.
func (s *Service) sessionACL(ctx context.Context, accountID, sessionID, credentialID string) (*credentials.ACL, error) {
	credRec, err := s.store.Get(ctx, KindCredential, accountID, credentialID)
	if errors.Is(err, apierr.ErrNotFound) {
		return nil, tunnelSessionKind.NotFound(sessionID)
	}
	if err != nil {
		return nil, s.db.StoreErr(err, credentialKind, credentialID)
	}
	cred, err := credentialForm.Decode(s.db, credRec)
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
