package storedforms

import (
	"github.com/edgeplane/edgeplane/internal/records"

	"github.com/edgeplane/edgeplane/ipaccess"
	"github.com/edgeplane/edgeplane/store"
)

// IPPolicy returns the stored form of IP policies, of kind k.
func IPPolicy(k *records.Kind) records.Form[ipaccess.Policy] {
	return records.PlainForm(k,
		func(v *ipaccess.Policy) *ipPolicyDoc {
			return &ipPolicyDoc{Common: records.Common{CreatedAt: v.CreatedAt, Description: v.Description, Metadata: v.Metadata}}
		},
		func(d *ipPolicyDoc, rec store.Record) *ipaccess.Policy {
			return &ipaccess.Policy{ID: rec.ID, CreatedAt: d.CreatedAt, Description: d.Description, Metadata: d.Metadata}
		})
}

// The stored forms of IP policies, rules and restrictions (see package internal/records).
// A rule's policy is its record's parent.
type ipPolicyDoc struct {
	records.Common
}
