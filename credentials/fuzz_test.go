package credentials_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane/credentials"
)

var fuzzSeeds = []string{
	"*", "bind:*", "bind:", "", "bind:example.com", "bind:*.example.com", "bind:*.*.example.com",
	"bind:Foo.Example.COM.", "bind:1.tcp.example.com:20002", "bind:tcp.example.com:0",
	"bind:tcp.example.com:65536", "bind:env=prod", "bind:*=prod", "bind:env=*", "bind:*=*",
	"bind:a=b=c", "bind:=", "bind:10.0.0.1", "bind:[::1]:80", "bind:a..b", "bind:-a.example.com",
	"allow:x", "bind:" + strings.Repeat("a", 64) + ".com", "bind:xn--bcher-kva.example", "bind:*.",
	"bind:example.com..", "bind:a:b:c", "bind:é.example.com",
}

// FuzzParseACL checks that parsing never panics, that a parsed rule's
// String re-parses to the same rule, and that every parsed rule permits
// what it names.
func FuzzParseACL(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, rule string) {
		a, err := credentials.ParseACL([]string{rule})
		if err != nil {
			if a != nil {
				t.Fatalf("ParseACL(%q) returned both an ACL and %v", rule, err)
			}
			return
		}
		rules := a.Rules()
		if len(rules) != 1 {
			t.Fatalf("ParseACL(%q) has %d rules", rule, len(rules))
		}
		r := rules[0]
		again, err := credentials.ParseACL([]string{r.String()})
		if err != nil {
			t.Fatalf("String() %q of %q does not re-parse: %v", r.String(), rule, err)
		}
		if got := again.Rules()[0]; got != r {
			t.Fatalf("%q -> %+v -> %q -> %+v", rule, r, r.String(), got)
		}
		switch r.Kind {
		case credentials.BindAll:
			if !a.AllowsAll() {
				t.Fatalf("%q: BindAll rule does not allow all", rule)
			}
		case credentials.BindDomain:
			if r.Wildcard {
				if !a.AllowsDomain("x."+r.Domain) || !a.AllowsDomain("*."+r.Domain) || a.AllowsDomain(r.Domain) {
					t.Fatalf("%q: wildcard rule matches wrongly", rule)
				}
			} else if !a.AllowsDomain(r.Domain) || !a.AllowsDomain(strings.ToUpper(r.Domain)+".") {
				t.Fatalf("%q: domain rule does not allow its domain", rule)
			}
		case credentials.BindAddr:
			if !a.AllowsAddr(r.Host + ":" + strconv.Itoa(int(r.Port))) {
				t.Fatalf("%q: address rule does not allow its address", rule)
			}
		case credentials.BindLabel:
			k, v := r.Key, r.Value
			if k == "*" {
				k = "any"
			}
			if v == "*" {
				v = "any"
			}
			if !a.AllowsLabels(map[string]string{k: v}) {
				t.Fatalf("%q: label rule does not allow %s=%s", rule, k, v)
			}
		default:
			t.Fatalf("%q: unknown kind %v", rule, r.Kind)
		}
	})
}

