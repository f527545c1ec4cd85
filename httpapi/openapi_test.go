package httpapi_test

import (
	"encoding/json"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/httpapi"
	"github.com/edgeplane/edgeplane/httpapi/internal/godoc"
	"github.com/edgeplane/edgeplane/memstore"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/google/go-cmp/cmp"
)

// rawDoc returns the document newServer's handlers serve, as JSON values.
func rawDoc(t *testing.T) map[string]any {
	t.Helper()
	c, err := e2eContract()
	if err != nil {
		t.Fatalf("the OpenAPI document does not load or validate with kin-openapi: %v", err)
	}
	var doc map[string]any
	if err := json.Unmarshal(c.raw, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// operations calls f for every operation of doc.
func operations(doc map[string]any, f func(name string, op map[string]any)) {
	paths, _ := doc["paths"].(map[string]any)
	for _, path := range sortedKeys(paths) {
		item, _ := paths[path].(map[string]any)
		for _, method := range sortedKeys(item) {
			op, _ := item[method].(map[string]any)
			f(strings.ToUpper(method)+" "+path, op)
		}
	}
}

// TestOpenAPIDocument: the document is OpenAPI 3.1 that kin-openapi loads
// and validates, with the server's base URL, readable unique operationIds,
// a tag for every operation, and the rules of the request types.
func TestOpenAPIDocument(t *testing.T) {
	doc := rawDoc(t)
	if doc["openapi"] != "3.1.0" {
		t.Errorf("openapi %v, want 3.1.0", doc["openapi"])
	}
	servers, _ := doc["servers"].([]any)
	if len(servers) != 1 || servers[0].(map[string]any)["url"] != base {
		t.Errorf("servers %v, want the base URL %s", servers, base)
	}
	opID := regexp.MustCompile(`^[a-z][A-Za-z0-9]+$`)
	seen := map[string]string{}
	tags := map[string]bool{}
	for _, tag := range doc["tags"].([]any) {
		tags[tag.(map[string]any)["name"].(string)] = true
	}
	operations(doc, func(name string, op map[string]any) {
		id, _ := op["operationId"].(string)
		if !opID.MatchString(id) {
			t.Errorf("%s: operationId %q is not a lowerCamelCase name", name, id)
		}
		if other, dup := seen[id]; dup {
			t.Errorf("%s and %s share the operationId %q", name, other, id)
		}
		seen[id] = name
		opTags, _ := op["tags"].([]any)
		if len(opTags) != 1 || !tags[opTags[0].(string)] {
			t.Errorf("%s: tags %v, want one tag declared in the document's tags", name, opTags)
		}
	})
	// What the issue found missing: required, enum, maxLength.
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	counts := map[string]int{}
	var count func(v any)
	count = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				counts[k]++
				count(x)
			}
		case []any:
			for _, x := range v {
				count(x)
			}
		}
	}
	count(schemas)
	for _, k := range []string{"required", "enum", "maxLength", "maximum", "minimum", "description"} {
		if counts[k] == 0 {
			t.Errorf("no schema says %s", k)
		}
	}
}

// TestOpenAPIDescribesEverything: every schema and property, operation,
// parameter, response and tag has a description. The descriptions of types
// and fields are their Go doc comments: an exported field without one
// fails here.
func TestOpenAPIDescribesEverything(t *testing.T) {
	doc := rawDoc(t)
	need := func(where string, v map[string]any) {
		if d, _ := v["description"].(string); strings.TrimSpace(d) == "" {
			t.Errorf("%s has no description", where)
		}
	}
	need("info", doc["info"].(map[string]any))
	for _, tag := range doc["tags"].([]any) {
		need("tag "+tag.(map[string]any)["name"].(string), tag.(map[string]any))
	}
	components := doc["components"].(map[string]any)
	var schema func(where string, s map[string]any)
	schema = func(where string, s map[string]any) {
		if _, ref := s["$ref"]; !ref {
			need(where, s)
		}
		props, _ := s["properties"].(map[string]any)
		for _, name := range sortedKeys(props) {
			p := props[name].(map[string]any)
			need(where+"."+name, p) // a reference too: what the field means
			schema(where+"."+name, p)
		}
	}
	schemas := components["schemas"].(map[string]any)
	for _, name := range sortedKeys(schemas) {
		schema("schema "+name, schemas[name].(map[string]any))
	}
	for kind, v := range components {
		if kind == "schemas" || kind == "securitySchemes" {
			continue
		}
		for name, c := range v.(map[string]any) {
			need(kind+" "+name, c.(map[string]any))
		}
	}
	operations(doc, func(name string, op map[string]any) {
		need(name, op)
		if s, _ := op["summary"].(string); s == "" {
			t.Errorf("%s has no summary", name)
		}
		for _, p := range op["parameters"].([]any) {
			need(name+" parameter "+p.(map[string]any)["name"].(string), p.(map[string]any))
		}
		if body, ok := op["requestBody"].(map[string]any); ok {
			need(name+" request body", body)
		}
		responses := op["responses"].(map[string]any)
		for _, status := range sortedKeys(responses) {
			r := responses[status].(map[string]any)
			if _, ref := r["$ref"]; !ref {
				need(name+" response "+status, r)
				content, _ := r["content"].(map[string]any)
				body, _ := content["application/json"].(map[string]any)
				if s, ok := body["schema"].(map[string]any); ok {
					schema(name+" response "+status, s)
				}
			}
		}
	})
}

