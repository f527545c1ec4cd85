package httpapi

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	gojson "github.com/goccy/go-json"

	"github.com/edgeplane/edgeplane/internal/jsonenc"
)

// FuzzAppendJSONString: jsonenc.AppendString, which writes an encoded
// page's keys and URIs, writes what encoding/json writes for the string,
// HTML escapes included (the page must read as encoding/json's; see
// TestEncodedPagesAsEncodingJSON). The response encoder, go-json, writes
// the same for valid UTF-8 but for two characters: \b and \f, which it
// writes as \u0008 and \u000c (the same string in JSON; the seed corpus
// holds "\f", which fuzzing found).
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
		enc, err := gojson.Marshal(s)
		if err != nil {
			t.Fatalf("go-json: %v", err)
		}
		if utf8.ValidString(s) && !strings.ContainsAny(s, "\b\f") && string(enc) != string(want) {
			t.Errorf("%q: encoding/json writes %s, the response encoder %s", s, want, enc)
		}
		var back string
		if err := json.Unmarshal(enc, &back); err != nil || utf8.ValidString(s) && back != s {
			t.Errorf("%q: the response encoder's %s decodes as %q, %v", s, enc, back, err)
		}
	})
}
