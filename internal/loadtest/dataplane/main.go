// Command dataplane is the load harness of the edge data plane (package
// proxy): in one run, interleaved, it measures with wrk over loopback
//
//   - bare: a bare httputil.ReverseProxy in front of the upstream, the
//     reference;
//   - proxy: proxy.Handler over proxy.Configs on a memstore Service with
//     1,000 HTTPS edges, no traffic policy;
//   - proxy+limit: the same with a rate-limit traffic policy on every route
//     (capacity 2,000,000,000 a minute per client IP: it never refuses);
//   - proxy+refuse: the same with a capacity of 1 a minute (after the
//     first request of each edge every request is refused with 429; the
//     proxy answers without the upstream).
//
// Each edge has one hostport, hNNNN.load.example.com:443, under one
// wildcard reserved domain of one account, and one route "/" whose backend
// selects one tunnel forwarding to the upstream: a net/http server
// answering a 13-byte body. wrk's Lua script sends each request with the
// Host of the next edge in turn (every thread walks all the hostnames);
// the bare reverse proxy forwards any Host, so it serves the same
// requests. Both reverse proxies use the same transport settings (the
// proxy's default: 256 idle connections per upstream, no compression),
// the same 32 KiB copy-buffer pool and the same http.Server bounds
// (package httpserver).
//
// Every server runs in a process of its own (this binary started again
// with -serve), apart from wrk and from the upstream, so that on a
// 2-core machine no server shares its Go scheduler or heap with the load
// generator or with another case. The harness itself sleeps while wrk
// runs.
//
//	go run ./internal/loadtest/dataplane                       # 5 rounds of 5s at 64 connections
//	go run ./internal/loadtest/dataplane -rounds 5 -duration 10s -conns 32
//	go run ./internal/loadtest/dataplane -cpuprofile /tmp/prof # CPU profile of each proxy process
//	go run ./internal/loadtest/dataplane -nginx                # instead: CPU per request beside nginx, pinned (nginx.go)
//
// With -together (the default) it then measures pairs at the same time
// (bare with proxy, proxy with proxy+limit: two wrk processes started
// together, half the connections each), whose req/s ratio is steadier on
// a busy machine.
//
// It prints one row per round and case (req/s, p50, p99, the server
// process's CPU time per request read from /proc, non-2xx), then the
// medians per case and the medians of the per-round ratios: proxy/bare
// (target >= 0.90) and the rate-limit policy's cost against the proxy
// without policy (target under 10%). A run fails when a case that must
// answer 200 answers anything else. On a machine shared with other work
// req/s and latency move by tens of percent from round to round; the CPU
// time per request moves less, and more rounds narrow the medians.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/edgeplane/edgeplane/internal/loadtest/loadkit"
	"io"
	"log"
	"math"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/credentials"
	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/httpserver"
	"github.com/edgeplane/edgeplane/identity"
	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/proxy"
)

// upstreamBody is what the upstream answers.
const upstreamBody = "hello, world\n"

// policies are the traffic policies of the proxy cases, by case.
var policies = map[string]string{
	"none": "",
	"limit": `{"inbound":[{"actions":[{"type":"rate-limit","config":{"name":"load","algorithm":"sliding_window",` +
		`"capacity":2000000000,"rate":"60s","bucket_key":["conn.client_ip"]}}]}]}`,
	"refuse": `{"inbound":[{"actions":[{"type":"rate-limit","config":{"name":"load","algorithm":"sliding_window",` +
		`"capacity":1,"rate":"60s","bucket_key":["conn.client_ip"]}}]}]}`,
}

