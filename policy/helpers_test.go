package policy

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"cel.dev/cel-go/common/types"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/policy/limits"
)

var (
	t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	t1 = t0.Add(5 * time.Second)
)

// recSink records what evaluation reports.
type recSink struct {
	mu   sync.Mutex
	logs []LogEntry
	errs []*EvalError
}

func (s *recSink) Log(e LogEntry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.logs = append(s.logs, e)
}

func (s *recSink) Error(e *EvalError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errs = append(s.errs, e)
}

func (s *recSink) errors() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, e := range s.errs {
		out = append(out, e.Error())
	}
	return out
}

func (s *recSink) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.logs, s.errs = nil, nil
}

func newTestEngine(t testing.TB, o Options) (*Engine, *recSink) {
	t.Helper()
	sink := &recSink{}
	if o.Sink == nil {
		o.Sink = sink
	}
	if o.Clock == nil {
		o.Clock = func() time.Time { return t1 }
	}
	e, err := NewEngine(o)
	if err != nil {
		t.Fatal(err)
	}
	return e, sink
}

func mustCompile(t testing.TB, e *Engine, doc string, o CompileOptions) *Policy {
	t.Helper()
	p, err := e.CompileJSON([]byte(doc), o)
	if err != nil {
		t.Fatalf("compile %s: %v", doc, err)
	}
	return p
}

// testRequest is a request exercising every variable.
func testRequest() *Request {
	return &Request{
		Method:   "POST",
		Scheme:   "https",
		Host:     "api.example.com:8443",
		Path:     "/v1/users/42",
		RawQuery: "a=1&a=2&b=x%20y",
		Header: http.Header{
			"User-Agent":   {"curl/8.5"},
			"X-Api-Key":    {"k1"},
			"Accept":       {"a", "b"},
			"Content-Type": {"application/json"},
		},
		ContentLength: 123,
		Proto:         "HTTP/2.0",
		Conn: Conn{
			ClientAddr: netip.MustParseAddrPort("198.51.100.10:40000"),
			ServerAddr: netip.MustParseAddrPort("192.0.2.1:443"),
			Start:      t0,
			TLS:        &TLSInfo{ServerName: "api.example.com", Version: tls.VersionTLS13},
		},
		Time: t1,
	}
}

func testResponse() *Response {
	return &Response{StatusCode: 502, Header: http.Header{
		"Content-Type": {"text/html"},
		"Server":       {"upstream/1"},
	}}
}

// phaseDoc returns a one-rule document for the phase with the expression
// and a log action (allowed everywhere).
func phaseDoc(key, expr string) string {
	return fmt.Sprintf(`{%q:[{"name":"t","expressions":[%q],"actions":[{"type":"log"}]}]}`, key, expr)
}

// evalCond evaluates the first condition of the first rule of phase ph
// both natively (when it was lowered) and with CEL.
func evalCond(t *testing.T, p *Policy, ph Phase, req *Request, res *Response, prev *Result) (native tri, lowered bool, celRes tri, celErr error) {
	t.Helper()
	native, lowered, celRes, celErr, _ = evalCondCost(t, p, ph, req, res, prev, 0)
	return native, lowered, celRes, celErr
}

// condCost is what evalCondCost saw of the costs of both paths.
type condCost struct {
	native, cel uint64
	nativeErr   bool // the native evaluation met an error (and would fall back to CEL)
	nativeOut   bool // the native evaluation ran out of budget
}

// evalCondCost is evalCond on evaluations that start with spent of the
// budget already used; it also returns what each path cost.
func evalCondCost(t *testing.T, p *Policy, ph Phase, req *Request, res *Response, prev *Result, spent uint64) (native tri, lowered bool, celRes tri, celErr error, cc condCost) {
	t.Helper()
	prog := &p.in
	if ph == Outbound {
		prog = &p.out
	}
	c := &prog.rules[0].conds[0]
	st := p.e.states.Get().(*evalState)
	defer p.e.states.Put(st)
	st.begin(p, ph, req, res, prev)
	defer st.finish(new(Result))
	if c.native != nil {
		lowered = true
		st.cost = spent
		st.nerr = false
		native = c.native.evalB(st)
		if st.cost > limits.MaxEvaluationCost {
			st.exhausted = true
		}
		cc.native, cc.nativeErr, cc.nativeOut = st.cost-spent, st.nerr, st.exhausted
	}
	// A fresh state for CEL so that caches filled natively do not help.
	st2 := p.e.states.Get().(*evalState)
	defer p.e.states.Put(st2)
	st2.begin(p, ph, req, res, prev)
	defer st2.finish(new(Result))
	st2.cost = spent
	v, err := st2.evalCEL(c.prog)
	cc.cel = st2.cost - spent
	switch {
	case err != nil:
		celRes, celErr = triErr, err
	case v == types.True:
		celRes = triTrue
	case v == types.False:
		celRes = triFalse
	default:
		t.Fatalf("non-boolean result %v", v)
	}
	return native, lowered, celRes, celErr, cc
}

func (x tri) String() string {
	switch x {
	case triTrue:
		return "true"
	case triFalse:
		return "false"
	default:
		return "error"
	}
}

// violations returns err's violations as "field: reason" strings.
func violations(err error) []string {
	var out []string
	for _, v := range apierr.ViolationsOf(err) {
		out = append(out, v.Field+": "+v.Reason)
	}
	return out
}

// wantViolations checks that err lists exactly the wanted violations, each
// given as "field: reason substring".
func wantViolations(t *testing.T, err error, want []string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want %q", want)
	}
	if apierr.CodeOf(err) != apierr.InvalidArgument {
		t.Fatalf("code %v, want InvalidArgument: %v", apierr.CodeOf(err), err)
	}
	got := apierr.ViolationsOf(err)
	if len(got) != len(want) {
		t.Fatalf("got %d violations %q, want %d %q", len(got), violations(err), len(want), want)
	}
	for i, w := range want {
		field, reason, _ := strings.Cut(w, ": ")
		if got[i].Field != field || !strings.Contains(got[i].Reason, reason) {
			t.Errorf("violation %d = %s: %s; want field %s, reason containing %q", i, got[i].Field, got[i].Reason, field, reason)
		}
	}
}
