package policy

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/policy/limits"
	"golang.org/x/crypto/bcrypt"
)

// fuzzSink fails the test on internal errors (a recovered panic).
type fuzzSink struct {
	mu  sync.Mutex
	bad string
}

func (s *fuzzSink) Log(LogEntry) {}
func (s *fuzzSink) Error(e *EvalError) {
	if strings.Contains(e.Err.Error(), "internal error") {
		s.mu.Lock()
		s.bad = e.Error()
		s.mu.Unlock()
	}
}

func (s *fuzzSink) check(t *testing.T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bad != "" {
		t.Fatalf("internal error: %s", s.bad)
	}
}

func fuzzRequest(method, host, path, query, hname, hval, ip string, port uint16) *Request {
	req := &Request{
		Method: method, Host: host, Path: path, RawQuery: query,
		Header:        http.Header{"User-Agent": {hval}},
		ContentLength: int64(port) - 1,
		Proto:         "HTTP/1.1",
		Time:          t1,
	}
	req.Header[hname] = []string{hval, ip}
	if a, err := netip.ParseAddr(ip); err == nil {
		req.Conn.ClientAddr = netip.AddrPortFrom(a, port)
		req.Conn.ServerAddr = netip.AddrPortFrom(a, port+1)
	}
	if port%2 == 0 {
		req.Conn.TLS = &TLSInfo{ServerName: host, Version: port}
	}
	return req
}

// compareConditions evaluates every condition of the policy natively and
// with CEL and fails on a difference of result or, when the native
// evaluation met no error, of cost; then again with the budget spent but
// for one unit less than the expression costs, where both paths must run
// out of budget.
func compareConditions(t *testing.T, p *Policy, ph *phaseProg, phase Phase, req *Request, res *Response) {
	t.Helper()
	for ri := range ph.rules {
		for ci := range ph.rules[ri].conds {
			c := &ph.rules[ri].conds[ci]
			if c.native == nil {
				continue
			}
			native, cc, celRes, err := evalBoth(p, c, phase, req, res, 0)
			if cc.nativeErr || native == triErr {
				if native != celRes {
					t.Fatalf("%s: native %v, CEL %v (%v)", c.loc, native, celRes, err)
				}
				continue
			}
			if native != celRes || cc.native != cc.cel {
				t.Fatalf("%s: native %v costing %d, CEL %v (%v) costing %d", c.loc, native, cc.native, celRes, err, cc.cel)
			}
			if cc.cel == 0 {
				continue
			}
			native, cc, celRes, err = evalBoth(p, c, phase, req, res, limits.MaxEvaluationCost-cc.cel+1)
			if !cc.nativeOut || celRes != triErr || !errors.Is(err, ErrCostLimit) {
				t.Fatalf("%s near the budget: native %v (out of budget %v), CEL %v (%v)", c.loc, native, cc.nativeOut, celRes, err)
			}
		}
	}
}

// evalBoth evaluates a condition natively and with CEL, each on a fresh
// evaluation that has spent some of its budget.
func evalBoth(p *Policy, c *condition, phase Phase, req *Request, res *Response, spent uint64) (tri, condCost, tri, error) {
	var cc condCost
	st := p.e.states.Get().(*evalState)
	defer p.e.states.Put(st)
	st.begin(p, phase, req, res, nil)
	st.cost, st.nerr = spent, false
	native := c.native.evalB(st)
	if st.cost > limits.MaxEvaluationCost {
		st.exhausted = true
	}
	cc.native, cc.nativeErr, cc.nativeOut = st.cost-spent, st.nerr, st.exhausted
	st.finish(new(Result))
	st.begin(p, phase, req, res, nil)
	st.cost = spent
	v, err := st.evalCEL(c.prog)
	cc.cel = st.cost - spent
	st.finish(new(Result))
	celRes := triErr
	if err == nil {
		celRes = triOf(v.Value() == true)
	}
	return native, cc, celRes, err
}

var fuzzEngine = sync.OnceValues(func() (*Engine, *fuzzSink) {
	sink := &fuzzSink{}
	e, err := NewEngine(Options{Sink: sink, Clock: func() time.Time { return t1 }})
	if err != nil {
		panic(err)
	}
	return e, sink
})