func main() {
	serve := flag.String("serve", "", "internal: run one server (upstream, bare, proxy) instead of the harness")
	upstream := flag.String("upstream", "", "internal: the upstream URL of bare and proxy")
	pol := flag.String("policy", "none", "internal: the traffic policy of proxy (none, limit, refuse)")
	hosts := flag.Int("hosts", 1000, "edges, one hostname each")
	rounds := flag.Int("rounds", 5, "measured rounds; each round runs every case once")
	duration := flag.Duration("duration", 5*time.Second, "wrk duration of one measurement")
	conns := flag.Int("conns", 64, "wrk connections")
	threads := flag.Int("threads", 2, "wrk threads")
	refuse := flag.Bool("refuse", true, "also measure the refusing rate limit")
	together := flag.Bool("together", true, "also measure pairs of cases at the same time (bare with proxy, proxy with proxy+limit)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of each proxy process (under load only) into this directory")
	vsNginx := flag.Bool("nginx", false, "instead: the pinned comparison with nginx (see nginx.go): each proxy alone on -proxy-cpu, wrk and an nginx upstream on -load-cpu")
	proxyCPU := flag.String("proxy-cpu", "0", "with -nginx: the CPU list (taskset -c) of the proxy under test")
	loadCPU := flag.String("load-cpu", "1", "with -nginx: the CPU list of wrk and the upstream")
	flag.Parse()
	log.SetFlags(0)
	if *serve != "" {
		if err := runServer(*serve, *upstream, *pol, *hosts, *cpuprofile); err != nil {
			log.Fatalf("%s: %v", *serve, err)
		}
		return
	}
	if *vsNginx {
		if err := pinnedHarness(*hosts, *rounds, *duration, *conns, *proxyCPU, *loadCPU, *cpuprofile); err != nil {
			log.Fatal(err)
		}
		return
	}
	if err := harness(*hosts, *rounds, *duration, *conns, *threads, *refuse, *together, *cpuprofile); err != nil {
		log.Fatal(err)
	}
}

// hostname returns the hostname of edge i.
func hostname(i int) string { return fmt.Sprintf("h%04d.load.example.com", i) }

// runServer runs one server on 127.0.0.1, prints "listening ADDR" once it
// accepts connections, and returns when its standard input ends (the
// harness exited or closed it).
func runServer(kind, upstream, pol string, hosts int, cpuprofile string) error {
	var srv *http.Server
	switch kind {
	case "upstream":
		body := []byte(upstreamBody)
		srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
			_, _ = w.Write(body)
		})}
	case "bare":
		u, err := url.Parse(upstream)
		if err != nil {
			return err
		}
		srv = httpserver.New(bareProxy(u), httpserver.Options{})
	case "proxy":
		doc, ok := policies[pol]
		if !ok {
			return fmt.Errorf("unknown policy %q", pol)
		}
		ph, stop, err := newProxy(upstream, doc, hosts)
		if err != nil {
			return err
		}
		defer stop()
		srv = ph.Server(false, httpserver.Options{})
	default:
		return fmt.Errorf("unknown server %q", kind)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	go func() { _ = srv.Serve(ln) }()
	if cpuprofile != "" && kind == "proxy" {
		f, err := os.Create(filepath.Join(cpuprofile, "proxy-"+pol+".pprof"))
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer func() { pprof.StopCPUProfile(); _ = f.Close() }()
	}
	fmt.Printf("listening %s\n", ln.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin)
	return srv.Close()
}

// bareProxy is the reference: a ReverseProxy that sends every request to
// u with the incoming Host, as the proxy does, over the proxy's default
// transport settings and buffer pool.
func bareProxy(u *url.URL) *httputil.ReverseProxy {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 1024
	t.MaxIdleConnsPerHost = 256
	t.DisableCompression = true
	t.ResponseHeaderTimeout = proxy.DefaultUpstreamTimeout
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.SetXForwarded()
			pr.Out.Host = pr.In.Host
		},
		Transport:  t,
		BufferPool: bufferPool{},
		ErrorLog:   log.New(io.Discard, "", 0), // as the proxy's discarded logger: wrk cuts requests off at its end
	}
}

// bufferPool is the proxy's copy-buffer pool, for the bare reverse proxy.
type bufferPool struct{}

var buffers = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

func (bufferPool) Get() []byte  { return *buffers.Get().(*[]byte) }
func (bufferPool) Put(b []byte) { buffers.Put(&b) }

