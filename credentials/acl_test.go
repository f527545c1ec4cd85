package credentials_test

import (
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/edgeplane/edgeplane/credentials"
)

func TestParseACLValid(t *testing.T) {
	tests := []struct {
		name string
		rule string
		want credentials.BindRule
		str  string // normal form; "" means the rule itself
	}{
		{name: "star", rule: "*", want: credentials.BindRule{Kind: credentials.BindAll}},
		{name: "bind star", rule: "bind:*", want: credentials.BindRule{Kind: credentials.BindAll}, str: "*"},
		{name: "domain", rule: "bind:example.com", want: credentials.BindRule{Kind: credentials.BindDomain, Domain: "example.com"}},
		{name: "domain upper and trailing dot", rule: "bind:Foo.Example.COM.", want: credentials.BindRule{Kind: credentials.BindDomain, Domain: "foo.example.com"}, str: "bind:foo.example.com"},
		{name: "domain with hyphen and digits", rule: "bind:a-1.x9.example.com", want: credentials.BindRule{Kind: credentials.BindDomain, Domain: "a-1.x9.example.com"}},
		{name: "punycode domain", rule: "bind:xn--bcher-kva.example", want: credentials.BindRule{Kind: credentials.BindDomain, Domain: "xn--bcher-kva.example"}},
		{name: "wildcard domain", rule: "bind:*.example.com", want: credentials.BindRule{Kind: credentials.BindDomain, Domain: "example.com", Wildcard: true}},
		{name: "wildcard upper", rule: "bind:*.EXAMPLE.com.", want: credentials.BindRule{Kind: credentials.BindDomain, Domain: "example.com", Wildcard: true}, str: "bind:*.example.com"},
		{name: "address", rule: "bind:1.tcp.example.com:20002", want: credentials.BindRule{Kind: credentials.BindAddr, Host: "1.tcp.example.com", Port: 20002}},
		{name: "address min port", rule: "bind:tcp.example.com:1", want: credentials.BindRule{Kind: credentials.BindAddr, Host: "tcp.example.com", Port: 1}},
		{name: "address max port", rule: "bind:tcp.example.com:65535", want: credentials.BindRule{Kind: credentials.BindAddr, Host: "tcp.example.com", Port: 65535}},
		{name: "address upper trailing dot", rule: "bind:TCP.example.com.:80", want: credentials.BindRule{Kind: credentials.BindAddr, Host: "tcp.example.com", Port: 80}, str: "bind:tcp.example.com:80"},
		{name: "label", rule: "bind:env=prod", want: credentials.BindRule{Kind: credentials.BindLabel, Key: "env", Value: "prod"}},
		{name: "label any key", rule: "bind:*=prod", want: credentials.BindRule{Kind: credentials.BindLabel, Key: "*", Value: "prod"}},
		{name: "label any value", rule: "bind:env=*", want: credentials.BindRule{Kind: credentials.BindLabel, Key: "env", Value: "*"}},
		{name: "label any", rule: "bind:*=*", want: credentials.BindRule{Kind: credentials.BindLabel, Key: "*", Value: "*"}},
		{name: "label case kept", rule: "bind:Team=Edge", want: credentials.BindRule{Kind: credentials.BindLabel, Key: "Team", Value: "Edge"}},
		{name: "label punctuation", rule: "bind:k8s.io/app_name-x=edghts_1:2", want: credentials.BindRule{Kind: credentials.BindLabel, Key: "k8s.io/app_name-x", Value: "edghts_1:2"}},
		{name: "longest domain", rule: "bind:" + longDomain(253), want: credentials.BindRule{Kind: credentials.BindDomain, Domain: longDomain(253)}},
		{name: "63 byte label", rule: "bind:" + strings.Repeat("a", 63) + ".com", want: credentials.BindRule{Kind: credentials.BindDomain, Domain: strings.Repeat("a", 63) + ".com"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := credentials.ParseACL([]string{tt.rule})
			if err != nil {
				t.Fatalf("ParseACL(%q) = %v", tt.rule, err)
			}
			rules := a.Rules()
			if len(rules) != 1 || rules[0] != tt.want {
				t.Fatalf("Rules() = %+v, want [%+v]", rules, tt.want)
			}
			str := tt.str
			if str == "" {
				str = tt.rule
			}
			if got := rules[0].String(); got != str {
				t.Fatalf("String() = %q, want %q", got, str)
			}
			if got := a.Strings(); !slices.Equal(got, []string{str}) {
				t.Fatalf("Strings() = %q, want [%q]", got, str)
			}
		})
	}
}

