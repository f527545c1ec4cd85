package policy

import (
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/edgeplane/edgeplane/policy/limits"
)

// exprCase is one expression evaluated against testRequest/testResponse.
type exprCase struct {
	name   string
	target Target
	phase  Phase
	expr   string
	want   tri
	native bool // the expression must be reduced to native code
	req    func(*Request)
	prev   func(*Engine) *Result
}

// exprCases covers every variable and function, the string extensions and
// the error semantics of the logical operators.
var exprCases = []exprCase{
	// Request variables.
	{name: "req.method", expr: "req.method == 'POST'", want: triTrue, native: true},
	{name: "req.method reversed", expr: "'POST' == req.method", want: triTrue, native: true},
	{name: "req.method ne", expr: "req.method != 'POST'", want: triFalse, native: true},
	{name: "req.host", expr: "req.host == 'api.example.com:8443'", want: triTrue, native: true},
	{name: "req.url", expr: "req.url == 'https://api.example.com:8443/v1/users/42?a=1&a=2&b=x%20y'", want: triTrue, native: true},
	{name: "req.url size", expr: "req.url.size() > 10", want: triTrue, native: true},
	{name: "req.url.path", expr: "req.url.path == '/v1/users/42'", want: triTrue, native: true},
	{name: "req.url.query", expr: "req.url.query == 'a=1&a=2&b=x%20y'", want: triTrue, native: true},
	{name: "req.url.scheme", expr: "req.url.scheme == 'https'", want: triTrue, native: true},
	{name: "req.url.scheme from TLS", expr: "req.url.scheme == 'https'", want: triTrue, native: true,
		req: func(r *Request) { r.Scheme = "" }},
	{name: "req.url.scheme plain", expr: "req.url.scheme == 'http'", want: triTrue, native: true,
		req: func(r *Request) { r.Scheme, r.Conn.TLS = "", nil }},
	{name: "req.url.query_params list", expr: "req.url.query_params['a'] == ['1', '2']", want: triTrue},
	{name: "req.url.query_params index", expr: "req.url.query_params['b'][0] == 'x y'", want: triTrue, native: true},
	{name: "req.url.query_params missing", expr: "req.url.query_params['z'][0] == 'x'", want: triErr, native: true},
	{name: "req.url.query_params in", expr: "'a' in req.url.query_params", want: triTrue, native: true},
	{name: "req.url.query_params size", expr: "req.url.query_params.size() == 2", want: triTrue},
	{name: "req.headers list", expr: "req.headers['x-api-key'] == ['k1']", want: triTrue},
	{name: "req.headers index", expr: "req.headers['accept'][1] == 'b'", want: triTrue, native: true},
	{name: "req.headers index out of range", expr: "req.headers['accept'][2] == 'b'", want: triErr, native: true},
	{name: "req.headers negative index", expr: "req.headers['accept'][-1] == 'b'", want: triErr, native: true},
	{name: "req.headers in", expr: "'content-type' in req.headers", want: triTrue, native: true},
	{name: "req.headers keys are lower-case", expr: "'Content-Type' in req.headers", want: triFalse, native: true},
	{name: "req.headers upper-case key", expr: "req.headers['X-Api-Key'][0] == 'k1'", want: triErr, native: true},
	{name: "req.headers missing key", expr: "req.headers['nope'][0] == 'x'", want: triErr, native: true},
	{name: "req.headers size", expr: "req.headers.size() == 4", want: triTrue},
	{name: "req.headers keys", expr: "req.headers.exists(k, k == 'x-api-key') && !req.headers.exists(k, k == 'X-Api-Key')", want: triTrue},
	{name: "req.headers non-canonical key", expr: "req.headers['x-odd'][0] == 'v' && getReqHeader('X-ODD') == ['v']", want: triTrue,
		req: func(r *Request) { r.Header["x-ODD"] = []string{"v"} }},
	{name: "req.headers canonical wins", expr: "req.headers['x-dup'] == ['canonical']", want: triTrue,
		req: func(r *Request) { r.Header["X-Dup"] = []string{"canonical"}; r.Header["x-dup"] = []string{"other"} }},
	{name: "req.headers nil", expr: "req.headers.size() == 0 && !hasReqHeader('a')", want: triTrue,
		req: func(r *Request) { r.Header = nil }},
	{name: "req.content_length", expr: "req.content_length == 123", want: triTrue, native: true},
	{name: "req.content_length range", expr: "req.content_length > 100 && req.content_length <= 123", want: triTrue, native: true},
	{name: "req.user_agent", expr: "req.user_agent == 'curl/8.5'", want: triTrue, native: true},
	{name: "req.user_agent absent", expr: "req.user_agent == ''", want: triTrue, native: true,
		req: func(r *Request) { delete(r.Header, "User-Agent") }},
	{name: "req.version", expr: "req.version == 'HTTP/2.0'", want: triTrue, native: true},
	// Connection variables.
	{name: "conn.client_ip", expr: "conn.client_ip == '198.51.100.10'", want: triTrue, native: true},
	{name: "conn.client_ip unmapped", expr: "conn.client_ip == '198.51.100.10'", want: triTrue, native: true,
		req: func(r *Request) { r.Conn.ClientAddr = netip.MustParseAddrPort("[::ffff:198.51.100.10]:1") }},
	{name: "conn.client_ip unknown", expr: "conn.client_ip == ''", want: triTrue, native: true,
		req: func(r *Request) { r.Conn.ClientAddr = netip.AddrPort{} }},
	{name: "conn.client_port", expr: "conn.client_port == 40000", want: triTrue, native: true},
	{name: "conn.server_ip", expr: "conn.server_ip == '192.0.2.1'", want: triTrue, native: true},
	{name: "conn.server_port", expr: "conn.server_port == 443", want: triTrue, native: true},
	{name: "conn.server_port in", expr: "conn.server_port in [80, 443]", want: triTrue, native: true},
	{name: "conn.ts.start", expr: "conn.ts.start == timestamp('2025-01-01T00:00:00Z')", want: triTrue},
	{name: "conn.tls.sni", expr: "conn.tls.sni == 'api.example.com'", want: triTrue, native: true},
	{name: "conn.tls.version", expr: "conn.tls.version == '1.3'", want: triTrue, native: true},
	{name: "conn.tls absent", expr: "conn.tls.sni == '' && conn.tls.version == ''", want: triTrue, native: true,
		req: func(r *Request) { r.Conn.TLS = nil }},
	{name: "time.now", expr: "time.now == timestamp('2025-01-01T00:00:05Z')", want: triTrue},
	{name: "time.now arithmetic", expr: "time.now - conn.ts.start == duration('5s')", want: triTrue},
	// Action result variables: zero before the action ran.
	{name: "rate_limit.limited zero", expr: "actions.service.rate_limit.limited == false", want: triTrue, native: true},
	{name: "rate_limit.bucket_key zero", expr: "actions.service.rate_limit.bucket_key == ''", want: triTrue, native: true},
	{name: "rate_limit.error zero", expr: "actions.service.rate_limit.error.code == '' && actions.service.rate_limit.error.message == ''", want: triTrue, native: true},
	// Outbound.
	{name: "res.status_code", phase: Outbound, expr: "res.status_code == 502", want: triTrue, native: true},
	{name: "res.status_code range", phase: Outbound, expr: "res.status_code >= 500", want: triTrue, native: true},
	{name: "res.headers", phase: Outbound, expr: "res.headers['content-type'][0] == 'text/html'", want: triTrue, native: true},
	{name: "res.headers size", phase: Outbound, expr: "res.headers.size() == 2", want: triTrue},
	{name: "getResHeader", phase: Outbound, expr: "getResHeader('Content-Type') == ['text/html']", want: triTrue},
	{name: "getResHeader native", phase: Outbound, expr: "getResHeader('SERVER')[0] == 'upstream/1'", want: triTrue, native: true},
	{name: "hasResHeader", phase: Outbound, expr: "hasResHeader('server') && !hasResHeader('x-nope')", want: triTrue, native: true},
	{name: "req in outbound", phase: Outbound, expr: "req.method == 'POST'", want: triTrue, native: true},
	{name: "result from inbound", phase: Outbound, expr: "actions.service.rate_limit.limited && actions.service.rate_limit.bucket_key == '1.2.3.4'",
		want: triTrue, native: true, prev: func(e *Engine) *Result {
			r := &Result{}
			for _, d := range e.results {
				switch {
				case d.action == ActionRateLimit && d.field == rlLimited:
					r.vars = append(r.vars, resultValue{b: true})
					r.varSlots = append(r.varSlots, d.slot)
				case d.action == ActionRateLimit && d.field == rlBucketKey:
					r.vars = append(r.vars, resultValue{s: "1.2.3.4"})
					r.varSlots = append(r.varSlots, d.slot)
				}
			}
			return r
		}},
	// Connection target.
	{name: "connection conn.client_ip", target: TargetConnection, expr: "conn.client_ip == '198.51.100.10'", want: triTrue, native: true},
	{name: "connection sni", target: TargetConnection, expr: "conn.tls.sni.endsWith('.example.com')", want: triTrue, native: true},
	{name: "connection cidr", target: TargetConnection, expr: "inCidrRange(conn.client_ip, '198.51.100.0/24')", want: triTrue, native: true},
	{name: "connection time", target: TargetConnection, expr: "time.now > conn.ts.start", want: triTrue},
	// Header and query functions.
	{name: "getReqHeader list", expr: "getReqHeader('ACCEPT') == ['a', 'b']", want: triTrue},
	{name: "getReqHeader index", expr: "getReqHeader('accept')[0] == 'a'", want: triTrue, native: true},
	{name: "getReqHeader missing", expr: "getReqHeader('missing') == []", want: triTrue},
	{name: "getReqHeader missing size", expr: "size(getReqHeader('missing')) == 0", want: triTrue, native: true},
	{name: "getReqHeader missing index", expr: "getReqHeader('missing')[0] == 'x'", want: triErr, native: true},
	{name: "getReqHeader in", expr: "'k1' in getReqHeader('x-api-key')", want: triTrue, native: true},
	{name: "getReqHeader dynamic name", expr: "getReqHeader(req.url.query_params['b'][0].replace(' ', '-'))[0] == 'y'", want: triTrue,
		req: func(r *Request) { r.Header.Set("X-Y", "y"); r.RawQuery = "b=x%20y" }},
	{name: "hasReqHeader", expr: "hasReqHeader('X-API-KEY') && !hasReqHeader('nope')", want: triTrue, native: true},
	{name: "getQueryParam", expr: "getQueryParam('a') == ['1', '2']", want: triTrue},
	{name: "getQueryParam native", expr: "getQueryParam('a')[1] == '2' && getQueryParam('z').size() == 0", want: triTrue, native: true},
	{name: "getQueryParam case-sensitive", expr: "getQueryParam('A').size() == 0", want: triTrue, native: true},
	{name: "hasQueryParam", expr: "hasQueryParam('b') && !hasQueryParam('B')", want: triTrue, native: true},
	{name: "query bad escape keeps the rest", expr: "getQueryParam('ok')[0] == '1'", want: triTrue, native: true,
		req: func(r *Request) { r.RawQuery = "bad=%zz&ok=1" }},
	// CIDR functions.
	{name: "inCidrRange client", expr: "inCidrRange(conn.client_ip, '198.51.100.0/24')", want: triTrue, native: true},
	{name: "inCidrRange client no", expr: "inCidrRange(conn.client_ip, '10.0.0.0/8')", want: triFalse, native: true},
	{name: "inCidrRange server", expr: "inCidrRange(conn.server_ip, '192.0.2.0/24')", want: triTrue, native: true},
	{name: "inCidrRange unknown client", expr: "inCidrRange(conn.client_ip, '0.0.0.0/0')", want: triErr, native: true,
		req: func(r *Request) { r.Conn.ClientAddr = netip.AddrPort{} }},
	{name: "inCidrRange ipv6", expr: "inCidrRange('2001:db8::1', '2001:db8::/32')", want: triTrue, native: true},
	{name: "inCidrRange family mismatch", expr: "inCidrRange('1.2.3.4', '::/0')", want: triFalse, native: true},
	{name: "inCidrRange mapped", expr: "inCidrRange('::ffff:10.1.2.3', '10.0.0.0/8')", want: triTrue, native: true},
	{name: "inCidrRange not an ip", expr: "inCidrRange(req.host, '10.0.0.0/8')", want: triErr, native: true},
	{name: "inCidrRange bad cidr at run time", expr: "inCidrRange(conn.client_ip, req.method)", want: triErr, native: true},
	{name: "inCidrRange ipv6 client", expr: "inCidrRange(conn.client_ip, '2001:db8::/32')", want: triTrue, native: true,
		req: func(r *Request) { r.Conn.ClientAddr = netip.MustParseAddrPort("[2001:db8::5%eth0]:1") }},
	{name: "inCidrRanges", expr: "inCidrRanges(conn.client_ip, ['10.0.0.0/8', '198.51.100.0/24'])", want: triTrue, native: true},
	{name: "inCidrRanges none", expr: "inCidrRanges(conn.client_ip, [])", want: triFalse, native: true},
	{name: "inCidrRanges literal ip", expr: "inCidrRanges('10.2.3.4', ['10.0.0.0/8'])", want: triTrue, native: true},
	{name: "inCidrRanges from header", expr: "inCidrRanges(conn.client_ip, getReqHeader('x-cidrs'))", want: triTrue, native: true,
		req: func(r *Request) { r.Header["X-Cidrs"] = []string{"10.0.0.0/8", "198.51.100.0/24"} }},
	{name: "inCidrRanges bad element", expr: "inCidrRanges(conn.client_ip, getReqHeader('x-cidrs'))", want: triErr, native: true,
		req: func(r *Request) { r.Header["X-Cidrs"] = []string{"bad", "198.51.100.0/24"} }},
	{name: "inCidrRanges match before bad", expr: "inCidrRanges(conn.client_ip, getReqHeader('x-cidrs'))", want: triTrue, native: true,
		req: func(r *Request) { r.Header["X-Cidrs"] = []string{"198.51.100.0/24", "bad"} }},
	// Strings.
	{name: "startsWith", expr: "req.url.path.startsWith('/v1/')", want: triTrue, native: true},
	{name: "endsWith", expr: "req.url.path.endsWith('/42')", want: triTrue, native: true},
	{name: "contains", expr: "req.host.contains('example')", want: triTrue, native: true},
	{name: "startsWith dynamic", expr: "req.url.path.startsWith(req.url.path.substring(0, 3))", want: triTrue},
	{name: "contains two vars", expr: "req.url.contains(req.url.path)", want: triTrue, native: true},
	{name: "matches", expr: "req.url.path.matches('^/v[0-9]+/users/[0-9]+$')", want: triTrue, native: true},
	{name: "matches global", expr: "matches(req.user_agent, '^curl/')", want: triTrue, native: true},
	{name: "matches unanchored", expr: "req.url.path.matches('users')", want: triTrue, native: true},
	{name: "matches dynamic pattern", expr: "'/v1/users'.matches(req.url.query_params['re'][0])", want: triTrue,
		req: func(r *Request) { r.RawQuery = "re=%5E%2Fv1" }},
	{name: "size", expr: "size(req.method) == 4 && req.method.size() == 4", want: triTrue, native: true},
	{name: "size runes", expr: "req.url.path.size() == 3", want: triTrue, native: true,
		req: func(r *Request) { r.Path = "/é€" }},
	{name: "size invalid utf8", expr: "req.url.path.size() == 3", want: triTrue, native: true,
		req: func(r *Request) { r.Path = "/\xff\xfe" }},
	{name: "string compare", expr: "req.method < 'Q' && req.method >= 'POST'", want: triTrue, native: true},
	{name: "in list", expr: "req.method in ['GET', 'POST']", want: triTrue, native: true},
	{name: "in long list", expr: "req.method in ['A','B','C','D','E','F','G','H','I','J','POST']", want: triTrue, native: true},
	{name: "not in list", expr: "!(req.method in ['GET', 'HEAD'])", want: triTrue, native: true},
	{name: "in empty list", expr: "req.method in []", want: triFalse, native: true},
	{name: "lowerAscii", expr: "req.method.lowerAscii() == 'post'", want: triTrue},
	{name: "upperAscii", expr: "req.url.scheme.upperAscii() == 'HTTPS'", want: triTrue},
	{name: "split", expr: "req.url.path.split('/')[1] == 'v1'", want: triTrue},
	{name: "indexOf", expr: "req.host.indexOf(':') == 15", want: triTrue},
	{name: "replace", expr: "req.url.path.replace('users', 'people') == '/v1/people/42'", want: triTrue},
	{name: "trim join", expr: "[' a '.trim(), 'b'].join('-') == 'a-b'", want: triTrue},
	{name: "format", expr: "'%s %d'.format([req.method, req.content_length]) == 'POST 123'", want: triTrue},
	{name: "exists over headers", expr: "req.headers.exists(k, k.startsWith('x-'))", want: triTrue},
	{name: "exists over a header's values", expr: "getReqHeader('accept').exists(v, v == 'b')", want: triTrue},
	{name: "conditional", expr: "(req.method == 'POST' ? req.url.path : '') == '/v1/users/42'", want: triTrue},
	{name: "matches on a header value", expr: "req.headers['accept'][0].matches('^a$')", want: triTrue, native: true},
	{name: "matches on a missing header", expr: "req.headers['nope'][0].matches('^a$')", want: triErr, native: true},
	{name: "header named by the request", expr: "getReqHeader(req.url.query_params['h'][0])[0] == 'k1' && hasReqHeader(req.url.query_params['h'][0])", want: triTrue, native: true,
		req: func(r *Request) { r.RawQuery = "h=X-API-KEY" }},
	{name: "header named by a missing parameter", expr: "hasReqHeader(req.url.query_params['zz'][0])", want: triErr, native: true},
	{name: "header list named by a missing parameter", expr: "size(getReqHeader(req.url.query_params['zz'][0])) == 0", want: triErr, native: true},
	{name: "response header named by the request", phase: Outbound, expr: "hasResHeader(req.method) || getResHeader(req.url.path).size() == 0", want: triTrue, native: true},
	{name: "query parameter named by the request", expr: "getQueryParam(req.url.query_params['p'][0]) == ['1', '2'] && hasQueryParam(req.url.query_params['p'][0])", want: triTrue,
		req: func(r *Request) { r.RawQuery = "p=a&a=1&a=2" }},
	{name: "query parameter named by a missing parameter", expr: "hasQueryParam(req.url.query_params['zz'][0]) || getQueryParam(req.url.query_params['zz'][0]).size() > 0", want: triErr, native: true},
	{name: "cidr of a missing header", expr: "inCidrRange(req.headers['nope'][0], '10.0.0.0/8') || inCidrRanges(req.headers['nope'][0], ['10.0.0.0/8'])", want: triErr, native: true},
	{name: "cidrs of a missing list", expr: "inCidrRanges(conn.client_ip, req.headers['nope'])", want: triErr, native: true},
	{name: "string predicate on a missing header", expr: "req.headers['nope'][0].startsWith('a') || 'a'.endsWith(req.headers['nope'][0])", want: triErr, native: true},
	{name: "comparison with a missing header", expr: "req.headers['nope'][0] < 'a' || req.headers['nope'].size() > 1 || req.headers['nope'][0].size() == 1", want: triErr, native: true},
	{name: "in with a missing header", expr: "req.headers['nope'][0] in ['a'] || 'a' in req.headers['nope'] || req.headers['nope'][0] in req.headers", want: triErr, native: true},
	{name: "int in with a missing header", expr: "req.headers['nope'][0].size() in [1, 2]", want: triErr, native: true},
	{name: "index with a missing index", expr: "req.headers['accept'][req.headers['nope'][0].size()] == 'a'", want: triErr, native: true},
	// Logic with errors, as CEL defines it.
	{name: "false and error", expr: "false && req.headers['nope'][0] == 'x'", want: triFalse, native: true},
	{name: "error and false", expr: "req.headers['nope'][0] == 'x' && false", want: triFalse, native: true},
	{name: "error and true", expr: "req.headers['nope'][0] == 'x' && true", want: triErr, native: true},
	{name: "error or true", expr: "req.headers['nope'][0] == 'x' || true", want: triTrue, native: true},
	{name: "error or false", expr: "req.headers['nope'][0] == 'x' || false", want: triErr, native: true},
	{name: "not error", expr: "!(req.headers['nope'][0] == 'x')", want: triErr, native: true},
	{name: "bool equality", expr: "(req.method == 'POST') == true", want: triTrue, native: true},
	{name: "bool equality error", expr: "(req.headers['nope'][0] == 'x') != false", want: triErr, native: true},
	{name: "int equality", expr: "conn.client_port != 1", want: triTrue, native: true},
	{name: "size of list literal", expr: "size(['a', 'b']) == 2", want: triTrue, native: true},
}

