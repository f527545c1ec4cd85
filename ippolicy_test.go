package edgeplane_test

import (
	"errors"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/ipaccess"
	"github.com/edgeplane/edgeplane/resource"
	"github.com/edgeplane/edgeplane/store"
	"github.com/google/go-cmp/cmp"
)

func (e *env) policy(t *testing.T, p edgeplane.Principal, rules ...[2]string) *ipaccess.Policy {
	t.Helper()
	pol, err := e.svc.CreateIPPolicy(e.ctx, p, ipaccess.CreatePolicyParams{Description: "office"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rules {
		if _, err := e.svc.CreateIPPolicyRule(e.ctx, p, ipaccess.CreateRuleParams{IPPolicyID: pol.ID, CIDR: r[0], Action: r[1]}); err != nil {
			t.Fatal(err)
		}
	}
	return pol
}

func TestIPPolicyCRUD(t *testing.T) {
	e := newEnv(t)
	pol := e.policy(t, e.admin)
	if pol.URI != "https://api.example.test/ip_policies/"+pol.ID || pol.Description != "office" {
		t.Errorf("policy = %+v", pol)
	}
	got, err := e.svc.GetIPPolicy(e.ctx, e.admin, pol.ID)
	if err != nil || !cmp.Equal(pol, got) {
		t.Errorf("get = %+v, %v; want %+v", got, err, pol)
	}
	upd, err := e.svc.UpdateIPPolicy(e.ctx, e.admin, pol.ID, ipaccess.UpdatePolicyParams{Metadata: ptr("m")})
	if err != nil || upd.Metadata != "m" || upd.Description != "office" {
		t.Errorf("update = %+v, %v", upd, err)
	}
	_, err = e.svc.UpdateIPPolicy(e.ctx, e.admin, pol.ID, ipaccess.UpdatePolicyParams{Description: ptr(strings.Repeat("é", 128))})
	wantViolation(t, err, "description", "255 bytes")
	_, err = e.svc.CreateIPPolicy(e.ctx, e.admin, ipaccess.CreatePolicyParams{Metadata: strings.Repeat("x", 4097)})
	wantViolation(t, err, "metadata", "4096 bytes")
	page, err := e.svc.ListIPPolicies(e.ctx, e.admin, edgeplane.ListOptions{})
	if err != nil || len(page.Items) != 1 || page.URI != "https://api.example.test/ip_policies" {
		t.Errorf("list = %+v, %v", page, err)
	}
	_, err = e.svc.GetIPPolicy(e.ctx, e.other, pol.ID)
	wantCode(t, err, apierr.NotFound)
	if err := e.svc.DeleteIPPolicy(e.ctx, e.admin, pol.ID); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.GetIPPolicy(e.ctx, e.admin, pol.ID)
	wantCode(t, err, apierr.NotFound)
}

func TestIPPolicyRules(t *testing.T) {
	e := newEnv(t)
	pol := e.policy(t, e.admin)
	r, err := e.svc.CreateIPPolicyRule(e.ctx, e.admin, ipaccess.CreateRuleParams{
		IPPolicyID: pol.ID, CIDR: "10.1.2.3/8", Action: "allow", Description: "corp",
	})
	if err != nil {
		t.Fatal(err)
	}
	wantRule := &ipaccess.Rule{
		ID: r.ID, URI: "https://api.example.test/ip_policy_rules/" + r.ID, CreatedAt: r.CreatedAt,
		Description: "corp", CIDR: "10.0.0.0/8", Action: "allow",
		IPPolicy: resource.Ref{ID: pol.ID, URI: "https://api.example.test/ip_policies/" + pol.ID},
	}
	if diff := cmp.Diff(wantRule, r); diff != "" {
		t.Errorf("create rule (-want +got):\n%s", diff)
	}
	got, err := e.svc.GetIPPolicyRule(e.ctx, e.admin, r.ID)
	if diff := cmp.Diff(wantRule, got); err != nil || diff != "" {
		t.Errorf("get rule (%v) (-want +got):\n%s", err, diff)
	}
	upd, err := e.svc.UpdateIPPolicyRule(e.ctx, e.admin, r.ID, ipaccess.UpdateRuleParams{CIDR: ptr("2001:db8::1/32"), Action: ptr("deny")})
	if err != nil || upd.CIDR != "2001:db8::/32" || upd.Action != "deny" || upd.Description != "corp" {
		t.Errorf("update rule = %+v, %v", upd, err)
	}
	_, err = e.svc.UpdateIPPolicyRule(e.ctx, e.admin, r.ID, ipaccess.UpdateRuleParams{CIDR: ptr("nope")})
	wantViolation(t, err, "cidr", "")
	page, _ := e.svc.ListIPPolicyRules(e.ctx, e.admin, edgeplane.ListOptions{})
	if len(page.Items) != 1 {
		t.Errorf("list rules: %d items", len(page.Items))
	}

	for _, tc := range []struct {
		name   string
		params ipaccess.CreateRuleParams
		field  string
	}{
		{"bad cidr", ipaccess.CreateRuleParams{IPPolicyID: pol.ID, CIDR: "10.0.0.0/33", Action: "allow"}, "cidr"},
		{"bad action", ipaccess.CreateRuleParams{IPPolicyID: pol.ID, CIDR: "10.0.0.0/8", Action: "maybe"}, "action"},
		{"missing policy id", ipaccess.CreateRuleParams{CIDR: "10.0.0.0/8", Action: "allow"}, "ip_policy_id"},
		{"another account's policy", ipaccess.CreateRuleParams{IPPolicyID: e.policy(t, e.other).ID, CIDR: "10.0.0.0/8", Action: "allow"}, "ip_policy_id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.svc.CreateIPPolicyRule(e.ctx, e.admin, tc.params)
			wantViolation(t, err, tc.field, "")
		})
	}

	// Deleting the policy deletes its rules.
	if err := e.svc.DeleteIPPolicy(e.ctx, e.admin, pol.ID); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.GetIPPolicyRule(e.ctx, e.admin, r.ID)
	wantCode(t, err, apierr.NotFound)
	r2 := e.policy(t, e.admin, [2]string{"10.0.0.0/8", "allow"})
	page, _ = e.svc.ListIPPolicyRules(e.ctx, e.admin, edgeplane.ListOptions{})
	if err := e.svc.DeleteIPPolicyRule(e.ctx, e.admin, page.Items[0].ID); err != nil {
		t.Fatal(err)
	}
	if allowed, err := e.svc.CheckIP(e.ctx, e.admin, []string{r2.ID}, netip.MustParseAddr("8.8.8.8")); err != nil || !allowed {
		t.Errorf("policy with no rules: allowed=%v err=%v, want allowed", allowed, err)
	}
}

func TestCheckIP(t *testing.T) {
	e := newEnv(t)
	office := e.policy(t, e.admin, [2]string{"203.0.113.0/24", "allow"}, [2]string{"2001:db8::/32", "allow"})
	blocked := e.policy(t, e.admin, [2]string{"203.0.113.66/32", "deny"})
	denyOnly := e.policy(t, e.admin, [2]string{"198.51.100.0/24", "deny"})
	tests := []struct {
		name     string
		policies []string
		ip       string
		want     bool
	}{
		{"allowed by an allow rule", []string{office.ID}, "203.0.113.5", true},
		{"IPv6 allowed", []string{office.ID}, "2001:db8::42", true},
		{"IPv4-mapped IPv6 matches IPv4 rules", []string{office.ID}, "::ffff:203.0.113.5", true},
		{"unmatched with allow rules present", []string{office.ID}, "192.0.2.1", false},
		{"deny wins over allow", []string{office.ID, blocked.ID}, "203.0.113.66", false},
		{"deny-only set allows the rest", []string{denyOnly.ID}, "192.0.2.1", true},
		{"deny-only set denies its range", []string{denyOnly.ID}, "198.51.100.7", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := e.svc.CheckIP(e.ctx, e.admin, tc.policies, netip.MustParseAddr(tc.ip))
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("CheckIP(%s) = %v, want %v", tc.ip, got, tc.want)
			}
		})
	}
	_, err := e.svc.CheckIP(e.ctx, e.other, []string{office.ID}, netip.MustParseAddr("203.0.113.5"))
	wantCode(t, err, apierr.NotFound)
}

