package domains_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane/domains"
	"github.com/google/go-cmp/cmp"
)

var nameSeeds = []string{
	"", ".", "example.com", "App.Example.COM.", "*.example.com", "*.com", "*", "*.", "a.*.b.com",
	"**.example.com", "a..b", "-a.com", "a-.com", "10.0.0.1", "example.123", "xn--bcher-kva.example",
	"bücher.example", "a_b.com", "example.com..", strings.Repeat("a", 63) + ".com", strings.Repeat("a", 64) + ".com",
	strings.Repeat("ab.", 84) + "com", "*.demo.edgeplane.app", "edgeplane.app", "a b.com", "\x00.com",
}

// refName is an independent statement of the name rules, for lower-case
// input without a trailing dot.
var refName = regexp.MustCompile(`^(\*\.)?([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

func refValid(s string) bool {
	s = strings.TrimSuffix(s, ".")
	lower := strings.ToLower(s)
	if len(s) > 253 || !refName.MatchString(lower) || lower != asciiLower(s) {
		return false
	}
	labels := strings.Split(strings.TrimPrefix(lower, "*."), ".")
	last := labels[len(labels)-1]
	return len(labels) >= 2 && strings.Trim(last, "0123456789") != ""
}

// asciiLower lower-cases ASCII only, so that non-ASCII letters whose
// lower case is ASCII (the Kelvin sign) are not mistaken for valid.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// FuzzParseName checks ParseName against a regular-expression statement of
// the rules, and that accepted names are canonical, stable and cover
// themselves.
func FuzzParseName(f *testing.F) {
	for _, s := range nameSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := domains.ParseName(s)
		if want := refValid(s); (err == nil) != want {
			t.Fatalf("ParseName(%q) = %q, %v; reference says valid=%v", s, got, err, want)
		}
		if err != nil {
			if got != "" || err.Error() == "" {
				t.Fatalf("ParseName(%q) = %q, %q", s, got, err)
			}
			return
		}
		if len(got) > domains.MaxNameBytes || got != asciiLower(got) || strings.HasSuffix(got, ".") {
			t.Fatalf("ParseName(%q) = %q: not canonical", s, got)
		}
		for _, variant := range []string{got, got + ".", strings.ToUpper(got)} {
			if again, err := domains.ParseName(variant); err != nil || again != got {
				t.Fatalf("ParseName(%q) = %q, %v; want %q", variant, again, err, got)
			}
		}
		if !domains.Covers([]string{got}, got) || !domains.Covers([]string{strings.ToUpper(got) + "."}, got) {
			t.Fatalf("%q does not cover itself", got)
		}
		if rest, ok := strings.CutPrefix(got, "*."); ok {
			if domains.Covers([]string{rest}, got) || domains.Covers([]string{"x." + rest}, got) {
				t.Fatalf("a non-wildcard name covers the wildcard %q", got)
			}
		} else if _, parent, _ := strings.Cut(got, "."); strings.Contains(parent, ".") {
			if !domains.Covers([]string{"*." + parent}, got) {
				t.Fatalf("*.%s does not cover %q", parent, got)
			}
			if domains.Covers([]string{"*." + got}, got) {
				t.Fatalf("*.%s covers %q itself", got, got)
			}
		}
	})
}

// FuzzCertificate checks that PEM parsing never panics and that an
// accepted certificate's re-encoded chain parses to the same certificate.
func FuzzCertificate(f *testing.F) {
	chain, key := genCert(f, certSpec{names: []string{"a.example.com"}, withCA: true})
	rsaChain, rsaKey := genCert(f, certSpec{names: []string{"*.example.com"}, keyType: "rsa", keyFormat: "pkcs1"})
	f.Add(chain, key)
	f.Add(rsaChain, rsaKey)
	f.Add(chain, rsaKey)
	f.Add("junk\n"+chain+"junk", key)
	f.Add(chain[:len(chain)/2], key)
	f.Add("-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n", "-----BEGIN PRIVATE KEY-----\n-----END PRIVATE KEY-----\n")
	f.Add("", "")
	f.Fuzz(func(t *testing.T, chain, key string) {
		p := domains.CreateCertificateParams{CertificatePEM: chain, PrivateKeyPEM: key}
		c, err := p.Certificate(testNow)
		if err != nil {
			return
		}
		p.CertificatePEM = c.CertificatePEM
		again, err := p.Certificate(testNow)
		if err != nil {
			t.Fatalf("re-encoded chain refused: %v", err)
		}
		if diff := cmp.Diff(c, again); diff != "" {
			t.Fatalf("re-encoded chain parses differently (-first +again):\n%s", diff)
		}
	})
}
