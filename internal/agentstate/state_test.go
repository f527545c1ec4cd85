package agentstate_test

import (
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/credentials"
	"github.com/edgeplane/edgeplane/internal/agentstate"
	"github.com/edgeplane/edgeplane/internal/ids"
	"github.com/edgeplane/edgeplane/internal/nodes"
	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/internal/seal"
	"github.com/edgeplane/edgeplane/kinds"
	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/policy"
	"github.com/edgeplane/edgeplane/store"
)

// The kinds as the root declares them, for these tests.
var (
	credentialKind = &records.Kind{StoreKind: kinds.Credential, Prefix: credentials.IDPrefix, Noun: "credential", Event: "credential"}
	sessionKind    = &records.Kind{StoreKind: kinds.TunnelSession, Prefix: agents.SessionPrefix, Noun: "tunnel session", Event: "tunnel_session", Parent: credentialKind}
	tunnelKind     = &records.Kind{StoreKind: kinds.Tunnel, Prefix: backends.TunnelPrefix, Noun: "tunnel", Event: "tunnel", Parent: credentialKind}
	endpointKind   = &records.Kind{StoreKind: kinds.Endpoint, Prefix: agents.EndpointPrefix, Noun: "endpoint", Event: "endpoint", Parent: sessionKind}
)

// credentialDoc is a credential as these tests store it: what a State
// reads of one.
type credentialDoc struct {
	ACL     []string `json:"acl"`
	OwnerID string   `json:"owner_id"`
}

var credentialForm = records.PlainForm(credentialKind,
	func(c *credentials.Credential) *credentialDoc { return &credentialDoc{ACL: c.ACL, OwnerID: c.OwnerID} },
	func(d *credentialDoc, rec store.Record) *credentials.Credential {
		return &credentials.Credential{ID: rec.ID, ACL: d.ACL, OwnerID: d.OwnerID}
	})

var errBadToken = apierr.New(apierr.Unauthenticated, "bad token")

// fakeRecords is the root's side of the seam: an authtoken is the ID of
// its credential in account, read from the store; presentation sets the
// URI.
type fakeRecords struct {
	st store.Store
	db *records.DB
}

func (r fakeRecords) Authenticate(ctx context.Context, token string) (agentstate.Auth, error) {
	rec, err := r.st.Get(ctx, kinds.Credential, account, token)
	if err != nil {
		return agentstate.Auth{}, errBadToken
	}
	c, err := credentialForm.Decode(r.db, rec)
	if err != nil {
		return agentstate.Auth{}, err
	}
	acl, err := credentials.ParseACL(c.ACL)
	if err != nil {
		return agentstate.Auth{}, err
	}
	return agentstate.Auth{AccountID: account, CredentialID: c.ID, ACL: acl}, nil
}

func (fakeRecords) CheckAgentIP(context.Context, string, netip.Addr) error { return nil }

func (fakeRecords) CompilePolicy(context.Context, string, policy.Target, string, string, string) (string, []string, error) {
	return "", nil, errors.New("no policies here")
}

func (fakeRecords) ReservedDomain(context.Context, string, string) (string, bool, error) {
	return "", false, nil
}

func (fakeRecords) EndpointKeys(e *agents.Endpoint) []string {
	return []string{"hostport:" + e.Hostport}
}

func (fakeRecords) HostportErr(err error, _, _ string) error { return err }

func (fakeRecords) PresentSession(r *agentstate.SessionRecord)   { r.URI = "presented" }
func (fakeRecords) PresentTunnel(t *backends.Tunnel)             { t.URI = "presented" }
func (fakeRecords) PresentEndpoint(r *agentstate.EndpointRecord) { r.URI = "presented" }

const lease = time.Minute

// account is the account of every record of these tests.
var account = ids.NewGenerator(time.Now).New("acct_")