func TestExpressions(t *testing.T) {
	e, _ := newTestEngine(t, Options{})
	for _, tc := range append(append([]exprCase(nil), exprCases...), costCases...) {
		t.Run(tc.name, func(t *testing.T) { checkExprCase(t, e, tc) })
	}
}

// checkExprCase compiles tc's expression as the condition of a rule of
// tc's phase and target, evaluates it on cel-go and natively, and checks
// the result, that it was reduced to native code when tc says so, and
// that both paths agree in result and cost.
func checkExprCase(t *testing.T, e *Engine, tc exprCase) {
	t.Helper()
	key := KeyInbound
	if tc.phase == Outbound {
		key = KeyOutbound
	}
	p := mustCompile(t, e, phaseDoc(key, tc.expr), CompileOptions{Target: tc.target})
	req := testRequest()
	if tc.req != nil {
		tc.req(req)
	}
	var prev *Result
	if tc.prev != nil {
		prev = tc.prev(e)
	}
	native, lowered, celRes, celErr, cc := evalCondCost(t, p, tc.phase, req, testResponse(), prev, 0)
	if celRes != tc.want {
		t.Errorf("CEL: got %v (%v), want %v", celRes, celErr, tc.want)
	}
	if tc.native && !lowered {
		t.Errorf("expression not reduced to native code")
	}
	if lowered && native != celRes {
		t.Errorf("native %v != CEL %v (%v)", native, celRes, celErr)
	}
	if lowered && !cc.nativeErr && native != triErr && cc.native != cc.cel {
		t.Errorf("native cost %d != CEL cost %d", cc.native, cc.cel)
	}
}