func TestIPRestrictions(t *testing.T) {
	e := newEnv(t)
	p1, p2 := e.policy(t, e.admin), e.policy(t, e.admin)
	r, err := e.svc.CreateIPRestriction(e.ctx, e.admin, ipaccess.CreateRestrictionParams{
		Description: "api only from office", Type: "api", IPPolicyIDs: []string{p1.ID},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := &ipaccess.Restriction{
		ID: r.ID, URI: "https://api.example.test/ip_restrictions/" + r.ID, CreatedAt: r.CreatedAt,
		Description: "api only from office", Enforced: false, Type: "api",
		IPPolicies: []resource.Ref{{ID: p1.ID, URI: "https://api.example.test/ip_policies/" + p1.ID}},
	}
	if diff := cmp.Diff(want, r); diff != "" {
		t.Errorf("create (-want +got):\n%s", diff)
	}

	upd, err := e.svc.UpdateIPRestriction(e.ctx, e.admin, r.ID, ipaccess.UpdateRestrictionParams{
		Enforced: ptr(true), IPPolicyIDs: &[]string{p2.ID, p1.ID},
	})
	if err != nil {
		t.Fatal(err)
	}
	want.Enforced = true
	want.IPPolicies = []resource.Ref{{ID: p2.ID, URI: "https://api.example.test/ip_policies/" + p2.ID}, want.IPPolicies[0]}
	if diff := cmp.Diff(want, upd); diff != "" {
		t.Errorf("update (-want +got):\n%s", diff)
	}
	got, _ := e.svc.GetIPRestriction(e.ctx, e.admin, r.ID)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("get after update (-want +got):\n%s", diff)
	}

	// type is not updatable; an update naming it changes nothing.
	_, err = e.svc.UpdateIPRestriction(e.ctx, e.admin, r.ID, ipaccess.UpdateRestrictionParams{Type: ptr("agent"), Enforced: ptr(false)})
	wantViolation(t, err, "type", "cannot be changed")

	// References must be the account's policies: the field names the ID.
	foreign := e.policy(t, e.other)
	_, err = e.svc.UpdateIPRestriction(e.ctx, e.admin, r.ID, ipaccess.UpdateRestrictionParams{IPPolicyIDs: &[]string{p1.ID, foreign.ID}})
	wantViolation(t, err, "ip_policy_ids[1]", foreign.ID)
	got, _ = e.svc.GetIPRestriction(e.ctx, e.admin, r.ID)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rejected updates changed the restriction (-want +got):\n%s", diff)
	}

	for _, tc := range []struct {
		name   string
		params ipaccess.CreateRestrictionParams
		field  string
	}{
		{"type missing", ipaccess.CreateRestrictionParams{IPPolicyIDs: []string{p1.ID}}, "type"},
		{"type unknown", ipaccess.CreateRestrictionParams{Type: "web", IPPolicyIDs: []string{p1.ID}}, "type"},
		{"no policies", ipaccess.CreateRestrictionParams{Type: "agent"}, "ip_policy_ids"},
		{"foreign policy", ipaccess.CreateRestrictionParams{Type: "agent", IPPolicyIDs: []string{foreign.ID}}, "ip_policy_ids[0]"},
		{"malformed policy id", ipaccess.CreateRestrictionParams{Type: "agent", IPPolicyIDs: []string{p1.ID, "ipp_x"}}, "ip_policy_ids[1]"},
		{"description 256 bytes", ipaccess.CreateRestrictionParams{Type: "agent", IPPolicyIDs: []string{p1.ID}, Description: strings.Repeat("a", 256)}, "description"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.svc.CreateIPRestriction(e.ctx, e.admin, tc.params)
			wantViolation(t, err, tc.field, "")
		})
	}
	page, _ := e.svc.ListIPRestrictions(e.ctx, e.admin, edgeplane.ListOptions{})
	if len(page.Items) != 1 || page.URI != "https://api.example.test/ip_restrictions" {
		t.Errorf("list after rejected creates = %+v", page)
	}
	for _, typ := range []string{"dashboard", "api", "agent", "endpoints"} {
		if _, err := e.svc.CreateIPRestriction(e.ctx, e.admin, ipaccess.CreateRestrictionParams{Type: typ, IPPolicyIDs: []string{p1.ID}}); err != nil {
			t.Errorf("type %s refused: %v", typ, err)
		}
	}

	// A referenced policy cannot be deleted; the conflict names the referrer.
	err = e.svc.DeleteIPPolicy(e.ctx, e.admin, p2.ID)
	wantCode(t, err, apierr.Conflict)
	if !strings.Contains(err.Error(), r.ID) || !strings.Contains(err.Error(), "IP restriction") {
		t.Errorf("conflict message %q does not name the referrer", err)
	}
	var inUse *store.InUseError
	if !errors.As(err, &inUse) {
		t.Error("conflict does not unwrap to store.InUseError")
	}
	if err := e.svc.DeleteIPRestriction(e.ctx, e.admin, r.ID); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.DeleteIPPolicy(e.ctx, e.admin, p2.ID); err != nil {
		t.Errorf("policy still blocked after its referrer was deleted: %v", err)
	}
	_, err = e.svc.GetIPRestriction(e.ctx, e.other, r.ID)
	wantCode(t, err, apierr.NotFound)
}

