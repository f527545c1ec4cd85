package main

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"time"
)

// localTCPName is the public host of agents' tcp endpoints when the TCP
// listeners are on loopback or every interface and -tunnel-tcp-host is
// not given: a name (RFC 6761 keeps .localhost for loopback) that an ACL
// rule can name, bind:tcp.localhost:PORT, where "localhost" (one label)
// and IP addresses cannot be.
const localTCPName = "tcp.localhost"

// resolveTCPHost returns the address the TCP listeners of -tcp-host host
// bind: "" for every interface ("", 0.0.0.0, ::), an IP address as it is,
// 127.0.0.1 for localhost and the names under .localhost, and the first
// address a name resolves to (IPv4 first) otherwise; an error for a name
// that does not resolve.
func resolveTCPHost(host string) (string, error) {
	if host == "" {
		return "", nil
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if ip.Zone() != "" {
			return "", errors.New("want an IP address without a zone, or a name")
		}
		if ip.IsUnspecified() {
			return "", nil
		}
		return ip.Unmap().String(), nil
	}
	name := strings.TrimSuffix(strings.ToLower(host), ".")
	if name == "localhost" || strings.HasSuffix(name, ".localhost") {
		return "127.0.0.1", nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", name)
	if err != nil || len(ips) == 0 {
		return "", errors.New("the name does not resolve here; give the IP address the TCP listeners should bind")
	}
	best := ips[0]
	for _, ip := range ips {
		if ip.Unmap().Is4() {
			best = ip
			break
		}
	}
	return best.Unmap().String(), nil
}

// publicTCPHost returns the default public host of agents' tcp endpoints
// for -tcp-host host: host itself when an ACL rule can name it (a name of
// two labels or more), or when it is a specific address clients reach
// (an IP address that is not loopback: ACL rules cannot name it, give
// -tunnel-tcp-host a name for them); else localTCPName (loopback, every
// interface, localhost).
func publicTCPHost(host string) string {
	name := strings.TrimSuffix(strings.ToLower(host), ".")
	if ip, err := netip.ParseAddr(name); err == nil {
		if ip.IsLoopback() || ip.IsUnspecified() {
			return localTCPName
		}
		return ip.Unmap().String()
	}
	if strings.Contains(name, ".") {
		return name
	}
	return localTCPName
}

// bracketIPv6 writes an IPv6 address in brackets, as in a URL's host.
func bracketIPv6(host string) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]"
	}
	return host
}
