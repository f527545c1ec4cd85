package policy

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/policy/limits"
)

// TestSetVars checks set-vars and vars.* (issue 19, item 6): values are
// computed once and read by later rules' expressions and templates, on
// the inbound and (carried) outbound phases and in connection policies.
func TestSetVars(t *testing.T) {
	tests := []struct {
		name   string
		doc    string
		target Target
		want   map[string]string // log metadata of the last log entry
	}{
		{name: "expression and template",
			doc: `{"inbound":[{"actions":[{"type":"set-vars","config":{"vars":{"tenant":"${req.headers['x-api-key'][0]}","route":"${req.method} ${req.url.path}"}}}]},
			  {"expressions":["vars.tenant == 'k1'"],"actions":[{"type":"log","config":{"metadata":{"v":"${vars.route}|${vars['tenant']}"}}}]}]}`,
			want: map[string]string{"v": "POST /v1/users/42|k1"}},
		{name: "a later set-vars overwrites; its values see the earlier one",
			doc: `{"inbound":[{"actions":[{"type":"set-vars","config":{"vars":{"n":"a"}}},{"type":"set-vars","config":{"vars":{"n":"${vars.n}b"}}},
			  {"type":"log","config":{"metadata":{"v":"${vars.n}"}}}]}]}`,
			want: map[string]string{"v": "ab"}},
		{name: "has() on a var set by a rule that did not apply",
			doc: `{"inbound":[{"expressions":["false"],"actions":[{"type":"set-vars","config":{"vars":{"x":"1"}}}]},
			  {"actions":[{"type":"log","config":{"metadata":{"v":"${has(vars.x)}"}}}]}]}`,
			want: map[string]string{"v": "false"}},
		{name: "carried to outbound",
			doc: `{"inbound":[{"actions":[{"type":"set-vars","config":{"vars":{"agent":"${req.user_agent}"}}}]}],
			  "outbound":[{"expressions":["vars.agent.startsWith('curl')"],"actions":[{"type":"log","config":{"metadata":{"v":"${vars.agent} ${res.status_code}"}}}]}]}`,
			want: map[string]string{"v": "curl/8.5 502"}},
		{name: "connection policy", target: TargetConnection,
			doc: `{"inbound":[{"actions":[{"type":"set-vars","config":{"vars":{"ip":"${conn.client_ip}"}}},
			  {"type":"log","config":{"metadata":{"v":"${vars.ip}"}}}]}]}`,
			want: map[string]string{"v": "198.51.100.10"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, sink := newTestEngine(t, Options{})
			p := mustCompile(t, e, tt.doc, CompileOptions{Target: tt.target})
			req := testRequest()
			if tt.target == TargetConnection {
				p.Connect(&req.Conn, time.Time{})
			} else {
				in := p.Inbound(req)
				p.Outbound(req, testResponse(), &in)
			}
			if len(sink.logs) == 0 {
				t.Fatalf("nothing logged; errors %v", sink.errors())
			}
			got := sink.logs[len(sink.logs)-1].Metadata
			for k, v := range tt.want {
				if got[k] != v {
					t.Fatalf("metadata %v, want %v (errors %v)", got, tt.want, sink.errors())
				}
			}
			if errs := sink.errors(); len(errs) != 0 {
				t.Fatalf("errors %v", errs)
			}
		})
	}
}

// TestSetVarsIsolation checks that variables do not leak between
// evaluations of a pooled state, and that the host's inbound Result is
// not changed by an outbound set-vars.
func TestSetVarsIsolation(t *testing.T) {
	e, sink := newTestEngine(t, Options{})
	p := mustCompile(t, e, `{"inbound":[{"expressions":["req.method == 'POST'"],"actions":[{"type":"set-vars","config":{"vars":{"m":"${req.method}"}}}]},
	  {"actions":[{"type":"log","config":{"metadata":{"v":"${has(vars.m) ? vars.m : 'unset'}"}}}]}],
	  "outbound":[{"actions":[{"type":"set-vars","config":{"vars":{"m":"changed"}}},{"type":"log","config":{"metadata":{"out":"${vars.m}"}}}]}]}`, CompileOptions{})
	in := p.Inbound(testRequest())
	p.Outbound(testRequest(), testResponse(), &in)
	if in.userVars["m"] != "POST" {
		t.Fatalf("the inbound result's vars changed: %v", in.userVars)
	}
	get := testRequest()
	get.Method = "GET"
	p.Inbound(get)
	if len(sink.logs) != 3 || sink.logs[0].Metadata["v"] != "POST" || sink.logs[1].Metadata["out"] != "changed" || sink.logs[2].Metadata["v"] != "unset" {
		t.Fatalf("logs %+v", sink.logs)
	}
}

