package ipaccess_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/ipaccess"
	"github.com/edgeplane/edgeplane/resource"
)

const (
	pol1 = "ipp_1abcdefghijklmnopqrstuvwxyz"
	pol2 = "ipp_2abcdefghijklmnopqrstuvwxyz"
	pol3 = "ipp_3abcdefghijklmnopqrstuvwxyz"
)

func ptr[T any](v T) *T { return &v }

// checkViolations checks that err is nil when want is empty, else an
// InvalidArgument error with exactly the violation fields want, each
// reason lowercase and containing the matching entry of reasons.
func checkViolations(t *testing.T, err error, want []string, reasons ...string) {
	t.Helper()
	if len(want) == 0 {
		if err != nil {
			t.Fatalf("error = %v, want nil", err)
		}
		return
	}
	if !errors.Is(err, apierr.ErrInvalidArgument) {
		t.Fatalf("error %v is not an invalid-argument error", err)
	}
	vs := apierr.ViolationsOf(err)
	var got []string
	for _, v := range vs {
		if v.Reason == "" || strings.ToLower(v.Reason[:1]) != v.Reason[:1] {
			t.Errorf("violation %q: reason must be non-empty and lowercase", v)
		}
		got = append(got, v.Field)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("violation fields = %q, want %q (error: %v)", got, want, err)
	}
	for i, r := range reasons {
		if !strings.Contains(vs[i].Reason, r) {
			t.Errorf("violation %d reason = %q, want it to contain %q", i, vs[i].Reason, r)
		}
	}
}

func TestPolicyParams(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want []string
	}{
		{name: "create empty", err: ipaccess.CreatePolicyParams{}.Validate()},
		{name: "create at limits", err: ipaccess.CreatePolicyParams{Description: strings.Repeat("d", 255), Metadata: strings.Repeat("m", 4096)}.Validate()},
		{name: "create over limits", err: ipaccess.CreatePolicyParams{Description: strings.Repeat("é", 128), Metadata: strings.Repeat("m", 4097)}.Validate(),
			want: []string{"description", "metadata"}},
		{name: "update empty", err: ipaccess.UpdatePolicyParams{}.Validate()},
		{name: "update clear", err: ipaccess.UpdatePolicyParams{Description: ptr(""), Metadata: ptr("")}.Validate()},
		{name: "update over limits", err: ipaccess.UpdatePolicyParams{Description: ptr(strings.Repeat("d", 256)), Metadata: ptr(strings.Repeat("€", 1366))}.Validate(),
			want: []string{"description", "metadata"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkViolations(t, tt.err, tt.want) })
	}
}

func TestPolicyApply(t *testing.T) {
	tests := []struct {
		name string
		p    ipaccess.UpdatePolicyParams
		want ipaccess.Policy
	}{
		{name: "nothing", want: ipaccess.Policy{ID: "ipp_x", Description: "d", Metadata: "m"}},
		{name: "set", p: ipaccess.UpdatePolicyParams{Description: ptr("D"), Metadata: ptr("M")}, want: ipaccess.Policy{ID: "ipp_x", Description: "D", Metadata: "M"}},
		{name: "clear", p: ipaccess.UpdatePolicyParams{Description: ptr(""), Metadata: ptr("")}, want: ipaccess.Policy{ID: "ipp_x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pol := ipaccess.Policy{ID: "ipp_x", Description: "d", Metadata: "m"}
			tt.p.Apply(&pol)
			if pol != tt.want {
				t.Fatalf("after Apply: %+v, want %+v", pol, tt.want)
			}
		})
	}
	if got := (ipaccess.CreatePolicyParams{Description: "d", Metadata: "m"}).Policy(); got != (ipaccess.Policy{Description: "d", Metadata: "m"}) {
		t.Fatalf("Policy() = %+v", got)
	}
}

