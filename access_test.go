package edgeplane_test

import (
	"context"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/ipaccess"
)

// TestIPRestrictionsAcrossReplicas: the checks of IP restrictions of one
// replica follow another's writes at once (the access cache is dropped by
// the change feed and a check waits for it as every cached read does):
// a restriction created, a rule deleted and added, enforcement turned
// off, each decided right after the other replica's write returned.
func TestIPRestrictionsAcrossReplicas(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "store.db")
	a, b := replicaOf(t, path), replicaOf(t, path)
	p := newAdmin(t, a)
	refused, allowed := netip.MustParseAddr("198.51.100.7"), netip.MustParseAddr("192.0.2.1")
	check := func(step string, ip netip.Addr, wantRefusedBy string) {
		t.Helper()
		// Via Fence, as the API's transport calls it.
		err := b.CheckIPRestrictions(b.Fence(ctx), p, ipaccess.TypeAPI, ip)
		switch {
		case wantRefusedBy == "" && err != nil:
			t.Fatalf("%s: %s refused: %v", step, ip, err)
		case wantRefusedBy != "" && (apierr.CodeOf(err) != apierr.PermissionDenied || !strings.Contains(err.Error(), wantRefusedBy)):
			t.Fatalf("%s: %s: %v; want permission denied naming %s", step, ip, err, wantRefusedBy)
		}
	}
	pol, err := a.CreateIPPolicy(ctx, p, ipaccess.CreatePolicyParams{})
	if err != nil {
		t.Fatal(err)
	}
	rule, err := a.CreateIPPolicyRule(ctx, p, ipaccess.CreateRuleParams{IPPolicyID: pol.ID, CIDR: "198.51.100.0/24", Action: ipaccess.ActionDeny})
	if err != nil {
		t.Fatal(err)
	}
	check("no restriction yet", refused, "") // b caches "none"
	x, err := a.CreateIPRestriction(ctx, p, ipaccess.CreateRestrictionParams{Type: ipaccess.TypeAPI, Enforced: true, IPPolicyIDs: []string{pol.ID}})
	if err != nil {
		t.Fatal(err)
	}
	check("restriction created", refused, x.ID)
	check("restriction created", allowed, "")
	if err := a.DeleteIPPolicyRule(ctx, p, rule.ID); err != nil {
		t.Fatal(err)
	}
	check("rule deleted", refused, "")
	if _, err := a.CreateIPPolicyRule(ctx, p, ipaccess.CreateRuleParams{IPPolicyID: pol.ID, CIDR: "198.51.100.7", Action: ipaccess.ActionDeny}); err != nil {
		t.Fatal(err)
	}
	check("rule added", refused, x.ID)
	off := false
	if _, err := a.UpdateIPRestriction(ctx, p, x.ID, ipaccess.UpdateRestrictionParams{Enforced: &off}); err != nil {
		t.Fatal(err)
	}
	check("not enforced", refused, "")
	if c := b.IPRestrictionCounts()[1]; c.Type != ipaccess.TypeAPI || c.Refused != 2 || c.Warned != 1 {
		t.Errorf("b's api decisions %+v; want 2 refused and 1 warned", c)
	}
	// Other types, and other accounts, are not concerned.
	if err := b.CheckIPRestrictions(ctx, p, ipaccess.TypeDashboard, refused); err != nil {
		t.Errorf("a dashboard check under an api restriction: %v", err)
	}
}

