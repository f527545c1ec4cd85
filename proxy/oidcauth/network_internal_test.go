package oidcauth

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
)

// TestNonPublic: the classifier of the addresses the default transport
// may dial. Each IPv4 case is also checked as an IPv4-mapped IPv6 address
// (::ffff:a.b.c.d, the same verdict) and as a NAT64 one (64:ff9b::a.b.c.d,
// public exactly when the IPv4 address is).
func TestNonPublic(t *testing.T) {
	for _, tc := range []struct {
		addr string
		want string // a part of the reason; "" for a public address
	}{
		// IPv4.
		{"8.8.8.8", ""},
		{"1.1.1.1", ""},
		{"93.184.216.34", ""},
		{"0.0.0.0", "unspecified"},
		{"0.1.2.3", "this network"},
		{"10.0.0.1", "private"},
		{"10.255.255.255", "private"},
		{"9.255.255.255", ""},
		{"11.0.0.0", ""},
		{"100.64.0.1", "carrier-grade NAT"},
		{"100.127.255.255", "carrier-grade NAT"},
		{"100.63.255.255", ""},
		{"100.128.0.0", ""},
		{"127.0.0.1", "loopback"},
		{"127.255.255.254", "loopback"},
		{"169.254.169.254", "link-local"},
		{"169.254.0.1", "link-local"},
		{"172.16.0.1", "private"},
		{"172.31.255.255", "private"},
		{"172.15.255.255", ""},
		{"172.32.0.0", ""},
		{"192.0.0.170", "IETF protocol assignments"},
		{"192.0.2.1", "documentation"},
		{"192.88.99.1", "6to4"},
		{"192.168.1.1", "private"},
		{"192.169.0.1", ""},
		{"198.18.0.1", "benchmarking"},
		{"198.19.255.255", "benchmarking"},
		{"198.20.0.0", ""},
		{"198.51.100.7", "documentation"},
		{"203.0.113.9", "documentation"},
		{"224.0.0.1", "multicast"},
		{"239.255.255.250", "multicast"},
		{"240.0.0.1", "reserved"},
		{"255.255.255.255", "reserved"},
		// IPv6.
		{"2001:4860:4860::8888", ""},
		{"2606:4700:4700::1111", ""},
		{"::", "unspecified"},
		{"::1", "loopback"},
		{"::2", "reserved (::/8)"},
		{"::7f00:1", "reserved (::/8)"}, // IPv4-compatible 127.0.0.1
		{"64:ff9b:1::a00:1", "local-use NAT64"},
		{"100::1", "discard-only"},
		{"2001::1", "IETF protocol assignments"}, // Teredo
		{"2001:db8::1", "documentation"},
		{"2002:7f00:1::1", "6to4"},   // 6to4 of 127.0.0.1
		{"2002:808:808::1", "6to4"},  // of a public address: refused all the same
		{"3fff::1", "documentation"}, // RFC 9637
		{"fc00::1", "unique local"},
		{"fd12:3456::1", "unique local"},
		{"fd00:ec2::254", "unique local"}, // AWS's IPv6 metadata address
		{"fe80::1", "link-local"},
		{"fe80::1%eth0", "link-local"},
		{"fec0::1", "site-local"},
		{"ff02::1", "multicast"},
		{"5f00::1", "outside IPv6 global unicast"}, // SRv6 SIDs
		{"4000::1", "outside IPv6 global unicast"},
		{"1fff:ffff::1", "outside IPv6 global unicast"},
		{"fd00:ec2::254", "unique local"}, // AWS's IPv6 metadata address
	} {
		t.Run(tc.addr, func(t *testing.T) {
			a := netip.MustParseAddr(tc.addr)
			check := func(a netip.Addr, want string) {
				t.Helper()
				got := nonPublic(a)
				if (want == "") != (got == "") || !strings.Contains(got, want) {
					t.Errorf("nonPublic(%s) = %q; want %q", a, got, want)
				}
			}
			check(a, tc.want)
			if a.Is4() {
				b := a.As4()
				check(netip.AddrFrom16([16]byte{10: 0xff, 11: 0xff, 12: b[0], 13: b[1], 14: b[2], 15: b[3]}), tc.want)
				nat64 := netip.AddrFrom16([16]byte{1: 0x64, 2: 0xff, 3: 0x9b, 12: b[0], 13: b[1], 14: b[2], 15: b[3]})
				check(nat64, tc.want) // the reason is "NAT64 of an address that is <want>"
			}
		})
	}
	if got := nonPublic(netip.Addr{}); got == "" {
		t.Error("the zero Addr is public")
	}
}

