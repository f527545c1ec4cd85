package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/policy"
)

// started is a run in progress.
type started struct {
	addrs          addrs
	stdout, stderr *syncBuffer
	reload         chan struct{}
	stop           func() // cancels and waits for a clean return
}

func start(t *testing.T, args []string, env map[string]string) *started {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &started{stdout: &syncBuffer{}, stderr: &syncBuffer{}, reload: make(chan struct{})}
	ready := make(chan addrs, 1)
	done := make(chan error, 1)
	args = append([]string{"-addr", "127.0.0.1:0", "-admin-addr", "127.0.0.1:0", "-api-addr", "127.0.0.1:0"}, args...)
	go func() {
		done <- run(ctx, args, func(k string) string { return env[k] }, s.stdout, s.stderr, s.reload, ready)
	}()
	select {
	case s.addrs = <-ready:
	case err := <-done:
		cancel()
		t.Fatalf("run returned early: %v\n%s", err, s.stderr)
	case <-time.After(10 * time.Second):
		cancel()
		t.Fatal("not ready")
	}
	stopped := false
	s.stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("run: %v", err)
			}
		case <-time.After(15 * time.Second):
			t.Error("no graceful shutdown")
		}
		if !strings.Contains(s.stdout.String(), "shut down") {
			t.Errorf("stdout: %q", s.stdout)
		}
	}
	t.Cleanup(s.stop)
	return s
}

func httpGet(t *testing.T, url string) (int, http.Header, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(body)
}

