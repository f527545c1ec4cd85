package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"golang.ngrok.com/ngrok"

	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/internal/syncbuf"
)

// agentToken is the authtoken of these tests: no output may show it.
const agentToken = "ept_agentTestTokenNeverPrinted"

// TestAgentFlags: each bad command line exits 2 (1 for a -ca file that
// cannot be used) with a message naming the flag and the rule, and never
// shows the authtoken.
func TestAgentFlags(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"agent", "-server", "tunnel.example.com:4443", "-authtoken", agentToken}
	with := func(args ...string) []string { return append(append([]string{}, base...), args...) }
	var tooMany []string
	for i := range 33 {
		tooMany = append(tooMany, "-label", fmt.Sprintf("k%d=v", i))
	}
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		code int
		out  string
	}{
		{"no arguments", []string{"agent"}, nil, 2, "agent: which server and tunnel?"},
		{"help", []string{"agent", "-h"}, nil, 0, "-remote-addr HOST:PORT"},
		{"tunnel help without a server", []string{"agent", "http", "-h"}, nil, 0, "-domain name            the endpoint's name: a reserved domain"},
		{"tunnel help after its target", []string{"agent", "tls", "8443", "-h"}, nil, 0, "usage: edgeplane agent -server HOST:PORT -authtoken TOKEN [agent flags] tls PORT|HOST:PORT"},
		{"help after the tunnel", with("http", "-h"), nil, 0, "usage: edgeplane agent -server HOST:PORT"},
		{"no server", []string{"agent", "-authtoken", agentToken, "http", "3000"}, nil, 2, "-server is required"},
		{"server without a port", []string{"agent", "-server", "tunnel.example.com", "-authtoken", agentToken, "http", "3000"}, nil, 2, `-server "tunnel.example.com": want HOST:PORT`},
		{"server port out of range", []string{"agent", "-server", "t.example.com:70000", "-authtoken", agentToken, "http", "3000"}, nil, 2, `-server "t.example.com:70000": the port must be a number from 1 to 65535`},
		{"server from a bad variable", []string{"agent", "-authtoken", agentToken, "http", "3000"}, map[string]string{"EDGEPLANE_SERVER": ":4443"}, 2, `-server ":4443": want HOST:PORT: the host is missing`},
		{"server list, bad entry", []string{"agent", "-server", "a.example.com:443,b.example.com", "-authtoken", agentToken, "http", "3000"}, nil, 2, `-server entry 2 "b.example.com": want HOST:PORT`},
		{"server list, duplicate", []string{"agent", "-server", "a.example.com:443,b.example.com:443,A.example.com:443", "-authtoken", agentToken, "http", "3000"}, nil, 2, `-server entry 3 "A.example.com:443": the same server as entry 1`},
		{"server list too long", []string{"agent", "-server", strings.Repeat("t.example.com:443,", 16) + "t.example.com:443", "-authtoken", agentToken, "http", "3000"}, nil, 2, "-server: must have at most 16 servers, got 17"},
		{"server list from a bad variable", []string{"agent", "-authtoken", agentToken, "http", "3000"}, map[string]string{"EDGEPLANE_SERVER": "a.example.com:443,"}, 2, `-server entry 2 "": want HOST:PORT`},
		{"no authtoken", []string{"agent", "-server", "t.example.com:443", "http", "3000"}, nil, 2, "-authtoken is required (or EDGEPLANE_AUTHTOKEN, or agent.authtoken in the configuration file"},
		{"bad log format", with("-log-format", "xml", "http", "3000"), nil, 2, `-log-format "xml": want text or json`},
		{"too many connections", with("-connections", "17", "http", "3000"), nil, 2, "-connections 17: want 1 to 16"},
		{"no connections", with("-connections", "-1", "http", "3000"), nil, 2, "-connections -1: want 1 to 16"},
		{"pooling a labeled tunnel", with("http", "3000", "-label", "app=web", "-pooling-enabled"), nil, 2, "-pooling-enabled and -label: a labeled tunnel is not pooled"},
		{"no tunnel", with(), nil, 2, "which tunnel? http, tcp or tls"},
		{"unknown tunnel", with("ftp", "21"), nil, 2, `unknown tunnel "ftp": want http, tcp or tls`},
		{"no target", with("http"), nil, 2, "http: which target? want a PORT (3000) or an http:// or https:// URL"},
		{"no tcp target", with("tcp", "-remote-addr", "1.tcp.example.com:20002"), nil, 2, "tcp: which target? want a PORT (22) or HOST:PORT"},
		{"two targets", with("http", "3000", "3001"), nil, 2, "http: one target, got 2: 3000 3001"},
		{"bad target", with("http", "localhost:3000"), nil, 2, `http target "localhost:3000": want a PORT (3000) or an http:// or https:// URL`},
		{"agent flag after the tunnel", with("http", "3000", "-ca", "ca.pem"), nil, 2, "http: -ca is the agent's flag: give it before the tunnel"},
		{"unknown tunnel flag", with("http", "3000", "-subdomain", "x"), nil, 2, "http: flag provided but not defined: -subdomain"},
		{"domain and label", with("http", "3000", "-domain", "app.example.com", "-label", "app=web"), nil, 2, "-domain and -label: give one or the other"},
		{"bad scheme", with("http", "3000", "-domain", "app.example.com", "-scheme", "ftp"), nil, 2, `-scheme "ftp": want https`},
		{"scheme and label", with("http", "3000", "-scheme", "http", "-label", "app=web"), nil, 2, "-scheme and -label"},
		{"bad domain", with("http", "3000", "-domain", "app_1.example.com"), nil, 2, `-domain "app_1.example.com": may contain only letters, digits, hyphens and dots, not '_'`},
		{"IP as domain", with("http", "3000", "-domain", "192.0.2.1"), nil, 2, `-domain "192.0.2.1": must not end in an all-numeric label`},
		{"tls without domain", with("tls", "8443"), nil, 2, "tls: -domain is required"},
		{"tls bad domain", with("tls", "8443", "-domain", "localhost"), nil, 2, `-domain "localhost": must be a DNS name of at least two labels`},
		{"label without value", with("http", "3000", "-label", "app"), nil, 2, `http: invalid value "app" for flag -label: "app" is not KEY=VALUE`},
		{"label twice", with("http", "3000", "-label", "app=a", "-label", "app=b"), nil, 2, `-label: the key "app" is given twice`},
		{"label bad key", with("http", "3000", "-label", "my app=web"), nil, 2, `-label: labels["my app"]: label key may contain only letters, digits and . _ - / :`},
		{"label empty value", with("http", "3000", "-label", "app="), nil, 2, `-label: labels["app"]: label value must not be empty`},
		{"too many labels", with(append([]string{"http", "3000"}, tooMany...)...), nil, 2, "-label: labels: must have at most 32 labels, got 33"},
		{"label on tcp", with("tcp", "22", "-label", "app=ssh"), nil, 2, "tcp: flag provided but not defined: -label"},
		{"domain on tcp", with("tcp", "22", "-domain", "app.example.com"), nil, 2, "tcp: flag provided but not defined: -domain"},
		{"remote-addr on http", with("http", "3000", "-remote-addr", "1.tcp.example.com:20002"), nil, 2, "http: flag provided but not defined: -remote-addr"},
		{"remote-addr without a port", with("tcp", "22", "-remote-addr", "1.tcp.example.com"), nil, 2, `-remote-addr "1.tcp.example.com": want HOST:PORT`},
		{"remote-addr port 0", with("tcp", "22", "-remote-addr", "1.tcp.example.com:0"), nil, 2, `-remote-addr "1.tcp.example.com:0": the port must be a number from 1 to 65535`},
		{"metadata too long", with("http", "3000", "-metadata", strings.Repeat("m", agents.MaxMetadataBytes+1)), nil, 2, "-metadata: must be at most 4096 bytes, got 4097"},
		{"metadata not UTF-8", with("tcp", "22", "-metadata", "\xff"), nil, 2, "-metadata: must be valid UTF-8"},
		{"ca missing", with("-ca", filepath.Join(dir, "missing.pem"), "http", "3000"), nil, 1, "-ca: open "},
		{"ca not PEM", with("-ca", notPEM, "http", "3000"), nil, 1, "-ca " + notPEM + ": no PEM certificate in the file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // a command line that should have failed but connects ends
			defer cancel()
			code := run(ctx, tc.args, func(k string) string { return tc.env[k] }, &out, &out, nil)
			if code != tc.code || !strings.Contains(out.String(), tc.out) {
				t.Errorf("exit %d, want %d; output %q lacks %q", code, tc.code, out.String(), tc.out)
			}
			if strings.Contains(out.String(), agentToken) {
				t.Errorf("the authtoken is printed: %q", out.String())
			}
		})
	}
}

