package httpapi_test

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/edgeplane/edgeplane/httpapi/internal/godoc"
)

// wireWords are words of the document that the module also declares as
// exported Go names, but that the reader meets as the wire, or prose,
// spells them.
var wireWords = map[string]bool{
	// Initialisms and names of standards, which the prose uses as words
	// (a Go name spells an initialism the same way), and their plurals.
	"ACL": true, "ACME": true, "API": true, "CA": true, "CEL": true, "CIDR": true, "CNAME": true,
	"DNS": true, "HTTP": true, "HTTPS": true, "ID": true, "IP": true, "IPv4": true, "IPv6": true,
	"JSON": true, "OIDC": true, "OS": true, "PEM": true, "TCP": true, "TLS": true, "URI": true, "URL": true,
	// Names of standards and units: OpenAPI, OAuth scopes, KiB.
	"OpenAPI": true, "OAuth": true, "KiB": true,
	// An HTTP method as a verb: each event is POSTed to url.
	"POSTed": true,
	// Header names: the request's API key, the methods a path serves.
	"Authorization": true, "Allow": true,
	// The error body's component (#/components/schemas/Error), named in
	// the info's description.
	"Error": true,
}

// hyphenated, path-like and dotted words are read whole: a header name
// (Service-Version), a path or media type (application/json), a selector
// (Service.CreateTLSEdge).
var (
	docWord    = regexp.MustCompile(`\*?[A-Za-z_]\w*(?:[.\-/][A-Za-z_]\w*)*`)
	docLinkRef = regexp.MustCompile(`(?:^|[^\w\]])(\[\*?[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*\])`)
	oneHump    = regexp.MustCompile(`^[A-Z][a-z0-9]*$`)
)

// goNamesIn returns the Go names text shows: doc links ([Host.GetEndpoint]),
// selectors with an exported name (Service.CreateTLSEdge,
// tunnel_session.Node), parameters types (TLSEdgeParams), CamelCase words
// (HTTPSRouteBackend, whether the module declares them or not), and the
// exported names of the module (names), or their plurals; but the words
// the wire spells so (wireWords) and a one-hump word that begins a
// sentence (Returns; Service at a sentence's start is English).
func goNamesIn(text string, names map[string]bool) []string {
	var out []string
	for _, m := range docLinkRef.FindAllStringSubmatch(text, -1) {
		out = append(out, m[1])
	}
	for _, loc := range docWord.FindAllStringIndex(text, -1) {
		if loc[0] > 0 && text[loc[0]-1] == '[' && loc[1] < len(text) && text[loc[1]] == ']' {
			continue // a doc link, listed above
		}
		word := strings.TrimPrefix(text[loc[0]:loc[1]], "*")
		if strings.ContainsAny(word, "-/") || wireWords[word] || wireWords[strings.TrimSuffix(word, "s")] {
			continue
		}
		if _, after, ok := strings.Cut(word, "."); ok {
			for _, part := range strings.Split(after, ".") {
				if unicode.IsUpper(rune(part[0])) {
					out = append(out, word)
					break
				}
			}
			continue
		}
		if !unicode.IsUpper(rune(word[0])) {
			continue
		}
		declared := names[word] || names[strings.TrimSuffix(word, "s")] || names[strings.TrimSuffix(word, "es")]
		switch {
		case strings.HasSuffix(word, "Params") || camelCase(word):
			out = append(out, word)
		case !declared:
		case oneHump.MatchString(word) && sentenceStart(text[:loc[0]]):
		default:
			out = append(out, word)
		}
	}
	return out
}

// camelCase reports whether word is made of several capitalised words
// (HTTPSRouteBackend, TLSEdge), as Go names are and English words are not;
// an initialism's plural (URIs) is not.
func camelCase(word string) bool {
	for i := 1; i < len(word); i++ {
		upper, afterLower := isUpper(word[i]), !isUpper(word[i-1]) && word[i-1] >= 'a'
		if upper && afterLower {
			return true
		}
		if i+1 < len(word) && upper && isUpper(word[i-1]) && word[i+1] >= 'a' && word[i+1:] != "s" {
			return true
		}
	}
	return false
}

