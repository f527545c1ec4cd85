package dataplane

import (
	"strconv"
	"testing"

	"github.com/edgeplane/edgeplane/ipaccess"
)

// TestAccessCacheGenerations: what was read before a Forget or a Clear
// is not kept after it (the restrictions read may be the old ones);
// Forget drops one account's types, Clear every account; the cache
// stays bounded; a nil cache keeps nothing.
func TestAccessCacheGenerations(t *testing.T) {
	var c AccessCache
	e := new(ipaccess.Enforcer)

	gen := c.note()
	c.Forget("acct_b") // a write of another account's restrictions meanwhile
	c.put("acct_a", ipaccess.TypeAPI, e, gen)
	if _, ok := c.get("acct_a", ipaccess.TypeAPI); ok {
		t.Error("kept what was read before a Forget")
	}

	c.put("acct_a", ipaccess.TypeAPI, e, c.note())
	c.put("acct_a", ipaccess.TypeAgent, nil, c.note())
	c.put("acct_b", ipaccess.TypeAPI, e, c.note())
	if got, ok := c.get("acct_a", ipaccess.TypeAPI); !ok || got != e {
		t.Errorf("get = %p, %v; want the Enforcer put", got, ok)
	}
	if got, ok := c.get("acct_a", ipaccess.TypeAgent); !ok || got != nil {
		t.Errorf("get of no restrictions = %p, %v; want kept as nil", got, ok)
	}
	c.Forget("acct_a")
	_, okAPI := c.get("acct_a", ipaccess.TypeAPI)
	_, okAgent := c.get("acct_a", ipaccess.TypeAgent)
	_, okOther := c.get("acct_b", ipaccess.TypeAPI)
	if okAPI || okAgent || !okOther {
		t.Errorf("after Forget(acct_a): acct_a api %v, agent %v, acct_b %v; want only acct_b kept", okAPI, okAgent, okOther)
	}

	gen = c.note()
	c.Clear()
	c.put("acct_c", ipaccess.TypeAPI, e, gen)
	if _, ok := c.get("acct_b", ipaccess.TypeAPI); ok {
		t.Error("Clear kept acct_b")
	}
	if _, ok := c.get("acct_c", ipaccess.TypeAPI); ok {
		t.Error("kept what was read before a Clear")
	}

	for i := range maxAccessEntries + 10 {
		c.put("acct_"+strconv.Itoa(i), ipaccess.TypeAPI, e, c.note())
	}
	if c.n > maxAccessEntries {
		t.Errorf("%d entries kept; want at most %d", c.n, maxAccessEntries)
	}

	var none *AccessCache
	none.put("acct_a", ipaccess.TypeAPI, e, none.note())
	none.Forget("acct_a")
	none.Clear()
	if _, ok := none.get("acct_a", ipaccess.TypeAPI); ok {
		t.Error("a nil cache kept something")
	}
}