// TestRuntimeErrorSkipsRule checks the documented result of a runtime
// error: the rule does not apply, the error goes to the sink with its
// location, and evaluation goes on with the next rule.
func TestRuntimeErrorSkipsRule(t *testing.T) {
	for _, expr := range []string{
		"req.headers['nope'][0] == 'x'",             // native path
		"req.headers['nope'].exists(v, v == 'x')",   // CEL path
		"int(req.url.query_params['n'][0]) > 1",     // CEL conversion error
		"getReqHeader('accept')[5].startsWith('x')", // index out of range
	} {
		t.Run(expr, func(t *testing.T) {
			e, sink := newTestEngine(t, Options{})
			doc := `{"inbound":[
				{"name":"broken","expressions":["req.method == 'POST'", ` + quote(expr) + `],"actions":[{"type":"deny"}]},
				{"name":"next","actions":[{"type":"custom-response","config":{"status_code":200,"body":"ok"}}]}]}`
			p := mustCompile(t, e, doc, CompileOptions{})
			req := testRequest()
			req.RawQuery = "n=abc"
			res := p.Inbound(req)
			if res.Verdict != Respond || res.StatusCode != 200 || res.Body != "ok" || res.Location != "inbound[1].actions[0]" {
				t.Fatalf("result %+v, want the second rule's response", res)
			}
			errs := sink.errors()
			if len(errs) != 1 || !containsAll(errs[0], "inbound[0].expressions[1]", `rule "broken"`) {
				t.Fatalf("sink errors %q", errs)
			}
		})
	}
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !contains(s, p) {
			return false
		}
	}
	return true
}

