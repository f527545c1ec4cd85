package edgeplane

import (
	"slices"
	"testing"

	"github.com/edgeplane/edgeplane/internal/cachesync"
	"github.com/edgeplane/edgeplane/kinds"
	"github.com/edgeplane/edgeplane/store"
)

// TestKindListComplete: every kind package kinds names as shown by the
// API is declared in kindList, once and in the same order (the default
// event registry's), and every declaration's identity is whole. A kind
// left out of the list would otherwise store records that produce no
// events, no messages naming them and no traits.
func TestKindListComplete(t *testing.T) {
	consts := kinds.Shown
	var order []store.Kind
	for _, d := range kindList {
		order = append(order, d.info().StoreKind)
	}
	if !slices.Equal(order, consts) {
		t.Errorf("kindList declares %v; package kinds shows %v, in that order", order, consts)
	}
	seen := map[store.Kind]int{}
	prefixes := map[string]store.Kind{}
	for _, d := range kindList {
		k := d.info()
		seen[k.StoreKind]++
		if k.Prefix == "" || k.Collection == "" || k.Noun == "" {
			t.Errorf("kind %s: prefix %q, collection %q, noun %q: each must be set", k.StoreKind, k.Prefix, k.Collection, k.Noun)
		}
		if other, dup := prefixes[k.Prefix]; dup {
			t.Errorf("kinds %s and %s share the ID prefix %q", other, k.StoreKind, k.Prefix)
		}
		prefixes[k.Prefix] = k.StoreKind
		if k.Event != "" && !d.presents() {
			t.Errorf("kind %s reports changes but has no presentation (present): its events would show no URI", k.StoreKind)
		}
		if k.Nested && k.Parent == nil {
			t.Errorf("kind %s is nested but has no parent", k.StoreKind)
		}
	}
	for _, c := range consts {
		if seen[c] != 1 {
			t.Errorf("kind %s is declared %d times in kindList, want once", c, seen[c])
		}
	}
	if len(kindList) != len(consts) {
		t.Errorf("kindList has %d kinds, kinds.go %d constants", len(kindList), len(consts))
	}
}

// TestInternalKindsKnown: the Service's own kinds (nodes, leases, ACME
// state, delivery states...) are package kinds' internal ones, or the
// followers of the feed would log their changes as an unknown kind.
func TestInternalKindsKnown(t *testing.T) {
	for _, k := range []store.Kind{kindSealingCheck, kinds.Node, kinds.Lease, kinds.ACMEAccount, kinds.ACMEChallenge, kinds.Delivery} {
		if !isInternal(k) {
			t.Errorf("store kind %q is not internal", k)
		}
		if _, declared := declOf(k); declared {
			t.Errorf("internal kind %q is declared in kindList", k)
		}
	}
}

// TestKindTraits: the traits of kinds as caches and proxies read them,
// and package kinds knows every declared kind.
func TestKindTraits(t *testing.T) {
	for _, tc := range []struct {
		kind store.Kind
		want traits
	}{
		{KindAPIKey, traits{auth: cachesync.AuthForgetRecord}},
		{KindBot, traits{auth: cachesync.AuthForgetAll}},
		{KindHTTPSEdgeRoute, traits{}},
		{KindEndpoint, traits{}},
		{KindCredential, traits{}},
	} {
		d, ok := declOf(tc.kind)
		if !ok {
			t.Fatalf("kind %s is not declared", tc.kind)
		}
		if got := d.traitsOf(); got != tc.want {
			t.Errorf("traits of %s: %+v; want %+v", tc.kind, got, tc.want)
		}
	}
	for _, d := range kindList {
		if _, ok := kinds.DataPlaneRoleOf(d.info().StoreKind); !ok {
			t.Errorf("package kinds does not know the declared kind %s", d.info().StoreKind)
		}
	}
}
