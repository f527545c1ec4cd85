package edgeplane

import (
	"context"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/internal/storedforms"
	"github.com/edgeplane/edgeplane/ipaccess"
	"github.com/edgeplane/edgeplane/resource"
	"github.com/edgeplane/edgeplane/store"
)

var ipRestrictionKind = &records.Kind{StoreKind: KindIPRestriction, Prefix: ipaccess.RestrictionPrefix, Collection: "ip_restrictions", Noun: "IP restriction", Event: "ip_restriction"}

var ipRestrictionForm = &kind[ipaccess.Restriction]{Form: storedforms.IPRestriction(ipRestrictionKind), present: (*Service).presentIPRestriction}

func (s *Service) presentIPRestriction(v *ipaccess.Restriction, _ store.Record) {
	v.URI = s.uri(ipRestrictionKind.Collection, v.ID)
	for i := range v.IPPolicies {
		v.IPPolicies[i] = s.ref(ipPolicyKind.Collection, v.IPPolicies[i].ID)
	}
	if v.IPPolicies == nil {
		v.IPPolicies = []resource.Ref{}
	}
}

// CreateIPRestriction creates an IP restriction (POST /ip_restrictions).
// An enforced restriction of type api whose IP policies would refuse the
// address of the request creating it, when known ([Principal.ClientIP]),
// is refused with an [apierr.InvalidArgument] error naming enforced: an
// account cannot lock itself out of the API with one call;
// [Service.UpdateIPRestriction] refuses the same.
// Every ip_policy_ids entry must name an IP policy of the account; the
// check and the write are one atomic step. An account has at most
// [ipaccess.MaxRestrictionsPerAccount] restrictions: one more is a
// failed precondition.
func (s *Service) CreateIPRestriction(ctx context.Context, p Principal, params ipaccess.CreateRestrictionParams) (*ipaccess.Restriction, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	if err := params.Validate(); err != nil {
		return nil, err
	}
	r := params.Restriction()
	v := &r
	if err := s.checkSelfLockout(ctx, p, v); err != nil {
		return nil, err
	}
	v.ID, v.CreatedAt = s.ids.New(ipaccess.RestrictionPrefix), s.timestamp()
	full := func() error {
		return apierr.New(apierr.FailedPrecondition, "the account already has %d IP restrictions, the most one account may have; delete one first",
			ipaccess.MaxRestrictionsPerAccount)
	}
	if err := records.CreateInSlot(ctx, s.db, p, ipRestrictionForm.Form, v.ID, "", v, params.IPPolicyIDs, ipaccess.MaxRestrictionsPerAccount, full); err != nil {
		return nil, refViolation(err, "ip_policy_ids", true, params.IPPolicyIDs)
	}
	s.presentIPRestriction(v, store.Record{})
	return v, nil
}

// GetIPRestriction returns an IP restriction (GET /ip_restrictions/{id}).
func (s *Service) GetIPRestriction(ctx context.Context, p Principal, id string) (*ipaccess.Restriction, error) {
	v, rec, err := records.Get(ctx, s.db, p, ipRestrictionForm.Form, id)
	if err != nil {
		return nil, err
	}
	s.presentIPRestriction(v, rec)
	return v, nil
}

// ListIPRestrictions returns a page of the account's IP restrictions,
// newest first (GET /ip_restrictions).
func (s *Service) ListIPRestrictions(ctx context.Context, p Principal, opts ListOptions) (*Page[ipaccess.Restriction], error) {
	return list(ctx, s, p, ipRestrictionForm.Form, "", ipRestrictionKind.Collection, opts, s.presentIPRestriction)
}

// UpdateIPRestriction changes the fields present in params (PATCH
// /ip_restrictions/{id}); type cannot be changed.
func (s *Service) UpdateIPRestriction(ctx context.Context, p Principal, id string, params ipaccess.UpdateRestrictionParams) (*ipaccess.Restriction, error) {
	if err := params.Validate(); err != nil {
		return nil, err
	}
	if params.Enforced != nil || params.IPPolicyIDs != nil {
		// The restriction as the update would leave it: an enforced api
		// one must not refuse this request's address. (Checked before the
		// write, not in it: the rules are read from other records.)
		cur, err := s.GetIPRestriction(ctx, p, id)
		if err != nil {
			return nil, err
		}
		params.Apply(cur)
		if err := s.checkSelfLockout(ctx, p, cur); err != nil {
			return nil, err
		}
	}
	v, err := records.Update(ctx, s.db, p, ipRestrictionForm.Form, id, func(v *ipaccess.Restriction, rec *store.Record) error {
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
	return records.Remove(ctx, s.db, p, ipRestrictionKind, id)
}
