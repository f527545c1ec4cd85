package policy

import (
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/policy/limits"
	"github.com/edgeplane/edgeplane/ratelimit"
)

// Action result variables are materialised only when an expression or
// template of the policy reads them. These tests check that reading them
// gives exactly the values an eager evaluation gives, and that a policy
// reading none pays nothing for them.

// rlLog is a rate-limit config that only counts (enforce false), so that
// later rules also run on a limited request.
func rlLog(capacity int, keys string) string {
	cfg := rlConfig(capacity, "60s", keys)
	return cfg[:len(cfg)-1] + `,"enforce":false}`
}

// rlReads is a document whose first inbound rule is a counting-only
// rate-limit with capacity 1; extra continues the document after that
// rule, closing the inbound list: "]", or more rules and "]", then maybe
// an outbound phase.
func rlReads(keys, extra string) string {
	return `{"on_http_request":[{"name":"limit","actions":[{"type":"rate-limit","config":` + rlLog(1, keys) + `}]}` + extra + `}`
}

func TestResultVariablesRead(t *testing.T) {
	long := strings.Repeat("a", 2*limits.MaxBucketKeyBytes)
	tests := []struct {
		name string
		doc  string
		req  func(*Request)
		// want is the log metadata "v" of the first and second request, or
		// the x-v header of their outbound results when outbound is set.
		want     [2]string
		outbound bool
	}{
		{name: "later rule expression",
			doc:  rlReads(`"conn.client_ip"`, `,{"expressions":["actions.service.rate_limit.limited"],"actions":[{"type":"log","config":{"metadata":{"v":"limited"}}}]}]`),
			want: [2]string{"", "limited"}},
		{name: "template, client IP",
			doc:  rlReads(`"conn.client_ip"`, `,{"actions":[{"type":"log","config":{"metadata":{"v":"${actions.service.rate_limit.bucket_key}|${actions.service.rate_limit.limited}"}}}]}]`),
			want: [2]string{"198.51.100.10|false", "198.51.100.10|true"}},
		{name: "template, IPv6 client",
			doc:  rlReads(`"conn.client_ip"`, `,{"actions":[{"type":"log","config":{"metadata":{"v":"${actions.service.rate_limit.bucket_key}"}}}]}]`),
			req:  func(r *Request) { r.Conn.ClientAddr = netip.MustParseAddrPort("[2001:db8::a%eth0]:1") },
			want: [2]string{"2001:db8::a", "2001:db8::a"}},
		{name: "template, IPv4-mapped client",
			doc:  rlReads(`"conn.client_ip"`, `,{"actions":[{"type":"log","config":{"metadata":{"v":"${actions.service.rate_limit.bucket_key}"}}}]}]`),
			req:  func(r *Request) { r.Conn.ClientAddr = netip.MustParseAddrPort("[::ffff:10.0.0.1]:1") },
			want: [2]string{"10.0.0.1", "10.0.0.1"}},
		{name: "template, unknown client",
			doc:  rlReads(`"conn.client_ip"`, `,{"actions":[{"type":"log","config":{"metadata":{"v":"[${actions.service.rate_limit.bucket_key}]"}}}]}]`),
			req:  func(r *Request) { r.Conn.ClientAddr = netip.AddrPort{} },
			want: [2]string{"[]", "[]"}},
		{name: "template, several elements",
			doc:  rlReads(`"conn.client_ip", "req.headers['accept']", "getReqHeader('X-Missing')", "req.host"`, `,{"actions":[{"type":"log","config":{"metadata":{"v":"${actions.service.rate_limit.bucket_key}"}}}]}]`),
			want: [2]string{"198.51.100.10,a,b,,api.example.com:8443", "198.51.100.10,a,b,,api.example.com:8443"}},
		{name: "template, one multi-valued header",
			doc:  rlReads(`"req.headers['accept']"`, `,{"actions":[{"type":"log","config":{"metadata":{"v":"${actions.service.rate_limit.bucket_key}"}}}]}]`),
			want: [2]string{"a,b", "a,b"}},
		{name: "template, key too long",
			doc: rlReads(`"req.headers['x-long']"`, `,{"actions":[{"type":"log","config":{"metadata":{"v":
				"${actions.service.rate_limit.bucket_key.size()}|${actions.service.rate_limit.bucket_key.endsWith('a...')}|${actions.service.rate_limit.error.code}|${actions.service.rate_limit.error.message}"}}}]}]`),
			req: func(r *Request) { r.Header["X-Long"] = []string{long} },
			want: [2]string{
				fmt.Sprintf("%d|true|%s|the bucket key is longer than %d bytes and was truncated", limits.MaxBucketKeyBytes+3, ErrCodeBucketKeyTooLong, limits.MaxBucketKeyBytes),
				fmt.Sprintf("%d|true|%s|the bucket key is longer than %d bytes and was truncated", limits.MaxBucketKeyBytes+3, ErrCodeBucketKeyTooLong, limits.MaxBucketKeyBytes)}},
		{name: "custom-response body",
			doc:  rlReads(`"req.host"`, `,{"expressions":["actions.service.rate_limit.limited"],"actions":[{"type":"custom-response","config":{"status_code":429,"body":"${actions.service.rate_limit.bucket_key}"}}]}]`),
			want: [2]string{"", "body api.example.com:8443"}},
		{name: "outbound only",
			doc: rlReads(`"conn.client_ip", "req.host"`, `],"on_http_response":[{"actions":[{"type":"add-headers","config":{"headers":{"x-v":
				"${actions.service.rate_limit.bucket_key}|${actions.service.rate_limit.limited}|${actions.service.rate_limit.error.code}"}}}]}]`),
			outbound: true,
			want:     [2]string{"198.51.100.10,api.example.com:8443|false|", "198.51.100.10,api.example.com:8443|true|"}},
		{name: "outbound expression",
			doc: rlReads(`"conn.client_ip"`, `],"on_http_response":[{"expressions":["actions.service.rate_limit.limited"],
				"actions":[{"type":"add-headers","config":{"headers":{"x-v":"limited"}}}]}]`),
			outbound: true,
			want:     [2]string{"", "limited"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, sink := newTestEngine(t, Options{})
			p := mustCompile(t, e, tc.doc, CompileOptions{})
			for i := range 2 {
				sink.reset()
				req := testRequest()
				if tc.req != nil {
					tc.req(req)
				}
				in := p.Inbound(req)
				var got string
				switch {
				case tc.outbound:
					if in.vars == nil {
						t.Fatal("the inbound result carries no variables for the outbound rules")
					}
					out := p.Outbound(req, testResponse(), &in)
					for _, ed := range out.HeaderEdits {
						got = ed.Value
					}
				case in.Verdict == Respond:
					got = "body " + in.Body
					if in.vars != nil {
						t.Error("a policy without outbound rules carries variables in its result")
					}
				default:
					for _, l := range sink.logs {
						got = l.Metadata["v"]
					}
					if in.vars != nil {
						t.Error("a policy without outbound rules carries variables in its result")
					}
				}
				if got != tc.want[i] {
					t.Errorf("request %d: got %q, want %q (sink errors %q)", i, got, tc.want[i], sink.errors())
				}
			}
		})
	}
}

