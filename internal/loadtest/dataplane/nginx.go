package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/edgeplane/edgeplane/internal/loadtest/loadkit"
)

// The pinned comparison with nginx (-nginx): a reverse proxy's CPU per
// request, with the proxy alone on one core and everything else on the
// other.
//
//   - core 0 (-proxy-cpu): the proxy under test, one at a time: nginx as a
//     reverse proxy with one worker (master_process off: the worker is the
//     process measured), the edgeplane proxy (proxy.Handler, as -serve
//     proxy, no traffic policy) with GOMAXPROCS=1, and Go's
//     httputil.ReverseProxy (the harness's "bare") with GOMAXPROCS=1;
//   - core 1 (-load-cpu): wrk (one thread) and the upstream, an nginx that
//     answers every request with a 1 KiB body from a file.
//
// nginx proxies over HTTP/1.1 with a keep-alive pool of 256 connections
// to the upstream and sets Host and the X-Forwarded-* headers as the
// edgeplane proxy does; neither logs requests. The CPU time per request
// is read from /proc/PID/stat (user + system) of the proxy's process
// before and after each wrk run, divided by the requests wrk completed:
// on a machine shared with other work this moves less than req/s, since
// a proxy that waits for its core spends no CPU meanwhile.

// nginxBody is the size of the upstream's answer.
const nginxBody = 1 << 10

// nginxCase is one proxy of the pinned comparison.
type nginxCase struct {
	name string
	addr string
	pid  func() int
	stop func()
}

// pinnedHarness runs the pinned comparison: rounds of every case in turn
// (each round starting with the next case), one row each, then the
// medians and the median of the per-round ratios of CPU per request to
// nginx's.
func pinnedHarness(hosts, rounds int, d time.Duration, conns int, proxyCPU, loadCPU, cpuprofile string) error {
	for _, bin := range []string{"wrk", "nginx", "taskset"} {
		if _, err := exec.LookPath(bin); err != nil {
			return fmt.Errorf("%s not found: apt-get install -y nginx-light wrk util-linux", bin)
		}
	}
	tmp, err := os.MkdirTemp("", "dataplane-nginx")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	script := filepath.Join(tmp, "hosts.lua")
	if err := os.WriteFile(script, []byte(luaScript(hosts)), 0o644); err != nil {
		return err
	}
	var stops []func()
	defer func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}()

	up, err := startNginx(tmp, "upstream", loadCPU, "", 0)
	if err != nil {
		return err
	}
	stops = append(stops, up.stop)
	upURL := "http://" + up.addr

	ng, err := startNginx(tmp, "nginx", proxyCPU, up.addr, 256)
	if err != nil {
		return err
	}
	stops = append(stops, ng.stop)
	cases := []nginxCase{ng}
	for _, sp := range []struct{ name, kind string }{{"proxy", "proxy"}, {"bare", "bare"}} {
		args := []string{"-serve", sp.kind, "-upstream", upURL}
		if sp.kind == "proxy" {
			args = append(args, "-policy", "none", "-hosts", strconv.Itoa(hosts), "-cpuprofile", cpuprofile)
		}
		s, err := startPinned(sp.name, proxyCPU, args...)
		if err != nil {
			return err
		}
		stops = append(stops, s.stop)
		cases = append(cases, nginxCase{name: sp.name, addr: s.addr, pid: func() int { return s.cmd.Process.Pid }, stop: s.stop})
	}
	for _, c := range cases {
		if err := checkBody(c, hosts); err != nil {
			return err
		}
	}

	fmt.Printf("pinned: the proxy on CPU %s (nginx: 1 worker; edgeplane and Go's ReverseProxy: GOMAXPROCS=1); wrk -t1 -c%d -d%v and the upstream (nginx, %d-byte answers) on CPU %s; %d hostnames, %d rounds, interleaved\n\n",
		proxyCPU, conns, d, nginxBody, loadCPU, hosts, rounds)
	wrk := func(addr string, d time.Duration) (result, error) {
		return measurePinned(loadCPU, addr, script, d, conns)
	}
	for _, c := range cases { // warm up: connection pools, heaps
		if _, err := wrk(c.addr, time.Second); err != nil {
			return err
		}
	}
	fmt.Println("| round | case | req/s | p50 | p99 | proxy CPU µs/req | upstream CPU µs/req | non-2xx |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	results := map[string][]result{}
	for round := 1; round <= rounds; round++ {
		for k := range cases {
			c := cases[(k+round-1)%len(cases)]
			cpu0, up0 := loadkit.CPUTime(c.pid()), loadkit.CPUTime(up.pid())
			r, err := wrk(c.addr, d)
			if err != nil {
				return err
			}
			r.cpu, r.upCPU = loadkit.CPUTime(c.pid())-cpu0, loadkit.CPUTime(up.pid())-up0
			results[c.name] = append(results[c.name], r)
			fmt.Printf("| %d | %s | %.0f | %v | %v | %.1f | %.1f | %d%s |\n", round, c.name, r.rps, r.p50, r.p99,
				µs(r.cpuPerRequest()), µs(time.Duration(float64(r.upCPU)/r.requests)), r.non2xx, strings.TrimPrefix(" "+r.errors, " "))
			if r.non2xx > 0 {
				return fmt.Errorf("%s answered non-2xx: %d", c.name, r.non2xx)
			}
		}
	}
	perRound := func(a, b string, f func(result) float64) float64 {
		v := make([]result, rounds)
		for i := range v {
			v[i].rps = f(results[a][i]) / f(results[b][i])
		}
		return median(v, func(r result) float64 { return r.rps })
	}
	cpu := func(r result) float64 { return float64(r.cpuPerRequest()) }
	rps := func(r result) float64 { return r.rps }
	fmt.Println()
	fmt.Println("| case | median req/s | median p50 | median p99 | median proxy CPU µs/req | CPU/req vs nginx | req/s vs nginx |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for _, c := range cases {
		rs := results[c.name]
		fmt.Printf("| %s | %.0f | %v | %v | %.1f | %.2f | %.2f |\n", c.name, median(rs, rps),
			time.Duration(median(rs, func(r result) float64 { return float64(r.p50) })).Round(time.Microsecond),
			time.Duration(median(rs, func(r result) float64 { return float64(r.p99) })).Round(time.Microsecond),
			µs(time.Duration(median(rs, cpu))), perRound(c.name, "nginx", cpu), perRound(c.name, "nginx", rps))
	}
	r := perRound("proxy", "nginx", cpu)
	fmt.Printf("\nedgeplane proxy CPU per request / nginx's = %.2f (target <= 2.0): %s\n", r, verdict(r <= 2.0))
	return nil
}

