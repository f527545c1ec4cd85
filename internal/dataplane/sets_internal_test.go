package dataplane

import (
	"net/netip"
	"strconv"
	"testing"

	"github.com/edgeplane/edgeplane/ipaccess"
)

// TestPolicySetsShare: the same rules of a policy give the same *Set (the
// memory is held once however many configs name the policy); changed
// rules, or another policy, give another; the cache stays bounded.
func TestPolicySetsShare(t *testing.T) {
	var c policySets
	rules := []ipaccess.Rule{{CIDR: "10.0.0.0/8", Action: "allow"}, {CIDR: "10.1.0.0/16", Action: "deny"}}
	get := func(key string, rules []ipaccess.Rule) *ipaccess.Set {
		t.Helper()
		s, err := c.get(key, rules)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a := get("acct/ipp_a", rules)
	if b := get("acct/ipp_a", append([]ipaccess.Rule(nil), rules...)); b != a {
		t.Error("the same rules built a second set")
	}
	if b := get("acct/ipp_b", rules); b == a {
		t.Error("another policy shares the first policy's set")
	}
	changed := get("acct/ipp_a", rules[:1])
	if changed == a {
		t.Error("changed rules reuse the old set")
	}
	if changed.Allowed(netip.MustParseAddr("10.1.2.3")) != true || a.Allowed(netip.MustParseAddr("10.1.2.3")) != false {
		t.Error("the sets do not decide by their own rules")
	}
	if _, err := c.get("acct/bad", []ipaccess.Rule{{CIDR: "nope", Action: "allow"}}); err == nil {
		t.Error("a bad rule built a set")
	}
	for i := range maxPolicySets + 10 {
		get("acct/ipp_"+strconv.Itoa(i), rules)
	}
	if n := len(c.sets); n > maxPolicySets {
		t.Errorf("%d sets kept, want at most %d", n, maxPolicySets)
	}
}