// TestIPRestrictionSelfLockout: an enforced api restriction that would
// refuse the address of the call writing it is refused, naming enforced,
// and nothing is written; written not enforced, it cannot be enforced
// from that address either, but can from an allowed one. A call with no
// address (a Go program's) is not checked.
func TestIPRestrictionSelfLockout(t *testing.T) {
	e := newEnv(t)
	s, p, ctx := e.svc, e.admin, e.ctx
	pol, err := s.CreateIPPolicy(ctx, p, ipaccess.CreatePolicyParams{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateIPPolicyRule(ctx, p, ipaccess.CreateRuleParams{IPPolicyID: pol.ID, CIDR: "198.51.100.0/24", Action: ipaccess.ActionAllow}); err != nil {
		t.Fatal(err)
	}
	from := func(ip string) edgeplane.Principal { q := p; q.ClientIP = netip.MustParseAddr(ip); return q }
	params := ipaccess.CreateRestrictionParams{Type: ipaccess.TypeAPI, Enforced: true, IPPolicyIDs: []string{pol.ID}}
	_, err = s.CreateIPRestriction(ctx, from("192.0.2.1"), params)
	wantViolation(t, err, "enforced", "lock the account out of the API")
	if page, err := s.ListIPRestrictions(ctx, p, edgeplane.ListOptions{}); err != nil || len(page.Items) != 0 {
		t.Fatalf("restrictions after the refusal: %+v, %v; want none", page, err)
	}
	// Restrictions of other types, or not enforced, may refuse the caller.
	for _, params := range []ipaccess.CreateRestrictionParams{
		{Type: ipaccess.TypeAgent, Enforced: true, IPPolicyIDs: []string{pol.ID}},
		{Type: ipaccess.TypeAPI, Enforced: false, IPPolicyIDs: []string{pol.ID}},
	} {
		if _, err := s.CreateIPRestriction(ctx, from("192.0.2.1"), params); err != nil {
			t.Fatalf("%+v: %v", params, err)
		}
	}
	page, err := s.ListIPRestrictions(ctx, p, edgeplane.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	x := page.Items[0] // the api one, newest first
	on := true
	_, err = s.UpdateIPRestriction(ctx, from("::ffff:192.0.2.1"), x.ID, ipaccess.UpdateRestrictionParams{Enforced: &on})
	wantViolation(t, err, "enforced", "lock the account out of the API")
	if got, err := s.GetIPRestriction(ctx, p, x.ID); err != nil || got.Enforced {
		t.Fatalf("after the refused update: %+v, %v; want not enforced", got, err)
	}
	if _, err := s.UpdateIPRestriction(ctx, from("198.51.100.9"), x.ID, ipaccess.UpdateRestrictionParams{Enforced: &on}); err != nil {
		t.Fatalf("enforcing from an allowed address: %v", err)
	}
	if _, err := s.CreateIPRestriction(ctx, p, params); err != nil {
		t.Fatalf("a call with no address: %v", err)
	}
}

// BenchmarkCheckIPRestrictions: what every API request adds, from the
// access cache: an account with no api restriction, and one with an
// enforced restriction of 1,000 rules that lets the address through.
func BenchmarkCheckIPRestrictions(b *testing.B) {
	ip := netip.MustParseAddr("192.0.2.1")
	b.Run("none", func(b *testing.B) {
		e := newEnv(b)
		b.ReportAllocs()
		for b.Loop() {
			if err := e.svc.CheckIPRestrictions(e.ctx, e.admin, ipaccess.TypeAPI, ip); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("1000rules", func(b *testing.B) {
		e := newEnv(b)
		pol, err := e.svc.CreateIPPolicy(e.ctx, e.admin, ipaccess.CreatePolicyParams{})
		if err != nil {
			b.Fatal(err)
		}
		for i := range ipaccess.MaxRulesPerPolicy {
			cidr := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), 0}), 24).String()
			if _, err := e.svc.CreateIPPolicyRule(e.ctx, e.admin, ipaccess.CreateRuleParams{IPPolicyID: pol.ID, CIDR: cidr, Action: ipaccess.ActionDeny}); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := e.svc.CreateIPRestriction(e.ctx, e.admin, ipaccess.CreateRestrictionParams{Type: ipaccess.TypeAPI, Enforced: true, IPPolicyIDs: []string{pol.ID}}); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if err := e.svc.CheckIPRestrictions(e.ctx, e.admin, ipaccess.TypeAPI, ip); err != nil {
				b.Fatal(err)
			}
		}
	})
}
