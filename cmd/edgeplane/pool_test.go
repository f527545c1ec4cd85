package main

import (
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// upstreamPort returns the port of u's listener.
func upstreamPort(u *upstream) string {
	_, p, _ := net.SplitHostPort(strings.TrimPrefix(u.URL, "http://"))
	return p
}

// TestAgentPool: two agents (edgeplane agent http -pooling-enabled, the
// SDK's WithPoolingEnabled) bind one URL and both receive its traffic;
// GET /endpoints shows both members and their pool. The first agent's
// connection is cut (as its process dies): every request from then on
// is answered, by the second, within 1 s. An agent without pooling on
// the pool's URL exits 1 with the original's words; so does a pooled
// one on the URL of an endpoint without pooling.
func TestAgentPool(t *testing.T) {
	ts := startTunnelServe(t)
	ts.api.must(201, "POST", "/reserved_domains", `{"domain":"app.example.com"}`)
	ts.api.must(201, "POST", "/reserved_domains", `{"domain":"solo.example.com"}`)
	token := ts.api.must(201, "POST", "/credentials", `{"acl":["bind:app.example.com","bind:solo.example.com"]}`)["token"].(string)
	upA, upB := newUpstream(t, "a"), newUpstream(t, "b")
	relA := startRelay(t, "127.0.0.1:0", ts.agentAddr) // agent A's network
	a := startAgentOn(t, relA.addr, ts.certFile, token, "http", upstreamPort(upA), "-domain", "app.example.com", "-scheme", "http", "-pooling-enabled")
	b := ts.startAgent(t, token, "http", upstreamPort(upB), "-domain", "app.example.com", "-scheme", "http", "-pooling-enabled")
	if a.line != "http://app.example.com" || b.line != a.line {
		t.Fatalf("the agents printed %q and %q", a.line, b.line)
	}
	c := through(ts.proxyHTTP, nil)
	seen := map[string]int{}
	if _, ok := within(10*time.Second, func() bool {
		code, body := fetch(c, "http://app.example.com/x", "pool")
		if code == 200 {
			seen[body]++
		}
		return seen["upstream a /x"] > 0 && seen["upstream b /x"] > 0
	}); !ok {
		t.Fatalf("the pool's answers: %v; agent logs: %s\n%s", seen, a.stderr, b.stderr)
	}
	seen = map[string]int{}
	for range 20 {
		if code, body := fetch(c, "http://app.example.com/x", "pool"); code == 200 {
			seen[body]++
		}
	}
	if seen["upstream a /x"] < 5 || seen["upstream b /x"] < 5 {
		t.Errorf("20 requests spread %v; want round robin over both", seen)
	}

	eps := ts.api.must(200, "GET", "/endpoints", "")["endpoints"].([]any)
	if len(eps) != 2 {
		t.Fatalf("endpoints: %v", eps)
	}
	for _, ep := range eps {
		m := ep.(map[string]any)
		pool, _ := m["pool"].(map[string]any)
		if m["pooling_enabled"] != true || m["url"] != "http://app.example.com" || pool == nil || pool["url"] != "http://app.example.com" ||
			len(pool["endpoints"].([]any)) != 2 {
			t.Errorf("a member as listed: %v", m)
		}
	}
	one := eps[0].(map[string]any)
	if got := ts.api.must(200, "GET", "/endpoints/"+one["id"].(string), ""); got["pool"] == nil {
		t.Errorf("a member as read: %v", got)
	}

	// Mixed: refused both ways, the refusal on one line with its code.
	args := func(domain string, pooled bool) []string {
		out := []string{"-server", ts.agentAddr, "-ca", ts.certFile, "-authtoken", token, "-inspect-addr", "off",
			"http", upstreamPort(upA), "-domain", domain, "-scheme", "http"}
		if pooled {
			out = append(out, "-pooling-enabled")
		}
		return out
	}
	code, _, stderr, _ := runAgentToExit(t, args("app.example.com", false), nil, 10*time.Second)
	if want := "edgeplane: starting the tunnel: the endpoint 'http://app.example.com' is already online as a pool of endpoints with pooling enabled. Either 1. stop the pool's endpoints first, or 2. start this endpoint with pooling enabled too to join the pool and load balance between them (ERR_SERVICE_102)\n"; code != 1 || !strings.HasSuffix(stderr, want) {
		t.Errorf("without pooling on the pool's URL: exit %d, stderr %q; want 1 and %q", code, stderr, want)
	}
	if code, body := fetch(c, "http://app.example.com/x", "pool"); code != 200 {
		t.Errorf("the pool after a refused bind on its URL: %d %q", code, body)
	}
	solo := ts.startAgent(t, token, "http", upstreamPort(upA), "-domain", "solo.example.com", "-scheme", "http")
	code, _, stderr, _ = runAgentToExit(t, args("solo.example.com", true), nil, 10*time.Second)
	if want := "edgeplane: starting the tunnel: the endpoint 'http://solo.example.com' is already online without pooling. Either 1. stop your existing endpoint first, or 2. start both endpoints with pooling enabled to load balance between them (ERR_SERVICE_102)\n"; code != 1 || !strings.HasSuffix(stderr, want) {
		t.Errorf("pooled on an endpoint's URL: exit %d, stderr %q; want 1 and %q", code, stderr, want)
	}
	solo.stopAndWait(t)

	// Agent A's connection is cut, as when its process is killed: no
	// request fails, each is answered within 1 s.
	relA.cut()
	quick := through(ts.proxyHTTP, nil)
	quick.Timeout = time.Second
	failed := 0
	for i := range 40 {
		start := time.Now()
		code, body := fetch(quick, "http://app.example.com/x", "after")
		if code != 200 || body != "upstream b /x" {
			failed++
			t.Errorf("request %d after the cut: %d %q after %v", i, code, body, time.Since(start))
		}
	}
	if failed == 0 {
		t.Logf("40 requests after agent A's connection was cut: every one answered by agent B")
	}
	b.stopAndWait(t)
	if _, ok := within(5*time.Second, func() bool {
		code, _ := fetch(c, "http://app.example.com/x", "gone")
		return code == http.StatusNotFound
	}); !ok {
		t.Error("the pool's URL is still served once both agents are gone")
	}
}

// TestAgentConnections: edgeplane agent -connections 2 with two servers
// (relays to one tunnel server, standing in for two edge nodes) opens a
// session through each and binds its endpoint pooled on both; when the
// first relay is cut, requests sent all along get no failure.
func TestAgentConnections(t *testing.T) {
	ts := startTunnelServe(t)
	ts.api.must(201, "POST", "/reserved_domains", `{"domain":"app.example.com"}`)
	token := ts.api.must(201, "POST", "/credentials", `{"acl":["bind:app.example.com"]}`)["token"].(string)
	up := newUpstream(t, "app")
	first, second := startRelay(t, "127.0.0.1:0", ts.agentAddr), startRelay(t, "127.0.0.1:0", ts.agentAddr)
	a := startAgentArgs(t, []string{"-server", first.addr + "," + second.addr, "-ca", ts.certFile, "-authtoken", token, "-inspect-addr", "off",
		"-connections", "2", "http", upstreamPort(up), "-domain", "app.example.com", "-scheme", "http"}, nil)
	if a.line != "http://app.example.com" {
		t.Fatalf("the agent printed %q", a.line)
	}
	sessions := ts.api.must(200, "GET", "/tunnel_sessions", "")["tunnel_sessions"].([]any)
	eps := ts.api.must(200, "GET", "/endpoints", "")["endpoints"].([]any)
	if len(sessions) != 2 || len(eps) != 2 {
		t.Fatalf("%d sessions and %d endpoints; want 2 each", len(sessions), len(eps))
	}
	for _, want := range []string{`msg="session established" server=` + first.addr, `msg="session established" server=` + second.addr} {
		if _, ok := within(5*time.Second, func() bool { return strings.Contains(a.stderr.String(), want) }); !ok {
			t.Errorf("the agent's log lacks %q: %s", want, a.stderr)
		}
	}
	c := through(ts.proxyHTTP, nil)
	if _, ok := within(5*time.Second, func() bool {
		code, _ := fetch(c, "http://app.example.com/x", "before")
		return code == 200
	}); !ok {
		t.Fatalf("the endpoint does not answer: %s", a.stderr)
	}
	c.Timeout = time.Second
	failed := 0
	for i := range 60 {
		if i == 10 {
			first.cut()
		}
		if code, body := fetch(c, "http://app.example.com/x", "during"); code != 200 || body != "upstream app /x" {
			failed++
			t.Errorf("request %d (the first connection cut after 10): %d %q", i, code, body)
		}
	}
	if failed == 0 {
		t.Log("60 requests, the first connection cut after 10: none failed")
	}
	// The cut connection comes back through the second server.
	if _, ok := within(20*time.Second, func() bool {
		return strings.Contains(a.stderr.String(), `msg="session re-established" server=`+second.addr)
	}); !ok {
		t.Errorf("the cut connection did not come back: %s", a.stderr)
	}
	a.stopAndWait(t)
}

// TestAgentPoolAcrossNodes: edgeplane serve and two edgeplane proxy
// processes (edge nodes A and B, each with a tunnel listener and a
// hop) on one SQLite file; one pooled agent connects to A, another to
// B, on one URL. Requests entering at either node reach both agents
// (each node's round robin, the far member through the hop). When the
// agent on A is cut off, requests entering at either node are all
// answered by the agent on B.
func TestAgentPoolAcrossNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	spec := "sqlite:" + filepath.Join(t.TempDir(), "edgeplane.db")
	key := "epk_" + strings.Repeat("p", 40)
	api, _ := startProcess(t, spec, "EDGEPLANE_API_KEY="+key)
	admin := apiClient{t: t, base: "http://" + api, key: key}
	certFile, keyFile := writeTunnelCert(t, t.TempDir())
	node := func(name string) *proxyProc {
		return startProxyArgs(t, name, spec, []string{"-tunnel-addr", "127.0.0.1:0", "-tunnel-cert", certFile, "-tunnel-key", keyFile,
			"-node-addr", "127.0.0.1:0", "-node-lease", "3s", "-reap-interval", "200ms"})
	}
	a, b := node("A"), node("B")
	admin.must(201, "POST", "/reserved_domains", `{"domain":"app.example.com"}`)
	token := admin.must(201, "POST", "/credentials", `{"acl":["bind:app.example.com"]}`)["token"].(string)
	upA, upB := newUpstream(t, "a"), newUpstream(t, "b")
	relA := startRelay(t, "127.0.0.1:0", a.agents)
	agA := startAgentOn(t, relA.addr, certFile, token, "http", upstreamPort(upA), "-domain", "app.example.com", "-scheme", "http", "-pooling-enabled")
	agB := startAgentOn(t, b.agents, certFile, token, "http", upstreamPort(upB), "-domain", "app.example.com", "-scheme", "http", "-pooling-enabled")
	nodes := map[string]bool{}
	for _, s := range admin.must(200, "GET", "/tunnel_sessions", "")["tunnel_sessions"].([]any) {
		nodes[s.(map[string]any)["node"].(string)] = true
	}
	if !nodes[a.node] || !nodes[b.node] {
		t.Fatalf("the sessions' nodes %v; want A's %s and B's %s", nodes, a.node, b.node)
	}
	for _, p := range []*proxyProc{a, b} {
		c := through(p.http, nil)
		seen := map[string]int{}
		if _, ok := within(20*time.Second, func() bool {
			if code, body := fetch(c, "http://app.example.com/x", p.name); code == 200 {
				seen[body]++
			}
			return seen["upstream a /x"] > 0 && seen["upstream b /x"] > 0
		}); !ok {
			t.Fatalf("requests entering at %s reached %v; want both agents. agents' logs: %s\n%s", p.name, seen, agA.stderr, agB.stderr)
		}
		t.Logf("requests entering at %s reached both agents: %v", p.name, seen)
	}

	relA.cut() // the agent on A is gone
	// Once A's tunnel server has seen the connection end (its session
	// closed), every request goes to B. A request that opened its stream
	// on the dying connection in the instant before can still fail (it is
	// not retried on another member: see issue 44's note).
	if _, ok := within(10*time.Second, func() bool {
		return len(admin.must(200, "GET", "/tunnel_sessions", "")["tunnel_sessions"].([]any)) == 1
	}); !ok {
		t.Fatal("the cut agent's session was not closed within 10 s")
	}
	for _, p := range []*proxyProc{a, b} {
		c := through(p.http, nil)
		c.Timeout = time.Second
		for i := range 20 {
			if code, body := fetch(c, "http://app.example.com/x", p.name); code != 200 || body != "upstream b /x" {
				t.Errorf("request %d entering at %s after the agent on A was cut: %d %q", i, p.name, code, body)
			}
		}
	}
}
