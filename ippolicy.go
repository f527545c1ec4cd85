package edgeplane

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"strconv"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/ipaccess"
	"github.com/edgeplane/edgeplane/resource"
	"github.com/edgeplane/edgeplane/store"
)

// refViolation turns a store's missing-reference error into a violation
// of the request field that named the ID: field[i] when the field is a
// list, field otherwise. Other errors are returned unchanged.
func refViolation(err error, field string, list bool, named []string) error {
	var miss *store.MissingRefError
	if !errors.As(err, &miss) {
		return err
	}
	path := field
	if i := slices.Index(named, miss.ID); list && i >= 0 {
		path = field + "[" + strconv.Itoa(i) + "]"
	}
	return apierr.Invalidf(path, "%s not found in this account", describeID(miss.ID))
}

// The stored forms of IP policies, rules and restrictions (see forms.go).
// A rule's policy is its record's parent.
type (
	ipPolicyDoc struct {
		common
	}
	ipRuleDoc struct {
		common
		CIDR   string `json:"cidr"`
		Action string `json:"action"`
	}
	ipRestrictionDoc struct {
		common
		Enforced    bool     `json:"enforced,omitempty"`
		Type        string   `json:"type"`
		IPPolicyIDs []string `json:"ip_policy_ids"`
	}
)

var (
	ipPolicyForm = plainForm(&ipPolicyKind,
		func(v *ipaccess.Policy) *ipPolicyDoc {
			return &ipPolicyDoc{common: common{v.CreatedAt, v.Description, v.Metadata}}
		},
		func(d *ipPolicyDoc, rec store.Record) *ipaccess.Policy {
			return &ipaccess.Policy{ID: rec.ID, CreatedAt: d.CreatedAt, Description: d.Description, Metadata: d.Metadata}
		})
	ipRuleForm = plainForm(&ipRuleKind,
		func(v *ipaccess.Rule) *ipRuleDoc {
			return &ipRuleDoc{common: common{v.CreatedAt, v.Description, v.Metadata}, CIDR: v.CIDR, Action: v.Action}
		},
		func(d *ipRuleDoc, rec store.Record) *ipaccess.Rule {
			return &ipaccess.Rule{ID: rec.ID, CreatedAt: d.CreatedAt, Description: d.Description, Metadata: d.Metadata,
				CIDR: d.CIDR, Action: d.Action, IPPolicy: resource.Ref{ID: rec.ParentID}}
		})
	ipRestrictionForm = plainForm(&ipRestrictionKind,
		func(v *ipaccess.Restriction) *ipRestrictionDoc {
			return &ipRestrictionDoc{common: common{v.CreatedAt, v.Description, v.Metadata},
				Enforced: v.Enforced, Type: v.Type, IPPolicyIDs: refIDs(v.IPPolicies)}
		},
		func(d *ipRestrictionDoc, rec store.Record) *ipaccess.Restriction {
			return &ipaccess.Restriction{ID: rec.ID, CreatedAt: d.CreatedAt, Description: d.Description, Metadata: d.Metadata,
				Enforced: d.Enforced, Type: d.Type, IPPolicies: idRefs(d.IPPolicyIDs)}
		})
)

func (s *Service) presentIPPolicy(v *ipaccess.Policy, _ store.Record) {
	v.URI = s.uri(ipPolicyKind.collection, v.ID)
}

// CreateIPPolicy creates an IP policy (POST /ip_policies).
func (s *Service) CreateIPPolicy(ctx context.Context, p Principal, params ipaccess.CreatePolicyParams) (*ipaccess.Policy, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	if err := params.Validate(); err != nil {
		return nil, err
	}
	pol := params.Policy()
	v := &pol
	v.ID, v.CreatedAt = s.ids.New(ipaccess.PolicyPrefix), s.timestamp()
	if err := create(ctx, s, p, ipPolicyForm, v.ID, "", v, nil); err != nil {
		return nil, err
	}
	s.presentIPPolicy(v, store.Record{})
	return v, nil
}

// GetIPPolicy returns an IP policy (GET /ip_policies/{id}).
func (s *Service) GetIPPolicy(ctx context.Context, p Principal, id string) (*ipaccess.Policy, error) {
	v, rec, err := get(ctx, s, p, ipPolicyForm, id)
	if err != nil {
		return nil, err
	}
	s.presentIPPolicy(v, rec)
	return v, nil
}