// longDomain returns a valid domain of exactly n bytes (n >= 5).
func longDomain(n int) string {
	var b strings.Builder
	for b.Len() < n-4 {
		l := min(63, n-4-b.Len())
		if b.Len() > 0 {
			l = min(63, n-5-b.Len())
			if l <= 0 {
				break
			}
			b.WriteByte('.')
		}
		b.WriteString(strings.Repeat("a", l))
	}
	for b.Len() < n-4 {
		b.WriteString("a")
	}
	b.WriteString(".com")
	return b.String()
}

func afterFirstLabel(d string) string { return d[strings.IndexByte(d, '.')+1:] }

func TestLongDomain(t *testing.T) {
	for _, n := range []int{5, 70, 253, 254} {
		if got := len(longDomain(n)); got != n {
			t.Fatalf("len(longDomain(%d)) = %d", n, got)
		}
	}
}

func TestParseACLInvalid(t *testing.T) {
	tests := []struct {
		name   string
		rule   string
		reason string
	}{
		{name: "empty", rule: "", reason: `must be "*" or a bind rule`},
		{name: "other kind", rule: "allow:example.com", reason: `must be "*" or a bind rule`},
		{name: "uppercase prefix", rule: "BIND:example.com", reason: `must be "*" or a bind rule`},
		{name: "bare domain", rule: "example.com", reason: `must be "*" or a bind rule`},
		{name: "space before", rule: " bind:example.com", reason: `must be "*" or a bind rule`},
		{name: "empty target", rule: "bind:", reason: "must not be empty"},
		{name: "too long", rule: "bind:" + strings.Repeat("a", 508) + ".com", reason: "at most 512 bytes, got 517"},
		{name: "star in middle", rule: "bind:foo.*.example.com", reason: "wildcard * is allowed only as the whole first label"},
		{name: "star in label", rule: "bind:f*.example.com", reason: "wildcard * is allowed only"},
		{name: "double wildcard", rule: "bind:*.*.example.com", reason: "wildcard * is allowed only"},
		{name: "star at end", rule: "bind:example.*", reason: "wildcard * is allowed only"},
		{name: "wildcard single label", rule: "bind:*.com", reason: "at least two labels"},
		{name: "wildcard nothing", rule: "bind:*.", reason: "must not be empty"},
		{name: "single label", rule: "bind:localhost", reason: "at least two labels"},
		{name: "ip address", rule: "bind:10.0.0.1", reason: "IP addresses are not allowed"},
		{name: "numeric tld", rule: "bind:example.123", reason: "all-numeric"},
		{name: "underscore", rule: "bind:a_b.example.com", reason: "only letters, digits, hyphens and dots"},
		{name: "space inside", rule: "bind:a b.example.com", reason: "only letters, digits, hyphens and dots"},
		{name: "unicode", rule: "bind:bücher.example", reason: "only letters, digits, hyphens and dots"},
		{name: "slash", rule: "bind:example.com/path", reason: "only letters, digits, hyphens and dots"},
		{name: "empty label", rule: "bind:a..example.com", reason: "empty label"},
		{name: "leading dot", rule: "bind:.example.com", reason: "empty label"},
		{name: "two trailing dots", rule: "bind:example.com..", reason: "empty label"},
		{name: "leading hyphen", rule: "bind:-a.example.com", reason: "hyphen"},
		{name: "trailing hyphen", rule: "bind:a-.example.com", reason: "hyphen"},
		{name: "label too long", rule: "bind:" + strings.Repeat("a", 64) + ".com", reason: "at most 63 bytes"},
		{name: "domain too long", rule: "bind:" + longDomain(254), reason: "at most 253 bytes"},
		{name: "port zero", rule: "bind:tcp.example.com:0", reason: "port must be a number from 1 to 65535"},
		{name: "port too big", rule: "bind:tcp.example.com:65536", reason: "port must be"},
		{name: "port huge", rule: "bind:tcp.example.com:99999999999999999999", reason: "port must be"},
		{name: "port leading zero", rule: "bind:tcp.example.com:080", reason: "port must be"},
		{name: "port sign", rule: "bind:tcp.example.com:+80", reason: "port must be"},
		{name: "port empty", rule: "bind:tcp.example.com:", reason: "port must be"},
		{name: "port star", rule: "bind:tcp.example.com:*", reason: "port must be"},
		{name: "port letters", rule: "bind:tcp.example.com:http", reason: "port must be"},
		{name: "address no host", rule: "bind::80", reason: "address host domain must not be empty"},
		{name: "address wildcard host", rule: "bind:*.example.com:80", reason: "wildcards are allowed only in domain rules"},
		{name: "address ip host", rule: "bind:10.0.0.1:80", reason: "address host domain must not end in an all-numeric label"},
		{name: "address ipv6", rule: "bind:[::1]:80", reason: "address host domain may contain only"},
		{name: "address two colons", rule: "bind:a.example.com:80:81", reason: "address host domain may contain only"},
		{name: "label empty key", rule: "bind:=prod", reason: "label key must not be empty"},
		{name: "label empty value", rule: "bind:env=", reason: "label value must not be empty"},
		{name: "label two equals", rule: "bind:a=b=c", reason: `label value must not contain "="`},
		{name: "label bad key", rule: "bind:e nv=prod", reason: "label key may contain only"},
		{name: "label partial star key", rule: "bind:e*=prod", reason: "label key may contain only"},
		{name: "label bad value", rule: "bind:env=pr od", reason: "label value may contain only"},
		{name: "label partial star value", rule: "bind:env=p*", reason: "label value may contain only"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := credentials.ParseACL([]string{"bind:ok.example.com", tt.rule})
			if a != nil {
				t.Fatalf("ParseACL returned an ACL with error %v", err)
			}
			checkViolations(t, err, []string{"acl[1]"}, tt.reason)
		})
	}
}

