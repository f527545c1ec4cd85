package proxy

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/credentials"
	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/edges"
	"github.com/edgeplane/edgeplane/identity"
	"github.com/edgeplane/edgeplane/memstore"
)

// benchEdges is how many edges the handler benchmarks serve.
const benchEdges = 1000

// benchHostport is the hostport of edge i of a benchFleet.
func benchHostport(i int) string { return fmt.Sprintf("h%04d.bench.example.com:443", i) }

// Rate-limit policies of the benchmarks: one no client reaches, one
// that refuses every request after the first of a minute.
const (
	benchLimit = `{"inbound":[{"actions":[{"type":"rate-limit","config":{"name":"bench","algorithm":"sliding_window",` +
		`"capacity":2000000000,"rate":"60s","bucket_key":["conn.client_ip"]}}]}]}`
	benchRefuse = `{"inbound":[{"actions":[{"type":"rate-limit","config":{"name":"bench","algorithm":"sliding_window",` +
		`"capacity":1,"rate":"60s","bucket_key":["conn.client_ip"]}}]}]}`
)

// benchFleet returns a Configs over a memstore Service with benchEdges
// HTTPS edges, each serving benchHostport(i) with one route "/" whose
// backend's one tunnel forwards to upstream, and with the traffic policy
// doc when it is not empty.
func benchFleet(b testing.TB, upstream, doc string) *Configs {
	return fleet(b, benchEdges, upstream, doc)
}

// fleet is benchFleet with n edges.
func fleet(b testing.TB, n int, upstream, doc string) *Configs {
	b.Helper()
	return fleetWith(b, n, upstream, doc, "")
}

// fleetWith is fleet whose tunnel, when agent is not "", is held by that
// agent (labeled agentLabel=agent and read as asAgents does).
func fleetWith(b testing.TB, n int, upstream, doc, agent string) *Configs {
	b.Helper()
	ctx := context.Background()
	st := memstore.New()
	svc := mustService(edgeplane.New(st, edgeplane.Options{TunnelLease: 24 * time.Hour}))
	b.Cleanup(func() { _ = svc.Close(ctx) })
	check := func(err error) {
		b.Helper()
		if err != nil {
			b.Fatal(err)
		}
	}
	acct, err := svc.Host().CreateAccount(ctx, identity.AccountParams{Name: "bench"})
	check(err)
	user, err := svc.Host().CreateUser(ctx, acct.ID, identity.SubjectParams{Name: "admin", Admin: true})
	check(err)
	p := edgeplane.Principal{AccountID: acct.ID, SubjectID: user.ID, Admin: true}
	_, err = svc.CreateReservedDomain(ctx, p, domains.CreateParams{Domain: "*.bench.example.com"})
	check(err)
	labels := map[string]string{"app": "bench"}
	bk, err := svc.CreateTunnelGroupBackend(ctx, p, backends.CreateParams{Labels: labels})
	check(err)
	acl := []string{"bind:app=bench"}
	if agent != "" {
		labels[agentLabel] = agent
		acl = append(acl, "bind:"+agentLabel+"="+agent)
	}
	cred, err := svc.CreateCredential(ctx, p, credentials.CreateParams{ACL: acl})
	check(err)
	_, err = svc.Host().RegisterTunnel(ctx, *cred.Token, backends.RegisterTunnelParams{Labels: labels, ForwardsTo: upstream})
	check(err)
	for i := range n {
		e, err := svc.CreateHTTPSEdge(ctx, p, edges.CreateEdgeParams{Hostports: []string{benchHostport(i)}})
		check(err)
		rp := edges.CreateRouteParams{MatchType: edges.MatchPathPrefix, Match: "/", Backend: &edges.BackendParams{BackendID: bk.ID}}
		if doc != "" {
			rp.TrafficPolicy = &edges.TrafficPolicyParams{Value: doc}
		}
		_, err = svc.CreateHTTPSEdgeRoute(ctx, p, e.ID, rp)
		check(err)
	}
	var o Options
	if agent != "" {
		o.tunnels = func(ctx context.Context, accountID, backendID string) ([]backends.Tunnel, error) {
			ts, err := svc.Host().DataPlane().BackendTunnels(ctx, accountID, backendID)
			return asAgents(ts), err
		}
	}
	c, err := New(ctx, svc.Host().DataPlane(), st, o)
	check(err)
	b.Cleanup(c.Close)
	rev, err := st.Revision(ctx)
	check(err)
	check(c.WaitRevision(ctx, rev))
	if s := c.Stats(); s.Edges != n {
		b.Fatalf("stats %+v, want %d edges", s, n)
	}
	return c
}

// fixedTransport answers every request with a 13-byte 200 in memory, so
// that a benchmark measures the handler, not the network.
type fixedTransport struct{}

