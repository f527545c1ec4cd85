package edgeplane_test

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/credentials"
)

// What a tunnel server does for an agent: open its session with the
// agent's authtoken, start the labeled tunnels it asks for, renew the
// session while the agent is connected and close it when it leaves.
func ExampleHost_Tunnels_openTunnelSession() {
	ctx := context.Background()
	svc, p := setup()
	c, _ := svc.CreateCredential(ctx, p, credentials.CreateParams{ACL: []string{"bind:app=*"}})

	host := svc.Host()
	// A tunnel server registers itself as a node; its sessions name it.
	node, err := host.Tunnels().RegisterNode(ctx, agents.NodeParams{Addr: "10.0.0.1:4443"})
	if err != nil {
		panic(err)
	}
	ts, err := host.Tunnels().OpenTunnelSession(ctx, *c.Token, agents.SessionParams{AgentVersion: "3.18.4", OS: "linux/amd64",
		IP: netip.MustParseAddr("203.0.113.7"), Node: node.ID})
	if err != nil {
		panic(err)
	}
	fmt.Println("session of the credential:", ts.Credential.ID == c.ID, ts.Transport)

	tn, _ := host.Tunnels().StartLabeledTunnel(ctx, p.AccountID, ts.ID, agents.LabeledTunnelParams{Labels: map[string]string{"app": "web"}})
	fmt.Println("tunnel of the session:", tn.TunnelSession.ID == ts.ID)
	_, err = host.Tunnels().StartLabeledTunnel(ctx, p.AccountID, ts.ID, agents.LabeledTunnelParams{Labels: map[string]string{"env": "prod"}})
	fmt.Println(err)

	// The node renews one lease for all its sessions.
	if _, err := host.Tunnels().RenewNode(ctx, node.ID); err != nil {
		panic(err)
	}
	// The API asks the agent to stop; the tunnel server reads the mark.
	svc.StopTunnelSession(ctx, p, ts.ID)
	got, _ := host.Tunnels().GetTunnelSession(ctx, p.AccountID, ts.ID)
	fmt.Println("stop requested:", got.StopRequested)

	host.Tunnels().CloseTunnelSession(ctx, p.AccountID, ts.ID)
	_, err = svc.GetTunnel(ctx, p, tn.ID)
	fmt.Println("its tunnel is gone:", apierr.CodeOf(err) == apierr.NotFound)
	// Output:
	// session of the credential: true ngrok/2
	// tunnel of the session: true
	// the credential's ACL does not permit binding the labels env=prod; it needs a bind:<key>=<value> rule for each
	// stop requested: true
	// its tunnel is gone: true
}
