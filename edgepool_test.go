package edgeplane_test

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/credentials"
	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/edges"
)

// TestEdgeOnPool: an edge is refused on the hostport of an endpoint pool,
// at create and when an update moves it there, with the words of any
// hostport in use, and nothing is written; once the pool's last member
// is gone the hostport takes the edge.
func TestEdgeOnPool(t *testing.T) {
	ctx := context.Background()
	svc, p := setup()
	for _, d := range []string{"app.example.com", "other.example.com"} {
		if _, err := svc.CreateReservedDomain(ctx, p, domains.CreateParams{Domain: d}); err != nil {
			t.Fatal(err)
		}
	}
	c, err := svc.CreateCredential(ctx, p, credentials.CreateParams{})
	if err != nil {
		t.Fatal(err)
	}
	tunnels := svc.Host().Tunnels()
	node, err := tunnels.RegisterNode(ctx, agents.NodeParams{})
	if err != nil {
		t.Fatal(err)
	}
	var members []string
	for range 2 {
		ts, err := tunnels.OpenTunnelSession(ctx, *c.Token, agents.SessionParams{IP: netip.MustParseAddr("203.0.113.7"), Node: node.ID})
		if err != nil {
			t.Fatal(err)
		}
		ep, err := tunnels.BindEndpoint(ctx, p.AccountID, ts.ID, agents.EndpointParams{Proto: "https", Domain: "app.example.com", PoolingEnabled: true})
		if err != nil {
			t.Fatal(err)
		}
		members = append(members, ep.ID)
	}
	const inUse = "the hostport app.example.com:443 is already used by another edge or an agent's endpoint; a hostport serves one of them"

	_, err = svc.CreateHTTPSEdge(ctx, p, edges.CreateEdgeParams{Hostports: []string{"app.example.com:443"}})
	if apierr.CodeOf(err) != apierr.Conflict || !strings.Contains(err.Error(), inUse) {
		t.Fatalf("an https edge on the pool: %v", err)
	}
	_, err = svc.CreateTLSEdge(ctx, p, edges.CreateTLSEdgeParams{Hostports: []string{"app.example.com:443"}})
	if apierr.CodeOf(err) != apierr.Conflict || !strings.Contains(err.Error(), inUse) {
		t.Fatalf("a tls edge on the pool: %v", err)
	}
	if l, err := svc.ListHTTPSEdges(ctx, p, edgeplane.ListOptions{}); err != nil || len(l.Items) != 0 {
		t.Fatalf("edges after the refusals: %+v, %v", l, err)
	}

	e, err := svc.CreateHTTPSEdge(ctx, p, edges.CreateEdgeParams{Hostports: []string{"other.example.com:443"}})
	if err != nil {
		t.Fatal(err)
	}
	moved := []string{"other.example.com:443", "app.example.com:443"}
	_, err = svc.UpdateHTTPSEdge(ctx, p, e.ID, edges.UpdateEdgeParams{Hostports: &moved})
	if apierr.CodeOf(err) != apierr.Conflict || !strings.Contains(err.Error(), inUse) {
		t.Fatalf("an update onto the pool: %v", err)
	}
	if got, err := svc.GetHTTPSEdge(ctx, p, e.ID); err != nil || len(got.Hostports) != 1 || got.Hostports[0] != "other.example.com:443" {
		t.Fatalf("the edge after the refused update: %+v, %v", got, err)
	}
	desc := "still fine"
	if _, err := svc.UpdateHTTPSEdge(ctx, p, e.ID, edges.UpdateEdgeParams{Description: &desc}); err != nil {
		t.Fatalf("an update that keeps the hostports: %v", err)
	}

	for _, id := range members {
		if err := tunnels.UnbindEndpoint(ctx, p.AccountID, id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := svc.UpdateHTTPSEdge(ctx, p, e.ID, edges.UpdateEdgeParams{Hostports: &moved}); err != nil {
		t.Fatalf("the hostport once the pool is gone: %v", err)
	}
}
