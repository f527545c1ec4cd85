package memstore_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/store"
)

// BenchmarkCreateLarge creates records in one account that already holds
// 200,000, and reports, besides the mean, the slowest creates (p99.9 and
// max, in ns): each Create holds the store's write lock, so a slow one
// stalls every other write.
func BenchmarkCreateLarge(b *testing.B) {
	ctx := context.Background()
	s := memstore.New()
	data := []byte(`{"created_at":"2026-11-23T00:00:00Z","description":"load","acl":["bind:*.example.com"],"owner_id":"usr_1"}`)
	rec := func(i int) store.Record {
		return store.Record{Kind: "credential", AccountID: "acct", ID: fmt.Sprintf("cr_%012d", i), Data: data,
			Keys: []string{fmt.Sprintf("token:%012d", i)}}
	}
	const base = 200_000
	for i := range base {
		if err := s.Create(ctx, rec(i)); err != nil {
			b.Fatal(err)
		}
	}
	var took []time.Duration
	i := base
	b.ReportAllocs()
	for b.Loop() {
		r := rec(i)
		i++
		start := time.Now()
		if err := s.Create(ctx, r); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)*999/1000]), "p99.9-ns")
	b.ReportMetric(float64(took[len(took)-1]), "max-ns")
}
