package agentstate_test

import (
	"context"
	"testing"

	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/apierr"
)

// TestFreePortSkipsPools: a tcp endpoint without an address, pooled or
// not, never lands on the port a pool serves (whose members hold no
// key): it gets the range's other port, and once that is taken too the
// range is exhausted.
func TestFreePortSkipsPools(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	open := e.opener(t, e.credential(t, "usr_x"))
	bind := func(addr string, pooled bool) (*agents.Endpoint, error) {
		return e.s.BindEndpoint(ctx, account, open(), agents.EndpointParams{Proto: agents.ProtoTCP, Addr: addr,
			TCPHost: "tcp.example.test", TCPLow: 20000, TCPHigh: 20001, PoolingEnabled: pooled})
	}
	for range 2 {
		if _, err := bind("tcp.example.test:20001", true); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 8 { // the first port tried is random: each try must skip the pool
		ep, err := bind("", i%2 == 0)
		if err != nil {
			t.Fatalf("bind %d: %v", i, err)
		}
		if ep.Hostport != "tcp.example.test:20000" {
			t.Fatalf("bind %d (pooled %v) got %s; want the port no pool serves", i, ep.PoolingEnabled, ep.Hostport)
		}
		if err := e.s.UnbindEndpoint(ctx, account, ep.ID); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := bind("tcp.example.test:20000", false); err != nil {
		t.Fatal(err)
	}
	_, err := bind("", false)
	if apierr.CodeOf(err) != apierr.ResourceExhausted {
		t.Fatalf("with both ports taken: %v; want no free port", err)
	}
}
