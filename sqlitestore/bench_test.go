package sqlitestore_test

import (
	"crypto/sha256"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/sqlitestore"
	"github.com/edgeplane/edgeplane/store"
)

// BenchmarkStore measures the hot paths of sqlitestore beside memstore's,
// in one run: b.Loop times only the operation, after the setup.
func BenchmarkStore(b *testing.B) {
	backends := []struct {
		name string
		open func(b *testing.B) store.Store
	}{
		{"memstore", func(*testing.B) store.Store { return memstore.New() }},
		{"sqlitestore", func(b *testing.B) store.Store {
			return open(b, filepath.Join(b.TempDir(), "bench.db"), sqlitestore.Options{})
		}},
	}
	const n = 1000
	seed := func(b *testing.B, s store.Store) {
		b.Helper()
		for i := range n {
			r := rec("k", "acct", fmt.Sprintf("st_%08d", i))
			r.Keys = []string{fmt.Sprintf("key:%d", i)}
			if err := s.Create(ctx, r); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, be := range backends {
		b.Run(be.name+"/Create", func(b *testing.B) {
			s := be.open(b)
			i := 0
			for b.Loop() {
				i++
				if err := s.Create(ctx, rec("k", "acct", fmt.Sprintf("st_%08d", i))); err != nil {
					b.Fatal(err)
				}
			}
		})
		// CreateConcurrent: 64 writers at once, as the API server under
		// load: what group commit is for (ns/op is per write). Each
		// record has a lookup key that sorts in creation order, as a
		// credential's does; CreateConcurrentRandomKey gives each a
		// random one (a hash, as credentials had before their tokens
		// named them): every write then dirties a page of its own in
		// the key index.
		for _, v := range []struct {
			name string
			key  func(id string) string
		}{
			{"CreateConcurrent", func(id string) string { return "key:" + id }},
			{"CreateConcurrentRandomKey", func(id string) string { return fmt.Sprintf("key:%x", sha256.Sum256([]byte(id))) }},
		} {
			b.Run(be.name+"/"+v.name, func(b *testing.B) {
				s := be.open(b)
				var next atomic.Int64
				b.SetParallelism(max(1, 64/runtime.GOMAXPROCS(0)))
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						r := rec("k", "acct", fmt.Sprintf("st_%08d", next.Add(1)))
						r.Keys = []string{v.key(r.ID)}
						if err := s.Create(ctx, r); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		}
		b.Run(be.name+"/Get", func(b *testing.B) {
			s := be.open(b)
			seed(b, s)
			i := 0
			for b.Loop() {
				i++
				if _, err := s.Get(ctx, "k", "acct", fmt.Sprintf("st_%08d", i%n)); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(be.name+"/Update", func(b *testing.B) {
			s := be.open(b)
			seed(b, s)
			data := []byte(`{"updated":true}`)
			for b.Loop() {
				if _, err := s.Update(ctx, "k", "acct", "st_00000500", func(r *store.Record) error { r.Data = data; return nil }); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(be.name+"/List100", func(b *testing.B) {
			s := be.open(b)
			seed(b, s)
			for b.Loop() {
				page, err := s.List(ctx, store.Query{Kind: "k", AccountID: "acct", BeforeID: "st_00000700", Limit: 100})
				if err != nil || len(page) != 100 {
					b.Fatalf("List: %d records, %v", len(page), err)
				}
			}
		})
		// DeleteParent: a record with one child deleted (the child by
		// cascade) among 5,000 others, as a tunnel session with its
		// tunnel: the descendants must be found through the index, not
		// by a scan of every record.
		b.Run(be.name+"/DeleteParent", func(b *testing.B) {
			s := be.open(b)
			for i := range 5000 {
				if err := s.Create(ctx, rec("k", "acct", fmt.Sprintf("other_%08d", i))); err != nil {
					b.Fatal(err)
				}
			}
			i := 0
			for b.Loop() {
				b.StopTimer()
				i++
				parent, child := fmt.Sprintf("p_%08d", i), fmt.Sprintf("c_%08d", i)
				if err := s.Create(ctx, rec("k", "acct", parent)); err != nil {
					b.Fatal(err)
				}
				c := rec("k", "acct", child)
				c.ParentID = parent
				if err := s.Create(ctx, c); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if err := s.Delete(ctx, "k", "acct", parent, store.Note{}); err != nil {
					b.Fatal(err)
				}
			}
		})
		// Revision: what a fenced read costs (the API server reads it,
		// coalesced, before it answers from its caches).
		b.Run(be.name+"/Revision", func(b *testing.B) {
			s := be.open(b)
			seed(b, s)
			for b.Loop() {
				if _, err := s.Revision(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
		// Changes60: what the API server's feed follower reads after a
		// commit of a batch of 60 writes.
		b.Run(be.name+"/Changes60", func(b *testing.B) {
			s := be.open(b)
			seed(b, s)
			feed, ok := s.(store.Feed)
			if !ok {
				b.Skip("not a feed")
			}
			for b.Loop() {
				cs, err := feed.Changes(ctx, n-60, 60, store.WithData)
				if err != nil || len(cs) != 60 {
					b.Fatal(len(cs), err)
				}
			}
		})
		b.Run(be.name+"/Lookup", func(b *testing.B) {
			s := be.open(b)
			seed(b, s)
			i := 0
			for b.Loop() {
				i++
				if _, err := s.Lookup(ctx, "k", fmt.Sprintf("key:%d", i%n)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkList: a page of 100 out of 1,000 credential-sized records
// read whole (List), beside its IDs and versions alone (ListVersions, what
// a list whose records are all in the Service's record cache reads), and
// those plus the 10 records a list would miss (GetMany).
func BenchmarkList(b *testing.B) {
	s := open(b, filepath.Join(b.TempDir(), "bench.db"), sqlitestore.Options{})
	data := []byte(`{"description":"` + strings.Repeat("d", 200) + `","metadata":"","acl":["bind:*.example.com"],"created_at":"2026-11-21T10:30:15Z","owner_id":"usr_0123456789abcdefghijklmnop"}`)
	for i := range 1000 {
		r := rec("k", "acct", fmt.Sprintf("st_%08d", i))
		r.Data = data
		r.Keys = []string{fmt.Sprintf("key:%d", i)}
		if err := s.Create(ctx, r); err != nil {
			b.Fatal(err)
		}
	}
	q := store.Query{Kind: "k", AccountID: "acct", BeforeID: "st_00000700", Limit: 100}
	b.Run("List", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if page, err := s.List(ctx, q); err != nil || len(page) != 100 {
				b.Fatalf("List: %d records, %v", len(page), err)
			}
		}
	})
	b.Run("ListVersions", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if page, err := s.ListVersions(ctx, q); err != nil || len(page) != 100 {
				b.Fatalf("ListVersions: %d versions, %v", len(page), err)
			}
		}
	})
	b.Run("ListVersions+GetMany10", func(b *testing.B) {
		b.ReportAllocs()
		ids := make([]string, 10)
		for b.Loop() {
			page, err := s.ListVersions(ctx, q)
			if err != nil || len(page) != 100 {
				b.Fatalf("ListVersions: %d versions, %v", len(page), err)
			}
			for i := range ids {
				ids[i] = page[i*10].ID
			}
			if recs, err := s.GetMany(ctx, "k", "acct", ids); err != nil || len(recs) != 10 {
				b.Fatalf("GetMany: %d records, %v", len(recs), err)
			}
		}
	})
}
