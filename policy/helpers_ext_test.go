package policy

import (
	"strings"
	"testing"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"github.com/edgeplane/edgeplane/policy/limits"
)

// extCases covers every function issue 19 (item 4) adds: cel-go's
// extension libraries and the package's helpers. TestExtensionFunctions
// evaluates each on cel-go and, when lowered, natively, comparing result
// and cost; the helpers must be lowered.
var extCases = []exprCase{
	// Encoders.
	{name: "base64.encode", expr: "base64.encode(b'hello') == 'aGVsbG8='", want: triTrue},
	{name: "base64.decode", expr: "base64.decode('aGVsbG8=') == b'hello'", want: triTrue},
	{name: "base64.decode invalid", expr: "base64.decode('!!') == b''", want: triErr},
	// Lists.
	{name: "lists.range", expr: "lists.range(3) == [0, 1, 2]", want: triTrue},
	{name: "lists.range over the bound", expr: "lists.range(1001).size() > 0", want: triErr},
	{name: "distinct", expr: "getReqHeader('accept').distinct() == ['a', 'b']", want: triTrue},
	{name: "flatten", expr: "[['a'], ['b', 'c']].flatten() == ['a', 'b', 'c']", want: triTrue},
	{name: "reverse", expr: "getReqHeader('accept').reverse() == ['b', 'a']", want: triTrue},
	{name: "slice", expr: "getReqHeader('accept').slice(1, 2) == ['b']", want: triTrue},
	{name: "sort", expr: "['b', 'a'].sort() == ['a', 'b']", want: triTrue},
	{name: "first and last", expr: "getReqHeader('accept').first().value() == 'a' && getReqHeader('accept').last().value() == 'b'", want: triTrue},
	// Sets.
	{name: "sets.contains", expr: "sets.contains(getReqHeader('accept'), ['b'])", want: triTrue},
	{name: "sets.equivalent", expr: "sets.equivalent(getReqHeader('accept'), ['b', 'a'])", want: triTrue},
	{name: "sets.intersects", expr: "sets.intersects(getReqHeader('accept'), ['x', 'a'])", want: triTrue},
	// Math.
	{name: "math.greatest", expr: "math.greatest(req.content_length, 7) == 123", want: triTrue},
	{name: "math.least", expr: "math.least([3, 1, 2]) == 1", want: triTrue},
	{name: "math.abs", expr: "math.abs(-5) == 5", want: triTrue},
	{name: "math.bitAnd", expr: "math.bitAnd(6, 3) == 2", want: triTrue},
	{name: "math.ceil", expr: "math.ceil(1.2) == 2.0", want: triTrue},
	// Network.
	{name: "ip and family", expr: "ip(conn.client_ip).family() == 4", want: triTrue},
	{name: "isLoopback", expr: "ip('127.0.0.1').isLoopback() && !ip(conn.client_ip).isLoopback()", want: triTrue},
	{name: "isIP", expr: "isIP(conn.client_ip) && !isIP('nope')", want: triTrue},
	{name: "cidr containsIP", expr: "cidr('198.51.100.0/24').containsIP(conn.client_ip)", want: triTrue},
	{name: "cidr masked", expr: "cidr('198.51.100.10/24').masked() == cidr('198.51.100.0/24')", want: triTrue},
	{name: "ip invalid", expr: "ip(req.method).family() == 4", want: triErr},
	// Optional types.
	{name: "optional index", expr: "req.headers[?'nope'].orValue(['d']) == ['d'] && req.headers[?'accept'].hasValue()", want: triTrue},
	{name: "optional.of", expr: "optional.of(req.method).value() == 'POST'", want: triTrue},
	// Cookies.
	{name: "getReqCookie", expr: "getReqCookie('session') == ['abc', 'def'] && getReqCookie('nope') == []", want: triTrue, // list equality: cel-go
		req: withCookies("session=abc; theme=\"dark\"", "session=def")},
	{name: "getReqCookie size", expr: "getReqCookie('session').size() == 2 && getReqCookie('session')[1] == 'def'", want: triTrue, native: true,
		req: withCookies("session=abc; theme=\"dark\"", "session=def")},
	{name: "getReqCookie index", expr: "getReqCookie('theme')[0] == 'dark'", want: triTrue, native: true,
		req: withCookies("session=abc; theme=\"dark\"")},
	{name: "getReqCookie missing index", expr: "getReqCookie('theme')[0] == 'dark'", want: triErr, native: true},
	{name: "getReqCookie names are case-sensitive", expr: "getReqCookie('Session').size() == 0", want: triTrue, native: true,
		req: withCookies("session=abc")},
	{name: "hasReqCookie", expr: "hasReqCookie('theme') && !hasReqCookie('them') && !hasReqCookie('')", want: triTrue, native: true,
		req: withCookies("bad; session=abc;theme=x", " =y")},
	{name: "hasReqCookie named by the request", expr: "hasReqCookie(req.url.query_params['c'][0])", want: triTrue, native: true,
		req: func(r *Request) { withCookies("k=v")(r); r.RawQuery = "c=k" }},
	// URL parsing.
	{name: "parseURL", expr: "parseURL('https://u@example.com:8443/a%2Fb?x=1#f') == {'scheme': 'https', 'host': 'example.com:8443', 'hostname': 'example.com', 'port': '8443', 'path': '/a/b', 'raw_path': '/a%2Fb', 'query': 'x=1', 'fragment': 'f'}", want: triTrue},
	{name: "parseURL of req.url", expr: "parseURL(req.url).hostname == 'api.example.com' && parseURL(req.url).port == '8443'", want: triTrue},
	{name: "parseURL parts in string functions", expr: "parseURL(req.url).path.contains('users') && parseURL(req.url).query.matches('a=1')", want: triTrue},
	{name: "parseURL invalid", expr: "parseURL('http://[::1').host == ''", want: triErr},
	// Hashes.
	{name: "sha256", expr: "sha256('abc') == 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad'", want: triTrue, native: true},
	{name: "sha1", expr: "sha1(req.method) == '55bbb64d80e0fc6b0a5cb1a5f7a9d2c6e3e0e0f8' || sha1('abc') == 'a9993e364706816aba3e25717850c26c9cd0d89d'", want: triTrue, native: true},
	{name: "md5", expr: "md5('abc') == '900150983cd24fb0d6963f7d28e17f72'", want: triTrue, native: true},
	{name: "hash of a header", expr: "sha256(req.headers['x-api-key'][0]).startsWith('a') || true", want: triTrue, native: true},
	{name: "hash of a missing header", expr: "md5(req.headers['nope'][0]) == ''", want: triErr, native: true},
}

