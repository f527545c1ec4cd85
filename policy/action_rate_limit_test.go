package policy

import (
	"fmt"
	"net/http"
	"net/netip"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/policy/limits"
	"github.com/edgeplane/edgeplane/ratelimit"
)

func rlConfig(capacity int, rate, keys string) string {
	return fmt.Sprintf(`{"name":"per-ip","algorithm":"sliding_window","capacity":%d,"rate":%q,"bucket_key":[%s]}`, capacity, rate, keys)
}

func rlDoc(capacity int, rate, keys, extra string) string {
	cfg := rlConfig(capacity, rate, keys)
	if extra != "" {
		cfg = cfg[:len(cfg)-1] + "," + extra + "}"
	}
	return `{"on_http_request":[{"name":"limit","actions":[{"type":"rate-limit","config":` + cfg + `}]},
	  {"expressions":["actions.service.rate_limit.limited"],"actions":[{"type":"log","config":{"metadata":{"key":"${actions.service.rate_limit.bucket_key}"}}}]}],` +
		rlReadAll + `}`
}

// rlReadAll is an outbound phase that reads every rate_limit result
// variable, so that inbound results carry them all (see resultVar).
const rlReadAll = `"on_http_response":[{"expressions":["actions.service.rate_limit.limited || actions.service.rate_limit.bucket_key == '-'",
	  "actions.service.rate_limit.error.code == '-' || actions.service.rate_limit.error.message == '-'"],"actions":[{"type":"log"}]}]`

// resultVar returns a rate_limit result variable as an inbound result
// carries it to the outbound phase (the zero value when it does not carry
// it: only the variables the policy reads are carried); the policy's
// outbound rules must read some (rlReadAll reads them all).
func resultVar(t *testing.T, e *Engine, r Result, field string) resultValue {
	t.Helper()
	if r.vars == nil {
		t.Fatal("the result carries no action result variables")
	}
	for _, d := range e.results {
		if d.action != ActionRateLimit || d.field != field {
			continue
		}
		for i, slot := range r.varSlots {
			if slot == d.slot {
				return r.vars[i]
			}
		}
		return resultValue{} // not carried: the outbound rules see the zero value
	}
	t.Fatalf("no rate_limit result field %s", field)
	return resultValue{}
}

