package proxy

import (
	"testing"
	"time"
)

// TestPickPrefersLocalAgents: a backend's tunnels held on the proxy's own
// node are taken before those reached through the hop; healthy before
// unhealthy wherever they are; with no local node, round-robin over all.
func TestPickPrefersLocalAgents(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	bad := func() *health { h := &health{}; h.fail(now.Add(time.Minute)); return h }
	ok := func() *health { return &health{} }
	up := func(id, node string, h *health) upstream {
		return upstream{tunnelID: id, agent: node != "", node: node, url: agentURL, expires: endless, health: h}
	}
	for _, tc := range []struct {
		name  string
		ups   []upstream
		local string
		want  []string // the picks of len(want) requests in a row
	}{
		{"local first, every time", []upstream{up("a", "nd_b", ok()), up("b", "nd_a", ok()), up("c", "nd_b", ok())}, "nd_a",
			[]string{"b", "b", "b"}},
		{"two local: round-robin between them", []upstream{up("a", "nd_a", ok()), up("b", "nd_b", ok()), up("c", "nd_a", ok())}, "nd_a",
			[]string{"c", "a", "c", "a"}},
		{"the local one unhealthy: a remote healthy one", []upstream{up("a", "nd_a", bad()), up("b", "nd_b", ok())}, "nd_a",
			[]string{"b", "b"}},
		{"none local: spread across nodes", []upstream{up("a", "nd_b", ok()), up("b", "nd_c", ok())}, "nd_a",
			[]string{"b", "a", "b"}},
		{"no local node: round-robin", []upstream{up("a", "nd_a", ok()), up("b", "nd_b", ok())}, "",
			[]string{"b", "a", "b"}},
		{"all unhealthy: one anyway", []upstream{up("a", "nd_a", bad()), up("b", "nd_b", bad())}, "nd_b",
			[]string{"b", "a"}},
		{"a registered tunnel is as near as a local agent", []upstream{up("a", "nd_b", ok()), {tunnelID: "r", expires: endless, health: ok()}}, "nd_a",
			[]string{"r", "r"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &pool{upstreams: tc.ups}
			for _, u := range tc.ups {
				if u.agent {
					p.agents++
				}
			}
			p.next.Store(1) // the first pick starts at the second upstream
			var got []string
			for range tc.want {
				u := p.pick(now, true, tc.local)
				if u == nil {
					got = append(got, "<nil>")
					continue
				}
				got = append(got, u.tunnelID)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("picked %q, want %q", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("picked %q, want %q", got, tc.want)
				}
			}
		})
	}
}
