package godoc

import (
	"regexp"
	"sort"
	"strings"
	"testing"
)

// TestModuleDocsSpeakWire: no description the module's OpenAPI document
// takes from its Go comments names a constant that has a wire value
// (ActionAllow, MaxIPPolicies): each reads as its value.
func TestModuleDocsSpeakWire(t *testing.T) {
	const root = "../../.."
	pkgs, err := parse(root, true)
	if err != nil {
		t.Fatal(err)
	}
	w := newWire(pkgs)
	docs, err := Collect(root)
	if err != nil {
		t.Fatal(err)
	}
	keys := make([]string, 0, len(docs))
	for k := range docs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	checked := 0
	for pkgName, consts := range w.consts {
		for name := range consts {
			if w.fields[pkgName][name] != "" {
				continue // a field's name, which reads as its JSON name
			}
			bare := regexp.MustCompile(`(^|[^\w.])` + regexp.QuoteMeta(name) + `\b`)
			qualified := regexp.MustCompile(`(^|[^\w.])` + regexp.QuoteMeta(pkgName+"."+name) + `\b`)
			for _, k := range keys {
				if qualified.MatchString(docs[k]) || packageOf(k) == pkgName && bare.MatchString(docs[k]) {
					t.Errorf("%s names the constant %s.%s: %q", k, pkgName, name, docs[k])
				}
			}
			checked++
		}
	}
	if checked < 50 {
		t.Fatalf("only %d constants checked: the module was not read", checked)
	}
}

// packageOf returns the package name of a key of Collect's map.
func packageOf(key string) string {
	last := key[strings.LastIndex(key, "/")+1:]
	name, _, _ := strings.Cut(last, ".")
	return name
}

// TestWords: a Go name's words keep their initialisms, and take the
// article they are read with.
func TestWords(t *testing.T) {
	tests := []struct{ name, words, params string }{
		{"HTTPSRoute", "HTTPS route", "an HTTPS route's fields"},
		{"TLSEdgeTLSTermination", "TLS edge TLS termination", "a TLS edge TLS termination's fields"},
		{"InvalidArgument", "invalid argument", "an invalid argument's fields"},
		{"Service", "service", "a service's fields"},
		{"IPPolicyRule", "IP policy rule", "an IP policy rule's fields"},
		{"URIRef", "URI ref", "a URI ref's fields"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := words(tc.name); got != tc.words {
				t.Errorf("words(%q) = %q, want %q", tc.name, got, tc.words)
			}
			for _, verb := range []string{"", "Create", "Update", "Replace"} {
				if got := paramsOf(verb+tc.name+"Params", "things"); got != tc.params {
					t.Errorf("paramsOf(%q) = %q, want %q", verb+tc.name+"Params", got, tc.params)
				}
			}
		})
	}
	for _, pkg := range []string{"credentials", "policies"} {
		if got, want := paramsOf("UpdateParams", pkg), map[string]string{"credentials": "a credential's fields", "policies": "a policy's fields"}[pkg]; got != want {
			t.Errorf("paramsOf(UpdateParams, %s) = %q, want %q", pkg, got, want)
		}
	}
}