// A policy deleted while restrictions are being created never leaves a
// restriction pointing at nothing.
func TestIPRestrictionReferencesAreAtomic(t *testing.T) {
	e := newEnv(t)
	for range 20 {
		pol := e.policy(t, e.admin)
		var wg sync.WaitGroup
		var created *ipaccess.Restriction
		wg.Add(2)
		go func() {
			defer wg.Done()
			created, _ = e.svc.CreateIPRestriction(e.ctx, e.admin, ipaccess.CreateRestrictionParams{Type: "api", IPPolicyIDs: []string{pol.ID}})
		}()
		var delErr error
		go func() {
			defer wg.Done()
			delErr = e.svc.DeleteIPPolicy(e.ctx, e.admin, pol.ID)
		}()
		wg.Wait()
		if created != nil && delErr == nil {
			t.Fatalf("restriction %s references deleted policy %s", created.ID, pol.ID)
		}
		if created != nil {
			if err := e.svc.DeleteIPRestriction(e.ctx, e.admin, created.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// countRules returns how many rules policy id has, read from the store.
func (e *env) countRules(t *testing.T, accountID, id string) int {
	t.Helper()
	recs, err := e.store.List(e.ctx, store.Query{Kind: edgeplane.KindIPPolicyRule, AccountID: accountID, ParentID: id, Limit: 10 * ipaccess.MaxRulesPerPolicy})
	if err != nil {
		t.Fatal(err)
	}
	return len(recs)
}

// TestIPPolicyRuleCap is the fail-open case of issue 12: an oldest deny
// rule, then allow rules, then allow 0.0.0.0/0. Every rule of a full
// policy is evaluated, and a rule beyond the cap is refused, naming the
// field and the cap, without storing anything.
func TestIPPolicyRuleCap(t *testing.T) {
	e := newEnv(t)
	rules := [][2]string{{"1.2.3.4/32", "deny"}}
	for i := range ipaccess.MaxRulesPerPolicy - 2 {
		rules = append(rules, [2]string{netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), 0}), 24).String(), "allow"})
	}
	rules = append(rules, [2]string{"0.0.0.0/0", "allow"})
	pol := e.policy(t, e.admin, rules...)

	ok, err := e.svc.CheckIP(e.ctx, e.admin, []string{pol.ID}, netip.MustParseAddr("1.2.3.4"))
	if err != nil || ok {
		t.Fatalf("CheckIP(1.2.3.4) = %v, %v; want denied by the oldest rule", ok, err)
	}
	_, err = e.svc.CreateIPPolicyRule(e.ctx, e.admin, ipaccess.CreateRuleParams{IPPolicyID: pol.ID, CIDR: "5.6.7.8/32", Action: "allow"})
	wantViolation(t, err, "ip_policy_id", "already has 1000 rules")
	if n := e.countRules(t, e.admin.AccountID, pol.ID); n != ipaccess.MaxRulesPerPolicy {
		t.Fatalf("the policy has %d rules after a refused create, want %d", n, ipaccess.MaxRulesPerPolicy)
	}

	// Deleting a rule frees its slot for the next create.
	page, err := e.svc.ListIPPolicyRules(e.ctx, e.admin, edgeplane.ListOptions{Limit: 1})
	if err != nil || len(page.Items) != 1 {
		t.Fatalf("list = %+v, %v", page, err)
	}
	if err := e.svc.DeleteIPPolicyRule(e.ctx, e.admin, page.Items[0].ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.CreateIPPolicyRule(e.ctx, e.admin, ipaccess.CreateRuleParams{IPPolicyID: pol.ID, CIDR: "5.6.7.8/32", Action: "allow"}); err != nil {
		t.Fatalf("create after a delete: %v", err)
	}
}

// TestIPPolicyRuleCapConcurrent shows the cap holds when creates race for
// the last free slots.
func TestIPPolicyRuleCapConcurrent(t *testing.T) {
	e := newEnv(t)
	const free = 5
	rules := make([][2]string, ipaccess.MaxRulesPerPolicy-free)
	for i := range rules {
		rules[i] = [2]string{netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), 0}), 24).String(), "allow"}
	}
	pol := e.policy(t, e.admin, rules...)
	const workers = 16
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := range workers {
		wg.Go(func() {
			_, errs[w] = e.svc.CreateIPPolicyRule(e.ctx, e.admin, ipaccess.CreateRuleParams{IPPolicyID: pol.ID, CIDR: "192.0.2.0/24", Action: "deny"})
		})
	}
	wg.Wait()
	created := 0
	for _, err := range errs {
		switch {
		case err == nil:
			created++
		case apierr.CodeOf(err) == apierr.InvalidArgument, apierr.CodeOf(err) == apierr.Conflict:
		default:
			t.Errorf("unexpected error %v", err)
		}
	}
	if created != free {
		t.Errorf("%d creates succeeded, want %d", created, free)
	}
	if n := e.countRules(t, e.admin.AccountID, pol.ID); n != ipaccess.MaxRulesPerPolicy {
		t.Errorf("the policy has %d rules, want %d", n, ipaccess.MaxRulesPerPolicy)
	}
}

