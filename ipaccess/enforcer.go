package ipaccess

import (
	"net/netip"
	"slices"
)

// MaxRestrictionsPerAccount is the largest number of IP restrictions one
// account may have (of every type together): a data plane checks every
// restriction of type endpoints on each connection, so their number is
// bounded like the rules of a policy are.
const MaxRestrictionsPerAccount = 100

// Enforcer is an account's IP restrictions of one type, each with the
// combined rules of its IP policies, ready to check a source address:
// traffic is refused when an enforced restriction's rules refuse its
// address, and a restriction that is not enforced only warns. Build one
// with [NewEnforcer]. It is immutable and safe for concurrent use; a nil
// *Enforcer has no restrictions and refuses nothing.
type Enforcer struct {
	items []enforced
}

type enforced struct {
	id       string
	enforced bool
	set      *Set
}

// NewEnforcer returns the Enforcer of restrictions, whose i-th rules are
// sets[i] (the combined rules of its IP policies, [NewSet]). It panics
// when the lengths differ.
func NewEnforcer(restrictions []Restriction, sets []*Set) *Enforcer {
	if len(restrictions) != len(sets) {
		panic("ipaccess.NewEnforcer: one set per restriction")
	}
	e := &Enforcer{items: make([]enforced, len(restrictions))}
	for i, r := range restrictions {
		e.items[i] = enforced{id: r.ID, enforced: r.Enforced, set: sets[i]}
	}
	return e
}

// Check returns the ID of the first enforced restriction whose rules
// refuse ip ("" when none does: the traffic may proceed) and, when none
// does, the IDs of the restrictions that are not enforced and whose rules
// refuse ip (the traffic proceeds, with a warning; with a refusal the
// warnings found before it are returned). An invalid ip is refused by the
// first enforced restriction. It allocates only for warnings.
func (e *Enforcer) Check(ip netip.Addr) (refusedBy string, warnings []string) {
	if e == nil {
		return "", nil
	}
	for _, it := range e.items {
		if it.set.Allowed(ip) {
			continue
		}
		if it.enforced {
			return it.id, warnings
		}
		warnings = append(warnings, it.id)
	}
	return "", warnings
}

// Len returns the number of restrictions.
func (e *Enforcer) Len() int {
	if e == nil {
		return 0
	}
	return len(e.items)
}

// PolicyIDs returns the IP policies of restrictions, sorted and without
// repeats: what an Enforcer built from them depends on.
func PolicyIDs(restrictions []Restriction) []string {
	var ids []string
	for _, r := range restrictions {
		for _, p := range r.IPPolicies {
			ids = append(ids, p.ID)
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// EndpointRestrictions is what an edge proxy applies to the traffic of
// every edge of an account before the edge's own modules: the account's
// IP restrictions of type endpoints.
type EndpointRestrictions struct {
	// Enforcer checks a source address against each restriction's IP
	// policies: an enforced restriction that refuses it refuses the
	// traffic; one that is not enforced only warns. Nil when the account
	// has no such restriction.
	Enforcer *Enforcer
	// IPPolicyIDs are the IP policies the restrictions use, sorted and
	// without repeats: a proxy that caches the value reads it again when
	// one of them, or one of their rules, changes (and when an IP
	// restriction of the account changes).
	IPPolicyIDs []string
}
