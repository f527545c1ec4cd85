package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/internal/syncbuf"
	"github.com/edgeplane/edgeplane/proxy"
)

// proxyProc is an edgeplane proxy process.
type proxyProc struct {
	name                 string
	http, https, metrics string // addresses
	agents, hop          string // with -tunnel-addr and -node-addr: the agents' and the hop's listeners
	node                 string // with -tunnel-addr: its edge node's ID
	tcpHost              string // the address of its TCP listeners, when the test set one
	stderr               *syncbuf.Buffer
	cmd                  *exec.Cmd
}

// startProxyProcess runs edgeplane proxy on spec as a subprocess, with
// every listener on a port of its choosing, and returns once it prints
// them.
func startProxyProcess(t *testing.T, name, spec string, env ...string) *proxyProc {
	t.Helper()
	return startProxyArgs(t, name, spec, nil, env...)
}

// startProxyArgs is startProxyProcess with more flags.
func startProxyArgs(t *testing.T, name, spec string, args []string, env ...string) *proxyProc {
	t.Helper()
	bin, err := buildBinary()
	if err != nil {
		t.Fatal(err)
	}
	p := &proxyProc{name: name, stderr: &syncbuf.Buffer{}}
	p.cmd = exec.Command(bin, append([]string{"proxy", "-store", spec, "-http-addr", "127.0.0.1:0", "-https-addr", "127.0.0.1:0", "-metrics-addr", "127.0.0.1:0"}, args...)...)
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stderr = p.stderr
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
		if t.Failed() {
			t.Logf("%s stderr (last 4 KiB): %s", name, tail(p.stderr.String(), 4096))
		}
	})
	up := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			if m := regexp.MustCompile(`^proxy on (https?)://(\S+)$`).FindStringSubmatch(line); m != nil {
				if m[1] == "http" {
					p.http = m[2]
				} else {
					p.https = m[2]
				}
			}
			if m := regexp.MustCompile(`^agents connect to (\S+) \(TLS\)$`).FindStringSubmatch(line); m != nil {
				p.agents = m[1]
			}
			if m := regexp.MustCompile(`^edge node (nd_\w+)$`).FindStringSubmatch(line); m != nil {
				p.node = m[1]
			}
			if m := regexp.MustCompile(`^other nodes hop to (\S+) \(mutual TLS\)$`).FindStringSubmatch(line); m != nil {
				p.hop = m[1]
			}
			if m := regexp.MustCompile(`^metrics on http://(\S+)/metrics$`).FindStringSubmatch(line); m != nil {
				p.metrics = m[1]
				close(up) // the last line before it serves
			}
		}
	}()
	select {
	case <-up:
		return p
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not start: %s", name, p.stderr)
		return nil
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// apiClient calls the management API with one account's key.
type apiClient struct {
	t         *testing.T
	base, key string
}

var apiHTTP = &http.Client{Timeout: 10 * time.Second}

// call sends a request and returns the status and the decoded body.
func (a apiClient) call(method, path, body string) (int, map[string]any) {
	a.t.Helper()
	req, _ := http.NewRequest(method, a.base+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+a.key)
	req.Header.Set("Service-Version", "2")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := apiHTTP.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	var v map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&v)
	return resp.StatusCode, v
}

// must calls and fails the test unless the status is want; it returns
// the body.
func (a apiClient) must(want int, method, path, body string) map[string]any {
	a.t.Helper()
	code, v := a.call(method, path, body)
	if code != want {
		a.t.Fatalf("%s %s: %d %v; want %d", method, path, code, v, want)
	}
	return v
}

// tenant is an HTTPS edge on its own hostname, set up through the API:
// the reserved domain, a tunnel group backend selecting app=<label>, the
// edge on host:443 with one route "/" to the backend, and a credential
// whose authtoken may bind the label.
type tenant struct {
	api                            apiClient
	host, label                    string
	domain, edge, route, credToken string
}

