package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/policy"
)

// The load benchmark. The proxy's ServeHTTP is called in-process from
// b.RunParallel goroutines, each request from one of benchClients client
// addresses (set as RemoteAddr, as net/http's server does), so the numbers
// are the proxy's work per request without a client-side TCP stack. The
// upstream is trivial ("ok", text/plain) and reached either over loopback
// TCP (an httptest server: the proxy as deployed, whose own cost includes
// its outbound HTTP client) or in memory (a RoundTripper answering
// directly: the proxy's pipeline with no HTTP client work at all, the
// strictest denominator for the policy's share).
//
// The rate-limit policy keys one sliding-window limiter on conn.client_ip
// with a capacity no client reaches, so every request pays for the
// evaluation and the limiter and none is refused (a refusal skips the
// upstream and would flatter the policy).
//
//	go test -run '^$' -bench BenchmarkProxy -benchmem ./examples/edgeproxy
//
// Sub-benchmarks per upstream: no-policy and rate-limit-policy report
// req/s (their ns/op, compared, is the policy's share of the proxy's cost
// per request); latency alternates blocks of requests without and with the
// policy on each goroutine, so both see the same machine at the same
// moments, and reports their p50/p99 (in ns), the latency the policy adds
// at p50 and p99, and overhead-%: the wall time per request of the blocks
// with the policy over that of the blocks without it, minus one: the
// paired form of the req/s comparison, with both sides measured over the
// same stretch of time. Like ns/op it includes the garbage collector's and
// the scheduler's pauses, which the p50 figures leave out.

const benchClients = 10_000

const benchPolicy = `{"inbound":[{"name":"per client","actions":[{"type":"rate-limit","config":{
	"name":"bench","algorithm":"sliding_window","capacity":1000000,"rate":"60s","bucket_key":["conn.client_ip"]}}]}]}`

// memTransport answers every request as the trivial upstream would,
// without a network.
type memTransport struct{}

func (memTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_ = r.Body.Close()
	}
	return &http.Response{
		Status: "200 OK", StatusCode: 200, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": {"text/plain"}, "Content-Length": {"2"}},
		Body:          io.NopCloser(strings.NewReader("ok")),
		ContentLength: 2,
		Request:       r,
	}, nil
}

// benchWriter is a ResponseWriter that keeps nothing.
type benchWriter struct {
	h      http.Header
	status int
}

func (w *benchWriter) Header() http.Header         { return w.h }
func (w *benchWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *benchWriter) WriteHeader(code int)        { w.status = code }

// benchUpstream is one kind of upstream the benchmark runs against.
type benchUpstream struct {
	name      string
	url       *url.URL
	transport http.RoundTripper
}

func benchUpstreams(b *testing.B) []benchUpstream {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "ok")
	}))
	b.Cleanup(srv.Close)
	loop, _ := url.Parse(srv.URL)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost, tr.DisableCompression = 1024, 256, true
	b.Cleanup(tr.CloseIdleConnections)
	mem, _ := url.Parse("http://upstream.invalid")
	return []benchUpstream{
		{"in-memory", mem, memTransport{}},
		{"loopback", loop, tr},
	}
}

