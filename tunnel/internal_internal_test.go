package tunnel

import (
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane/agents"
)

func TestDomainBaseProblem(t *testing.T) {
	for _, tc := range []struct {
		base string
		ok   bool
	}{
		{"", true},
		{"agents.example.com", true},
		{"a.b.example.com", true},
		{"*.agents.example.com", false},
		{"agents.example.com:443", false},
		{"https://agents.example.com", false},
		{"localhost", false},
		{"Agents.Example.com", false},
		{"agents.example.com.", false},
		{"agents.internal", false},
		{"agents..example.com", false},
	} {
		if got := DomainBaseProblem(tc.base); (got == "") != tc.ok {
			t.Errorf("DomainBaseProblem(%q) = %q, want ok %v", tc.base, got, tc.ok)
		}
	}
}

func TestInternalURL(t *testing.T) {
	for _, tc := range []struct {
		raw, proto string
		host       string
		port       int
		bad        bool
	}{
		{raw: "https://api.internal", proto: "https", host: "api.internal"},
		{raw: "http://API.internal.:8080", proto: "http", host: "api.internal", port: 8080},
		{raw: "api.internal", proto: "https", host: "api.internal"},
		{raw: "api.internal:1234", proto: "https", host: "api.internal", port: 1234},
		{raw: "http://api.internal", proto: "https", bad: true},
		{raw: "https://api.internal:99999", proto: "https", bad: true},
		{raw: "https://api.internal:x", proto: "https", bad: true},
		{raw: "api.internal/path", proto: "https", bad: true},
		{raw: "", proto: "https", bad: true},
	} {
		host, port, reason := internalURL(tc.raw, tc.proto)
		if (reason != "") != tc.bad || (!tc.bad && (host != tc.host || port != tc.port)) {
			t.Errorf("internalURL(%q) = %q, %d, %q", tc.raw, host, port, reason)
		}
	}
}

func FuzzInternalURL(f *testing.F) {
	for _, s := range []string{"https://api.internal", "api.internal:80", "http://[::1]:80", "%zz", "https://a:b@c.internal:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		host, port, reason := internalURL(raw, agents.ProtoHTTPS)
		if reason != "" {
			if host != "" || port != 0 {
				t.Fatalf("refused %q but returned %q %d", raw, host, port)
			}
			return
		}
		if port < 0 || port > 65535 || strings.ToLower(host) != host {
			t.Fatalf("internalURL(%q) = %q %d", raw, host, port)
		}
	})
}

// FuzzDomainBaseProblem: a domain base accepted is a canonical DNS name
// of two labels or more, without a wildcard, port or internal suffix.
func FuzzDomainBaseProblem(f *testing.F) {
	for _, s := range []string{"agents.example.com", "*.a.b", "a.b:1", "A.B", "x.internal", "a..b", "\xff.com"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, base string) {
		if base == "" || DomainBaseProblem(base) != "" {
			return
		}
		if strings.ContainsAny(base, "*:/ ") || !strings.Contains(base, ".") || strings.ToLower(base) != base ||
			strings.HasSuffix(base, ".") || strings.HasSuffix(base, agents.InternalSuffix) {
			t.Fatalf("accepted %q", base)
		}
	})
}