func contains(s, sub string) bool { return len(sub) == 0 || indexOf(s, sub) >= 0 }

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

func TestHeaderLookup(t *testing.T) {
	h := http.Header{"X-A": {"1"}, "x-b": {"2"}, "X-B": nil, "weird KEY": {"3"}}
	tests := []struct {
		name  string
		lower string
		want  []string
		found bool
	}{
		{"canonical", "x-a", []string{"1"}, true},
		{"canonical wins over other spelling", "x-b", nil, true},
		{"non-token key", "weird key", []string{"3"}, true},
		{"missing", "x-c", nil, false},
		{"upper-case query never matches", "X-A", nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var scan scanState
			got, found := lookupHeader(h, tc.lower, "", &scan)
			if found != tc.found || len(got) != len(tc.want) || (len(got) > 0 && got[0] != tc.want[0]) {
				t.Fatalf("lookupHeader(%q) = %q, %v; want %q, %v", tc.lower, got, found, tc.want, tc.found)
			}
		})
	}
	if got := canonKey("x-api-key"); got != http.CanonicalHeaderKey("x-api-key") {
		t.Errorf("canonKey = %q", got)
	}
}

// TestTemplateOutputCap checks that a rendering longer than
// limits.MaxTemplateOutput is truncated and reported.
func TestTemplateOutputCap(t *testing.T) {
	e, sink := newTestEngine(t, Options{})
	p := mustCompile(t, e, `{"inbound":[{"actions":[{"type":"custom-response","config":{"body":"é${req.headers['x-big'][0]}${req.headers['x-big'][0]}tail"}}]}]}`, CompileOptions{})
	req := testRequest()
	req.Header["X-Big"] = []string{strings.Repeat("é", limits.MaxTemplateOutput/3)}
	res := p.Inbound(req)
	if len(res.Body) > limits.MaxTemplateOutput || len(res.Body) < limits.MaxTemplateOutput-1 || !utf8.ValidString(res.Body) || strings.HasSuffix(res.Body, "tail") {
		t.Fatalf("body of %d bytes (valid UTF-8: %v)", len(res.Body), utf8.ValidString(res.Body))
	}
	if errs := sink.errors(); len(errs) != 1 || !strings.Contains(errs[0], "inbound[0].actions[0].config.body: output exceeds 65536 bytes and was truncated") {
		t.Fatalf("sink %q", errs)
	}
}

