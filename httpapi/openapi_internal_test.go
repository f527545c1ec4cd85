package httpapi

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/swaggest/jsonschema-go"
)

// TestApplyRules: each rule word becomes the JSON Schema keyword the
// package doc of openapi.go promises; a rule it cannot express is a
// problem, never silently dropped.
func TestApplyRules(t *testing.T) {
	str := func() jsonschema.Schema { return *(&jsonschema.Schema{}).WithType(jsonschema.String.Type()) }
	arr := func() jsonschema.Schema {
		item := str()
		return *(&jsonschema.Schema{}).WithType(jsonschema.Array.Type()).
			WithItems(*(&jsonschema.Items{}).WithSchemaOrBool(item.ToSchemaOrBool()))
	}
	num := func() jsonschema.Schema { return *(&jsonschema.Schema{}).WithType(jsonschema.Integer.Type()) }
	tests := []struct {
		name     string
		schema   jsonschema.Schema
		t        reflect.Type
		rules    string
		want     string
		required bool
		problem  string
	}{
		{"maxbytes", str(), reflect.TypeFor[string](), "omitnil,maxbytes=255", `{"maxLength":255,"type":"string"}`, false, ""},
		{"required enum", str(), reflect.TypeFor[string](), "required,oneof=a b", `{"enum":["a","b"],"type":"string"}`, true, ""},
		{"optional enum", str(), reflect.TypeFor[string](), "omitempty,oneof=a b", `{"enum":["","a","b"],"type":"string"}`, false, ""},
		{"id", str(), reflect.TypeFor[string](), "id=usr_|bot_", `{"pattern":"^(?:usr_|bot_)[0-9A-Za-z]{27}$","type":"string"}`, false, ""},
		{"optional id", str(), reflect.TypeFor[*string](), "omitempty,id=ec_", `{"pattern":"^(?:(?:ec_)[0-9A-Za-z]{27})?$","type":"string"}`, false, ""},
		{"absent", str(), reflect.TypeFor[*string](), "absent", `{"type":"null"}`, false, ""},
		{"https URL", str(), reflect.TypeFor[string](), "httpsurl", `{"format":"uri","pattern":"^https://","type":"string"}`, false, ""},
		{"number bounds", num(), reflect.TypeFor[int](), "gte=1,lte=10", `{"maximum":10,"minimum":1,"type":"integer"}`, false, ""},
		{"list", arr(), reflect.TypeFor[[]string](), "required,min=1,max=100,unique,dive,min=1,maxbytes=256",
			`{"items":{"maxLength":256,"minLength":1,"type":"string"},"maxItems":100,"minItems":1,"type":"array","uniqueItems":true}`, true, ""},
		{"unknown rule", str(), reflect.TypeFor[string](), "maxbytes=3,email", `{"maxLength":3,"type":"string"}`, false, `rule "email"`},
		{"bad number", str(), reflect.TypeFor[string](), "maxbytes=x", `{"type":"string"}`, false, `rule "maxbytes=x"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.schema
			required, problems := applyRules(&s, strings.Split(tc.rules, ","), tc.t)
			got, err := json.Marshal(s)
			if err != nil {
				t.Fatal(err)
			}
			var g, w any
			json.Unmarshal(got, &g)
			json.Unmarshal([]byte(tc.want), &w)
			if !reflect.DeepEqual(g, w) {
				t.Errorf("schema %s, want %s", got, tc.want)
			}
			if required != tc.required {
				t.Errorf("required %v, want %v", required, tc.required)
			}
			switch {
			case tc.problem == "" && len(problems) > 0:
				t.Errorf("problems %q, want none", problems)
			case tc.problem != "" && (len(problems) != 1 || !strings.Contains(problems[0], tc.problem)):
				t.Errorf("problems %q, want one about %s", problems, tc.problem)
			}
		})
	}
}

// TestWireOperations: a Service method a description names reads as the
// operation that calls it; one no operation calls is left out in a
// parenthesis of its own, and is a problem anywhere else.
func TestWireOperations(t *testing.T) {
	tests := []struct{ name, doc, want, problem string }{
		{"routed", "as Service.CreateTLSEdge does (see Service.UpdateTLSEdge).", "as POST /edges/tls does (see PATCH /edges/tls/{id}).", ""},
		{"unrouted in a parenthesis", "a known type (Service.EventTypes); see it (see Service.EventTypes).", "a known type; see it.", ""},
		{"unrouted", "as Service.EventTypes says", "as Service.EventTypes says", "names Service.EventTypes"},
		{"header", "the Service-Version header", "the Service-Version header", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := &docBuilder{operations: map[string]string{"CreateTLSEdge": "POST /edges/tls", "UpdateTLSEdge": "PATCH /edges/tls/{id}"}}
			if got := b.wire("key", tc.doc); got != tc.want {
				t.Errorf("wire(%q) = %q, want %q", tc.doc, got, tc.want)
			}
			if tc.problem == "" && len(b.problems) > 0 || tc.problem != "" && (len(b.problems) != 1 || !strings.Contains(b.problems[0], tc.problem)) {
				t.Errorf("problems %q, want one about %q", b.problems, tc.problem)
			}
		})
	}
}
