package edgeplane_test

import (
	"strconv"
	"testing"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/edges"
)

// TestRouteCapHoldsAfterUpdates checks that updating a route (its fields
// or, inline, its modules) keeps its slot: the cap of routes per edge
// still holds afterwards.
func TestRouteCapHoldsAfterUpdates(t *testing.T) {
	e := newEnv(t)
	edge := e.httpsEdge(t, e.user)
	var first string
	for i := range edges.MaxRoutesPerEdge {
		r := e.route(t, e.user, edge.ID, "exact_path", "/r"+strconv.Itoa(i))
		if i == 0 {
			first = r.ID
		}
	}
	if _, err := e.svc.UpdateHTTPSEdgeRoute(e.ctx, e.user, edge.ID, first, edges.UpdateRouteParams{Match: ptr("/moved"),
		Compression: &edges.CompressionParams{}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.ReplaceHTTPSRouteCompression(e.ctx, e.user, edge.ID, first, edges.CompressionParams{}); err != nil {
		t.Fatal(err)
	}
	_, err := e.svc.CreateHTTPSEdgeRoute(e.ctx, e.user, edge.ID, edges.CreateRouteParams{MatchType: "exact_path", Match: "/one-too-many"})
	wantCode(t, err, apierr.FailedPrecondition)
}
