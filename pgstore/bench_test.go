package pgstore_test

import (
	"context"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/pgstore"
	"github.com/edgeplane/edgeplane/store"
)

// BenchmarkStore measures the hot paths of pgstore beside memstore's, in
// one run: go test -bench Store -benchmem ./pgstore/ (the pg rows skip
// without EDGEPLANE_TEST_POSTGRES_URL).
func BenchmarkStore(b *testing.B) {
	backends := []struct {
		name string
		open func(b *testing.B) store.Store
	}{
		{"mem", func(*testing.B) store.Store { return memstore.New() }},
		{"pg", func(b *testing.B) store.Store { return open(b, freshSchema(b), pgstore.Options{}) }},
	}
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			b.Run("Create", func(b *testing.B) {
				s := be.open(b)
				ctx := context.Background()
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					i++
					if err := s.Create(ctx, benchRecord(i)); err != nil {
						b.Fatal(err)
					}
				}
			})
			// CreateConcurrent and UpdateConcurrent: 64 writers at once,
			// as the API server under load: what group commit is for
			// (ns/op is per write).
			b.Run("CreateConcurrent", func(b *testing.B) {
				s := be.open(b)
				ctx := context.Background()
				var next atomic.Int64
				b.ReportAllocs()
				b.SetParallelism(max(1, 64/runtime.GOMAXPROCS(0)))
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if err := s.Create(ctx, benchRecord(int(next.Add(1)))); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
			b.Run("UpdateConcurrent", func(b *testing.B) {
				s := seeded(b, be.open(b), 1000)
				ctx := context.Background()
				var next atomic.Int64
				b.ReportAllocs()
				b.SetParallelism(max(1, 64/runtime.GOMAXPROCS(0)))
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						i := int(next.Add(1))
						_, err := s.Update(ctx, "bench", "acct", benchID(i%1000+1), func(r *store.Record) error {
							r.Data = []byte(`{"name":"renamed","n":` + strconv.Itoa(i) + `}`)
							return nil
						})
						if err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
			b.Run("Get", func(b *testing.B) {
				s := seeded(b, be.open(b), 1000)
				ctx := context.Background()
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					i++
					if _, err := s.Get(ctx, "bench", "acct", benchID(i%1000+1)); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("Update", func(b *testing.B) {
				s := seeded(b, be.open(b), 100)
				ctx := context.Background()
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					i++
					_, err := s.Update(ctx, "bench", "acct", benchID(i%100+1), func(r *store.Record) error {
						r.Data = []byte(`{"name":"renamed","n":` + strconv.Itoa(i) + `}`)
						return nil
					})
					if err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("List100", func(b *testing.B) {
				s := seeded(b, be.open(b), 1000)
				ctx := context.Background()
				q := store.Query{Kind: "bench", AccountID: "acct", BeforeID: benchID(600), Limit: 100}
				b.ReportAllocs()
				for b.Loop() {
					page, err := s.List(ctx, q)
					if err != nil || len(page) != 100 {
						b.Fatal(len(page), err)
					}
				}
			})
			b.Run("Lookup", func(b *testing.B) {
				s := seeded(b, be.open(b), 1000)
				ctx := context.Background()
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					i++
					if _, err := s.Lookup(ctx, "bench", "key:"+benchID(i%1000+1)); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

func benchID(i int) string { return "st_" + strconv.Itoa(1_000_000+i) }

// benchRecord is a record of the size of a typical resource: a small
// document, a lookup key, two index entries.
func benchRecord(i int) store.Record {
	id := benchID(i)
	return store.Record{
		Kind: "bench", AccountID: "acct", ID: id,
		Data:    []byte(`{"name":"` + id + `","description":"a benchmark record of modest size","n":1}`),
		Keys:    []string{"key:" + id},
		Indexes: []store.IndexEntry{{Name: "label", Value: "env=prod"}, {Name: "label", Value: "team=edge"}},
	}
}

func seeded(b testing.TB, s store.Store, n int) store.Store {
	b.Helper()
	for i := 1; i <= n; i++ {
		if err := s.Create(context.Background(), benchRecord(i)); err != nil {
			b.Fatal(err)
		}
	}
	return s
}

// BenchmarkList: a page of 100 out of 1,000 records read whole (List),
// beside its IDs and versions alone (ListVersions, what a list whose
// records are all in the Service's record cache reads), and those plus
// the 10 records a list would miss (GetMany).
func BenchmarkList(b *testing.B) {
	s := open(b, freshSchema(b), pgstore.Options{})
	seeded(b, s, 1000)
	ctx := context.Background()
	q := store.Query{Kind: "bench", AccountID: "acct", BeforeID: benchID(600), Limit: 100}
	b.Run("List", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if page, err := s.List(ctx, q); err != nil || len(page) != 100 {
				b.Fatal(len(page), err)
			}
		}
	})
	b.Run("ListVersions", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if page, err := s.ListVersions(ctx, q); err != nil || len(page) != 100 {
				b.Fatal(len(page), err)
			}
		}
	})
	// ListVersionsConcurrent: 64 lists at once, as the API server under
	// load; they share round trips (ns/op is per list).
	b.Run("ListVersionsConcurrent", func(b *testing.B) {
		b.ReportAllocs()
		b.SetParallelism(max(1, 64/runtime.GOMAXPROCS(0)))
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if page, err := s.ListVersions(ctx, q); err != nil || len(page) != 100 {
					b.Error(len(page), err)
					return
				}
			}
		})
	})
	b.Run("ListVersions+GetMany10", func(b *testing.B) {
		b.ReportAllocs()
		ids := make([]string, 10)
		for b.Loop() {
			page, err := s.ListVersions(ctx, q)
			if err != nil || len(page) != 100 {
				b.Fatal(len(page), err)
			}
			for i := range ids {
				ids[i] = page[i*10].ID
			}
			if recs, err := s.GetMany(ctx, "bench", "acct", ids); err != nil || len(recs) != 10 {
				b.Fatal(len(recs), err)
			}
		}
	})
}
