package policy

import (
	"net/http"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/policy/limits"
)

// benchPolicy is the typical 5-rule condition-only inbound policy of the
// performance targets: equality on the method, a prefix on the path, a
// regex, an in-list and a CIDR check on the client IP. The benchmark
// request matches none of them, so every condition is evaluated.
const benchPolicy = `{"inbound":[
 {"name":"no-delete","expressions":["req.method == 'DELETE'"],"actions":[{"type":"deny"}]},
 {"name":"admin","expressions":["req.url.path.startsWith('/admin')"],"actions":[{"type":"deny"}]},
 {"name":"legacy","expressions":["req.url.path.matches('^/v[0-9]+/internal/')"],"actions":[{"type":"deny","config":{"status_code":404}}]},
 {"name":"hosts","expressions":["req.host in ['internal.example.com', 'admin.example.com', 'staff.example.com']"],"actions":[{"type":"deny"}]},
 {"name":"lan","expressions":["inCidrRange(conn.client_ip, '10.0.0.0/8')"],"actions":[{"type":"deny"}]}
]}`

func benchRequest() *Request {
	return &Request{
		Method:   "GET",
		Scheme:   "https",
		Host:     "www.example.com",
		Path:     "/api/v1/items",
		RawQuery: "page=2",
		Header: http.Header{
			"User-Agent": {"Mozilla/5.0 (X11; Linux x86_64) Firefox/126.0"},
			"Accept":     {"*/*"},
		},
		ContentLength: -1,
		Proto:         "HTTP/1.1",
		Conn: Conn{
			ClientAddr: netip.MustParseAddrPort("203.0.113.7:51234"),
			ServerAddr: netip.MustParseAddrPort("192.0.2.1:443"),
		},
		Time: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC),
	}
}

func mustCompileB(b *testing.B, doc string) *Policy {
	b.Helper()
	e, err := NewEngine(Options{})
	if err != nil {
		b.Fatal(err)
	}
	p, err := e.CompileJSON([]byte(doc), CompileOptions{})
	if err != nil {
		b.Fatal(err)
	}
	return p
}

func BenchmarkEvaluate5Rules(b *testing.B) {
	p := mustCompileB(b, benchPolicy)
	req := benchRequest()
	b.ReportAllocs()
	for b.Loop() {
		if res := p.Inbound(req); res.Verdict != Continue {
			b.Fatal(res.Verdict)
		}
	}
}

// handWritten5Rules is the hand-written Go twin of benchPolicy.
type handWritten5Rules struct {
	legacy *regexp.Regexp
	hosts  []string
	lan    netip.Prefix
}

func (h *handWritten5Rules) eval(r *Request) (Verdict, int) {
	if r.Method == "DELETE" {
		return Respond, 403
	}
	if strings.HasPrefix(r.Path, "/admin") {
		return Respond, 403
	}
	if h.legacy.MatchString(r.Path) {
		return Respond, 404
	}
	if slices.Contains(h.hosts, r.Host) {
		return Respond, 403
	}
	if h.lan.Contains(r.Conn.ClientAddr.Addr().Unmap()) {
		return Respond, 403
	}
	return Continue, 0
}

func BenchmarkEvaluate5RulesHandWritten(b *testing.B) {
	h := &handWritten5Rules{
		legacy: regexp.MustCompile("^/v[0-9]+/internal/"),
		hosts:  []string{"internal.example.com", "admin.example.com", "staff.example.com"},
		lan:    netip.MustParsePrefix("10.0.0.0/8"),
	}
	req := benchRequest()
	b.ReportAllocs()
	for b.Loop() {
		if v, _ := h.eval(req); v != Continue {
			b.Fatal(v)
		}
	}
}

func BenchmarkEvaluate1Rule(b *testing.B) {
	p := mustCompileB(b, `{"inbound":[{"expressions":["req.method == 'DELETE'"],"actions":[{"type":"deny"}]}]}`)
	req := benchRequest()
	b.ReportAllocs()
	for b.Loop() {
		if res := p.Inbound(req); res.Verdict != Continue {
			b.Fatal(res.Verdict)
		}
	}
}