func TestRateLimit(t *testing.T) {
	e, sink := newTestEngine(t, Options{})
	p := mustCompile(t, e, rlDoc(2, "60s", `"conn.client_ip"`, ""), CompileOptions{Scope: "edge1"})
	req := testRequest()
	for i := 0; i < 2; i++ {
		res := p.Inbound(req)
		if res.Verdict != Continue {
			t.Fatalf("request %d: %+v", i, res)
		}
		if v := resultVar(t, e, res, rlLimited); v.b {
			t.Fatalf("request %d limited", i)
		}
		if v := resultVar(t, e, res, rlBucketKey); v.s != "198.51.100.10" {
			t.Fatalf("bucket key %q", v.s)
		}
	}
	res := p.Inbound(req)
	if res.Verdict != Respond || res.StatusCode != http.StatusTooManyRequests || res.Location != "on_http_request[0].actions[0]" {
		t.Fatalf("third request: %+v", res)
	}
	// The same requests against an independent limiter give the expected
	// retry-after.
	oracle, err := ratelimit.New(ratelimit.Options{Capacity: 2, Window: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	var d ratelimit.Decision
	for i := 0; i < 3; i++ {
		d = oracle.AllowAt("k", t1)
	}
	if got, want := res.Header.Get("Retry-After"), strconv.FormatInt(d.RetryAfterSeconds(), 10); got != want || d.Allowed {
		t.Fatalf("retry-after %q, want %q", got, want)
	}
	if v := resultVar(t, e, res, rlLimited); !v.b {
		t.Fatal("limited not set")
	}
	// Another client has its own bucket.
	other := testRequest()
	other.Conn.ClientAddr = netip.MustParseAddrPort("198.51.100.11:1")
	if res := p.Inbound(other); res.Verdict != Continue {
		t.Fatalf("other client: %+v", res)
	}
	// Time is injected: a minute later the bucket has room again.
	later := testRequest()
	later.Time = t1.Add(61 * time.Second)
	if res := p.Inbound(later); res.Verdict != Continue {
		t.Fatalf("a minute later: %+v", res)
	}
	if len(sink.logs) != 0 {
		t.Fatalf("logs %v", sink.logs)
	}
}

func TestRateLimitRetryAfterRoundsUp(t *testing.T) {
	e, _ := newTestEngine(t, Options{})
	p := mustCompile(t, e, rlDoc(1, "60s", `"req.host"`, ""), CompileOptions{})
	req := testRequest()
	p.Inbound(req)
	oracle, err := ratelimit.New(ratelimit.Options{Capacity: 1, Window: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	oracle.AllowAt("k", t1)
	// Walk towards the end of the window: retry-after is a whole number
	// of seconds, at least 1, and agrees with the limiter's own rounding.
	for _, dt := range []time.Duration{time.Second, 30*time.Second + 300*time.Millisecond, 59*time.Second + 999*time.Millisecond} {
		req.Time = t1.Add(dt)
		res := p.Inbound(req)
		d := oracle.AllowAt("k", req.Time)
		if d.Allowed {
			if res.Verdict != Continue {
				t.Fatalf("at +%v: %+v, oracle admitted", dt, res)
			}
			continue
		}
		got, err := strconv.Atoi(res.Header.Get("Retry-After"))
		if err != nil || got < 1 || int64(got) != d.RetryAfterSeconds() || time.Duration(got)*time.Second < d.RetryAfter {
			t.Fatalf("at +%v: retry-after %q, limiter says %v", dt, res.Header.Get("Retry-After"), d.RetryAfter)
		}
	}
}

func TestRateLimitNotEnforced(t *testing.T) {
	e, sink := newTestEngine(t, Options{})
	p := mustCompile(t, e, rlDoc(1, "60s", `"req.headers['x-api-key']", "getReqHeader('Accept')", "req.host"`, `"enforce":false`), CompileOptions{})
	req := testRequest()
	if res := p.Inbound(req); res.Verdict != Continue {
		t.Fatalf("%+v", res)
	}
	res := p.Inbound(req)
	if res.Verdict != Continue {
		t.Fatalf("enforce false rejected: %+v", res)
	}
	if v := resultVar(t, e, res, rlLimited); !v.b {
		t.Fatal("limited not set")
	}
	if len(sink.logs) != 1 || sink.logs[0].Metadata["key"] != "k1,a,b,api.example.com:8443" {
		t.Fatalf("logs %+v", sink.logs)
	}
}

func TestRateLimitKeysDoNotCollide(t *testing.T) {
	e, _ := newTestEngine(t, Options{})
	p := mustCompile(t, e, rlDoc(1, "60s", `"req.headers['x-a']", "req.headers['x-b']"`, ""), CompileOptions{})
	mk := func(a, b string) *Request {
		r := testRequest()
		r.Header = http.Header{"X-A": {a}, "X-B": {b}}
		return r
	}
	if res := p.Inbound(mk("a", "bc")); res.Verdict != Continue {
		t.Fatal(res)
	}
	if res := p.Inbound(mk("ab", "c")); res.Verdict != Continue {
		t.Fatal("(ab, c) shares the bucket of (a, bc)")
	}
	if res := p.Inbound(mk("a", "bc")); res.Verdict != Respond {
		t.Fatal("second (a, bc) admitted")
	}
}

func TestRateLimitLongKey(t *testing.T) {
	e, sink := newTestEngine(t, Options{})
	p := mustCompile(t, e, rlDoc(5, "60s", `"req.headers['x-long']"`, ""), CompileOptions{})
	req := testRequest()
	req.Header["X-Long"] = []string{string(make([]byte, 2*limits.MaxBucketKeyBytes))}
	res := p.Inbound(req)
	if v := resultVar(t, e, res, rlErrorCode); v.s != ErrCodeBucketKeyTooLong {
		t.Fatalf("error.code %q", v.s)
	}
	if v := resultVar(t, e, res, rlErrorMessage); v.s == "" {
		t.Fatal("error.message empty")
	}
	if len(sink.errs) != 1 {
		t.Fatalf("sink errors %v", sink.errors())
	}
	// The next, normal request clears the error variables.
	res = p.Inbound(testRequest())
	if v := resultVar(t, e, res, rlErrorCode); v.s != "" {
		t.Fatalf("error.code %q after a normal request", v.s)
	}
}

// TestRateLimitReloadKeepsCounts is the engine's limiter pool contract.
func TestRateLimitReloadKeepsCounts(t *testing.T) {
	e, _ := newTestEngine(t, Options{})
	doc := rlDoc(1, "60s", `"conn.client_ip"`, "")
	p1 := mustCompile(t, e, doc, CompileOptions{Scope: "edge1"})
	req := testRequest()
	if res := p1.Inbound(req); res.Verdict != Continue {
		t.Fatal(res)
	}
	// Reload with the same config (and a different enforce and other rules).
	p2 := mustCompile(t, e, `{"on_http_request":[{"name":"new","expressions":["true"],"actions":[{"type":"rate-limit","config":`+
		rlConfig(1, "60s", `"conn.client_ip"`)[:len(rlConfig(1, "60s", `"conn.client_ip"`))-1]+`,"enforce":true}}]}]}`, CompileOptions{Scope: "edge1"})
	if res := p2.Inbound(req); res.Verdict != Respond {
		t.Fatalf("reloaded policy lost the counts: %+v", res)
	}
	// A changed config, or another scope, starts afresh.
	p3 := mustCompile(t, e, rlDoc(2, "60s", `"conn.client_ip"`, ""), CompileOptions{Scope: "edge1"})
	if res := p3.Inbound(req); res.Verdict != Continue {
		t.Fatalf("changed capacity shares counts: %+v", res)
	}
	p4 := mustCompile(t, e, doc, CompileOptions{Scope: "edge2"})
	if res := p4.Inbound(req); res.Verdict != Continue {
		t.Fatalf("another scope shares counts: %+v", res)
	}
	if n := e.limiters.size(); n != 3 {
		t.Fatalf("pool holds %d limiters, want 3", n)
	}
	runtime.KeepAlive(p1)
	runtime.KeepAlive(p2)
	runtime.KeepAlive(p3)
	runtime.KeepAlive(p4)
}

// fakeClock is an engine clock that tests move by hand.
type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time { return c.now }

// request returns testRequest() stamped with the clock's time.
func (c *fakeClock) request() *Request {
	r := testRequest()
	r.Time = c.now
	return r
}

// TestLimiterPoolKeepsCountsAcrossGC checks that the counts of an unchanged
// config survive recompilation however often the collector runs, even
// while no policy uses the limiter: the pool holds it strongly.
func TestLimiterPoolKeepsCountsAcrossGC(t *testing.T) {
	clk := &fakeClock{now: t1}
	e, _ := newTestEngine(t, Options{Clock: clk.Now})
	doc := rlDoc(3, "60s", `"conn.client_ip"`, "")
	for i := range 5 {
		p := mustCompile(t, e, doc, CompileOptions{Scope: "edge1"})
		want := Continue
		if i >= 3 {
			want = Respond
		}
		if res := p.Inbound(clk.request()); res.Verdict != want {
			t.Fatalf("request %d after a recompilation and a collection: %v, want %v", i+1, res.Verdict, want)
		}
		p = nil // no policy uses the limiter now
		runtime.GC()
		runtime.GC()
		clk.now = clk.now.Add(time.Second)
	}
	if n := e.limiters.size(); n != 1 {
		t.Fatalf("pool holds %d limiters, want 1", n)
	}
}

// TestLimiterPoolReleasesByTime checks that a sweep drops a limiter once
// every request time it was given, to the end of its slot, is a window
// old, and not before; a busy one stays. Compiling sweeps too.
func TestLimiterPoolReleasesByTime(t *testing.T) {
	clk := &fakeClock{now: t1}
	e, _ := newTestEngine(t, Options{Clock: clk.Now})
	idle := mustCompile(t, e, rlDoc(1, "60s", `"conn.client_ip"`, ""), CompileOptions{Scope: "idle"})
	busy := mustCompile(t, e, rlDoc(1, "60s", `"conn.client_ip"`, ""), CompileOptions{Scope: "busy"})
	idle.Inbound(clk.request()) // at t1, in the slot [t0, t0+6s)
	busy.Inbound(clk.request())
	free := t0.Add(6*time.Second + time.Minute) // the slot's end plus the window
	clk.now = free.Add(-time.Second)
	busy.Inbound(clk.request())
	clk.now = free.Add(-1)
	if n := e.ReleaseIdleRateLimiters(); n != 0 || e.limiters.size() != 2 {
		t.Fatalf("a nanosecond early: released %d, pool holds %d, want 0 and 2", n, e.limiters.size())
	}
	clk.now = free
	if n := e.ReleaseIdleRateLimiters(); n != 1 || e.limiters.size() != 1 {
		t.Fatalf("a window after: released %d, pool holds %d, want 1 and 1 (the busy one)", n, e.limiters.size())
	}
	// A compile a minute of engine time after the last sweep sweeps: the
	// busy one is idle by then.
	clk.now = free.Add(time.Minute)
	mustCompile(t, e, rlDoc(2, "60s", `"conn.client_ip"`, ""), CompileOptions{Scope: "other"})
	if n := e.limiters.size(); n != 1 {
		t.Fatalf("after a compile that swept, pool holds %d limiters, want 1 (the new one)", n)
	}
	runtime.KeepAlive(idle)
	runtime.KeepAlive(busy)
}

// TestLimiterPoolLivePolicyAfterRelease checks that a limiter the pool
// dropped while a policy still uses it is never split from a recompiled
// copy of that policy, with or without traffic in between, whatever the
// collector does.
func TestLimiterPoolLivePolicyAfterRelease(t *testing.T) {
	doc := rlDoc(1, "60s", `"conn.client_ip"`, "")
	for _, traffic := range []bool{false, true} {
		t.Run(fmt.Sprintf("traffic=%v", traffic), func(t *testing.T) {
			clk := &fakeClock{now: t1}
			e, _ := newTestEngine(t, Options{Clock: clk.Now})
			p1 := mustCompile(t, e, doc, CompileOptions{})
			p1.Inbound(clk.request())
			clk.now = t1.Add(time.Hour)
			if n := e.ReleaseIdleRateLimiters(); n != 1 || e.limiters.size() != 0 {
				t.Fatalf("released %d, pool holds %d, want 1 and 0", n, e.limiters.size())
			}
			runtime.GC()
			first := p1
			if traffic {
				// The old policy takes a request: its limiter is held again.
				if res := p1.Inbound(clk.request()); res.Verdict != Continue {
					t.Fatal(res)
				}
				if n := e.limiters.size(); n != 1 {
					t.Fatalf("pool holds %d limiters after the old policy's request, want 1", n)
				}
			}
			runtime.GC()
			p2 := mustCompile(t, e, doc, CompileOptions{})
			if !traffic {
				first = p2
				if res := p2.Inbound(clk.request()); res.Verdict != Continue {
					t.Fatal(res)
				}
			}
			for _, p := range []*Policy{p1, p2} {
				if p == first {
					continue
				}
				if res := p.Inbound(clk.request()); res.Verdict != Respond {
					t.Fatalf("the two policies count apart: %v", res.Verdict)
				}
			}
			if n := e.limiters.size(); n != 1 {
				t.Fatalf("pool holds %d limiters, want 1", n)
			}
			runtime.KeepAlive(p1)
		})
	}
}

// TestRateLimitLastExecution checks that the result variables hold the
// last execution's values, not a concatenation.
func TestRateLimitLastExecution(t *testing.T) {
	e, sink := newTestEngine(t, Options{})
	p := mustCompile(t, e, `{"on_http_request":[{"actions":[
		{"type":"rate-limit","config":`+rlConfig(5, "60s", `"conn.client_ip"`)+`},
		{"type":"log","config":{"metadata":{"first":"${actions.service.rate_limit.bucket_key}"}}},
		{"type":"rate-limit","config":{"name":"per-host","algorithm":"sliding_window","capacity":5,"rate":"60s","bucket_key":["req.host"]}},
		{"type":"log","config":{"metadata":{"second":"${actions.service.rate_limit.bucket_key}"}}}]}],`+rlReadAll+`}`, CompileOptions{})
	res := p.Inbound(testRequest())
	if v := resultVar(t, e, res, rlBucketKey); v.s != "api.example.com:8443" {
		t.Fatalf("bucket_key %q", v.s)
	}
	if len(sink.logs) != 2 || sink.logs[0].Metadata["first"] != "198.51.100.10" || sink.logs[1].Metadata["second"] != "api.example.com:8443" {
		t.Fatalf("logs %+v", sink.logs)
	}
}