type env struct {
	s     *agentstate.State
	st    *memstore.Store
	nodes *nodes.Registry
	now   time.Time
	gen   *ids.Generator
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{st: memstore.New(), now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	clock := func() time.Time { return e.now }
	e.gen = ids.NewGenerator(clock)
	db := &records.DB{Store: e.st, Log: slog.New(slog.DiscardHandler), Now: clock,
		Kinds: records.Kinds{credentialKind, sessionKind, tunnelKind, endpointKind}}
	sealer, err := seal.New(seal.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	e.nodes = nodes.New(e.st, db, clock, e.gen, lease, sealer, sessionKind)
	e.s = agentstate.New(agentstate.Config{DB: db, Nodes: e.nodes, IDs: e.gen, Lease: lease, Limits: agents.Limits{}.WithDefaults(),
		Forms: agentstate.Forms{Sessions: agentstate.SessionForm(sessionKind), Tunnels: agentstate.TunnelForm(tunnelKind),
			Endpoints: agentstate.EndpointForm(endpointKind), Credentials: credentialForm},
		Records: fakeRecords{st: e.st, db: db}, BadToken: errBadToken})
	return e
}

// credential stores a credential of owner with acl and returns its ID,
// which is its authtoken here.
func (e *env) credential(t *testing.T, owner string, acl ...string) string {
	t.Helper()
	id := e.gen.New(credentials.IDPrefix)
	rec := store.Record{Kind: kinds.Credential, AccountID: account, ID: id}
	if err := credentialForm.Encode(&records.DB{}, &credentials.Credential{ACL: acl, OwnerID: owner}, &rec); err != nil {
		t.Fatal(err)
	}
	if err := e.st.Create(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	return id
}

func wantCode(t *testing.T, err error, code apierr.Code, words string) {
	t.Helper()
	if apierr.CodeOf(err) != code || !strings.Contains(err.Error(), words) {
		t.Fatalf("got %v, want %s saying %q", err, code, words)
	}
}

// TestRegisteredTunnel: a registered tunnel's labels are held to its
// credential's ACL; it is renewed while its lease lasts, and reaped
// once it ended.
func TestRegisteredTunnel(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	token := e.credential(t, "usr_x", "bind:app=web")

	_, err := e.s.RegisterTunnel(ctx, token, backends.RegisterTunnelParams{Labels: map[string]string{"app": "api", "env": "prod"}})
	wantCode(t, err, apierr.PermissionDenied, "app=api, env=prod")
	_, err = e.s.RegisterTunnel(ctx, "cr_gone", backends.RegisterTunnelParams{Labels: map[string]string{"app": "web"}})
	if !errors.Is(err, errBadToken) {
		t.Fatalf("an unknown token: %v", err)
	}

	tn, err := e.s.RegisterTunnel(ctx, token, backends.RegisterTunnelParams{Labels: map[string]string{"app": "web"}})
	if err != nil {
		t.Fatal(err)
	}
	if tn.URI != "presented" || tn.Credential.ID != token || !tn.ExpiresAt.Equal(e.now.Add(lease)) {
		t.Fatalf("registered %+v", tn)
	}
	selected, err := e.s.BackendTunnels(ctx, account, map[string]string{"app": "web"})
	if err != nil || len(selected) != 1 || selected[0].ID != tn.ID {
		t.Fatalf("selected %+v, %v", selected, err)
	}

	e.now = e.now.Add(lease / 2)
	renewed, err := e.s.RenewTunnel(ctx, account, tn.ID)
	if err != nil || !renewed.ExpiresAt.Equal(e.now.Add(lease)) {
		t.Fatalf("renewed %+v, %v", renewed, err)
	}

	e.now = e.now.Add(lease)
	_, err = e.s.RenewTunnel(ctx, account, tn.ID)
	wantCode(t, err, apierr.FailedPrecondition, "register the tunnel again")
	if selected, err := e.s.BackendTunnels(ctx, account, map[string]string{"app": "web"}); err != nil || len(selected) != 0 {
		t.Fatalf("an expired tunnel selected: %+v, %v", selected, err)
	}
	if n, err := e.s.Reap(ctx, 10); n != 1 || err != nil {
		t.Fatalf("reaped %d, %v", n, err)
	}
	wantCode(t, e.s.UnregisterTunnel(ctx, account, tn.ID), apierr.NotFound, tn.ID)
}

// TestSessionHeldToACL: what a session holds goes when its credential's
// ACL narrows, and the session when its credential's owner is
// deactivated.
func TestSessionHeldToACL(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	token := e.credential(t, "bot_x", "bind:app=*")
	node, err := e.nodes.Register(ctx, agents.NodeParams{})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := e.s.OpenSession(ctx, token, agents.SessionParams{Node: node.ID, IP: netip.MustParseAddr("192.0.2.1")})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := e.s.Session(ctx, account, sess.ID); err != nil || got.IP != "192.0.2.1" || got.URI != "presented" {
		t.Fatalf("read %+v, %v", got, err)
	}
	web, err := e.s.StartTunnel(ctx, account, sess.ID, agents.LabeledTunnelParams{Labels: map[string]string{"app": "web"}})
	if err != nil {
		t.Fatal(err)
	}
	api, err := e.s.StartTunnel(ctx, account, sess.ID, agents.LabeledTunnelParams{Labels: map[string]string{"app": "api"}})
	if err != nil {
		t.Fatal(err)
	}

	narrowed, err := credentials.ParseACL([]string{"bind:app=web"})
	if err != nil {
		t.Fatal(err)
	}
	if n := e.s.UnbindDisallowed(ctx, account, token, narrowed); n != 1 {
		t.Fatalf("removed %d, want 1", n)
	}
	wantCode(t, e.s.UnregisterTunnel(ctx, account, api.ID), apierr.NotFound, api.ID)
	if err := e.s.UnregisterTunnel(ctx, account, web.ID); err != nil {
		t.Fatalf("the allowed tunnel: %v", err)
	}

	if n := e.s.CloseSessionsOfOwner(ctx, account, "bot_x"); n != 1 {
		t.Fatalf("closed %d, want 1", n)
	}
	_, err = e.s.Session(ctx, account, sess.ID)
	wantCode(t, err, apierr.NotFound, sess.ID)
}
