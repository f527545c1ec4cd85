package ratelimit_test

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/edgeplane/edgeplane/ratelimit"
)

// The comparison baseline is what users of golang.org/x/time/rate write
// today for keyed limits: a map of *rate.Limiter behind a sync.Mutex.
// "xtimerate" calls Allow (which reads time.Now); "xtimerate-at" passes
// the same cheap clock reading ratelimit gets, through AllowN.

type xtimeKeyed struct {
	mu    sync.Mutex
	m     map[string]*rate.Limiter
	limit rate.Limit
	burst int
}

func newXTime(limit rate.Limit, burst int) *xtimeKeyed {
	return &xtimeKeyed{m: make(map[string]*rate.Limiter), limit: limit, burst: burst}
}

func (x *xtimeKeyed) get(key string) *rate.Limiter {
	x.mu.Lock()
	l, ok := x.m[key]
	if !ok {
		l = rate.NewLimiter(x.limit, x.burst)
		x.m[key] = l
	}
	x.mu.Unlock()
	return l
}

func (x *xtimeKeyed) Allow(key string) bool { return x.get(key).Allow() }

func (x *xtimeKeyed) AllowAt(key string, now time.Time) bool { return x.get(key).AllowN(now, 1) }

const rotatingKeys = 10_000

func benchKeys() []string {
	keys := make([]string, rotatingKeys)
	for i := range keys {
		keys[i] = "203.0.113." + strconv.Itoa(i%256) + "/" + strconv.Itoa(i)
	}
	return keys
}

// subject is one limiter under benchmark.
type subject struct {
	name  string
	allow func(key string) bool
}

// subjects returns ratelimit and the baselines, all admitting every request
// (allow path) or, with deny, rejecting every request after each key's
// first.
func subjects(b *testing.B, deny bool) []subject {
	clk := ratelimit.NewClock(0)
	b.Cleanup(clk.Stop)
	capacity, limit, burst := uint64(ratelimit.MaxCapacity), rate.Limit(1e12), 1<<62
	if deny {
		capacity, limit, burst = 1, rate.Every(24*time.Hour), 1
	}
	l, err := ratelimit.New(ratelimit.Options{Capacity: capacity, Window: 24 * time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	x, xa := newXTime(limit, burst), newXTime(limit, burst)
	return []subject{
		{"ratelimit", func(k string) bool { return l.AllowAt(k, clk.Now()).Allowed }},
		{"xtimerate", x.Allow},
		{"xtimerate-at", func(k string) bool { return xa.AllowAt(k, clk.Now()) }},
	}
}

func benchSerial(b *testing.B, deny bool, keys []string) {
	for _, s := range subjects(b, deny) {
		b.Run(s.name, func(b *testing.B) {
			for _, k := range keys { // track every key first
				s.allow(k)
			}
			want := !deny
			b.ReportAllocs()
			b.ResetTimer()
			i := 0
			for b.Loop() {
				if s.allow(keys[i]) != want {
					b.Fatal("unexpected decision")
				}
				if i++; i == len(keys) {
					i = 0
				}
			}
		})
	}
}

func benchParallel(b *testing.B, deny bool, keys []string) {
	for _, s := range subjects(b, deny) {
		b.Run(s.name, func(b *testing.B) {
			for _, k := range keys {
				s.allow(k)
			}
			want := !deny
			var mu sync.Mutex
			next := 0
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				mu.Lock()
				i := next * 7919 % len(keys)
				next++
				mu.Unlock()
				for pb.Next() {
					if s.allow(keys[i]) != want {
						panic("unexpected decision")
					}
					if i++; i == len(keys) {
						i = 0
					}
				}
			})
		})
	}
}

// BenchmarkHotKey is one key admitted over and over.
func BenchmarkHotKey(b *testing.B) { benchSerial(b, false, []string{"203.0.113.7"}) }

// BenchmarkHotKeyDeny is one key over its limit, rejected over and over.
func BenchmarkHotKeyDeny(b *testing.B) { benchSerial(b, true, []string{"203.0.113.7"}) }

// BenchmarkRotatingKeys cycles through 10,000 tracked keys.
func BenchmarkRotatingKeys(b *testing.B) { benchSerial(b, false, benchKeys()) }

// BenchmarkRotatingKeysDeny cycles through 10,000 keys over their limit.
func BenchmarkRotatingKeysDeny(b *testing.B) { benchSerial(b, true, benchKeys()) }

// BenchmarkHotKeyParallel is one key admitted from every goroutine.
func BenchmarkHotKeyParallel(b *testing.B) { benchParallel(b, false, []string{"203.0.113.7"}) }

// BenchmarkHotKeyDenyParallel is one key over its limit from every goroutine.
func BenchmarkHotKeyDenyParallel(b *testing.B) { benchParallel(b, true, []string{"203.0.113.7"}) }

// BenchmarkRotatingKeysParallel cycles through 10,000 keys from every
// goroutine.
func BenchmarkRotatingKeysParallel(b *testing.B) { benchParallel(b, false, benchKeys()) }

// BenchmarkRotatingKeysDenyParallel cycles through 10,000 keys over their
// limit from every goroutine.
func BenchmarkRotatingKeysDenyParallel(b *testing.B) { benchParallel(b, true, benchKeys()) }

// BenchmarkBucketKey builds a two-element bucket key with AppendKeyPart into
// a reused buffer and decides on it: the policy action's per-request path.
func BenchmarkBucketKey(b *testing.B) {
	l, err := ratelimit.New(ratelimit.Options{Capacity: ratelimit.MaxCapacity, Window: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	clk := ratelimit.NewClock(0)
	defer clk.Stop()
	hosts := []string{"api.example.com", "www.example.com", "example.net"}
	buf := make([]byte, 0, 128)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		buf = ratelimit.AppendKeyPart(buf[:0], hosts[i%len(hosts)])
		buf = ratelimit.AppendKeyPart(buf, "203.0.113.77")
		if !l.AllowBytesAt(buf, clk.Now()).Allowed {
			b.Fatal("rejected")
		}
		i++
	}
}

// BenchmarkNewKeys sends every request from a key never seen before, into a
// limiter capped at 10,000 keys: each call inserts, sweeps and evicts.
func BenchmarkNewKeys(b *testing.B) {
	l, err := ratelimit.New(ratelimit.Options{Capacity: 100, Window: time.Minute, MaxKeys: 10_000})
	if err != nil {
		b.Fatal(err)
	}
	now := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	buf := make([]byte, 0, 16)
	b.ReportAllocs()
	i := uint64(0)
	for b.Loop() {
		buf = strconv.AppendUint(buf[:0], i, 10)
		if !l.AllowBytesAt(buf, now).Allowed {
			b.Fatal("rejected")
		}
		i++
	}
}

// BenchmarkClockNow compares a Clock reading with time.Now.
func BenchmarkClockNow(b *testing.B) {
	b.Run("Clock", func(b *testing.B) {
		clk := ratelimit.NewClock(0)
		defer clk.Stop()
		for b.Loop() {
			_ = clk.Now()
		}
	})
	b.Run("time.Now", func(b *testing.B) {
		for b.Loop() {
			_ = time.Now()
		}
	})
}
