package policy

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/edgeplane/edgeplane/apierr"
)

// tagType is a host action type: it sets a header and a result variable.
type tagType struct{}

type tagConfig struct {
	Value string `json:"value"`
	Panic bool   `json:"panic"`
}

type tagAction struct {
	value *Template
	slot  ResultSlot
	count ResultSlot
	panic bool
}

func (tagType) Type() string { return "tag" }

func (tagType) ResultFields() []ResultField {
	return []ResultField{{Name: "value", Type: ResultString}, {Name: "count", Type: ResultInt}}
}

func (tagType) Compile(c *CompileContext, config []byte) (Action, error) {
	var cfg tagConfig
	if err := c.DecodeConfig(config, &cfg); err != nil {
		return nil, err
	}
	if cfg.Value == "" {
		return nil, apierr.Invalidf("config.value", "is required")
	}
	if cfg.Value == "boom" {
		panic("host bug")
	}
	if cfg.Value == "plain error" {
		return nil, errors.New("backend unavailable")
	}
	t, err := c.Template("config.value", cfg.Value)
	if err != nil {
		return nil, err
	}
	slot, err := c.Result("value")
	if err != nil {
		return nil, err
	}
	count, err := c.Result("count")
	if err != nil {
		return nil, err
	}
	if _, err := c.Result("nope"); err == nil {
		return nil, errors.New("undeclared result field accepted")
	}
	return &tagAction{value: t, slot: slot, count: count, panic: cfg.Panic}, nil
}

func (a *tagAction) Run(r *RunContext) {
	if a.panic {
		panic("run bug")
	}
	v := r.Render(a.value)
	r.SetString(a.slot, v)
	r.SetInt(a.count, 7)
	r.SetBool(a.slot, true) // wrong type: ignored
	if r.Request() != nil {
		r.AddHeader("x-tag", v)
	}
}

func TestHostAction(t *testing.T) {
	e, sink := newTestEngine(t, Options{Actions: []ActionType{tagType{}}})
	if got := strings.Join(e.ActionTypes(), ","); !strings.Contains(got, "tag") || !strings.Contains(got, "rate-limit") {
		t.Fatalf("action types %s", got)
	}
	p := mustCompile(t, e, `{"inbound":[
		{"actions":[{"type":"tag","config":{"value":"${req.method}-1"}}]},
		{"expressions":["actions.service.tag.value == 'POST-1' && actions.service.tag.count == 7 && getReqHeader('x-tag') == ['POST-1']"],
		 "actions":[{"type":"deny","config":{"status_code":418}}]}]}`, CompileOptions{})
	res := p.Inbound(testRequest())
	if res.Verdict != Respond || res.StatusCode != 418 {
		t.Fatalf("%+v; sink %q", res, sink.errors())
	}
	// The same action type in a connection policy.
	pc := mustCompile(t, e, `{"on_tcp_connect":[{"actions":[{"type":"tag","config":{"value":"${conn.client_ip}"}}]},
		{"expressions":["actions.service.tag.value == '198.51.100.10'"],"actions":[{"type":"deny"}]}]}`, CompileOptions{Target: TargetConnection})
	if res := pc.Connect(&testRequest().Conn, t1); res.Verdict != Close {
		t.Fatalf("%+v", res)
	}
}

