package httpapi

import (
	"net/http"
	"testing"
)

// headerValue and setHeader take header names as they are: each name
// they are given must be canonical, or a request's header would not be
// found and a response's would be set under a second name.
func TestHeaderNamesAreCanonical(t *testing.T) {
	for _, name := range []string{headerOrigin, headerAuthorization, headerContentType, headerContentLength, HeaderVersion, HeaderOperationID} {
		if c := http.CanonicalHeaderKey(name); c != name {
			t.Errorf("header name %q is not canonical (%q)", name, c)
		}
	}
}

// headerValue answers as http.Header.Get for a canonical name.
func TestHeaderValue(t *testing.T) {
	h := http.Header{}
	h.Add("Service-Version", "2")
	h.Add("Service-Version", "3")
	h["Authorization"] = []string{}
	for _, name := range []string{HeaderVersion, headerAuthorization, headerOrigin} {
		if got, want := headerValue(h, name), h.Get(name); got != want {
			t.Errorf("headerValue(%s) = %q, Get gives %q", name, got, want)
		}
	}
}
