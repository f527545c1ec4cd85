package proxy

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/credentials"
	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/ipaccess"
	"github.com/edgeplane/edgeplane/memstore"
)

// waitPorts waits until changed is closed; it fails the test after 10 s.
func waitPorts(t *testing.T, changed <-chan struct{}) {
	t.Helper()
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("the TCP ports did not change")
	}
}

// TestStreamEdgesFollowTheStore: TLS and TCP edges are loaded at start
// and followed like HTTPS edges: found by host (TLS) or port (TCP),
// recompiled when their modules or the IP policies they use change,
// given their backend's tunnels as dial addresses, and removed when
// deleted; the TCP ports' channel announces each change of the ports.
func TestStreamEdgesFollowTheStore(t *testing.T) {
	w := newWorld(t, memstore.New())
	ca := newTestCA(t)
	dom := w.reserve(w.a, "tls.example.com")
	w.reserve(w.a, "db.example.com")
	w.reserve(w.b, "other.example.com")
	serial := w.attachCert(w.a, ca, dom, "tls.example.com")
	ipp := w.ipPolicy()
	bk, err := w.api.CreateTunnelGroupBackend(w.ctx, w.a, backends.CreateParams{Labels: map[string]string{"app": "db"}})
	w.check(err)
	tlsEdge, err := w.api.CreateTLSEdge(w.ctx, w.a, edges.CreateTLSEdgeParams{Hostports: []string{"tls.example.com:443"},
		IPRestriction: &edges.IPRestrictionParams{IPPolicyIDs: []string{ipp}}, Backend: &edges.BackendParams{BackendID: bk.ID}})
	w.check(err)

	h := newHooks(w.api.Host())
	c := w.start(w.api.Host(), w.st, h, Options{})

	// Loaded at start, by ID and by host; not an HTTPS edge.
	e := c.Edge(w.a.AccountID, tlsEdge.ID)
	if e == nil || e.TLS == nil || e.Config != nil || e.TCP != nil || e.ID() != tlsEdge.ID || e.AccountID() != w.a.AccountID {
		t.Fatalf("TLS edge snapshot %+v", e)
	}
	if c.Edge(w.b.AccountID, tlsEdge.ID) != nil {
		t.Error("another account finds the TLS edge")
	}
	if got := c.EdgeByHost("tls.example.com"); got != e {
		t.Errorf("EdgeByHost(tls.example.com) = %v, want the TLS edge", got)
	}
	if cert := c.Certificate("tls.example.com"); cert == nil || cert.Leaf.SerialNumber.Int64() != serial {
		t.Errorf("the TLS edge's host has certificate %v, want serial %d", cert, serial)
	}
	if e.TLS.IPRestriction == nil || !slices.Equal(e.TLS.IPRestriction.PolicyIDs, []string{ipp}) {
		t.Errorf("IP restriction %+v", e.TLS.IPRestriction)
	}
	if e.stream == nil || len(e.stream.upstreams) != 0 || e.stream.noUpstream == "" {
		t.Errorf("stream pool without tunnels: %+v", e.stream)
	}
	ports, changed := c.TCPPorts()
	if len(ports) != 0 {
		t.Errorf("TCP ports %v, want none", ports)
	}

	// A TCP edge appears: its port is announced and served.
	tcpEdge, err := w.api.CreateTCPEdge(w.ctx, w.a, edges.CreateTCPEdgeParams{Hostports: []string{"db.example.com:15432"},
		Backend: &edges.BackendParams{BackendID: bk.ID}})
	w.check(err)
	waitPorts(t, changed)
	w.applied(c)
	ports, changed = c.TCPPorts()
	if !slices.Equal(ports, []int{15432}) {
		t.Errorf("TCP ports %v, want [15432]", ports)
	}
	te := c.EdgeByPort(15432)
	if te == nil || te.TCP == nil || te.ID() != tcpEdge.ID {
		t.Fatalf("EdgeByPort(15432) = %+v", te)
	}
	for _, port := range []int{15433, 0, -1, 70000} {
		if c.EdgeByPort(port) != nil {
			t.Errorf("EdgeByPort(%d) finds an edge", port)
		}
	}
	if c.EdgeByHost("db.example.com") != nil {
		t.Error("a TCP edge's host is served as an HTTPS or TLS host")
	}

	// A tunnel of the backend: both edges get its address, no compile.
	cred, err := w.api.CreateCredential(w.ctx, w.a, credentials.CreateParams{ACL: []string{"bind:app=db"}})
	w.check(err)
	before, _ := h.counts()
	tn, err := w.api.Host().RegisterTunnel(w.ctx, *cred.Token, backends.RegisterTunnelParams{Labels: map[string]string{"app": "db"}, ForwardsTo: "tcp://127.0.0.1:5432"})
	w.check(err)
	w.applied(c)
	for _, id := range []string{tlsEdge.ID, tcpEdge.ID} {
		e := c.Edge(w.a.AccountID, id)
		if len(e.stream.upstreams) != 1 || e.stream.upstreams[0].addr != "127.0.0.1:5432" || e.stream.upstreams[0].tunnelID != tn.ID {
			t.Errorf("edge %s upstreams %+v, want %s at 127.0.0.1:5432", id, e.stream.upstreams, tn.ID)
		}
	}
	after, _ := h.counts()
	wantCompiles(t, before, after, nil)

	// The TCP edge uses the IP policy too: a rule change recompiles both.
	_, err = w.api.ReplaceTCPEdgeIPRestriction(w.ctx, w.a, tcpEdge.ID, edges.IPRestrictionParams{IPPolicyIDs: []string{ipp}})
	w.check(err)
	w.applied(c)
	before, _ = h.counts()
	_, err = w.api.CreateIPPolicyRule(w.ctx, w.a, ipaccess.CreateRuleParams{IPPolicyID: ipp, CIDR: "203.0.113.0/24", Action: "allow"})
	w.check(err)
	w.applied(c)
	after, _ = h.counts()
	wantCompiles(t, before, after, map[string]int{tlsEdge.ID: 1, tcpEdge.ID: 1})

	// Moving the TCP edge to another port, then deleting it.
	hps := []string{"db.example.com:15433"}
	_, err = w.api.UpdateTCPEdge(w.ctx, w.a, tcpEdge.ID, edges.UpdateTCPEdgeParams{Hostports: &hps})
	w.check(err)
	waitPorts(t, changed)
	w.applied(c)
	ports, changed = c.TCPPorts()
	if !slices.Equal(ports, []int{15433}) || c.EdgeByPort(15432) != nil || c.EdgeByPort(15433) == nil {
		t.Errorf("after moving: ports %v, 15432 %v, 15433 %v", ports, c.EdgeByPort(15432), c.EdgeByPort(15433))
	}
	w.check(w.api.DeleteTCPEdge(w.ctx, w.a, tcpEdge.ID))
	waitPorts(t, changed)
	w.applied(c)
	if ports, _ := c.TCPPorts(); len(ports) != 0 || c.EdgeByPort(15433) != nil || c.Edge(w.a.AccountID, tcpEdge.ID) != nil {
		t.Errorf("after deleting: ports %v", ports)
	}

	// The HTTPS handler does not serve a TLS edge's host.
	hd := NewHandler(c, HandlerOptions{})
	rec := httptest.NewRecorder()
	hd.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://tls.example.com/", nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("HTTP request for a TLS edge's host: %d, want 404", rec.Code)
	}
	if s := c.Stats(); s.Edges != 4 {
		t.Errorf("stats %+v, want 4 edges (3 HTTPS, 1 TLS)", s)
	}
	w.check(w.api.DeleteTLSEdge(w.ctx, w.a, tlsEdge.ID))
	w.applied(c)
	if c.EdgeByHost("tls.example.com") != nil || c.Edge(w.a.AccountID, tlsEdge.ID) != nil {
		t.Error("the deleted TLS edge is still served")
	}
}