// TestOpenAPIResponses: every operation lists its error statuses with the
// Error schema, every response carries Service-Operation-Id, 429 carries
// Retry-After, and nothing falls back to an undocumented default.
func TestOpenAPIResponses(t *testing.T) {
	doc := rawDoc(t)
	components := doc["components"].(map[string]any)
	resolve := func(r map[string]any) map[string]any {
		if ref, ok := r["$ref"].(string); ok {
			return components["responses"].(map[string]any)[strings.TrimPrefix(ref, "#/components/responses/")].(map[string]any)
		}
		return r
	}
	operations(doc, func(name string, op map[string]any) {
		responses := op["responses"].(map[string]any)
		if _, ok := responses["default"]; ok {
			t.Errorf("%s has a default response: every status must be listed", name)
		}
		secured := name != "GET /openapi.json" && name != "GET /"
		for _, want := range []string{"400", "401", "429", "500"} {
			if _, ok := responses[want]; secured && !ok {
				t.Errorf("%s does not list %s", name, want)
			}
		}
		for _, status := range sortedKeys(responses) {
			r := resolve(responses[status].(map[string]any))
			headers, _ := r["headers"].(map[string]any)
			if _, ok := headers[httpapi.HeaderOperationID]; !ok {
				t.Errorf("%s response %s lacks the %s header", name, status, httpapi.HeaderOperationID)
			}
			code, _ := strconv.Atoi(status)
			if code < 400 {
				continue
			}
			schema := r["content"].(map[string]any)["application/json"].(map[string]any)["schema"].(map[string]any)
			if schema["$ref"] != "#/components/schemas/Error" {
				t.Errorf("%s response %s: schema %v, want the Error schema", name, status, schema)
			}
			if _, ok := headers["Retry-After"]; ok != (code == 429) {
				t.Errorf("%s response %s: Retry-After documented: %v", name, status, ok)
			}
		}
	})
	allow := resolve(map[string]any{"$ref": "#/components/responses/MethodNotAllowed"})
	if _, ok := allow["headers"].(map[string]any)["Allow"]; !ok {
		t.Error("the 405 response does not document Allow")
	}
}

// TestOpenAPIGoDocsUpToDate: godoc_gen.go is what go generate makes of the
// current doc comments.
func TestOpenAPIGoDocsUpToDate(t *testing.T) {
	want, err := godoc.Generate("..")
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("godoc_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("godoc_gen.go is stale; run go generate ./httpapi (-want +got):\n%s", diff)
	}
}

// TestOpenAPISchemasAreStrict: a response schema requires its fields and
// refuses others, so {} is no Credential; a real one passes.
func TestOpenAPISchemasAreStrict(t *testing.T) {
	c, err := e2eContract()
	if err != nil {
		t.Fatal(err)
	}
	s := newE2E(t)
	r := call(t, s, "POST", "/credentials", s.keyA, `{"description":"ci"}`)
	var created any
	if err := json.Unmarshal(r.body, &created); err != nil || r.status != 201 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	extra := map[string]any{}
	for k, v := range created.(map[string]any) {
		extra[k] = v
	}
	extra["surprise"] = true
	schema := c.doc.Components.Schemas["credentials.Credential"].Value
	tests := []struct {
		name  string
		value any
		ok    bool
	}{
		{"created", created, true},
		{"empty object", map[string]any{}, false},
		{"unknown field", extra, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := schema.VisitJSON(tc.value, openapi3.EnableJSONSchema2020())
			if (err == nil) != tc.ok {
				t.Errorf("valid: %v, want %v (%v)", err == nil, tc.ok, err)
			}
		})
	}
}

// TestOpenAPIHasNoProblems: the document says every rule of every request
// and response type (no rule tag it cannot express) and every doc comment
// is in godoc_gen.go.
func TestOpenAPIHasNoProblems(t *testing.T) {
	h, err := httpapi.New(mustService(edgeplane.New(memstore.New(), edgeplane.Options{})), httpapi.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range httpapi.OpenAPIProblems(h) {
		t.Error(p)
	}
}

// TestOpenAPIOperationIDsAreStable: the operations are those listed in
// testdata/openapi_operations.txt, under the same operationIds (clients
// generated from the document name their methods by them): renaming one
// breaks them. A new operation is added to the file.
func TestOpenAPIOperationIDsAreStable(t *testing.T) {
	raw, err := os.ReadFile("testdata/openapi_operations.txt")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{} // operationId -> "METHOD path"
	for _, line := range strings.Split(string(raw), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		id, op, _ := strings.Cut(line, " ")
		want[id] = op
	}
	got := map[string]string{}
	operations(rawDoc(t), func(name string, op map[string]any) {
		got[op["operationId"].(string)] = name
	})
	for id, op := range want {
		if got[id] != op {
			t.Errorf("operationId %s names %q, want %q: an operationId never changes", id, got[id], op)
		}
	}
	for id, op := range got {
		if _, ok := want[id]; !ok {
			t.Errorf("new operation %s %s: add the line %q to testdata/openapi_operations.txt", id, op, id+" "+op)
		}
	}
}