func TestCreateRuleParamsValidate(t *testing.T) {
	valid := func() ipaccess.CreateRuleParams {
		return ipaccess.CreateRuleParams{CIDR: "10.0.0.0/8", IPPolicyID: pol1, Action: ipaccess.ActionAllow}
	}
	with := func(f func(*ipaccess.CreateRuleParams)) ipaccess.CreateRuleParams {
		p := valid()
		f(&p)
		return p
	}
	tests := []struct {
		name    string
		p       ipaccess.CreateRuleParams
		want    []string
		reasons []string
	}{
		{name: "valid", p: valid()},
		{name: "deny ipv6 host", p: with(func(p *ipaccess.CreateRuleParams) { p.CIDR, p.Action = "2001:db8::1", ipaccess.ActionDeny })},
		{name: "unmasked cidr", p: with(func(p *ipaccess.CreateRuleParams) { p.CIDR = "10.1.2.3/8" })},
		{name: "everything", p: with(func(p *ipaccess.CreateRuleParams) { p.CIDR = "0.0.0.0/0" })},
		{name: "with description", p: with(func(p *ipaccess.CreateRuleParams) { p.Description, p.Metadata = "office", "{}" })},
		{name: "empty", p: ipaccess.CreateRuleParams{}, want: []string{"cidr", "ip_policy_id", "action"},
			reasons: []string{"is required", "is required", "is required"}},
		{name: "bad cidr", p: with(func(p *ipaccess.CreateRuleParams) { p.CIDR = "10.0.0.0/33" }), want: []string{"cidr"}, reasons: []string{"CIDR"}},
		{name: "zone", p: with(func(p *ipaccess.CreateRuleParams) { p.CIDR = "fe80::1%eth0" }), want: []string{"cidr"}, reasons: []string{"zone"}},
		{name: "bad action", p: with(func(p *ipaccess.CreateRuleParams) { p.Action = "block" }), want: []string{"action"}, reasons: []string{"must be one of: allow, deny"}},
		{name: "action case", p: with(func(p *ipaccess.CreateRuleParams) { p.Action = "Allow" }), want: []string{"action"}},
		{name: "bad policy id", p: with(func(p *ipaccess.CreateRuleParams) { p.IPPolicyID = "ipx_1abcdefghijklmnopqrstuvwxyz" }), want: []string{"ip_policy_id"}, reasons: []string{"IP policy ID"}},
		{name: "long description", p: with(func(p *ipaccess.CreateRuleParams) { p.Description = strings.Repeat("é", 128) }), want: []string{"description"}},
		{name: "long metadata", p: with(func(p *ipaccess.CreateRuleParams) { p.Metadata = strings.Repeat("m", 4097) }), want: []string{"metadata"}},
		{name: "all wrong", p: ipaccess.CreateRuleParams{Description: strings.Repeat("d", 256), Metadata: strings.Repeat("m", 4097), CIDR: "x", IPPolicyID: "p", Action: "x"},
			want: []string{"description", "metadata", "cidr", "ip_policy_id", "action"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkViolations(t, tt.p.Validate(), tt.want, tt.reasons...) })
	}
}

func TestCreateRuleParamsRule(t *testing.T) {
	p := ipaccess.CreateRuleParams{Description: "d", Metadata: "m", CIDR: "10.1.2.3/8", IPPolicyID: pol1, Action: ipaccess.ActionDeny}
	want := ipaccess.Rule{Description: "d", Metadata: "m", CIDR: "10.0.0.0/8", IPPolicy: resource.Ref{ID: pol1}, Action: ipaccess.ActionDeny}
	if got := p.Rule(); got != want {
		t.Fatalf("Rule() = %+v, want %+v", got, want)
	}
}