func TestTunnelAddr(t *testing.T) {
	for _, tc := range []struct {
		in, want string // want "": not an upstream
	}{
		{"tcp://127.0.0.1:5432", "127.0.0.1:5432"},
		{"tls://db.internal:6000/", "db.internal:6000"},
		{"http://127.0.0.1", "127.0.0.1:80"},
		{"https://app.internal", "app.internal:443"},
		{"http://[::1]:8080", "[::1]:8080"},
		{"tcp://127.0.0.1", ""},
		{"tcp://:22", ""},
		{"tcp://h:0", ""},
		{"tcp://h:65536", ""},
		{"tcp://h:22/x", ""},
		{"tcp://u@h:22", ""},
		{"ssh://h:22", ""},
		{"127.0.0.1:22", ""},
		{"", ""},
	} {
		got, ok := tunnelAddr(tc.in)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("tunnelAddr(%q) = %q, %v; want %q", tc.in, got, ok, tc.want)
		}
	}
}

// TestUnreadableRestrictionsFailClosed: when an account's IP restrictions
// cannot be read as restrictions (a failed precondition: more than the
// cap, from a store written by other code), its edges stay served and
// refuse every client; once a change to the account's restrictions reads
// them again, traffic goes on.
func TestUnreadableRestrictionsFailClosed(t *testing.T) {
	w := newWorld(t, memstore.New())
	w.reserve(w.a, "a.example.com")
	w.serveHosts(w.a, w.a1, "a.example.com:443")
	var broken atomic.Bool
	broken.Store(true)
	var o Options
	o.restrict = func(ctx context.Context, accountID string) (*edgeplane.EndpointRestrictions, error) {
		if broken.Load() && accountID == w.a.AccountID {
			return nil, apierr.New(apierr.FailedPrecondition, "the account has more than 100 IP restrictions")
		}
		return w.api.Host().DataPlane().EndpointRestrictions(ctx, accountID)
	}
	c := w.start(w.api.Host(), w.st, newHooks(w.api.Host()), o)
	h := NewHandler(c, HandlerOptions{})
	status := func() int {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://a.example.com/", nil))
		return rec.Code
	}
	if c.Edge(w.a.AccountID, w.a1) == nil || c.Edge(w.b.AccountID, w.b1) == nil {
		t.Fatal("the edges are not served")
	}
	if code := status(); code != http.StatusForbidden {
		t.Errorf("with unreadable restrictions: %d, want 403", code)
	}
	broken.Store(false)
	ipp := w.ipPolicy()
	_, err := w.api.CreateIPRestriction(w.ctx, w.a, ipaccess.CreateRestrictionParams{Type: ipaccess.TypeAPI, IPPolicyIDs: []string{ipp}})
	w.check(err)
	w.applied(c)
	if code := status(); code != http.StatusServiceUnavailable { // a1's route has no tunnel
		t.Errorf("after the restrictions read again: %d, want 503 from the route", code)
	}
}