// ListIPPolicies returns a page of the account's IP policies, newest first.
func (s *Service) ListIPPolicies(ctx context.Context, p Principal, opts ListOptions) (*Page[ipaccess.Policy], error) {
	return list(ctx, s, p, ipPolicyForm, "", ipPolicyKind.collection, opts, s.presentIPPolicy)
}

// UpdateIPPolicy changes the fields present in params.
func (s *Service) UpdateIPPolicy(ctx context.Context, p Principal, id string, params ipaccess.UpdatePolicyParams) (*ipaccess.Policy, error) {
	if err := params.Validate(); err != nil {
		return nil, err
	}
	v, err := update(ctx, s, p, ipPolicyForm, id, func(v *ipaccess.Policy, _ *store.Record) error {
		params.Apply(v)
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.presentIPPolicy(v, store.Record{})
	return v, nil
}

// DeleteIPPolicy deletes an IP policy and its rules. It fails with a
// conflict naming the referrers while an IP restriction or an edge module
// references the policy.
func (s *Service) DeleteIPPolicy(ctx context.Context, p Principal, id string) error {
	return s.remove(ctx, p, ipPolicyKind, id)
}

func (s *Service) presentIPRule(v *ipaccess.Rule, rec store.Record) {
	v.URI = s.uri(ipRuleKind.collection, v.ID)
	v.IPPolicy = s.ref(ipPolicyKind.collection, v.IPPolicy.ID)
}

// CreateIPPolicyRule adds a rule to an IP policy of the account (POST
// /ip_policy_rules).
func (s *Service) CreateIPPolicyRule(ctx context.Context, p Principal, params ipaccess.CreateRuleParams) (*ipaccess.Rule, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	if err := params.Validate(); err != nil {
		return nil, err
	}
	rule := params.Rule() // Validate has checked and Rule normalises the CIDR
	v := &rule
	v.ID, v.CreatedAt = s.ids.New(ipaccess.RulePrefix), s.timestamp()
	if err := s.createRuleInSlot(ctx, p, v); err != nil {
		return nil, err
	}
	s.presentIPRule(v, store.Record{})
	return v, nil
}

// GetIPPolicyRule returns an IP policy rule.
func (s *Service) GetIPPolicyRule(ctx context.Context, p Principal, id string) (*ipaccess.Rule, error) {
	v, rec, err := get(ctx, s, p, ipRuleForm, id)
	if err != nil {
		return nil, err
	}
	s.presentIPRule(v, rec)
	return v, nil
}

// ListIPPolicyRules returns a page of the account's IP policy rules,
// newest first.
func (s *Service) ListIPPolicyRules(ctx context.Context, p Principal, opts ListOptions) (*Page[ipaccess.Rule], error) {
	return list(ctx, s, p, ipRuleForm, "", ipRuleKind.collection, opts, s.presentIPRule)
}

// UpdateIPPolicyRule changes the fields present in params.
func (s *Service) UpdateIPPolicyRule(ctx context.Context, p Principal, id string, params ipaccess.UpdateRuleParams) (*ipaccess.Rule, error) {
	if err := params.Validate(); err != nil {
		return nil, err
	}
	v, err := update(ctx, s, p, ipRuleForm, id, func(v *ipaccess.Rule, _ *store.Record) error {
		params.Apply(v)
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.presentIPRule(v, store.Record{})
	return v, nil
}

// DeleteIPPolicyRule deletes an IP policy rule.
func (s *Service) DeleteIPPolicyRule(ctx context.Context, p Principal, id string) error {
	return s.remove(ctx, p, ipRuleKind, id)
}

// createRuleInSlot stores v as a rule of its policy, or refuses it when
// the policy already has ipaccess.MaxRulesPerPolicy rules.
func (s *Service) createRuleInSlot(ctx context.Context, p Principal, v *ipaccess.Rule) error {
	policyID := v.IPPolicy.ID
	err := createInSlot(ctx, s, p, ipRuleForm, v.ID, policyID, v, nil, ipaccess.MaxRulesPerPolicy, func() error {
		return apierr.Invalidf("ip_policy_id", "IP policy %s already has %d rules, the most one policy may have; delete a rule first",
			policyID, ipaccess.MaxRulesPerPolicy)
	})
	return refViolation(err, "ip_policy_id", false, nil)
}

// IPPolicySet returns the combined rules of the account's IP policies
// policyIDs as an [ipaccess.Set] that answers whether a source IP may
// connect. An ID that is not one of the account's policies is not found.
func (s *Service) IPPolicySet(ctx context.Context, p Principal, policyIDs []string) (*ipaccess.Set, error) {
	for _, id := range policyIDs {
		if _, _, err := get(ctx, s, p, ipPolicyForm, id); err != nil {
			return nil, err
		}
	}
	return s.ipSet(ctx, p.AccountID, policyIDs)
}

// CheckIP reports whether ip may connect under the account's IP policies
// policyIDs (deny rules win; when any allow rule exists, an address no
// rule matches is denied).
func (s *Service) CheckIP(ctx context.Context, p Principal, policyIDs []string, ip netip.Addr) (bool, error) {
	set, err := s.IPPolicySet(ctx, p, policyIDs)
	if err != nil {
		return false, err
	}
	return set.Allowed(ip), nil
}

func (s *Service) presentIPRestriction(v *ipaccess.Restriction, _ store.Record) {
	v.URI = s.uri(ipRestrictionKind.collection, v.ID)
	for i := range v.IPPolicies {
		v.IPPolicies[i] = s.ref(ipPolicyKind.collection, v.IPPolicies[i].ID)
	}
	if v.IPPolicies == nil {
		v.IPPolicies = []resource.Ref{}
	}
}

// CreateIPRestriction creates an IP restriction (POST /ip_restrictions).
// Every ip_policy_ids entry must name an IP policy of the account; the
// check and the write are one atomic step. An account has at most
// [ipaccess.MaxRestrictionsPerAccount] restrictions: one more is a
// failed precondition.
func (s *Service) CreateIPRestriction(ctx context.Context, p Principal, params ipaccess.CreateRestrictionParams) (*ipaccess.Restriction, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	if err := params.Validate(); err != nil {
		return nil, err
	}
	r := params.Restriction()
	v := &r
	v.ID, v.CreatedAt = s.ids.New(ipaccess.RestrictionPrefix), s.timestamp()
	full := func() error {
		return apierr.New(apierr.FailedPrecondition, "the account already has %d IP restrictions, the most one account may have; delete one first",
			ipaccess.MaxRestrictionsPerAccount)
	}
	if err := createInSlot(ctx, s, p, ipRestrictionForm, v.ID, "", v, params.IPPolicyIDs, ipaccess.MaxRestrictionsPerAccount, full); err != nil {
		return nil, refViolation(err, "ip_policy_ids", true, params.IPPolicyIDs)
	}
	s.presentIPRestriction(v, store.Record{})
	return v, nil
}

// GetIPRestriction returns an IP restriction (GET /ip_restrictions/{id}).
func (s *Service) GetIPRestriction(ctx context.Context, p Principal, id string) (*ipaccess.Restriction, error) {
	v, rec, err := get(ctx, s, p, ipRestrictionForm, id)
	if err != nil {
		return nil, err
	}
	s.presentIPRestriction(v, rec)
	return v, nil
}

// ListIPRestrictions returns a page of the account's IP restrictions,
// newest first (GET /ip_restrictions).
func (s *Service) ListIPRestrictions(ctx context.Context, p Principal, opts ListOptions) (*Page[ipaccess.Restriction], error) {
	return list(ctx, s, p, ipRestrictionForm, "", ipRestrictionKind.collection, opts, s.presentIPRestriction)
}

// UpdateIPRestriction changes the fields present in params (PATCH
// /ip_restrictions/{id}); type cannot be changed.
func (s *Service) UpdateIPRestriction(ctx context.Context, p Principal, id string, params ipaccess.UpdateRestrictionParams) (*ipaccess.Restriction, error) {
	if err := params.Validate(); err != nil {
		return nil, err
	}
	v, err := update(ctx, s, p, ipRestrictionForm, id, func(v *ipaccess.Restriction, rec *store.Record) error {
		params.Apply(v)
		rec.Refs = make([]string, len(v.IPPolicies))
		for i, r := range v.IPPolicies {
			rec.Refs[i] = r.ID
		}
		return nil
	})
	if err != nil {
		var named []string
		if params.IPPolicyIDs != nil {
			named = *params.IPPolicyIDs
		}
		return nil, refViolation(err, "ip_policy_ids", true, named)
	}
	s.presentIPRestriction(v, store.Record{})
	return v, nil
}

// DeleteIPRestriction deletes an IP restriction (DELETE
// /ip_restrictions/{id}).
func (s *Service) DeleteIPRestriction(ctx context.Context, p Principal, id string) error {
	return s.remove(ctx, p, ipRestrictionKind, id)
}