var fixedBody = []byte("hello, world\n")

func (fixedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{
		StatusCode:    http.StatusOK,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        http.Header{"Content-Type": {"text/plain"}, "Content-Length": {"13"}},
		Body:          io.NopCloser(strings.NewReader(string(fixedBody))),
		ContentLength: int64(len(fixedBody)),
		Request:       r,
	}, nil
}

// benchServe serves b.N requests through h, each to the next of the
// benchEdges hostports in turn, and checks every status.
func benchServe(b *testing.B, h http.Handler, want int) {
	b.Helper()
	reqs := make([]*http.Request, benchEdges)
	for i := range reqs {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Host = benchHostport(i)
		r.RemoteAddr = "192.0.2.1:50000"
		reqs[i] = r
	}
	b.ReportAllocs()
	cpu0 := cpuTime()
	i := 0
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, reqs[i])
		if w.Code != want {
			b.Fatalf("%s: status %d %q, want %d", reqs[i].Host, w.Code, w.Body, want)
		}
		if i++; i == benchEdges {
			i = 0
		}
	}
	reportCPU(b, cpu0)
}

// cpuTime returns the CPU time (user and system) the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the process's CPU time per operation since cpu0
// (the benchmark's work, its garbage collection included) as cpu-ns/op:
// unlike ns/op, it does not grow when other processes take the cores.
func reportCPU(b *testing.B, cpu0 time.Duration) {
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
}

// BenchmarkHandler is one request through the Handler among 1,000 edges
// (each request to the next edge), with metrics on and the upstream in
// memory (fixedTransport): the proxy's own cost per request. bare is
// the reference, an httputil.ReverseProxy over the same transport and
// buffer pool doing only what the handler's rewrite does.
func BenchmarkHandler(b *testing.B) {
	metrics := func() *Metrics {
		m := NewMetrics(MetricsOptions{MaxSeries: benchEdges})
		prometheus.NewRegistry().MustRegister(m)
		return m
	}
	b.Run("bare", func(b *testing.B) {
		u, _ := url.Parse("http://127.0.0.1:1")
		rp := &httputil.ReverseProxy{
			Rewrite: func(pr *httputil.ProxyRequest) {
				pr.SetURL(u)
				pr.SetXForwarded()
				pr.Out.Host = pr.In.Host
			},
			Transport:  fixedTransport{},
			BufferPool: bufferPool{},
		}
		benchServe(b, rp, http.StatusOK)
	})
	for _, bc := range []struct {
		name, doc string
		want      int
	}{
		{"no_policy", "", http.StatusOK},
		{"rate_limit", benchLimit, http.StatusOK},
		{"rate_limit_refused", benchRefuse, http.StatusTooManyRequests},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c := benchFleet(b, "http://127.0.0.1:1", bc.doc)
			h := NewHandler(c, HandlerOptions{Transport: fixedTransport{}, Metrics: metrics()})
			if bc.want == http.StatusTooManyRequests {
				// Let each edge's first request of the minute through.
				for i := range benchEdges {
					r := httptest.NewRequest(http.MethodGet, "/", nil)
					r.Host, r.RemoteAddr = benchHostport(i), "192.0.2.1:50000"
					h.ServeHTTP(httptest.NewRecorder(), r)
				}
			}
			benchServe(b, h, bc.want)
		})
	}
	b.Run("unknown_host", func(b *testing.B) {
		c := benchFleet(b, "http://127.0.0.1:1", "")
		h := NewHandler(c, HandlerOptions{Transport: fixedTransport{}, Metrics: metrics()})
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Host = "nobody.example.net:443"
		b.ReportAllocs()
		cpu0 := cpuTime()
		for b.Loop() {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != http.StatusNotFound {
				b.Fatalf("status %d, want 404", w.Code)
			}
		}
		reportCPU(b, cpu0)
	})
}

// BenchmarkHandlerLoopback is BenchmarkHandler/no_policy with a real
// upstream over loopback TCP and the Handler's default transport: a
// request as deployed, minus the client's connection.
func BenchmarkHandlerLoopback(b *testing.B) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(fixedBody)))
		_, _ = w.Write(fixedBody)
	}))
	b.Cleanup(up.Close)
	c := benchFleet(b, up.URL, "")
	benchServe(b, NewHandler(c, HandlerOptions{}), http.StatusOK)
}

