package tunnel_test

import (
	"crypto/tls"
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
	opts.Host, opts.Feed = e.svc.Host(), e.st
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
	n, err := e.svc.Host().GetNode(e.ctx, e.srv.Node())
	if err != nil {
		t.Fatal(err)
	}
	if n.Addr != "10.0.0.1:7443" || n.Region != "eu" {
		t.Errorf("the node %+v; want its hop address and region", n)
	}
	_, token := e.token(t)
	e.connect(t, e.addr, token)
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
		m, err := e.svc.Host().GetNode(e.ctx, e.srv.Node())
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
	if _, err = e.svc.Host().GetNode(e.ctx, node); !errors.Is(err, apierr.ErrNotFound) {
		t.Errorf("the node after Close: %v; want not found", err)
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
	if err := e.svc.Host().RemoveNode(e.ctx, old); err != nil {
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
	ts, err := e.svc.Host().GetTunnelSession(e.ctx, e.admin.AccountID, r.ClientID)
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
	ep, err := e.svc.Host().GetEndpoint(e.ctx, e.admin.AccountID, b1.ID)
	if err != nil || ep.Node != other.Node() || ep.TunnelSession.ID != r2.ClientID {
		t.Errorf("the endpoint after the takeover: %+v, %v; want node %s, session %s", ep, err, other.Node(), r2.ClientID)
	}
	if _, err := e.svc.Host().GetTunnelSession(e.ctx, e.admin.AccountID, r1.ClientID); !errors.Is(err, apierr.ErrNotFound) {
		t.Errorf("the old session: %v; want not found", err)
	}
	// Node B serves the endpoint; node A refuses it.
	if _, err := e.srv.DialTunnel(e.ctx, e.srv.Node(), b1.ID, agents.ConnHeader{ClientAddr: clientAddr, Proto: "http"}); err == nil {
		t.Error("node A dialed an endpoint it no longer holds")
	}
}
