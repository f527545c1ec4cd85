package proxy

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/identity"
	"github.com/edgeplane/edgeplane/memstore"
)

// memberDialer is an agents.Dialer with one in-process agent (an HTTP
// server on net.Pipe streams) per tunnel ID.
type memberDialer struct{ lns map[string]*connListener }

func (d *memberDialer) DialTunnel(_ context.Context, _, tunnelID string, _ agents.ConnHeader) (net.Conn, error) {
	ln := d.lns[tunnelID]
	if ln == nil {
		return nil, agents.ErrNoSession
	}
	proxySide, agentSide := net.Pipe()
	ln.push(agentSide)
	return proxySide, nil
}

// BenchmarkEndpointPool is HTTP through one http endpoint at c=64 (64
// clients, each on a connection of its own, sending requests back to
// back): served by one agent (one), and by a pool of two agents, each
// an in-process HTTP server of its own (pool_of_2). It reports the
// requests per second and each request's 99th percentile latency.
func BenchmarkEndpointPool(b *testing.B) {
	answer := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(fixedBody)))
		_, _ = w.Write(fixedBody)
	})
	for _, bc := range []struct {
		name    string
		members int
	}{{"one", 1}, {"pool_of_2", 2}} {
		b.Run(bc.name, func(b *testing.B) {
			ctx := context.Background()
			st := memstore.New()
			svc := mustService(edgeplane.New(st, edgeplane.Options{}))
			b.Cleanup(func() { _ = svc.Close(ctx) })
			acct, err := svc.Host().CreateAccount(ctx, identity.AccountParams{Name: "bench"})
			if err != nil {
				b.Fatal(err)
			}
			src := newFakeEndpoints(st)
			d := &memberDialer{lns: map[string]*connListener{}}
			for i := range bc.members {
				id := fmt.Sprintf("%smember%d", agents.EndpointPrefix, i)
				src.set(agents.Endpoint{ID: id, AccountID: acct.ID, Proto: "http", Host: "app.example.com", Port: 80,
					Hostport: "app.example.com:80", PoolingEnabled: bc.members > 1, CreatedAt: time.Unix(int64(i), 0)})
				srv := &http.Server{Handler: answer}
				d.lns[id] = newConnListener()
				go func() { _ = srv.Serve(d.lns[id]) }()
				b.Cleanup(func() { _ = srv.Close() })
			}
			c, err := New(ctx, svc.Host().DataPlane(), st, Options{Endpoints: src})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(c.Close)
			h := NewHandler(c, HandlerOptions{Agents: d})
			benchConcurrent(b, h, 64)
		})
	}
}

// benchConcurrent sends b.N requests for app.example.com through h from
// clients concurrent clients (b.RunParallel), each from an address of
// its own, and reports requests per second and the 99th percentile of
// their latencies.
func benchConcurrent(b *testing.B, h http.Handler, clients int) {
	b.SetParallelism(max(1, clients/runtime.GOMAXPROCS(0))) // RunParallel runs parallelism × GOMAXPROCS goroutines
	var (
		mu    sync.Mutex
		lats  []time.Duration
		next  int
		start = time.Now()
	)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		mu.Lock()
		next++
		n := next
		mu.Unlock()
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Host = "app.example.com"
		r.RemoteAddr = "192.0.2.1:" + strconv.Itoa(40000+n)
		own := make([]time.Duration, 0, 1024)
		for pb.Next() {
			t0 := time.Now()
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			own = append(own, time.Since(t0))
			if w.Code != http.StatusOK {
				b.Errorf("status %d %q", w.Code, w.Body)
				return
			}
		}
		mu.Lock()
		lats = append(lats, own...)
		mu.Unlock()
	})
	elapsed := time.Since(start)
	b.StopTimer()
	if len(lats) == 0 {
		return
	}
	slices.Sort(lats)
	b.ReportMetric(float64(lats[len(lats)*99/100].Microseconds()), "p99-µs")
	b.ReportMetric(float64(len(lats))/elapsed.Seconds(), "req/s")
}
