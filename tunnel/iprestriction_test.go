package tunnel_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/ipaccess"
	"github.com/edgeplane/edgeplane/tunnel"
	"golang.ngrok.com/ngrok"
)

// TestAgentIPRestrictions: an enforced IP restriction of type agent
// refuses the SDK's agent at connect, with the error code and the
// restriction named; sessions held on two nodes of the store when a rule
// of the restriction's policy starts to refuse their address are closed
// within a second, on both nodes; a restriction that is not enforced
// lets the agent in.
func TestAgentIPRestrictions(t *testing.T) {
	e := newEnv(t, tunnel.Options{})
	_, addr2 := e.secondServer(t, tunnel.Options{})
	_, token := e.token(t)
	pol, err := e.svc.CreateIPPolicy(e.ctx, e.admin, ipaccess.CreatePolicyParams{Description: "not loopback"})
	if err != nil {
		t.Fatal(err)
	}
	// An allow list without loopback: 127.0.0.1 is refused.
	if _, err := e.svc.CreateIPPolicyRule(e.ctx, e.admin, ipaccess.CreateRuleParams{IPPolicyID: pol.ID, CIDR: "192.0.2.0/24", Action: ipaccess.ActionAllow}); err != nil {
		t.Fatal(err)
	}
	// Not enforced: agents connect, on both nodes.
	x, err := e.svc.CreateIPRestriction(e.ctx, e.admin, ipaccess.CreateRestrictionParams{Type: ipaccess.TypeAgent, IPPolicyIDs: []string{pol.ID}})
	if err != nil {
		t.Fatal(err)
	}
	held := []*rawAgent{dialRawTo(t, e, e.addr), dialRawTo(t, e, addr2)}
	for i, a := range held {
		if r := a.auth(t, token, "", ""); r.Error != "" {
			t.Fatalf("agent %d under a restriction that is not enforced: %+v", i, r)
		}
	}
	counts := e.svc.IPRestrictionCounts()
	if c := counts[indexOf(ipaccess.TypeAgent)]; c.Warned != 2 || c.Refused != 0 {
		t.Errorf("agent decisions %+v; want 2 warned", c)
	}

	// Enforced: both held sessions are refused now, and closed by the
	// node that holds each.
	enforced := true
	start := time.Now()
	if _, err := e.svc.UpdateIPRestriction(e.ctx, e.admin, x.ID, ipaccess.UpdateRestrictionParams{Enforced: &enforced}); err != nil {
		t.Fatal(err)
	}
	for i, a := range held {
		if !a.closed(time.Second) {
			t.Fatalf("agent %d's session is still open %v after the restriction was enforced", i, time.Since(start))
		}
	}
	t.Logf("both sessions closed %v after the restriction was enforced", time.Since(start))

	// A new agent is refused at Auth, with the code and the restriction.
	_, err = ngrok.Connect(context.Background(), ngrok.WithServer(e.addr), ngrok.WithCA(e.pool), ngrok.WithAuthtoken(token),
		ngrok.WithDisconnectHandler(func(_ context.Context, s ngrok.Session, _ error) { s.Close() }))
	if err == nil || !strings.Contains(err.Error(), "ERR_SERVICE_104") || !strings.Contains(err.Error(), x.ID) ||
		!strings.Contains(err.Error(), "127.0.0.1") {
		t.Errorf("connecting from a refused address: %v; want ERR_SERVICE_104 naming %s and 127.0.0.1", err, x.ID)
	}
	if r := dialRawTo(t, e, addr2).auth(t, token, "", ""); !strings.Contains(r.Error, "ERR_SERVICE_104") {
		t.Errorf("on the second node: %+v; want refused", r)
	}

	// A rule that allows loopback lets agents in again; one that takes
	// it back closes what it let in, on the node that holds it.
	rule, err := e.svc.CreateIPPolicyRule(e.ctx, e.admin, ipaccess.CreateRuleParams{IPPolicyID: pol.ID, CIDR: "127.0.0.0/8", Action: ipaccess.ActionAllow})
	if err != nil {
		t.Fatal(err)
	}
	a := dialRawTo(t, e, addr2)
	if r := a.auth(t, token, "", ""); r.Error != "" {
		t.Fatalf("with loopback allowed: %+v", r)
	}
	start = time.Now()
	if err := e.svc.DeleteIPPolicyRule(e.ctx, e.admin, rule.ID); err != nil {
		t.Fatal(err)
	}
	if !a.closed(time.Second) {
		t.Fatalf("the session is still open %v after its address's rule was deleted", time.Since(start))
	}
	if _, ok := eventually(time.Second, func() bool { return e.m.Sessions() == 0 }); !ok {
		t.Errorf("%d sessions on the first node; want none", e.m.Sessions())
	}
	if c := e.svc.IPRestrictionCounts()[indexOf(ipaccess.TypeAgent)]; c.Refused != 2 {
		t.Errorf("agent decisions %+v; want the 2 refusals at Auth", c)
	}
}

// indexOf returns the index of typ in ipaccess.Types.
func indexOf(typ string) int {
	for i, t := range ipaccess.Types {
		if t == typ {
			return i
		}
	}
	return -1
}
