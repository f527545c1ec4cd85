package netguard_test

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

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
