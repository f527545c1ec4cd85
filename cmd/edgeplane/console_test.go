package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
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

// TestServeConsoleLive: serve gives the console the store's change feed
// (the overview says its lists update as it changes, not every 2 s),
// and deleting the signed-in key through the API ends the overview's
// stream.
func TestServeConsoleLive(t *testing.T) {
	admin := "epk_" + strings.Repeat("c", 40)
	s := startServe(t, nil, map[string]string{"EDGEPLANE_API_KEY": admin, "EDGEPLANE_RATE_LIMIT": "0"})
	base := "http://" + s.addr
	api := apiClient{t: t, base: base, key: admin}
	k := api.must(201, "POST", "/api_keys", `{"description": "console"}`)
	id, _ := k["id"].(string)
	token, _ := k["token"].(string)

	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	csrf := regexp.MustCompile(`name="csrf" value="([^"]+)"`)
	code, page := getWith(t, c, base+"/console/signin")
	m := csrf.FindStringSubmatch(page)
	if code != 200 || m == nil {
		t.Fatalf("the sign-in page: %d %s", code, page)
	}
	resp, err := c.PostForm(base+"/console/signin", url.Values{"csrf": {m[1]}, "api_key": {token}})
	if err != nil {
		t.Fatal(err)
	}
	overview, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Request.URL.Path != "/console/" {
		t.Fatalf("sign-in: %d at %s", resp.StatusCode, resp.Request.URL)
	}
	if !strings.Contains(string(overview), "the lists update as it changes.") {
		t.Errorf("the overview is not live from the change feed: %s", overview)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/console/live", nil)
	req.Header.Set("Accept", "text/event-stream")
	stream, err := (&http.Client{Jar: jar}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	r := bufio.NewReader(stream.Body)
	next := func() string { // the next event's name
		t.Helper()
		name := ""
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("the stream: %v (event so far %q)", err, name)
			}
			if line == "\n" {
				return name
			}
			if n, ok := strings.CutPrefix(line, "event: "); ok {
				name = strings.TrimSpace(n)
			}
		}
	}
	if e := next(); e != "update" {
		t.Fatalf("the first event: %q", e)
	}
	api.must(204, "DELETE", "/api_keys/"+id, "")
	for {
		if e := next(); e == "end" {
			break
		}
	}
}

func getWith(t *testing.T, c *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}