// TestIPPolicySetOverCapFailsClosed shows a policy found with more rules
// than the cap (written to the store by other code) is never evaluated
// from part of its rules: every check that uses it fails.
func TestIPPolicySetOverCapFailsClosed(t *testing.T) {
	e := newEnv(t)
	pol := e.policy(t, e.admin, [2]string{"1.2.3.4/32", "deny"})
	// The oldest rule denies; the newest MaxRulesPerPolicy allow all.
	for i := range ipaccess.MaxRulesPerPolicy {
		data := []byte(`{"id":"x","cidr":"0.0.0.0/0","action":"allow","ip_policy":{"id":"` + pol.ID + `"}}`)
		id := "ipr_" + strings.Repeat("z", 23) + string(rune('A'+i/1000%26)) + string(rune('A'+i/100%10)) + string(rune('A'+i/10%10)) + string(rune('A'+i%10))
		if err := e.store.Create(e.ctx, store.Record{Kind: edgeplane.KindIPPolicyRule, AccountID: e.admin.AccountID, ID: id, ParentID: pol.ID, Data: data}); err != nil {
			t.Fatal(err)
		}
	}
	ok, err := e.svc.CheckIP(e.ctx, e.admin, []string{pol.ID}, netip.MustParseAddr("1.2.3.4"))
	if ok || apierr.CodeOf(err) != apierr.FailedPrecondition || !strings.Contains(err.Error(), "more than 1000 IP policy rules") {
		t.Fatalf("CheckIP over the cap = %v, %v; want false and a failed-precondition error naming the cap", ok, err)
	}
}