// costCases are more expressions whose cost on both paths the tests
// compare: empty operands, code points beyond ASCII, long strings.
var costCases = []exprCase{
	{name: "empty prefix", expr: "req.method.startsWith('')", want: triTrue, native: true},
	{name: "empty contains", expr: "req.method.contains('') && ''.contains(req.method) == false", want: triTrue, native: true},
	{name: "empty matches", expr: "''.matches('^$') && req.method.matches('')", want: triTrue, native: true},
	{name: "non-ASCII contains", expr: "req.url.path.contains('é€') && req.url.path.endsWith('€') && req.url.path < 'a'", want: triTrue, native: true,
		req: func(r *Request) { r.Path = "/" + strings.Repeat("é€", 300) }},
	{name: "long equality", expr: "req.url.path == req.url.query || req.url.path != '" + strings.Repeat("x", 50) + "'", want: triTrue, native: true,
		req: func(r *Request) { r.Path = "/" + strings.Repeat("y", 2000) }},
	{name: "in empty list of a missing header", expr: "req.headers['nope'][0] in []", want: triFalse, native: true},
	{name: "int in empty list", expr: "req.content_length in []", want: triFalse, native: true},
	{name: "index of a call", expr: "getReqHeader('accept')[1] == 'b' && getQueryParam('a')[0] == '1'", want: triTrue, native: true},
	{name: "index by a variable", expr: "req.headers[req.url.scheme][0] == 'x' && req.url.query_params[req.url.query_params['h'][0]].size() == 1", want: triTrue, native: true,
		req: func(r *Request) { r.Header["Https"] = []string{"x"}; r.RawQuery = "h=b&b=1" }},
	{name: "index of a call by a variable", expr: "getReqHeader('accept')[req.content_length] == 'b'", want: triTrue, native: true,
		req: func(r *Request) { r.ContentLength = 1 }},
	{name: "nested index", expr: "req.headers[req.url.query_params['h'][0]][0] == 'k1'", want: triTrue, native: true,
		req: func(r *Request) { r.RawQuery = "h=x-api-key" }},
}