func isUpper(c byte) bool { return 'A' <= c && c <= 'Z' }

// sentenceStart reports whether a word after before begins a sentence.
func sentenceStart(before string) bool {
	before = strings.TrimRight(before, " \n\"(")
	return before == "" || strings.ContainsAny(before[len(before)-1:], ".!?:")
}

// texts calls f with every description and summary of the document v,
// and where it is: paths[/edges/tls].post.description.
func texts(v any, where string, f func(where, text string)) {
	switch v := v.(type) {
	case map[string]any:
		for _, k := range sortedKeys(v) {
			at := where + "." + k
			if strings.ContainsAny(k, "./") {
				at = where + "[" + k + "]"
			}
			if s, ok := v[k].(string); ok && (k == "description" || k == "summary") {
				f(at, s)
				continue
			}
			texts(v[k], at, f)
		}
	case []any:
		for i, x := range v {
			texts(x, where+"["+strconv.Itoa(i)+"]", f)
		}
	}
}

// TestOpenAPISpeaksWire: no description or summary of the document the
// server serves shows a Go name of the module: an operation reads as its
// method and path (POST /edges/tls), a field as its JSON name, a constant
// as its value, a type as words, and a reference to Go documentation
// (see ParseHostport) not at all. Every offender is listed with where it
// is.
func TestOpenAPISpeaksWire(t *testing.T) {
	names, err := godoc.Names("..")
	if err != nil {
		t.Fatal(err)
	}
	if len(names) < 1000 || !names["Service"] || !names["CreateTLSEdge"] {
		t.Fatalf("%d names, without Service or CreateTLSEdge: the module was not read", len(names))
	}
	checked := 0
	texts(rawDoc(t), "", func(where, text string) {
		checked++
		for _, name := range goNamesIn(text, names) {
			t.Errorf("%s shows the Go name %s: %q", where, name, text)
		}
	})
	if checked < 500 {
		t.Fatalf("only %d descriptions and summaries checked", checked)
	}
}

// TestGoNamesIn: the check finds what a Go comment leaks and lets the
// wire's own words through.
func TestGoNamesIn(t *testing.T) {
	names := map[string]bool{"Service": true, "CreateTLSEdge": true, "HTTPSRoute": true, "ValidateLabels": true,
		"Node": true, "TLS": true, "Authorization": true, "Version": true, "Returns": true}
	tests := []struct {
		name, text string
		want       []string
	}{
		{"selector", "as Service.CreateTLSEdge does", []string{"Service.CreateTLSEdge"}},
		{"translated selector", "see tunnel_session.Node.", []string{"tunnel_session.Node"}},
		{"doc link", "see [Host.GetEndpoint] and [x]", []string{"[Host.GetEndpoint]", "[x]"}},
		{"index", "violations under sources[i].type and acl[2]", nil},
		{"method", "CreateTLSEdge does it", []string{"CreateTLSEdge"}},
		{"function", "1 to 32 labels (see ValidateLabels)", []string{"ValidateLabels"}},
		{"params", "as TLSEdgeParams are", []string{"TLSEdgeParams"}},
		{"camel case", "Replace the HTTPSRouteBackend module of TLSEdges", []string{"HTTPSRouteBackend", "TLSEdges"}},
		{"initialisms' plurals", "their URIs and IDs", nil},
		{"plural", "the parent of HTTPSRoutes", []string{"HTTPSRoutes"}},
		{"mid-sentence", "filled by the Service.", []string{"Service"}},
		{"sentence start", "Service keeps it. Returns a page.", nil},
		{"wire words", "Authorization: Bearer and Service-Version: 2; TLS, IPv6, OpenAPI, application/json", nil},
		{"lower case", "obj.description.startsWith(\"ci\"), created_at", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := goNamesIn(tc.text, names); strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("goNamesIn(%q) = %q, want %q", tc.text, got, tc.want)
			}
		})
	}
}