// FuzzPolicy compiles arbitrary documents for both targets and evaluates
// them on arbitrary requests: nothing panics, and native evaluation agrees
// with CEL.
func FuzzPolicy(f *testing.F) {
	seeds := []string{
		benchPolicy,
		`{"inbound":[{"expressions":["req.headers['x'][0] == 'a' || hasReqHeader('y')"],"actions":[{"type":"add-headers","config":{"headers":{"x-a":"${req.url.path}${conn.client_ip}"}}},{"type":"url-rewrite","config":{"from":"/(a)","to":"/$1b"}}]}],
		  "outbound":[{"expressions":["res.status_code > 399"],"actions":[{"type":"custom-response","config":{"body":"${res.status_code}"}}]}]}`,
		`{"on_http_request":[{"actions":[{"type":"rate-limit","config":{"name":"n","algorithm":"sliding_window","capacity":1,"rate":"60s","bucket_key":["req.host","conn.client_ip","getReqHeader('X')"]}},
		  {"type":"log","config":{"metadata":{"k":"${actions.service.rate_limit.bucket_key}"}}}]}]}`,
		`{"on_tcp_connect":[{"expressions":["inCidrRanges(conn.client_ip, ['10.0.0.0/8'])"],"actions":[{"type":"restrict-ips","config":{"deny":["1.2.3.4"]}}]}]}`,
		`{"inbound":[{"actions":[{"type":"redirect","config":{"from":"^(.*)$","to":"https://x${req.url.query}$1"}}]}]}`,
		`{"inbound":[{"expressions":["req.url.query_params.exists(k, k.startsWith(req.method.lowerAscii()))"],"actions":[{"type":"deny"}]}]}`,
		`{}`, `[`, `{"inbound":[{}]}`,
	}
	for i, s := range seeds {
		f.Add(s, "GET", "h.example", "/a/b", "x=1&y=%zz", "X", "v", "10.1.2.3", uint16(i))
	}
	f.Add(benchPolicy, "DELETE", "", "", "", "", "", "", uint16(0))
	f.Add(`{"inbound":[{"expressions":["req.url.path.matches('^/[a-z]+$')"],"actions":[{"type":"deny"}]}]}`, "G\x00", "\xff", "/\xfe", "%", "x-odd", "\r\n", "::ffff:1.2.3.4", uint16(443))
	f.Fuzz(func(t *testing.T, doc, method, host, path, query, hname, hval, ip string, port uint16) {
		e, sink := fuzzEngine()
		req := fuzzRequest(method, host, path, query, hname, hval, ip, port)
		res := &Response{StatusCode: int(port), Header: http.Header{hname: {hval}}}
		for _, target := range []Target{TargetHTTP, TargetConnection} {
			p, err := e.CompileJSON([]byte(doc), CompileOptions{Target: target, IPPolicies: allowResolver("10.0.0.0/8")})
			if err != nil {
				continue
			}
			if _, err := p.MarshalJSON(); err != nil {
				t.Fatal(err)
			}
			if target == TargetConnection {
				p.Connect(&req.Conn, t1)
				compareConditions(t, p, &p.in, Inbound, req, nil)
				continue
			}
			in := p.Inbound(req)
			p.Outbound(req, res, &in)
			compareConditions(t, p, &p.in, Inbound, req, nil)
			compareConditions(t, p, &p.out, Outbound, req, res)
		}
		sink.check(t)
	})
}

// FuzzExpression compiles arbitrary expressions and checks that native
// evaluation agrees with CEL.
func FuzzExpression(f *testing.F) {
	for _, c := range append(append(append(append([]exprCase(nil), exprCases...), extCases...), moreVarCases...), oidcVarCases...) {
		f.Add(c.expr, "POST", "/v1/users/42", "a=1&a=2", "198.51.100.10", uint16(40000))
	}
	f.Add("req.method.matches('^P')", "PUT", "", "", "", uint16(0))
	f.Add("req.url.path.size() > 2 || req.headers['a'][0] < 'b'", "", "/\xff", "", "::1", uint16(1))
	f.Fuzz(func(t *testing.T, expr, method, path, query, ip string, port uint16) {
		e, sink := fuzzEngine()
		req := fuzzRequest(method, "h", path, query, "A", query, ip, port)
		for _, key := range []string{KeyInbound, KeyOutbound} {
			p, err := e.CompileJSON([]byte(phaseDoc(key, expr)), CompileOptions{})
			if err != nil {
				continue
			}
			if key == KeyInbound {
				p.Inbound(req)
				compareConditions(t, p, &p.in, Inbound, req, nil)
			} else {
				res := &Response{StatusCode: int(port), Header: http.Header{"A": {path}}}
				p.Outbound(req, res, nil)
				compareConditions(t, p, &p.out, Outbound, req, res)
			}
		}
		sink.check(t)
	})
}

