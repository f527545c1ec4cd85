package httpapi

import (
	"encoding/json"
	"testing"
	"unicode/utf8"

	gojson "github.com/goccy/go-json"
)

// FuzzAppendJSONString: appendJSONString writes what the response
// encoder writes for the string (and, for valid UTF-8, what
// encoding/json writes): HTML escapes included.
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "https://api.example.test/credentials?before_id=cr_1&limit=100", "<a>", `"q" \ /`,
		"é\u2028\u2029", "\x00\x1f\x7f", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := appendJSONString([]byte("x"), s)
		want, werr := gojson.Marshal(s)
		if err != nil || werr != nil || string(got) != "x"+string(want) {
			t.Errorf("appendJSONString(%q) = %s, %v; the encoder writes %s, %v", s, got, err, want, werr)
		}
		if std, _ := json.Marshal(s); utf8.ValidString(s) && string(std) != string(want) {
			t.Errorf("%q: encoding/json writes %s, the encoder %s", s, std, want)
		}
	})
}
