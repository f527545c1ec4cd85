package jsonenc_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/internal/jsonenc"
)

// stringCases are strings whose encodings differ between encoders: every
// escape encoding/json makes, and what it leaves alone.
var stringCases = map[string]string{
	"empty":           "",
	"plain":           "bind:*.example.com",
	"quote backslash": `a"b\c`,
	"html":            "<script>a&b</script>",
	"short escapes":   "\b\f\n\r\t",
	"controls":        "\x00\x01\x1f\x7f",
	"line separators": "a\u2028b\u2029c",
	"non-ascii":       "é日本🙂",
	"invalid utf-8":   "a\xffb\xc3(\xed\xa0\x80z",
	"truncated rune":  "\xe2\x80",
	"replacement":     "\ufffd",
	"all escapes":     "<&>\u2028é\"\\\n\x00\xff",
	"long plain":      strings.Repeat("abcdefgh", 64),
}

// marshal returns encoding/json's encoding of v.
func marshal(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encoding/json: %v", err)
	}
	return b
}

func TestAppendString(t *testing.T) {
	for name, s := range stringCases {
		t.Run(name, func(t *testing.T) {
			checkString(t, s)
		})
	}
}

// TestAppendStringExact pins a few encodings, so that a change of
// encoding/json's would be noticed, not silently followed.
func TestAppendStringExact(t *testing.T) {
	for s, want := range map[string]string{
		"<&>":          `"\u003c\u0026\u003e"`,
		"\u2028\u2029": `"\u2028\u2029"`,
		"\x00\x1f\b\t": `"\u0000\u001f\b\t"`,
		"a\xffb":       `"a\ufffdb"`,
		"é\x7f":        "\"é\x7f\"",
		`"\`:           `"\"\\"`,
	} {
		if got := jsonenc.AppendString(nil, s); string(got) != want {
			t.Errorf("AppendString(%q) = %s, want %s", s, got, want)
		}
	}
}

// checkString checks AppendString(s) against encoding/json, appending to
// a non-empty buffer so that what precedes is kept.
func checkString(t *testing.T, s string) {
	t.Helper()
	want := append([]byte("x"), marshal(t, s)...)
	if got := jsonenc.AppendString([]byte("x"), s); !bytes.Equal(got, want) {
		t.Errorf("AppendString(%q) = %s, encoding/json writes %s", s, got, want)
	}
}

func TestAppendStrings(t *testing.T) {
	for name, ss := range map[string][]string{
		"nil":   nil,
		"empty": {},
		"one":   {"<&>"},
		"many":  {"", "a\u2028", "\xff", `"`},
	} {
		want := append([]byte("x"), marshal(t, ss)...)
		if got := jsonenc.AppendStrings([]byte("x"), ss); !bytes.Equal(got, want) {
			t.Errorf("%s: AppendStrings(%q) = %s, encoding/json writes %s", name, ss, got, want)
		}
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range stringCases {
		f.Add(s)
	}
	f.Fuzz(checkString)
}

// timeCases are times whose encodings are valid or fail: zones, fractions
// and the limits of RFC 3339.
var timeCases = map[string]time.Time{
	"zero":           {},
	"utc":            time.Date(2026, 11, 24, 0, 56, 43, 0, time.UTC),
	"nanoseconds":    time.Date(2026, 11, 24, 0, 56, 43, 123456789, time.UTC),
	"trailing zeros": time.Date(2026, 11, 24, 0, 56, 43, 120000000, time.UTC),
	"positive zone":  time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("", 5*3600+30*60)),
	"negative zone":  time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("", -8*3600)),
	"second zone":    time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("", 3600+1)),
	"monotonic":      time.Now(),
	"year 0":         time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC),
	"year 9999":      time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
	"year 10000":     time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
	"year -1":        time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC),
	"zone 24h":       time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("", 24*3600)),
	"zone -24h":      time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("", -24*3600)),
	"zone 23:59":     time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("", 23*3600+59*60)),
	"zone 100h":      time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("", 100*3600)),
}

func TestAppendTime(t *testing.T) {
	for name, tm := range timeCases {
		t.Run(name, func(t *testing.T) {
			checkTime(t, tm)
		})
	}
}

// TestAppendTimeFails checks that the cases encoding/json refuses are
// refused (so that checkTime compares something on both sides).
func TestAppendTimeFails(t *testing.T) {
	for _, name := range []string{"year 10000", "year -1", "zone 24h", "zone -24h", "zone 100h"} {
		if b, ok := jsonenc.AppendTime([]byte("x"), timeCases[name]); ok || string(b) != "x" {
			t.Errorf("%s: AppendTime = %q, %v; want \"x\", false", name, b, ok)
		}
	}
}

// checkTime checks AppendTime(tm) against encoding/json: the same bytes
// after what precedes, or both failing with dst unchanged.
func checkTime(t *testing.T, tm time.Time) {
	t.Helper()
	want, err := json.Marshal(tm)
	got, ok := jsonenc.AppendTime([]byte("x"), tm)
	switch {
	case err != nil && (ok || string(got) != "x"):
		t.Errorf("AppendTime(%v) = %s, %v; encoding/json fails (%v)", tm, got, ok, err)
	case err == nil && (!ok || string(got) != "x"+string(want)):
		t.Errorf("AppendTime(%v) = %s, %v; encoding/json writes %s", tm, got, ok, want)
	}
}

func FuzzAppendTime(f *testing.F) {
	f.Add(int64(0), int64(0), 0)
	f.Add(int64(1795568203), int64(123456789), 3600)
	f.Add(int64(253402300800), int64(0), 0)   // year 10000
	f.Add(int64(-62167219201), int64(0), 0)   // year -1
	f.Add(int64(1795568203), int64(0), 86400) // zone 24h
	f.Fuzz(func(t *testing.T, sec, nsec int64, offset int) {
		var zone *time.Location = time.UTC
		if offset != 0 {
			zone = time.FixedZone("", offset)
		}
		checkTime(t, time.Unix(sec, nsec).In(zone))
	})
}

func BenchmarkAppendString(b *testing.B) {
	for _, name := range []string{"plain", "html", "non-ascii", "long plain"} {
		s := stringCases[name]
		b.Run(name, func(b *testing.B) {
			b.Run("jsonenc", func(b *testing.B) {
				b.ReportAllocs()
				buf := make([]byte, 0, 1024)
				for b.Loop() {
					buf = jsonenc.AppendString(buf[:0], s)
				}
			})
			b.Run("encoding-json", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := json.Marshal(s); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

func BenchmarkAppendTime(b *testing.B) {
	tm := timeCases["nanoseconds"]
	b.Run("jsonenc", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 64)
		for b.Loop() {
			buf, _ = jsonenc.AppendTime(buf[:0], tm)
		}
	})
	b.Run("MarshalJSON", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := tm.MarshalJSON(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
