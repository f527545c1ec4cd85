package backends_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/backends"
)

func TestCheckForwardsTo(t *testing.T) {
	tests := []struct {
		name, in, reason string // reason "" means valid
	}{
		{"absent", "", ""},
		{"loopback with port", "http://127.0.0.1:3000", ""},
		{"https host", "https://app.internal", ""},
		{"trailing slash", "http://localhost:8080/", ""},
		{"IPv6", "http://[::1]:8080", ""},
		{"highest port", "http://h:65535", ""},
		{"upper-case scheme", "HTTP://h", ""},
		{"at the limit", "http://" + strings.Repeat("a", backends.MaxForwardsToBytes-7), ""},
		{"over the limit", "http://" + strings.Repeat("a", backends.MaxForwardsToBytes-6), "at most 2048 bytes"},
		{"no scheme", "127.0.0.1:3000", "absolute http, https, tcp or tls URL"},
		{"host without scheme", "localhost", "absolute http, https, tcp or tls URL"},
		{"tcp", "tcp://127.0.0.1:22", ""},
		{"tls", "tls://db.internal:5432", ""},
		{"tcp without port", "tcp://127.0.0.1", "must have a port"},
		{"tls without port", "tls://h/", "must have a port"},
		{"tcp path", "tcp://h:22/x", `no path beyond "/"`},
		{"other scheme", "ssh://127.0.0.1:22", "absolute http, https, tcp or tls URL"},
		{"file", "file:///etc/passwd", "absolute http, https, tcp or tls URL"},
		{"opaque", "http:localhost", "absolute http, https, tcp or tls URL"},
		{"no host", "http://", "absolute http, https, tcp or tls URL"},
		{"port only", "http://:3000", "host is missing"},
		{"path", "http://127.0.0.1:3000/app", `no path beyond "/"`},
		{"double slash", "http://h//", `no path beyond "/"`},
		{"query", "http://h/?a=1", "query or fragment"},
		{"empty query", "http://h?", "query or fragment"},
		{"fragment", "http://h#top", "query or fragment"},
		{"empty fragment", "http://h#", "query or fragment"},
		{"user info", "http://u:p@h", "user information"},
		{"port 0", "http://h:0", "port from 1 to 65535"},
		{"port too high", "http://h:65536", "port from 1 to 65535"},
		{"port not a number", "http://h:http", "absolute http, https, tcp or tls URL"},
		{"space", "http://h /", "spaces and control characters"},
		{"newline", "http://h\n", "spaces and control characters"},
		{"DEL", "http://h\x7f", "spaces and control characters"},
		{"bad escape", "http://h%zz", "absolute http, https, tcp or tls URL"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := backends.CheckForwardsTo(tc.in)
			if tc.reason == "" && got != "" || !strings.Contains(got, tc.reason) {
				t.Errorf("CheckForwardsTo(%q) = %q, want %q", tc.in, got, tc.reason)
			}
		})
	}
}

func TestRegisterTunnelParamsForwardsTo(t *testing.T) {
	p := backends.RegisterTunnelParams{Labels: map[string]string{"app": "web"}, ForwardsTo: "http://127.0.0.1:3000"}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	if tn := p.Tunnel(); tn.ForwardsTo != "http://127.0.0.1:3000" {
		t.Errorf("Tunnel().ForwardsTo = %q", tn.ForwardsTo)
	}
	// Every violation at once: labels and forwards_to.
	bad := backends.RegisterTunnelParams{Labels: map[string]string{"k": "a b"}, ForwardsTo: "ftp://h"}
	checkFields(t, bad.Validate(), []string{`labels["k"]`, "forwards_to"})
	checkFields(t, backends.RegisterTunnelParams{ForwardsTo: "http://h/x"}.Validate(), []string{"forwards_to"})
}

// FuzzCheckForwardsTo checks that the check never panics and that an
// accepted value is an http(s) URL with a host and no path, query,
// fragment or user information.
func FuzzCheckForwardsTo(f *testing.F) {
	for _, s := range []string{"", "http://127.0.0.1:3000", "https://h/", "http://[::1]:80", "http://u@h", "http://h/p?q#f",
		"http://:1", "HTTPS://H", "http://h:99999", "javascript:alert(1)", "http://h%2f", "http://h:80:80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		reason := backends.CheckForwardsTo(s)
		if reason != "" {
			if err := (backends.RegisterTunnelParams{ForwardsTo: s}).Validate(); apierr.CodeOf(err) != apierr.InvalidArgument {
				t.Fatalf("%q refused (%s) but Validate = %v", s, reason, err)
			}
			return
		}
		if s == "" {
			return
		}
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil ||
			(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || len(s) > backends.MaxForwardsToBytes {
			t.Fatalf("accepted %q (%+v, %v)", s, u, err)
		}
		if strings.ContainsAny(s, " \t\r\n#") {
			t.Fatalf("accepted %q", s)
		}
	})
}

// An agent may say where it forwards a tunnel's traffic: an http or https
// origin, nothing more.
func ExampleCheckForwardsTo() {
	for _, s := range []string{"http://127.0.0.1:3000", "http://127.0.0.1:3000/app", "tcp://127.0.0.1:22", "tcp://127.0.0.1", "ftp://127.0.0.1"} {
		fmt.Printf("%q: %q\n", s, backends.CheckForwardsTo(s))
	}
	// Output:
	// "http://127.0.0.1:3000": ""
	// "http://127.0.0.1:3000/app": "must have no path beyond \"/\": it names an upstream server, not a resource on it"
	// "tcp://127.0.0.1:22": ""
	// "tcp://127.0.0.1": "must have a port: tcp URLs name no default port"
	// "ftp://127.0.0.1": "must be an absolute http, https, tcp or tls URL with a host, such as http://127.0.0.1:3000 or tcp://127.0.0.1:5432"
}
