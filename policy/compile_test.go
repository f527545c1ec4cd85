package policy

import (
	"fmt"
	"strings"
	"testing"

	"cel.dev/cel-go/common/ast"
	"github.com/edgeplane/edgeplane/policy/limits"
)

func rule(expr string) string {
	return fmt.Sprintf(`{"name":"r","expressions":[%q],"actions":[{"type":"log"}]}`, expr)
}

func TestCompileErrors(t *testing.T) {
	deep := strings.Repeat("(", 60) + "true" + strings.Repeat(")", 60)
	many := func(n int, r string) string {
		rs := make([]string, n)
		for i := range rs {
			rs[i] = r
		}
		return strings.Join(rs, ",")
	}
	tests := []struct {
		name   string
		target Target
		doc    string
		want   []string
	}{
		{name: "undeclared variable", doc: `{"inbound":[` + rule("req.nope == 1") + `]}`,
			want: []string{`inbound[0].expressions[0]: rule "r": 1:1: undeclared reference`}},
		{name: "field of a string", doc: `{"inbound":[` + rule("req.url.nope == 'x'") + `]}`,
			want: []string{`inbound[0].expressions[0]: rule "r": 1:8: type 'string' does not support field selection`}},
		{name: "not boolean", doc: `{"inbound":[` + rule("req.method") + `]}`,
			want: []string{`inbound[0].expressions[0]: rule "r": 1:1: the expression must be boolean, got string`}},
		{name: "syntax error", doc: `{"inbound":[` + rule("req.method ==") + `]}`,
			want: []string{`inbound[0].expressions[0]: rule "r": 1:14: Syntax error`}},
		{name: "line and column", doc: `{"inbound":[` + rule("req.method == 'GET' &&\n  nope") + `]}`,
			want: []string{`inbound[0].expressions[0]: rule "r": 2:3: undeclared reference to 'nope'`}},
		{name: "unnamed rule", doc: `{"inbound":[{"expressions":["1"],"actions":[{"type":"log"}]}]}`,
			want: []string{`inbound[0].expressions[0]: 1:1: the expression must be boolean, got int`}},
		{name: "empty expression", doc: `{"inbound":[` + rule(" ") + `]}`,
			want: []string{`inbound[0].expressions[0]: rule "r": the expression is empty`}},
		{name: "wrong argument type", doc: `{"inbound":[` + rule("req.method.startsWith(1)") + `]}`,
			want: []string{`inbound[0].expressions[0]: rule "r": 1:22: found no matching overload for 'startsWith'`}},
		{name: "HTTP variable in a connection policy", target: TargetConnection, doc: `{"inbound":[` + rule("req.method == 'GET'") + `]}`,
			want: []string{`inbound[0].expressions[0]: rule "r": 1:4: req.method is only available in HTTP policies`}},
		{name: "HTTP function in a connection policy", target: TargetConnection, doc: `{"on_tcp_connect":[` + rule("hasReqHeader('x')") + `]}`,
			want: []string{`on_tcp_connect[0].expressions[0]: rule "r": 1:13: hasReqHeader() is only available in HTTP policies`}},
		{name: "rate-limit result in a connection policy", target: TargetConnection, doc: `{"inbound":[` + rule("actions.service.rate_limit.limited") + `]}`,
			want: []string{`inbound[0].expressions[0]: rule "r": 1:27: actions.service.rate_limit.limited is only available in HTTP policies`}},
		{name: "response variable inbound", doc: `{"inbound":[` + rule("res.status_code == 200 && getResHeader('a') == []") + `]}`,
			want: []string{
				`inbound[0].expressions[0]: rule "r": 1:4: res.status_code is only available in outbound (on_http_response) rules`,
				`inbound[0].expressions[0]: rule "r": 1:39: getResHeader() is only available in outbound`}},
		{name: "on_tcp_connect in an HTTP policy", doc: `{"on_tcp_connect":[]}`,
			want: []string{`on_tcp_connect: on_tcp_connect is for TLS/TCP connection policies`}},
		{name: "on_http_request in a connection policy", target: TargetConnection, doc: `{"on_http_request":[]}`,
			want: []string{`on_http_request: on_http_request is for HTTP policies`}},
		{name: "outbound in a connection policy", target: TargetConnection, doc: `{"outbound":[{"actions":[{"type":"log"}]}]}`,
			want: []string{`outbound: a TLS/TCP connection policy has no outbound phase`}},
		{name: "invalid CIDR literal", doc: `{"inbound":[` + rule("inCidrRange(conn.client_ip, '10.0.0.0/33')") + `]}`,
			want: []string{`inbound[0].expressions[0]: rule "r": 1:29: inCidrRange: invalid CIDR "10.0.0.0/33"`}},
		{name: "bare address is not a CIDR", doc: `{"inbound":[` + rule("inCidrRange(conn.client_ip, '10.0.0.1')") + `]}`,
			want: []string{`inbound[0].expressions[0]: rule "r": 1:29: inCidrRange: invalid CIDR "10.0.0.1"`}},
		{name: "invalid IP literal", doc: `{"inbound":[` + rule("inCidrRange('1.2.3', '10.0.0.0/8')") + `]}`,
			want: []string{`inbound[0].expressions[0]: rule "r": 1:13: inCidrRange: invalid IP address "1.2.3"`}},
		{name: "invalid CIDR in a list", doc: `{"inbound":[` + rule("inCidrRanges(conn.client_ip, ['10.0.0.0/8', 'x', 'y'])") + `]}`,
			want: []string{`inbound[0].expressions[0]: rule "r": 1:45: inCidrRanges: invalid CIDR "x"`,
				`inbound[0].expressions[0]: rule "r": 1:50: inCidrRanges: invalid CIDR "y"`}},
		{name: "invalid regex", doc: `{"inbound":[` + rule("req.url.path.matches('[a-')") + `]}`,
			want: []string{`inbound[0].expressions[0]: rule "r": 1:22: matches: invalid regular expression: missing closing ]`}},
		{name: "regex program too large", doc: `{"inbound":[` + rule("req.url.path.matches('[a-z]{600}[0-9]{600}')") + `]}`,
			want: []string{`inbound[0].expressions[0]: rule "r": 1:22: matches: regular expression program size 1202 exceeds the limit of 1000`}},
		{name: "recursion limit", doc: `{"inbound":[` + rule(deep) + `]}`,
			want: []string{`inbound[0].expressions[0]: rule "r": expression recursion limit exceeded: 50`}},
		{name: "expression too long", doc: `{"inbound":[` + rule("req.method == '"+strings.Repeat("a", limits.MaxExpressionLength)+"'") + `]}`,
			want: []string{`inbound[0].expressions[0]: rule "r": expression code point size exceeds limit`}},
		{name: "comprehension nesting", doc: `{"inbound":[` + rule("req.headers.all(a, req.headers.all(b, req.headers.all(c, a == b)))") + `]}`,
			want: []string{`inbound[0].expressions[0]: rule "r": 1:54: comprehension exceeds nesting limit`}},
		{name: "cost limit", doc: `{"inbound":[` + rule("req.url.path.matches(req.url.query)") + `]}`,
			want: []string{`inbound[0].expressions[0]: rule "r": 1:1: the estimated worst-case cost`}},
		{name: "too many rules", doc: `{"inbound":[` + many(limits.MaxRulesPerPhase+1, `{"actions":[{"type":"log"}]}`) + `]}`,
			want: []string{`inbound: has 101 rules; at most 100`}},
		{name: "too many expressions", doc: `{"inbound":[{"expressions":[` + strings.TrimSuffix(strings.Repeat(`"true",`, limits.MaxExpressionsPerRule+1), ",") + `],"actions":[{"type":"log"}]}]}`,
			want: []string{`inbound[0].expressions: has 33 expressions; at most 32`}},
		{name: "too many actions", doc: `{"inbound":[{"actions":[` + many(limits.MaxActionsPerRule+1, `{"type":"log"}`) + `]}]}`,
			want: []string{`inbound[0].actions: has 33 actions; at most 32`}},
		{name: "no actions", doc: `{"inbound":[{"name":"empty","expressions":["true"]}]}`,
			want: []string{`inbound[0].actions: rule "empty": a rule needs at least one action`}},
		{name: "missing action type", doc: `{"inbound":[{"actions":[{"config":{}}]}]}`,
			want: []string{`inbound[0].actions[0].type: the action type is required; one of: add-headers, basic-auth, custom-response, deny, forward-internal, jwt-validation, log`}},
		{name: "unknown action type", doc: `{"outbound":[{"name":"x","actions":[{"type":"teleport"}]}]}`,
			want: []string{`outbound[0].actions[0].type: rule "x": unknown action type "teleport"; one of:`}},
		{name: "unreachable after deny", doc: `{"inbound":[{"name":"d","actions":[{"type":"deny"},{"type":"log"},{"type":"add-headers","config":{"headers":{"a":"b"}}}]}]}`,
			want: []string{`inbound[0].actions[1]: rule "d": this action can never run: actions[0] (deny) always ends evaluation`,
				`inbound[0].actions[2]: rule "d": this action can never run: actions[0] (deny)`}},
		{name: "unreachable after custom-response", doc: `{"outbound":[{"actions":[{"type":"custom-response"},{"type":"log"}]}]}`,
			want: []string{`outbound[0].actions[1]: this action can never run: actions[0] (custom-response)`}},
		{name: "unreachable after redirect without from", doc: `{"inbound":[{"actions":[{"type":"redirect","config":{"to":"https://x/"}},{"type":"log"}]}]}`,
			want: []string{`inbound[0].actions[1]: this action can never run: actions[0] (redirect)`}},
		{name: "config unknown field", doc: `{"inbound":[{"name":"r","actions":[{"type":"deny","config":{"status":403}}]}]}`,
			want: []string{`inbound[0].actions[0].config.status: rule "r": unknown field; allowed: enforce, status_code`}},
		{name: "config wrong type", doc: `{"inbound":[{"actions":[{"type":"deny","config":{"status_code":"403"}}]}]}`,
			want: []string{`inbound[0].actions[0].config.status_code: must be an integer, got string`}},
		{name: "config key case matters", doc: `{"inbound":[{"actions":[{"type":"deny","config":{"Status_Code":403}}]}]}`,
			want: []string{`inbound[0].actions[0].config.Status_Code: unknown field`}},
		{name: "config duplicate key", doc: `{"inbound":[{"actions":[{"type":"deny","config":{"status_code":403,"status_code":404}}]}]}`,
			want: []string{`inbound[0].actions[0].config: must be an object: duplicate key "status_code"`}},
		{name: "template errors", doc: `{"inbound":[{"name":"t","actions":[{"type":"add-headers","config":{"headers":{
				"a":"${req.nope}","b":"x ${req.headers}","c":"${req.host","d":"${ }","e":"${'}'}"}}}]}]}`,
			want: []string{
				`inbound[0].actions[0].config.headers["a"]: rule "t": template ${req.nope} at byte 0: 1:1: undeclared reference`,
				`inbound[0].actions[0].config.headers["b"]: rule "t": template ${req.headers} at byte 2: 1:1: a template expression must give a string`,
				`inbound[0].actions[0].config.headers["c"]: rule "t": template ${ at byte 0: unterminated ${`,
				`inbound[0].actions[0].config.headers["d"]: rule "t": template ${ at byte 0: empty expression`}},
		{name: "template unavailable variable", doc: `{"inbound":[{"actions":[{"type":"log","config":{"metadata":{"s":"${res.status_code}"}}}]}]}`,
			want: []string{`inbound[0].actions[0].config.metadata["s"]: template ${res.status_code} at byte 0: 1:4: res.status_code is only available in outbound`}},
		{name: "every problem of every rule", doc: `{"on_http_request":[` + rule("nope") + `,{"name":"b","expressions":["1 == 1", "'x'"],"actions":[{"type":"deny","config":{"status_code":200}}]}]}`,
			want: []string{
				`on_http_request[0].expressions[0]: rule "r": 1:1: undeclared reference to 'nope'`,
				`on_http_request[1].expressions[1]: rule "b": 1:1: the expression must be boolean, got string`,
				`on_http_request[1].actions[0].config.status_code: rule "b": must be between 400 and 599, got 200`}},
	}
	e, _ := newTestEngine(t, Options{})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.CompileJSON([]byte(tc.doc), CompileOptions{Target: tc.target})
			wantViolations(t, err, tc.want)
		})
	}
}