func TestParseACLList(t *testing.T) {
	tests := []struct {
		name    string
		rules   []string
		want    []string
		reasons []string
	}{
		{name: "nil", rules: nil},
		{name: "empty", rules: []string{}},
		{name: "at the rule limit", rules: manyRules(credentials.MaxACLRules)},
		{name: "over the rule limit", rules: manyRules(credentials.MaxACLRules + 1), want: []string{"acl"}, reasons: []string{"at most 100 rules, got 101"}},
		{name: "rule at the byte limit", rules: []string{"bind:k=" + strings.Repeat("v", credentials.MaxRuleBytes-7)}},
		{name: "duplicate", rules: []string{"bind:a.example.com", "bind:b.example.com", "bind:a.example.com"},
			want: []string{"acl[2]"}, reasons: []string{"duplicates acl[0]"}},
		{name: "duplicate after normalising", rules: []string{"bind:A.example.com.", "bind:a.EXAMPLE.com"},
			want: []string{"acl[1]"}, reasons: []string{"duplicates acl[0]"}},
		{name: "star and bind star", rules: []string{"*", "bind:*"},
			want: []string{"acl[1]"}, reasons: []string{"duplicates acl[0]"}},
		{name: "three copies", rules: []string{"bind:k=v", "bind:k=v", "bind:k=v"},
			want: []string{"acl[1]", "acl[2]"}, reasons: []string{"duplicates acl[0]", "duplicates acl[0]"}},
		{name: "wildcard and exact are different", rules: []string{"bind:*.example.com", "bind:example.com"}},
		{name: "duplicate after a bad rule", rules: []string{"bind:", "bind:a.example.com", "bind:b.example.com", "bind:a.example.com"},
			want: []string{"acl[0]", "acl[3]"}, reasons: []string{"must not be empty", "duplicates acl[1]"}},
		{name: "duplicate in a long list", rules: append(manyRules(11), "bind:h3.example.com"),
			want: []string{"acl[11]"}, reasons: []string{"duplicates acl[3]"}},
		{name: "duplicate in a long list after a bad rule", rules: append(append([]string{"bind:"}, manyRules(10)...), "bind:h9.example.com"),
			want: []string{"acl[0]", "acl[11]"}, reasons: []string{"must not be empty", "duplicates acl[10]"}},
		{name: "every bad rule reported", rules: []string{"x", "bind:ok.example.com", "bind:", "bind:k="},
			want: []string{"acl[0]", "acl[2]", "acl[3]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := credentials.ParseACL(tt.rules)
			checkViolations(t, err, tt.want, tt.reasons...)
			if err == nil && len(a.Rules()) != len(tt.rules) {
				t.Fatalf("len(Rules()) = %d, want %d", len(a.Rules()), len(tt.rules))
			}
			// Validate checks the rules without building an ACL: it must
			// find exactly what ParseACL finds.
			checkViolations(t, credentials.CreateParams{ACL: tt.rules}.Validate(), tt.want, tt.reasons...)
			checkViolations(t, credentials.UpdateParams{ACL: &tt.rules}.Validate(), tt.want, tt.reasons...)
		})
	}
}

