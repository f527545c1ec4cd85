package agentstate

import (
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane/domains"
)

func TestParseTCPAddr(t *testing.T) {
	for _, tc := range []struct {
		addr, host string
		port       int
		bad        bool
	}{
		{addr: "tcp.example.com:20001", host: "tcp.example.com", port: 20001},
		{addr: "TCP.Example.COM.:1", host: "tcp.example.com", port: 1},
		{addr: "192.0.2.1:65535", host: "192.0.2.1", port: 65535},
		{addr: "[2001:db8::1]:443", host: "2001:db8::1", port: 443},
		{addr: "[::ffff:192.0.2.1]:443", host: "192.0.2.1", port: 443},
		{addr: "[fe80::1%eth0]:443", bad: true},
		{addr: "tcp.example.com", bad: true},
		{addr: "tcp.example.com:0", bad: true},
		{addr: "tcp.example.com:65536", bad: true},
		{addr: "tcp.example.com:080", bad: true},
		{addr: "tcp.example.com:+80", bad: true},
		{addr: ":80", bad: true},
		{addr: "*.example.com:80", bad: true},
		{addr: "localhost:80", bad: true},
		{addr: "a b.example.com:80", bad: true},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			host, port, reason := parseTCPAddr(tc.addr)
			if (reason != "") != tc.bad || host != tc.host || port != tc.port {
				t.Errorf("parseTCPAddr(%q) = %q, %d, %q", tc.addr, host, port, reason)
			}
		})
	}
}

// FuzzParseTCPAddr: what parseTCPAddr accepts of an agent is a canonical
// DNS name or IP address and a port from 1 to 65535, which parses back
// to itself.
func FuzzParseTCPAddr(f *testing.F) {
	for _, s := range []string{"tcp.example.com:20001", "[::1]:1", "192.0.2.1:80", "x:0", "*.a.b:1", "\xff:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, addr string) {
		host, port, reason := parseTCPAddr(addr)
		if reason != "" {
			if host != "" || port != 0 {
				t.Fatalf("a refusal with a result: %q %d", host, port)
			}
			return
		}
		if port < 1 || port > 65535 {
			t.Fatalf("port %d", port)
		}
		if ip, err := netip.ParseAddr(host); err == nil {
			if ip.String() != host || ip.Is4In6() {
				t.Fatalf("address %q is not canonical", host)
			}
		} else if name, err := domains.ParseName(host); err != nil || name != host || domains.IsWildcard(host) {
			t.Fatalf("host %q is not a canonical name (%v)", host, err)
		}
		again := net.JoinHostPort(host, strconv.Itoa(port))
		if h, p, r := parseTCPAddr(again); h != host || p != port || r != "" {
			t.Fatalf("%q parses to %q %d %q", again, h, p, r)
		}
	})
}

func TestDomainRules(t *testing.T) {
	for domain, want := range map[string]string{
		"app.example.com": "bind:app.example.com bind:*.example.com",
		"example.com":     "bind:example.com",
		"*.example.com":   "bind:*.example.com",
		"a.b.example.com": "bind:a.b.example.com bind:*.b.example.com",
		"*.b.example.com": "bind:*.b.example.com",
	} {
		if got := strings.Join(domainRules(domain), " "); got != want {
			t.Errorf("domainRules(%q) = %q, want %q", domain, got, want)
		}
	}
}