// newBenchProxy returns a standalone proxy, with the rate-limit policy
// when limited is true.
func newBenchProxy(b *testing.B, up benchUpstream, limited bool) *Proxy {
	var pol *policy.Policy
	if limited {
		engine, err := policy.NewEngine(policy.Options{Sink: policy.NewSlogSink(slog.New(slog.DiscardHandler))})
		if err != nil {
			b.Fatal(err)
		}
		if pol, err = engine.CompileJSON([]byte(benchPolicy), policy.CompileOptions{Scope: "bench"}); err != nil {
			b.Fatal(err)
		}
	}
	p, err := New(context.Background(), Options{Upstream: up.url, Policy: pol, Transport: up.transport})
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// newBenchServiceProxy returns a Service-mode proxy whose route has the
// rate-limit policy and whose tunnel forwards to up: the snapshot is built
// once and then reused, at the cost of one version check per request.
func newBenchServiceProxy(b *testing.B, up benchUpstream) *Proxy {
	ctx := context.Background()
	store := memstore.New()
	svc := edgeplane.New(store, edgeplane.Options{TunnelLease: 24 * time.Hour}) // longer than any run; nothing renews
	bs, err := bootstrap(ctx, svc, "", up.url.String())
	if err != nil {
		b.Fatal(err)
	}
	pr, err := svc.Authenticate(ctx, bs.key)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := svc.ReplaceHTTPSRouteTrafficPolicy(ctx, pr, bs.edgeID, bs.routeID, edges.TrafficPolicyParams{Value: benchPolicy}); err != nil {
		b.Fatal(err)
	}
	p, err := New(ctx, Options{Service: svc, AccountID: bs.accountID, EdgeID: bs.edgeID, Version: storeRevision(store), Transport: up.transport})
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// clientAddrs are the simulated clients' RemoteAddr values.
var clientAddrs = sync.OnceValue(func() []string {
	out := make([]string, benchClients)
	for i := range out {
		a := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
		out[i] = netip.AddrPortFrom(a, uint16(10000+i%50000)).String()
	}
	return out
})

// client is one simulated client goroutine's reusable request and writer.
type benchClient struct {
	req    *http.Request
	w      benchWriter
	addrs  []string
	next   int
	failed bool
}

var clientSeq atomic.Int64

func newBenchClient() *benchClient {
	c := &benchClient{req: httptest.NewRequest("GET", "http://edge.example.com/api/items?id=7", nil), w: benchWriter{h: http.Header{}}, addrs: clientAddrs()}
	c.req.Header.Set("User-Agent", "bench/1.0")
	c.req.Header.Set("Accept", "*/*")
	c.next = int(clientSeq.Add(7919)) % len(c.addrs) // goroutines start at different clients
	return c
}

// do sends one request through p from the next client and fails the
// benchmark unless it is answered 200 (Errorf: this runs on RunParallel's
// goroutines, where Fatal is not allowed).
func (c *benchClient) do(b *testing.B, p *Proxy) {
	c.req.RemoteAddr = c.addrs[c.next]
	if c.next++; c.next == len(c.addrs) {
		c.next = 0
	}
	clear(c.w.h)
	c.w.status = 0
	p.ServeHTTP(&c.w, c.req)
	if c.w.status != http.StatusOK && !c.failed {
		c.failed = true
		b.Errorf("status %d", c.w.status)
	}
}

func BenchmarkProxy(b *testing.B) {
	for _, up := range benchUpstreams(b) {
		// Every proxy of the run exists, warmed, before the first
		// measurement and lives to the last: the rate limiter's table (one
		// entry per client) is then part of the live heap for both sides,
		// so the garbage collector paces both alike. (Built one after the
		// other, the side measured with the smaller heap collects more
		// often and looks slower than it is.)
		type named struct {
			name string
			p    *Proxy
		}
		proxies := []named{
			{"no-policy", newBenchProxy(b, up, false)},
			{"rate-limit-policy", newBenchProxy(b, up, true)},
		}
		if up.name == "in-memory" {
			proxies = append(proxies, named{"service-mode-rate-limit-policy", newBenchServiceProxy(b, up)})
		}
		for _, px := range proxies {
			warm(b, px.p)
		}
		b.Run(up.name, func(b *testing.B) {
			for _, px := range proxies {
				b.Run(px.name, func(b *testing.B) { benchThroughput(b, px.p) })
			}
			b.Run("latency", func(b *testing.B) { benchLatency(b, proxies[0].p, proxies[1].p) })
		})
	}
}

// warm sends one request from every client through p, so that a rate
// limiter tracks every client before the measurement starts, as it does
// in a proxy's steady state.
func warm(b *testing.B, p *Proxy) {
	c := newBenchClient()
	for range benchClients {
		c.do(b, p)
	}
}

// benchThroughput runs requests from parallel clients and reports req/s.
func benchThroughput(b *testing.B, p *Proxy) {
	b.ReportAllocs()
	b.SetParallelism(4) // several clients per core, as a busy proxy has
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		c := newBenchClient()
		for pb.Next() {
			c.do(b, p)
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
	if n := p.metrics.rateLimited.Load(); n != 0 {
		b.Fatalf("%d requests were rate limited; the benchmark measures admitted requests", n)
	}
}

// latencySamples is how many latencies each goroutine keeps (the most
// recent ones), so that recording never allocates.
const latencySamples = 1 << 14

// latencyBlocks is about how many blocks each goroutine of benchLatency
// cuts its share of b.N into (half of them on each side), and
// minLatencyBlock the shortest block. Blocks are as long as the run allows
// because every switch costs the side switched to some re-warming that a
// proxy always running one configuration does not pay: on the 2-core
// development machine the in-memory overhead-% read 12-15 with blocks of
// 1,024 requests against 3-12 (mostly 8-12) with the ~15,000 of a 1s run.
const (
	latencyBlocks   = 16
	minLatencyBlock = 1024
)

func benchLatency(b *testing.B, plain, limited *Proxy) {
	var mu sync.Mutex
	var all [2][]time.Duration
	var wall [2]time.Duration // per side: the blocks' wall time
	var count [2]int          // per side: requests in those blocks
	// One goroutine per core: more would measure time spent waiting for a
	// core, not in the proxy.
	block := max(minLatencyBlock, b.N/(runtime.GOMAXPROCS(0)*latencyBlocks))
	b.RunParallel(func(pb *testing.PB) {
		c := newBenchClient()
		var ring [2][]time.Duration
		ring[0], ring[1] = make([]time.Duration, 0, latencySamples), make([]time.Duration, 0, latencySamples)
		var n [2]int
		var blockWall [2]time.Duration
		var blockStart time.Time
		k := 0
		for i := 0; pb.Next(); i++ {
			if i%block == 0 {
				now := time.Now()
				if i > 0 {
					blockWall[k] += now.Sub(blockStart)
				}
				blockStart, k = now, (i/block)&1
			}
			p := plain
			if k == 1 {
				p = limited
			}
			t0 := time.Now()
			c.do(b, p)
			d := time.Since(t0)
			if len(ring[k]) < latencySamples {
				ring[k] = append(ring[k], d)
			} else {
				ring[k][n[k]%latencySamples] = d
			}
			n[k]++
		}
		if !blockStart.IsZero() {
			blockWall[k] += time.Since(blockStart)
		}
		mu.Lock()
		for k := range all {
			all[k] = append(all[k], ring[k]...)
			wall[k] += blockWall[k]
			count[k] += n[k]
		}
		mu.Unlock()
	})
	if len(all[0]) == 0 || len(all[1]) == 0 {
		return
	}
	var p50, p99 [2]time.Duration
	for k := range all {
		slices.Sort(all[k])
		p50[k] = all[k][len(all[k])/2]
		p99[k] = all[k][len(all[k])*99/100]
	}
	var cost [2]float64 // wall time per request on each side
	for k := range cost {
		cost[k] = float64(wall[k]) / float64(count[k])
	}
	b.ReportMetric(float64(p50[0]), "p50-ns")
	b.ReportMetric(float64(p99[0]), "p99-ns")
	b.ReportMetric(float64(p50[1]), "p50-policy-ns")
	b.ReportMetric(float64(p99[1]), "p99-policy-ns")
	b.ReportMetric(float64(p50[1]-p50[0]), "p50-added-ns")
	b.ReportMetric(float64(p99[1]-p99[0]), "p99-added-ns")
	b.ReportMetric((cost[1]-cost[0])/cost[0]*100, "overhead-%")
}