// TestResultVariablesNotRead checks that a policy reading no result
// variable neither sets nor carries them, and that its evaluation does not
// allocate.
func TestResultVariablesNotRead(t *testing.T) {
	e, _ := newTestEngine(t, Options{})
	for _, doc := range []string{
		`{"on_http_request":[{"actions":[{"type":"rate-limit","config":` + rlConfig(1000000, "60s", `"conn.client_ip", "req.headers['accept']", "req.host"`) + `}]}]}`,
		`{"on_http_request":[{"actions":[{"type":"rate-limit","config":` + rlConfig(1000000, "60s", `"conn.client_ip"`) + `}]}],
		  "on_http_response":[{"expressions":["res.status_code >= 500"],"actions":[{"type":"add-headers","config":{"headers":{"x-v":"${res.status_code}"}}}]}]}`,
	} {
		p := mustCompile(t, e, doc, CompileOptions{})
		if p.carry || slices.Contains(p.reads, true) {
			t.Fatalf("reads %v, carry %v for %s", p.reads, p.carry, doc)
		}
		req := testRequest()
		if res := p.Inbound(req); res.vars != nil || res.Verdict != Continue {
			t.Fatalf("%+v", res)
		}
		if raceEnabled {
			continue
		}
		allocs := testing.AllocsPerRun(100, func() {
			if res := p.Inbound(req); res.Verdict != Continue {
				t.Fatal(res)
			}
		})
		if allocs != 0 {
			t.Errorf("%v allocations per evaluation of %s", allocs, doc)
		}
	}
}

