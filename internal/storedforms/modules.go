package storedforms

import (
	"slices"

	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/resource"

	"github.com/edgeplane/edgeplane/edges"
)

type backendModuleDoc struct {
	Enabled   bool   `json:"enabled"`
	BackendID string `json:"backend_id"`
}

type ipRestrictionModuleDoc struct {
	Enabled     bool     `json:"enabled"`
	IPPolicyIDs []string `json:"ip_policy_ids"`
}

type trafficPolicyDoc struct {
	Enabled     bool     `json:"enabled"`
	Value       string   `json:"value"`
	IPPolicyIDs []string `json:"ip_policy_ids,omitempty"`
}

func saveBackendModule(m *edges.Backend) *backendModuleDoc {
	if m == nil {
		return nil
	}
	return &backendModuleDoc{Enabled: m.Enabled, BackendID: m.Backend.ID}
}

func loadBackendModule(d *backendModuleDoc) *edges.Backend {
	if d == nil {
		return nil
	}
	return &edges.Backend{Enabled: d.Enabled, Backend: resource.Ref{ID: d.BackendID}}
}

func saveIPRestrictionModule(m *edges.IPRestriction) *ipRestrictionModuleDoc {
	if m == nil {
		return nil
	}
	return &ipRestrictionModuleDoc{Enabled: m.Enabled, IPPolicyIDs: records.RefIDs(m.IPPolicies)}
}

func loadIPRestrictionModule(d *ipRestrictionModuleDoc) *edges.IPRestriction {
	if d == nil {
		return nil
	}
	return &edges.IPRestriction{Enabled: d.Enabled, IPPolicies: records.IDRefs(d.IPPolicyIDs)}
}

func saveTrafficPolicy(m *edges.TrafficPolicy) *trafficPolicyDoc {
	if m == nil {
		return nil
	}
	return &trafficPolicyDoc{Enabled: m.Enabled, Value: m.Value, IPPolicyIDs: m.IPPolicyIDs}
}

func loadTrafficPolicy(d *trafficPolicyDoc) *edges.TrafficPolicy {
	if d == nil {
		return nil
	}
	return &edges.TrafficPolicy{Enabled: d.Enabled, Value: d.Value, IPPolicyIDs: slices.Clone(d.IPPolicyIDs)}
}
