package httpapi

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/google/go-cmp/cmp"
)

// keyTestBody is a request type with every shape checkKeys walks.
type keyTestBody struct {
	ACL    []string          `json:"acl"`
	Policy *keyTestInner     `json:"policy"`
	Rules  []keyTestInner    `json:"rules"`
	Grid   [][]keyTestInner  `json:"grid"`
	Labels map[string]string `json:"labels"`
	ByName map[string]keyTestInner
	Raw    json.RawMessage `json:"raw"`
	Any    any             `json:"any"`
	Skip   string          `json:"-"`
	keyTestEmbedded
}

type keyTestInner struct {
	Authority string `json:"authority"`
}

type keyTestEmbedded struct {
	Extra string `json:"extra"`
}

func TestCheckKeys(t *testing.T) {
	dup := func(f string) apierr.Violation { return apierr.Violation{Field: f, Reason: reasonDuplicateKey} }
	inexact := func(f string) apierr.Violation { return apierr.Violation{Field: f, Reason: reasonInexactKey} }
	tests := []struct {
		name string
		body string
		want []apierr.Violation
	}{
		{"valid", `{"acl":["a"],"policy":{"authority":"x"},"rules":[{"authority":"y"}],"labels":{"a":"1","A":"2"},"ByName":{"k":{"authority":"z"}},"extra":"e"}`, nil},
		{"empty", `{}`, nil},
		{"not an object", `[1,2]`, nil},
		{"scalar", `"x"`, nil},
		{"top-level duplicate", `{"acl":["bind:x.example.com"],"acl":["*"]}`, []apierr.Violation{dup("acl")}},
		{"escaped duplicate", `{"acl":[],"\u0061cl":[]}`, []apierr.Violation{dup("acl")}},
		{"three times", `{"extra":"a","extra":"b","extra":"c"}`, []apierr.Violation{dup("extra"), dup("extra")}},
		{"nested object", `{"policy":{"authority":"a","authority":"b"}}`, []apierr.Violation{dup("policy.authority")}},
		{"object in an array", `{"rules":[{"authority":"a"},{"authority":"a","authority":"b"}]}`, []apierr.Violation{dup("rules[1].authority")}},
		{"array in an array", `{"grid":[[],[{"authority":"a","authority":"b"}]]}`, []apierr.Violation{dup("grid[1][0].authority")}},
		{"map", `{"labels":{"a":"1","a":"2"}}`, []apierr.Violation{dup(`labels["a"]`)}},
		{"map values", `{"ByName":{"k":{"authority":"a","Authority":"b"}}}`, []apierr.Violation{inexact(`ByName["k"].Authority`)}},
		{"inside RawMessage", `{"raw":{"x":{"y":1,"y":2}}}`, []apierr.Violation{dup("raw.x.y")}},
		{"inside any", `{"any":[{"y":1,"y":2}]}`, []apierr.Violation{dup("any[0].y")}},
		{"inside a duplicate", `{"policy":{},"policy":{"a":1,"a":2}}`, []apierr.Violation{dup("policy"), dup("policy.a")}},
		{"case differs", `{"ACL":[],"Policy":{"AUTHORITY":"x"}}`, []apierr.Violation{inexact("ACL"), inexact("Policy")}}, // not a field: its keys are not fields either
		{"unknown", `{"bogus":{"x":1,"x":2}}`, []apierr.Violation{inexact("bogus"), dup("bogus.x")}},
		{"ignored field", `{"-":1,"Skip":1}`, []apierr.Violation{inexact("-"), inexact("Skip")}},
		{"embedded struct name", `{"keyTestEmbedded":{}}`, []apierr.Violation{inexact("keyTestEmbedded")}},
		{"wrong kinds", `{"acl":{"a":1,"a":2},"policy":[{"b":1,"b":1}]}`, []apierr.Violation{dup("acl.a"), dup("policy[0].b")}},
		{"trailing data ignored", `{} {"a":1,"a":1}`, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := apierr.ViolationsOf(keysErr([]byte(tc.body), reflect.TypeFor[keyTestBody]()))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
		})
	}
	// Past MaxViolations, violations are counted, not kept.
	err := keysErr([]byte(`{"extra":"a"`+strings.Repeat(`,"extra":"a"`, 250)+`}`), reflect.TypeFor[keyTestBody]())
	var capped *cappedError
	if !errors.As(err, &capped) || len(apierr.ViolationsOf(err)) != MaxViolations || capped.omitted != 250-MaxViolations {
		t.Errorf("250 duplicates: %T with %d violations kept, want %d kept and %d counted", err, len(apierr.ViolationsOf(err)), MaxViolations, 250-MaxViolations)
	}
	if apierr.CodeOf(err) != apierr.InvalidArgument || !strings.HasSuffix(err.Error(), "; and 249 more violations") {
		t.Errorf("250 duplicates: code %v, message %q", apierr.CodeOf(err), err.Error())
	}
	for _, bad := range []string{``, `{`, `{"a":}`, `{"a" 1}`, `[1,}`} {
		if err := keysErr([]byte(bad), reflect.TypeFor[keyTestBody]()); !errors.Is(err, errMalformed) {
			t.Errorf("checkKeys(%q) = %v, want errMalformed", bad, err)
		}
	}
}