// TestAddressPolicy: the rule the default transport's dialer applies, per
// options, to the address and port it is about to connect to.
func TestAddressPolicy(t *testing.T) {
	nets := func(ss ...string) []netip.Prefix {
		var out []netip.Prefix
		for _, s := range ss {
			out = append(out, netip.MustParsePrefix(s))
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		opts    ProvidersOptions
		address string
		want    string // a part of the error; "" when allowed
	}{
		{"default: public", ProvidersOptions{}, "8.8.8.8:443", ""},
		{"default: public IPv6", ProvidersOptions{}, "[2001:4860:4860::8888]:443", ""},
		{"default: loopback", ProvidersOptions{}, "127.0.0.1:443", "127.0.0.1 is loopback"},
		{"default: mapped loopback", ProvidersOptions{}, "[::ffff:127.0.0.1]:443", "127.0.0.1 is loopback"},
		{"default: metadata", ProvidersOptions{}, "169.254.169.254:80", "169.254.169.254 is link-local"},
		{"default: link-local with zone", ProvidersOptions{}, "[fe80::1%eth0]:80", "fe80::1 is link-local"},
		{"default: a name", ProvidersOptions{}, "localhost:80", "not an IP address"},
		{"default: no port", ProvidersOptions{}, "8.8.8.8", "not an IP address"},
		{"networks: inside", ProvidersOptions{Networks: nets("10.0.0.0/8")}, "10.1.2.3:443", ""},
		{"networks: mapped address inside", ProvidersOptions{Networks: nets("10.0.0.0/8")}, "[::ffff:10.1.2.3]:443", ""},
		{"networks: mapped prefix", ProvidersOptions{Networks: nets("::ffff:10.0.0.0/104")}, "10.1.2.3:443", ""},
		{"networks: unmasked prefix", ProvidersOptions{Networks: nets("10.1.2.3/8")}, "10.200.0.1:443", ""},
		{"networks: zone stripped", ProvidersOptions{Networks: nets("fe80::/10")}, "[fe80::1%eth0]:443", ""},
		{"networks: outside", ProvidersOptions{Networks: nets("10.0.0.0/8")}, "11.0.0.1:443", "11.0.0.1 is outside"},
		{"networks: public outside", ProvidersOptions{Networks: nets("10.0.0.0/8")}, "8.8.8.8:443", "outside"},
		{"networks: IPv4 prefix, IPv6 address", ProvidersOptions{Networks: nets("0.0.0.0/0")}, "[2001:4860::1]:443", "outside"},
		{"networks: invalid prefix ignored", ProvidersOptions{Networks: []netip.Prefix{{}}}, "8.8.8.8:443", "outside"},
		{"networks win over AllowPrivateNetworks", ProvidersOptions{AllowPrivateNetworks: true, Networks: nets("10.0.0.0/8")},
			"127.0.0.1:443", "outside"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newAddressPolicy(tc.opts)
			if p == nil {
				t.Fatal("no policy")
			}
			err := p.control("tcp", tc.address, nil)
			if tc.want == "" {
				if err != nil {
					t.Errorf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrAddressNotAllowed) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v; want ErrAddressNotAllowed saying %q", err, tc.want)
			}
		})
	}
	if p := newAddressPolicy(ProvidersOptions{AllowPrivateNetworks: true}); p != nil {
		t.Errorf("AllowPrivateNetworks without Networks: policy %+v; want none", p)
	}
}

// TestRefusedDialError: the refusal comes out of the client's call with
// ErrAddressNotAllowed in its chain, through net and net/http's wrapping,
// before any request is sent; a name is judged by the addresses it
// resolves to (localhost: loopback).
func TestRefusedDialError(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	ps := NewProviders(ProvidersOptions{})
	for _, target := range []string{srv.URL, "http://localhost:" + u.Port()} {
		res, err := ps.client.Get(target)
		if err == nil {
			res.Body.Close()
		}
		if !errors.Is(err, ErrAddressNotAllowed) || !strings.Contains(err.Error(), "is loopback") || hits.Load() != 0 {
			t.Errorf("GET %s: err %v after %d requests; want ErrAddressNotAllowed (loopback) after none", target, err, hits.Load())
		}
	}
}

// TestDefaultTransportNoProxy: the default transport never goes through
// an HTTP proxy (HTTPS_PROXY and the like): the dialer would then check
// the proxy's address, never the provider's.
func TestDefaultTransportNoProxy(t *testing.T) {
	for _, opts := range []ProvidersOptions{{}, {AllowPrivateNetworks: true}} {
		if tr := defaultTransport(newAddressPolicy(opts), opts); tr.Proxy != nil {
			t.Errorf("%+v: the default transport has a Proxy", opts)
		}
	}
}