// startPinned starts this binary with args on cpus with GOMAXPROCS=1.
func startPinned(name, cpus string, args ...string) (*server, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return startCmd(name, append([]string{"taskset", "-c", cpus, "env", "GOMAXPROCS=1", self}, args...)...)
}

// startNginx starts nginx on cpus in a process of its own (no master):
// with upstream "" the upstream, answering a nginxBody-byte file to
// every GET; else a reverse proxy to upstream with keepalive idle
// connections.
func startNginx(tmp, name, cpus, upstream string, keepalive int) (nginxCase, error) {
	dir := filepath.Join(tmp, name)
	if err := os.MkdirAll(filepath.Join(dir, "www"), 0o755); err != nil {
		return nginxCase{}, err
	}
	port, err := freePort()
	if err != nil {
		return nginxCase{}, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	var site string
	if upstream == "" {
		if err := os.WriteFile(filepath.Join(dir, "www", "index.html"), []byte(strings.Repeat("x", nginxBody-1)+"\n"), 0o644); err != nil {
			return nginxCase{}, err
		}
		site = fmt.Sprintf(`default_type text/plain; root %s; location / { try_files /index.html =404; }`, filepath.Join(dir, "www"))
	} else {
		site = `location / {
      proxy_pass http://up;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $http_host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_set_header X-Forwarded-Host $http_host;
      proxy_set_header X-Forwarded-Proto $scheme;
    }`
	}
	var ups string
	if upstream != "" {
		ups = fmt.Sprintf("upstream up { server %s; keepalive %d; }", upstream, keepalive)
	}
	conf := fmt.Sprintf(`daemon off;
master_process off;
worker_processes 1;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log warn;
worker_rlimit_nofile 65536;
events { worker_connections 16384; }
http {
  access_log off;
  client_body_temp_path %[1]s/body;
  proxy_temp_path %[1]s/proxy;
  keepalive_requests 1000000;
  %[2]s
  server {
    listen %[3]s backlog=4096;
    %[4]s
  }
}
`, dir, ups, addr, site)
	cf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(cf, []byte(conf), 0o644); err != nil {
		return nginxCase{}, err
	}
	cmd := exec.Command("taskset", "-c", cpus, "nginx", "-p", dir, "-e", filepath.Join(dir, "error.log"), "-c", cf)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return nginxCase{}, err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	stop := func() {
		_ = cmd.Process.Signal(os.Interrupt) // nginx: fast shutdown
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			_ = c.Close()
			break
		}
		select {
		case <-done:
			return nginxCase{}, fmt.Errorf("nginx %s exited: %s", name, out.String())
		default:
		}
		if time.Now().After(deadline) {
			stop()
			return nginxCase{}, fmt.Errorf("nginx %s did not listen on %s: %s", name, addr, out.String())
		}
	}
	return nginxCase{name: name, addr: addr, pid: func() int { return cmd.Process.Pid }, stop: stop}, nil
}

// freePort returns a port that was free a moment ago (nginx must be told
// its port; a clash fails its start, and the harness with it).
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// checkBody sends one request through c for a few hosts and wants the
// upstream's 1 KiB body.
func checkBody(c nginxCase, hosts int) error {
	hc := &http.Client{Timeout: 5 * time.Second}
	for _, i := range []int{0, hosts - 1} {
		req, _ := http.NewRequest(http.MethodGet, "http://"+c.addr+"/", nil)
		req.Host = hostname(i) + ":443"
		resp, err := hc.Do(req)
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK || len(b) != nginxBody {
			return fmt.Errorf("%s: %s answered %d with %d bytes, want 200 with %d", c.name, req.Host, resp.StatusCode, len(b), nginxBody)
		}
	}
	return nil
}

// measurePinned runs wrk (one thread) on cpus against addr.
func measurePinned(cpus, addr, script string, d time.Duration, conns int) (result, error) {
	out, err := exec.Command("taskset", "-c", cpus, "wrk", "-t1", "-c"+strconv.Itoa(conns), "-d"+d.String(),
		"--latency", "-s", script, "http://"+addr+"/").CombinedOutput()
	if err != nil {
		return result{}, fmt.Errorf("wrk: %v\n%s", err, out)
	}
	return parseWrk(out)
}

// errNoRPS is wrk's report without a req/s line.
var errNoRPS = errors.New("wrk printed no req/s")