func newTenant(api apiClient, host, label string) *tenant {
	tn := &tenant{api: api, host: host, label: label}
	tn.domain = api.must(201, "POST", "/reserved_domains", `{"domain":"`+host+`"}`)["id"].(string)
	bk := api.must(201, "POST", "/backends/tunnel_group", `{"labels":{"app":"`+label+`"}}`)["id"].(string)
	tn.edge = api.must(201, "POST", "/edges/https", `{"hostports":["`+host+`:443"]}`)["id"].(string)
	tn.route = api.must(201, "POST", "/edges/https/"+tn.edge+"/routes", `{"match":"/","match_type":"path_prefix","backend":{"backend_id":"`+bk+`"}}`)["id"].(string)
	tn.credToken = api.must(201, "POST", "/credentials", `{"acl":["bind:app=`+label+`"]}`)["token"].(string)
	return tn
}

// adminRun runs edgeplane admin in this process and returns its output.
func adminRun(t *testing.T, spec string, args ...string) string {
	t.Helper()
	var out bytes.Buffer
	if code := run(context.Background(), append([]string{"admin", args[0], "-store", spec}, args[1:]...), func(string) string { return "" }, &out, &out, nil); code != 0 {
		t.Fatalf("admin %v: exit %d, %s", args, code, out.String())
	}
	return out.String()
}

