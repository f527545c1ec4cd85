package tunnel_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/tunnel"
)

// secondServer starts another tunnel Server (another edge node) on e's
// store, with e's certificate, and returns it and its address.
func (e *env) secondServer(t *testing.T, opts tunnel.Options) (*tunnel.Server, string) {
	t.Helper()
	if opts.Host == nil {
		opts.Host = e.svc.Host().Tunnels()
	}
	opts.Feed = e.st
	opts.TLSConfig = &tls.Config{Certificates: []tls.Certificate{e.cert}}
	srv, err := tunnel.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return srv, ln.Addr().String()
}

// TestServerIsANode: a Server registers a node with its hop address,
// its sessions name it, it renews the node's one lease (not one per
// session), and Close removes the node.
func TestServerIsANode(t *testing.T) {
	e := newEnv(t, tunnel.Options{NodeAddr: "10.0.0.1:7443", RenewInterval: 20 * time.Millisecond, Region: "eu"})
	n, err := e.svc.Host().Nodes().GetNode(e.ctx, e.srv.Node())
	if err != nil {
		t.Fatal(err)
	}
	if n.Addr != "10.0.0.1:7443" || n.Region != "eu" {
		t.Errorf("the node %+v; want its hop address and region", n)
	}
	_, token := e.token(t)
	// A hand-made agent: Close ends its session, which the SDK would
	// reconnect (see noReconnect).
	if r := dialRaw(t, e).auth(t, token, "", ""); r.Error != "" {
		t.Fatalf("Auth: %+v", r)
	}
	page, err := e.svc.ListTunnelSessions(e.ctx, e.admin, edgeplane.ListOptions{})
	if err != nil || len(page.Items) != 1 {
		t.Fatalf("sessions: %+v, %v", page, err)
	}
	if ts := page.Items[0]; ts.Node != e.srv.Node() {
		t.Errorf("the session names node %q, want the server's %q", ts.Node, e.srv.Node())
	}
	rev, err := e.st.Revision(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := eventually(2*time.Second, func() bool {
		m, err := e.svc.Host().Nodes().GetNode(e.ctx, e.srv.Node())
		return err == nil && m.ExpiresAt.After(n.ExpiresAt)
	}); !ok {
		t.Fatal("the node's lease was not renewed")
	}
	changes, err := e.st.Changes(e.ctx, rev, 100, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range changes {
		if c.ID != e.srv.Node() {
			t.Errorf("a renewal wrote %s %s; want the node's record alone", c.Kind, c.ID)
		}
	}
	node := e.srv.Node()
	e.srv.Close()
	if _, err = e.svc.Host().Nodes().GetNode(e.ctx, node); !errors.Is(err, apierr.ErrNotFound) {
		t.Errorf("the node after Close: %v; want not found", err)
	}
	if page, err := e.svc.ListTunnelSessions(e.ctx, e.admin, edgeplane.ListOptions{}); err != nil || len(page.Items) != 0 {
		t.Errorf("sessions after Close: %+v, %v; want none (removed with the node)", page, err)
	}
}

// TestNodeLeaseLost: a Server whose node is gone from the store (its
// lease ended and it was reaped while the store was out of its reach)
// closes its sessions, registers a new node, and the agents that
// reconnect are held under it.
func TestNodeLeaseLost(t *testing.T) {
	e := newEnv(t, tunnel.Options{RenewInterval: 20 * time.Millisecond})
	_, token := e.token(t)
	first := dialRaw(t, e)
	if r := first.auth(t, token, "", ""); r.Error != "" {
		t.Fatalf("Auth: %+v", r)
	}
	old := e.srv.Node()
	if err := e.svc.Host().Tunnels().RemoveNode(e.ctx, old); err != nil {
		t.Fatal(err)
	}
	if !first.closed(2 * time.Second) {
		t.Fatal("a session of the lost node is still open")
	}
	if _, ok := eventually(2*time.Second, func() bool { return e.srv.Node() != old }); !ok {
		t.Fatal("no new node registered")
	}
	again := dialRaw(t, e)
	r := again.auth(t, token, "", "")
	if r.Error != "" {
		t.Fatalf("Auth on the new node: %+v", r)
	}
	ts, err := e.svc.Host().Tunnels().GetTunnelSession(e.ctx, e.admin.AccountID, r.ClientID)
	if err != nil || ts.Node != e.srv.Node() {
		t.Errorf("the new session %+v, %v; want node %s", ts, err, e.srv.Node())
	}
}

// TestTakeoverAcrossNodes: an agent whose node dies (its connection cut,
// its node not renewing) reconnects to another node with its session's
// cookie and its endpoint's token: the old session is removed at once,
// not after the dead node's lease, and the endpoint is bound again under
// its ID and URL, held by the new node.
func TestTakeoverAcrossNodes(t *testing.T) {
	e := newEnv(t, tunnel.Options{})
	e.reserve(t, "app.example.com")
	_, token := e.token(t)
	other, otherAddr := e.secondServer(t, tunnel.Options{})
	if other.Node() == e.srv.Node() {
		t.Fatal("two servers share a node")
	}

	first := dialRaw(t, e)
	r1 := first.auth(t, token, "", "")
	if r1.Error != "" {
		t.Fatalf("Auth: %+v", r1)
	}
	b1 := first.bind(t, "", "", "app.example.com")
	if b1.Error != "" {
		t.Fatalf("Bind: %+v", b1)
	}

	// The agent on the other node, resuming: node A's session is gone at
	// once, its endpoint bound again on node B.
	second := dialRawTo(t, e, otherAddr)
	r2 := second.auth(t, token, r1.ClientID, r1.Extra.Cookie)
	if r2.Error != "" {
		t.Fatalf("the resuming Auth on node B: %+v", r2)
	}
	if !first.closed(2 * time.Second) {
		t.Fatal("node A still holds the session taken over")
	}
	b2 := second.bind(t, b1.ID, b1.Extra.Token, "app.example.com")
	if b2.Error != "" || b2.ID != b1.ID || b2.URL != b1.URL {
		t.Fatalf("the rebind on node B: %+v; want %s at %s", b2, b1.ID, b1.URL)
	}
	ep, err := e.svc.Host().Tunnels().GetEndpoint(e.ctx, e.admin.AccountID, b1.ID)
	if err != nil || ep.Node != other.Node() || ep.TunnelSession.ID != r2.ClientID {
		t.Errorf("the endpoint after the takeover: %+v, %v; want node %s, session %s", ep, err, other.Node(), r2.ClientID)
	}
	if _, err := e.svc.Host().Tunnels().GetTunnelSession(e.ctx, e.admin.AccountID, r1.ClientID); !errors.Is(err, apierr.ErrNotFound) {
		t.Errorf("the old session: %v; want not found", err)
	}
	// Node B serves the endpoint; node A refuses it.
	if _, err := e.srv.DialTunnel(e.ctx, e.srv.Node(), b1.ID, agents.ConnHeader{ClientAddr: clientAddr, Proto: "http"}); err == nil {
		t.Error("node A dialed an endpoint it no longer holds")
	}
}

// slowOpenHost is a Host whose OpenTunnelSession waits for release once
// entered (entered is sent then), and sends the session it opened on
// opened.
type slowOpenHost struct {
	tunnel.Host
	entered, release chan struct{}
	opened           chan string
}

func (h *slowOpenHost) OpenTunnelSession(ctx context.Context, token string, params agents.SessionParams) (*agents.TunnelSession, error) {
	h.entered <- struct{}{}
	<-h.release
	ts, err := h.Host.OpenTunnelSession(ctx, token, params)
	if err == nil {
		h.opened <- ts.ID
	}
	return ts, err
}

// TestCloseDuringAuth: a connection that closes while its Auth is with
// the Host is neither counted nor kept: its session's record, created
// meanwhile, is removed.
func TestCloseDuringAuth(t *testing.T) {
	e := newEnv(t, tunnel.Options{})
	_, token := e.token(t)
	h := &slowOpenHost{Host: e.svc.Host().Tunnels(), entered: make(chan struct{}, 1), release: make(chan struct{}), opened: make(chan string, 1)}
	m := tunnel.NewMetrics()
	srv, addr := e.secondServer(t, tunnel.Options{Host: h, Metrics: m})
	a := dialRawTo(t, e, addr)
	// The Auth, whose answer is never read: the connection closes first.
	str, err := a.mux.OpenTypedStream(0)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.NewEncoder(str).Encode(map[string]any{"Version": []string{"3", "2"},
		"Extra": map[string]any{"Authtoken": token, "Version": "raw", "ClientType": "test"}}); err != nil {
		t.Fatal(err)
	}
	<-h.entered
	a.mux.Close()
	a.tc.Close()
	if _, ok := eventually(2*time.Second, func() bool { return tunnel.Conns(srv) == 0 }); !ok {
		t.Fatal("the server did not see the connection close")
	}
	close(h.release)
	id := <-h.opened
	// Its record is removed once the Auth saw the close, after anything
	// the Auth would count.
	if _, ok := eventually(2*time.Second, func() bool {
		_, err := e.svc.Host().Tunnels().GetTunnelSession(e.ctx, e.admin.AccountID, id)
		return errors.Is(err, apierr.ErrNotFound)
	}); !ok {
		t.Fatal("the session of a connection closed during its Auth is still recorded")
	}
	if n, held := m.Sessions(), tunnel.Sessions(srv); n != 0 || held != 0 {
		t.Errorf("%d sessions counted, %d held; want none", n, held)
	}
}
