package policy

import (
	"net/http"
	"strings"
)

// Header names in CEL are lower-case. Lookups against an http.Header work
// for any key spelling: the canonical spelling (as net/http produces) is
// tried first with a map lookup that does not allocate; on a miss, the keys
// are scanned once per evaluation for non-canonical spellings. When several
// keys differ only in case, the canonical one wins, else the smallest.

func isUpperASCII(c byte) bool { return 'A' <= c && c <= 'Z' }
func isLowerASCII(c byte) bool { return 'a' <= c && c <= 'z' }

func hasUpperASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if isUpperASCII(s[i]) {
			return true
		}
	}
	return false
}

// asciiLower lower-cases ASCII letters only, allocating only when s has an
// upper-case letter.
func asciiLower(s string) string {
	if !hasUpperASCII(s) {
		return s
	}
	b := []byte(s)
	for i, c := range b {
		if isUpperASCII(c) {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// asciiLowerEq reports whether asciiLower(k) == lower, for lower without
// upper-case letters.
func asciiLowerEq(k, lower string) bool {
	if len(k) != len(lower) {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if isUpperASCII(c) {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// appendCanon appends the canonical spelling of a header name: upper case
// at the start and after '-', lower case elsewhere (ASCII letters only).
func appendCanon(dst []byte, name string) []byte {
	upper := true
	for i := 0; i < len(name); i++ {
		c := name[i]
		if upper && isLowerASCII(c) {
			c -= 'a' - 'A'
		} else if !upper && isUpperASCII(c) {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
		upper = c == '-'
	}
	return dst
}

// canonKey returns the canonical spelling of name as a string.
func canonKey(name string) string {
	return string(appendCanon(make([]byte, 0, len(name)), name))
}

// isCanon reports whether k is spelled canonically.
func isCanon(k string) bool {
	upper := true
	for i := 0; i < len(k); i++ {
		c := k[i]
		if upper && isLowerASCII(c) || !upper && isUpperASCII(c) {
			return false
		}
		upper = c == '-'
	}
	return true
}

// scanState caches, per evaluation and header map, whether the map has
// keys that are not canonical.
type scanState uint8

const (
	scanUnknown scanState = iota
	scanAllCanon
	scanMixed
)

// lookupHeader returns the values of the header whose lower-cased name is
// lower. canon is lower's canonical spelling, or "" to compute it.
func lookupHeader(h http.Header, lower, canon string, scan *scanState) ([]string, bool) {
	if hasUpperASCII(lower) {
		return nil, false
	}
	return lookupHeaderLower(h, lower, canon, scan)
}

// lookupHeaderLower is lookupHeader for a name known to be lower-case, as
// the names a policy fixes at compile time are.
func lookupHeaderLower(h http.Header, lower, canon string, scan *scanState) ([]string, bool) {
	if h == nil {
		return nil, false
	}
	if canon != "" {
		if v, ok := h[canon]; ok {
			return v, true
		}
	} else {
		var buf [96]byte
		if len(lower) <= len(buf) {
			if v, ok := h[string(appendCanon(buf[:0], lower))]; ok {
				return v, true
			}
		} else if v, ok := h[canonKey(lower)]; ok {
			return v, true
		}
	}
	if *scan == scanUnknown {
		*scan = scanAllCanon
		for k := range h {
			if !isCanon(k) {
				*scan = scanMixed
				break
			}
		}
	}
	if *scan == scanAllCanon {
		return nil, false
	}
	var best string
	var bv []string
	found := false
	for k, v := range h {
		if asciiLowerEq(k, lower) && (!found || k < best) {
			best, bv, found = k, v, true
		}
	}
	return bv, found
}

// lowerHeaderMap builds the CEL view of a header map: lower-case names,
// each with the values lookupHeader gives.
func lowerHeaderMap(h http.Header, scan *scanState) map[string][]string {
	m := make(map[string][]string, len(h))
	for k := range h {
		lk := asciiLower(k)
		if _, done := m[lk]; done {
			continue
		}
		v, _ := lookupHeader(h, lk, "", scan)
		if v == nil {
			v = []string{}
		}
		m[lk] = v
	}
	return m
}

// validHeaderName reports whether s is an HTTP token (RFC 9110 5.1).
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// framingHeaders are headers policies may not add or remove: changing them
// could desynchronise the proxy and the upstream (request smuggling) or
// redirect the request to another virtual host.
var framingHeaders = map[string]bool{
	"content-length":    true,
	"transfer-encoding": true,
	"connection":        true,
	"keep-alive":        true,
	"proxy-connection":  true,
	"te":                true,
	"trailer":           true,
	"upgrade":           true,
	"host":              true,
}

// sanitizeHeaderValue replaces CR, LF and NUL by spaces.
func sanitizeHeaderValue(v string) string {
	if strings.IndexAny(v, "\r\n\x00") < 0 {
		return v
	}
	return strings.Map(func(r rune) rune {
		if r == '\r' || r == '\n' || r == 0 {
			return ' '
		}
		return r
	}, v)
}
