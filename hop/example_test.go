package hop_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"fmt"
	"io"
	"log"
	"net"
	"net/netip"

	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/hop"
)

// greeter is a tunnel server whose every agent greets the client and
// hangs up.
type greeter struct{ node string }

func (g greeter) DialTunnel(ctx context.Context, node, tunnelID string, h agents.ConnHeader) (net.Conn, error) {
	client, agent := net.Pipe()
	go func() {
		defer agent.Close()
		fmt.Fprintf(agent, "node %s's agent of %s greets %s", node, tunnelID, h)
	}()
	return client, nil
}

// Two nodes of one store: B forwards a connection for a tunnel that A
// holds, and A's tunnel server hands it to the agent.
func Example() {
	key := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize)) // the host's NodeKey()

	a, err := hop.New(hop.Options{Node: "nd_a", Key: key, Local: greeter{}})
	if err != nil {
		log.Fatal(err)
	}
	defer a.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go a.Serve(ln)

	b, err := hop.New(hop.Options{Node: "nd_b", Key: key, Local: greeter{},
		Resolve: func(ctx context.Context, node string) (string, error) {
			if node == "nd_a" {
				return ln.Addr().String(), nil // the store's record of node A
			}
			return "", nil
		}})
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()

	c, err := b.DialTunnel(context.Background(), "nd_a", "tn_1", agents.ConnHeader{
		ClientAddr: netip.MustParseAddrPort("203.0.113.7:51234"), Proto: "https", EdgeType: agents.EdgeHTTPS})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	greeting, err := io.ReadAll(c)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(greeting))
	// Output: node nd_a's agent of tn_1 greets https from 203.0.113.7:51234 (edge type "3")
}

// Every node derives the same certificate from the store's key.
func ExampleIdentity() {
	key := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize))
	one, err := hop.Identity(key)
	if err != nil {
		log.Fatal(err)
	}
	other, err := hop.Identity(key)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(one.Leaf.Subject.CommonName, one.Leaf.NotAfter.Year(), bytes.Equal(one.Certificate[0], other.Certificate[0]))
	// Output: edgeplane node 9999 true
}