func manyRules(n int) []string {
	rules := make([]string, n)
	for i := range rules {
		rules[i] = "bind:h" + strconv.Itoa(i) + ".example.com"
	}
	return rules
}

func mustParse(t testing.TB, rules ...string) *credentials.ACL {
	t.Helper()
	a, err := credentials.ParseACL(rules)
	if err != nil {
		t.Fatalf("ParseACL(%q) = %v", rules, err)
	}
	return a
}

func TestACLAllowsAll(t *testing.T) {
	tests := []struct {
		name  string
		rules []string
		want  bool
	}{
		{name: "no rules", rules: nil, want: true},
		{name: "star", rules: []string{"*"}, want: true},
		{name: "bind star", rules: []string{"bind:*"}, want: true},
		{name: "star among others", rules: []string{"bind:a.example.com", "*"}, want: true},
		{name: "domain", rules: []string{"bind:a.example.com"}, want: false},
		{name: "label any", rules: []string{"bind:*=*"}, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mustParse(t, tt.rules...).AllowsAll(); got != tt.want {
				t.Fatalf("AllowsAll() = %v, want %v", got, tt.want)
			}
		})
	}
	var nilACL *credentials.ACL
	if !nilACL.AllowsAll() || !nilACL.AllowsDomain("a.example.com") || len(nilACL.Rules()) != 0 || len(nilACL.Strings()) != 0 {
		t.Fatal("a nil ACL must allow everything and have no rules")
	}
}

