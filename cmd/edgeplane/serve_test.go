package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path"
	"strings"
	"testing"
)

// muxCleanPath is the path net/http's ServeMux routes a request by; it
// redirects a request whose path differs (net/http's cleanPath).
func muxCleanPath(p string) string {
	if p == "" {
		return "/"
	}
	if p[0] != '/' {
		p = "/" + p
	}
	np := path.Clean(p)
	if p[len(p)-1] == '/' && np != "/" {
		np += "/"
	}
	return np
}

// FuzzIsCleanPath: isCleanPath agrees with the mux's cleaning.
func FuzzIsCleanPath(f *testing.F) {
	for _, p := range []string{"", "/", "//", "/a", "/a/", "/a//b", "/./a", "/a/.", "/a/..", "/..", "/.a", "/a./b", "a", "/a/b/", "/.../", "*"} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if got, want := isCleanPath(p), muxCleanPath(p) == p; got != want {
			t.Errorf("isCleanPath(%q) = %v, want %v", p, got, want)
		}
	})
}

// TestAPIFirst: serve's handler answers every request as its mux alone
// does (the health endpoints, the API, the mux's redirects of unclean
// paths and CONNECTs, OPTIONS *), and sends the common API request to the
// API without the mux.
func TestAPIFirst(t *testing.T) {
	apiCalls := 0
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		apiCalls++
		io.WriteString(w, "api "+r.Method+" "+r.URL.Path)
	})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ready\n") })
	routed := 0
	mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { routed++; api.ServeHTTP(w, r) }))
	fast := apiFirst(mux, api)
	for _, c := range []struct {
		method, target string
		direct         bool // served without the mux
	}{
		{"GET", "/credentials", true},
		{"GET", "/credentials/cr_1", true},
		{"PATCH", "/credentials/cr_1", true},
		{"GET", "/credentials/", true},
		{"GET", "/", true},
		{"GET", "/credentials?limit=100", true},
		{"GET", "/healthz", false},
		{"GET", "/console/", false}, // the console's, mounted on the mux
		{"GET", "/console", false},
		{"HEAD", "/healthz", false},
		{"POST", "/healthz", false},
		{"GET", "/readyz", false},
		{"GET", "//credentials", false},
		{"GET", "/credentials/./cr_1", false},
		{"GET", "/a/../healthz", false},
		{"GET", "/credentials/..", false},
		{"GET", "/credentials/%2Fx", false},
		{"GET", "/cred%65ntials", false}, // a RawPath: left to the mux
		{"CONNECT", "/credentials", false},
		{"OPTIONS", "*", false},
	} {
		req := func() *http.Request {
			r := httptest.NewRequest(c.method, "http://api.test"+c.target, nil)
			if c.target == "*" {
				r = httptest.NewRequest(c.method, "http://api.test/", nil)
				r.RequestURI, r.URL.Path = "*", "*"
			}
			return r
		}
		want, got := httptest.NewRecorder(), httptest.NewRecorder()
		mux.ServeHTTP(want, req())
		routed, apiCalls = 0, 0
		fast.ServeHTTP(got, req())
		if got.Code != want.Code || got.Body.String() != want.Body.String() || got.Header().Get("Location") != want.Header().Get("Location") ||
			got.Header().Get("Allow") != want.Header().Get("Allow") {
			t.Errorf("%s %s: %d %q (Location %q); the mux answers %d %q (Location %q)", c.method, c.target,
				got.Code, got.Body, got.Header().Get("Location"), want.Code, want.Body, want.Header().Get("Location"))
		}
		if direct := apiCalls == 1 && routed == 0; direct != c.direct {
			t.Errorf("%s %s: served without the mux: %v, want %v", c.method, c.target, direct, c.direct)
		}
		if strings.HasPrefix(want.Body.String(), "api") && apiCalls != 1 {
			t.Errorf("%s %s: the API served it %d times", c.method, c.target, apiCalls)
		}
	}
}