// TestResultVariablesReadSome checks the granularity: a policy that reads
// only limited gets limited, and bucket_key is never built.
func TestResultVariablesReadSome(t *testing.T) {
	e, _ := newTestEngine(t, Options{})
	p := mustCompile(t, e, rlReads(`"conn.client_ip"`, `],"on_http_response":[{"expressions":["actions.service.rate_limit.limited"],"actions":[{"type":"log"}]}]`), CompileOptions{})
	p.Inbound(testRequest())
	in := p.Inbound(testRequest())
	if v := resultVar(t, e, in, rlLimited); !v.b {
		t.Error("limited not carried")
	}
	if v := resultVar(t, e, in, rlBucketKey); v.s != "" {
		t.Errorf("bucket_key %q was built though nothing reads it", v.s)
	}
	// Only what the policy reads is carried: one variable of the
	// engine's many.
	if len(in.vars) != 1 || len(in.varSlots) != 1 {
		t.Errorf("the result carries %d variables (slots %v), want 1", len(in.vars), in.varSlots)
	}
}

// TestResultVariablesLazyMatchesEager evaluates documents twice, on two
// engines: as compiled, and with every result variable materialised and
// carried, as evaluation did before it became lazy. Everything observable
// (results, outbound results, logs, reported errors) must be the same.
func TestResultVariablesLazyMatchesEager(t *testing.T) {
	tagRead := `{"inbound":[{"actions":[{"type":"tag","config":{"value":"${req.method}"}}]},
		{"expressions":["actions.service.tag.count == 7"],"actions":[{"type":"log","config":{"metadata":{"v":"${actions.service.tag.value}"}}}]}]}`
	docs := []string{
		rlDoc(2, "60s", `"conn.client_ip"`, ""),
		rlDoc(2, "60s", `"conn.client_ip", "req.headers['accept']", "req.host"`, `"enforce":false`),
		rlReads(`"conn.client_ip"`, "]"),
		rlReads(`"req.headers['x-long']", "conn.client_ip"`, `,{"actions":[{"type":"log","config":{"metadata":{
			"k":"${actions.service.rate_limit.bucket_key}","c":"${actions.service.rate_limit.error.code}","m":"${actions.service.rate_limit.error.message}"}}}]}]`),
		// Read before the action runs (the zero value), then after.
		`{"on_http_request":[{"expressions":["actions.service.rate_limit.bucket_key == ''"],"actions":[{"type":"log","config":{"metadata":{"before":"${actions.service.rate_limit.limited}"}}}]},
		  {"actions":[{"type":"rate-limit","config":` + rlConfig(2, "60s", `"conn.client_ip"`) + `}]},
		  {"actions":[{"type":"add-headers","config":{"headers":{"x-k":"${actions.service.rate_limit.bucket_key}"}}}]}]}`,
		// Two rate-limit actions; the variables hold the last execution's values.
		`{"on_http_request":[{"actions":[
			{"type":"rate-limit","config":` + rlConfig(5, "60s", `"conn.client_ip"`) + `},
			{"type":"log","config":{"metadata":{"first":"${actions.service.rate_limit.bucket_key}"}}},
			{"type":"rate-limit","config":{"name":"per-host","algorithm":"sliding_window","capacity":2,"rate":"60s","bucket_key":["req.host", "getReqHeader('accept')"]}},
			{"type":"log","config":{"metadata":{"second":"${actions.service.rate_limit.bucket_key}"}}}]}]}`,
		// Outbound rules reading the inbound variables.
		`{"on_http_request":[{"actions":[{"type":"rate-limit","config":` + rlLog(2, `"conn.client_ip"`) + `}]}],
		  "on_http_response":[{"expressions":["actions.service.rate_limit.limited"],"actions":[{"type":"custom-response","config":{"status_code":503,"body":"${actions.service.rate_limit.bucket_key}"}}]},
		    {"actions":[{"type":"add-headers","config":{"headers":{"x-e":"${actions.service.rate_limit.error.code}"}}}]}]}`,
		// Reading nothing, with and without outbound rules.
		`{"on_http_request":[{"actions":[{"type":"rate-limit","config":` + rlConfig(2, "60s", `"conn.client_ip"`) + `}]}]}`,
		`{"on_http_request":[{"actions":[{"type":"rate-limit","config":` + rlConfig(2, "60s", `"conn.client_ip"`) + `}]}],
		  "on_http_response":[{"actions":[{"type":"add-headers","config":{"headers":{"x-s":"${res.status_code}"}}}]}]}`,
		// A host action's variables, read and not read.
		tagRead,
		`{"inbound":[{"actions":[{"type":"tag","config":{"value":"${req.method}"}}]}]}`,
	}
	type record struct {
		In, Out Result
		Logs    []LogEntry
		Errs    []string
	}
	run := func(t *testing.T, doc string, eager bool) []record {
		e, sink := newTestEngine(t, Options{Actions: []ActionType{tagType{}}})
		p := mustCompile(t, e, doc, CompileOptions{})
		if eager {
			p.carrySlots = nil
			for i := range p.reads {
				p.reads[i] = true
				p.carrySlots = append(p.carrySlots, i)
			}
			p.carry = true
		}
		var recs []record
		for i := range 8 {
			sink.reset()
			req := testRequest()
			req.Time = t1.Add(time.Duration(i) * time.Second)
			req.Conn.ClientAddr = netip.AddrPortFrom(netip.AddrFrom4([4]byte{198, 51, 100, byte(10 + i%3)}), 1)
			req.Header["Accept"] = []string{"a", strings.Repeat("b", i%2)}
			if i >= 6 {
				req.Header["X-Long"] = []string{strings.Repeat("x", limits.MaxBucketKeyBytes)}
			}
			var r record
			r.In = p.Inbound(req)
			if r.In.Verdict == Continue {
				r.Out = p.Outbound(req, testResponse(), &r.In)
			}
			r.In.vars, r.Out.vars = nil, nil
			r.In.varSlots, r.Out.varSlots = nil, nil
			r.Logs = append(r.Logs, sink.logs...)
			r.Errs = sink.errors()
			recs = append(recs, r)
		}
		return recs
	}
	for i, doc := range docs {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			lazy, eager := run(t, doc, false), run(t, doc, true)
			if !reflect.DeepEqual(lazy, eager) {
				t.Errorf("lazy evaluation differs from eager:\n%+v\n%+v", lazy, eager)
			}
		})
	}
}