func TestACLAllowsDomain(t *testing.T) {
	restricted := []string{"bind:example.com", "bind:*.apps.example.net", "bind:Shop.Example.ORG.", "bind:tcp.example.com:443", "bind:env=prod"}
	tests := []struct {
		name   string
		rules  []string
		domain string
		want   bool
	}{
		{name: "exact", rules: restricted, domain: "example.com", want: true},
		{name: "exact upper", rules: restricted, domain: "EXAMPLE.Com", want: true},
		{name: "exact trailing dot", rules: restricted, domain: "example.com.", want: true},
		{name: "exact rule written in upper case", rules: restricted, domain: "shop.example.org", want: true},
		{name: "exact does not cover subdomain", rules: restricted, domain: "www.example.com", want: false},
		{name: "exact does not cover wildcard", rules: restricted, domain: "*.example.com", want: false},
		{name: "other domain", rules: restricted, domain: "example.org", want: false},
		{name: "suffix without dot", rules: restricted, domain: "badexample.com", want: false},
		{name: "wildcard one level", rules: restricted, domain: "a.apps.example.net", want: true},
		{name: "wildcard deep", rules: restricted, domain: "a.b.c.apps.example.net", want: true},
		{name: "wildcard upper", rules: restricted, domain: "A.APPS.example.NET.", want: true},
		{name: "wildcard literal", rules: restricted, domain: "*.apps.example.net", want: true},
		{name: "wildcard deeper literal", rules: restricted, domain: "*.x.apps.example.net", want: true},
		{name: "wildcard not apex", rules: restricted, domain: "apps.example.net", want: false},
		{name: "wildcard not parent wildcard", rules: restricted, domain: "*.example.net", want: false},
		{name: "wildcard suffix without dot", rules: restricted, domain: "xapps.example.net", want: false},
		{name: "address rule does not permit its host", rules: restricted, domain: "tcp.example.com", want: false},
		{name: "label rules do not permit domains", rules: []string{"bind:*=*"}, domain: "example.com", want: false},
		{name: "all", rules: []string{"*"}, domain: "anything.example", want: true},
		{name: "all but malformed", rules: []string{"*"}, domain: "not a domain", want: false},
		{name: "empty", rules: restricted, domain: "", want: false},
		{name: "malformed", rules: restricted, domain: "exa mple.com", want: false},
		{name: "bare star", rules: restricted, domain: "*", want: false},
		{name: "inner star", rules: restricted, domain: "a.*.apps.example.net", want: false},
		{name: "too long", rules: []string{"*"}, domain: longDomain(254), want: false},
		{name: "longest", rules: []string{"*"}, domain: longDomain(253), want: true},
		{name: "longest wildcard", rules: []string{"bind:*." + afterFirstLabel(longDomain(253))}, domain: "*." + strings.ToUpper(longDomain(253)) + ".", want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mustParse(t, tt.rules...).AllowsDomain(tt.domain); got != tt.want {
				t.Fatalf("AllowsDomain(%q) with %q = %v, want %v", tt.domain, tt.rules, got, tt.want)
			}
		})
	}
}

func TestACLAllowsAddr(t *testing.T) {
	restricted := []string{"bind:1.tcp.example.com:20002", "bind:TCP.example.com.:443", "bind:*.example.com", "bind:env=prod"}
	tests := []struct {
		name  string
		rules []string
		addr  string
		want  bool
	}{
		{name: "exact", rules: restricted, addr: "1.tcp.example.com:20002", want: true},
		{name: "upper host", rules: restricted, addr: "1.TCP.Example.com:20002", want: true},
		{name: "trailing dot", rules: restricted, addr: "1.tcp.example.com.:20002", want: true},
		{name: "rule written in upper case", rules: restricted, addr: "tcp.example.com:443", want: true},
		{name: "other port", rules: restricted, addr: "1.tcp.example.com:20003", want: false},
		{name: "other host", rules: restricted, addr: "2.tcp.example.com:20002", want: false},
		{name: "domain wildcard does not permit addresses", rules: restricted, addr: "x.example.com:80", want: false},
		{name: "only domain rules", rules: []string{"bind:example.com"}, addr: "example.com:80", want: false},
		{name: "all", rules: nil, addr: "x.example.com:80", want: true},
		{name: "all but no port", rules: nil, addr: "x.example.com", want: false},
		{name: "all but bad port", rules: nil, addr: "x.example.com:0", want: false},
		{name: "all but leading zero", rules: nil, addr: "x.example.com:080", want: false},
		{name: "all but ip host", rules: nil, addr: "10.0.0.1:80", want: false},
		{name: "all but wildcard host", rules: nil, addr: "*.example.com:80", want: false},
		{name: "empty", rules: restricted, addr: "", want: false},
		{name: "longest host", rules: []string{"bind:" + longDomain(253) + ":65535"}, addr: strings.ToUpper(longDomain(253)) + ".:65535", want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mustParse(t, tt.rules...).AllowsAddr(tt.addr); got != tt.want {
				t.Fatalf("AllowsAddr(%q) with %q = %v, want %v", tt.addr, tt.rules, got, tt.want)
			}
		})
	}
}