// TestAgentFlagsParse: what good command lines say, the variables
// included (a flag wins), and the tunnel's flags on either side of its
// target.
func TestAgentFlagsParse(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want agentConfig
	}{
		{
			"http port, token from the environment",
			[]string{"-server", "tunnel.example.com:4443", "http", "3000"},
			map[string]string{"EDGEPLANE_AUTHTOKEN": "envtoken"},
			agentConfig{server: "tunnel.example.com:4443", servers: []agentServer{{"tunnel.example.com:4443", "tunnel.example.com"}}, authtoken: "envtoken", logFormat: "text",
				proto: "http", target: agentTarget{"http", "127.0.0.1:3000"}},
		},
		{
			"the flag wins over the variable",
			[]string{"-authtoken", "flagtoken", "http", "3000"},
			map[string]string{"EDGEPLANE_AUTHTOKEN": "envtoken", "EDGEPLANE_SERVER": "[::1]:4443", "EDGEPLANE_LOG_FORMAT": "json"},
			agentConfig{server: "[::1]:4443", servers: []agentServer{{"[::1]:4443", "::1"}}, authtoken: "flagtoken", logFormat: "json",
				proto: "http", target: agentTarget{"http", "127.0.0.1:3000"}},
		},
		{
			"a list of servers from the variable",
			[]string{"-authtoken", "tok", "tcp", "22"},
			map[string]string{"EDGEPLANE_SERVER": "edge-1.example.com:4443, edge-2.example.com:4443,[::1]:4443"},
			agentConfig{server: "edge-1.example.com:4443, edge-2.example.com:4443,[::1]:4443",
				servers:   []agentServer{{"edge-1.example.com:4443", "edge-1.example.com"}, {"edge-2.example.com:4443", "edge-2.example.com"}, {"[::1]:4443", "::1"}},
				authtoken: "tok", logFormat: "text", proto: "tcp", target: agentTarget{"", "127.0.0.1:22"}},
		},
		{
			"labels on both sides of the target",
			[]string{"-server", "t.example.com:443", "-authtoken", "tok", "http", "-label", "app=web", "https://app.internal:8443/", "-label", "env=prod", "-metadata", `{"team":"a"}`},
			nil,
			agentConfig{server: "t.example.com:443", servers: []agentServer{{"t.example.com:443", "t.example.com"}}, authtoken: "tok", logFormat: "text",
				proto: "http", target: agentTarget{"https", "app.internal:8443"}, labels: map[string]string{"app": "web", "env": "prod"}, metadata: `{"team":"a"}`},
		},
		{
			"http domain, made canonical",
			[]string{"-server", "t.example.com:443", "-authtoken", "tok", "http", "http://localhost", "-domain", "App.Example.COM."},
			nil,
			agentConfig{server: "t.example.com:443", servers: []agentServer{{"t.example.com:443", "t.example.com"}}, authtoken: "tok", logFormat: "text",
				proto: "http", target: agentTarget{"http", "localhost:80"}, domain: "app.example.com"},
		},
		{
			"tcp with a remote address",
			[]string{"-server", "t.example.com:443", "-authtoken", "tok", "tcp", "db.internal:5432", "-remote-addr", "1.tcp.example.com:20002"},
			nil,
			agentConfig{server: "t.example.com:443", servers: []agentServer{{"t.example.com:443", "t.example.com"}}, authtoken: "tok", logFormat: "text",
				proto: "tcp", target: agentTarget{"", "db.internal:5432"}, remoteAddr: "1.tcp.example.com:20002"},
		},
		{
			"tls",
			[]string{"-server", "t.example.com:443", "-authtoken", "tok", "-ca", "ca.pem", "tls", "-domain", "*.example.com", "8443"},
			nil,
			agentConfig{server: "t.example.com:443", servers: []agentServer{{"t.example.com:443", "t.example.com"}}, authtoken: "tok", ca: "ca.pem", logFormat: "text",
				proto: "tls", target: agentTarget{"", "127.0.0.1:8443"}, domain: "*.example.com"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseAgentArgs(tc.args, func(k string) string { return tc.env[k] }, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// TestAgentServerList: -server is one HOST:PORT (read as before: its
// errors name the whole value) or a comma-separated list of at most 16,
// in order, spaces around an entry ignored; an error names the entry (by
// position and text) and the rule; a server given twice (however its
// host is spelled) is refused.
func TestAgentServerList(t *testing.T) {
	var sixteen []string
	for i := range maxAgentServers {
		sixteen = append(sixteen, fmt.Sprintf("edge-%d.example.com:4443", i))
	}
	for _, tc := range []struct {
		name, in string
		want     []agentServer
		err      string
	}{
		{"single", "tunnel.example.com:4443", []agentServer{{"tunnel.example.com:4443", "tunnel.example.com"}}, ""},
		{"single IPv6", "[2001:db8::1]:443", []agentServer{{"[2001:db8::1]:443", "2001:db8::1"}}, ""},
		{"list", "edge-1.example.com:4443,10.0.0.2:4443, [::1]:4443 ",
			[]agentServer{{"edge-1.example.com:4443", "edge-1.example.com"}, {"10.0.0.2:4443", "10.0.0.2"}, {"[::1]:4443", "::1"}}, ""},
		{"one name, two ports", "edge.example.com:4443,edge.example.com:4444",
			[]agentServer{{"edge.example.com:4443", "edge.example.com"}, {"edge.example.com:4444", "edge.example.com"}}, ""},
		{"sixteen", strings.Join(sixteen, ","), nil, ""},
		{"seventeen", strings.Join(sixteen, ",") + ",edge-16.example.com:4443", nil, "-server: must have at most 16 servers, got 17"},
		{"single without a port", "tunnel.example.com", nil, `-server "tunnel.example.com": want HOST:PORT`},
		{"single without a host", ":4443", nil, `-server ":4443": want HOST:PORT: the host is missing`},
		{"entry without a port", "a.example.com:443,b.example.com", nil, `-server entry 2 "b.example.com": want HOST:PORT`},
		{"entry with a bad port", "a.example.com:443,b.example.com:0,c.example.com:443", nil, `-server entry 2 "b.example.com:0": the port must be a number from 1 to 65535, not "0"`},
		{"entry without a host", "a.example.com:443, :443", nil, `-server entry 2 ":443": want HOST:PORT: the host is missing`},
		{"empty entry", "a.example.com:443,,b.example.com:443", nil, `-server entry 2 "": want HOST:PORT`},
		{"trailing comma", "a.example.com:443,", nil, `-server entry 2 "": want HOST:PORT`},
		{"duplicate", "a.example.com:443,b.example.com:443,a.example.com:443", nil, `-server entry 3 "a.example.com:443": the same server as entry 1: give each server once`},
		{"duplicate, another case", "a.example.com:443,A.Example.COM:443", nil, `-server entry 2 "A.Example.COM:443": the same server as entry 1`},
		{"duplicate, another port spelling", "a.example.com:443,a.example.com:0443", nil, `-server entry 2 "a.example.com:0443": the same server as entry 1`},
		{"duplicate IPv6", "[2001:db8::1]:443,[2001:db8:0::1]:443", nil, `-server entry 2 "[2001:db8:0::1]:443": the same server as entry 1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseServers(tc.in)
			if tc.err != "" {
				if _, usage := err.(usageError); !usage || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("%v (%T), want a usageError with %q", err, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.want != nil && !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %v\nwant %v", got, tc.want)
			}
			if tc.want == nil && len(got) != strings.Count(tc.in, ",")+1 {
				t.Errorf("%d servers from %q", len(got), tc.in)
			}
		})
	}
}

// FuzzAgentServerList: parseServers never panics; what it accepts is 1
// to 16 servers, each with a host and a port from 1 to 65535, none given
// twice, and the accepted addresses, joined again, parse to the same
// list.
func FuzzAgentServerList(f *testing.F) {
	for _, s := range []string{"t.example.com:443", "a:1,b:2", "[::1]:4443, 10.0.0.1:1", "a:1,A:01", ",", "a:1,,", "[::1%eth0]:1,x:65535", strings.Repeat("a:1,", 17)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		servers, err := parseServers(s)
		if err != nil {
			if _, usage := err.(usageError); !usage {
				t.Fatalf("%q: %T, want a usageError", s, err)
			}
			return
		}
		if len(servers) < 1 || len(servers) > maxAgentServers {
			t.Fatalf("%q: %d servers", s, len(servers))
		}
		keys := map[string]bool{}
		addrs := make([]string, len(servers))
		for i, sv := range servers {
			host, port, err := net.SplitHostPort(sv.addr)
			if err != nil || host != sv.host || host == "" || checkPort(port) != nil {
				t.Fatalf("%q: server %+v", s, sv)
			}
			if k := serverKey(sv.host, sv.addr); keys[k] {
				t.Fatalf("%q: %s twice", s, k)
			} else {
				keys[k] = true
			}
			addrs[i] = sv.addr
		}
		again, err := parseServers(strings.Join(addrs, ","))
		if err != nil || !reflect.DeepEqual(again, servers) {
			t.Fatalf("%q: %v, then %v, %v", s, servers, again, err)
		}
	})
}

// TestAgentServerRing: each connection attempt (the SDK's TLS callback,
// then its dialer) goes to the next server, round-robin from the first,
// its certificate checked for that server's host, whatever address the
// SDK passes; a dial without a pick fails. The state changes name the
// server of their attempt: a connect does not end the attempt, a failure
// does and names the next server.
func TestAgentServerRing(t *testing.T) {
	var lns []net.Listener
	for range 2 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		lns = append(lns, ln)
	}
	_, port1, _ := net.SplitHostPort(lns[1].Addr().String())
	servers := []agentServer{
		{lns[0].Addr().String(), "127.0.0.1"},
		{"localhost:" + port1, "localhost"},
	}
	ring := &serverRing{servers: servers}
	if _, err := ring.DialContext(context.Background(), "tcp", servers[0].addr); err == nil || !strings.Contains(err.Error(), "no tunnel server picked") {
		t.Errorf("a dial without a pick: %v", err)
	}
	for i, want := range []int{0, 1, 0, 1, 0} {
		var tc tls.Config
		tc.ServerName = "the SDK's"
		ring.configureTLS(&tc)
		if tc.ServerName != servers[want].host {
			t.Errorf("attempt %d: server name %q, want %q", i, tc.ServerName, servers[want].host)
		}
		conn, err := ring.DialContext(context.Background(), "tcp", "sdk.example.com:443")
		if err != nil {
			t.Fatalf("attempt %d: %v", i, err)
		}
		peer, err := lns[want].Accept() // the attempt's server has the connection
		if err != nil {
			t.Fatal(err)
		}
		if peer.RemoteAddr().String() != conn.LocalAddr().String() {
			t.Errorf("attempt %d: dialed from %s, server %d accepted %s", i, conn.LocalAddr(), want, peer.RemoteAddr())
		}
		conn.Close()
		peer.Close()
	}

	ring = &serverRing{servers: append(servers, agentServer{"[::1]:4443", "::1"})}
	for i, ev := range []struct {
		failed       bool
		server, next int
	}{
		{false, 0, 0}, // connected on the first
		{true, 0, 1},  // its session ended
		{true, 1, 2},  // refused
		{false, 2, 2}, // connected on the third
		{true, 2, 0},  // its session ended: round-robin
		{true, 0, 1},
	} {
		server, next, _ := ring.report(ev.failed)
		if server != ring.servers[ev.server] || next != ring.servers[ev.next] {
			t.Errorf("state change %d (failed %v): server %v, next %v; want %v, %v", i, ev.failed, server, next, ring.servers[ev.server], ring.servers[ev.next])
		}
	}
}

// TestAgentTarget: a bare port is 127.0.0.1; http takes http and https
// URLs of scheme, host and port; tcp and tls take HOST:PORT.
func TestAgentTarget(t *testing.T) {
	for _, tc := range []struct {
		proto, in string
		want      string // agentTarget.String(), or the error's text
		ok        bool
	}{
		{"http", "3000", "http://127.0.0.1:3000", true},
		{"http", "65535", "http://127.0.0.1:65535", true},
		{"http", "http://localhost:8080", "http://localhost:8080", true},
		{"http", "HTTP://localhost:8080/", "http://localhost:8080", true},
		{"http", "http://app.internal", "http://app.internal:80", true},
		{"http", "https://app.internal", "https://app.internal:443", true},
		{"http", "http://[::1]:3000", "http://[::1]:3000", true},
		{"tcp", "22", "127.0.0.1:22", true},
		{"tcp", "db.internal:5432", "db.internal:5432", true},
		{"tls", "[::1]:8443", "[::1]:8443", true},
		{"http", "0", `http target "0": the port must be a number from 1 to 65535, not "0"`, false},
		{"tcp", "65536", `tcp target "65536": the port must be a number from 1 to 65535, not "65536"`, false},
		{"http", "", `http target "": want a PORT (3000) or an http:// or https:// URL`, false},
		{"http", "localhost:3000", `http target "localhost:3000": want a PORT (3000) or an http:// or https:// URL`, false},
		{"http", "ftp://files.internal:21", `http target "ftp://files.internal:21": the scheme must be http or https`, false},
		{"http", "http://:3000", `http target "http://:3000": the URL has no host`, false},
		{"http", "http://u:p@localhost:3000", `http target "http://u:p@localhost:3000": the URL must not carry a user or password`, false},
		{"http", "http://localhost:3000/app", `http target "http://localhost:3000/app": give scheme, host and port only`, false},
		{"http", "http://localhost:3000/?a=b", `give scheme, host and port only`, false},
		{"http", "http://localhost:99999", `http target "http://localhost:99999": the port must be a number from 1 to 65535`, false},
		{"http", "http://localhost:+80", `http target "http://localhost:+80"`, false},
		{"tcp", "localhost", `tcp target "localhost": want a PORT (22) or HOST:PORT (127.0.0.1:22): want HOST:PORT`, false},
		{"tcp", ":22", `tcp target ":22": want a PORT (22) or HOST:PORT (127.0.0.1:22): want HOST:PORT: the host is missing`, false},
		{"tls", "host:https", `tls target "host:https": want a PORT (22) or HOST:PORT (127.0.0.1:22): the port must be a number from 1 to 65535, not "https"`, false},
		{"tcp", strings.Repeat("a", agents.MaxForwardsToBytes) + ":22", "must be at most 512 bytes, got 515", false},
	} {
		got, err := parseTarget(tc.proto, tc.in)
		switch {
		case tc.ok && (err != nil || got.String() != tc.want):
			t.Errorf("%s %q: %q, %v; want %q", tc.proto, tc.in, got, err, tc.want)
		case !tc.ok && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s %q: %q, %v; want an error with %q", tc.proto, tc.in, got, err, tc.want)
		case !tc.ok:
			if _, usage := err.(usageError); !usage {
				t.Errorf("%s %q: %T, want a usageError", tc.proto, tc.in, err)
			}
		}
	}
}

// sdkConfig is what the SDK reads of a tunnel's configuration (its
// Extra returns a type of the SDK's internal package, read by
// reflection).
type sdkConfig interface {
	Proto() string
	Opts() any
	Labels() map[string]string
	ForwardsTo() string
}

// TestAgentTunnelConfig: the flags become the SDK options that make the
// agent protocol's Bind or StartTunnelWithLabel the server reads.
func TestAgentTunnelConfig(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		proto    string
		opts     []string // in Opts' JSON
		labels   map[string]string
		metadata string
	}{
		{"http endpoint", []string{"http", "3000", "-domain", "app.example.com", "-metadata", "m1"}, "https", []string{`"Domain":"app.example.com"`}, nil, "m1"},
		{"http endpoint, plain", []string{"http", "3000", "-domain", "app.example.com", "-scheme", "http"}, "http", []string{`"Domain":"app.example.com"`}, nil, ""},
		{"http, the server picks", []string{"http", "3000"}, "https", []string{`"Domain":""`, `"URL":""`}, nil, ""},
		{"labeled", []string{"http", "3000", "-label", "app=web", "-label", "env=prod", "-metadata", "m2"}, "", []string{"null"}, map[string]string{"app": "web", "env": "prod"}, "m2"},
		{"tcp", []string{"tcp", "22", "-remote-addr", "1.tcp.example.com:20002"}, "tcp", []string{`"Addr":"1.tcp.example.com:20002"`}, nil, ""},
		{"tls passed through", []string{"tls", "8443", "-domain", "app.example.com"}, "tls", []string{`"Domain":"app.example.com"`, `"TLSTermination":null`}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parseAgentArgs(append([]string{"-server", "t.example.com:443", "-authtoken", "tok"}, tc.args...), func(string) string { return "" }, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			cfg, ok := c.tunnelConfig().(sdkConfig)
			if !ok {
				t.Fatalf("%T lacks the SDK's methods", c.tunnelConfig())
			}
			opts, err := json.Marshal(cfg.Opts())
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Proto() != tc.proto || cfg.ForwardsTo() != c.target.String() || !maps.Equal(cfg.Labels(), tc.labels) {
				t.Errorf("proto %q, forwards to %q, labels %v", cfg.Proto(), cfg.ForwardsTo(), cfg.Labels())
			}
			for _, want := range tc.opts {
				if !strings.Contains(string(opts), want) {
					t.Errorf("options %s lack %s", opts, want)
				}
			}
			extra := reflect.ValueOf(cfg).MethodByName("Extra").Call(nil)[0]
			if md := extra.FieldByName("Metadata").String(); md != tc.metadata {
				t.Errorf("metadata %q, want %q", md, tc.metadata)
			}
		})
	}
}

// tunnelConn stands in for the connection the SDK hands the agent: a
// net.Conn without CloseWrite (as the SDK's), the client's address from
// the proxy header, and the header's protocol.
type tunnelConn struct {
	net.Conn
	client      net.Addr
	proto       string
	passthrough bool
}

func (c tunnelConn) RemoteAddr() net.Addr     { return c.client }
func (c tunnelConn) Proto() string            { return c.proto }
func (c tunnelConn) EdgeType() ngrok.EdgeType { return ngrok.EdgeTypeUndefined }
func (c tunnelConn) PassthroughTLS() bool     { return c.passthrough }

var _ ngrok.Conn = tunnelConn{}

// tcpPair returns both ends of a loopback TCP connection.
func tcpPair(t testing.TB) (net.Conn, *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	far, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	near, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { near.Close(); far.Close() })
	return near, far.(*net.TCPConn)
}

// TestAgentForward: a connection is relayed to the target both ways
// (the client's half-close reaches the target, the target's end closes
// the connection) and logged with the client's address, bytes each way
// and duration; an HTTP connection whose target does not answer gets a
// 502, a TCP one is closed.
func TestAgentForward(t *testing.T) {
	client := &net.TCPAddr{IP: net.IPv4(203, 0, 113, 7), Port: 40000}
	var logs syncbuf.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))

	t.Run("tcp half-close", func(t *testing.T) {
		// The target reads to EOF, then answers in upper case and closes.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		go func() {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
			b, _ := io.ReadAll(c)
			c.Write(bytes.ToUpper(b))
		}()
		near, far := tcpPair(t)
		done := make(chan struct{})
		go func() {
			defer close(done)
			forwardConn(context.Background(), tunnelConn{near, client, "tcp", false}, agentTarget{"", ln.Addr().String()}, logger)
		}()
		far.Write([]byte("hello, target"))
		far.CloseWrite()
		got, err := io.ReadAll(far)
		if err != nil || string(got) != "HELLO, TARGET" {
			t.Errorf("read %q, %v", got, err)
		}
		<-done
		line := lastLine(logs.String())
		for _, want := range []string{"msg=connection", "client=203.0.113.7:40000", "proto=tcp", "bytes_in=13", "bytes_out=13", "duration="} {
			if !strings.Contains(line, want) {
				t.Errorf("log line %q lacks %q", line, want)
			}
		}
	})

	t.Run("http", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "hello %s", r.Host)
		})}
		go srv.Serve(ln)
		defer srv.Close()
		near, far := tcpPair(t)
		done := make(chan struct{})
		go func() {
			defer close(done)
			forwardConn(context.Background(), tunnelConn{near, client, "https", false}, agentTarget{"http", ln.Addr().String()}, logger)
		}()
		// Two requests on one connection, as the proxy keeps it alive.
		br := bufio.NewReader(far)
		sent := 0
		for i := range 2 {
			n, _ := fmt.Fprintf(far, "GET /%d HTTP/1.1\r\nHost: app.example.com\r\n\r\n", i)
			sent += n
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 200 || string(body) != "hello app.example.com" {
				t.Errorf("request %d: %d %q", i, resp.StatusCode, body)
			}
		}
		far.Close()
		<-done
		if line := lastLine(logs.String()); !strings.Contains(line, "proto=https") || !strings.Contains(line, fmt.Sprintf("bytes_in=%d ", sent)) {
			t.Errorf("log line %q", line)
		}
	})

	// A port nothing listens on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := agentTarget{"http", ln.Addr().String()}
	ln.Close()
	for _, tc := range []struct {
		proto       string
		passthrough bool
		want        string
	}{
		{"https", false, "HTTP/1.1 502 Bad Gateway"},
		{"http", false, "HTTP/1.1 502 Bad Gateway"},
		{"tcp", false, ""},
		{"tls", true, ""},
	} {
		t.Run("unreachable "+tc.proto, func(t *testing.T) {
			near, far := tcpPair(t)
			forwardConn(context.Background(), tunnelConn{near, client, tc.proto, tc.passthrough}, down, logger)
			got, _ := io.ReadAll(far)
			if !strings.HasPrefix(string(got), tc.want) || tc.want == "" && len(got) > 0 {
				t.Errorf("the client read %q, want %q", got, tc.want)
			}
			if line := lastLine(logs.String()); !strings.Contains(line, `msg="target unreachable"`) || !strings.Contains(line, "client=203.0.113.7:40000") {
				t.Errorf("log line %q", line)
			}
		})
	}
}

