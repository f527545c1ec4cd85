package domains_test

import (
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane/domains"
)

func TestParseName(t *testing.T) {
	label63 := strings.Repeat("a", 63)
	// 63+1+63+1+63+1+61 = 253 bytes.
	max := label63 + "." + label63 + "." + label63 + "." + strings.Repeat("b", 57) + ".com"
	if len(max) != 253 {
		t.Fatalf("max is %d bytes", len(max))
	}
	valid := []struct{ name, in, want string }{
		{"simple", "example.com", "example.com"},
		{"subdomain", "app.example.com", "app.example.com"},
		{"lower-cased", "App.Example.COM", "app.example.com"},
		{"trailing dot dropped", "example.com.", "example.com"},
		{"wildcard", "*.example.com", "*.example.com"},
		{"wildcard upper-cased base", "*.EXAMPLE.com.", "*.example.com"},
		{"digits and inner hyphens", "1-2.x-y.io", "1-2.x-y.io"},
		{"leading digit label (RFC 1123)", "3com.net", "3com.net"},
		{"punycode", "xn--bcher-kva.example", "xn--bcher-kva.example"},
		{"63-byte label", label63 + ".com", label63 + ".com"},
		{"253 bytes", max, max},
		{"253 bytes plus trailing dot", max + ".", max},
		{"service-owned subdomain", "demo.edgeplane.app", "demo.edgeplane.app"},
		{"wildcard deep", "*.a.b.example.com", "*.a.b.example.com"},
	}
	for _, tc := range valid {
		t.Run(tc.name, func(t *testing.T) {
			got, err := domains.ParseName(tc.in)
			if err != nil || got != tc.want {
				t.Fatalf("ParseName(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
		})
	}

	invalid := []struct{ name, in, reason string }{
		{"empty", "", "is required"},
		{"single label", "localhost", "at least two labels"},
		{"single label with dot", "localhost.", "at least two labels"},
		{"only a dot", ".", "empty label"},
		{"leading dot", ".example.com", "empty label"},
		{"double dot", "a..example.com", "empty label"},
		{"two trailing dots", "example.com..", "empty label"},
		{"254 bytes", "a" + max, "at most 253 bytes, got 254"},
		{"64-byte label", strings.Repeat("a", 64) + ".com", "at most 63 bytes, got 64"},
		{"leading hyphen", "-a.example.com", "start or end with a hyphen"},
		{"trailing hyphen", "a-.example.com", "start or end with a hyphen"},
		{"hyphen-only label", "-.example.com", "start or end with a hyphen"},
		{"underscore", "a_b.example.com", `not '_'`},
		{"space", "a b.example.com", `not ' '`},
		{"port", "example.com:80", `not ':'`},
		{"slash", "example.com/x", `not '/'`},
		{"unicode", "bücher.example", "xn-- form"},
		{"IPv4 address", "10.0.0.1", "all-numeric"},
		{"numeric TLD", "example.123", "all-numeric"},
		{"wildcard alone", "*", "wildcard only as the whole first label"},
		{"wildcard with dot only", "*.", "wildcard only as the whole first label"},
		{"wildcard on a TLD", "*.com", "at least two labels after the wildcard"},
		{"wildcard deeper", "a.*.example.com", "wildcard only as the whole first label"},
		{"double wildcard", "*.*.example.com", "wildcard only as the whole first label"},
		{"partial wildcard", "a*.example.com", "wildcard only as the whole first label"},
		{"wildcard last", "example.*", "wildcard only as the whole first label"},
		{"wildcard without dot", "*example.com", "wildcard only as the whole first label"},
		{"wildcard then empty label", "*..example.com", "empty label"},
	}
	for _, tc := range invalid {
		t.Run(tc.name, func(t *testing.T) {
			got, err := domains.ParseName(tc.in)
			if err == nil {
				t.Fatalf("ParseName(%q) = %q, want an error", tc.in, got)
			}
			if !strings.Contains(err.Error(), tc.reason) {
				t.Fatalf("ParseName(%q) error %q does not contain %q", tc.in, err, tc.reason)
			}
			if got != "" {
				t.Errorf("ParseName(%q) returned %q with an error", tc.in, got)
			}
		})
	}
}

func TestIsSubdomain(t *testing.T) {
	tests := []struct {
		name, base     string
		sub, atOrBelow bool
	}{
		{"a.example.com", "example.com", true, true},
		{"a.b.example.com", "example.com", true, true},
		{"*.a.example.com", "example.com", true, true},
		{"example.com", "example.com", false, true},
		{"*.example.com", "example.com", false, true},
		{"badexample.com", "example.com", false, false},
		{"example.com.evil.net", "example.com", false, false},
		{"other.net", "example.com", false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := domains.IsSubdomain(tc.name, tc.base); got != tc.sub {
				t.Errorf("IsSubdomain(%q, %q) = %v, want %v", tc.name, tc.base, got, tc.sub)
			}
			if got := domains.IsAtOrBelow(tc.name, tc.base); got != tc.atOrBelow {
				t.Errorf("IsAtOrBelow(%q, %q) = %v, want %v", tc.name, tc.base, got, tc.atOrBelow)
			}
		})
	}
}

func TestCovers(t *testing.T) {
	tests := []struct {
		name   string
		sans   []string
		domain string
		want   bool
	}{
		{"exact", []string{"app.example.com"}, "app.example.com", true},
		{"case-insensitive SAN", []string{"App.Example.COM"}, "app.example.com", true},
		{"SAN trailing dot", []string{"app.example.com."}, "app.example.com", true},
		{"one of several", []string{"x.example.net", "app.example.com"}, "app.example.com", true},
		{"no SANs", nil, "app.example.com", false},
		{"other name", []string{"api.example.com"}, "app.example.com", false},
		{"wildcard matches one label", []string{"*.example.com"}, "app.example.com", true},
		{"wildcard does not match the base", []string{"*.example.com"}, "example.com", false},
		{"wildcard does not match two labels", []string{"*.example.com"}, "a.b.example.com", false},
		{"wildcard on a TLD is ignored", []string{"*.com"}, "example.com", false},
		{"partial-label wildcard is not a wildcard", []string{"a*.example.com"}, "ab.example.com", false},
		{"wildcard domain needs the wildcard SAN", []string{"*.example.com"}, "*.example.com", true},
		{"wildcard domain not covered by a name", []string{"a.example.com", "example.com"}, "*.example.com", false},
		{"wildcard domain not covered by a higher wildcard", []string{"*.example.com"}, "*.a.example.com", false},
		{"wildcard SAN does not match a suffix", []string{"*.example.com"}, "app.notexample.com", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := domains.Covers(tc.sans, tc.domain); got != tc.want {
				t.Errorf("Covers(%q, %q) = %v, want %v", tc.sans, tc.domain, got, tc.want)
			}
		})
	}
}

