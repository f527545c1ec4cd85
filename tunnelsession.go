package edgeplane

import (
	"context"

	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/internal/agentstate"
	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/store"
)

// Tunnel sessions (package agents has the model): an agent's connection
// to a tunnel server, opened with a credential's authtoken
// ([hosting.TunnelHost.OpenTunnelSession]). A session record is a child of its
// credential, and the labeled tunnels the agent starts
// ([hosting.TunnelHost.StartLabeledTunnel]) are tunnel records that are children of
// the session: closing the session, or deleting the credential, removes
// them in the same atomic step. A session names the edge node whose
// tunnel server holds it (package internal/nodes) and has no lease of
// its own: it is online while its node's lease is, and
// [Host.ReapTunnels] removes it, with its tunnels and endpoints, once the
// node's lease ended. The API lists and reads sessions and asks one to
// stop (POST /tunnel_sessions/{id}/stop): a store update of the session
// that its tunnel server sees in the change feed. The Host's operations
// on sessions are package internal/agentstate's.

// The identity of the kind this file declares (see kindList); its
// stored form is package internal/agentstate's.
var (
	tunnelSessionKind = &records.Kind{StoreKind: KindTunnelSession, Prefix: agents.SessionPrefix, Collection: "tunnel_sessions",
		Noun: "tunnel session", Event: "tunnel_session", Parent: credentialKind}
)

var tunnelSessionForm = &kind[agentstate.SessionRecord]{Form: agentstate.SessionForm(tunnelSessionKind),
	present: (*Service).presentTunnelSession, shown: showTunnelSession}

// showTunnelSession shows a session as the API does: without what only
// its tunnel server knows.
func showTunnelSession(_ context.Context, _ *Service, r *agentstate.SessionRecord, _ store.Record) (any, error) {
	return &r.TunnelSession, nil
}

func (s *Service) presentTunnelSession(r *agentstate.SessionRecord, _ store.Record) {
	r.URI = s.uri(tunnelSessionKind.Collection, r.ID)
	r.Credential = s.ref(credentialKind.Collection, r.Credential.ID)
	r.Transport = agents.Transport
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
		func(r *agentstate.SessionRecord, rec store.Record) (*agents.TunnelSession, error) {
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
	_, err := records.Update(ctx, s.db, p, tunnelSessionForm.Form, id, func(r *agentstate.SessionRecord, _ *store.Record) error {
		r.StopRequested = true
		return nil
	})
	return err
}