// countKeys returns the number of object keys in the JSON value data as
// written (a key written twice counts twice), with a flat token loop.
func countKeys(data []byte) int {
	dec := json.NewDecoder(strings.NewReader(string(data)))
	type frame struct{ object, wantKey bool }
	var st []frame
	n := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return n
		}
		if len(st) > 0 && st[len(st)-1].wantKey {
			if _, ok := tok.(string); ok {
				n++
				st[len(st)-1].wantKey = false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			st = append(st, frame{object: true, wantKey: true})
			continue
		case json.Delim('['):
			st = append(st, frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			st = st[:len(st)-1]
		}
		// A value ended: in an object, a key comes next.
		if len(st) > 0 && st[len(st)-1].object {
			st[len(st)-1].wantKey = true
		}
	}
}

// mapKeys returns the number of keys the decoded value v holds (duplicates
// collapse into one).
func mapKeys(v any) int {
	n := 0
	switch v := v.(type) {
	case map[string]any:
		n += len(v)
		for _, e := range v {
			n += mapKeys(e)
		}
	case []any:
		for _, e := range v {
			n += mapKeys(e)
		}
	}
	return n
}

func duplicates(err error) int {
	n := 0
	for _, v := range apierr.ViolationsOf(err) {
		if v.Reason == reasonDuplicateKey {
			n++
		}
	}
	return n
}

// FuzzCheckKeys checks checkKeys against an oracle: a JSON value has a
// duplicate key exactly when it has more keys as written than once
// decoded into maps. Whatever the Go type, checkKeys finds the same
// duplicates, and it never calls valid JSON malformed.
func FuzzCheckKeys(f *testing.F) {
	for _, seed := range []string{
		`{}`, `[]`, `1`, `{"acl":["a"],"acl":["*"]}`, `{"policy":{"authority":"a","authority":"b"}}`,
		`{"rules":[{"authority":"a"},{"authority":"a","authority":"b"}]}`, `{"labels":{"a":"1","a":"2"}}`,
		`{"raw":{"x":{"y":1,"y":2}}}`, `{"a":{"b":[{"c":{}},{"c":{},"c":[]}]}}`, `{"\u0061":1,"a":2}`,
		`{"ACL":[],"Policy":{"AUTHORITY":"x"}}`, `{"a":"\ud800","a":"x"}`, "{\"\xff\":1,\"\xfe\":2}",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		var v any
		dec := json.NewDecoder(strings.NewReader(string(data)))
		dec.UseNumber() // numbers beyond float64 are valid JSON
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("valid JSON does not decode: %v", err)
		}
		hasDup := countKeys(data) != mapKeys(v)
		untyped := keysErr(data, nil)
		typed := keysErr(data, reflect.TypeFor[keyTestBody]())
		for _, err := range []error{untyped, typed} {
			if errors.Is(err, errMalformed) {
				t.Fatalf("valid JSON %q called malformed", data)
			}
			for _, v := range apierr.ViolationsOf(err) {
				if v.Reason == "" {
					t.Errorf("violation without a reason: %+v", v)
				}
			}
		}
		if got := duplicates(untyped) > 0; got != hasDup {
			t.Errorf("checkKeys(%q) found duplicates %v, want %v: %v", data, got, hasDup, untyped)
		}
		if a, b := duplicates(untyped), duplicates(typed); a != b {
			t.Errorf("checkKeys(%q): %d duplicates untyped, %d typed", data, a, b)
		}
		if untyped != nil && duplicates(untyped) != len(apierr.ViolationsOf(untyped)) {
			t.Errorf("checkKeys(%q) without a type reports more than duplicates: %v", data, untyped)
		}
	})
}

