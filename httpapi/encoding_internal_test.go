package httpapi

import (
	"encoding/json"
	"testing"
	"unicode/utf8"

	jsonv1 "github.com/go-json-experiment/json/v1"

	"github.com/edgeplane/edgeplane/internal/jsonenc"
)

// FuzzAppendJSONString: jsonenc.AppendString, which writes an encoded
// page's keys and URIs, writes what encoding/json writes for the string,
// HTML escapes included (the page must read as encoding/json's; see
// TestEncodedPagesAsEncodingJSON). The response encoder
// (go-json-experiment's v1) writes the same bytes for valid UTF-8, control
// characters included (the seed corpus holds "\b\f", which go-json, the
// encoder before it, wrote as \u0008 and \u000c); each byte of invalid
// UTF-8 it writes as U+FFFD itself where encoding/json writes \ufffd: the
// same JSON string. (A request body with invalid UTF-8 decodes to U+FFFD,
// so no stored string holds any.)
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "https://api.example.test/credentials?before_id=cr_1&limit=100", "<a>", `"q" \ /`,
		"é\u2028\u2029", "\x00\x1f\x7f", "\xff", "\b\f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := jsonenc.AppendString([]byte("x"), s); string(got) != "x"+string(want) {
			t.Errorf("jsonenc.AppendString(%q) = %s; encoding/json writes %s", s, got, want)
		}
		enc, err := jsonv1.Marshal(s)
		if err != nil {
			t.Fatalf("the response encoder: %v", err)
		}
		if utf8.ValidString(s) && string(enc) != string(want) {
			t.Errorf("%q: encoding/json writes %s, the response encoder %s", s, want, enc)
		}
		var back, wantBack string
		if err := json.Unmarshal(enc, &back); err != nil {
			t.Fatalf("%q: the response encoder's %s is not a JSON string: %v", s, enc, err)
		}
		if err := json.Unmarshal(want, &wantBack); err != nil {
			t.Fatal(err)
		}
		if back != wantBack {
			t.Errorf("%q: the response encoder's %s decodes as %q, encoding/json's %s as %q", s, enc, back, want, wantBack)
		}
	})
}