// newProxy builds a memstore Service with one account, a wildcard
// reserved domain, hosts HTTPS edges (route "/" with the policy doc, if
// any, and a backend whose one tunnel forwards to upstream), and returns
// the proxy's Handler over them once every edge is loaded.
func newProxy(upstream, doc string, hosts int) (*proxy.Handler, func(), error) {
	ctx := context.Background()
	st := memstore.New()
	svc, err := edgeplane.New(st, edgeplane.Options{TunnelLease: 24 * time.Hour})
	if err != nil {
		return nil, nil, err
	}
	acct, err := svc.Host().CreateAccount(ctx, identity.AccountParams{Name: "load"})
	if err != nil {
		return nil, nil, err
	}
	user, err := svc.Host().CreateUser(ctx, acct.ID, identity.SubjectParams{Name: "admin", Admin: true})
	if err != nil {
		return nil, nil, err
	}
	p := edgeplane.Principal{AccountID: acct.ID, SubjectID: user.ID, Admin: true}
	if _, err := svc.CreateReservedDomain(ctx, p, domains.CreateParams{Domain: "*.load.example.com"}); err != nil {
		return nil, nil, fmt.Errorf("reserved domain: %w", err)
	}
	labels := map[string]string{"app": "load"}
	bk, err := svc.CreateTunnelGroupBackend(ctx, p, backends.CreateParams{Labels: labels})
	if err != nil {
		return nil, nil, err
	}
	cred, err := svc.CreateCredential(ctx, p, credentials.CreateParams{ACL: []string{"bind:app=load"}})
	if err != nil {
		return nil, nil, err
	}
	if _, err := svc.Host().RegisterTunnel(ctx, *cred.Token, backends.RegisterTunnelParams{Labels: labels, ForwardsTo: upstream}); err != nil {
		return nil, nil, fmt.Errorf("tunnel: %w", err)
	}
	for i := range hosts {
		e, err := svc.CreateHTTPSEdge(ctx, p, edges.CreateEdgeParams{Hostports: []string{hostname(i) + ":443"}})
		if err != nil {
			return nil, nil, fmt.Errorf("edge %d: %w", i, err)
		}
		rp := edges.CreateRouteParams{MatchType: edges.MatchPathPrefix, Match: "/", Backend: &edges.BackendParams{BackendID: bk.ID}}
		if doc != "" {
			rp.TrafficPolicy = &edges.TrafficPolicyParams{Value: doc}
		}
		if _, err := svc.CreateHTTPSEdgeRoute(ctx, p, e.ID, rp); err != nil {
			return nil, nil, fmt.Errorf("route %d: %w", i, err)
		}
	}
	cfgs, err := proxy.New(ctx, svc.Host().DataPlane(), st, proxy.Options{})
	if err != nil {
		return nil, nil, err
	}
	rev, err := st.Revision(ctx)
	if err != nil {
		return nil, nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := cfgs.WaitRevision(wctx, rev); err != nil {
		return nil, nil, err
	}
	if s := cfgs.Stats(); s.Edges != hosts {
		return nil, nil, fmt.Errorf("%d edges loaded, want %d", s.Edges, hosts)
	}
	for i := range hosts {
		e := cfgs.EdgeByHostport(hostname(i) + ":443")
		if e == nil || len(e.Config.Routes) != 1 || (e.Config.Routes[0].TrafficPolicy != nil) != (doc != "") {
			return nil, nil, fmt.Errorf("edge %d is not loaded with its route and policy", i)
		}
	}
	m := proxy.NewMetrics(proxy.MetricsOptions{MaxSeries: hosts}) // every edge its own series, as deployed
	prometheus.NewRegistry().MustRegister(m)
	h := proxy.NewHandler(cfgs, proxy.HandlerOptions{Metrics: m})
	return h, func() { cfgs.Close(); _ = svc.Close(ctx) }, nil
}

// server is a started server process.
type server struct {
	name string
	addr string
	cmd  *exec.Cmd
	in   io.Closer
}

// start starts this binary with -serve and waits for its address.
func start(name string, args ...string) (*server, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return startCmd(name, append([]string{self}, args...)...)
}

// startCmd starts argv (this binary with -serve, possibly behind taskset
// and env) and waits for the address it prints.
func startCmd(name string, argv ...string) (*server, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{name: name, cmd: cmd, in: in}
	line, err := bufio.NewReader(out).ReadString('\n')
	if addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening "); ok && err == nil {
		s.addr = addr
		return s, nil
	}
	s.stop()
	return nil, fmt.Errorf("%s did not start (%q, %v)", name, line, err)
}