func TestHostActionErrors(t *testing.T) {
	e, sink := newTestEngine(t, Options{Actions: []ActionType{tagType{}}})
	tests := []struct {
		name string
		cfg  string
		want []string
	}{
		{"validation error", `{}`, []string{"inbound[0].actions[0].config.value: is required"}},
		{"strict decoding", `{"value":"a","x":1}`, []string{"inbound[0].actions[0].config.x: unknown field; allowed: panic, value"}},
		{"plain error", `{"value":"plain error"}`, []string{"inbound[0].actions[0].config: backend unavailable"}},
		{"panic while compiling", `{"value":"boom"}`, []string{"inbound[0].actions[0].config: internal error compiling the action: host bug"}},
		{"template error", `{"value":"${nope}"}`, []string{"inbound[0].actions[0].config.value: template ${nope} at byte 0: 1:1: undeclared reference"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.CompileJSON([]byte(`{"inbound":[{"actions":[{"type":"tag","config":`+tc.cfg+`}]}]}`), CompileOptions{})
			wantViolations(t, err, tc.want)
		})
	}
	t.Run("panic while running", func(t *testing.T) {
		p := mustCompile(t, e, `{"inbound":[{"actions":[{"type":"tag","config":{"value":"x","panic":true}}]}]}`, CompileOptions{})
		res := p.Inbound(testRequest())
		if res.Verdict != Respond || res.StatusCode != 500 || res.Location != "inbound[0].actions[0]" {
			t.Fatalf("%+v", res)
		}
		if errs := sink.errors(); len(errs) != 1 || !strings.Contains(errs[0], "internal error: run bug") {
			t.Fatalf("sink %q", errs)
		}
	})
}

func TestNewEngineErrors(t *testing.T) {
	tests := []struct {
		name string
		o    Options
	}{
		{"duplicate of a built-in", Options{Actions: []ActionType{denyType}}},
		{"registered twice", Options{Actions: []ActionType{tagType{}, tagType{}}}},
		{"nil", Options{Actions: []ActionType{nil}}},
		{"bad name", Options{Actions: []ActionType{builtinType{name: "a b", compile: compileDeny}}}},
		{"bad result field", Options{Actions: []ActionType{badFields{"x-y", ResultString}}}},
		{"bad result type", Options{Actions: []ActionType{badFields{"x", 0}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewEngine(tc.o); err == nil {
				t.Fatal("no error")
			}
		})
	}
}

type badFields struct {
	field string
	typ   ResultType
}

func (b badFields) Type() string                                    { return "bad" }
func (b badFields) Compile(*CompileContext, []byte) (Action, error) { return nil, nil }
func (b badFields) ResultFields() []ResultField                     { return []ResultField{{Name: b.field, Type: b.typ}} }

func TestNilActionRefused(t *testing.T) {
	e, _ := newTestEngine(t, Options{Actions: []ActionType{badFields{"ok", ResultBool}}})
	_, err := e.CompileJSON([]byte(`{"inbound":[{"actions":[{"type":"bad"}]}]}`), CompileOptions{})
	wantViolations(t, err, []string{"inbound[0].actions[0].config: the action type returned no action"})
}

func TestSlogSink(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(slog.NewTextHandler(&buf, nil))
	e, err := NewEngine(Options{Sink: NewSlogSink(l)})
	if err != nil {
		t.Fatal(err)
	}
	p, err := e.CompileJSON([]byte(`{"inbound":[{"name":"n","actions":[{"type":"log","config":{"metadata":{"b":"2","a":"${req.method}"}}}]},
		{"expressions":["req.headers['nope'][0] == ''"],"actions":[{"type":"deny"}]}]}`), CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Inbound(testRequest())
	out := buf.String()
	for _, want := range []string{`msg="traffic policy log" location=inbound[0].actions[0] rule=n metadata.a=POST metadata.b=2`,
		`level=WARN msg="traffic policy runtime error" location=inbound[1].expressions[0] rule="" error="no such key: nope"`} {
		if !strings.Contains(out, want) {
			t.Errorf("log output lacks %q:\n%s", want, out)
		}
	}
}

// TestConcurrentEvaluation runs one policy from many goroutines (under
// -race in CI).
func TestConcurrentEvaluation(t *testing.T) {
	e, _ := newTestEngine(t, Options{})
	p := mustCompile(t, e, `{"inbound":[
		{"actions":[{"type":"add-headers","config":{"headers":{"x-a":"${req.url.path}"}}}]},
		{"expressions":["getReqHeader('x-a')[0] == req.url.path && req.headers.exists(k, k == 'x-a')"],"actions":[{"type":"rate-limit","config":`+
		rlConfig(1000000, "60s", `"conn.client_ip"`)+`}]},
		{"expressions":["req.url.path.endsWith('7')"],"actions":[{"type":"deny"}]}]}`, CompileOptions{})
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				req := testRequest()
				req.Path = "/p/" + string(rune('0'+(g+i)%10))
				res := p.Inbound(req)
				wantDeny := strings.HasSuffix(req.Path, "7")
				if (res.Verdict == Respond) != wantDeny || len(res.HeaderEdits) != 1 || res.HeaderEdits[0].Value != req.Path {
					t.Errorf("%s: %+v", req.Path, res)
					return
				}
			}
		}(g)
	}
	wg.Wait()
}