// TestEndpointRestrictions: the host reads an account's IP restrictions
// of type endpoints (and no other type, no other account's) as an
// Enforcer: enforced ones refuse, the others warn; an account has at most
// ipaccess.MaxRestrictionsPerAccount restrictions.
func TestEndpointRestrictions(t *testing.T) {
	e := newEnv(t)
	office := e.policy(t, e.admin, [2]string{"203.0.113.0/24", "allow"})
	blocked := e.policy(t, e.admin, [2]string{"203.0.113.128/25", "deny"})
	theirs := e.policy(t, e.other, [2]string{"0.0.0.0/0", "deny"})
	create := func(p edgeplane.Principal, typ string, enforced bool, policies ...string) *ipaccess.Restriction {
		t.Helper()
		r, err := e.svc.CreateIPRestriction(e.ctx, p, ipaccess.CreateRestrictionParams{Type: typ, Enforced: enforced, IPPolicyIDs: policies})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	host := e.svc.Host()
	got, err := host.DataPlane().EndpointRestrictions(e.ctx, e.admin.AccountID)
	if err != nil || got.Enforcer != nil || len(got.IPPolicyIDs) != 0 {
		t.Fatalf("no restrictions: %+v, %v", got, err)
	}
	create(e.admin, ipaccess.TypeAPI, true, office.ID) // another type: not applied to endpoints
	warn := create(e.admin, ipaccess.TypeEndpoints, false, blocked.ID)
	enforce := create(e.admin, ipaccess.TypeEndpoints, true, office.ID)
	create(e.other, ipaccess.TypeEndpoints, true, theirs.ID) // another account's
	got, err = host.DataPlane().EndpointRestrictions(e.ctx, e.admin.AccountID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Enforcer.Len() != 2 || !slices.Equal(got.IPPolicyIDs, slices.Sorted(slices.Values([]string{office.ID, blocked.ID}))) {
		t.Errorf("restrictions %d, policies %v", got.Enforcer.Len(), got.IPPolicyIDs)
	}
	for _, tc := range []struct {
		ip, refused string
		warned      []string
	}{
		{"203.0.113.1", "", nil},
		{"192.0.2.1", enforce.ID, nil},
		{"203.0.113.200", "", []string{warn.ID}},
	} {
		refused, warned := got.Enforcer.Check(netip.MustParseAddr(tc.ip))
		if refused != tc.refused || !slices.Equal(warned, tc.warned) {
			t.Errorf("%s: refused by %q, warned %v; want %q, %v", tc.ip, refused, warned, tc.refused, tc.warned)
		}
	}
	_, err = host.DataPlane().EndpointRestrictions(e.ctx, "acct_x")
	wantCode(t, err, apierr.NotFound)

	// The cap: three exist; fill up to it, then one more is refused and
	// nothing is stored.
	for range ipaccess.MaxRestrictionsPerAccount - 3 {
		create(e.admin, ipaccess.TypeDashboard, true, office.ID)
	}
	_, err = e.svc.CreateIPRestriction(e.ctx, e.admin, ipaccess.CreateRestrictionParams{Type: ipaccess.TypeEndpoints, IPPolicyIDs: []string{office.ID}})
	wantCode(t, err, apierr.FailedPrecondition)
	page, err := e.svc.ListIPRestrictions(e.ctx, e.admin, edgeplane.ListOptions{Limit: edgeplane.MaxPageSize})
	if err != nil || len(page.Items) != ipaccess.MaxRestrictionsPerAccount {
		t.Errorf("after the refused create: %d restrictions, %v; want %d", len(page.Items), err, ipaccess.MaxRestrictionsPerAccount)
	}
	// Another account is not affected by this one's cap.
	create(e.other, ipaccess.TypeAPI, true, theirs.ID)
	// Deleting one frees a slot.
	if err := e.svc.DeleteIPRestriction(e.ctx, e.admin, warn.ID); err != nil {
		t.Fatal(err)
	}
	create(e.admin, ipaccess.TypeEndpoints, false, blocked.ID)
}