// lastLine returns the last line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// runAgent runs edgeplane agent with args until the returned function
// cancels its context, which returns the exit code.
func runAgent(t *testing.T, args []string, env map[string]string) (stdout, stderr *syncbuf.Buffer, stop func() int) {
	t.Helper()
	stdout, stderr = &syncbuf.Buffer{}, &syncbuf.Buffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, append([]string{"agent"}, args...), func(k string) string { return env[k] }, stdout, stderr, nil)
	}()
	stop = func() int {
		cancel()
		select {
		case code := <-done:
			return code
		case <-time.After(10 * time.Second):
			t.Fatal("the agent did not stop on its signal")
			return -1
		}
	}
	t.Cleanup(func() { cancel() })
	return stdout, stderr, stop
}

// TestAgentRetriesUntilSignal: an agent whose server cannot be reached
// logs each failure and retries, as the SDK does, until a signal, on
// which it exits 0; no output shows the authtoken (from the environment).
// The failure names the tunnel server, in the agent's words, never the
// SDK's "ngrok server".
func TestAgentRetriesUntilSignal(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // connection refused from now on
	stdout, stderr, stop := runAgent(t, []string{"-server", addr, "http", "3000"}, map[string]string{"EDGEPLANE_AUTHTOKEN": agentToken})
	if _, ok := within(20*time.Second, func() bool { return strings.Count(stderr.String(), `msg="session failed; retrying"`) >= 2 }); !ok {
		t.Fatalf("no two failures logged: %s", stderr)
	}
	if code := stop(); code != 0 {
		t.Errorf("exit %d on a signal, want 0: %s", code, stderr)
	}
	if !strings.Contains(stderr.String(), "connection refused") || stdout.String() != "" {
		t.Errorf("stdout %q, stderr %s", stdout, stderr)
	}
	if !strings.Contains(stderr.String(), `err="cannot reach the tunnel server `+addr+": ") || strings.Contains(stderr.String(), "ngrok") {
		t.Errorf("the failure is not said in the agent's words: %s", stderr)
	}
	if strings.Contains(stdout.String()+stderr.String(), agentToken) {
		t.Errorf("the authtoken is printed: %s", stderr)
	}
}