// TestRunServiceMode is the README's session: the API and the proxy in one
// process; a traffic policy PUT through the API rate-limits the next
// requests; /metrics counts them.
func TestRunServiceMode(t *testing.T) {
	up := newUpstream(t, "a")
	key := "epk_" + strings.Repeat("k", 40)
	s := start(t, []string{"-upstream", up.URL}, map[string]string{"EDGEPLANE_API_KEY": key})
	out := s.stdout.String()
	ids := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^(EDGE|ROUTE|BACKEND|TUNNEL)=(\S+)$`).FindAllStringSubmatch(out, -1) {
		ids[m[1]] = m[2]
	}
	if !strings.HasPrefix(ids["EDGE"], "edghts_") || !strings.HasPrefix(ids["ROUTE"], "edghtsrt_") ||
		!strings.HasPrefix(ids["BACKEND"], "bkdtg_") || !strings.HasPrefix(ids["TUNNEL"], "tn_") {
		t.Fatalf("IDs not printed: %q", out)
	}
	if !strings.Contains(out, "management API on http://"+s.addrs.API) || !strings.Contains(out, "proxy on http://"+s.addrs.Proxy) {
		t.Errorf("addresses not printed: %q", out)
	}

	proxy := "http://" + s.addrs.Proxy
	if code, _, body := httpGet(t, proxy+"/hello"); code != 200 || body != "upstream a /hello" {
		t.Fatalf("through the tunnel: %d %q", code, body)
	}

	// The API: the tunnel forwards to the upstream; set a rate limit.
	api := func(method, path, body string) (int, string) {
		req, _ := http.NewRequest(method, "http://"+s.addrs.API+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Service-Version", "2")
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(data)
	}
	if code, body := api("GET", "/tunnels/"+ids["TUNNEL"], ""); code != 200 || !strings.Contains(body, `"forwards_to":"`+up.URL+`"`) {
		t.Errorf("tunnel: %d %s", code, body)
	}
	code, body := api("PUT", "/edges/https/"+ids["EDGE"]+"/routes/"+ids["ROUTE"]+"/traffic_policy",
		`{"value":"{\"inbound\":[{\"actions\":[{\"type\":\"rate-limit\",\"config\":{\"name\":\"demo\",\"algorithm\":\"sliding_window\",\"capacity\":5,\"rate\":\"60s\",\"bucket_key\":[\"conn.client_ip\"]}}]}]}"}`)
	if code != 200 {
		t.Fatalf("PUT traffic_policy: %d %s", code, body)
	}
	for i := 1; i <= 5; i++ {
		if code, _, _ := httpGet(t, proxy+"/"); code != 200 {
			t.Fatalf("request %d: %d", i, code)
		}
	}
	code, h, _ := httpGet(t, proxy+"/")
	if code != 429 || h.Get("Retry-After") == "" {
		t.Errorf("request 6: %d, retry-after %q", code, h.Get("Retry-After"))
	}

	code, h, metrics := httpGet(t, "http://"+s.addrs.Admin+"/metrics")
	if code != 200 || !strings.HasPrefix(h.Get("Content-Type"), "text/plain; version=0.0.4") {
		t.Errorf("/metrics: %d %v", code, h)
	}
	for _, want := range []string{
		"# HELP edgeproxy_requests_total Requests received.\n# TYPE edgeproxy_requests_total counter\nedgeproxy_requests_total 7\n",
		"# TYPE edgeproxy_rate_limited_total counter\nedgeproxy_rate_limited_total 1\n",
		"# TYPE edgeproxy_denied_total counter\nedgeproxy_denied_total 0\n",
		"# TYPE edgeproxy_upstream_errors_total counter\nedgeproxy_upstream_errors_total 0\n",
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q:\n%s", want, metrics)
		}
	}
	if _, _, body := httpGet(t, proxy+"/metrics"); strings.Contains(body, "# TYPE") {
		t.Error("/metrics is served on the proxy address too")
	}

	s.stop()
	logs := s.stderr.String()
	for _, want := range []string{"msg=request method=GET path=/hello client_ip=127.0.0.1 status=200", "status=429", "policy_action=rate-limit", "path=/edges/https/"} {
		if !strings.Contains(logs, want) {
			t.Errorf("log lacks %q:\n%s", want, logs)
		}
	}
}

// TestRunStandalone: -policy FILE runs the policy in front of -upstream;
// a reload re-reads the file; a file that does not compile keeps the
// running policy.
func TestRunStandalone(t *testing.T) {
	up := newUpstream(t, "a")
	file := filepath.Join(t.TempDir(), "policy.json")
	write := func(doc string) {
		if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"inbound":[{"expressions":["req.url.path == '/one'"],"actions":[{"type":"deny"}]}]}`)
	s := start(t, []string{"-upstream", up.URL + "/base", "-policy", file}, nil)
	if s.addrs.API != "" {
		t.Errorf("the API runs in standalone mode on %s", s.addrs.API)
	}
	proxy := "http://" + s.addrs.Proxy
	if code, _, _ := httpGet(t, proxy+"/one"); code != 403 {
		t.Errorf("/one: %d, want 403", code)
	}
	if code, _, body := httpGet(t, proxy+"/two"); code != 200 || body != "upstream a /base/two" {
		t.Errorf("/two: %d %q", code, body)
	}

	// reload is unbuffered and run handles one at a time: when a second
	// send returns, the first reload is complete.
	reload := func() { s.reload <- struct{}{}; s.reload <- struct{}{} }
	write(`{"inbound":[{"expressions":["req.url.path == '/two'"],"actions":[{"type":"deny"}]}]}`)
	reload()
	if code, _, _ := httpGet(t, proxy+"/one"); code != 200 {
		t.Errorf("after the reload, /one: %d, want 200", code)
	}
	if code, _, _ := httpGet(t, proxy+"/two"); code != 403 {
		t.Errorf("after the reload, /two: %d, want 403", code)
	}

	write(`{"inbound":[{"actions":[{"type":"deny","config":{"status_code":200}}]}]}`)
	reload()
	if code, _, _ := httpGet(t, proxy+"/two"); code != 403 {
		t.Errorf("after a bad reload, /two: %d, want 403 (the running policy)", code)
	}
	if logs := s.stderr.String(); !strings.Contains(logs, "reload: keeping the running policy") || !strings.Contains(logs, "must be between 400 and 599") {
		t.Errorf("bad reload not logged:\n%s", logs)
	}
}

// TestRunErrors: bad flags and inputs fail before serving, saying what is
// wrong.
func TestRunErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"inbound":[{"expressions":["req.nope"],"actions":[{"type":"deny","config":{"status_code":99}}]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"-addr", "127.0.0.1:0", "-admin-addr", "127.0.0.1:0", "-api-addr", "127.0.0.1:0"}
	for _, tc := range []struct {
		name string
		args []string
		env  string
		want []string
	}{
		{"no upstream", nil, "", []string{"-upstream is required"}},
		{"relative upstream", []string{"-upstream", "localhost:3000"}, "", []string{"want an absolute http(s) URL"}},
		{"upstream with a path in Service mode", []string{"-upstream", "http://127.0.0.1:3000/app"}, "", []string{"no path beyond /"}},
		{"bad trusted proxies", []string{"-upstream", "http://127.0.0.1:3000", "-trusted-proxies", "10.0.0.0/8,nope"}, "", []string{"-trusted-proxies", `"nope"`}},
		{"missing policy file", []string{"-upstream", "http://127.0.0.1:3000", "-policy", filepath.Join(dir, "missing.json")}, "", []string{"missing.json"}},
		{"policy that does not compile", []string{"-upstream", "http://127.0.0.1:3000", "-policy", bad}, "",
			[]string{"does not compile", "inbound[0].expressions[0]", "inbound[0].actions[0].config.status_code"}},
		{"weak API key", []string{"-upstream", "http://127.0.0.1:3000"}, "weak", []string{"EDGEPLANE_API_KEY"}},
		{"extra arguments", []string{"-upstream", "http://127.0.0.1:3000", "extra"}, "", []string{"unexpected arguments"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := run(context.Background(), append(base, tc.args...), func(string) string { return tc.env }, io.Discard, io.Discard, nil, nil)
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("error %v, want it to contain %q", err, w)
				}
			}
		})
	}
}

