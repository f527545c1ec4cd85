package policy

import (
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane/policy/limits"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		doc     string
		want    []string // violations, "field: reason substring"
		compact string   // MarshalJSON of a valid document
	}{
		{name: "empty object", doc: `{}`, compact: `{}`},
		{name: "spec shape", doc: `{ "inbound": [ {"name": "a", "expressions": ["true"], "actions": [{"type": "deny", "config": { "status_code" : 404 }}]} ] }`,
			compact: `{"inbound":[{"name":"a","expressions":["true"],"actions":[{"type":"deny","config":{"status_code":404}}]}]}`},
		{name: "on_ names kept", doc: `{"on_http_response":[{"actions":[{"type":"log"}]}],"on_http_request":[]}`,
			compact: `{"on_http_request":[],"on_http_response":[{"actions":[{"type":"log"}]}]}`},
		{name: "null phase", doc: `{"outbound":null}`, compact: `{"outbound":[]}`},
		{name: "html characters kept", doc: `{"inbound":[{"expressions":["req.method != '<&>'"],"actions":[{"type":"log"}]}]}`,
			compact: `{"inbound":[{"expressions":["req.method != '<&>'"],"actions":[{"type":"log"}]}]}`},
		{name: "not json", doc: `{`, want: []string{": document must be a JSON object"}},
		{name: "not an object", doc: `[]`, want: []string{": document must be a JSON object"}},
		{name: "trailing data", doc: `{} {}`, want: []string{": unexpected data after the object"}},
		{name: "unknown phase", doc: `{"inbound":[],"on_request":[]}`, want: []string{"on_request: unknown phase"}},
		{name: "two names for inbound", doc: `{"inbound":[],"on_http_request":[]}`, want: []string{"on_http_request: inbound and on_http_request name the same phase"}},
		{name: "two names for outbound", doc: `{"outbound":[],"on_http_response":[]}`, want: []string{"on_http_response: outbound and on_http_response name the same phase"}},
		{name: "duplicate key", doc: `{"inbound":[],"inbound":[]}`, want: []string{`: document must be a JSON object: duplicate key "inbound"`}},
		{name: "phase not a list", doc: `{"inbound":{}}`, want: []string{"inbound: must be a list of rules"}},
		{name: "rule not an object", doc: `{"inbound":[1]}`, want: []string{"inbound[0]: rule must be an object"}},
		{name: "rule unknown field", doc: `{"inbound":[{"actions":[{"type":"log"}],"when":"x"}]}`, want: []string{"inbound[0].when: unknown field"}},
		{name: "rule field types", doc: `{"outbound":[{"name":1,"expressions":"x","actions":{}}]}`,
			want: []string{"outbound[0].name: must be a string", "outbound[0].expressions: must be a list of strings", "outbound[0].actions: must be a list of actions"}},
		{name: "expression not a string", doc: `{"inbound":[{"expressions":["a",2,null],"actions":[{"type":"log"}]}]}`,
			want: []string{"inbound[0].expressions[1]: must be a string", "inbound[0].expressions[2]: must be a string"}},
		{name: "action shape", doc: `{"inbound":[{"actions":[1,{"type":2},{"type":"log","config":[]},{"type":"log","cfg":{}}]}]}`,
			want: []string{"inbound[0].actions[0]: action must be an object", "inbound[0].actions[1].type: must be a string",
				"inbound[0].actions[2].config: must be an object", "inbound[0].actions[3].cfg: unknown field"}},
		{name: "duplicate key in rule", doc: `{"inbound":[{"name":"a","name":"b","actions":[]}]}`, want: []string{`inbound[0]: rule must be an object: duplicate key "name"`}},
		{name: "every problem listed", doc: `{"x":[],"inbound":[{"y":1},{"actions":[{"z":1}]}]}`,
			want: []string{"x: unknown phase", "inbound[0].y: unknown field", "inbound[1].actions[0].z: unknown field"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc, err := Parse([]byte(tc.doc))
			if tc.want != nil {
				wantViolations(t, err, tc.want)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := doc.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.compact {
				t.Fatalf("MarshalJSON = %s\nwant          %s", got, tc.compact)
			}
			// The compact form parses back to the same compact form.
			doc2, err := Parse(got)
			if err != nil {
				t.Fatal(err)
			}
			if again, _ := doc2.MarshalJSON(); string(again) != tc.compact {
				t.Fatalf("round trip = %s", again)
			}
		})
	}
}

func TestParseTooLarge(t *testing.T) {
	doc := `{"inbound":[` + strings.Repeat(" ", limits.MaxDocumentBytes) + `]}`
	_, err := Parse([]byte(doc))
	wantViolations(t, err, []string{": document is"})
}

func TestPolicyMarshalJSON(t *testing.T) {
	e, _ := newTestEngine(t, Options{})
	doc := `{
	  "on_http_request": [{"name": "n", "expressions": ["req.method == \"GET\""],
	    "actions": [{"type": "add-headers", "config": {"headers": {"x-a": "${req.host}"}}}]}],
	  "outbound": [{"actions": [{"type": "log", "config": {"metadata": {"k": "v"}}}]}]
	}`
	p := mustCompile(t, e, doc, CompileOptions{})
	got, err := p.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"on_http_request":[{"name":"n","expressions":["req.method == \"GET\""],"actions":[{"type":"add-headers","config":{"headers":{"x-a":"${req.host}"}}}]}],"outbound":[{"actions":[{"type":"log","config":{"metadata":{"k":"v"}}}]}]}`
	if string(got) != want {
		t.Fatalf("MarshalJSON =\n%s\nwant\n%s", got, want)
	}
	// A programmatic document gets the default phase names.
	p2, err := e.Compile(&Document{Inbound: []Rule{{Actions: []RuleAction{{Type: "deny"}}}}}, CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := p2.MarshalJSON(); string(got) != `{"inbound":[{"actions":[{"type":"deny"}]}]}` {
		t.Fatalf("MarshalJSON = %s", got)
	}
}
