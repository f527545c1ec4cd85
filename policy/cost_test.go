package policy

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane/policy/limits"
)

// costDoc is a document whose first rule answers "matched" when expr holds
// and whose second answers "next": an evaluation that ran out of budget
// in the first rule and went on would answer "next" (failing open).
func costDoc(key, expr string) string {
	return fmt.Sprintf(`{%q:[
		{"name":"big","expressions":[%q],"actions":[{"type":"custom-response","config":{"body":"matched"}}]},
		{"name":"next","actions":[{"type":"custom-response","config":{"body":"next"}}]}]}`, key, expr)
}

// wantCostLimit checks that the sink got exactly one runtime error, the
// budget's, at loc.
func wantCostLimit(t *testing.T, sink *recSink, loc string) {
	t.Helper()
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if len(sink.errs) != 1 || !errors.Is(sink.errs[0], ErrCostLimit) || sink.errs[0].Location != loc {
		var got []string
		for _, e := range sink.errs {
			got = append(got, e.Error())
		}
		t.Fatalf("sink errors %q; want one ErrCostLimit at %s", got, loc)
	}
}

// TestCostLimitBothPaths is the first case of issue 12 item 2: with a
// 40,000-byte path, req.url.path.contains(req.url.path) costs
// 16,000,800 by CEL's model. It used to be true natively while cel-go
// stopped it; now both paths stop it as a runtime error, before doing the
// work, and the evaluation ends fail closed.
func TestCostLimitBothPaths(t *testing.T) {
	for _, tc := range []struct {
		name, expr string
		native     bool
	}{
		{"native", "req.url.path.contains(req.url.path)", true},
		{"CEL", "req.url.path.lowerAscii().contains(req.url.path)", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, sink := newTestEngine(t, Options{})
			p := mustCompile(t, e, costDoc(KeyInbound, tc.expr), CompileOptions{})
			if got := p.in.rules[0].conds[0].native != nil; got != tc.native {
				t.Fatalf("lowered natively: %v, want %v", got, tc.native)
			}
			req := testRequest()
			if res := p.Inbound(req); res.Body != "matched" {
				t.Fatalf("small input: %+v %q", res, sink.errors())
			}
			req.Path = "/" + strings.Repeat("a", 39_999)
			native, lowered, celRes, celErr, cc := evalCondCost(t, p, Inbound, req, nil, nil, 0)
			if !errors.Is(celErr, ErrCostLimit) || celRes != triErr {
				t.Fatalf("CEL: %v %v; want ErrCostLimit", celRes, celErr)
			}
			if lowered && (native != triErr || !cc.nativeOut || cc.native > limits.MaxEvaluationCost) {
				t.Fatalf("native: %v, out of budget %v, cost %d", native, cc.nativeOut, cc.native)
			}
			res := p.Inbound(req)
			if res.Verdict != Respond || res.StatusCode != http.StatusForbidden || res.Body != "" || res.Location != "inbound[0].expressions[0]" {
				t.Fatalf("large input: %+v; want a 403 located at the expression", res)
			}
			wantCostLimit(t, sink, "inbound[0].expressions[0]")
		})
	}
}

