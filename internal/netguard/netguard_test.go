package netguard_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/internal/netguard"
)

func TestPolicy(t *testing.T) {
	public := netguard.New(nil)
	allowed := netguard.New([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::ffff:10.1.0.0/112")})
	// Networks given but none valid: nothing is allowed (never public
	// addresses, nor every address).
	none := netguard.New([]netip.Prefix{{}})
	cases := []struct {
		p      *netguard.Policy
		addr   string
		reason string // "" when allowed
	}{
		{public, "8.8.8.8", ""},
		{public, "2606:4700::1111", ""},
		{public, "127.0.0.1", "loopback"},
		{public, "10.2.3.4", "private (10.0.0.0/8)"},
		{public, "169.254.169.254", "link-local"},
		{public, "::ffff:192.168.1.1", "private (192.168.0.0/16)"},
		{public, "64:ff9b::a00:1", "NAT64"},
		{public, "fd00::1", "unique local"},
		{public, "fe80::1%eth0", "link-local"},
		{allowed, "127.0.0.1", ""},
		{allowed, "10.1.2.3", ""},
		{allowed, "8.8.8.8", "outside the allowed networks"},
		{none, "8.8.8.8", "outside the allowed networks"},
		{none, "127.0.0.1", "outside the allowed networks"},
	}
	for _, c := range cases {
		got := c.p.Check(netip.MustParseAddr(c.addr))
		if (c.reason == "") != (got == "") || !strings.Contains(got, c.reason) {
			t.Errorf("Check(%s) = %q, want %q", c.addr, got, c.reason)
		}
	}
	errNo := errors.New("no")
	if err := public.Control(errNo)("tcp", "10.0.0.1:80", nil); !errors.Is(err, errNo) || !strings.Contains(err.Error(), "private") {
		t.Errorf("Control: %v", err)
	}
	if err := public.Control(errNo)("tcp", "1.1.1.1:443", nil); err != nil {
		t.Errorf("Control(public): %v", err)
	}
	// An address Control cannot read is refused, never let through.
	if err := public.Control(errNo)("tcp", "localhost:80", nil); !errors.Is(err, errNo) {
		t.Errorf("Control(name): %v", err)
	}
}

// hosts is a resolver of fixed answers: a name it does not hold does not
// exist; "slow." names wait for the context.
type hosts map[string][]string

func (h hosts) lookup(ctx context.Context, _, host string) ([]netip.Addr, error) {
	if strings.HasPrefix(host, "slow.") {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if host == "servfail.example" {
		return nil, &net.DNSError{Err: "server misbehaving", Name: host, Server: "10.0.0.53:53", IsTemporary: true}
	}
	addrs, ok := h[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, Server: "10.0.0.53:53", IsNotFound: true}
	}
	var out []netip.Addr
	for _, a := range addrs {
		out = append(out, netip.MustParseAddr(a))
	}
	return out, nil
}

func TestCheckHost(t *testing.T) {
	public := netguard.New(nil)
	loopback := netguard.New([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")})
	h := hosts{
		"public.example":  {"93.184.215.14"},
		"private.example": {"10.0.0.5", "192.168.1.1"},
		"mixed.example":   {"10.0.0.5", "93.184.215.14"},
		"many.example":    {"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5"},
		"none.example":    {},
		"localhost":       {"127.0.0.1", "::1"},
	}
	cases := []struct {
		name string
		p    *netguard.Policy
		host string
		want []string // substrings of the reason; none when allowed
	}{
		{"public IP", public, "93.184.215.14", nil},
		{"private IP", public, "10.1.2.3", []string{"10.1.2.3 is private (10.0.0.0/8)"}},
		{"IPv6 loopback", public, "::1", []string{"::1 is loopback"}},
		{"public name", public, "public.example", nil},
		{"private name", public, "private.example", []string{"private.example resolves only to addresses not allowed", "10.0.0.5 is private", "192.168.1.1 is private"}},
		{"mixed name: one allowed address is enough", public, "mixed.example", nil},
		{"many addresses named up to three", public, "many.example", []string{"10.0.0.3 is private", "and 2 more"}},
		{"localhost", public, "localhost", []string{"127.0.0.1 is loopback"}},
		{"loopback allowed", loopback, "localhost", nil},
		{"loopback IP allowed", loopback, "127.0.0.1", nil},
		{"public name outside the networks", loopback, "public.example", []string{"93.184.215.14 is outside the allowed networks"}},
		{"no such host", public, "nx.example", []string{"nx.example did not resolve (no such host)"}},
		{"no address", public, "none.example", []string{"none.example did not resolve (it has no address)"}},
		{"server failure", public, "servfail.example", []string{"servfail.example did not resolve (the name server failed)"}},
		{"timeout", public, "slow.example", []string{"slow.example did not resolve within 10ms"}},
		{"no host", public, "", []string{"no host"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := c.p.CheckHost(context.Background(), h.lookup, c.host, 10*time.Millisecond)
			if (len(c.want) == 0) != (got == "") {
				t.Fatalf("CheckHost(%q) = %q, want %q", c.host, got, c.want)
			}
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("CheckHost(%q) = %q, want it to contain %q", c.host, got, w)
				}
			}
			// The resolver's own text (its address, Go's error chain) is
			// never part of the reason.
			if strings.Contains(got, "10.0.0.53") || strings.Contains(got, "lookup ") {
				t.Errorf("CheckHost(%q) = %q shows the resolver's error", c.host, got)
			}
		})
	}
}

func TestPolicyString(t *testing.T) {
	for _, c := range []struct {
		p    *netguard.Policy
		want string
	}{
		{netguard.New(nil), "public addresses only"},
		{netguard.New([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}), "only 127.0.0.0/8"},
		{netguard.New([]netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}),
			"only 10.0.0.0/8, 127.0.0.0/8 and ::1/128"},
		{netguard.New([]netip.Prefix{{}}), "no address (none of the networks given is valid)"},
	} {
		if got := c.p.String(); got != c.want {
			t.Errorf("String() = %q, want %q", got, c.want)
		}
	}
}

// FuzzCheckHost: any host a tenant writes gets an answer, never a
// panic; an IP literal is judged as Check judges it; a reason never
// shows the resolver's error.
func FuzzCheckHost(f *testing.F) {
	for _, s := range []string{"10.1.2.3", "::ffff:10.1.2.3", "fe80::1%eth0", "public.example", "private.example", "nx.example", "", "slow.x", "1.2.3.4.5"} {
		f.Add(s)
	}
	h := hosts{"public.example": {"93.184.215.14"}, "private.example": {"10.0.0.5"}}
	p := netguard.New(nil)
	f.Fuzz(func(t *testing.T, host string) {
		if strings.HasPrefix(host, "slow.") {
			return
		}
		got := p.CheckHost(context.Background(), h.lookup, host, time.Second)
		if a, err := netip.ParseAddr(host); err == nil && got != p.Check(a) {
			t.Fatalf("CheckHost(%q) = %q, Check = %q", host, got, p.Check(a))
		}
		if strings.Contains(got, "10.0.0.53") || strings.Contains(got, "lookup ") {
			t.Fatalf("CheckHost(%q) = %q shows the resolver's error", host, got)
		}
	})
}