// registerTunnel registers a tunnel of tn forwarding to upstream with
// edgeplane admin register-tunnel, and returns its ID and lease end.
func (tn *tenant) registerTunnel(t *testing.T, spec, upstream string, lease time.Duration) (string, time.Time) {
	t.Helper()
	out := adminRun(t, spec, "register-tunnel", "-token", tn.credToken, "-labels", "app="+tn.label, "-forwards-to", upstream, "-tunnel-lease", lease.String())
	m := regexp.MustCompile(`^(tn_\w+)\nlease ends (\S+)\n$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("register-tunnel printed %q", out)
	}
	end, err := time.Parse(time.RFC3339, m[2])
	if err != nil {
		t.Fatal(err)
	}
	return m[1], end
}

// upstream is an httptest server that answers "upstream <name> <path>"
// and counts the requests it gets by their X-Via header (the proxy that
// carried them, as the test's client names it).
type upstream struct {
	*httptest.Server
	mu   sync.Mutex
	hits map[string]int
}

func newUpstream(t *testing.T, name string) *upstream {
	u := &upstream{hits: map[string]int{}}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.hits[r.Header.Get("X-Via")]++
		u.mu.Unlock()
		fmt.Fprintf(w, "upstream %s %s", name, r.URL.Path)
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *upstream) count(via string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.hits[via]
}

// through returns a client whose every connection goes to addr, whatever
// the URL's host: the URL names the host (and so the Host header and
// the SNI) a client of the edge would use, addr is the proxy's listener.
// tlsConfig, when not nil, is the client's TLS config.
func through(addr string, tlsConfig *tls.Config) *http.Client {
	d := &net.Dialer{Timeout: 5 * time.Second}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, addr)
		},
		TLSClientConfig: tlsConfig,
	}}
}

// fetch sends GET url through c with X-Via: via and returns the status
// and body; a transport error is status 0 with the error's text.
func fetch(c *http.Client, url, via string) (int, string) {
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("X-Via", via)
	resp, err := c.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestProxyProcessesPostgres: edgeplane serve and two edgeplane proxy
// processes on one PostgreSQL (see proxyEndToEnd).
func TestProxyProcessesPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	proxyEndToEnd(t, freshPostgres(t), 2, sealKeyEnv)
}

// TestProxyProcessesSQLite is the same with one proxy, on a SQLite file:
// it runs on a machine without PostgreSQL.
func TestProxyProcessesSQLite(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	proxyEndToEnd(t, "sqlite:"+filepath.Join(t.TempDir(), "edgeplane.db"), 1)
}

// proxyEndToEnd runs edgeplane serve and n edgeplane proxy processes on
// spec (the first proxy starts before any edge exists, the others after:
// both the initial load and the following of the feed are exercised);
// two accounts each get an HTTPS edge on its own hostname whose tunnel
// forwards to its own upstream. Through every proxy: each hostname
// reaches its own upstream and an unknown one gets 404; a traffic policy
// PUT through the API applies within one second (the latencies are
// logged); a tunnel whose lease lapses stops receiving traffic while the
// other tunnel of its backend goes on.
func proxyEndToEnd(t *testing.T, spec string, n int, env ...string) {
	key := "epk_" + strings.Repeat("x", 40)
	api, _ := startProcess(t, spec, append(env, "EDGEPLANE_API_KEY="+key)...)
	proxies := []*proxyProc{startProxyProcess(t, "proxy1", spec, env...)}

	// Account A is the bootstrapped one; account B is onboarded with
	// edgeplane admin.
	apiA := apiClient{t: t, base: "http://" + api, key: key}
	acctB := strings.TrimSpace(adminRun(t, spec, "create-account", "-name", "tenant b"))
	userB := strings.TrimSpace(adminRun(t, spec, "create-user", "-account", acctB, "-name", "bee", "-admin"))
	keyB := regexp.MustCompile(`secret \(shown once\): (epk_\S+)`).FindStringSubmatch(adminRun(t, spec, "create-api-key", "-account", acctB, "-owner", userB))
	if keyB == nil {
		t.Fatal("create-api-key printed no secret")
	}
	apiB := apiClient{t: t, base: "http://" + api, key: keyB[1]}

	a := newTenant(apiA, "a.example.com", "a")
	b := newTenant(apiB, "b.example.com", "b")
	upA, upB, upB2 := newUpstream(t, "a"), newUpstream(t, "b"), newUpstream(t, "b2")
	a.registerTunnel(t, spec, upA.URL, time.Hour)
	b.registerTunnel(t, spec, upB.URL, time.Hour)
	for i := 2; i <= n; i++ {
		proxies = append(proxies, startProxyProcess(t, fmt.Sprintf("proxy%d", i), spec, env...))
	}

	// On the plain listener, an HTTPS edge's hostport (port 443) is named
	// by the Host header: http://a.example.com:443/.
	for _, p := range proxies {
		c := through(p.http, nil)
		for _, tn := range []*tenant{a, b} {
			url := "http://" + tn.host + ":443/hello"
			want := "upstream " + tn.label + " /hello"
			took, ok := within(5*time.Second, func() bool { code, body := fetch(c, url, p.name); return code == 200 && body == want })
			if !ok {
				code, body := fetch(c, url, p.name)
				t.Fatalf("%s: %s never reached its upstream: %d %q", p.name, tn.host, code, body)
			}
			t.Logf("%s serves %s %v after the check began", p.name, tn.host, took.Round(time.Millisecond))
			for range 5 {
				if code, body := fetch(c, url, p.name); code != 200 || body != want {
					t.Errorf("%s: %s: %d %q; want %q", p.name, url, code, body, want)
				}
			}
		}
		for _, url := range []string{"http://c.example.com:443/", "http://c.example.com/", "http://127.0.0.1/"} {
			if code, body := fetch(c, url, p.name); code != 404 || body != "no edge serves this host\n" {
				t.Errorf("%s: %s (no edge): %d %q; want 404", p.name, url, code, body)
			}
		}
	}

	// A traffic policy PUT through the API is applied by every proxy
	// within one second: measured from the PUT's answer to the first
	// request that a proxy answers with the new policy.
	lat := make([][]time.Duration, len(proxies))
	for round := 1; round <= 5; round++ {
		body := fmt.Sprintf("policy v%d", round)
		doc := fmt.Sprintf(`{"inbound":[{"actions":[{"type":"custom-response","config":{"status_code":418,"body":"%s"}}]}]}`, body)
		value, _ := json.Marshal(doc)
		apiA.must(200, "PUT", "/edges/https/"+a.edge+"/routes/"+a.route+"/traffic_policy", `{"value":`+string(value)+`}`)
		put := time.Now()
		var wg sync.WaitGroup
		for i, p := range proxies {
			wg.Go(func() {
				c := through(p.http, nil)
				if _, ok := within(time.Second, func() bool {
					code, got := fetch(c, "http://a.example.com:443/", p.name)
					return code == 418 && got == body
				}); !ok {
					t.Errorf("%s: %q not applied within 1s of the PUT", p.name, body)
					return
				}
				lat[i] = append(lat[i], time.Since(put))
			})
		}
		wg.Wait()
	}
	for i, p := range proxies {
		slices.Sort(lat[i])
		t.Logf("%s applied the traffic policy PUT after %v (5 rounds, sorted)", p.name, roundAll(lat[i]))
	}
	// The other tenant's edge is untouched.
	for _, p := range proxies {
		if code, body := fetch(through(p.http, nil), "http://b.example.com:443/", p.name); code != 200 || body != "upstream b /" {
			t.Errorf("%s: b.example.com after a's policy changed: %d %q", p.name, code, body)
		}
	}

	// A second tunnel of b's backend with a short lease: it gets its turn
	// (round-robin) while its lease runs, and no request at all once it
	// has lapsed (nothing renews it), while the first goes on.
	_, end := b.registerTunnel(t, spec, upB2.URL, 4*time.Second)
	for _, p := range proxies {
		c := through(p.http, nil)
		if _, ok := within(2*time.Second, func() bool { fetch(c, "http://b.example.com:443/", p.name); return upB2.count(p.name) > 0 }); !ok {
			t.Fatalf("%s: the short-lease tunnel never received traffic (lease ends %v)", p.name, end)
		}
	}
	time.Sleep(time.Until(end) + 10*time.Millisecond) // the lease is wall-clock time in another process
	before := map[string]int{}
	for _, p := range proxies {
		before[p.name] = upB2.count(p.name)
		c := through(p.http, nil)
		for range 10 {
			if code, body := fetch(c, "http://b.example.com:443/", p.name); code != 200 || body != "upstream b /" {
				t.Errorf("%s: after the lease lapsed: %d %q; want the tunnel under lease", p.name, code, body)
			}
		}
		if got := upB2.count(p.name); got != before[p.name] {
			t.Errorf("%s: the tunnel whose lease lapsed received %d requests after the lapse", p.name, got-before[p.name])
		}
	}

	// The metrics of a proxy: per edge and route, the unrouted requests,
	// and the state of its configs.
	for _, p := range proxies {
		_, m := get(t, "http://"+p.metrics+"/metrics", nil)
		for _, want := range []string{
			`edgeplane_proxy_requests_total{action="",code="2xx",edge="` + b.edge + `",route="` + b.route + `"}`,
			`edgeplane_proxy_requests_total{action="custom-response",code="4xx",edge="` + a.edge + `",route="` + a.route + `"}`,
			"edgeplane_proxy_edges 2",
			"edgeplane_proxy_config_store_failures_total 0", "edgeplane_store_operation_duration_seconds_count{op=\"changes\"}",
		} {
			if !strings.Contains(m, want) {
				t.Errorf("%s: metrics lack %s", p.name, want)
			}
		}
		// At least the three requests for hosts no edge serves (and any
		// the first checks sent before the edges were loaded).
		if n := metricValue(m, `edgeplane_proxy_unrouted_total{reason="unknown_host"}`); n < 3 {
			t.Errorf("%s: unrouted_total{reason=unknown_host} = %v, want at least 3", p.name, n)
		}
		if code, body := get(t, "http://"+p.metrics+"/healthz", nil); code != 200 || body != "ok\n" {
			t.Errorf("%s: /healthz: %d %q", p.name, code, body)
		}
	}
}

func roundAll(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(100 * time.Microsecond)
	}
	return out
}

// TestServeProxy: edgeplane serve -proxy runs the data plane in the API's
// process: an edge created through the API is served on -proxy-http-addr,
// a policy PUT applies to the next requests, and serve's /metrics has the
// data plane's metrics beside the API's.
func TestServeProxy(t *testing.T) {
	spec := "sqlite:" + filepath.Join(t.TempDir(), "edgeplane.db")
	key := "epk_" + strings.Repeat("s", 40)
	s := startServe(t, []string{"-store", spec, "-proxy", "-proxy-http-addr", "127.0.0.1:0", "-proxy-https-addr", "127.0.0.1:0", "-metrics-addr", "127.0.0.1:0"},
		map[string]string{"EDGEPLANE_API_KEY": key, "EDGEPLANE_RATE_LIMIT": "0"})
	out := s.stdout.String()
	proxyHTTP := regexp.MustCompile(`(?m)^proxy on http://(\S+)$`).FindStringSubmatch(out)
	proxyHTTPS := regexp.MustCompile(`(?m)^proxy on https://(\S+)$`).FindStringSubmatch(out)
	metricsAddr := regexp.MustCompile(`(?m)^metrics on http://(\S+)/metrics$`).FindStringSubmatch(out)
	if proxyHTTP == nil || proxyHTTPS == nil || metricsAddr == nil || !strings.Contains(out, "listening on http://"+s.addr) {
		t.Fatalf("stdout: %s", out)
	}
	api := apiClient{t: t, base: "http://" + s.addr, key: key}
	tn := newTenant(api, "dev.example.com", "dev")
	up := newUpstream(t, "dev")
	tn.registerTunnel(t, spec, up.URL, time.Hour)
	c := through(proxyHTTP[1], nil)
	if _, ok := within(5*time.Second, func() bool {
		code, body := fetch(c, "http://dev.example.com:443/x", "serve")
		return code == 200 && body == "upstream dev /x"
	}); !ok {
		code, body := fetch(c, "http://dev.example.com:443/x", "serve")
		t.Fatalf("serve -proxy: %d %q", code, body)
	}
	api.must(200, "PUT", "/edges/https/"+tn.edge+"/routes/"+tn.route+"/traffic_policy",
		`{"value":"{\"inbound\":[{\"actions\":[{\"type\":\"deny\",\"config\":{\"status_code\":451}}]}]}"}`)
	if took, ok := within(time.Second, func() bool { code, _ := fetch(c, "http://dev.example.com:443/x", "serve"); return code == 451 }); !ok {
		t.Errorf("the policy PUT is not applied by serve -proxy within 1s")
	} else {
		t.Logf("serve -proxy applied the policy PUT after %v", took)
	}
	if code, _ := fetch(c, "http://other.example.com:443/", "serve"); code != 404 {
		t.Errorf("unknown host: %d", code)
	}
	_, m := get(t, "http://"+metricsAddr[1]+"/metrics", nil)
	for _, want := range []string{`edgeplane_http_requests_total{code="200",method="PUT"`, `edgeplane_proxy_requests_total{action="deny",code="4xx",edge="` + tn.edge + `"`, "edgeplane_proxy_edges 1"} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if code := s.stop(); code != 0 || !strings.Contains(s.stdout.String(), "shut down") {
		t.Errorf("stop: exit %d, %s", code, s.stdout)
	}
	if _, err := net.DialTimeout("tcp", proxyHTTP[1], time.Second); err == nil {
		t.Errorf("the data plane still listens after serve stopped")
	}
}

// TestProxyCommand: edgeplane proxy in this process on serve's SQLite
// file: ready gives its first listener; the store's sealing key file is
// shared; -upstream-networks keeps it from connecting to a tunnel's
// upstream outside them; cancelling the context (SIGINT, SIGTERM) shuts
// it down gracefully.
func TestProxyCommand(t *testing.T) {
	spec := "sqlite:" + filepath.Join(t.TempDir(), "edgeplane.db")
	key := "epk_" + strings.Repeat("p", 40)
	s := startServe(t, []string{"-store", spec}, map[string]string{"EDGEPLANE_API_KEY": key, "EDGEPLANE_RATE_LIMIT": "0"})
	tn := newTenant(apiClient{t: t, base: "http://" + s.addr, key: key}, "net.example.com", "net")
	up := newUpstream(t, "net")
	tn.registerTunnel(t, spec, up.URL, time.Hour) // on 127.0.0.1, outside 192.0.2.0/24
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncbuf.Buffer
	ready := make(chan string, 1)
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"proxy", "-store", spec, "-https-addr", "127.0.0.1:0", "-http-addr", "127.0.0.1:0", "-log-format", "json",
			"-upstream-networks", "192.0.2.0/24"},
			func(string) string { return "" }, &stdout, &stderr, ready)
	}()
	var addr string
	select {
	case addr = <-ready:
	case code := <-done:
		t.Fatalf("proxy exited with %d: %s %s", code, stdout.String(), stderr.String())
	case <-time.After(20 * time.Second):
		t.Fatal("proxy not ready")
	}
	out := stdout.String()
	if !strings.Contains(out, "proxy: 1 edges loaded at revision ") || !strings.Contains(out, "proxy on http://"+addr+"\n") ||
		!strings.Contains(out, "proxy on https://127.0.0.1:") || strings.Contains(out, "sealing key") {
		t.Errorf("stdout: %s", out)
	}
	if code, body := fetch(through(addr, nil), "http://nothing.example.com:443/", "cmd"); code != 404 || body != "no edge serves this host\n" {
		t.Errorf("unknown host: %d %q", code, body)
	}
	if code, body := fetch(through(addr, nil), "http://net.example.com:443/", "cmd"); code != 502 || up.count("cmd") != 0 {
		t.Errorf("a tunnel outside -upstream-networks: %d %q, upstream reached %d times; want 502 and none", code, body, up.count("cmd"))
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 || !strings.HasSuffix(stdout.String(), "shut down\n") {
			t.Errorf("exit %d: %s %s", code, stdout.String(), stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no graceful shutdown")
	}
	if !strings.Contains(stderr.String(), `"msg":"edges loaded"`) {
		t.Errorf("-log-format json not applied: %s", stderr.String())
	}
}

// relay forwards TCP connections from its address to target until cut.
type relay struct {
	t      *testing.T
	target string
	addr   string
	mu     sync.Mutex
	ln     net.Listener
	conns  []net.Conn
}

// startRelay listens on addr and forwards to target.
func startRelay(t *testing.T, addr, target string) *relay {
	r := &relay{t: t, target: target}
	r.listen(addr)
	t.Cleanup(r.cut)
	return r
}

func (r *relay) listen(addr string) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		r.t.Fatal(err)
	}
	r.mu.Lock()
	r.ln, r.addr = ln, ln.Addr().String()
	r.mu.Unlock()
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", r.target)
			if err != nil {
				in.Close()
				continue
			}
			r.mu.Lock()
			r.conns = append(r.conns, in, out)
			r.mu.Unlock()
			go func() { _, _ = io.Copy(out, in); out.Close() }()
			go func() { _, _ = io.Copy(in, out); in.Close() }()
		}
	}()
}