// FuzzParse checks that Parse never panics and that the compact form of a
// parsed document parses back to itself.
func FuzzParse(f *testing.F) {
	f.Add(benchPolicy)
	f.Add(`{"on_http_request":[],"outbound":null}`)
	f.Add(`{"inbound":[{"name":"\u00e9","expressions":["a"],"actions":[{"type":"t","config":{"a":[1,{"b":null}]}}]}]}`)
	f.Add(`{"inbound":[{"name":"a","name":"b"}]}`)
	f.Fuzz(func(t *testing.T, doc string) {
		d, err := Parse([]byte(doc))
		if err != nil {
			return
		}
		b, err := d.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		d2, err := Parse(b)
		if err != nil {
			t.Fatalf("compact form %s does not parse: %v", b, err)
		}
		b2, err := d2.MarshalJSON()
		if err != nil || string(b2) != string(b) {
			t.Fatalf("round trip %s != %s (%v)", b2, b, err)
		}
	})
}

// FuzzTemplate compiles arbitrary templated strings and renders them.
func FuzzTemplate(f *testing.F) {
	for _, s := range []string{"plain", "${req.host}", "a${'}'}b${\"{\"}", "${", "${}", "$1${req.method}$$", "${req.url.path.size()}", "${'''}'''}"} {
		f.Add(s, "/a/b")
	}
	f.Fuzz(func(t *testing.T, tmpl, path string) {
		e, sink := fuzzEngine()
		js, _ := json.Marshal(tmpl)
		doc := `{"inbound":[{"actions":[{"type":"log","config":{"metadata":{"k":` + string(js) + `}}},
			{"type":"redirect","config":{"from":"^(.*)/(.*)$","to":` + string(js) + `}}]}]}`
		p, err := e.CompileJSON([]byte(doc), CompileOptions{})
		if err != nil {
			return
		}
		req := testRequest()
		req.Path = path
		res := p.Inbound(req)
		if len(res.Header.Get("Location")) > limits.MaxTemplateOutput+len(req.Path)+100 {
			t.Fatalf("location of %d bytes", len(res.Header.Get("Location")))
		}
		sink.check(t)
	})
}

// FuzzRateLimitBucketKey compiles arbitrary bucket key elements (a fixed
// form or a CEL expression) and evaluates them: compile refuses with a
// violation of config.bucket_key[0] or accepts, evaluation never panics,
// and the native path agrees with cel-go on the bucket key.
func FuzzRateLimitBucketKey(f *testing.F) {
	for _, s := range []string{"req.host", "conn.client_ip_prefix", "req.headers['x']", "getReqHeader('A')",
		"req.headers['a'][0]", "req.method + req.url.path", "req.url.path.split('/')[1]", "req.body", "size(req.host)", ""} {
		f.Add(s, "/a/b", "v")
	}
	f.Fuzz(func(t *testing.T, elem, path, hval string) {
		sink := &fuzzSink{}
		e, err := NewEngine(Options{Sink: sink, Clock: func() time.Time { return t1 }}) // its own limiters
		if err != nil {
			t.Fatal(err)
		}
		js, _ := json.Marshal(elem)
		doc := rlDoc(1, "60s", string(js), "")
		p, err := e.CompileJSON([]byte(doc), CompileOptions{})
		if err != nil {
			for _, v := range apierr.ViolationsOf(err) {
				if !strings.HasPrefix(v.Field, "on_http_request[0].actions[0].config.bucket_key") {
					t.Fatalf("violation of %s: %s", v.Field, v.Reason)
				}
			}
			return
		}
		req := fuzzRequest("GET", "h", path, "", "A", hval, "2001:db8::1", 1)
		native := p.Inbound(req)
		withoutNative(p)
		p2 := p // the same limiter: a second request of the same key is limited
		celgo := p2.Inbound(req)
		if native.Verdict != Continue || celgo.Verdict != Respond && celgo.Verdict != Continue {
			t.Fatalf("verdicts %v, %v", native.Verdict, celgo.Verdict)
		}
		if a, b := resultVar(t, e, native, rlBucketKey).s, resultVar(t, e, celgo, rlBucketKey).s; a != b {
			t.Fatalf("bucket_key native %q, cel-go %q", a, b)
		}
		if celgo.Verdict != Respond {
			t.Fatalf("the same key on cel-go got another bucket")
		}
		sink.check(t)
	})
}

