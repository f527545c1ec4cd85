package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestEdgeNodesPostgres: edgeplane serve and three edgeplane proxy edge
// nodes on one PostgreSQL (see edgeNodes).
func TestEdgeNodesPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	edgeNodes(t, freshPostgres(t), 31400, sealKeyEnv)
}

// TestEdgeNodesSQLite is the same on one SQLite file shared by the four
// processes: it works the same (SQLite's locking serializes the
// processes' writes; each follows the others' through the file's change
// feed).
func TestEdgeNodesSQLite(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	edgeNodes(t, "sqlite:"+filepath.Join(t.TempDir(), "edgeplane.db"), 31500)
}

// edgeNodes runs edgeplane serve and three edgeplane proxy processes
// (nodes A, B and C: each with a tunnel listener, a hop listener and the
// TCP ports from tcpLow, on an address of its own) on spec. Agents
// (edgeplane agent, the SDK) connect to A with -server A,B: a labeled
// tunnel behind an HTTPS edge, an HTTPS endpoint and a TCP endpoint; a
// fourth agent, with -server A alone, holds another tunnel of the edge.
// Requests and a TCP stream entering at B and C reach the agents on A
// through the hop, with the client's address seen by the agent. Then A
// is killed (SIGKILL): the agents with a list reconnect to B and the
// traffic resumes; the tunnel of the agent that cannot reconnect goes
// offline when A's lease ends (the time measured). The hop refuses a
// client that is not a node.
func edgeNodes(t *testing.T, spec string, tcpLow int, env ...string) {
	key := "epk_" + strings.Repeat("n", 40)
	api, _ := startProcess(t, spec, append(env, "EDGEPLANE_API_KEY="+key)...)
	apiA := apiClient{t: t, base: "http://" + api, key: key}
	certFile, keyFile := writeTunnelCert(t, t.TempDir())
	const lease = 3 * time.Second
	ports := fmt.Sprintf("%d-%d", tcpLow, tcpLow+9)
	node := func(name, ip string) *proxyProc {
		p := startProxyArgs(t, name, spec, []string{"-tunnel-addr", "127.0.0.1:0", "-tunnel-cert", certFile, "-tunnel-key", keyFile,
			"-node-addr", "127.0.0.1:0", "-node-lease", lease.String(), "-reap-interval", "200ms",
			"-tcp-ports", ports, "-tcp-host", ip, "-tunnel-tcp-host", "tcp.example.test"}, env...)
		p.tcpHost = ip
		return p
	}
	a, b, c := node("A", "127.0.0.21"), node("B", "127.0.0.22"), node("C", "127.0.0.23")
	for _, p := range []*proxyProc{a, b, c} {
		if p.agents == "" || p.hop == "" || p.node == "" {
			t.Fatalf("%s printed no agents' listener, hop listener or node", p.name)
		}
	}
	if list := adminRun(t, spec, "list-nodes"); strings.Count(list, "\tlive\n") != 3 || !strings.Contains(list, a.node) {
		t.Errorf("admin list-nodes:\n%s", list)
	}

	// The edge, the endpoints' domain with its certificate, the
	// upstreams behind the agents.
	web := newTenant(apiA, "web.example.com", "web")
	app := &tenant{api: apiA, host: "app.example.com"}
	app.domain = apiA.must(201, "POST", "/reserved_domains", `{"domain":"app.example.com"}`)["id"].(string)
	ca := newTestCA(t)
	chain, keyPEM := ca.leaf(t, "app.example.com", 2)
	app.uploadCertificate(chain, keyPEM)
	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	anyToken := apiA.must(201, "POST", "/credentials", `{}`)["token"].(string) // an empty ACL binds anything
	upWeb, upApp := newUpstream(t, "web"), newUpstream(t, "app")
	echo := echoServer(t)
	port := func(u *upstream) string { _, p, _ := net.SplitHostPort(strings.TrimPrefix(u.URL, "http://")); return p }

	servers := a.agents + "," + b.agents
	agWeb := startAgentOn(t, servers, certFile, web.credToken, "http", port(upWeb), "-label", "app=web")
	agApp := startAgentOn(t, servers, certFile, anyToken, "http", port(upApp), "-domain", "app.example.com")
	agTCP := startAgentOn(t, servers, certFile, anyToken, "tcp", echo)
	agStuck := startAgentOn(t, a.agents, certFile, web.credToken, "http", port(upWeb), "-label", "app=web")
	tcpURL := regexp.MustCompile(`^tcp://tcp\.example\.test:(\d+)$`).FindStringSubmatch(agTCP.line)
	if agApp.line != "https://app.example.com" || tcpURL == nil {
		t.Fatalf("the agents printed %q and %q", agApp.line, agTCP.line)
	}
	sessions := apiA.must(200, "GET", "/tunnel_sessions", "")["tunnel_sessions"].([]any)
	if len(sessions) != 4 {
		t.Fatalf("tunnel sessions: %v", sessions)
	}
	for _, s := range sessions {
		if n := s.(map[string]any)["node"]; n != a.node {
			t.Errorf("a session on node %v; want A's, %s", n, a.node)
		}
	}

	// Through B and C: the client comes from an address of its own, which
	// the agents log.
	clientIP := net.ParseIP("127.0.0.77")
	check := func(p *proxyProc, why string) {
		t.Helper()
		d := &net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: clientIP}}
		edge := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true,
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return d.DialContext(ctx, network, p.http)
			}}}
		endpoint := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true,
			TLSClientConfig: &tls.Config{RootCAs: roots},
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return d.DialContext(ctx, network, p.https)
			}}}
		took, ok := within(20*time.Second, func() bool {
			c1, b1 := fetch(edge, "http://web.example.com:443/x", p.name)
			c2, b2 := fetch(endpoint, "https://app.example.com/y", p.name)
			return c1 == 200 && b1 == "upstream web /x" && c2 == 200 && b2 == "upstream app /y" && echoes(d, p, tcpURL[1])
		})
		if !ok {
			c1, b1 := fetch(edge, "http://web.example.com:443/x", p.name)
			c2, b2 := fetch(endpoint, "https://app.example.com/y", p.name)
			t.Fatalf("%s, through %s: the edge %d %q, the endpoint %d %q, TCP echoes %v", why, p.name, c1, b1, c2, b2, echoes(d, p, tcpURL[1]))
		}
		t.Logf("%s, through %s: edge, endpoint and TCP reached in %v", why, p.name, took.Round(time.Millisecond))
	}
	check(b, "agents on A")
	check(c, "agents on A")
	// An agent logs a connection when it ends: the TCP ones do, once
	// both ends closed.
	if _, ok := within(5*time.Second, func() bool { return strings.Contains(agTCP.stderr.String(), "client=127.0.0.77:") }); !ok {
		t.Errorf("the TCP endpoint's agent did not see the client's address: %s", tail(agTCP.stderr.String(), 2048))
	}
	_, m := get(t, "http://"+b.metrics+"/metrics", nil)
	if v := metricValue(m, `edgeplane_hop_streams_total{direction="out",peer="`+a.node+`"}`); v < 3 {
		t.Errorf("B forwarded %v streams to A; want at least 3", v)
	}
	if v := metricValue(m, "edgeplane_nodes"); v != 3 {
		t.Errorf("B sees %v live nodes; want 3", v)
	}

	// The hop refuses a client that is not a node: no certificate.
	if conn, err := tls.Dial("tcp", b.hop, &tls.Config{InsecureSkipVerify: true}); err == nil {
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		_, err = conn.Write([]byte("forged stream"))
		if err == nil {
			_, err = conn.Read(make([]byte, 1))
		}
		conn.Close()
		if err == nil {
			t.Error("the hop answered a client with no certificate")
		}
	}
	if _, ok := within(5*time.Second, func() bool {
		_, m := get(t, "http://"+b.metrics+"/metrics", nil)
		return metricValue(m, `edgeplane_hop_errors_total{reason="auth"}`) >= 1 && strings.Contains(b.stderr.String(), "hop: refused")
	}); !ok {
		t.Errorf("the forged hop client was not counted and logged: %s", tail(b.stderr.String(), 2048))
	}

	// Node A dies.
	killed := time.Now()
	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	check(b, "A killed")
	check(c, "A killed")
	t.Logf("traffic resumed through B and C %v after A was killed", time.Since(killed).Round(time.Millisecond))
	// The HTTP connections through A (which the proxies keep open) ended
	// with it: their agents logged them, with the client's address, once
	// they learnt that their session to A is gone.
	if _, ok := within(5*time.Second, func() bool {
		return strings.Contains(agApp.stderr.String(), "client=127.0.0.77:") &&
			strings.Contains(agWeb.stderr.String()+agStuck.stderr.String(), "client=127.0.0.77:")
	}); !ok {
		t.Errorf("the HTTP agents did not see the client's address: %s\n%s", tail(agApp.stderr.String(), 1024), tail(agWeb.stderr.String(), 1024))
	}
	// The stuck agent's tunnel goes offline when A's lease ends (renewed
	// every lease/3: at most lease after the kill), reaped by B or C.
	stuckGone := func() bool {
		for _, tn := range apiA.must(200, "GET", "/tunnels", "")["tunnels"].([]any) {
			if tn.(map[string]any)["node"] == a.node {
				return false
			}
		}
		return true
	}
	if _, ok := within(3*lease, stuckGone); !ok {
		t.Fatalf("A's tunnels are still online %v after A was killed", time.Since(killed))
	}
	offline := time.Since(killed)
	t.Logf("A's last tunnel went offline %v after A was killed (lease %v, reaped every 200ms)", offline.Round(time.Millisecond), lease)
	if offline > lease+2*time.Second {
		t.Errorf("A's tunnels went offline %v after the kill; want within the lease (%v) and a reap", offline, lease)
	}
	for _, s := range apiA.must(200, "GET", "/tunnel_sessions", "")["tunnel_sessions"].([]any) {
		if n := s.(map[string]any)["node"]; n != b.node {
			t.Errorf("after A died, a session on node %v; want B's, %s", n, b.node)
		}
	}
	if list := adminRun(t, spec, "list-nodes"); strings.Contains(list, a.node) {
		t.Errorf("admin list-nodes still lists A after its reaping:\n%s", list)
	}
	if _, m := get(t, "http://"+c.metrics+"/metrics", nil); metricValue(m, "edgeplane_nodes") != 2 {
		t.Errorf("C sees %v live nodes after A's reaping; want 2", metricValue(m, "edgeplane_nodes"))
	}
}

// echoServer is a TCP server that writes back what it reads; it returns
// its port.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); io.Copy(c, c) }()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// echoes reports whether a TCP connection from d to p's TCP listener on
// port gets back what it sends.
func echoes(d *net.Dialer, p *proxyProc, port string) bool {
	conn, err := d.Dial("tcp", net.JoinHostPort(p.tcpHost, port))
	if err != nil {
		return false
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	msg := []byte("through the hop " + p.name)
	if _, err := conn.Write(msg); err != nil {
		return false
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(conn, got); err != nil {
		return false
	}
	return string(got) == string(msg)
}
