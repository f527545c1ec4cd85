package policy

import (
	"net/netip"
	"strings"
	"testing"
)

// TestRateLimitClientIPPrefix checks the conn.client_ip_prefix key element
// (issue 19, item 2): clients inside one prefix share a bucket, with the
// default lengths (IPv4 /32, IPv6 /64) and configured ones.
func TestRateLimitClientIPPrefix(t *testing.T) {
	tests := []struct {
		name   string
		extra  string
		first  string // client of the first request, admitted
		second string // client of the second, same bucket when shared
		shared bool
		shown  string // bucket_key of the first request
	}{
		{"IPv6 rotating inside its /64", "", "2001:db8:1:2::1", "2001:db8:1:2:ffff::9", true, "2001:db8:1:2::/64"},
		{"IPv6 another /64", "", "2001:db8:1:2::1", "2001:db8:1:3::1", false, "2001:db8:1:2::/64"},
		{"IPv4 default is the address", "", "198.51.100.10", "198.51.100.11", false, "198.51.100.10/32"},
		{"IPv4 /24 configured", `"client_ip_prefix":{"ipv4":24}`, "198.51.100.10", "198.51.100.11", true, "198.51.100.0/24"},
		{"IPv6 /48 configured", `"client_ip_prefix":{"ipv6":48}`, "2001:db8:1:2::1", "2001:db8:1:3::1", true, "2001:db8:1::/48"},
		{"IPv6 /128 configured", `"client_ip_prefix":{"ipv4":32,"ipv6":128}`, "2001:db8:1:2::1", "2001:db8:1:2::2", false, "2001:db8:1:2::1/128"},
		{"IPv4-mapped is IPv4", `"client_ip_prefix":{"ipv4":24}`, "::ffff:198.51.100.10", "198.51.100.200", true, "198.51.100.0/24"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := newTestEngine(t, Options{})
			p := mustCompile(t, e, rlDoc(1, "60s", `"conn.client_ip_prefix"`, tt.extra), CompileOptions{})
			req := testRequest()
			req.Conn.ClientAddr = netip.AddrPortFrom(netip.MustParseAddr(tt.first), 1)
			res := p.Inbound(req)
			if res.Verdict != Continue {
				t.Fatalf("first request: %+v", res)
			}
			if v := resultVar(t, e, res, rlBucketKey); v.s != tt.shown {
				t.Fatalf("bucket_key %q, want %q", v.s, tt.shown)
			}
			req.Conn.ClientAddr = netip.AddrPortFrom(netip.MustParseAddr(tt.second), 1)
			if res := p.Inbound(req); (res.Verdict == Respond) != tt.shared {
				t.Fatalf("second request: %+v, want shared bucket %v", res, tt.shared)
			}
		})
	}
}

func TestRateLimitClientIPPrefixInvalid(t *testing.T) {
	const at = `on_http_request[0].actions[0].config.client_ip_prefix`
	tests := []struct {
		name, keys, extra, want string
	}{
		{"without the element", `"conn.client_ip"`, `"client_ip_prefix":{"ipv6":56}`, at + `: rule "limit": applies only to the conn.client_ip_prefix bucket key element`},
		{"IPv4 too long", `"conn.client_ip_prefix"`, `"client_ip_prefix":{"ipv4":33}`, at + `.ipv4: rule "limit": must be a prefix length from 0 to 32, got 33`},
		{"IPv6 negative", `"conn.client_ip_prefix"`, `"client_ip_prefix":{"ipv6":-1}`, at + `.ipv6: rule "limit": must be a prefix length from 0 to 128, got -1`},
		{"unknown member", `"conn.client_ip_prefix"`, `"client_ip_prefix":{"ipv5":1}`, at + `.ipv5: rule "limit": unknown field; allowed: ipv4, ipv6`},
		{"not an object", `"conn.client_ip_prefix"`, `"client_ip_prefix":64`, at + `: rule "limit": must be a JSON object`},
		{"not an integer", `"conn.client_ip_prefix"`, `"client_ip_prefix":{"ipv4":"24"}`, at + `.ipv4: rule "limit": must be an integer`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := newTestEngine(t, Options{})
			_, err := e.CompileJSON([]byte(rlDoc(1, "60s", tt.keys, tt.extra)), CompileOptions{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v\nwant %s", err, tt.want)
			}
		})
	}
}

// TestRateLimitPrefixLengthsSeparateLimiters checks that the pool does not
// share a limiter between configs that differ only in prefix lengths.
func TestRateLimitPrefixLengthsSeparateLimiters(t *testing.T) {
	e, _ := newTestEngine(t, Options{})
	p1 := mustCompile(t, e, rlDoc(1, "60s", `"conn.client_ip_prefix"`, `"client_ip_prefix":{"ipv6":64}`), CompileOptions{})
	p2 := mustCompile(t, e, rlDoc(1, "60s", `"conn.client_ip_prefix"`, `"client_ip_prefix":{"ipv6":56}`), CompileOptions{})
	req := testRequest()
	if p1.Inbound(req).Verdict != Continue || p2.Inbound(req).Verdict != Continue {
		t.Fatal("a config with other prefix lengths shares the limiter")
	}
}
