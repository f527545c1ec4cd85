package httpapi_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// ruleCase is one request that breaks one rule the document states.
type ruleCase struct {
	name   string
	body   map[string]any
	field  string // the field the violation must name
	reason string // a word its reason must contain ("" when any will do)
}

// ruleCases returns, for the property name of a request schema, one body
// breaking each rule its schema states: required, maxLength, enum,
// pattern, minimum, maximum, maxItems, only null, and the pattern and
// maxLength of its items.
func ruleCases(name string, prop map[string]any, required bool) []ruleCase {
	var out []ruleCase
	add := func(rule string, v any, reason ...string) {
		out = append(out, ruleCase{name: name + " " + rule, body: map[string]any{name: v}, field: name, reason: strings.Join(reason, "")})
	}
	if required {
		out = append(out, ruleCase{name: name + " required", body: map[string]any{}, field: name})
	}
	if n, ok := prop["maxLength"].(float64); ok {
		// The reason must name the limit: a value the server refuses for
		// another rule (its syntax) would not show that the limit holds.
		add("maxLength", strings.Repeat("a", int(n)+1), "at most "+strconv.Itoa(int(n)))
	}
	if enum, ok := prop["enum"].([]any); ok && len(enum) > 0 {
		add("enum", "zz-not-one-of-them")
	}
	if n, ok := prop["maximum"].(float64); ok {
		add("maximum", n+1)
	}
	if n, ok := prop["minimum"].(float64); ok {
		add("minimum", n-1)
	}
	if _, ok := prop["pattern"].(string); ok {
		add("pattern", "zz-not-an-id")
	}
	if prop["type"] == "null" {
		add("absent", "zz-any-value")
	}
	if items, ok := prop["items"].(map[string]any); ok {
		if _, ok := items["pattern"].(string); ok {
			out = append(out, ruleCase{name: name + " items pattern", body: map[string]any{name: []any{"zz-not-an-id"}}, field: name + "[0]"})
		}
		if n, ok := items["maxLength"].(float64); ok {
			out = append(out, ruleCase{name: name + " items maxLength", body: map[string]any{name: []any{strings.Repeat("a", int(n)+1)}}, field: name + "[0]"})
		}
	}
	if n, ok := prop["maxItems"].(float64); ok {
		items := make([]any, int(n)+1)
		for i := range items {
			items[i] = "x" + strconv.Itoa(i)
		}
		add("maxItems", items, "at most "+strconv.Itoa(int(n)))
	}
	return out
}

// objectCases returns the rule cases of the properties of an object
// schema, and of the objects they refer to (a nested case's body and field
// are under the property's name: certificate_management_policy.authority).
func objectCases(schemas, schema map[string]any, depth int) []ruleCase {
	var out []ruleCase
	required, _ := schema["required"].([]any)
	props, _ := schema["properties"].(map[string]any)
	for _, name := range sortedKeys(props) {
		prop := props[name].(map[string]any)
		out = append(out, ruleCases(name, prop, slices.Contains(required, any(name)))...)
		ref, _ := prop["$ref"].(string)
		if anyOf, ok := prop["anyOf"].([]any); ok {
			for _, m := range anyOf {
				if r, ok := m.(map[string]any)["$ref"].(string); ok {
					ref = r
				}
			}
		}
		nested, ok := schemas[strings.TrimPrefix(ref, "#/components/schemas/")].(map[string]any)
		if !ok || depth > 2 {
			continue
		}
		for _, rc := range objectCases(schemas, nested, depth+1) {
			out = append(out, ruleCase{name: name + "." + rc.name, body: map[string]any{name: rc.body},
				field: name + "." + rc.field, reason: rc.reason})
		}
	}
	return out
}