func TestSetVarsTruncated(t *testing.T) {
	e, sink := newTestEngine(t, Options{})
	p := mustCompile(t, e, `{"inbound":[{"actions":[{"type":"set-vars","config":{"vars":{"big":"${req.headers['x-big'][0]}"}}},
	  {"type":"log","config":{"metadata":{"n":"${string(size(vars.big))}"}}}]}]}`, CompileOptions{})
	req := testRequest()
	req.Header["X-Big"] = []string{strings.Repeat("é", limits.MaxVarBytes)}
	p.Inbound(req)
	if len(sink.logs) != 1 || sink.logs[0].Metadata["n"] != "4096" {
		t.Fatalf("logs %+v", sink.logs)
	}
	if errs := sink.errors(); len(errs) != 1 || !strings.Contains(errs[0], "truncated") {
		t.Fatalf("errors %v", errs)
	}
}

func TestSetVarsCompileErrors(t *testing.T) {
	many := map[string]string{}
	for i := range limits.MaxVars + 1 {
		many["v"+strings.Repeat("x", i%10)+string(rune('a'+i/10))] = "1"
	}
	manyJS, _ := json.Marshal(many)
	half := map[string]string{}
	rest := map[string]string{}
	for i := range limits.MaxVars {
		half["a"+string(rune('a'+i/26))+string(rune('a'+i%26))] = "1"
	}
	rest["extra"] = "1"
	halfJS, _ := json.Marshal(half)
	restJS, _ := json.Marshal(rest)
	tests := []struct {
		name, doc, want string
	}{
		{"unset variable", `{"inbound":[{"expressions":["vars.nope == 'x'"],"actions":[{"type":"deny"}]}]}`,
			`inbound[0].expressions[0]: 1:5: vars.nope is not set by a set-vars or jwt-validation action before this point of the document`},
		{"unset by index", `{"inbound":[{"expressions":["vars['nope'] == 'x'"],"actions":[{"type":"deny"}]}]}`,
			`inbound[0].expressions[0]: 1:5: vars.nope is not set`},
		{"set later", `{"inbound":[{"expressions":["vars.x == 'a'"],"actions":[{"type":"set-vars","config":{"vars":{"x":"a"}}}]}]}`,
			`inbound[0].expressions[0]: 1:5: vars.x is not set`},
		{"own value", `{"inbound":[{"actions":[{"type":"set-vars","config":{"vars":{"x":"${vars.x}"}}}]}]}`,
			`inbound[0].actions[0].config.vars["x"]: template ${vars.x} at byte 0: 1:5: vars.x is not set`},
		{"not a string", `{"inbound":[{"expressions":["vars == 1"],"actions":[{"type":"deny"}]}]}`, `inbound[0].expressions[0]: 1:6: found no matching overload`},
		{"bad name", `{"inbound":[{"actions":[{"type":"set-vars","config":{"vars":{"1x":"a"}}}]}]}`, `config.vars["1x"]: invalid variable name "1x"`},
		{"reserved name", `{"inbound":[{"actions":[{"type":"set-vars","config":{"vars":{"in":"a"}}}]}]}`, `config.vars["in"]: invalid variable name "in"`},
		{"long name", `{"inbound":[{"actions":[{"type":"set-vars","config":{"vars":{"` + strings.Repeat("a", limits.MaxVarNameLength+1) + `":"a"}}}]}]}`, `invalid variable name`},
		{"no vars", `{"inbound":[{"actions":[{"type":"set-vars","config":{}}]}]}`, `config.vars: is required`},
		{"unknown field", `{"inbound":[{"actions":[{"type":"set-vars","config":{"var":{}}}]}]}`, `config.var: unknown field; allowed: vars`},
		{"too many in one action", `{"inbound":[{"actions":[{"type":"set-vars","config":{"vars":` + string(manyJS) + `}}]}]}`, `config.vars: has 65 entries; at most 64 are allowed`},
		{"too many in the document", `{"inbound":[{"actions":[{"type":"set-vars","config":{"vars":` + string(halfJS) + `}},{"type":"set-vars","config":{"vars":` + string(restJS) + `}}]}]}`,
			`inbound[0].actions[1].config.vars["extra"]: the document sets more than 64 distinct variables`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := newTestEngine(t, Options{})
			_, err := e.CompileJSON([]byte(tt.doc), CompileOptions{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v\nwant %s", err, tt.want)
			}
		})
	}
}
