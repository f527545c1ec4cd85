package domains

import (
	"errors"
	"fmt"
	"strings"
)

// Limits of a DNS name (RFC 1035 section 2.3.4, RFC 1123 section 2.1).
const (
	// MaxNameBytes is the longest allowed name, in its text form without a
	// trailing dot (and including a leading "*." when present).
	MaxNameBytes = 253
	// MaxLabelBytes is the longest allowed label.
	MaxLabelBytes = 63
)

// ParseName checks that s is a valid reserved domain name and returns its
// canonical form: lower-cased, without a trailing dot.
//
// A valid name is at most [MaxNameBytes] bytes of at least two
// dot-separated labels; each label is 1 to [MaxLabelBytes] bytes of ASCII
// letters, digits and hyphens that does not start or end with a hyphen
// (RFC 1123; internationalised names in their xn-- form). The last label
// must not be all digits, so IP addresses are refused. Optionally the whole
// first label is the wildcard "*", followed by at least two more labels
// ("*.example.com"); a "*" anywhere else is refused. One trailing dot is
// accepted and dropped.
//
// The error, when not nil, is a lowercase reason suitable for an
// [apierr.Violation] of the field that held s.
func ParseName(s string) (string, error) {
	if s == "" {
		return "", errors.New("is required")
	}
	name := strings.TrimSuffix(s, ".")
	if len(name) > MaxNameBytes {
		return "", fmt.Errorf("must be at most %d bytes, got %d", MaxNameBytes, len(name))
	}
	rest, wildcard := strings.CutPrefix(name, "*.")
	labels, start := 0, 0
	for i := 0; i <= len(rest); i++ {
		if i < len(rest) && rest[i] != '.' {
			continue
		}
		if reason := labelProblem(rest[start:i]); reason != "" {
			return "", errors.New(reason)
		}
		labels++
		start = i + 1
	}
	if labels < 2 {
		if wildcard {
			return "", errors.New("must have at least two labels after the wildcard, such as *.example.com")
		}
		return "", errors.New("must be a DNS name of at least two labels, such as example.com")
	}
	if allDigits(rest[strings.LastIndexByte(rest, '.')+1:]) {
		return "", errors.New("must not end in an all-numeric label; IP addresses cannot be reserved")
	}
	return strings.ToLower(name), nil
}

// labelProblem returns why l is not a valid non-wildcard label, or "".
func labelProblem(l string) string {
	switch {
	case l == "":
		return "must not have an empty label (a leading, doubled or extra trailing dot)"
	case l == "*" || strings.Contains(l, "*"):
		return "may have a wildcard only as the whole first label, as in *.example.com"
	case len(l) > MaxLabelBytes:
		return fmt.Sprintf("labels must be at most %d bytes, got %d", MaxLabelBytes, len(l))
	}
	for i := 0; i < len(l); i++ {
		c := l[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-') {
			if c >= 0x80 {
				return "may contain only ASCII letters, digits, hyphens and dots; write internationalized names in their xn-- form"
			}
			return fmt.Sprintf("may contain only letters, digits, hyphens and dots, not %q", c)
		}
	}
	if l[0] == '-' || l[len(l)-1] == '-' {
		return "labels must not start or end with a hyphen"
	}
	return ""
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// IsWildcard reports whether the canonical name starts with the wildcard
// label ("*.example.com").
func IsWildcard(name string) bool { return strings.HasPrefix(name, "*.") }

// IsSubdomain reports whether the canonical name lies strictly below base:
// "a.example.com" and "*.a.example.com" are below "example.com";
// "example.com" itself and "*.example.com" are not (a wildcard directly
// on base stands for all of base's subdomains, not for one of them).
func IsSubdomain(name, base string) bool {
	rest, ok := strings.CutSuffix(name, "."+base)
	return ok && rest != "" && rest != "*"
}

// IsAtOrBelow reports whether the canonical name is base, the wildcard on
// base, or any name below base.
func IsAtOrBelow(name, base string) bool {
	return name == base || strings.HasSuffix(name, "."+base)
}

// Covers reports whether a certificate whose DNS subject alternative names
// are dnsNames is valid for the canonical reserved domain name, by the
// rules of RFC 6125 section 6.4: names compare case-insensitively,
// ignoring one trailing dot; a wildcard "*" is recognised only as the whole
// leftmost label and matches exactly one label ("*.example.com" matches
// "a.example.com" but neither "example.com" nor "a.b.example.com"), and
// only when at least two labels follow it. A wildcard reserved domain is
// covered only by the same wildcard name: a certificate for "*.example.com"
// covers "*.example.com", one for "a.example.com" does not. Common names
// are not considered (RFC 6125 section 6.4.4 permits ignoring them, and
// crypto/x509 does).
func Covers(dnsNames []string, name string) bool {
	for _, san := range dnsNames {
		san = strings.ToLower(strings.TrimSuffix(san, "."))
		if san == name {
			return true
		}
		base, ok := strings.CutPrefix(san, "*.")
		if !ok || !strings.Contains(base, ".") || IsWildcard(name) {
			continue
		}
		first, rest, ok := strings.Cut(name, ".")
		if ok && first != "" && rest == base {
			return true
		}
	}
	return false
}