func BenchmarkCompile5Rules(b *testing.B) {
	e, err := NewEngine(Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.CompileJSON([]byte(benchPolicy), CompileOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEvaluate5RulesCELOnly is benchPolicy with the native evaluators
// removed: every condition runs on cel-go with the pooled, struct-backed
// activation. It measures what the native path saves.
func BenchmarkEvaluate5RulesCELOnly(b *testing.B) {
	p := mustCompileB(b, benchPolicy)
	for i := range p.in.rules {
		for j := range p.in.rules[i].conds {
			p.in.rules[i].conds[j].native = nil
		}
	}
	req := benchRequest()
	b.ReportAllocs()
	for b.Loop() {
		if res := p.Inbound(req); res.Verdict != Continue {
			b.Fatal(res.Verdict)
		}
	}
}

func BenchmarkEvaluate5RulesParallel(b *testing.B) {
	p := mustCompileB(b, benchPolicy)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		req := benchRequest()
		for pb.Next() {
			if res := p.Inbound(req); res.Verdict != Continue {
				b.Error(res.Verdict)
				return
			}
		}
	})
}

// The same policy with a case-insensitive alternation on the User-Agent:
// Go's regexp dominates both the policy and its hand-written twin.
const benchPolicyUARegex = `{"inbound":[
 {"expressions":["req.method == 'DELETE'"],"actions":[{"type":"deny"}]},
 {"expressions":["req.url.path.startsWith('/admin')"],"actions":[{"type":"deny"}]},
 {"expressions":["req.user_agent.matches('(?i)(bot|crawler|spider)')"],"actions":[{"type":"deny","config":{"status_code":429}}]},
 {"expressions":["req.host in ['internal.example.com', 'admin.example.com', 'staff.example.com']"],"actions":[{"type":"deny"}]},
 {"expressions":["inCidrRange(conn.client_ip, '10.0.0.0/8')"],"actions":[{"type":"deny"}]}
]}`

func BenchmarkEvaluate5RulesUARegex(b *testing.B) {
	p := mustCompileB(b, benchPolicyUARegex)
	req := benchRequest()
	b.ReportAllocs()
	for b.Loop() {
		if res := p.Inbound(req); res.Verdict != Continue {
			b.Fatal(res.Verdict)
		}
	}
}

func BenchmarkEvaluate5RulesUARegexHandWritten(b *testing.B) {
	bots := regexp.MustCompile("(?i)(bot|crawler|spider)")
	hosts := []string{"internal.example.com", "admin.example.com", "staff.example.com"}
	lan := netip.MustParsePrefix("10.0.0.0/8")
	req := benchRequest()
	eval := func(r *Request) Verdict {
		ua := ""
		if v := r.Header["User-Agent"]; len(v) > 0 {
			ua = v[0]
		}
		if r.Method == "DELETE" || strings.HasPrefix(r.Path, "/admin") || bots.MatchString(ua) ||
			slices.Contains(hosts, r.Host) || lan.Contains(r.Conn.ClientAddr.Addr().Unmap()) {
			return Respond
		}
		return Continue
	}
	b.ReportAllocs()
	for b.Loop() {
		if v := eval(req); v != Continue {
			b.Fatal(v)
		}
	}
}

// BenchmarkEvaluateCELExpression is a condition that is not reduced to
// native code (a comprehension over the headers).
func BenchmarkEvaluateCELExpression(b *testing.B) {
	p := mustCompileB(b, `{"inbound":[{"expressions":["req.headers.exists(k, k.startsWith('x-internal-'))"],"actions":[{"type":"deny"}]}]}`)
	req := benchRequest()
	b.ReportAllocs()
	for b.Loop() {
		if res := p.Inbound(req); res.Verdict != Continue {
			b.Fatal(res.Verdict)
		}
	}
}

func BenchmarkEvaluateRateLimit(b *testing.B) {
	p := mustCompileB(b, `{"on_http_request":[{"actions":[{"type":"rate-limit","config":{"name":"per-ip","algorithm":"sliding_window",
		"capacity":2000000000,"rate":"60s","bucket_key":["conn.client_ip","req.headers['user-agent']"]}}]}]}`)
	req := benchRequest()
	b.ReportAllocs()
	for b.Loop() {
		if res := p.Inbound(req); res.Verdict != Continue {
			b.Fatal(res.Verdict)
		}
	}
}

// BenchmarkEvaluateRateLimitClientPrefix is BenchmarkEvaluateRateLimit
// keyed by the client's IPv6 /64 (conn.client_ip_prefix): it must not
// allocate either.
func BenchmarkEvaluateRateLimitClientPrefix(b *testing.B) {
	p := mustCompileB(b, `{"on_http_request":[{"actions":[{"type":"rate-limit","config":{"name":"per-net","algorithm":"sliding_window",
		"capacity":2000000000,"rate":"60s","bucket_key":["conn.client_ip_prefix"],"client_ip_prefix":{"ipv6":56}}}]}]}`)
	req := benchRequest()
	req.Conn.ClientAddr = netip.MustParseAddrPort("[2001:db8:1:2:aaaa:bbbb:cccc:dddd]:51234")
	b.ReportAllocs()
	for b.Loop() {
		if res := p.Inbound(req); res.Verdict != Continue {
			b.Fatal(res.Verdict)
		}
	}
}

// BenchmarkEvaluateRateLimitCELKey is BenchmarkEvaluateRateLimit with a
// bucket key element that is a CEL expression the native path evaluates:
// it must not allocate either.
func BenchmarkEvaluateRateLimitCELKey(b *testing.B) {
	p := mustCompileB(b, `{"on_http_request":[{"actions":[{"type":"rate-limit","config":{"name":"per-agent","algorithm":"sliding_window",
		"capacity":2000000000,"rate":"60s","bucket_key":["conn.client_ip","req.headers['user-agent'][0]"]}}]}]}`)
	req := benchRequest()
	b.ReportAllocs()
	for b.Loop() {
		if res := p.Inbound(req); res.Verdict != Continue {
			b.Fatal(res.Verdict)
		}
	}
}

// BenchmarkEvaluateRateLimitHeaders is BenchmarkEvaluateRateLimit with
// the x-ratelimit response headers: the header map and values allocate,
// which a config without headers never pays.
func BenchmarkEvaluateRateLimitHeaders(b *testing.B) {
	p := mustCompileB(b, `{"on_http_request":[{"actions":[{"type":"rate-limit","config":{"name":"per-ip","algorithm":"sliding_window",
		"capacity":2000000000,"rate":"60s","bucket_key":["conn.client_ip"],"headers":"x-ratelimit"}}]}]}`)
	req := benchRequest()
	b.ReportAllocs()
	for b.Loop() {
		if res := p.Inbound(req); res.Verdict != Continue {
			b.Fatal(res.Verdict)
		}
	}
}

func BenchmarkEvaluateAddHeaders(b *testing.B) {
	p := mustCompileB(b, `{"inbound":[{"actions":[{"type":"add-headers","config":{"headers":{"x-client-ip":"${conn.client_ip}","x-route":"${req.method} ${req.url.path}"}}}]}]}`)
	req := benchRequest()
	b.ReportAllocs()
	for b.Loop() {
		if res := p.Inbound(req); len(res.HeaderEdits) != 2 {
			b.Fatal(res)
		}
	}
}

func BenchmarkConnect(b *testing.B) {
	e, err := NewEngine(Options{})
	if err != nil {
		b.Fatal(err)
	}
	p, err := e.CompileJSON([]byte(`{"on_tcp_connect":[
		{"expressions":["inCidrRanges(conn.client_ip, ['10.0.0.0/8', '192.168.0.0/16'])"],"actions":[{"type":"deny"}]},
		{"expressions":["!conn.tls.sni.endsWith('.example.com')"],"actions":[{"type":"deny"}]}]}`), CompileOptions{Target: TargetConnection})
	if err != nil {
		b.Fatal(err)
	}
	c := benchRequest().Conn
	c.TLS = &TLSInfo{ServerName: "www.example.com"}
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	b.ReportAllocs()
	for b.Loop() {
		if res := p.Connect(&c, now); res.Verdict != Continue {
			b.Fatal(res.Verdict)
		}
	}
}

func BenchmarkParse(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse([]byte(benchPolicy)); err != nil {
			b.Fatal(err)
		}
	}
}

