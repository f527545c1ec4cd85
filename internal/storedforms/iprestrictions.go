package storedforms

import (
	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/ipaccess"
	"github.com/edgeplane/edgeplane/store"
)

// IPRestriction returns the stored form of IP restrictions, of kind k.
func IPRestriction(k *records.Kind) records.Form[ipaccess.Restriction] {
	return records.PlainForm(k,
		func(v *ipaccess.Restriction) *ipRestrictionDoc {
			return &ipRestrictionDoc{Common: records.Common{CreatedAt: v.CreatedAt, Description: v.Description, Metadata: v.Metadata},
				Enforced: v.Enforced, Type: v.Type, IPPolicyIDs: records.RefIDs(v.IPPolicies)}
		},
		func(d *ipRestrictionDoc, rec store.Record) *ipaccess.Restriction {
			return &ipaccess.Restriction{ID: rec.ID, CreatedAt: d.CreatedAt, Description: d.Description, Metadata: d.Metadata,
				Enforced: d.Enforced, Type: d.Type, IPPolicies: records.IDRefs(d.IPPolicyIDs)}
		})
}

type ipRestrictionDoc struct {
	records.Common
	Enforced    bool     `json:"enforced,omitempty"`
	Type        string   `json:"type"`
	IPPolicyIDs []string `json:"ip_policy_ids"`
}
