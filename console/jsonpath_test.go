package console

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestJSONLines(t *testing.T) {
	doc := "{\n  \"inbound\": [\n    {\n      \"name\": \"a\\\"b\",\n      \"actions\": [\n        {\"type\": \"deny\"}, {\"type\": \"log\",\n          \"config\": {\"metadata\": {\"k\": -1.5e3}}}\n      ]\n    }\n  ],\n  \"outbound\": []\n}"
	cases := []struct {
		path string
		line int
	}{
		{"", 1},
		{"inbound", 2},
		{"inbound[0]", 3},
		{"inbound[0].name", 4},
		{"inbound[0].actions", 5},
		{"inbound[0].actions[0]", 6},
		{"inbound[0].actions[1].type", 6},
		{"inbound[0].actions[1].config", 7},
		{"inbound[0].actions[1].config.metadata.k", 7},
		{"inbound[0].expressions", 3}, // missing: its parent's line
		{"inbound[0].actions[7].config", 5},
		{"outbound", 11},
		{"nope.deeper", 1},
	}
	lines, errLine := jsonLines(doc)
	if errLine != 0 {
		t.Fatalf("a valid document has a syntax error at line %d", errLine)
	}
	for _, tc := range cases {
		if got := lineOf(lines, tc.path); got != tc.line {
			t.Errorf("%q: line %d, want %d", tc.path, got, tc.line)
		}
	}

	bad := []struct {
		name, doc string
		line      int
	}{
		{"empty", "", 1},
		{"unclosed", "{\n\"a\": [\n", 3},
		{"stray brace", "{\n \"a\": [\n {}}\n", 3},
		{"trailing", "{}\n\nx", 3},
		{"bad literal", "{\"a\":\n tru}", 2},
		{"bad number", "{\"a\":\n -}", 2},
		{"control in string", "{\"a\": \"x\ny\"}", 1},
		{"too deep", strings.Repeat("[", maxJSONDepth+2) + strings.Repeat("]", maxJSONDepth+2), 1},
	}
	for _, tc := range bad {
		if _, line := jsonLines(tc.doc); line != tc.line {
			t.Errorf("%s: syntax error at line %d, want %d", tc.name, line, tc.line)
		}
	}
}

// FuzzJSONLines: jsonLines never panics, finds a syntax error exactly
// when encoding/json does (within its depth bound), and every line it
// gives is within the text.
func FuzzJSONLines(f *testing.F) {
	for _, s := range []string{`{}`, `{"a": [1, 2, {"b": null}]}`, "{\n\"a\":\n[true, false]\n}", `[`, `{"a":"\u00e9\n"}`, `1e999`, `"x"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 1<<16 {
			return
		}
		lines, errLine := jsonLines(s)
		total := strings.Count(s, "\n") + 1
		if errLine < 0 || errLine > total {
			t.Fatalf("syntax error at line %d of %d", errLine, total)
		}
		for p, n := range lines {
			if n < 1 || n > total {
				t.Fatalf("%q at line %d of %d", p, n, total)
			}
		}
		if strings.Count(s, "[")+strings.Count(s, "{") > maxJSONDepth {
			return // may be too deep for jsonLines and not for encoding/json
		}
		if valid := json.Valid([]byte(s)); valid != (errLine == 0) {
			t.Fatalf("json.Valid %v, syntax error at line %d", valid, errLine)
		}
	})
}

// FuzzFormLines: the list fields typed one item per line (splitLines)
// and the headers typed "Name: value" (headerLines) take any text: no
// panic, every item trimmed and non-empty, each at a line of the text.
func FuzzFormLines(f *testing.F) {
	for _, s := range []string{"", "bind:*.example.com\n\nbind:x", "X-A: 1\r\nX-B:2\n:\nnocolon", "\n\n \t\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l := splitLines(s)
		total := strings.Count(s, "\n") + 1
		if len(l.items) != len(l.at) {
			t.Fatalf("%d items at %d lines", len(l.items), len(l.at))
		}
		for i, it := range l.items {
			if it == "" || it != strings.TrimSpace(it) || l.at[i] < 1 || l.at[i] > total || i > 0 && l.at[i] <= l.at[i-1] {
				t.Fatalf("item %d %q at line %d of %d", i, it, l.at[i], total)
			}
		}
		if h := headerLines(l); len(h) > len(l.items) {
			t.Fatalf("%d headers from %d lines", len(h), len(l.items))
		}
	})
}