// benchRateLimitClientIP is the policy of the edgeproxy load benchmark: one
// limiter keyed on the client IP, with a capacity no client reaches, and
// no expression reading its result variables.
const benchRateLimitClientIP = `{"on_http_request":[{"name":"per client","actions":[{"type":"rate-limit","config":{
	"name":"bench","algorithm":"sliding_window","capacity":2000000000,"rate":"60s","bucket_key":["conn.client_ip"]}}]}]}`

// BenchmarkEvaluateRateLimitClientIP evaluates benchRateLimitClientIP for
// one client, or for 10,000 in turn as the edgeproxy benchmark sends them
// (every request then touches another bucket of a large table). The time
// is the Engine's clock, time.Now, as in a proxy.
func BenchmarkEvaluateRateLimitClientIP(b *testing.B) {
	for _, clients := range []int{1, 10_000} {
		b.Run(strconv.Itoa(clients)+"-clients", func(b *testing.B) {
			p := mustCompileB(b, benchRateLimitClientIP)
			reqs := make([]Request, clients)
			for i := range reqs {
				reqs[i] = *benchRequest()
				reqs[i].Time = time.Time{}
				reqs[i].Conn.ClientAddr = netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), 40000)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if res := p.Inbound(&reqs[i]); res.Verdict != Continue {
					b.Fatal(res.Verdict)
				}
				if i++; i == len(reqs) {
					i = 0
				}
			}
		})
	}
}