// cut closes the listener and every connection: the target is
// unreachable through the relay.
func (r *relay) cut() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ln != nil {
		r.ln.Close()
		r.ln = nil
	}
	for _, c := range r.conns {
		c.Close()
	}
	r.conns = nil
}

// restore listens again on the same address.
func (r *relay) restore() { r.listen(r.addr) }

// metricValue returns the value of the sample named exactly name (with
// its labels) in a Prometheus text exposition, or -1.
func metricValue(exposition, name string) float64 {
	for line := range strings.Lines(exposition) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+" "); ok {
			var f float64
			if _, err := fmt.Sscan(v, &f); err == nil {
				return f
			}
		}
	}
	return -1
}

// TestProxyStoreOutagePostgres: a proxy whose PostgreSQL becomes
// unreachable (its connections go through a relay the test cuts) keeps
// serving the last config it read, and applies the change made through
// the API meanwhile once the store is reachable again.
func TestProxyStoreOutagePostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	spec := freshPostgres(t)
	u, err := url.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	rl := startRelay(t, "127.0.0.1:0", u.Host)
	viaRelay := *u
	viaRelay.Host = rl.addr
	key := "epk_" + strings.Repeat("o", 40)
	api, _ := startProcess(t, spec, sealKeyEnv, "EDGEPLANE_API_KEY="+key)
	p := startProxyProcess(t, "proxy", viaRelay.String(), sealKeyEnv)
	apiA := apiClient{t: t, base: "http://" + api, key: key}
	a := newTenant(apiA, "a.example.com", "a")
	up := newUpstream(t, "a")
	a.registerTunnel(t, spec, up.URL, time.Hour)
	c := through(p.http, nil)
	serves := func() bool {
		code, body := fetch(c, "http://a.example.com:443/", "p")
		return code == 200 && body == "upstream a /"
	}
	if _, ok := within(5*time.Second, serves); !ok {
		t.Fatal("the proxy never served the edge")
	}
	failures := func() float64 {
		_, m := get(t, "http://"+p.metrics+"/metrics", nil)
		return metricValue(m, "edgeplane_proxy_config_store_failures_total")
	}
	if f := failures(); f != 0 {
		t.Fatalf("store failures before the outage: %v", f)
	}

	rl.cut()
	apiA.must(200, "PUT", "/edges/https/"+a.edge+"/routes/"+a.route+"/traffic_policy",
		`{"value":"{\"inbound\":[{\"actions\":[{\"type\":\"deny\",\"config\":{\"status_code\":451}}]}]}"}`)
	// For two seconds the proxy cannot read the change: it serves the
	// config it has, without a failed request.
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); {
		if !serves() {
			code, body := fetch(c, "http://a.example.com:443/", "p")
			t.Fatalf("while the store is unreachable: %d %q; want the last good config served", code, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("store failures the proxy counted during the outage: %v", failures())

	rl.restore()
	if took, ok := within(20*time.Second, func() bool { code, _ := fetch(c, "http://a.example.com:443/", "p"); return code == 451 }); !ok {
		t.Error("the change made during the outage is not applied 20s after the store came back")
	} else {
		t.Logf("the change made during the outage was applied %v after the store came back", took.Round(time.Millisecond))
	}
}

// TestProxySealingKey: a proxy opens the certificates' keys with serve's
// sealing key: without it (no EDGEPLANE_SEAL_KEY, no key file beside the
// database) it refuses to start and makes no key of its own; with another
// key it refuses too.
func TestProxySealingKey(t *testing.T) {
	dir := t.TempDir()
	spec := "sqlite:" + filepath.Join(dir, "edgeplane.db")
	s := startServe(t, []string{"-store", spec}, map[string]string{"EDGEPLANE_SEAL_KEY": "QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUE="})
	s.stop()
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"no key", nil, "no sealing key: set EDGEPLANE_SEAL_KEY to the key edgeplane serve uses, or keep its key file " + filepath.Join(dir, "edgeplane.db.sealkey")},
		{"another key", map[string]string{"EDGEPLANE_SEAL_KEY": "QkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkI="}, "sealed under another sealing key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			code := run(context.Background(), []string{"proxy", "-store", spec, "-http-addr", "127.0.0.1:0"}, func(k string) string { return tc.env[k] }, &out, &out, nil)
			if code != 1 || !strings.Contains(out.String(), tc.want) {
				t.Errorf("exit %d, %q; want 1 and %q", code, out.String(), tc.want)
			}
			if _, err := os.Stat(filepath.Join(dir, "edgeplane.db.sealkey")); err == nil {
				t.Error("the proxy made a key file")
			}
		})
	}
}