// TestRunGeneratedKey: without EDGEPLANE_API_KEY the key is generated and
// printed once.
func TestRunGeneratedKey(t *testing.T) {
	s := start(t, []string{"-upstream", "http://127.0.0.1:1"}, nil)
	if !regexp.MustCompile(`admin API key \(shown once\): epk_\S{32,}`).MatchString(s.stdout.String()) {
		t.Errorf("stdout: %q", s.stdout)
	}
}

// TestRunBounds: the proxy's server refuses requests beyond the bounds the
// policy cost model assumes, and a hung upstream gets 504 after
// -upstream-timeout instead of holding the client forever.
func TestRunBounds(t *testing.T) {
	release := make(chan struct{})
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hang" {
			<-release
		}
		io.WriteString(w, "ok")
	}))
	t.Cleanup(func() { close(release); hung.Close() })
	file := filepath.Join(t.TempDir(), "policy.json")
	if err := os.WriteFile(file, []byte(`{"inbound":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	s := start(t, []string{"-upstream", hung.URL, "-policy", file, "-upstream-timeout", "200ms"}, nil)
	proxy := "http://" + s.addrs.Proxy

	client := &http.Client{Timeout: 20 * time.Second} // a bound on a hung test, not a timing assertion
	get := func(path string, header http.Header) int {
		t.Helper()
		req, _ := http.NewRequest("GET", proxy+path, nil)
		for k, v := range header {
			req.Header[k] = v
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %.40s: %v", path, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get("/fine", nil); code != 200 {
		t.Errorf("/fine: %d", code)
	}
	if code := get("/hang", nil); code != http.StatusGatewayTimeout {
		t.Errorf("hung upstream: %d, want 504", code)
	}
	if code := get("/"+strings.Repeat("u", policy.MaxURLBytes), nil); code != http.StatusRequestURITooLong {
		t.Errorf("long URL: %d, want 414", code)
	}
	if code := get("/", http.Header{"X-Big": {strings.Repeat("h", policy.MaxRequestHeaderBytes+4096)}}); code != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("large header: %d, want 431", code)
	}
	if m := s.stderr.String(); !strings.Contains(m, "upstream error") {
		t.Errorf("the timeout is not logged:\n%s", m)
	}
}

// TestExpiredTunnelGetsNoTraffic: when a tunnel's lease ends, the proxy
// stops routing to it at once, though nothing was written to the store;
// renewing keeps it routed.
func TestExpiredTunnelGetsNoTraffic(t *testing.T) {
	ctx := context.Background()
	up := newUpstream(t, "a")
	clock := newFakeClock()
	st := memstore.New()
	svc := edgeplane.New(st, edgeplane.Options{Clock: clock.Now})
	b, err := bootstrap(ctx, svc, "", up.URL)
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(ctx, Options{Service: svc, AccountID: b.accountID, EdgeID: b.edgeID, Version: storeRevision(st), Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	if code, _, _ := httpGet(t, srv.URL+"/"); code != 200 {
		t.Fatalf("a live tunnel: %d", code)
	}
	clock.Advance(edgeplane.DefaultTunnelLease - time.Second)
	if _, err := svc.Host().RenewTunnel(ctx, b.accountID, b.tunnelID); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Second) // past the first lease, within the renewed one
	if code, _, _ := httpGet(t, srv.URL+"/"); code != 200 {
		t.Fatalf("a renewed tunnel: %d", code)
	}
	clock.Advance(edgeplane.DefaultTunnelLease)
	if code, _, body := httpGet(t, srv.URL+"/"); code != http.StatusServiceUnavailable {
		t.Fatalf("an expired tunnel: %d %q, want 503", code, body)
	}
	if n := len(up.requests()); n != 2 {
		t.Errorf("the upstream got %d requests, want 2 (none after the lease ended)", n)
	}
}