// TestOpenAPIRulesAreEnforced: every rule the document states of a request
// body field is one the server enforces. For each operation with a body
// and each rule of its fields and of the objects they hold (required,
// maxLength, enum, pattern, minimum, maximum, maxItems, only null, the
// items' pattern and maxLength), a request breaking that rule alone, on a
// resource that exists,
// is answered 400 with a violation naming the field. (The document may
// state fewer rules than the server enforces, never more.)
func TestOpenAPIRulesAreEnforced(t *testing.T) {
	s := newE2E(t)
	f := newFixture(t, s, s.keyA, "rules")
	bot := create(t, s, s.keyA, "/bot_users", `{"name":"rules"}`, "bot_")
	key := create(t, s, s.keyA, "/api_keys", `{}`, "ak_")
	existing := []string{f.cred, f.pol, f.rule, f.ipx, f.cert, f.ec, f.rd, f.bk, f.sub, f.dest, f.https, f.route, f.tls, f.tcp, f.session, f.endpoint, bot, key}
	doc := rawDoc(t)
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	cases := 0
	operations(doc, func(opName string, op map[string]any) {
		body, ok := op["requestBody"].(map[string]any)
		if !ok {
			return
		}
		ref, _ := body["content"].(map[string]any)["application/json"].(map[string]any)["schema"].(map[string]any)["$ref"].(string)
		schema, ok := schemas[strings.TrimPrefix(ref, "#/components/schemas/")].(map[string]any)
		if !ok {
			t.Errorf("%s: request body schema %q is not a component", opName, ref)
			return
		}
		method, path, _ := strings.Cut(opName, " ")
		path = fillPath(t, path, op, existing, f.source)
		{
			for _, rc := range objectCases(schemas, schema, 0) {
				cases++
				t.Run(opName+" "+rc.name, func(t *testing.T) {
					b, _ := json.Marshal(rc.body)
					r := call(t, s, method, path, s.keyA, string(b))
					if r.status != 400 {
						t.Fatalf("status %d, want 400: %.300s", r.status, r.body)
					}
					var e struct {
						Violations []struct{ Field, Reason string } `json:"violations"`
					}
					json.Unmarshal(r.body, &e)
					for _, v := range e.Violations {
						if v.Field == rc.field && strings.Contains(v.Reason, rc.reason) {
							return
						}
					}
					t.Errorf("no violation names %s with a reason saying %q: %.500s", rc.field, rc.reason, r.body)
				})
			}
		}
	})
	if cases < 50 {
		t.Errorf("only %d rules checked", cases)
	}
}

// fillPath replaces the path parameters of an operation by resources that
// exist: the one of existing whose ID has the parameter's prefix, and
// source for an event source's type.
func fillPath(t *testing.T, path string, op map[string]any, existing []string, source string) string {
	t.Helper()
	for _, p := range op["parameters"].([]any) {
		param := p.(map[string]any)
		if param["in"] != "path" {
			continue
		}
		name := param["name"].(string)
		value := source
		if pattern, ok := param["schema"].(map[string]any)["pattern"].(string); ok {
			prefix, _, _ := strings.Cut(strings.TrimPrefix(pattern, "^"), "[")
			value = ""
			for _, id := range existing {
				if strings.HasPrefix(id, prefix) {
					value = id
				}
			}
			if value == "" {
				t.Fatalf("no existing resource for {%s} (%s)", name, prefix)
			}
		}
		path = strings.Replace(path, fmt.Sprintf("{%s}", name), value, 1)
	}
	return path
}

// TestOpenAPIQueryRulesAreEnforced: the bounds the document states of a
// query parameter (limit's 1..100) are the server's: a value beyond one is
// answered 400 naming the parameter.
func TestOpenAPIQueryRulesAreEnforced(t *testing.T) {
	s := newE2E(t)
	f := newFixture(t, s, s.keyA, "query")
	bot := create(t, s, s.keyA, "/bot_users", `{"name":"rules"}`, "bot_")
	key := create(t, s, s.keyA, "/api_keys", `{}`, "ak_")
	existing := []string{f.cred, f.pol, f.rule, f.ipx, f.cert, f.ec, f.rd, f.bk, f.sub, f.dest, f.https, f.route, f.tls, f.tcp, f.session, f.endpoint, bot, key}
	cases := 0
	operations(rawDoc(t), func(opName string, op map[string]any) {
		method, path, _ := strings.Cut(opName, " ")
		filled := false
		for _, p := range op["parameters"].([]any) {
			param := p.(map[string]any)
			if param["in"] != "query" {
				continue
			}
			if !filled {
				path, filled = fillPath(t, path, op, existing, f.source), true
			}
			name := param["name"].(string)
			schema := param["schema"].(map[string]any)
			var values []string
			if n, ok := schema["minimum"].(float64); ok {
				values = append(values, strconv.Itoa(int(n)-1))
			}
			if n, ok := schema["maximum"].(float64); ok {
				values = append(values, strconv.Itoa(int(n)+1))
			}
			if schema["type"] == "integer" {
				values = append(values, "ten")
			}
			for _, v := range values {
				cases++
				t.Run(opName+" "+name+"="+v, func(t *testing.T) {
					checkError(t, call(t, s, method, path+"?"+name+"="+v, s.keyA, ""),
						apiError{status: 400, code: errInvalid, fields: []string{name}})
				})
			}
		}
	})
	if cases == 0 {
		t.Fatal("no query parameter has a bound")
	}
}
