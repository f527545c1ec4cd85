package storedforms

import (
	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/ipaccess"
	"github.com/edgeplane/edgeplane/resource"
	"github.com/edgeplane/edgeplane/store"
)

// IPRule returns the stored form of IP policy rules, of kind k.
func IPRule(k *records.Kind) records.Form[ipaccess.Rule] {
	return records.PlainForm(k,
		func(v *ipaccess.Rule) *ipRuleDoc {
			return &ipRuleDoc{Common: records.Common{CreatedAt: v.CreatedAt, Description: v.Description, Metadata: v.Metadata}, CIDR: v.CIDR, Action: v.Action}
		},
		func(d *ipRuleDoc, rec store.Record) *ipaccess.Rule {
			return &ipaccess.Rule{ID: rec.ID, CreatedAt: d.CreatedAt, Description: d.Description, Metadata: d.Metadata,
				CIDR: d.CIDR, Action: d.Action, IPPolicy: resource.Ref{ID: rec.ParentID}}
		})
}

type ipRuleDoc struct {
	records.Common
	CIDR   string `json:"cidr"`
	Action string `json:"action"`
}