// FuzzACLMatch checks the matchers against a plain reference
// implementation and that they never panic.
func FuzzACLMatch(f *testing.F) {
	inputs := []string{"example.com", "a.example.com", "*.example.com", "EXAMPLE.com.", "1.tcp.example.com:20002",
		"tcp.example.com:080", "", "*", ":", "a:b", "env", "x.y.example.com", "example.com:65535"}
	for i, s := range fuzzSeeds {
		f.Add(s, inputs[i%len(inputs)])
	}
	f.Fuzz(func(t *testing.T, rule, input string) {
		a, err := credentials.ParseACL([]string{rule})
		if err != nil {
			return
		}
		r := a.Rules()[0]
		gotDomain := a.AllowsDomain(input)
		gotAddr := a.AllowsAddr(input)
		key, value, _ := strings.Cut(input, "=")
		gotLabels := a.AllowsLabels(map[string]string{key: value})

		// The reference: matching by the rule's fields, given that the
		// input is well formed (a well-formed input is one that an ACL
		// allowing everything allows).
		all, _ := credentials.ParseACL(nil)
		norm := strings.ToLower(strings.TrimSuffix(input, "."))
		if all.AllowsDomain(input) {
			want := r.Kind == credentials.BindAll ||
				r.Kind == credentials.BindDomain && !r.Wildcard && norm == r.Domain ||
				r.Kind == credentials.BindDomain && r.Wildcard && strings.HasSuffix(norm, "."+r.Domain)
			if gotDomain != want {
				t.Fatalf("rule %q: AllowsDomain(%q) = %v, want %v", rule, input, gotDomain, want)
			}
		} else if gotDomain {
			t.Fatalf("rule %q allows malformed domain %q", rule, input)
		}
		if all.AllowsAddr(input) {
			i := strings.LastIndexByte(input, ':')
			host := strings.ToLower(strings.TrimSuffix(input[:i], "."))
			want := r.Kind == credentials.BindAll ||
				r.Kind == credentials.BindAddr && host == r.Host && input[i+1:] == strconv.Itoa(int(r.Port))
			if gotAddr != want {
				t.Fatalf("rule %q: AllowsAddr(%q) = %v, want %v", rule, input, gotAddr, want)
			}
		} else if gotAddr {
			t.Fatalf("rule %q allows malformed address %q", rule, input)
		}
		if all.AllowsLabels(map[string]string{key: value}) {
			want := r.Kind == credentials.BindAll ||
				r.Kind == credentials.BindLabel && (r.Key == "*" || r.Key == key) && (r.Value == "*" || r.Value == value)
			if gotLabels != want {
				t.Fatalf("rule %q: AllowsLabels(%q=%q) = %v, want %v", rule, key, value, gotLabels, want)
			}
		} else if gotLabels {
			t.Fatalf("rule %q allows malformed label %q=%q", rule, key, value)
		}
	})
}

// FuzzCreateParamsValidate checks that Validate never panics and fails
// exactly when some field breaks its rule, each failure naming its field.
func FuzzCreateParamsValidate(f *testing.F) {
	f.Add("", "", "", "")
	f.Add("ci runner", `{"a":1}`, "bind:example.com", userID)
	f.Add(strings.Repeat("é", 128), strings.Repeat("m", 4097), "bind:", "usr_x")
	f.Add("d", "m", "*", botID)
	f.Fuzz(func(t *testing.T, desc, meta, rule, owner string) {
		p := credentials.CreateParams{Description: desc, Metadata: meta, ACL: []string{rule}, OwnerID: owner}
		var want []string
		if len(desc) > 255 {
			want = append(want, "description")
		}
		if len(meta) > 4096 {
			want = append(want, "metadata")
		}
		if _, err := credentials.ParseACL([]string{rule}); err != nil {
			want = append(want, "acl[0]")
		}
		if owner != "" && !credentials.ValidOwnerID(owner) {
			want = append(want, "owner_id")
		}
		checkViolations(t, p.Validate(), want)
	})
}

// FuzzTokenCredentialID checks that reading a token never panics, that
// a token naming a credential is well formed and is rebuilt from the ID
// it names and its secret, and that a well-formed token that names none
// has the legacy length.
func FuzzTokenCredentialID(f *testing.F) {
	for _, s := range []string{"", "ept_", "ept_rI9Q8CgMOY1n4kL4i2PeMgM8eNt-7YwA9wx5M05VVE4",
		"ept_2BjSiaW8q7lZoHf5oy7tzj3cMqA_rI9Q8CgMOY1n4kL4i2PeMgM8eNt-7YwA9wx5M05VVE4",
		"ept_2BjSiaW8q7lZoHf5oy7tzj3cMqA-rI9Q8CgMOY1n4kL4i2PeMgM8eNt-7YwA9wx5M05VVE4"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tok string) {
		id, ok := credentials.TokenCredentialID(tok)
		well := credentials.WellFormedToken(tok)
		if !ok {
			if id != "" {
				t.Fatalf("TokenCredentialID(%q) = %q, false", tok, id)
			}
			if well && len(tok) != credentials.LegacyTokenLen {
				t.Fatalf("WellFormedToken(%q) with no ID, %d bytes", tok, len(tok))
			}
			return
		}
		if !well {
			t.Fatalf("TokenCredentialID(%q) = %q but the token is not well formed", tok, id)
		}
		secret := tok[len(tok)-43:]
		if again := credentials.TokenPrefix + strings.TrimPrefix(id, credentials.IDPrefix) + "_" + secret; again != tok {
			t.Fatalf("TokenCredentialID(%q) = %q, which rebuilds %q", tok, id, again)
		}
	})
}