func TestUpdateRuleParams(t *testing.T) {
	tests := []struct {
		name    string
		p       ipaccess.UpdateRuleParams
		want    []string
		reasons []string
		after   ipaccess.Rule // expected rule after Apply, when valid
	}{
		{name: "nothing", after: baseRule()},
		{name: "all fields", p: ipaccess.UpdateRuleParams{Description: ptr("D"), Metadata: ptr("M"), CIDR: ptr("::ffff:192.168.1.7/120"), Action: ptr("deny")},
			after: ipaccess.Rule{ID: "ipr_x", Description: "D", Metadata: "M", CIDR: "192.168.1.0/24", IPPolicy: resource.Ref{ID: pol1}, Action: "deny"}},
		{name: "clear description", p: ipaccess.UpdateRuleParams{Description: ptr(""), Metadata: ptr("")},
			after: ipaccess.Rule{ID: "ipr_x", CIDR: "10.0.0.0/8", IPPolicy: resource.Ref{ID: pol1}, Action: "allow"}},
		{name: "empty cidr", p: ipaccess.UpdateRuleParams{CIDR: ptr("")}, want: []string{"cidr"}, reasons: []string{"is required"}},
		{name: "bad cidr", p: ipaccess.UpdateRuleParams{CIDR: ptr("10.0.0.0/8 ")}, want: []string{"cidr"}},
		{name: "empty action", p: ipaccess.UpdateRuleParams{Action: ptr("")}, want: []string{"action"}, reasons: []string{"must be one of: allow, deny"}},
		{name: "bad action", p: ipaccess.UpdateRuleParams{Action: ptr("permit")}, want: []string{"action"}},
		{name: "all wrong", p: ipaccess.UpdateRuleParams{Description: ptr(strings.Repeat("d", 256)), Metadata: ptr(strings.Repeat("m", 4097)), CIDR: ptr("1.2.3"), Action: ptr("x")},
			want: []string{"description", "metadata", "cidr", "action"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkViolations(t, tt.p.Validate(), tt.want, tt.reasons...)
			if len(tt.want) > 0 {
				return
			}
			r := baseRule()
			tt.p.Apply(&r)
			if r != tt.after {
				t.Fatalf("after Apply: %+v, want %+v", r, tt.after)
			}
		})
	}
}

func TestUpdateRuleParamsApplyInvalidCIDRStoredAsGiven(t *testing.T) {
	r := baseRule()
	ipaccess.UpdateRuleParams{CIDR: ptr("nonsense")}.Apply(&r)
	if r.CIDR != "nonsense" {
		t.Fatalf("CIDR = %q, want it stored as given", r.CIDR)
	}
}

func baseRule() ipaccess.Rule {
	return ipaccess.Rule{ID: "ipr_x", Description: "d", Metadata: "m", CIDR: "10.0.0.0/8", IPPolicy: resource.Ref{ID: pol1}, Action: "allow"}
}