// stop closes the server's input (it exits) and waits for it.
func (s *server) stop() {
	_ = s.in.Close()
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
}

// result is one wrk measurement.
type result struct {
	rps      float64
	p50, p99 time.Duration
	non2xx   int64
	errors   string
	requests float64       // requests wrk completed
	cpu      time.Duration // CPU time (user+system) the server process spent during the run
	upCPU    time.Duration // the same of the upstream: the control (its work per request is the same in every case)
}

// µs returns d in microseconds.
func µs(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// cpuPerRequest is the server's CPU time per request of a run.
func (r result) cpuPerRequest() time.Duration {
	if r.requests == 0 {
		return 0
	}
	return time.Duration(float64(r.cpu) / r.requests)
}

// measure runs wrk against addr with the script.
func measure(addr, script string, d time.Duration, conns, threads int) (result, error) {
	out, err := exec.Command("wrk", "-t"+strconv.Itoa(threads), "-c"+strconv.Itoa(conns), "-d"+d.String(),
		"--latency", "-s", script, "http://"+addr+"/").CombinedOutput()
	if err != nil {
		return result{}, fmt.Errorf("wrk: %v\n%s", err, out)
	}
	return parseWrk(out)
}

// parseWrk reads wrk's report.
func parseWrk(out []byte) (result, error) {
	var r result
	m := loadkit.WrkRPS.FindSubmatch(out)
	if m == nil {
		return result{}, fmt.Errorf("%w:\n%s", errNoRPS, out)
	}
	r.rps, _ = strconv.ParseFloat(string(m[1]), 64)
	if m := loadkit.WrkTotal.FindSubmatch(out); m != nil {
		r.requests, _ = strconv.ParseFloat(string(m[1]), 64)
	}
	if m := loadkit.WrkP50.FindSubmatch(out); m != nil {
		r.p50 = loadkit.WrkDuration(string(m[1]))
	}
	if m := loadkit.WrkP99.FindSubmatch(out); m != nil {
		r.p99 = loadkit.WrkDuration(string(m[1]))
	}
	if m := loadkit.WrkNon2xx.FindSubmatch(out); m != nil {
		r.non2xx, _ = strconv.ParseInt(string(m[1]), 10, 64)
	}
	r.errors = string(loadkit.WrkErrors.Find(out))
	return r, nil
}

// luaScript sends request i with the Host of edge i mod hosts; each wrk
// thread starts at another edge.
func luaScript(hosts int) string {
	return fmt.Sprintf(`local n = %d
local reqs = {}
local i = 0
function setup(thread)
  thread:set("offset", math.random(0, n - 1))
end
function init(args)
  for k = 0, n - 1 do
    reqs[k + 1] = wrk.format("GET", "/", {Host = string.format("h%%04d.load.example.com:443", k)})
  end
  i = offset or 0
end
function request()
  i = i %% n + 1
  return reqs[i]
end
`, hosts)
}

// check sends one request for each of a few hosts and wants the
// upstream's body (or 429 from a refusing case).
func check(s *server, hosts int, want int) error {
	c := &http.Client{Timeout: 5 * time.Second}
	for _, i := range []int{0, hosts / 2, hosts - 1} {
		req, _ := http.NewRequest(http.MethodGet, "http://"+s.addr+"/", nil)
		req.Host = hostname(i) + ":443"
		for range 2 { // the refusing limit lets each edge's first request through
			resp, err := c.Do(req)
			if err != nil {
				return fmt.Errorf("%s: %w", s.name, err)
			}
			b, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != want && !(want == http.StatusTooManyRequests && resp.StatusCode == http.StatusOK) {
				return fmt.Errorf("%s: %s answered %d %q, want %d", s.name, req.Host, resp.StatusCode, b, want)
			}
			if resp.StatusCode == http.StatusOK && string(b) != upstreamBody {
				return fmt.Errorf("%s: %s answered %q, not the upstream's body", s.name, req.Host, b)
			}
		}
	}
	return nil
}

func harness(hosts, rounds int, d time.Duration, conns, threads int, refuse, together bool, cpuprofile string) error {
	if _, err := exec.LookPath("wrk"); err != nil {
		return errors.New("wrk not found: apt-get install wrk")
	}
	if cpuprofile != "" {
		if err := os.MkdirAll(cpuprofile, 0o755); err != nil {
			return err
		}
	}
	tmp, err := os.MkdirTemp("", "dataplane-load")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	script := filepath.Join(tmp, "hosts.lua")
	if err := os.WriteFile(script, []byte(luaScript(hosts)), 0o644); err != nil {
		return err
	}

	var servers []*server
	defer func() {
		for _, s := range servers {
			s.stop()
		}
	}()
	up, err := start("upstream", "-serve", "upstream")
	if err != nil {
		return err
	}
	servers = append(servers, up)
	upURL := "http://" + up.addr
	type tcase struct {
		name   string
		s      *server
		status int
	}
	specs := []struct{ name, policy string }{{"bare", ""}, {"proxy", "none"}, {"proxy+limit", "limit"}}
	if refuse {
		specs = append(specs, struct{ name, policy string }{"proxy+refuse", "refuse"})
	}
	var cases []tcase
	for _, sp := range specs {
		args := []string{"-serve", "bare", "-upstream", upURL}
		if sp.policy != "" {
			args = []string{"-serve", "proxy", "-upstream", upURL, "-policy", sp.policy, "-hosts", strconv.Itoa(hosts), "-cpuprofile", cpuprofile}
		}
		t0 := time.Now()
		s, err := start(sp.name, args...)
		if err != nil {
			return err
		}
		servers = append(servers, s)
		status := http.StatusOK
		if sp.policy == "refuse" {
			status = http.StatusTooManyRequests
		}
		if err := check(s, hosts, status); err != nil {
			return err
		}
		cases = append(cases, tcase{sp.name, s, status})
		fmt.Fprintf(os.Stderr, "%s ready on %s in %v\n", sp.name, s.addr, time.Since(t0).Round(time.Millisecond))
	}

	fmt.Printf("%d hostnames (%d edges), wrk -t%d -c%d -d%v, %d rounds, interleaved (each round starts with the next case); GOMAXPROCS of every process: default\n\n",
		hosts, hosts, threads, conns, d, rounds)
	// Warm up: connection pools, rate-limit buckets, heaps.
	for _, c := range cases {
		if _, err := measure(c.s.addr, script, time.Second, conns, threads); err != nil {
			return err
		}
	}
	fmt.Println("| round | case | req/s | p50 | p99 | server CPU µs/req | upstream CPU µs/req | non-2xx |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	results := map[string][]result{}
	for round := 1; round <= rounds; round++ {
		for k := range cases {
			c := cases[(k+round-1)%len(cases)] // each round starts with another case
			cpu0, up0 := loadkit.CPUTime(c.s.cmd.Process.Pid), loadkit.CPUTime(up.cmd.Process.Pid)
			r, err := measure(c.s.addr, script, d, conns, threads)
			if err != nil {
				return err
			}
			r.cpu, r.upCPU = loadkit.CPUTime(c.s.cmd.Process.Pid)-cpu0, loadkit.CPUTime(up.cmd.Process.Pid)-up0
			results[c.name] = append(results[c.name], r)
			fmt.Printf("| %d | %s | %.0f | %v | %v | %.1f | %.1f | %d%s |\n", round, c.name, r.rps, r.p50, r.p99,
				µs(r.cpuPerRequest()), µs(time.Duration(float64(r.upCPU)/r.requests)), r.non2xx, strings.TrimPrefix(" "+r.errors, " "))
			if c.status == http.StatusOK && r.non2xx > 0 {
				// Socket errors (wrk's 2s timeouts on an overloaded
				// machine) are shown in the row; a wrong answer ends the run.
				return fmt.Errorf("%s answered non-2xx: %d", c.name, r.non2xx)
			}
		}
	}

	med := map[string]result{}
	for _, c := range cases {
		rs := results[c.name]
		med[c.name] = result{
			rps: median(rs, func(r result) float64 { return r.rps }),
			p50: time.Duration(median(rs, func(r result) float64 { return float64(r.p50) })),
			p99: time.Duration(median(rs, func(r result) float64 { return float64(r.p99) })),
			cpu: time.Duration(median(rs, func(r result) float64 { return float64(r.cpuPerRequest()) })),
		}
	}
	// Per-round ratios: the machine's drift between rounds cancels out.
	ratio := func(a, b string) float64 {
		v := make([]result, rounds)
		for i := range v {
			v[i].rps = results[a][i].rps / results[b][i].rps
		}
		return median(v, func(r result) float64 { return r.rps })
	}
	fmt.Println()
	fmt.Println("| case | median req/s | median p50 | median p99 | median server CPU µs/req | req/s vs bare | req/s vs proxy |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for _, c := range cases {
		m := med[c.name]
		fmt.Printf("| %s | %.0f | %v | %v | %.1f | %.3f | %.3f |\n", c.name, m.rps, m.p50.Round(time.Microsecond), m.p99.Round(time.Microsecond),
			µs(m.cpu), ratio(c.name, "bare"), ratio(c.name, "proxy"))
	}
	pb, lp := ratio("proxy", "bare"), ratio("proxy+limit", "proxy")
	fmt.Printf("\nproxy/bare = %.3f (target >= 0.90): %s\n", pb, verdict(pb >= 0.90))
	fmt.Printf("rate-limit policy cost vs proxy = %.1f%% of req/s (target < 10%%): %s\n", 100*(1-lp), verdict(1-lp < 0.10))
	cpuRatio := func(a, b string) float64 {
		v := make([]result, rounds)
		for i := range v {
			v[i].rps = float64(results[a][i].cpuPerRequest()) / float64(results[b][i].cpuPerRequest())
		}
		return median(v, func(r result) float64 { return r.rps })
	}
	fmt.Printf("server CPU per request (median of per-round ratios): proxy/bare = %.3f, proxy+limit/proxy = %.3f\n",
		cpuRatio("proxy", "bare"), cpuRatio("proxy+limit", "proxy"))
	if !together {
		return nil
	}

	// Pairs at the same time: both servers of a pair see the same
	// machine (the other work on it included) for the whole run, so the
	// ratio of their req/s is steadier than that of runs one after the
	// other. Each gets half the connections and one wrk thread.
	byName := map[string]*server{}
	for _, c := range cases {
		byName[c.name] = c.s
	}
	pairs := [][2]string{{"proxy", "bare"}, {"proxy+limit", "proxy"}}
	fmt.Printf("\nPairs measured at the same time (wrk -t1 -c%d each):\n\n", max(conns/2, 1))
	fmt.Println("| round | pair | req/s | req/s | ratio |")
	fmt.Println("|---|---|---|---|---|")
	ratios := make([][]result, len(pairs))
	for round := 1; round <= rounds; round++ {
		for k, p := range pairs {
			var ra, rb result
			var ea, eb error
			var wg sync.WaitGroup
			wg.Go(func() { ra, ea = measure(byName[p[0]].addr, script, d, max(conns/2, 1), 1) })
			wg.Go(func() { rb, eb = measure(byName[p[1]].addr, script, d, max(conns/2, 1), 1) })
			wg.Wait()
			if err := errors.Join(ea, eb); err != nil {
				return err
			}
			if ra.non2xx > 0 || rb.non2xx > 0 {
				return fmt.Errorf("%s/%s answered non-2xx", p[0], p[1])
			}
			ratios[k] = append(ratios[k], result{rps: ra.rps / rb.rps})
			fmt.Printf("| %d | %s / %s | %.0f | %.0f | %.3f |\n", round, p[0], p[1], ra.rps, rb.rps, ra.rps/rb.rps)
		}
	}
	at := func(k int) float64 { return median(ratios[k], func(r result) float64 { return r.rps }) }
	fmt.Printf("\nat the same time: proxy/bare = %.3f (target >= 0.90): %s\n", at(0), verdict(at(0) >= 0.90))
	fmt.Printf("at the same time: rate-limit policy cost vs proxy = %.1f%% of req/s (target < 10%%): %s\n", 100*(1-at(1)), verdict(1-at(1) < 0.10))
	return nil
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

// median returns the median of f over rs.
func median(rs []result, f func(result) float64) float64 {
	v := make([]float64, 0, len(rs))
	for _, r := range rs {
		v = append(v, f(r))
	}
	if len(v) == 0 {
		return math.NaN()
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}