// inspectType is a host action that records what its RunContext shows.
type inspectType struct{ seen *[]string }

type inspectConfig struct {
	Close   bool   `json:"close"`
	Rewrite string `json:"rewrite"`
	Pattern string `json:"pattern"`
}

type inspectAction struct {
	seen *[]string
	cfg  inspectConfig
	re   *Regexp
}

func (t inspectType) Type() string { return "inspect" }

func (t inspectType) Compile(c *CompileContext, config []byte) (Action, error) {
	a := &inspectAction{seen: t.seen}
	if err := c.DecodeConfig(config, &a.cfg); err != nil {
		return nil, err
	}
	if a.cfg.Pattern != "" {
		re, err := c.Regexp("config.pattern", a.cfg.Pattern)
		if err != nil {
			return nil, err
		}
		a.re = re
	}
	*t.seen = append(*t.seen, "compile "+c.Target().String()+" "+c.Phase().String()+" "+c.Location()+" scope="+c.Scope())
	return a, nil
}

func (a *inspectAction) Run(r *RunContext) {
	s := []string{r.Target().String(), r.Phase().String(), r.Location(), r.Time().Format("15:04:05"), r.ClientIP().String()}
	if req := r.Request(); req != nil {
		s = append(s, "req="+req.Method, "uri="+r.URI())
		if v := r.Header("X-API-KEY"); len(v) > 0 {
			s = append(s, "key="+v[0])
		}
	}
	if res := r.Response(); res != nil {
		s = append(s, "res="+http.StatusText(res.StatusCode))
	}
	s = append(s, "conn="+r.Conn().ClientAddr.String())
	if a.re != nil {
		s = append(s, "match="+strconv.FormatBool(a.re.MatchString(r.URI()))+" "+a.re.String())
	}
	if a.cfg.Rewrite != "" {
		if err := r.RewriteURI(a.cfg.Rewrite); err != nil {
			r.ReportError(err)
		}
	}
	*a.seen = append(*a.seen, strings.Join(s, " "))
	if a.cfg.Close {
		r.Close()
	}
}