func withCookies(lines ...string) func(*Request) {
	return func(r *Request) { r.Header["Cookie"] = lines }
}

func TestExtensionFunctions(t *testing.T) {
	e, _ := newTestEngine(t, Options{})
	for _, tc := range extCases {
		t.Run(tc.name, func(t *testing.T) { checkExprCase(t, e, tc) })
	}
}

// TestHelperCostWithinEstimate checks that the helpers' runtime cost on a
// request at the size bounds stays within the compile-time estimate, and
// grows with the input (so a 32 KiB Cookie header is not charged as one
// call).
func TestHelperCostWithinEstimate(t *testing.T) {
	big := strings.Repeat("x", limits.MaxRequestHeaderBytes-100)
	for _, expr := range []string{
		"hasReqCookie('nope')",
		"getReqCookie('nope').size() == 0",
		"sha256(req.headers['cookie'][0]) != ''",
		"parseURL(req.headers['cookie'][0]).path != '-'",
	} {
		t.Run(expr, func(t *testing.T) {
			e, _ := newTestEngine(t, Options{})
			p := mustCompile(t, e, phaseDoc(KeyInbound, expr), CompileOptions{})
			req := testRequest()
			req.Header["Cookie"] = []string{"a=" + big}
			_, _, _, celErr, cc := evalCondCost(t, p, Inbound, req, testResponse(), nil, 0)
			if celErr != nil {
				t.Fatal(celErr)
			}
			c := &p.in.rules[0].conds[0]
			est := estimateOf(t, e, expr)
			if cc.cel > est || cc.cel < traversalCost(uint64(len(big))) {
				t.Fatalf("runtime cost %d, estimate %d, input traversal %d (%v)", cc.cel, est, traversalCost(uint64(len(big))), c.loc)
			}
		})
	}
}

// estimateOf returns the compile-time worst-case cost of expr.
func estimateOf(t *testing.T, e *Engine, expr string) uint64 {
	t.Helper()
	c := &compiler{e: e, reads: make([]bool, len(e.results)), regexes: map[string]*regexEntry{}, setVars: map[string]bool{}}
	x, msgs := c.checkExpr(expr, func(*cel.Type) string { return "" })
	if x == nil {
		t.Fatalf("%s: %v", expr, msgs)
	}
	return x.cost
}

// TestCallCostDoesNotAllocate checks that CallCost, which cel-go calls on
// every function call of every expression, allocates nothing for the
// functions it leaves to CEL's model (a pointer to a local declared for
// every call would be).
func TestCallCostDoesNotAllocate(t *testing.T) {
	e, _ := newTestEngine(t, Options{})
	st := e.states.Get().(*evalState)
	defer e.states.Put(st)
	args := []ref.Val{types.String("abc"), types.String("a")}
	if n := testing.AllocsPerRun(100, func() {
		if st.CallCost("startsWith", "starts_with_string", args, types.True) != nil {
			t.Fatal("a cost for startsWith")
		}
	}); n != 0 {
		t.Fatalf("%v allocations per call", n)
	}
}
