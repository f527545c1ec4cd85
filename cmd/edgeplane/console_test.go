package main

import (
	"net/http"
	"strings"
	"testing"
)

// TestServeConsole: serve answers the console's sign-in page under
// /console/, and with -console=false leaves the path to the API (which
// answers a request without a key with its JSON error).
func TestServeConsole(t *testing.T) {
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	s := startServe(t, nil, nil)
	base := "http://" + s.addr
	code, body := get(t, base+"/console/signin", nil)
	if code != 200 || !strings.Contains(body, `<label for="api_key">API key</label>`) {
		t.Errorf("GET /console/signin: %d %s", code, body)
	}
	resp, err := noRedirect.Get(base + "/console/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/console/signin" {
		t.Errorf("GET /console/ without a session: %d to %q, want 303 to /console/signin", resp.StatusCode, resp.Header.Get("Location"))
	}

	off := startServe(t, []string{"-console=false"}, nil)
	if code, body := get(t, "http://"+off.addr+"/console/signin", nil); code == 200 || !strings.Contains(body, `"error_code":"ERR_SERVICE_`) {
		t.Errorf("-console=false: GET /console/signin: %d %s", code, body)
	}
}
