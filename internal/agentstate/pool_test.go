package agentstate_test

import (
	"context"
	"net/netip"
	"testing"

	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/apierr"
)

// TestEndpointPool: binds with pooling enabled on one address form a
// pool (each its own endpoint, the pool shown on each); a bind without
// pooling on the pool's address is refused with the original's words,
// and the reverse; once the pool's last member is gone, the address
// binds without pooling; a pooled tcp endpoint without an address gets
// a port of its own, which others then join.
func TestEndpointPool(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	open := e.opener(t, e.credential(t, "usr_x")) // an empty ACL binds anything
	s1, s2, s3 := open(), open(), open()
	bind := func(sess, addr string, pooled bool) (*agents.Endpoint, error) {
		return e.s.BindEndpoint(ctx, account, sess, agents.EndpointParams{Proto: agents.ProtoTCP, Addr: addr,
			TCPHost: "tcp.example.test", TCPLow: 20000, TCPHigh: 20009, PoolingEnabled: pooled})
	}
	const addr = "tcp.example.test:20001"
	a, err := bind(s1, addr, true)
	if err != nil {
		t.Fatal(err)
	}
	b, err := bind(s2, addr, true)
	if err != nil {
		t.Fatalf("the second member: %v", err)
	}
	if !a.PoolingEnabled || !b.PoolingEnabled || a.URL != b.URL || a.ID == b.ID {
		t.Fatalf("members %+v and %+v", a, b)
	}
	for _, id := range []string{a.ID, b.ID} {
		got, err := e.s.Endpoint(ctx, account, id)
		if err != nil {
			t.Fatal(err)
		}
		if got.Pool == nil || got.Pool.URL != "tcp://"+addr || len(got.Pool.Endpoints) != 2 ||
			got.Pool.Endpoints[0].ID != a.ID || got.Pool.Endpoints[1].ID != b.ID || got.Pool.Endpoints[0].URI != "presented" {
			t.Errorf("the pool of %s: %+v", id, got.Pool)
		}
	}

	_, err = bind(s3, addr, false)
	wantCode(t, err, apierr.Conflict, "the endpoint 'tcp://"+addr+"' is already online as a pool of endpoints with pooling enabled. Either 1. stop")

	for _, id := range []string{a.ID, b.ID} {
		if err := e.s.UnbindEndpoint(ctx, account, id); err != nil {
			t.Fatal(err)
		}
	}
	single, err := bind(s3, addr, false)
	if err != nil {
		t.Fatalf("the address once the pool is gone: %v", err)
	}
	if single.PoolingEnabled || single.Pool != nil {
		t.Errorf("an endpoint without pooling: %+v", single)
	}
	_, err = bind(s1, addr, true)
	wantCode(t, err, apierr.Conflict, "the endpoint 'tcp://"+addr+"' is already online without pooling. Either 1. stop your existing endpoint first, or 2. start both endpoints with pooling enabled")
	if got, err := e.s.Endpoint(ctx, account, single.ID); err != nil || got.Hostport != addr {
		t.Fatalf("the endpoint without pooling after the refusal: %+v, %v", got, err)
	}

	// A pooled endpoint on a port the server picks; another joins it.
	picked, err := bind(s1, "", true)
	if err != nil {
		t.Fatal(err)
	}
	joined, err := bind(s2, picked.Hostport, true)
	if err != nil || joined.URL != picked.URL {
		t.Fatalf("joining %s: %+v, %v", picked.URL, joined, err)
	}
	// The session of a member closes: the pool keeps the other.
	if err := e.s.CloseSession(ctx, account, s1); err != nil {
		t.Fatal(err)
	}
	got, err := e.s.Endpoint(ctx, account, joined.ID)
	if err != nil || got.Pool == nil || len(got.Pool.Endpoints) != 1 || got.Pool.Endpoints[0].ID != joined.ID {
		t.Fatalf("the pool after a member's session closed: %+v, %v", got, err)
	}
	_, err = bind(s3, picked.Hostport, false)
	wantCode(t, err, apierr.Conflict, "already online as a pool")
}

// opener returns a function that opens a session of token on one node
// and returns its ID.
func (e *env) opener(t *testing.T, token string) func() string {
	t.Helper()
	ctx := context.Background()
	node, err := e.nodes.Register(ctx, agents.NodeParams{})
	if err != nil {
		t.Fatal(err)
	}
	return func() string {
		t.Helper()
		sess, err := e.s.OpenSession(ctx, token, agents.SessionParams{Node: node.ID, IP: netip.MustParseAddr("192.0.2.1")})
		if err != nil {
			t.Fatal(err)
		}
		return sess.ID
	}
}