// BenchmarkHandlerAgentTunnel is a request through the Handler (among
// 1,000 edges, metrics on) to an agent's tunnel, each on a stream of its
// own from a Dialer over net.Pipe to an http.Server in the process
// (agent), beside the same request to a direct upstream over loopback
// TCP with the default transport's kept-alive connections (direct, as
// BenchmarkHandlerLoopback). Both upstreams answer the same 13 bytes.
func BenchmarkHandlerAgentTunnel(b *testing.B) {
	answer := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(fixedBody)))
		_, _ = w.Write(fixedBody)
	})
	metrics := func() *Metrics {
		m := NewMetrics(MetricsOptions{MaxSeries: benchEdges})
		prometheus.NewRegistry().MustRegister(m)
		return m
	}
	b.Run("direct", func(b *testing.B) {
		up := httptest.NewServer(answer)
		b.Cleanup(up.Close)
		c := benchFleet(b, up.URL, "")
		benchServe(b, NewHandler(c, HandlerOptions{Metrics: metrics()}), http.StatusOK)
	})
	b.Run("agent", func(b *testing.B) {
		srv := &http.Server{Handler: answer}
		d := &pipeDialer{ln: newConnListener()}
		go func() { _ = srv.Serve(d.ln) }()
		b.Cleanup(func() { _ = srv.Close() })
		c := fleetWith(b, benchEdges, "", "", "laptop")
		benchServe(b, NewHandler(c, HandlerOptions{Metrics: metrics(), Agents: d}), http.StatusOK)
	})
}

// BenchmarkHandlerAgentEndpoint is BenchmarkHandlerAgentTunnel/agent
// to agents' endpoints instead of edges: 1,000 http endpoints (plain
// HTTP requests, as benchServe sends), each request to the next, on a
// stream of its own from the same Dialer to the same in-process agent;
// without a traffic policy, and with a rate limit no client reaches.
func BenchmarkHandlerAgentEndpoint(b *testing.B) {
	answer := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(fixedBody)))
		_, _ = w.Write(fixedBody)
	})
	for _, bc := range []struct{ name, doc string }{
		{"no_policy", ""},
		{"rate_limit", benchLimit},
	} {
		b.Run(bc.name, func(b *testing.B) {
			srv := &http.Server{Handler: answer}
			d := &pipeDialer{ln: newConnListener()}
			go func() { _ = srv.Serve(d.ln) }()
			b.Cleanup(func() { _ = srv.Close() })
			m := NewMetrics(MetricsOptions{MaxSeries: benchEdges})
			prometheus.NewRegistry().MustRegister(m)
			c := endpointFleet(b, benchEdges, bc.doc)
			benchServe(b, NewHandler(c, HandlerOptions{Metrics: m, Agents: d}), http.StatusOK)
		})
	}
}

// endpointFleet returns a Configs over a memstore Service and an
// in-memory EndpointSource with n http endpoints of one account, endpoint
// i serving the host of benchHostport(i) with the traffic policy doc
// when it is not empty.
func endpointFleet(b testing.TB, n int, doc string) *Configs {
	b.Helper()
	ctx := context.Background()
	st := memstore.New()
	svc := mustService(edgeplane.New(st, edgeplane.Options{}))
	b.Cleanup(func() { _ = svc.Close(ctx) })
	acct, err := svc.Host().CreateAccount(ctx, identity.AccountParams{Name: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	src := newFakeEndpoints(st)
	src.pageSize = 100
	for i := range n {
		host := strings.TrimSuffix(benchHostport(i), ":443")
		src.set(agents.Endpoint{ID: fmt.Sprintf("%sbench%04d", agents.EndpointPrefix, i), AccountID: acct.ID, Proto: "http", Host: host, Port: 80,
			Hostport: host + ":80", TrafficPolicy: doc})
	}
	c, err := New(ctx, svc.Host().DataPlane(), st, Options{Endpoints: src})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Close)
	if s := c.Stats(); s.Endpoints != n {
		b.Fatalf("stats %+v, want %d endpoints", s, n)
	}
	return c
}

// pipeDialer is an agents.Dialer that hands each stream's other end, a
// net.Pipe, to a listener (an agent's HTTP server).
type pipeDialer struct{ ln *connListener }

func (d *pipeDialer) DialTunnel(_ context.Context, _, _ string, _ agents.ConnHeader) (net.Conn, error) {
	proxySide, agentSide := net.Pipe()
	d.ln.push(agentSide)
	return proxySide, nil
}

// BenchmarkEdgeByHostport is the edge lookup of every request among
// 1,000 edges: a hostport an edge lists, a host only a wildcard could
// cover (a miss that forms the wildcard), and a hostport of another
// domain.
func BenchmarkEdgeByHostport(b *testing.B) {
	c := benchFleet(b, "http://127.0.0.1:1", "")
	for _, bc := range []struct {
		name, hostport string
		found          bool
	}{
		{"listed", benchHostport(500), true},
		{"miss_wildcard", "nobody.bench.example.com:443", false},
		{"miss", "nobody.example.net:443", false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if (c.EdgeByHostport(bc.hostport) != nil) != bc.found {
					b.Fatalf("%s: found is not %v", bc.hostport, bc.found)
				}
			}
		})
	}
}