func TestClip(t *testing.T) {
	tests := []struct {
		name string
		s    string
		n    int
		want string
	}{
		{"short", "abc", 5, "abc"},
		{"exact", "abcde", 5, "abcde"},
		{"cut", "abcdef", 5, "ab…"},
		{"cut between runes", "ééé", 5, "é…"},
		{"cut inside a rune", "éééé", 6, "é…"},
		{"cut at a rune", "aééé", 6, "aé…"},
		{"four-byte runes", "😀😀😀", 9, "😀…"},
		{"invalid UTF-8", "\xff\xff\xff\xff\xff\xff", 5, "\xff\xff…"},
		{"continuation bytes only", "\x80\x80\x80\x80\x80\x80\x80\x80", 7, "\x80…"}, // at most three back
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := clip(tc.s, tc.n); got != tc.want {
				t.Errorf("clip(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
			}
		})
	}
}

// FuzzClip: the result has at most n bytes, is s when s fits, else a
// prefix of s followed by "…"; a valid string stays valid.
func FuzzClip(f *testing.F) {
	f.Add("héllo wörld", 7)
	f.Add("😀😀😀", 5)
	f.Fuzz(func(t *testing.T, s string, n int) {
		n = 3 + abs(n)%64
		got := clip(s, n)
		if len(got) > n {
			t.Errorf("clip(%q, %d) = %q: %d bytes", s, n, got, len(got))
		}
		if len(s) <= n && got != s {
			t.Errorf("clip(%q, %d) = %q, want it unchanged", s, n, got)
		}
		if len(s) > n && (!strings.HasSuffix(got, "…") || !strings.HasPrefix(s, strings.TrimSuffix(got, "…"))) {
			t.Errorf("clip(%q, %d) = %q, want a prefix and …", s, n, got)
		}
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Errorf("clip(%q, %d) = %q is not valid UTF-8", s, n, got)
		}
	})
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// BenchmarkCheckKeys measures the key walk of a small valid body (every
// create and update) and of a 1 MiB body of nothing but duplicate keys
// (the worst case: one violation per 8 bytes, counted past the cap).
func BenchmarkCheckKeys(b *testing.B) {
	for _, bc := range []struct{ name, body string }{
		{"valid", `{"acl":["bind:*.example.com"],"policy":{"authority":"x"},"rules":[{"authority":"y"}],"labels":{"a":"1"}}`},
		{"duplicates_1MiB", `{"acl":[]` + strings.Repeat(`,"acl":1`, (1<<20)/8) + `}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			body := []byte(bc.body)
			b.ReportAllocs()
			for b.Loop() {
				if err := keysErr(body, reflect.TypeFor[keyTestBody]()); (err == nil) != (bc.name == "valid") {
					b.Fatal(err)
				}
			}
		})
	}
}

// keysErr is checkKeys' error.
func keysErr(data []byte, t reflect.Type) error {
	_, err := checkKeys(data, t)
	return err
}

// checkKeys allocates nothing for a body of known keys with scalar values
// (the common request): keys are compared as the bytes read, and made
// strings only for a path or a large object's set.
func TestCheckKeysAllocatesNothingForScalars(t *testing.T) {
	data := []byte(`{"extra":"x","raw":1,"any":true}`)
	typ := reflect.TypeFor[keyTestBody]()
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := checkKeys(data, typ); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("checkKeys allocates %v times per call, want 0", allocs)
	}
}
