package edgeplane_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/credentials"
	"github.com/edgeplane/edgeplane/memstore"
)

// withLimits sets the Service's agent limits.
func withLimits(l agents.Limits) func(*edgeplane.Options) {
	return func(o *edgeplane.Options) { o.AgentLimits = l }
}

// wantLimited fails unless err is resource exhausted with a message
// containing want.
func wantLimited(t *testing.T, err error, want string) {
	t.Helper()
	if apierr.CodeOf(err) != apierr.ResourceExhausted || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v; want resource exhausted saying %q", err, want)
	}
}

// TestAgentLimits: each limit refuses the one past it, with its words;
// what another credential or account holds does not count (or does, for
// the account's limits); closing one frees its place.
func TestAgentLimits(t *testing.T) {
	t.Run("sessions per credential", func(t *testing.T) {
		e := newEnvWithStore(t, memstore.New(), withLimits(agents.Limits{SessionsPerCredential: 2}))
		cred, token := e.token(t, e.user)
		_, other := e.token(t, e.user)
		first := e.session(t, token)
		e.session(t, token)
		_, err := e.svc.Host().Tunnels().OpenTunnelSession(e.ctx, token, e.params(t))
		wantLimited(t, err, "authtoken "+cred.ID+" is limited to 2 simultaneous agent sessions")
		e.session(t, other) // another credential's
		if err := e.svc.Host().Tunnels().CloseTunnelSession(e.ctx, e.user.AccountID, first.ID); err != nil {
			t.Fatal(err)
		}
		e.session(t, token)
	})
	t.Run("sessions per account", func(t *testing.T) {
		e := newEnvWithStore(t, memstore.New(), withLimits(agents.Limits{SessionsPerAccount: 2}))
		_, a := e.token(t, e.user)
		_, b := e.token(t, e.user)
		_, theirs := e.token(t, e.other)
		e.session(t, a)
		e.session(t, b)
		_, err := e.svc.Host().Tunnels().OpenTunnelSession(e.ctx, a, e.params(t))
		wantLimited(t, err, "your account is limited to 2 simultaneous agent sessions")
		e.session(t, theirs) // another account's
	})
	t.Run("tunnels per account", func(t *testing.T) {
		e := newEnvWithStore(t, memstore.New(), withLimits(agents.Limits{TunnelsPerAccount: 2}))
		_, a := e.token(t, e.user)
		_, b := e.token(t, e.user)
		s1, s2 := e.session(t, a), e.session(t, b)
		first := e.labeled(t, e.user.AccountID, s1.ID, map[string]string{"app": "1"})
		e.labeled(t, e.user.AccountID, s1.ID, map[string]string{"app": "2"})
		_, err := e.svc.Host().Tunnels().StartLabeledTunnel(e.ctx, e.user.AccountID, s2.ID, agents.LabeledTunnelParams{Labels: map[string]string{"app": "3"}})
		wantLimited(t, err, "your account is limited to 2 labeled tunnels")
		if err := e.svc.Host().UnregisterTunnel(e.ctx, e.user.AccountID, first.ID); err != nil {
			t.Fatal(err)
		}
		e.labeled(t, e.user.AccountID, s2.ID, map[string]string{"app": "3"})
	})
	t.Run("endpoints per account", func(t *testing.T) {
		e := newEnvWithStore(t, memstore.New(), withLimits(agents.Limits{EndpointsPerAccount: 1}))
		_, token := e.token(t, e.user)
		s := e.session(t, token)
		ep := e.bind(t, e.user.AccountID, s.ID, bindParams(agents.ProtoTCP, ""))
		_, err := e.svc.Host().Tunnels().BindEndpoint(e.ctx, e.user.AccountID, s.ID, bindParams(agents.ProtoTCP, ""))
		wantLimited(t, err, "your account is limited to 1 endpoints")
		// A rebind of the endpoint it holds takes the same place.
		rebind := bindParams(agents.ProtoTCP, "")
		rebind.ID = ep.ID
		e.bind(t, e.user.AccountID, s.ID, rebind)
	})
	t.Run("no limit", func(t *testing.T) {
		e := newEnvWithStore(t, memstore.New(), withLimits(agents.Limits{SessionsPerCredential: -1, SessionsPerAccount: -1}))
		_, token := e.token(t, e.user)
		for range agents.DefaultSessionsPerCredential + 1 {
			e.session(t, token)
		}
	})
	t.Run("above MaxLimit", func(t *testing.T) {
		_, err := edgeplane.New(memstore.New(), edgeplane.Options{AgentLimits: agents.Limits{TunnelsPerAccount: agents.MaxLimit + 1}})
		if apierr.CodeOf(err) != apierr.InvalidArgument || !strings.Contains(err.Error(), "AgentLimits") || !strings.Contains(err.Error(), "TunnelsPerAccount: must be at most 10000") {
			t.Errorf("a limit above MaxLimit: %v; want invalid, naming AgentLimits and TunnelsPerAccount", err)
		}
	})
}

// TestAgentLimitsAcrossReplicas: 40 sessions opened at once through two
// replicas on one SQLite file under a limit of 5 per account: exactly 5
// open, the others are refused (or told to try again), and none more.
func TestAgentLimitsAcrossReplicas(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "store.db")
	limits := withLimits(agents.Limits{SessionsPerAccount: 5})
	a, b := replicaOf(t, path, limits), replicaOf(t, path, limits)
	p := newAdmin(t, a)
	cred, err := a.CreateCredential(ctx, p, credentials.CreateParams{})
	if err != nil {
		t.Fatal(err)
	}
	token := *cred.Token
	node, err := a.Host().Tunnels().RegisterNode(ctx, agents.NodeParams{Addr: "10.0.0.1:4443"})
	if err != nil {
		t.Fatal(err)
	}
	params := agentParams
	params.Node = node.ID
	var (
		mu     sync.Mutex
		opened int
		wg     sync.WaitGroup
	)
	for i := range 40 {
		svc := []*edgeplane.Service{a, b}[i%2]
		wg.Go(func() {
			_, err := svc.Host().Tunnels().OpenTunnelSession(ctx, token, params)
			switch code := apierr.CodeOf(err); {
			case err == nil:
				mu.Lock()
				opened++
				mu.Unlock()
			case code != apierr.ResourceExhausted && code != apierr.Conflict:
				t.Errorf("an open past the limit: %v; want resource exhausted (or a conflict to retry)", err)
			}
		})
	}
	wg.Wait()
	if opened != 5 {
		t.Errorf("%d sessions opened under a limit of 5", opened)
	}
	page, err := b.ListTunnelSessions(ctx, p, edgeplane.ListOptions{})
	if err != nil || len(page.Items) != 5 {
		t.Fatalf("sessions stored: %v, %v; want 5", page, err)
	}
}