func TestCreateRestrictionParamsValidate(t *testing.T) {
	valid := func() ipaccess.CreateRestrictionParams {
		return ipaccess.CreateRestrictionParams{Type: ipaccess.TypeAPI, IPPolicyIDs: []string{pol1}}
	}
	with := func(f func(*ipaccess.CreateRestrictionParams)) ipaccess.CreateRestrictionParams {
		p := valid()
		f(&p)
		return p
	}
	tests := []struct {
		name    string
		p       ipaccess.CreateRestrictionParams
		want    []string
		reasons []string
	}{
		{name: "valid", p: valid()},
		{name: "dashboard enforced", p: with(func(p *ipaccess.CreateRestrictionParams) { p.Type, p.Enforced = ipaccess.TypeDashboard, true })},
		{name: "agent", p: with(func(p *ipaccess.CreateRestrictionParams) { p.Type = ipaccess.TypeAgent })},
		{name: "endpoints several", p: with(func(p *ipaccess.CreateRestrictionParams) {
			p.Type, p.IPPolicyIDs = ipaccess.TypeEndpoints, []string{pol1, pol2, pol3}
		})},
		{name: "at policy limit", p: with(func(p *ipaccess.CreateRestrictionParams) { p.IPPolicyIDs = policyIDs(ipaccess.MaxIPPolicies) })},
		{name: "empty", p: ipaccess.CreateRestrictionParams{}, want: []string{"type", "ip_policy_ids"},
			reasons: []string{"is required", "at least one"}},
		{name: "bad type", p: with(func(p *ipaccess.CreateRestrictionParams) { p.Type = "ssh" }), want: []string{"type"},
			reasons: []string{"must be one of: dashboard, api, agent, endpoints"}},
		{name: "type case", p: with(func(p *ipaccess.CreateRestrictionParams) { p.Type = "API" }), want: []string{"type"}},
		{name: "empty ids", p: with(func(p *ipaccess.CreateRestrictionParams) { p.IPPolicyIDs = []string{} }), want: []string{"ip_policy_ids"}},
		{name: "too many ids", p: with(func(p *ipaccess.CreateRestrictionParams) { p.IPPolicyIDs = policyIDs(ipaccess.MaxIPPolicies + 1) }),
			want: []string{"ip_policy_ids"}, reasons: []string{"at most 100"}},
		{name: "bad ids", p: with(func(p *ipaccess.CreateRestrictionParams) {
			p.IPPolicyIDs = []string{pol1, "", "ipr_1abcdefghijklmnopqrstuvwxyz", pol2}
		}), want: []string{"ip_policy_ids[1]", "ip_policy_ids[2]"}, reasons: []string{"IP policy ID", "IP policy ID"}},
		{name: "duplicate ids", p: with(func(p *ipaccess.CreateRestrictionParams) { p.IPPolicyIDs = []string{pol1, pol2, pol1, pol2} }),
			want: []string{"ip_policy_ids[2]", "ip_policy_ids[3]"}, reasons: []string{"duplicates ip_policy_ids[0]", "duplicates ip_policy_ids[1]"}},
		{name: "all wrong", p: ipaccess.CreateRestrictionParams{Description: strings.Repeat("é", 128), Metadata: strings.Repeat("m", 4097), Type: "x", IPPolicyIDs: []string{"x"}},
			want: []string{"description", "metadata", "type", "ip_policy_ids[0]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkViolations(t, tt.p.Validate(), tt.want, tt.reasons...) })
	}
}

func policyIDs(n int) []string {
	const digits = "0123456789abcdefghijklmnopqrstuvwxyz"
	out := make([]string, n)
	for i := range out {
		out[i] = "ipp_" + string(digits[i/36]) + string(digits[i%36]) + strings.Repeat("x", 25)
	}
	return out
}

func TestCreateRestrictionParamsRestriction(t *testing.T) {
	p := ipaccess.CreateRestrictionParams{Description: "d", Metadata: "m", Enforced: true, Type: ipaccess.TypeAgent, IPPolicyIDs: []string{pol1, pol2}}
	want := ipaccess.Restriction{Description: "d", Metadata: "m", Enforced: true, Type: "agent",
		IPPolicies: []resource.Ref{{ID: pol1}, {ID: pol2}}}
	if got := p.Restriction(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Restriction() = %+v, want %+v", got, want)
	}
}

func TestUpdateRestrictionParams(t *testing.T) {
	tests := []struct {
		name    string
		p       ipaccess.UpdateRestrictionParams
		want    []string
		reasons []string
		after   ipaccess.Restriction
	}{
		{name: "nothing", after: baseRestriction()},
		{name: "all fields", p: ipaccess.UpdateRestrictionParams{Description: ptr("D"), Metadata: ptr("M"), Enforced: ptr(false), IPPolicyIDs: ptr([]string{pol2, pol3})},
			after: ipaccess.Restriction{ID: "ipx_x", Description: "D", Metadata: "M", Type: "api", IPPolicies: []resource.Ref{{ID: pol2}, {ID: pol3}}}},
		{name: "clear strings", p: ipaccess.UpdateRestrictionParams{Description: ptr(""), Metadata: ptr("")},
			after: ipaccess.Restriction{ID: "ipx_x", Enforced: true, Type: "api", IPPolicies: []resource.Ref{{ID: pol1}}}},
		{name: "type present", p: ipaccess.UpdateRestrictionParams{Type: ptr("api")}, want: []string{"type"}, reasons: []string{"cannot be changed by update"}},
		{name: "empty ids", p: ipaccess.UpdateRestrictionParams{IPPolicyIDs: ptr([]string{})}, want: []string{"ip_policy_ids"}, reasons: []string{"at least one"}},
		{name: "bad and duplicate ids", p: ipaccess.UpdateRestrictionParams{IPPolicyIDs: ptr([]string{pol1, "nope", pol1})},
			want: []string{"ip_policy_ids[1]", "ip_policy_ids[2]"}},
		{name: "all wrong", p: ipaccess.UpdateRestrictionParams{Description: ptr(strings.Repeat("d", 256)), Metadata: ptr(strings.Repeat("m", 4097)),
			IPPolicyIDs: ptr([]string{"x"}), Type: ptr("agent")},
			want: []string{"description", "metadata", "ip_policy_ids[0]", "type"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkViolations(t, tt.p.Validate(), tt.want, tt.reasons...)
			if len(tt.want) > 0 {
				return
			}
			r := baseRestriction()
			tt.p.Apply(&r)
			if !reflect.DeepEqual(r, tt.after) {
				t.Fatalf("after Apply: %+v, want %+v", r, tt.after)
			}
		})
	}
}

func baseRestriction() ipaccess.Restriction {
	return ipaccess.Restriction{ID: "ipx_x", Description: "d", Metadata: "m", Enforced: true, Type: "api", IPPolicies: []resource.Ref{{ID: pol1}}}
}

func TestRestrictionClone(t *testing.T) {
	r := baseRestriction()
	c := r.Clone()
	c.IPPolicies[0].ID = pol2
	if r.IPPolicies[0].ID != pol1 {
		t.Fatal("Clone shares IPPolicies with the original")
	}
	if z := (ipaccess.Restriction{}).Clone(); z.IPPolicies == nil {
		t.Fatal("Clone of a zero restriction has nil IPPolicies")
	}
}

func TestJSONFieldNames(t *testing.T) {
	tests := []struct {
		name string
		v    any
		want string
	}{
		{name: "policy", v: ipaccess.Policy{ID: "ipp_x"},
			want: `{"id":"ipp_x","uri":"","created_at":"0001-01-01T00:00:00Z","description":"","metadata":""}`},
		{name: "rule", v: ipaccess.Rule{ID: "ipr_x", CIDR: "10.0.0.0/8", IPPolicy: resource.Ref{ID: pol1}, Action: "allow"},
			want: `{"id":"ipr_x","uri":"","created_at":"0001-01-01T00:00:00Z","description":"","metadata":"","cidr":"10.0.0.0/8","ip_policy":{"id":"` + pol1 + `","uri":""},"action":"allow"}`},
		{name: "restriction", v: ipaccess.Restriction{ID: "ipx_x", Enforced: true, Type: "api", IPPolicies: []resource.Ref{{ID: pol1}}},
			want: `{"id":"ipx_x","uri":"","created_at":"0001-01-01T00:00:00Z","description":"","metadata":"","enforced":true,"type":"api","ip_policies":[{"id":"` + pol1 + `","uri":""}]}`},
		{name: "create rule params", v: ipaccess.CreateRuleParams{CIDR: "c", IPPolicyID: "p", Action: "a"},
			want: `{"description":"","metadata":"","cidr":"c","ip_policy_id":"p","action":"a"}`},
		{name: "create restriction params", v: ipaccess.CreateRestrictionParams{Type: "t", IPPolicyIDs: []string{"p"}},
			want: `{"description":"","metadata":"","enforced":false,"type":"t","ip_policy_ids":["p"]}`},
		{name: "update restriction params", v: ipaccess.UpdateRestrictionParams{Enforced: ptr(true), IPPolicyIDs: &[]string{"p"}, Type: ptr("t")},
			want: `{"description":null,"metadata":null,"enforced":true,"ip_policy_ids":["p"],"type":"t"}`},
		{name: "update rule params", v: ipaccess.UpdateRuleParams{CIDR: ptr("c"), Action: ptr("a")},
			want: `{"description":null,"metadata":null,"cidr":"c","action":"a"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.v)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want {
				t.Fatalf("JSON = %s\nwant   %s", b, tt.want)
			}
		})
	}
}
