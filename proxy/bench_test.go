package proxy

import (
	"fmt"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane/memstore"
)

// BenchmarkEdge is the lookup every request makes: the current snapshot
// of an edge, among 1,000 edges.
func BenchmarkEdge(b *testing.B) {
	w := newWorld(b, memstore.New())
	for range 997 {
		w.edge(w.b)
	}
	c := w.start(w.api.Host(), w.st, newHooks(w.api.Host()), Options{})
	if s := c.Stats(); s.Edges != 1000 {
		b.Fatalf("stats %+v", s)
	}
	account, edge := w.a.AccountID, w.a1
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if c.Edge(account, edge) == nil {
			b.Fatal("edge not found")
		}
	}
}

// BenchmarkEdgeParallel is BenchmarkEdge from every core at once.
func BenchmarkEdgeParallel(b *testing.B) {
	w := newWorld(b, memstore.New())
	c := w.start(w.api.Host(), w.st, newHooks(w.api.Host()), Options{})
	account, edge := w.a.AccountID, w.a1
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if c.Edge(account, edge) == nil {
				b.Error("edge not found")
				return
			}
		}
	})
}

// BenchmarkRebuildOneEdge is the work one change to a route costs: the
// edge read, its traffic policy (50 rules and a rate limit) compiled, its
// backend's tunnels read, the snapshot published. The follower is
// stopped; the benchmark does its work.
func BenchmarkRebuildOneEdge(b *testing.B) {
	w := newWorld(b, memstore.New())
	var rules []string
	for i := range 50 {
		rules = append(rules, fmt.Sprintf(`{"expressions":["req.method == 'M%d' && conn.client_ip != '203.0.113.%d'"],"actions":[{"type":"deny"}]}`, i, i))
	}
	rules = append(rules, `{"actions":[{"type":"rate-limit","config":{"name":"rl","algorithm":"sliding_window","capacity":100,"rate":"60s","bucket_key":["conn.client_ip"]}}]}`)
	w.policy(w.a, w.a1, w.a1r, `{"inbound":[`+strings.Join(rules, ",")+`]}`)
	c := w.start(w.api.Host(), w.st, newHooks(w.api.Host()), Options{})
	c.Close()
	rev := w.rev()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		p := newPending()
		p.compile[w.a1] = w.a.AccountID
		if err := c.apply(w.ctx, p, rev); err != nil {
			b.Fatal(err)
		}
	}
	if c.Edge(w.a.AccountID, w.a1).Config.Routes[0].TrafficPolicy == nil {
		b.Fatal("no policy compiled")
	}
}