// TestDataPlaneFlags: the data plane's flags, under their names in proxy
// and serve -proxy, reach its servers.
func TestDataPlaneFlags(t *testing.T) {
	for _, prefix := range []string{"", "proxy-"} {
		var c dataPlaneConfig
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		c.flags(fs, prefix, "")
		env := map[string]string{"EDGEPLANE_" + strings.ToUpper(strings.ReplaceAll(prefix, "-", "_")) + "WRITE_TIMEOUT": "7m"}
		if err := parseFlags(fs, []string{"-" + prefix + "https-addr", ":443", "-" + prefix + "read-timeout", "3s", "-" + prefix + "trusted-proxies", "10.0.0.0/8",
			"-" + prefix + "upstream-networks", "192.0.2.0/24,::1"},
			func(k string) string { return env[k] }, io.Discard); err != nil {
			t.Fatal(err)
		}
		trusted, err := c.check(prefix)
		if err != nil {
			t.Fatal(err)
		}
		o := c.serverOptions(nil)
		if c.httpsAddr != ":443" || len(trusted) != 1 || trusted[0].String() != "10.0.0.0/8" || o.ReadTimeout != 3*time.Second || o.WriteTimeout != 7*time.Minute ||
			c.upstreamTimeout != 30*time.Second || fmt.Sprint(c.upstreamNets) != "[192.0.2.0/24 ::1/128]" {
			t.Errorf("prefix %q: %+v, trusted %v, options %+v", prefix, c, trusted, o)
		}
		c.upstreamNetworks = "10.0.0.0/8,nope"
		if _, err := c.check(prefix); err == nil || !strings.Contains(err.Error(), "-"+prefix+`upstream-networks: network 2: "nope"`) {
			t.Errorf("prefix %q: a bad -upstream-networks gave %v", prefix, err)
		}
		c.upstreamNetworks, c.oidcNetworks = "", "10.9.0.0/16"
		if _, err := c.check(prefix); err != nil || fmt.Sprint(c.oidcNets) != "[10.9.0.0/16]" {
			t.Errorf("prefix %q: -oidc-networks 10.9.0.0/16: %v, %v", prefix, c.oidcNets, err)
		}
		c.oidcNetworks = "bad"
		if _, err := c.check(prefix); err == nil || !strings.Contains(err.Error(), "-"+prefix+"oidc-networks") {
			t.Errorf("prefix %q: a bad -oidc-networks gave %v", prefix, err)
		}
		c.oidcNetworks = ""
		if c.tcpLow != 0 || c.idleTimeout != 5*time.Minute || c.maxConnsPerEdge != 1024 {
			t.Errorf("prefix %q: TCP defaults %+v", prefix, c)
		}
		c.tcpPorts = "20000-20999"
		if _, err := c.check(prefix); err != nil || c.tcpLow != 20000 || c.tcpHigh != 20999 {
			t.Errorf("prefix %q: -tcp-ports 20000-20999: %d-%d, %v", prefix, c.tcpLow, c.tcpHigh, err)
		}
		for _, bad := range []string{"20000", "0-10", "10-5", "1-65536", "a-b", "-", "20000-"} {
			c.tcpPorts = bad
			if _, err := c.check(prefix); err == nil || !strings.Contains(err.Error(), "-"+prefix+"tcp-ports") {
				t.Errorf("prefix %q: -tcp-ports %q gave %v", prefix, bad, err)
			}
		}
		c.tcpPorts, c.maxConnsPerEdge = "", 0
		if _, err := c.check(prefix); err == nil || !strings.Contains(err.Error(), "max-conns-per-edge") {
			t.Errorf("prefix %q: -max-conns-per-edge 0 gave %v", prefix, err)
		}
		c.maxConnsPerEdge = 1
		if c.maxHeaderBytes != proxy.DefaultMaxResponseHeaderBytes {
			t.Errorf("prefix %q: -max-response-header-bytes defaults to %d, want %d", prefix, c.maxHeaderBytes, proxy.DefaultMaxResponseHeaderBytes)
		}
		if err := fs.Set(prefix+"max-response-header-bytes", "8192"); err != nil || c.maxHeaderBytes != 8192 {
			t.Errorf("prefix %q: -max-response-header-bytes 8192 gave %d, %v", prefix, c.maxHeaderBytes, err)
		}
		if _, err := c.check(prefix); err != nil {
			t.Errorf("prefix %q: -max-response-header-bytes 8192 gave %v", prefix, err)
		}
		for _, bad := range []int{0, -1, 1023} {
			c.maxHeaderBytes = bad
			want := fmt.Sprintf("-%smax-response-header-bytes %d: want at least 1024", prefix, bad)
			if _, err := c.check(prefix); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("prefix %q: -max-response-header-bytes %d gave %v; want %q", prefix, bad, err, want)
			}
		}
		c.maxHeaderBytes = 1024
		certFile, keyFile := writeTunnelCert(t, t.TempDir())
		for _, bad := range []struct {
			addr, cert, key, want string
		}{
			{":4443", certFile, "", "-" + prefix + "tunnel-cert and -" + prefix + "tunnel-key go together"},
			{":4443", "", keyFile, "-" + prefix + "tunnel-cert and -" + prefix + "tunnel-key go together"},
			{"", certFile, keyFile, "-" + prefix + "tunnel-cert needs -" + prefix + "tunnel-addr"},
			{":4443", keyFile, keyFile, "-" + prefix + "tunnel-cert/-" + prefix + "tunnel-key"},
			{":4443", certFile + ".missing", keyFile, "no such file"},
		} {
			c.tunnelAddr, c.tunnelCert, c.tunnelKey = bad.addr, bad.cert, bad.key
			if _, err := c.check(prefix); err == nil || !strings.Contains(err.Error(), bad.want) {
				t.Errorf("prefix %q: tunnel flags %+v gave %v; want %q", prefix, bad, err, bad.want)
			}
		}
		c.tunnelAddr, c.tunnelCert, c.tunnelKey = ":4443", certFile, keyFile
		if _, err := c.check(prefix); err != nil || c.tunnelTLS == nil || len(c.tunnelTLS.Certificates) != 1 {
			t.Errorf("prefix %q: good tunnel flags gave %v", prefix, err)
		}
	}
}
