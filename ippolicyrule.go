package edgeplane

import (
	"context"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/internal/storedforms"
	"github.com/edgeplane/edgeplane/ipaccess"
	"github.com/edgeplane/edgeplane/store"
)

var ipRuleKind = &records.Kind{StoreKind: KindIPPolicyRule, Prefix: ipaccess.RulePrefix, Collection: "ip_policy_rules", Noun: "IP policy rule", Event: "ip_policy_rule", Parent: ipPolicyKind}

var ipRuleForm = &kind[ipaccess.Rule]{Form: storedforms.IPRule(ipRuleKind), present: (*Service).presentIPRule}

func (s *Service) presentIPRule(v *ipaccess.Rule, rec store.Record) {
	v.URI = s.uri(ipRuleKind.Collection, v.ID)
	v.IPPolicy = s.ref(ipPolicyKind.Collection, v.IPPolicy.ID)
}

// CreateIPPolicyRule adds a rule to an IP policy of the account (POST
// /ip_policy_rules).
func (s *Service) CreateIPPolicyRule(ctx context.Context, p Principal, params ipaccess.CreateRuleParams) (*ipaccess.Rule, error) {
	if err := p.Check(); err != nil {
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
	v, rec, err := records.Get(ctx, s.db, p, ipRuleForm.Form, id)
	if err != nil {
		return nil, err
	}
	s.presentIPRule(v, rec)
	return v, nil
}

// ListIPPolicyRules returns a page of the account's IP policy rules,
// newest first.
func (s *Service) ListIPPolicyRules(ctx context.Context, p Principal, opts ListOptions) (*Page[ipaccess.Rule], error) {
	return list(ctx, s, p, ipRuleForm.Form, "", ipRuleKind.Collection, opts, s.presentIPRule)
}

// UpdateIPPolicyRule changes the fields present in params.
func (s *Service) UpdateIPPolicyRule(ctx context.Context, p Principal, id string, params ipaccess.UpdateRuleParams) (*ipaccess.Rule, error) {
	if err := params.Validate(); err != nil {
		return nil, err
	}
	v, err := records.Update(ctx, s.db, p, ipRuleForm.Form, id, func(v *ipaccess.Rule, _ *store.Record) error {
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
	return records.Remove(ctx, s.db, p, ipRuleKind, id)
}

// createRuleInSlot stores v as a rule of its policy, or refuses it when
// the policy already has ipaccess.MaxRulesPerPolicy rules.
func (s *Service) createRuleInSlot(ctx context.Context, p Principal, v *ipaccess.Rule) error {
	policyID := v.IPPolicy.ID
	err := records.CreateInSlot(ctx, s.db, p, ipRuleForm.Form, v.ID, policyID, v, nil, ipaccess.MaxRulesPerPolicy, func() error {
		return apierr.Invalidf("ip_policy_id", "IP policy %s already has %d rules, the most one policy may have; delete a rule first",
			policyID, ipaccess.MaxRulesPerPolicy)
	})
	return refViolation(err, "ip_policy_id", false, nil)
}