// BenchmarkEvaluateRateLimitReadsResults is BenchmarkEvaluateRateLimit with
// a later rule reading actions.service.rate_limit.limited and an outbound
// rule reading bucket_key: the variables are materialised and the inbound
// result carries them.
func BenchmarkEvaluateRateLimitReadsResults(b *testing.B) {
	p := mustCompileB(b, `{"on_http_request":[{"actions":[{"type":"rate-limit","config":{"name":"per-ip","algorithm":"sliding_window",
		"capacity":2000000000,"rate":"60s","bucket_key":["conn.client_ip","req.headers['user-agent']"]}}]},
		{"expressions":["actions.service.rate_limit.limited"],"actions":[{"type":"deny"}]}],
		"on_http_response":[{"expressions":["actions.service.rate_limit.bucket_key == ''"],"actions":[{"type":"deny"}]}]}`)
	req := benchRequest()
	b.ReportAllocs()
	for b.Loop() {
		if res := p.Inbound(req); res.Verdict != Continue {
			b.Fatal(res.Verdict)
		}
	}
}

// worstDocuments are the costliest documents to compile within the
// per-document limits, one per limit that binds: the most expressions
// (limits.MaxDocumentNodes with limits.ExpressionOverheadNodes), the largest
// expressions, and the most regex program (limits.MaxDocumentRegexProgramSize)
// with the node budget's remainder in small expressions.
func worstDocuments() map[string]string {
	exprs := func(n int, expr func(i int) string) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = expr(i)
		}
		return out
	}
	doc := func(list []string) string {
		var rules []string
		for i := 0; i < len(list); i += limits.MaxExpressionsPerRule {
			var q []string
			for _, x := range list[i:min(i+limits.MaxExpressionsPerRule, len(list))] {
				q = append(q, strconv.Quote(x))
			}
			rules = append(rules, `{"expressions":[`+strings.Join(q, ",")+`],"actions":[{"type":"deny"}]}`)
		}
		return `{"inbound":[` + strings.Join(rules, ",") + `]}`
	}
	small := limits.MaxDocumentNodes/(limits.ExpressionOverheadNodes+3) - 1
	big := "1 in [" + strings.Repeat("1,", 1890) + "1]"
	letters := "abcdefghij"
	regexes := exprs(10, func(i int) string {
		return "'a'.matches('(" + letters[i:i+1] + "{30}){30}" + strings.Repeat("x", 30) + "')"
	})
	rest := (limits.MaxDocumentNodes - 10*(limits.ExpressionOverheadNodes+4)) / (limits.ExpressionOverheadNodes + 3)
	return map[string]string{
		"expressions": doc(exprs(small, func(i int) string { return "req.method == '" + strconv.Itoa(i) + "'" })),
		"nodes":       doc(exprs(limits.MaxDocumentNodes/(limits.ExpressionOverheadNodes+1893), func(int) string { return big })),
		"regexes":     doc(append(regexes, exprs(rest, func(i int) string { return "req.method == '" + strconv.Itoa(i) + "'" })...)),
	}
}