// TestBucketKeyParts checks that the allocation-free key builders encode
// exactly as ratelimit.AppendKeyPart of the textual value, so that buckets
// keep their meaning.
func TestBucketKeyParts(t *testing.T) {
	for _, s := range []string{"198.51.100.10", "0.0.0.0", "::", "::1", "2001:db8::a", "::ffff:10.0.0.1",
		"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "fe80::1%eth0", "fe80::1%" + strings.Repeat("z", 200), ""} {
		var ip netip.Addr
		if s != "" {
			ip = netip.MustParseAddr(s)
		}
		for _, prefix := range []string{"", "\x03abc"} {
			want := ratelimit.AppendKeyPart([]byte(prefix), addrString(ip))
			if got := appendAddrKeyPart([]byte(prefix), ip); string(got) != string(want) {
				t.Errorf("%q: %q, want %q", s, got, want)
			}
		}
	}
	for _, vals := range [][]string{nil, {""}, {"a"}, {"a", "b"}, {"", ""}, {"a,b", "c"}, {strings.Repeat("v", 200), "w"}, strings.Split(strings.Repeat("x,", 100), ",")} {
		want := ratelimit.AppendKeyPart([]byte("p"), strings.Join(vals, ","))
		if got := appendJoinedKeyPart([]byte("p"), vals); string(got) != string(want) {
			t.Errorf("%q: %q, want %q", vals, got, want)
		}
	}
}

