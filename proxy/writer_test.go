package proxy

import (
	"net/http"
	"strings"
	"testing"
)

func TestAcceptsGzip(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want bool
	}{
		{nil, false},
		{[]string{""}, false},
		{[]string{"gzip"}, true},
		{[]string{"GZip"}, true},
		{[]string{"x-gzip"}, true},
		{[]string{"*"}, true},
		{[]string{"br, deflate"}, false},
		{[]string{"br", "gzip"}, true},
		{[]string{"gzip;q=0.5"}, true},
		{[]string{"gzip; q=0"}, false},
		{[]string{"gzip;q=0.000"}, false},
		{[]string{"gzip;q=0, *"}, false},
		{[]string{"*, gzip;q=0"}, false},
		{[]string{"*;q=0"}, false},
		{[]string{"*;q=0, gzip"}, true},
		{[]string{"gzip;q=nonsense"}, false},
		{[]string{"identity;q=1, gzip;Q=1"}, true},
	} {
		if got := acceptsGzip(tc.in); got != tc.want {
			t.Errorf("acceptsGzip(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestCompressible(t *testing.T) {
	for _, tc := range []struct {
		name   string
		code   int
		header []string
		want   bool
	}{
		{"text", 200, []string{"Content-Type: text/html; charset=utf-8"}, true},
		{"json", 200, []string{"Content-Type: application/json"}, true},
		{"problem+json", 500, []string{"Content-Type: application/problem+json"}, true},
		{"svg", 200, []string{"Content-Type: image/svg+xml"}, true},
		{"png", 200, []string{"Content-Type: image/png"}, false},
		{"no type", 200, nil, false},
		{"bad type", 200, []string{"Content-Type: ;;;"}, false},
		{"already encoded", 200, []string{"Content-Type: text/plain", "Content-Encoding: br"}, false},
		{"a range", 206, []string{"Content-Type: text/plain", "Content-Range: bytes 0-9/100"}, false},
		{"no body", 204, []string{"Content-Type: text/plain"}, false},
		{"not modified", 304, []string{"Content-Type: text/plain"}, false},
		{"no-transform", 200, []string{"Content-Type: text/plain", "Cache-Control: public, No-Transform"}, false},
		{"tiny", 200, []string{"Content-Type: text/plain", "Content-Length: 255"}, false},
		{"big enough", 200, []string{"Content-Type: text/plain", "Content-Length: 256"}, true},
	} {
		h := http.Header{}
		for _, l := range tc.header {
			k, v, _ := strings.Cut(l, ":")
			h.Add(k, strings.TrimSpace(v))
		}
		if got := compressible(tc.code, h); got != tc.want {
			t.Errorf("%s: compressible = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// FuzzAcceptsGzip: any Accept-Encoding is parsed without panicking, and an
// explicit gzip;q=0 always refuses.
func FuzzAcceptsGzip(f *testing.F) {
	f.Add("gzip, deflate, br")
	f.Add("*;q=0.1, gzip;q=0")
	f.Add(";;=,q=")
	f.Fuzz(func(t *testing.T, v string) {
		if acceptsGzip([]string{v, "gzip;q=0"}) {
			t.Fatalf("%q with gzip;q=0 accepts gzip", v)
		}
		acceptsGzip([]string{v})
	})
}