func TestCompileValid(t *testing.T) {
	e, _ := newTestEngine(t, Options{})
	docs := []struct {
		name   string
		target Target
		doc    string
	}{
		{name: "no expressions", doc: `{"inbound":[{"actions":[{"type":"deny"}]}]}`},
		{name: "redirect with from may be followed", doc: `{"inbound":[{"actions":[{"type":"redirect","config":{"from":"^http://","to":"https://"}},{"type":"log"}]}]}`},
		{name: "connection policy", target: TargetConnection, doc: `{"on_tcp_connect":[{"expressions":["inCidrRange(conn.client_ip, '10.0.0.0/8')"],"actions":[{"type":"log","config":{"metadata":{"ip":"${conn.client_ip}"}}},{"type":"deny"}]}]}`},
		{name: "nested comprehension within the cost limit", doc: `{"inbound":[` + rule("req.headers.exists(k, getReqHeader(k).exists(v, v == 'x'))") + `]}`},
		{name: "rate-limit bounds", doc: `{"inbound":[{"actions":[{"type":"rate-limit","config":{"name":"` + strings.Repeat("é", 1023) + `","algorithm":"sliding_window","capacity":2000000000,"rate":"24h","bucket_key":["req.host","conn.client_ip","req.headers['x-a']","getReqHeader('X-B')","req.host","req.host","req.host","req.host","req.host","req.host"]}},
			{"type":"rate-limit","config":{"name":"b","algorithm":"sliding_window","capacity":1,"rate":"60s","bucket_key":["req.host"],"enforce":false}},
			{"type":"rate-limit","config":{"name":"c","algorithm":"sliding_window","capacity":1,"rate":"1h30m","bucket_key":["req.host"],"enforce":null}}]}]}`},
		{name: "template with braces in strings", doc: `{"inbound":[{"actions":[{"type":"add-headers","config":{"headers":{"a":"${'}' + \"{\" + '''}'''}","b":"${{'k': 'v'}['k']}"}}}]}]}`},
	}
	for _, tc := range docs {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := e.CompileJSON([]byte(tc.doc), CompileOptions{Target: tc.target}); err != nil {
				t.Fatalf("%v\n%q", err, violations(err))
			}
		})
	}
}