// FuzzSetVars compiles set-vars configs with arbitrary names and values
// and a later rule reading the variable: compile refuses or accepts
// without panicking, and evaluation never fails internally.
func FuzzSetVars(f *testing.F) {
	for _, s := range [][2]string{{"x", "a"}, {"tenant", "${req.host}"}, {"1x", ""}, {"in", "${vars.in}"}, {"_", "${req.url.path.size()}"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, name, value string) {
		e, sink := fuzzEngine()
		n, _ := json.Marshal(name)
		v, _ := json.Marshal(value)
		sel, _ := json.Marshal("vars[" + strconv.Quote(name) + "]")
		doc := `{"inbound":[{"actions":[{"type":"set-vars","config":{"vars":{` + string(n) + `:` + string(v) + `}}}]},
			{"actions":[{"type":"log","config":{"metadata":{"k":"${` + strings.Trim(string(sel), `"`) + `}"}}}]}]}`
		p, err := e.CompileJSON([]byte(doc), CompileOptions{})
		if err != nil {
			if len(apierr.ViolationsOf(err)) == 0 {
				t.Fatalf("error without violations: %v", err)
			}
			return
		}
		if !validVarName(name) {
			t.Fatalf("invalid name %q accepted", name)
		}
		p.Inbound(testRequest())
		sink.check(t)
	})
}

// FuzzBasicAuthHeader checks the Authorization header parser of
// basic-auth: it never panics, refuses values over the bound, and what it
// accepts re-encodes to the same credentials.
func FuzzBasicAuthHeader(f *testing.F) {
	for _, s := range []string{"Basic YWxpY2U6cHc=", "basic YTpi", "Bearer x", "Basic", "Basic !!", "Basic YWxpY2U="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		user, pw, ok := parseBasicAuth(v)
		if !ok {
			return
		}
		if len(v) > MaxBasicAuthHeaderBytes || strings.Contains(user, ":") {
			t.Fatalf("accepted %q: user %q", v, user)
		}
		u2, p2, ok2 := parseBasicAuth(basicHeader(user, pw))
		if !ok2 || u2 != user || p2 != pw {
			t.Fatalf("round trip of %q, %q: %q, %q, %v", user, pw, u2, p2, ok2)
		}
	})
}

// FuzzPasswordHash checks that the hash parser never panics and accepts
// only bcrypt and PBKDF2-SHA256 within the bounds.
func FuzzPasswordHash(f *testing.F) {
	for _, s := range []string{"$2b$04$abcdefghijklmnopqrstuuABCDEFGHIJKLMNOPQRSTUVWXYZ01234", "$pbkdf2-sha256$10000$MDEyMzQ1Njc4OWFiY2RlZg$MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY", "plain", "$2b$13$x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h, err := parsePasswordHash(s)
		if err != nil {
			return
		}
		switch {
		case h.bcrypt != nil:
			if c, err := bcrypt.Cost(h.bcrypt); err != nil || c > MaxBcryptCost {
				t.Fatalf("accepted %q: cost %d, %v", s, c, err)
			}
		case h.iter < MinPBKDF2Iterations || h.iter > MaxPBKDF2Iterations || len(h.salt) < 8 || len(h.key) < 16 || len(h.key) > 64:
			t.Fatalf("accepted %q: %+v", s, h)
		}
	})
}

// FuzzBearerToken checks the Authorization header parser of
// jwt-validation: it never panics, refuses values over the bound, and
// returns a token without surrounding spaces.
func FuzzBearerToken(f *testing.F) {
	for _, s := range []string{"Bearer a.b.c", "bearer  x ", "Bearer", "Basic YTpi", "Bearer "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		tok, ok := bearerToken([]string{v})
		if !ok {
			return
		}
		if len(v) > MaxTokenBytes || tok == "" || strings.TrimSpace(tok) != tok || !strings.HasSuffix(strings.TrimSpace(v), tok) {
			t.Fatalf("bearerToken(%q) = %q", v, tok)
		}
	})
}
