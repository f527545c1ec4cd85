package edgeplane_test

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/credentials"
	"github.com/edgeplane/edgeplane/domains"
)

// What a tunnel server does for an agent's Bind: the endpoint is bound
// in the agent's session on a reserved domain its credential may bind,
// bound again under its ID when the agent reconnects, and gone with the
// session.
func ExampleHost_Tunnels_bindEndpoint() {
	ctx := context.Background()
	svc, p := setup()
	svc.CreateReservedDomain(ctx, p, domains.CreateParams{Domain: "app.example.com"})
	c, _ := svc.CreateCredential(ctx, p, credentials.CreateParams{ACL: []string{"bind:*.example.com"}})

	host := svc.Host()
	node, _ := host.Tunnels().RegisterNode(ctx, agents.NodeParams{})
	params := agents.SessionParams{AgentVersion: "3.18.4", IP: netip.MustParseAddr("203.0.113.7"), Node: node.ID}
	ts, _ := host.Tunnels().OpenTunnelSession(ctx, *c.Token, params)
	ep, err := host.Tunnels().BindEndpoint(ctx, p.AccountID, ts.ID, agents.EndpointParams{Proto: "https", Domain: "app.example.com"})
	if err != nil {
		panic(err)
	}
	fmt.Println(ep.URL, ep.Hostport, ep.Type)
	_, err = host.Tunnels().BindEndpoint(ctx, p.AccountID, ts.ID, agents.EndpointParams{Proto: "https", Domain: "app.example.org"})
	fmt.Println(err)
	_, err = host.Tunnels().BindEndpoint(ctx, p.AccountID, ts.ID, agents.EndpointParams{Proto: "tls", Domain: "app.example.com"})
	fmt.Println(err)

	// The agent reconnects: a new session, the same endpoint.
	again, _ := host.Tunnels().OpenTunnelSession(ctx, *c.Token, params)
	moved, _ := host.Tunnels().BindEndpoint(ctx, p.AccountID, again.ID, agents.EndpointParams{ID: ep.ID, TakeOver: true, Proto: "https", Domain: "app.example.com"})
	fmt.Println("same endpoint:", moved.ID == ep.ID && moved.URL == ep.URL, "new session:", moved.TunnelSession.ID == again.ID)

	host.Tunnels().CloseTunnelSession(ctx, p.AccountID, again.ID)
	_, err = svc.GetEndpoint(ctx, p, ep.ID)
	fmt.Println("gone with its session:", apierr.CodeOf(err) == apierr.NotFound)
	// Output:
	// https://app.example.com app.example.com:443 agent
	// the credential's ACL does not permit binding the domain app.example.org; it needs the rule bind:app.example.org or bind:*.example.org
	// the hostport app.example.com:443 is already used by another edge or an agent's endpoint; a hostport serves one of them
	// same endpoint: true new session: true
	// gone with its session: true
}