// TestCostLimitFailsClosed checks the verdict of an evaluation out of
// budget in each place: outbound replaces the response with 502, a
// connection is closed, a template or a from regex ends evaluation as an
// expression does.
func TestCostLimitFailsClosed(t *testing.T) {
	long := "/" + strings.Repeat("a", 100_000)
	tests := []struct {
		name   string
		target Target
		doc    string
		req    func(*Request)
		want   Result
		loc    string
	}{
		{name: "outbound", doc: costDoc(KeyOutbound, "req.url.path.contains(req.url.path)"),
			req:  func(r *Request) { r.Path = long },
			want: Result{Verdict: Respond, StatusCode: http.StatusBadGateway, Location: "outbound[0].expressions[0]"}, loc: "outbound[0].expressions[0]"},
		{name: "string extension", doc: costDoc(KeyInbound, "req.url.path.lowerAscii() == 'x'"),
			req:  func(r *Request) { r.Path = "/" + strings.Repeat("A", 2<<20) },
			want: Result{Verdict: Respond, StatusCode: http.StatusForbidden, Location: "inbound[0].expressions[0]"}, loc: "inbound[0].expressions[0]"},
		{name: "template", doc: `{"inbound":[{"actions":[{"type":"add-headers","config":{"headers":{"x":"${string(req.url.path.lowerAscii().contains(req.url.path))}"}}}]},
			{"actions":[{"type":"custom-response","config":{"body":"next"}}]}]}`,
			req:  func(r *Request) { r.Path = long },
			want: Result{Verdict: Respond, StatusCode: http.StatusForbidden, Location: "inbound[0].actions[0]"}, loc: `inbound[0].actions[0].config.headers["x"]`},
		{name: "native template", doc: `{"inbound":[{"actions":[{"type":"add-headers","config":{"headers":{"x":"${req.headers['x-a'][0]}"}}}]}]}`,
			req:  func(r *Request) { r.Header["X-A"] = []string{"a"} },
			want: Result{HeaderEdits: []HeaderEdit{{Name: "x", Value: "a"}}}},
		{name: "from regex", doc: `{"inbound":[{"actions":[{"type":"redirect","config":{"from":"(a{30}){30}b","to":"https://x/"}}]},
			{"actions":[{"type":"custom-response","config":{"body":"next"}}]}]}`,
			req:  func(r *Request) { r.Path = long },
			want: Result{Verdict: Respond, StatusCode: http.StatusForbidden, Location: "inbound[0].actions[0]"}, loc: "inbound[0].actions[0]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, sink := newTestEngine(t, Options{})
			p := mustCompile(t, e, tc.doc, CompileOptions{Target: tc.target})
			req := testRequest()
			tc.req(req)
			var res Result
			if strings.Contains(tc.doc, KeyOutbound) {
				res = p.Outbound(req, testResponse(), nil)
			} else {
				res = p.Inbound(req)
			}
			if fmt.Sprint(res) != fmt.Sprint(tc.want) {
				t.Fatalf("result %+v, want %+v; sink %q", res, tc.want, sink.errors())
			}
			if tc.loc == "" {
				if errs := sink.errors(); len(errs) > 0 {
					t.Fatalf("sink %q", errs)
				}
				return
			}
			wantCostLimit(t, sink, tc.loc)
		})
	}
	t.Run("connection", func(t *testing.T) {
		e, sink := newTestEngine(t, Options{})
		p := mustCompile(t, e, `{"on_tcp_connect":[{"expressions":["conn.tls.sni.matches('(a{10}){10}b')"],"actions":[{"type":"log"}]},
			{"actions":[{"type":"log"}]}]}`, CompileOptions{Target: TargetConnection})
		c := testRequest().Conn
		c.TLS.ServerName = strings.Repeat("a", 1<<20)
		if res := p.Connect(&c, t1); res.Verdict != Close || res.Location != "on_tcp_connect[0].expressions[0]" {
			t.Fatalf("%+v", res)
		}
		wantCostLimit(t, sink, "on_tcp_connect[0].expressions[0]")
	})
}