// runAgentToExit runs edgeplane agent with args until it exits (at most
// limit), and returns its exit code, its output and how long it ran.
func runAgentToExit(t *testing.T, args []string, env map[string]string, limit time.Duration) (code int, stdout, stderr string, took time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	var out, errOut syncbuf.Buffer
	start := time.Now()
	code = run(ctx, append([]string{"agent"}, args...), func(k string) string { return env[k] }, &out, &errOut, nil)
	took = time.Since(start)
	if ctx.Err() != nil {
		t.Fatalf("the agent did not exit within %v: %s", limit, errOut.String())
	}
	return code, out.String(), errOut.String(), took
}

// TestAgentChecksServerCertificate: the agent checks the server's
// certificate against -ca's roots alone, for -server's host: one from
// -ca's CA for the host passes it, a name sent as SNI, an IPv6 address
// checked as one (the SDK alone would check the name "["). Past the
// handshake nothing answers, so the session fails and is retried: the
// agent protocol is package tunnel's to serve. A certificate from
// another CA, or for another name, ends the agent at once (exit 1, one
// line), never retried: its handshake completes nowhere.
func TestAgentChecksServerCertificate(t *testing.T) {
	ca, other := newTestCA(t), newTestCA(t)
	cert := serverCert(t, ca, "localhost", net.IPv6loopback)
	names := make(chan string, 64)                                                             // the server names of completed handshakes
	ln, err := tls.Listen("tcp", "[::]:0", &tls.Config{Certificates: []tls.Certificate{cert}}) // IPv4 and IPv6
	if err != nil {
		t.Skipf("no dual-stack listener: %v", err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			tc := c.(*tls.Conn)
			if tc.Handshake() == nil {
				select {
				case names <- tc.ConnectionState().ServerName:
				default:
				}
			}
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	dir := t.TempDir()
	for _, tc := range []struct {
		name, host, caPEM string
		handshake         bool
		sni               string
		logged            string
	}{
		{"another CA", "localhost", other.pem, false, "", "x509: certificate signed by unknown authority"},
		{"another name", "127.0.0.1", ca.pem, false, "", "x509: certificate is valid for ::1, not 127.0.0.1"},
		{"the CA", "localhost", ca.pem, true, "localhost", "failed to send authentication request"},
		{"the CA, IPv6", "[::1]", ca.pem, true, "", "failed to send authentication request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".pem")
			if err := os.WriteFile(file, []byte(tc.caPEM), 0o600); err != nil {
				t.Fatal(err)
			}
			for len(names) > 0 {
				<-names
			}
			args := []string{"-server", tc.host + ":" + port, "-ca", file, "-authtoken", agentToken, "-inspect-addr", "off", "tcp", "22"}
			if !tc.handshake {
				code, stdout, stderr, took := runAgentToExit(t, args, nil, 10*time.Second)
				want := "edgeplane: the tunnel server " + tc.host + ":" + port + " presented a certificate the agent does not trust: " + tc.logged
				if code != 1 || !strings.HasPrefix(stderr, want) || strings.Count(stderr, "\n") != 1 || took > 2*time.Second {
					t.Errorf("exit %d after %v, stderr %q; want 1 within 2s and one line starting %q", code, took, stderr, want)
				}
				if !strings.Contains(stderr, "(checked against the roots of "+file+" for ") || !strings.Contains(stderr, "give the CA that signs it with -ca FILE") {
					t.Errorf("stderr %q does not say what was checked and what to do", stderr)
				}
				if stdout != "" || len(names) > 0 {
					t.Errorf("stdout %q, %d handshakes completed", stdout, len(names))
				}
				t.Logf("exit %d after %v", code, took.Round(time.Millisecond))
				return
			}
			stdout, stderr, stop := runAgent(t, args, nil)
			if _, ok := within(20*time.Second, func() bool { return strings.Contains(stderr.String(), tc.logged) }); !ok {
				t.Fatalf("stderr lacks %q: %s", tc.logged, stderr)
			}
			if code := stop(); code != 0 {
				t.Errorf("exit %d on a signal", code)
			}
			select {
			case name := <-names:
				if !tc.handshake || name != tc.sni {
					t.Errorf("a handshake completed with the server name %q", name)
				}
			default:
				if tc.handshake {
					t.Error("no handshake completed")
				}
			}
			if tc.handshake && strings.Contains(stderr.String(), "x509") {
				t.Errorf("a certificate error with the right CA: %s", stderr)
			}
			if stdout.String() != "" || strings.Contains(stderr.String(), agentToken) {
				t.Errorf("stdout %q, stderr %s", stdout, stderr)
			}
		})
	}
}

// serverCert issues a server certificate of ca for name and ip.
func serverCert(t *testing.T, ca *testCA, name string, ip net.IP) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name}, IPAddresses: []net.IP{ip},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// TestAgentFailover: edgeplane serve -proxy with a tunnel listener and
// edgeplane agent with a list of three servers: the first refuses
// connections (a closed port, by the name localhost, which the tunnel
// server's certificate lacks); the second and third are relays to the
// tunnel listener (its certificate is for 127.0.0.1 alone), standing in
// for two edge nodes. The agent fails over to the second, its
// certificate checked for the host dialed (the SDK alone would check
// localhost, the first entry's), and the edge serves through its tunnel.
// When the second is cut, the session ends and the agent reconnects
// through the third, its tunnel with it. Each log line names the server
// actually used.
func TestAgentFailover(t *testing.T) {
	ts := startTunnelServe(t)
	tn := newTenant(ts.api, "dev.example.com", "dev")
	up := newUpstream(t, "dev")
	_, upPort, _ := net.SplitHostPort(strings.TrimPrefix(up.URL, "http://"))
	second, third := startRelay(t, "127.0.0.1:0", ts.agentAddr), startRelay(t, "127.0.0.1:0", ts.agentAddr)
	ln, err := net.Listen("tcp", "127.0.0.1:0") // after the relays, which cannot take its port
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	ln.Close() // connection refused from now on
	first := "localhost:" + port

	nodes := *ts // startAgent gives agentAddr as -server
	nodes.agentAddr = first + "," + second.addr + "," + third.addr
	a := nodes.startAgent(t, tn.credToken, "http", upPort, "-label", "app=dev")
	logged := func(lines ...string) {
		t.Helper()
		if _, ok := within(20*time.Second, func() bool {
			for _, l := range lines {
				if !strings.Contains(a.stderr.String(), l) {
					return false
				}
			}
			return true
		}); !ok {
			t.Fatalf("the agent's log lacks %q: %s", lines, a.stderr)
		}
	}
	logged(`msg="session failed; retrying" server=`+first+" next="+second.addr+" ",
		`msg="session established" server=`+second.addr+"\n")
	if strings.Contains(a.stderr.String(), "x509") {
		t.Errorf("a certificate error: %s", a.stderr)
	}
	c := through(ts.proxyHTTP, nil)
	serves := func() bool {
		code, body := fetch(c, "http://dev.example.com:443/x", "agent")
		return code == 200 && body == "upstream dev /x"
	}
	if _, ok := within(5*time.Second, serves); !ok {
		code, body := fetch(c, "http://dev.example.com:443/x", "agent")
		t.Fatalf("through the agent: %d %q; agent log: %s", code, body, a.stderr)
	}

	second.cut() // the node dies: its connections reset, its port refuses
	logged(`msg="session failed; retrying" server=`+second.addr+" next="+third.addr+" ",
		`msg="session re-established" server=`+third.addr+" ")
	took, ok := within(5*time.Second, serves)
	if !ok {
		code, body := fetch(c, "http://dev.example.com:443/x", "agent")
		t.Fatalf("after the failover: %d %q; agent log: %s", code, body, a.stderr)
	}
	t.Logf("the edge served through the third server %v after the agent logged its reconnect", took)
	if n := strings.Count(a.stderr.String(), `msg="session failed; retrying"`); n != 2 {
		t.Errorf("%d failures logged, want 2 (one per dead server): %s", n, a.stderr)
	}
	a.stopAndWait(t)
}
