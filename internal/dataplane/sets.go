package dataplane

import (
	"crypto/sha256"
	"sync"

	"github.com/edgeplane/edgeplane/ipaccess"
)

// maxPolicySets bounds the policy sets kept for sharing; past it, one is
// forgotten (its users keep it; a new user builds another).
const maxPolicySets = 4096

// policySets keeps the set built for each IP policy with the digest of
// the rules it was built from: a config that names the policy while its
// rules are the same gets the same *Set. The zero value is ready.
type policySets struct {
	mu   sync.Mutex
	sets map[string]policySet // by account/policy ID
}

type policySet struct {
	sum [sha256.Size]byte
	set *ipaccess.Set
}

// get returns the set of rules, the one already built for key when its
// rules were the same.
func (c *policySets) get(key string, rules []ipaccess.Rule) (*ipaccess.Set, error) {
	h := sha256.New()
	for _, r := range rules {
		h.Write([]byte(r.CIDR))
		h.Write([]byte{0})
		h.Write([]byte(r.Action))
		h.Write([]byte{0})
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	c.mu.Lock()
	e, ok := c.sets[key]
	c.mu.Unlock()
	if ok && e.sum == sum {
		return e.set, nil
	}
	set, err := ipaccess.NewSet(rules)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sets == nil {
		c.sets = map[string]policySet{}
	}
	if _, ok := c.sets[key]; !ok && len(c.sets) >= maxPolicySets {
		for k := range c.sets { // forget one, any
			delete(c.sets, k)
			break
		}
	}
	c.sets[key] = policySet{sum: sum, set: set}
	return set, nil
}