// realisticRegexes is a 20-regex policy of the kind issue 12 item 4
// measured at 283-416 ms per request with a 1 MiB path.
func realisticRegexes() string {
	pats := []string{`^/api/v[0-9]+/admin`, `\.(php|asp|aspx|jsp)$`, `/\.git/`, `/wp-(admin|login)`, `(?i)select.+from`,
		`(?i)union.+select`, `\.\./`, `%2e%2e`, `(?i)<script`, `/etc/passwd`,
		`/cgi-bin/`, `(?i)\.env$`, `/server-status`, `(?i)phpmyadmin`, `/actuator/`,
		`/\.well-known/security\.txt$`, `[;|&]\s*(cat|ls|id)\b`, `/debug/pprof`, `(?i)/xmlrpc\.php`, `\$\{jndi:`}
	var rules []string
	for i, p := range pats {
		rules = append(rules, fmt.Sprintf(`{"name":"r%d","expressions":[%q],"actions":[{"type":"deny"}]}`, i, "req.url.path.matches('"+strings.ReplaceAll(p, `\`, `\\`)+"')"))
	}
	return `{"inbound":[` + strings.Join(rules, ",") + `]}`
}

// TestEvaluationBudgetLargePaths is issue 12 item 4: a realistic 20-regex
// policy with a 1 MiB path, and the costliest accepted single regex with a
// 100 KB path, used to run every regex to completion (hundreds of
// milliseconds, seconds). The budget now stops them before the regex
// that would exceed it runs: a runtime error, and a 403.
func TestEvaluationBudgetLargePaths(t *testing.T) {
	tests := []struct {
		name, doc string
		path      int
	}{
		{"20 regexes, 1 MiB path", realisticRegexes(), 1 << 20},
		{"20 regexes, 100 KB path", realisticRegexes(), 100_000},
		{"costly regex, 100 KB path", `{"inbound":[{"expressions":["req.url.path.matches('(a{30}){30}b')"],"actions":[{"type":"deny","config":{"status_code":404}}]}]}`, 100_000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, sink := newTestEngine(t, Options{})
			p := mustCompile(t, e, tc.doc, CompileOptions{})
			req := testRequest()
			if res := p.Inbound(req); res.Verdict != Continue {
				t.Fatalf("small input: %+v %q", res, sink.errors())
			}
			req.Path = "/" + strings.Repeat("a", tc.path-1)
			st := e.states.Get().(*evalState)
			st.begin(p, Inbound, req, nil, nil)
			p.run(st, &p.in)
			spent, out := st.cost, st.exhausted
			var res Result
			st.finish(&res)
			e.states.Put(st)
			if !out || spent > limits.MaxEvaluationCost {
				t.Fatalf("ran out of budget: %v, spent %d of %d", out, spent, limits.MaxEvaluationCost)
			}
			if res.Verdict != Respond || res.StatusCode != http.StatusForbidden || !strings.HasSuffix(res.Location, "].expressions[0]") {
				t.Fatalf("%+v", res)
			}
			wantCostLimit(t, sink, res.Location)
		})
	}
}

// manyRegexes is the document of issue 12 item 3: n rules of one
// expression each, expr(i), in at most limits.MaxRulesPerPhase rules per phase
// (32 expressions each).
func manyExpressions(n int, expr func(i int) string) string {
	var rules []string
	for i := 0; i < n; i += limits.MaxExpressionsPerRule {
		var exprs []string
		for j := i; j < n && j < i+limits.MaxExpressionsPerRule; j++ {
			exprs = append(exprs, fmt.Sprintf("%q", expr(j)))
		}
		rules = append(rules, `{"expressions":[`+strings.Join(exprs, ",")+`],"actions":[{"type":"deny"}]}`)
	}
	return `{"inbound":[` + strings.Join(rules, ",") + `]}`
}

// TestDocumentBudget checks the per-document limits, each refusing the
// document with one violation naming it, at the expression that went
// over, and checking nothing after it.
func TestDocumentBudget(t *testing.T) {
	letters := "abcdefghijklmnopqrstuvwxyz"
	tests := []struct {
		name string
		doc  string
		want string
	}{
		{"3,100 costly regexes", manyExpressions(3100, func(int) string { return "req.url.path.matches('(a{30}){30}')" }),
			"inbound[0].expressions[1]: the estimated worst-case costs of the document's expressions, templates and from regexes total more than 1000000 (MaxDocumentCost)"},
		{"distinct regexes", manyExpressions(40, func(i int) string { return "'a'.matches('(" + letters[i%26:i%26+1] + "{30}){30}')" }),
			"inbound[0].expressions[10]: 1:13: the document's regular expressions would total 10582 RE2 instructions, over the limit of 10000 (MaxDocumentRegexProgramSize)"},
		{"nodes", manyExpressions(40, func(int) string { return "1 in [" + strings.Repeat("1,", 1900) + "1]" }),
			fmt.Sprintf("inbound[0].expressions[%d]: the document's expressions total more than %d AST nodes (MaxDocumentNodes)", limits.MaxDocumentNodes/(limits.ExpressionOverheadNodes+1903), limits.MaxDocumentNodes)},
		{"expressions", manyExpressions(600, func(int) string { return "true" }),
			fmt.Sprintf("inbound[%d].expressions[%d]: the document's expressions total more than %d AST nodes (MaxDocumentNodes)",
				limits.MaxDocumentNodes/(limits.ExpressionOverheadNodes+1)/limits.MaxExpressionsPerRule, limits.MaxDocumentNodes/(limits.ExpressionOverheadNodes+1)%limits.MaxExpressionsPerRule, limits.MaxDocumentNodes)},
	}
	e, _ := newTestEngine(t, Options{})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.CompileJSON([]byte(tc.doc), CompileOptions{})
			wantViolations(t, err, []string{tc.want})
		})
	}
}
