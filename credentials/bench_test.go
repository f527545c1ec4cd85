package credentials_test

import (
	"strconv"
	"testing"

	"github.com/edgeplane/edgeplane/credentials"
)

// benchACL returns an ACL of the maximum size: domains, wildcards,
// addresses and labels.
func benchACL(b *testing.B) *credentials.ACL {
	rules := make([]string, 0, credentials.MaxACLRules)
	for i := range credentials.MaxACLRules / 4 {
		n := strconv.Itoa(i)
		rules = append(rules,
			"bind:host"+n+".example.com",
			"bind:*.apps"+n+".example.net",
			"bind:"+n+".tcp.example.com:"+strconv.Itoa(20000+i),
			"bind:team"+n+"=*",
		)
	}
	return mustParse(b, rules...)
}

func BenchmarkACLAllowsDomain(b *testing.B) {
	a := benchACL(b)
	cases := []struct{ name, domain string }{
		{"exact", "host24.example.com"},
		{"wildcard", "a.b.c.apps24.example.net"},
		{"upper", "A.B.C.APPS24.EXAMPLE.NET."},
		{"miss", "a.b.c.apps99.example.net"},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				a.AllowsDomain(c.domain)
			}
		})
	}
}

func BenchmarkACLAllowsAddr(b *testing.B) {
	a := benchACL(b)
	b.ReportAllocs()
	for b.Loop() {
		a.AllowsAddr("24.TCP.example.com:20024")
	}
}

func BenchmarkACLAllowsLabels(b *testing.B) {
	a := benchACL(b)
	labels := map[string]string{"team3": "edge", "team24": "core"}
	b.ReportAllocs()
	for b.Loop() {
		a.AllowsLabels(labels)
	}
}

func BenchmarkParseACL(b *testing.B) {
	rules := benchACL(b).Strings()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := credentials.ParseACL(rules); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCreateParamsValidate is the check of a POST /credentials body
// with one ACL rule, as the load harness sends it.
func BenchmarkCreateParamsValidate(b *testing.B) {
	p := credentials.CreateParams{Description: "load", ACL: []string{"bind:*.example.com"}}
	b.ReportAllocs()
	for b.Loop() {
		if err := p.Validate(); err != nil {
			b.Fatal(err)
		}
	}
}