// BenchmarkCompileWorstDocument compiles the worst documents the
// per-document limits accept (issue 12 item 3 targets under 50 ms and
// 20 MB).
func BenchmarkCompileWorstDocument(b *testing.B) {
	docs := worstDocuments()
	for _, name := range []string{"expressions", "nodes", "regexes"} {
		b.Run(name, func(b *testing.B) {
			e, err := NewEngine(Options{})
			if err != nil {
				b.Fatal(err)
			}
			data := []byte(docs[name])
			if _, err := e.CompileJSON(data, CompileOptions{}); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := e.CompileJSON(data, CompileOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEvaluateWorstDocument evaluates documents that use up
// limits.MaxDocumentCost with one kind of operation each, on a request at the
// bounds the cost model assumes that no rule matches: every expression
// runs at its worst. It measures what limits.MaxEvaluationCost allows an
// evaluation to cost in time.
func BenchmarkEvaluateWorstDocument(b *testing.B) {
	fill := func(expr string) string {
		e, err := NewEngine(Options{})
		if err != nil {
			b.Fatal(err)
		}
		var exprs []string
		for {
			next := append(exprs, expr)
			var rules []string
			for i := 0; i < len(next); i += limits.MaxExpressionsPerRule {
				// || so that every expression of the rule is evaluated.
				rules = append(rules, `{"expressions":[`+strconv.Quote(strings.Join(next[i:min(i+limits.MaxExpressionsPerRule, len(next))], " || "))+`],"actions":[{"type":"deny"}]}`)
			}
			doc := `{"inbound":[` + strings.Join(rules, ",") + `]}`
			if _, err := e.CompileJSON([]byte(doc), CompileOptions{}); err != nil {
				if len(exprs) == 0 {
					b.Fatal(err)
				}
				break
			}
			exprs = next
		}
		var rules []string
		for i := 0; i < len(exprs); i += limits.MaxExpressionsPerRule {
			rules = append(rules, `{"expressions":[`+strconv.Quote(strings.Join(exprs[i:min(i+limits.MaxExpressionsPerRule, len(exprs))], " || "))+`],"actions":[{"type":"deny"}]}`)
		}
		return `{"inbound":[` + strings.Join(rules, ",") + `]}`
	}
	req := benchRequest()
	req.Path = "/" + strings.Repeat("a", limits.MaxURLBytes-1)
	req.Header = http.Header{"User-Agent": {strings.Repeat("a", limits.MaxRequestHeaderBytes-100)}}
	many := benchRequest()
	many.Header = http.Header{}
	for i := range estMapEntries {
		many.Header.Set("X-H"+strconv.Itoa(i), strings.Repeat("a", limits.MaxRequestHeaderBytes/estMapEntries-20))
	}
	for _, tc := range []struct {
		name, expr string
		req        *Request
	}{
		{"regex-path", "req.url.path.matches('(?i)(bot|crawler|spider)')", req},
		{"regex-user-agent", "req.user_agent.matches('(?i)(bot|crawler|spider)')", req},
		{"contains-cel", "req.url.path.lowerAscii().contains('zz')", req},
		{"headers-exists-cel", "req.headers.exists(k, k.contains('zz') || getReqHeader(k)[0].contains('zz'))", many},
	} {
		b.Run(tc.name, func(b *testing.B) {
			doc := fill(tc.expr)
			p := mustCompileB(b, doc)
			if res := p.Inbound(tc.req); res.Verdict != Continue {
				b.Fatalf("%+v", res)
			}
			st := p.e.states.Get().(*evalState)
			st.begin(p, Inbound, tc.req, nil, nil)
			p.run(st, &p.in)
			spent := st.cost
			st.finish(new(Result))
			b.ReportAllocs()
			for b.Loop() {
				p.Inbound(tc.req)
			}
			b.ReportMetric(float64(spent), "cost")
			b.ReportMetric(float64(strings.Count(doc, tc.expr)), "exprs")
		})
	}
}