func TestConfig(t *testing.T) {
	def := domains.Config{}.WithDefaults()
	if len(def.OwnedDomains) != 1 || def.OwnedDomains[0] != domains.DefaultOwnedDomain || def.CNAMEBase != domains.DefaultCNAMEBase {
		t.Errorf("defaults = %+v", def)
	}
	if err := (domains.Config{}).Validate(); err != nil {
		t.Errorf("zero Config invalid: %v", err)
	}
	none := domains.Config{OwnedDomains: []string{}}.WithDefaults()
	if len(none.OwnedDomains) != 0 {
		t.Errorf("empty non-nil OwnedDomains became %v", none.OwnedDomains)
	}
	c := domains.Config{OwnedDomains: []string{"Tunnels.Example.", "b.example"}, CNAMEBase: "CNAME.example.net."}.WithDefaults()
	if c.OwnedDomains[0] != "tunnels.example" || c.CNAMEBase != "cname.example.net" {
		t.Errorf("not canonical: %+v", c)
	}
	if !c.Owned("x.tunnels.example") || c.Owned("tunnels.example") || c.Owned("x.c.example") {
		t.Error("Owned is wrong")
	}

	bad := domains.Config{OwnedDomains: []string{"ok.example", "*.wild.example", "nodot"}, CNAMEBase: "a..b"}
	err := bad.Validate()
	for _, field := range []string{"owned_domains[1]", "owned_domains[2]", "cname_base"} {
		if !hasViolation(err, field) {
			t.Errorf("Validate(%+v) = %v: no violation of %s", bad, err, field)
		}
	}
	if hasViolation(err, "owned_domains[0]") {
		t.Errorf("valid owned domain reported: %v", err)
	}

	// CNAME targets: none for owned subdomains; fresh and well-formed
	// otherwise.
	if got := def.CNAMETarget("demo.edgeplane.app"); got != nil {
		t.Errorf("owned subdomain has CNAME target %q", *got)
	}
	t1, t2 := def.CNAMETarget("app.example.com"), def.CNAMETarget("app.example.com")
	if t1 == nil || t2 == nil || *t1 == *t2 {
		t.Fatalf("targets %v %v: want two different ones", t1, t2)
	}
	label, base, _ := strings.Cut(*t1, ".")
	if base != domains.DefaultCNAMEBase || len(label) != 26 || strings.ToLower(label) != label {
		t.Errorf("target %q: want 26 lowercase characters under %s", *t1, domains.DefaultCNAMEBase)
	}
	if n, err := domains.ParseName(*t1); err != nil || n != *t1 {
		t.Errorf("target %q is not a canonical name: %v", *t1, err)
	}
	if got := domains.ACMEChallengeTarget(*t1); got != label+".acme."+domains.DefaultCNAMEBase {
		t.Errorf("ACMEChallengeTarget(%q) = %q", *t1, got)
	}
}
