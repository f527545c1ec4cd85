package edgeplane_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/hosting"
	"github.com/edgeplane/edgeplane/ipaccess"
)

// TestListHostEdges: the host lists the HTTPS, TLS and TCP edges of
// every account, each kind apart, newest first, page by page, and refuses
// a bad limit.
func TestListHostEdges(t *testing.T) {
	e := newEnv(t)
	create := map[string]func(p edgeplane.Principal) (string, error){
		"https": func(p edgeplane.Principal) (string, error) {
			v, err := e.svc.CreateHTTPSEdge(e.ctx, p, edges.CreateEdgeParams{})
			if err != nil {
				return "", err
			}
			return v.ID, nil
		},
		"tls": func(p edgeplane.Principal) (string, error) {
			v, err := e.svc.CreateTLSEdge(e.ctx, p, edges.CreateTLSEdgeParams{})
			if err != nil {
				return "", err
			}
			return v.ID, nil
		},
		"tcp": func(p edgeplane.Principal) (string, error) {
			v, err := e.svc.CreateTCPEdge(e.ctx, p, edges.CreateTCPEdgeParams{})
			if err != nil {
				return "", err
			}
			return v.ID, nil
		},
	}
	want := map[string][]hosting.EdgeRef{}
	// Interleaved, so that each listing must leave the other kinds out.
	for i, p := range []edgeplane.Principal{e.user, e.other, e.user, e.other, e.admin} {
		for _, kind := range []string{"https", "tls", "tcp"} {
			id, err := create[kind](p)
			if err != nil {
				t.Fatal(i, kind, err)
			}
			want[kind] = append(want[kind], hosting.EdgeRef{AccountID: p.AccountID, ID: id})
		}
	}
	if _, err := e.svc.CreateHTTPSEdgeRoute(e.ctx, e.user, want["https"][0].ID, edges.CreateRouteParams{MatchType: edges.MatchPathPrefix, Match: "/"}); err != nil { // not listed
		t.Fatal(err)
	}
	if _, err := e.svc.CreateIPPolicy(e.ctx, e.user, ipaccess.CreatePolicyParams{}); err != nil { // not listed
		t.Fatal(err)
	}
	host := e.svc.Host()
	for kind, list := range map[string]func(context.Context, edgeplane.ListOptions) ([]hosting.EdgeRef, string, error){
		"https": host.DataPlane().ListHTTPSEdges, "tls": host.DataPlane().ListTLSEdges, "tcp": host.DataPlane().ListTCPEdges,
	} {
		t.Run(kind, func(t *testing.T) {
			want := slices.Clone(want[kind])
			slices.Reverse(want)
			for _, limit := range []int{0, 1, 2, 5} {
				var got []hosting.EdgeRef
				opts := edgeplane.ListOptions{Limit: limit}
				for pages := 0; ; pages++ {
					refs, next, err := list(e.ctx, opts)
					if err != nil {
						t.Fatal(err)
					}
					if limit > 0 && len(refs) > limit {
						t.Fatalf("limit %d: page of %d", limit, len(refs))
					}
					got = append(got, refs...)
					if next == "" {
						break
					}
					if pages > 10 {
						t.Fatalf("limit %d: paging does not end", limit)
					}
					opts.BeforeID = next
				}
				if !slices.Equal(got, want) {
					t.Errorf("limit %d: listed %v, want %v", limit, got, want)
				}
			}
			for _, limit := range []int{-1, edgeplane.MaxPageSize + 1} {
				_, _, err := list(e.ctx, edgeplane.ListOptions{Limit: limit})
				wantCode(t, err, apierr.InvalidArgument)
			}
		})
	}
}

// TestRouteConfigIPPolicyIDs: a route's config names the IP policies its
// compiled traffic policy read, sorted and once each; none when the
// policy is disabled.
func TestRouteConfigIPPolicyIDs(t *testing.T) {
	e := newEnv(t)
	edge, err := e.svc.CreateHTTPSEdge(e.ctx, e.user, edges.CreateEdgeParams{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := e.svc.CreateHTTPSEdgeRoute(e.ctx, e.user, edge.ID, edges.CreateRouteParams{MatchType: edges.MatchPathPrefix, Match: "/"})
	if err != nil {
		t.Fatal(err)
	}
	var ipps []string
	for range 2 {
		ipp, err := e.svc.CreateIPPolicy(e.ctx, e.user, ipaccess.CreatePolicyParams{})
		if err != nil {
			t.Fatal(err)
		}
		ipps = append(ipps, ipp.ID)
	}
	doc := `{"inbound":[{"actions":[{"type":"restrict-ips","config":{"ip_policies":["` + ipps[1] + `","` + ipps[0] + `"]}}]},` +
		`{"actions":[{"type":"restrict-ips","config":{"ip_policies":["` + ipps[1] + `"]}}]}]}`
	for _, tc := range []struct {
		name    string
		enabled bool
		want    []string
	}{
		{"enabled", true, []string{min(ipps[0], ipps[1]), max(ipps[0], ipps[1])}},
		{"disabled", false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := e.svc.ReplaceHTTPSRouteTrafficPolicy(e.ctx, e.user, edge.ID, r.ID, edges.TrafficPolicyParams{Value: doc, Enabled: ptr(tc.enabled)}); err != nil {
				t.Fatal(err)
			}
			c, err := e.svc.Host().DataPlane().HTTPSRouteConfig(e.ctx, e.user.AccountID, edge.ID, r.ID)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(c.IPPolicyIDs, tc.want) {
				t.Errorf("IPPolicyIDs %v, want %v", c.IPPolicyIDs, tc.want)
			}
		})
	}
}

// TestHostWaitRevision: it returns once the record cache has followed the
// feed to the revision, and at once after Close, when the cache is
// bypassed and would never follow further.
func TestHostWaitRevision(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
	defer cancel()
	rev, err := e.store.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.svc.Host().WaitRevision(ctx, rev); err != nil {
		t.Fatalf("waiting for the current revision %d: %v", rev, err)
	}
	if err := e.svc.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.Host().WaitRevision(ctx, rev+1000); err != nil {
		t.Errorf("after Close: %v", err)
	}
}
