package dataplane_test

import (
	"context"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/internal/dataplane"
	"github.com/edgeplane/edgeplane/internal/ids"
	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/ipaccess"
	"github.com/edgeplane/edgeplane/kinds"
	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/resource"
	"github.com/edgeplane/edgeplane/store"
)

// The kinds a Compiler reads for IP restrictions, declared as the root
// declares them, with documents of their own (what is stored is the
// root's business; the Compiler only decodes through the forms).
var (
	accountKind = &records.Kind{StoreKind: kinds.Account, Prefix: "acct_", Collection: "accounts", Noun: "account"}
	policyKind  = &records.Kind{StoreKind: kinds.IPPolicy, Prefix: ipaccess.PolicyPrefix, Noun: "IP policy"}
	ruleKind    = &records.Kind{StoreKind: kinds.IPPolicyRule, Prefix: ipaccess.RulePrefix, Noun: "IP policy rule", Parent: policyKind}
	restrKind   = &records.Kind{StoreKind: kinds.IPRestriction, Prefix: ipaccess.RestrictionPrefix, Noun: "IP restriction"}
)

type ruleDoc struct{ CIDR, Action string }

type restrictionDoc struct {
	Enforced bool
	Type     string
	Policies []string
}

var ruleForm = records.PlainForm(ruleKind,
	func(r *ipaccess.Rule) *ruleDoc { return &ruleDoc{CIDR: r.CIDR, Action: r.Action} },
	func(d *ruleDoc, rec store.Record) *ipaccess.Rule {
		return &ipaccess.Rule{ID: rec.ID, CIDR: d.CIDR, Action: d.Action, IPPolicy: resource.Ref{ID: rec.ParentID}}
	})

var restrictionForm = records.PlainForm(restrKind,
	func(r *ipaccess.Restriction) *restrictionDoc {
		return &restrictionDoc{Enforced: r.Enforced, Type: r.Type, Policies: records.RefIDs(r.IPPolicies)}
	},
	func(d *restrictionDoc, rec store.Record) *ipaccess.Restriction {
		return &ipaccess.Restriction{ID: rec.ID, Enforced: d.Enforced, Type: d.Type, IPPolicies: records.IDRefs(d.Policies)}
	})

type env struct {
	ctx     context.Context
	c       *dataplane.Compiler
	inner   store.Store // writes here bypass the access cache
	wrapped store.Store // writes here drop the account from it
	db      *records.DB
	ids     *ids.Generator
	account string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	now := func() time.Time { return time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC) }
	inner := memstore.New()
	access := new(dataplane.AccessCache)
	wrapped := dataplane.Invalidating(inner, access)
	log := slog.New(slog.DiscardHandler)
	db := &records.DB{Store: wrapped, Log: log, Now: now}
	k := dataplane.Kinds{Account: accountKind, IPRule: ruleForm, IPRestriction: restrictionForm}
	g := ids.NewGenerator(now)
	return &env{ctx: context.Background(), c: dataplane.New(db, nil, k, access, nil, now, log),
		inner: inner, wrapped: wrapped, db: db, ids: g, account: g.New("acct_")}
}