func TestCompileProgrammaticDocument(t *testing.T) {
	e, _ := newTestEngine(t, Options{})
	_, err := e.Compile(&Document{
		Inbound:     []Rule{{Name: "r", Actions: []RuleAction{{Type: "log", Config: []byte(`[1]`)}, {Type: "deny", Config: []byte(`{`)}}}},
		InboundKey:  "incoming",
		OutboundKey: "later",
	}, CompileOptions{})
	wantViolations(t, err, []string{
		"incoming: unknown inbound phase name",
		"later: unknown outbound phase name",
		`incoming[0].actions[0].config: rule "r": must be a JSON object: not a JSON object`,
		`incoming[0].actions[1].config: rule "r": must be a JSON object: unexpected end of JSON`})
}

func TestCompileNilDocument(t *testing.T) {
	e, _ := newTestEngine(t, Options{})
	p, err := e.Compile(nil, CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res := p.Inbound(testRequest()); res.Verdict != Continue {
		t.Fatalf("verdict %v", res.Verdict)
	}
	if _, err := e.Compile(nil, CompileOptions{Target: 7}); err == nil {
		t.Fatal("unknown target accepted")
	}
}

// TestLowerByOverloadID checks that what is reduced to native code is
// chosen by the overload the type checker resolved, not by the function's
// name: the same call resolved to another overload (as one an extension
// library might add), or to several, stays with CEL.
func TestLowerByOverloadID(t *testing.T) {
	e, _ := newTestEngine(t, Options{})
	for _, tc := range []struct{ expr, overload string }{
		{"req.url.path.contains('a')", "contains_string"},
		{"req.url.path.startsWith('/a')", "starts_with_string"},
		{"req.url.path.matches('^/a')", "matches_string"},
		{"matches(req.url.path, '^/a')", "matches"},
		{"size(req.url.path) == 2", "size_string"},
		{"req.method == 'GET'", "equals"},
		{"req.method in ['GET']", "in_list"},
		{"hasReqHeader('x')", "hasReqHeader_string"},
		{"inCidrRange(conn.client_ip, '10.0.0.0/8')", "inCidrRange_string_string"},
	} {
		t.Run(tc.expr, func(t *testing.T) {
			a, iss := e.env.Compile(tc.expr)
			if iss.Err() != nil {
				t.Fatal(iss.Err())
			}
			native := a.NativeRep()
			c := &compiler{e: e, regexes: map[string]*regexEntry{}}
			if (lowerer{c, native}).lowerBool() == nil {
				t.Fatal("not lowered as checked")
			}
			var ref *ast.ReferenceInfo
			for _, r := range native.ReferenceMap() {
				for _, ov := range r.OverloadIDs {
					if ov == tc.overload {
						ref = r
					}
				}
			}
			if ref == nil {
				t.Fatalf("no reference to %s", tc.overload)
			}
			for _, ids := range [][]string{{"ext_" + tc.overload}, {tc.overload, "ext_" + tc.overload}} {
				ref.OverloadIDs = ids
				if (lowerer{c, native}).lowerBool() != nil {
					t.Errorf("lowered with overloads %q", ids)
				}
			}
		})
	}
}
