package edges_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/edges"
)

// FuzzResponseHeadersParams checks that whatever Validate accepts is safe
// to put on the wire: lower-cased token names, no name twice (in any case),
// values that cannot split a header, no header both added and removed; and
// that whatever it refuses comes with located violations.
func FuzzResponseHeadersParams(f *testing.F) {
	f.Add("X-Frame-Options", "DENY", "x-foo", "1", "Server")
	f.Add("X-Foo", "1", "x-foo", "2", "")
	f.Add("a", "b\r\nc", "", "", "a")
	f.Add("X A", "v", "b", "\x00", "X-Powered-By")
	f.Add("k", "", "K", "", "k")
	f.Fuzz(func(t *testing.T, n1, v1, n2, v2, rm string) {
		p := edges.ResponseHeadersParams{Add: map[string]string{n1: v1, n2: v2}, Remove: []string{rm}}
		err := p.Validate()
		if err != nil {
			if apierr.CodeOf(err) != apierr.InvalidArgument || len(apierr.ViolationsOf(err)) == 0 {
				t.Fatalf("Validate error without violations: %v", err)
			}
			for _, v := range apierr.ViolationsOf(err) {
				if !strings.HasPrefix(v.Field, "add[") && v.Field != "remove[0]" {
					t.Fatalf("violation of unexpected field %q", v.Field)
				}
			}
			return
		}
		m := p.Module()
		if len(m.Add) != len(p.Add) {
			t.Fatalf("two added names collapsed into one: %v -> %v", p.Add, m.Add)
		}
		for name, value := range m.Add {
			if name != strings.ToLower(name) || !edges.IsToken(name) {
				t.Fatalf("stored name %q is not a lower-case token", name)
			}
			if strings.ContainsAny(value, "\r\n\x00") {
				t.Fatalf("stored value %q can split a header", value)
			}
		}
		for _, name := range m.Remove {
			if name != strings.ToLower(name) || !edges.IsToken(name) {
				t.Fatalf("removed name %q is not a lower-case token", name)
			}
			if _, both := m.Add[name]; both {
				t.Fatalf("%q is both added and removed", name)
			}
		}
	})
}

// FuzzOIDCParams checks that an accepted issuer is an absolute https URL
// without query, fragment or user info, and that accepted scopes and
// cookie prefixes need no quoting.
func FuzzOIDCParams(f *testing.F) {
	f.Add("https://accounts.example.com", "openid", "service.")
	f.Add("https://a.example/?q", "a b", "x;y")
	f.Add("http://a.example", "", "")
	f.Add("https://u@a.example#f", `"`, "__Host-")
	f.Add("https:opaque", "\\", " ")
	f.Fuzz(func(t *testing.T, issuer, scope, prefix string) {
		p := edges.OIDCParams{Issuer: issuer, ClientID: "id", ClientSecret: "secret", Scopes: []string{scope}, CookiePrefix: prefix}
		if err := p.Validate(); err != nil {
			if len(apierr.ViolationsOf(err)) == 0 {
				t.Fatalf("Validate error without violations: %v", err)
			}
			return
		}
		u, err := url.Parse(issuer)
		if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			t.Fatalf("accepted issuer %q", issuer)
		}
		for i := 0; i < len(scope); i++ {
			if c := scope[i]; c <= ' ' || c >= 0x7f || c == '"' || c == '\\' {
				t.Fatalf("accepted scope %q", scope)
			}
		}
		if prefix != "" && !edges.IsToken(prefix) {
			t.Fatalf("accepted cookie prefix %q", prefix)
		}
		if m := p.Module(); m.Issuer != issuer || !m.Enabled {
			t.Fatalf("Module() = %+v", m)
		}
	})
}

// FuzzCheckMatch checks that an accepted route match is a bare path.
func FuzzCheckMatch(f *testing.F) {
	for _, s := range []string{"/", "/api/", "api", "/a?b", "/a#b", "/a b", "/é", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if edges.CheckMatch(s) != "" {
			return
		}
		if !strings.HasPrefix(s, "/") || strings.ContainsAny(s, "?# \t\r\n\x00") || len(s) > edges.MaxMatchBytes {
			t.Fatalf("accepted match %q", s)
		}
	})
}