// policy stores an IP policy (the parent of its rules) and returns its
// ID.
func (e *env) policy(t *testing.T) string {
	t.Helper()
	id := e.ids.New(ipaccess.PolicyPrefix)
	if err := e.wrapped.Create(e.ctx, store.Record{Kind: kinds.IPPolicy, AccountID: e.account, ID: id, Data: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	return id
}

// rule stores a rule of policy through st and returns its ID.
func (e *env) rule(t *testing.T, st store.Store, policyID, cidr, action string) string {
	t.Helper()
	r := &ipaccess.Rule{ID: e.ids.New(ipaccess.RulePrefix), CIDR: cidr, Action: action}
	rec := store.Record{Kind: kinds.IPPolicyRule, AccountID: e.account, ID: r.ID, ParentID: policyID}
	if err := ruleForm.Encode(e.db, r, &rec); err != nil {
		t.Fatal(err)
	}
	if err := st.Create(e.ctx, rec); err != nil {
		t.Fatal(err)
	}
	return r.ID
}

// restriction stores a restriction and returns its ID.
func (e *env) restriction(t *testing.T, typ string, enforced bool, policyIDs ...string) string {
	t.Helper()
	r := &ipaccess.Restriction{ID: e.ids.New(ipaccess.RestrictionPrefix), Type: typ, Enforced: enforced, IPPolicies: records.IDRefs(policyIDs)}
	rec := store.Record{Kind: kinds.IPRestriction, AccountID: e.account, ID: r.ID}
	if err := restrictionForm.Encode(e.db, r, &rec); err != nil {
		t.Fatal(err)
	}
	if err := e.wrapped.Create(e.ctx, rec); err != nil {
		t.Fatal(err)
	}
	return r.ID
}

var (
	inside  = netip.MustParseAddr("10.1.2.3")
	outside = netip.MustParseAddr("192.0.2.1")
)

// TestCheck: an enforced restriction refuses the addresses its policies
// deny with a PermissionDenied error naming it, and counts the refusal;
// one not enforced lets them through, counted as warned; the types and
// accounts that are not the Service's checks' are refused as before the
// move.
func TestCheck(t *testing.T) {
	e := newEnv(t)
	policy := e.policy(t)
	e.rule(t, e.wrapped, policy, "10.0.0.0/8", ipaccess.ActionDeny)
	api := e.restriction(t, ipaccess.TypeAPI, true, policy)
	e.restriction(t, ipaccess.TypeAgent, false, policy)

	err := e.c.Check(e.ctx, e.account, ipaccess.TypeAPI, inside, true)
	if apierr.CodeOf(err) != apierr.PermissionDenied || !strings.Contains(err.Error(), "API requests from 10.1.2.3 are refused by IP restriction "+api) {
		t.Errorf("api from %v: %v; want permission denied by %s", inside, err, api)
	}
	if err := e.c.Check(e.ctx, e.account, ipaccess.TypeAPI, outside, true); err != nil {
		t.Errorf("api from %v: %v; want let through", outside, err)
	}
	if err := e.c.Check(e.ctx, e.account, ipaccess.TypeAgent, inside, false); err != nil {
		t.Errorf("agent from %v under a restriction not enforced: %v; want let through", inside, err)
	}
	if err := e.c.Check(e.ctx, e.account, ipaccess.TypeDashboard, inside, true); err != nil {
		t.Errorf("dashboard without restrictions: %v", err)
	}
	counts := map[string]ipaccess.TypeCount{}
	for _, c := range e.c.IPRestrictionCounts() {
		counts[c.Type] = c
	}
	if c := counts[ipaccess.TypeAPI]; c.Refused != 1 || c.Warned != 0 {
		t.Errorf("api counts %+v; want 1 refused", c)
	}
	if c := counts[ipaccess.TypeAgent]; c.Refused != 0 || c.Warned != 1 {
		t.Errorf("agent counts %+v; want 1 warned", c)
	}

	for _, tc := range []struct {
		name, account, typ string
		code               apierr.Code
	}{
		{"endpoints are the proxy's", e.account, ipaccess.TypeEndpoints, apierr.InvalidArgument},
		{"unknown type", e.account, "console", apierr.InvalidArgument},
		{"invalid account", "acct_x", ipaccess.TypeAPI, apierr.NotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := e.c.Check(e.ctx, tc.account, tc.typ, inside, true); apierr.CodeOf(err) != tc.code {
				t.Errorf("Check: %v; want %s", err, tc.code)
			}
		})
	}
}

// TestCheckCached: a cached check answers from the access cache until a
// write through the Invalidating store drops the account; a write that
// bypasses it is seen at once only by an uncached check.
func TestCheckCached(t *testing.T) {
	e := newEnv(t)
	policy := e.policy(t)
	e.rule(t, e.wrapped, policy, "10.0.0.0/8", ipaccess.ActionDeny)
	e.restriction(t, ipaccess.TypeAPI, true, policy)
	if err := e.c.Check(e.ctx, e.account, ipaccess.TypeAPI, outside, true); err != nil {
		t.Fatalf("before: %v", err)
	}

	e.rule(t, e.inner, policy, "192.0.2.0/24", ipaccess.ActionDeny) // behind the cache's back
	if err := e.c.Check(e.ctx, e.account, ipaccess.TypeAPI, outside, true); err != nil {
		t.Errorf("cached check after a write the cache did not see: %v; want the kept decision", err)
	}
	if err := e.c.Check(e.ctx, e.account, ipaccess.TypeAPI, outside, false); apierr.CodeOf(err) != apierr.PermissionDenied {
		t.Errorf("uncached check: %v; want the new rule's refusal", err)
	}

	e.rule(t, e.wrapped, policy, "198.51.100.0/24", ipaccess.ActionAllow) // drops the account
	if err := e.c.Check(e.ctx, e.account, ipaccess.TypeAPI, outside, true); apierr.CodeOf(err) != apierr.PermissionDenied {
		t.Errorf("cached check after an invalidating write: %v; want the new rules' refusal", err)
	}
}

// TestEndpointRestrictions: the restrictions of type endpoints with the
// IP policies they use, sorted and without repeats; none is nil.
func TestEndpointRestrictions(t *testing.T) {
	e := newEnv(t)
	got, err := e.c.EndpointRestrictions(e.ctx, e.account)
	if err != nil || got.Enforcer != nil || got.IPPolicyIDs != nil {
		t.Fatalf("without restrictions: %+v, %v; want none", got, err)
	}
	a, b := e.policy(t), e.policy(t)
	e.rule(t, e.wrapped, a, "10.0.0.0/8", ipaccess.ActionDeny)
	e.rule(t, e.wrapped, b, "192.0.2.0/24", ipaccess.ActionDeny)
	e.restriction(t, ipaccess.TypeEndpoints, true, b, a)
	e.restriction(t, ipaccess.TypeEndpoints, false, a)
	e.restriction(t, ipaccess.TypeAPI, true, b)
	got, err = e.c.EndpointRestrictions(e.ctx, e.account)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{a, b}
	if a > b {
		want = []string{b, a}
	}
	if len(got.IPPolicyIDs) != 2 || got.IPPolicyIDs[0] != want[0] || got.IPPolicyIDs[1] != want[1] {
		t.Errorf("IP policies %v; want %v", got.IPPolicyIDs, want)
	}
	if refusedBy, _ := got.Enforcer.Check(inside); refusedBy == "" {
		t.Errorf("%v let through by the endpoints' enforcer", inside)
	}
	if _, err := e.c.EndpointRestrictions(e.ctx, "acct_x"); apierr.CodeOf(err) != apierr.NotFound {
		t.Errorf("invalid account: %v; want not found", err)
	}
}

// TestIPSetShared: two reads of a policy whose rules did not change give
// the same set; a changed rule gives another.
func TestIPSetShared(t *testing.T) {
	e := newEnv(t)
	policy := e.policy(t)
	e.rule(t, e.wrapped, policy, "10.0.0.0/8", ipaccess.ActionDeny)
	first, err := e.c.IPSet(e.ctx, e.account, []string{policy})
	if err != nil {
		t.Fatal(err)
	}
	again, err := e.c.IPSet(e.ctx, e.account, []string{policy})
	if err != nil || again != first {
		t.Errorf("second read: %p, %v; want the first set %p", again, err, first)
	}
	e.rule(t, e.wrapped, policy, "192.0.2.0/24", ipaccess.ActionDeny)
	changed, err := e.c.IPSet(e.ctx, e.account, []string{policy})
	if err != nil || changed == first || changed.Allowed(outside) {
		t.Errorf("after a new rule: %p (allows %v: %v), %v; want a new set that denies it", changed, outside, changed.Allowed(outside), err)
	}
}

// TestInvalidating: writes of IP restrictions, policies and rules through
// the store Invalidating returns drop their account from the cache,
// failed ones too; writes of other kinds do not; a nil cache wraps
// nothing.
func TestInvalidating(t *testing.T) {
	for _, tc := range []struct {
		kind  store.Kind
		drops bool
	}{
		{kinds.IPRestriction, true},
		{kinds.IPPolicy, true},
		{kinds.IPPolicyRule, true},
		{kinds.HTTPSEdge, false},
		{kinds.APIKey, false},
	} {
		t.Run(string(tc.kind), func(t *testing.T) {
			if got := dataplane.AccessKind(tc.kind); got != tc.drops {
				t.Errorf("AccessKind(%s) = %v; want %v", tc.kind, got, tc.drops)
			}
			e := newEnv(t)
			policy := e.policy(t)
			e.rule(t, e.wrapped, policy, "10.0.0.0/8", ipaccess.ActionDeny)
			e.restriction(t, ipaccess.TypeAPI, true, policy)
			e.c.Check(e.ctx, e.account, ipaccess.TypeAPI, outside, true) // kept: no restriction refuses it
			e.rule(t, e.inner, policy, "192.0.2.0/24", ipaccess.ActionDeny)
			// A delete of a record that does not exist fails, and still
			// drops the account of its kind.
			if err := e.wrapped.Delete(e.ctx, tc.kind, e.account, "none", store.Note{}); err == nil {
				t.Fatal("deleted a record that does not exist")
			}
			err := e.c.Check(e.ctx, e.account, ipaccess.TypeAPI, outside, true)
			if dropped := apierr.CodeOf(err) == apierr.PermissionDenied; dropped != tc.drops {
				t.Errorf("after a failed write of %s the cached check says %v; dropped %v, want %v", tc.kind, err, dropped, tc.drops)
			}
		})
	}
	st := memstore.New()
	if got := dataplane.Invalidating(st, nil); got != store.Store(st) {
		t.Errorf("Invalidating(st, nil) = %T; want st itself", got)
	}
}
