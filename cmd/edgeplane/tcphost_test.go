package main

import (
	"io"
	"math/rand/v2"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// freePort returns a TCP port of 127.0.0.1 that nothing listens on just
// now, below the kernel's ephemeral range (32768 and up on Linux) and
// the fixed ranges of the edge-node tests (31400-31599): the server
// under test listens on it later, and a port of the ephemeral range
// could meanwhile be handed to another test process that asked for port
// 0 (under go test ./..., a server of another package), which would then
// answer the test's clients in the server's place.
func freePort(t *testing.T) int {
	t.Helper()
	for range 100 {
		p := 20000 + rand.IntN(11000)
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err == nil {
			l.Close()
			return p
		}
	}
	t.Fatal("no free TCP port between 20000 and 31000")
	return 0
}

// greeter is a local TCP app that writes "hello" to each connection.
func greeter(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return greet(t, l, "hello")
}

// greet writes msg to each connection l accepts, until the test ends, and
// returns l's port.
func greet(t *testing.T, l net.Listener, msg string) string {
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			io.WriteString(c, msg)
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return port
}

// TestServeTCPHost: edgeplane serve -proxy with -proxy-tcp-ports and no
// -proxy-tcp-host serves tcp endpoints on loopback only: a connection to
// 127.0.0.1:PORT reaches the agent's app, one to another local address
// (127.0.0.2) is refused, where a listener on every interface would
// take it. The endpoints' public host is tcp.localhost, which an ACL
// names: a credential restricted to bind:tcp.localhost:PORT binds it.
func TestServeTCPHost(t *testing.T) {
	// 127.0.0.2 reaches a listener on every interface here, or the
	// refusal below would prove nothing.
	if all, err := net.Listen("tcp", ":0"); err != nil {
		t.Fatal(err)
	} else {
		c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.2", strconv.Itoa(all.Addr().(*net.TCPAddr).Port)), 2*time.Second)
		all.Close()
		if err != nil {
			t.Skipf("127.0.0.2 does not reach a listener on every interface here: %v", err)
		}
		c.Close()
	}
	port := strconv.Itoa(freePort(t))
	s := startFirstRun(t, t.TempDir(), "-proxy-tcp-ports", port+"-"+port)
	if !strings.Contains(s.stdout.String(), "proxy on tcp://127.0.0.1:"+port+"-"+port+"\n") {
		t.Errorf("stdout: %s", s.stdout)
	}
	app := greeter(t)
	caFile := filepath.Join(s.agentCmd[5])
	for _, tc := range []struct {
		name, acl string
		args      []string
	}{
		{"the server picks the port", `["*"]`, []string{"tcp", app}},
		{"a credential bound to the address", `["bind:tcp.localhost:` + port + `"]`, []string{"tcp", app, "-remote-addr", "tcp.localhost:" + port}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			token := s.api.must(201, "POST", "/credentials", `{"acl":`+tc.acl+`}`)["token"].(string)
			a := startAgentOn(t, s.agentAddr, caFile, token, tc.args...)
			if a.line != "tcp://tcp.localhost:"+port {
				t.Errorf("the agent printed %q; want tcp://tcp.localhost:%s", a.line, port)
			}
			read := func(host string) (string, error) {
				c, err := net.DialTimeout("tcp", net.JoinHostPort(host, port), 2*time.Second)
				if err != nil {
					return "", err
				}
				defer c.Close()
				c.SetDeadline(time.Now().Add(5 * time.Second))
				b, err := io.ReadAll(c)
				return string(b), err
			}
			if _, ok := within(5*time.Second, func() bool { got, _ := read("127.0.0.1"); return got == "hello" }); !ok {
				got, err := read("127.0.0.1")
				t.Fatalf("127.0.0.1:%s: %q %v; want hello from the app; agent log: %s", port, got, err, a.stderr)
			}
			if got, err := read("127.0.0.2"); err == nil {
				t.Errorf("127.0.0.2:%s answered %q: the endpoint's listener is on every interface, want loopback only", port, got)
			}
			a.stopAndWait(t)
		})
	}
}

func TestTCPHosts(t *testing.T) {
	for _, c := range []struct{ host, listen, public string }{
		{"", "", "tcp.localhost"},
		{"0.0.0.0", "", "tcp.localhost"},
		{"::", "", "tcp.localhost"},
		{"127.0.0.1", "127.0.0.1", "tcp.localhost"},
		{"::1", "::1", "tcp.localhost"},
		{"localhost", "127.0.0.1", "tcp.localhost"},
		{"tcp.localhost", "127.0.0.1", "tcp.localhost"},
		{"192.0.2.7", "192.0.2.7", "192.0.2.7"},
	} {
		listen, err := resolveTCPHost(c.host)
		if err != nil || listen != c.listen {
			t.Errorf("resolveTCPHost(%q) = %q, %v; want %q", c.host, listen, err, c.listen)
		}
		if got := publicTCPHost(c.host); got != c.public {
			t.Errorf("publicTCPHost(%q) = %q, want %q", c.host, got, c.public)
		}
	}
	if got := publicTCPHost("TCP.Example.com."); got != "tcp.example.com" {
		t.Errorf("publicTCPHost(TCP.Example.com.) = %q", got)
	}
	if _, err := resolveTCPHost("no-such-host.invalid"); err == nil || !strings.Contains(err.Error(), "give the IP address") {
		t.Errorf("an unresolvable name: %v", err)
	}
}
