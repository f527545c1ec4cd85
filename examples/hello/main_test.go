package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestHandler(t *testing.T) {
	for _, tc := range []struct{ method, path, want string }{
		{"GET", "/", "hello from the local app: GET /\n"},
		{"POST", "/a/b", "hello from the local app: POST /a/b\n"},
	} {
		t.Run(tc.method+tc.path, func(t *testing.T) {
			w := httptest.NewRecorder()
			handler().ServeHTTP(w, httptest.NewRequest(tc.method, tc.path, nil))
			body, _ := io.ReadAll(w.Result().Body)
			if w.Code != http.StatusOK || string(body) != tc.want {
				t.Errorf("%d %q; want 200 %q", w.Code, body, tc.want)
			}
		})
	}
}