// TestRateLimitBucketKey checks end to end that a request counts in the
// bucket of the documented key: ratelimit.AppendKeyPart of each element's
// text (the client IP as conn.client_ip shows it, a header's values joined
// by ","), truncated to limits.MaxBucketKeyBytes.
func TestRateLimitBucketKey(t *testing.T) {
	tests := []struct {
		name  string
		keys  string
		req   func(*Request)
		parts []string
	}{
		{"client IPv4", `"conn.client_ip"`, nil, []string{"198.51.100.10"}},
		{"client IPv6 with zone", `"conn.client_ip"`, func(r *Request) { r.Conn.ClientAddr = netip.MustParseAddrPort("[fe80::1%eth0]:1") }, []string{"fe80::1"}},
		{"client IPv4-mapped", `"conn.client_ip"`, func(r *Request) { r.Conn.ClientAddr = netip.MustParseAddrPort("[::ffff:1.2.3.4]:1") }, []string{"1.2.3.4"}},
		{"unknown client", `"conn.client_ip"`, func(r *Request) { r.Conn.ClientAddr = netip.AddrPort{} }, []string{""}},
		{"tuple", `"req.host", "conn.client_ip", "req.headers['accept']", "getReqHeader('x-none')"`, nil,
			[]string{"api.example.com:8443", "198.51.100.10", "a,b", ""}},
		{"long", `"req.headers['x-long']"`, func(r *Request) {
			r.Header["X-Long"] = []string{strings.Repeat("l", 300), strings.Repeat("m", 2*limits.MaxBucketKeyBytes)}
		},
			[]string{strings.Repeat("l", 300) + "," + strings.Repeat("m", 2*limits.MaxBucketKeyBytes)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := newTestEngine(t, Options{})
			p := mustCompile(t, e, `{"on_http_request":[{"actions":[{"type":"rate-limit","config":`+rlConfig(1, "60s", tc.keys)+`}]}]}`, CompileOptions{})
			req := testRequest()
			if tc.req != nil {
				tc.req(req)
			}
			if res := p.Inbound(req); res.Verdict != Continue {
				t.Fatal(res)
			}
			var key []byte
			for _, s := range tc.parts {
				key = ratelimit.AppendKeyPart(key, s)
			}
			key = key[:min(len(key), limits.MaxBucketKeyBytes)]
			lim := p.in.rules[0].actions[0].action.(*rateLimitAction).lim
			if d := lim.AllowBytesAt(key, t1); d.Allowed {
				t.Errorf("the bucket of key %q is empty: the request counted elsewhere", key)
			}
			if d := lim.AllowBytesAt(append(key[:len(key):len(key)], 0), t1); !d.Allowed {
				t.Error("another key's bucket is full")
			}
		})
	}
}

// FuzzBucketKeyParts checks the key builders against
// ratelimit.AppendKeyPart on arbitrary addresses and header values.
func FuzzBucketKeyParts(f *testing.F) {
	f.Add([]byte{198, 51, 100, 10}, "", "a", "b")
	f.Add([]byte{0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, "eth0", "", "")
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1}, "", "x,y", "")
	f.Fuzz(func(t *testing.T, ipBytes []byte, zone, v1, v2 string) {
		ip, _ := netip.AddrFromSlice(ipBytes)
		if ip.Is6() {
			ip = ip.WithZone(zone)
		}
		want := ratelimit.AppendKeyPart([]byte("k"), addrString(ip))
		if got := appendAddrKeyPart([]byte("k"), ip); string(got) != string(want) {
			t.Fatalf("%v: %q, want %q", ip, got, want)
		}
		for _, vals := range [][]string{{v1}, {v1, v2}, {v1, v2, v1}} {
			want := ratelimit.AppendKeyPart(nil, strings.Join(vals, ","))
			if got := appendJoinedKeyPart(nil, vals); string(got) != string(want) {
				t.Fatalf("%q: %q, want %q", vals, got, want)
			}
		}
	})
}