func TestRunContext(t *testing.T) {
	var seen []string
	e, sink := newTestEngine(t, Options{Actions: []ActionType{inspectType{&seen}}})
	p := mustCompile(t, e, `{"inbound":[{"actions":[{"type":"inspect","config":{"pattern":"^/v1/","rewrite":"/x?y=1"}},{"type":"remove-headers","config":{"headers":["x-api-key"]}},{"type":"inspect","config":{"rewrite":"http://evil/"}}]}],
		"outbound":[{"actions":[{"type":"inspect"}]}]}`, CompileOptions{Scope: "s1"})
	req := testRequest()
	in := p.Inbound(req)
	if in.RewriteURI != "/x?y=1" || in.Verdict != Continue {
		t.Fatalf("%+v", in)
	}
	p.Outbound(req, testResponse(), &in)
	pc := mustCompile(t, e, `{"inbound":[{"actions":[{"type":"inspect","config":{"close":true}}]}]}`, CompileOptions{Target: TargetConnection})
	if res := pc.Connect(&req.Conn, t0); res.Verdict != Close || res.Location != "inbound[0].actions[0]" {
		t.Fatalf("%+v", res)
	}
	want := []string{
		"compile http inbound inbound[0].actions[0] scope=s1",
		"compile http inbound inbound[0].actions[2] scope=s1",
		"compile http outbound outbound[0].actions[0] scope=s1",
		"http inbound inbound[0].actions[0] 00:00:05 198.51.100.10 req=POST uri=/v1/users/42?a=1&a=2&b=x%20y key=k1 conn=198.51.100.10:40000 match=true ^/v1/",
		"http inbound inbound[0].actions[2] 00:00:05 198.51.100.10 req=POST uri=/x?y=1 conn=198.51.100.10:40000",
		"http outbound outbound[0].actions[0] 00:00:05 198.51.100.10 req=POST uri=/v1/users/42?a=1&a=2&b=x%20y res=Bad Gateway conn=198.51.100.10:40000",
		"compile connection inbound inbound[0].actions[0] scope=",
		"connection inbound inbound[0].actions[0] 00:00:00 198.51.100.10 conn=198.51.100.10:40000",
	}
	if strings.Join(seen, "\n") != strings.Join(want, "\n") {
		t.Fatalf("seen:\n%s\nwant:\n%s", strings.Join(seen, "\n"), strings.Join(want, "\n"))
	}
	if errs := sink.errors(); len(errs) != 1 || !strings.Contains(errs[0], "inbound[0].actions[2]: rewritten URL must be a path") {
		t.Fatalf("sink %q", errs)
	}
	// Regexp refuses a bad pattern with the field.
	_, err := e.CompileJSON([]byte(`{"inbound":[{"actions":[{"type":"inspect","config":{"pattern":"("}}]}]}`), CompileOptions{})
	wantViolations(t, err, []string{"inbound[0].actions[0].config.pattern: invalid regular expression"})
}

func TestStrings(t *testing.T) {
	for got, want := range map[string]string{
		TargetHTTP.String(): "http", TargetConnection.String(): "connection",
		Inbound.String(): "inbound", Outbound.String(): "outbound",
		Continue.String(): "continue", Respond.String(): "respond", Close.String(): "close",
	} {
		if got != want {
			t.Errorf("%q != %q", got, want)
		}
	}
	e := &EvalError{Location: "inbound[0]", Err: errors.New("x")}
	if e.Error() != "inbound[0]: x" || !errors.Is(e, e.Err) {
		t.Errorf("EvalError %q", e.Error())
	}
}

func TestNilInputs(t *testing.T) {
	e, _ := newTestEngine(t, Options{})
	p := mustCompile(t, e, `{"inbound":[{"expressions":["conn.client_ip == '' && req.method == ''"],"actions":[{"type":"deny"}]}],
		"outbound":[{"expressions":["res.status_code == 0"],"actions":[{"type":"deny"}]}]}`, CompileOptions{})
	if res := p.Inbound(nil); res.Verdict != Respond {
		t.Fatalf("%+v", res)
	}
	if res := p.Outbound(nil, nil, nil); res.Verdict != Respond {
		t.Fatalf("%+v", res)
	}
	pc := mustCompile(t, e, `{"inbound":[{"expressions":["conn.client_ip == ''"],"actions":[{"type":"deny"}]}]}`, CompileOptions{Target: TargetConnection})
	if res := pc.Connect(nil, t0); res.Verdict != Close {
		t.Fatalf("%+v", res)
	}
	// Wrong-target calls are no-ops.
	if res := pc.Inbound(testRequest()); res.Verdict != Continue {
		t.Fatalf("%+v", res)
	}
	if res := p.Connect(&testRequest().Conn, t0); res.Verdict != Continue {
		t.Fatalf("%+v", res)
	}
}