func TestACLAllowsLabels(t *testing.T) {
	restricted := []string{"bind:env=prod", "bind:team=*", "bind:*=edge", "bind:example.com"}
	tests := []struct {
		name   string
		rules  []string
		labels map[string]string
		want   bool
	}{
		{name: "exact pair", rules: restricted, labels: map[string]string{"env": "prod"}, want: true},
		{name: "exact pair other value", rules: restricted, labels: map[string]string{"env": "dev"}, want: false},
		{name: "any value", rules: restricted, labels: map[string]string{"team": "anything"}, want: true},
		{name: "any key", rules: restricted, labels: map[string]string{"whatever": "edge"}, want: true},
		{name: "every label permitted", rules: restricted, labels: map[string]string{"env": "prod", "team": "a", "x": "edge"}, want: true},
		{name: "one label not permitted", rules: restricted, labels: map[string]string{"env": "prod", "region": "eu"}, want: false},
		{name: "case sensitive key", rules: restricted, labels: map[string]string{"Env": "prod"}, want: false},
		{name: "case sensitive value", rules: restricted, labels: map[string]string{"env": "Prod"}, want: false},
		{name: "no labels", rules: restricted, labels: nil, want: true},
		{name: "no label rules", rules: []string{"bind:example.com"}, labels: map[string]string{"env": "prod"}, want: false},
		{name: "any label", rules: []string{"bind:*=*"}, labels: map[string]string{"a": "b", "c": "d"}, want: true},
		{name: "all", rules: []string{"*"}, labels: map[string]string{"a": "b"}, want: true},
		{name: "all but empty key", rules: []string{"*"}, labels: map[string]string{"": "b"}, want: false},
		{name: "all but empty value", rules: []string{"*"}, labels: map[string]string{"a": ""}, want: false},
		{name: "star key is not a wildcard in input", rules: []string{"bind:*=*"}, labels: map[string]string{"*": "b"}, want: false},
		{name: "bad value chars", rules: []string{"bind:*=*"}, labels: map[string]string{"a": "b c"}, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mustParse(t, tt.rules...).AllowsLabels(tt.labels); got != tt.want {
				t.Fatalf("AllowsLabels(%v) with %q = %v, want %v", tt.labels, tt.rules, got, tt.want)
			}
		})
	}
}

func TestACLRulesIsACopy(t *testing.T) {
	a := mustParse(t, "bind:a.example.com")
	r := a.Rules()
	r[0].Domain = "evil.example.com"
	if a.AllowsDomain("evil.example.com") || a.Rules()[0].Domain != "a.example.com" {
		t.Fatal("changing the result of Rules changed the ACL")
	}
}

func TestBindKindString(t *testing.T) {
	tests := []struct {
		kind credentials.BindKind
		want string
	}{
		{credentials.BindAll, "all"},
		{credentials.BindDomain, "domain"},
		{credentials.BindAddr, "addr"},
		{credentials.BindLabel, "label"},
		{0, "kind(0)"},
		{9, "kind(9)"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := tt.kind.String(); got != tt.want {
				t.Fatalf("String() = %q, want %q", got, tt.want)
			}
		})
	}
	if got := (credentials.BindRule{}).String(); got != "invalid rule" {
		t.Fatalf("zero BindRule String() = %q", got)
	}
}

// TestACLConcurrent runs the matchers from several goroutines; with -race
// it checks that an ACL is safe for concurrent use.
func TestACLConcurrent(t *testing.T) {
	a := mustParse(t, "bind:*.example.com", "bind:tcp.example.com:443", "bind:env=*")
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 1000 {
				if !a.AllowsDomain("x.example.com") || !a.AllowsAddr("tcp.example.com:443") ||
					!a.AllowsLabels(map[string]string{"env": "prod"}) || a.AllowsDomain("example.org") {
					t.Error("wrong answer under concurrency")
					return
				}
			}
		})
	}
	wg.Wait()
}
