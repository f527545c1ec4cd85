package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/internal/syncbuf"
)

// get sends GET url with Host host (and the API key when not empty) and
// returns the status and body.
func get(t *testing.T, url, host, key string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Service-Version", "2")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestRun: the example serves its edge's host through the tunnel to
// -upstream, and no other host; the API shows the tunnel; /metrics counts
// the requests; it shuts down when its context ends.
func TestRun(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "upstream "+r.Host+" "+r.URL.Path)
	}))
	defer up.Close()
	key := "epk_" + strings.Repeat("k", 40)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stdout, stderr := &syncbuf.Buffer{}, &syncbuf.Buffer{}
	ready, done := make(chan [2]string, 1), make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-api-addr", "127.0.0.1:0", "-host", "demo.example.com", "-upstream", up.URL},
			func(k string) string { return map[string]string{"EDGEPLANE_API_KEY": key}[k] }, stdout, stderr, ready)
	}()
	var addrs [2]string
	select {
	case addrs = <-ready:
	case err := <-done:
		t.Fatalf("run returned early: %v\n%s", err, stderr)
	case <-time.After(10 * time.Second):
		t.Fatal("not ready")
	}
	proxy, api := "http://"+addrs[0], "http://"+addrs[1]

	if code, body := get(t, proxy+"/hello", "demo.example.com:443", ""); code != 200 || body != "upstream demo.example.com:443 /hello" {
		t.Errorf("through the tunnel: %d %q", code, body)
	}
	if code, body := get(t, proxy+"/hello", "other.example.com:443", ""); code != 404 {
		t.Errorf("another host: %d %q, want 404", code, body)
	}
	tunnel := regexp.MustCompile(`(?m)^TUNNEL=(\S+)$`).FindStringSubmatch(stdout.String())
	if tunnel == nil {
		t.Fatalf("no TUNNEL= in %q", stdout)
	}
	if code, body := get(t, api+"/tunnels/"+tunnel[1], "", key); code != 200 || !strings.Contains(body, `"forwards_to":"`+up.URL+`"`) {
		t.Errorf("GET /tunnels/%s: %d %s", tunnel[1], code, body)
	}
	if _, body := get(t, api+"/metrics", "", ""); !strings.Contains(body, `edgeplane_proxy_requests_total{action="",code="2xx"`) ||
		!strings.Contains(body, `edgeplane_proxy_unrouted_total{reason="unknown_host"} 1`) {
		t.Errorf("/metrics:\n%s", body)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Error("no graceful shutdown")
	}
	if logs := stderr.String(); !strings.Contains(logs, "msg=request method=GET host=demo.example.com:443 path=/hello") {
		t.Errorf("the request is not logged:\n%s", logs)
	}
}

// TestRunUsage: without -upstream, run fails before serving.
func TestRunUsage(t *testing.T) {
	err := run(context.Background(), []string{"-addr", "127.0.0.1:0"}, func(string) string { return "" }, io.Discard, io.Discard, nil)
	if err == nil || !strings.Contains(err.Error(), "-upstream") {
		t.Errorf("error %v, want usage naming -upstream", err)
	}
}
