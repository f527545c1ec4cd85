package edgeplane

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"strconv"

	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/internal/storedforms"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/ipaccess"
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

// The identity of the kinds this file declares (see kindList).
var ipPolicyKind = &records.Kind{StoreKind: KindIPPolicy, Prefix: ipaccess.PolicyPrefix, Collection: "ip_policies", Noun: "IP policy", Event: "ip_policy"}

var ipPolicyForm = &kind[ipaccess.Policy]{Form: storedforms.IPPolicy(ipPolicyKind), present: (*Service).presentIPPolicy}

func (s *Service) presentIPPolicy(v *ipaccess.Policy, _ store.Record) {
	v.URI = s.uri(ipPolicyKind.Collection, v.ID)
}

// CreateIPPolicy creates an IP policy (POST /ip_policies).
func (s *Service) CreateIPPolicy(ctx context.Context, p Principal, params ipaccess.CreatePolicyParams) (*ipaccess.Policy, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	if err := params.Validate(); err != nil {
		return nil, err
	}
	pol := params.Policy()
	v := &pol
	v.ID, v.CreatedAt = s.ids.New(ipaccess.PolicyPrefix), s.timestamp()
	if err := records.Create(ctx, s.db, p, ipPolicyForm.Form, v.ID, "", v, nil); err != nil {
		return nil, err
	}
	s.presentIPPolicy(v, store.Record{})
	return v, nil
}

// GetIPPolicy returns an IP policy (GET /ip_policies/{id}).
func (s *Service) GetIPPolicy(ctx context.Context, p Principal, id string) (*ipaccess.Policy, error) {
	v, rec, err := records.Get(ctx, s.db, p, ipPolicyForm.Form, id)
	if err != nil {
		return nil, err
	}
	s.presentIPPolicy(v, rec)
	return v, nil
}

// ListIPPolicies returns a page of the account's IP policies, newest first.
func (s *Service) ListIPPolicies(ctx context.Context, p Principal, opts ListOptions) (*Page[ipaccess.Policy], error) {
	return list(ctx, s, p, ipPolicyForm.Form, "", ipPolicyKind.Collection, opts, s.presentIPPolicy)
}

// UpdateIPPolicy changes the fields present in params.
func (s *Service) UpdateIPPolicy(ctx context.Context, p Principal, id string, params ipaccess.UpdatePolicyParams) (*ipaccess.Policy, error) {
	if err := params.Validate(); err != nil {
		return nil, err
	}
	v, err := records.Update(ctx, s.db, p, ipPolicyForm.Form, id, func(v *ipaccess.Policy, _ *store.Record) error {
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
	return records.Remove(ctx, s.db, p, ipPolicyKind, id)
}

// IPPolicySet returns the combined rules of the account's IP policies
// policyIDs as an [ipaccess.Set] that answers whether a source IP may
// connect. An ID that is not one of the account's policies is not found.
func (s *Service) IPPolicySet(ctx context.Context, p Principal, policyIDs []string) (*ipaccess.Set, error) {
	for _, id := range policyIDs {
		if _, _, err := records.Get(ctx, s.db, p, ipPolicyForm.Form, id); err != nil {
			return nil, err
		}
	}
	return s.dataplane.IPSet(ctx, p.AccountID, policyIDs)
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
