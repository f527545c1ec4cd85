package memstore_test

import (
	"context"
	"math/rand/v2"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/store"
)

// The records of these benchmarks are shaped like the Service's
// credentials: a document of about 300 bytes, one lookup key (the token's
// hash) and one reference (the owner).

const benchOwner = "own_0000000000000001"

var benchDoc = []byte(`{"id":"cr_2p9Xk3vT7qLmN4wRz8YbHc1","description":"the credential of a load test","acl":["bind:*.example.com"],` +
	`"owner_id":"own_0000000000000001","created_at":"2026-11-21T10:30:15.123456789Z","metadata":"` +
	strings.Repeat("m", 96) + `","token_hash":"0123456789abcdef0123456789abcdef"}`)

// benchRecord returns the i-th credential-like record. Its ID and key
// are new strings, as the Service's are (whether they reach the heap
// depends on whether the store keeps them).
func benchRecord(i int) store.Record {
	var b [19]byte
	copy(b[:], "cr_0000000000000000")
	for j := len(b) - 1; i > 0; j, i = j-1, i/10 { // IDs sort in creation order
		b[j] = byte('0' + i%10)
	}
	id := string(b[:])
	return store.Record{Kind: "credential", AccountID: "acct_1", ID: id, Data: benchDoc,
		Keys: []string{"tok:" + id}, Refs: []string{benchOwner}}
}

func benchStore(b *testing.B) *memstore.Store {
	s := memstore.New()
	if err := s.Create(context.Background(), store.Record{Kind: "owner", AccountID: "acct_1", ID: benchOwner, Data: []byte(`{}`)}); err != nil {
		b.Fatal(err)
	}
	return s
}

// benchStoreWithOne returns a benchStore holding benchRecord(1), and it.
func benchStoreWithOne(b *testing.B) (*memstore.Store, store.Record) {
	s, r := benchStore(b), benchRecord(1)
	if err := s.Create(context.Background(), r); err != nil {
		b.Fatal(err)
	}
	return s, r
}

// BenchmarkCreate creates one credential-like record per op.
func BenchmarkCreate(b *testing.B) {
	ctx := context.Background()
	s := benchStore(b)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		if err := s.Create(ctx, benchRecord(i)); err != nil {
			b.Fatal(err)
		}
	}
}

// sharedRefBase is how many credentials reference the owner before the
// benchmarks of a store shaped like the server's under load start.
const sharedRefBase = 400_000

// benchStoreShared returns a benchStore whose owner sharedRefBase
// credential-like records reference.
func benchStoreShared(b *testing.B) *memstore.Store {
	ctx := context.Background()
	s := benchStore(b)
	for i := range sharedRefBase {
		if err := s.Create(ctx, benchRecord(i+1)); err != nil {
			b.Fatal(err)
		}
	}
	return s
}

// BenchmarkCreateSharedRef creates one credential-like record per op in
// a store where sharedRefBase others already reference the one owner that
// each new record references too: the shape of the server under a load
// of credential creates, at a size that does not depend on b.N.
func BenchmarkCreateSharedRef(b *testing.B) {
	ctx := context.Background()
	s := benchStoreShared(b)
	b.ReportAllocs()
	i := sharedRefBase
	for b.Loop() {
		i++
		if err := s.Create(ctx, benchRecord(i)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkChurnSharedRef, in the store of BenchmarkCreateSharedRef,
// deletes a random one of the owner's referrers and creates a new one per
// op: the delete removes a handle from the middle of the owner's
// referrers, and the create takes the slot it freed, so that it enters a
// handle below the newest.
func BenchmarkChurnSharedRef(b *testing.B) {
	ctx := context.Background()
	s := benchStoreShared(b)
	live := make([]string, 0, sharedRefBase)
	for i := range sharedRefBase {
		live = append(live, benchRecord(i+1).ID)
	}
	r := rand.New(rand.NewPCG(1, 2))
	b.ReportAllocs()
	i := sharedRefBase
	for b.Loop() {
		k := r.IntN(len(live))
		if err := s.Delete(ctx, "credential", "acct_1", live[k], store.Note{}); err != nil {
			b.Fatal(err)
		}
		i++
		rec := benchRecord(i)
		if err := s.Create(ctx, rec); err != nil {
			b.Fatal(err)
		}
		live[k] = rec.ID
	}
}

// BenchmarkUpdate rewrites one credential-like record's document per op.
func BenchmarkUpdate(b *testing.B) {
	ctx := context.Background()
	s, r := benchStoreWithOne(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Update(ctx, r.Kind, r.AccountID, r.ID, func(rec *store.Record) error {
			rec.Data = append(rec.Data[:0], benchDoc...)
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGet reads one credential-like record per op.
func BenchmarkGet(b *testing.B) {
	ctx := context.Background()
	s, r := benchStoreWithOne(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Get(ctx, r.Kind, r.AccountID, r.ID); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHeap measures what a store of 200k credential-like records
// costs the garbage collector: the heap objects and bytes that stay live
// per record, the bytes of them the collector scans for pointers, and the
// time of one forced collection over that heap (the fastest of five: the
// machine's other work only ever adds to it). Its ns/op is the time to
// fill the store.
func BenchmarkHeap(b *testing.B) { benchHeap(b, 200_000, benchRecord) }

// BenchmarkHeapMillion is BenchmarkHeap with a million records, the size
// of store at which the server's profiles showed the collector's marking
// at a tenth of all CPU.
func BenchmarkHeapMillion(b *testing.B) { benchHeap(b, 1_000_000, benchRecord) }

// BenchmarkHeapIndexed is BenchmarkHeap with records that have two
// secondary index entries each, as tunnels have: a label shared by all
// and a lease end of their own.
func BenchmarkHeapIndexed(b *testing.B) {
	benchHeap(b, 200_000, func(i int) store.Record {
		r := benchRecord(i)
		end := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Millisecond)
		r.Indexes = []store.IndexEntry{{Name: "label", Value: "env=prod"}, {Name: "lease_end", Value: store.IndexTime(end)}}
		return r
	})
}

func benchHeap(b *testing.B, n int, record func(int) store.Record) {
	ctx := context.Background()
	var ms runtime.MemStats
	scan := []metrics.Sample{{Name: "/gc/scan/heap:bytes"}}
	for b.Loop() {
		runtime.GC()
		runtime.ReadMemStats(&ms)
		metrics.Read(scan)
		objects, bytes, scanned := ms.HeapObjects, ms.HeapAlloc, scan[0].Value.Uint64()
		s := benchStore(b)
		for i := range n {
			if err := s.Create(ctx, record(i)); err != nil {
				b.Fatal(err)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&ms)
		b.ReportMetric(float64(ms.HeapObjects-objects)/float64(n), "objects/record")
		b.ReportMetric(float64(ms.HeapAlloc-bytes)/float64(n), "heapB/record")
		metrics.Read(scan)
		b.ReportMetric(float64(scan[0].Value.Uint64()-scanned)/float64(n), "scanB/record")
		var fastest time.Duration
		for i := range 5 {
			start := time.Now()
			runtime.GC()
			if d := time.Since(start); i == 0 || d < fastest {
				fastest = d
			}
		}
		b.ReportMetric(float64(fastest.Nanoseconds()), "gc-ns")
		runtime.KeepAlive(s)
	}
}
