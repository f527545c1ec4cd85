package httpapi

import (
	"net/http"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/internal/ids"
)

// openAPI builds the OpenAPI 3.1 document of the route table. Schemas are
// derived from the Go types by their json tags, so the document cannot
// drift from the code.
func (h *Handler) openAPI() map[string]any {
	g := &schemaGen{components: map[string]any{}}
	paths := map[string]map[string]any{}
	for _, rt := range h.routes {
		item := paths[rt.pattern]
		if item == nil {
			item = map[string]any{}
			paths[rt.pattern] = item
		}
		op := map[string]any{
			"operationId": rt.op,
			"summary":     rt.summary,
			"security":    []any{map[string]any{"bearer": []string{}}},
			"parameters":  parameters(rt),
			"responses":   responses(g, rt),
		}
		if rt.req != nil {
			op["requestBody"] = map[string]any{
				"required": false,
				"content":  map[string]any{"application/json": map[string]any{"schema": g.schema(rt.req)}},
			}
		}
		item[strings.ToLower(rt.method)] = op
	}
	return map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{
			"title":   "edgeplane management API",
			"version": Version,
			"description": "Every request but GET /openapi.json carries Authorization: Bearer <API key> and " +
				HeaderVersion + ": " + Version + ". Errors have the shape of the Error schema.",
		},
		"paths": paths,
		"components": map[string]any{
			"schemas": g.withError(),
			"securitySchemes": map[string]any{
				"bearer": map[string]any{"type": "http", "scheme": "bearer"},
			},
		},
	}
}

var pathParam = regexp.MustCompile(`\{([a-z_]+)\}`)

func parameters(rt route) []any {
	params := []any{map[string]any{
		"name": HeaderVersion, "in": "header", "required": true,
		"schema": map[string]any{"type": "string", "enum": []string{Version}},
	}}
	for _, m := range pathParam.FindAllStringSubmatchIndex(rt.pattern, -1) {
		name := rt.pattern[m[2]:m[3]]
		schema := map[string]any{"type": "string"}
		if prefix := edgeplane.IDPrefixForPath(strings.TrimSuffix(rt.pattern[:m[0]], "/")); prefix != "" {
			schema["pattern"] = "^" + regexp.QuoteMeta(prefix) + "[0-9A-Za-z]{" + strconv.Itoa(ids.Len) + "}$"
		}
		params = append(params, map[string]any{"name": name, "in": "path", "required": true, "schema": schema})
	}
	if rt.list != "" {
		params = append(params,
			map[string]any{"name": "limit", "in": "query", "schema": map[string]any{"type": "integer", "minimum": 1, "maximum": 100, "default": 100}},
			map[string]any{"name": "before_id", "in": "query", "schema": map[string]any{"type": "string"}})
	}
	return params
}

func responses(g *schemaGen, rt route) map[string]any {
	errResp := map[string]any{"description": "error", "content": map[string]any{
		"application/json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/Error"}}}}
	out := map[string]any{"default": errResp}
	code := http.StatusText(rt.status)
	switch {
	case rt.status == http.StatusNoContent:
		out["204"] = map[string]any{"description": code}
	case rt.list != "":
		out[strconv.Itoa(rt.status)] = map[string]any{"description": code, "content": map[string]any{"application/json": map[string]any{
			"schema": map[string]any{
				"type":     "object",
				"required": []string{rt.list, "uri", "next_page_uri"},
				"properties": map[string]any{
					rt.list:         map[string]any{"type": "array", "items": g.schema(rt.resp)},
					"uri":           map[string]any{"type": "string"},
					"next_page_uri": map[string]any{"type": []string{"string", "null"}},
				},
			}}}}
	default:
		out[strconv.Itoa(rt.status)] = map[string]any{"description": code, "content": map[string]any{
			"application/json": map[string]any{"schema": g.schema(rt.resp)}}}
	}
	return out
}

// schemaGen turns Go types into JSON Schema, naming struct types as
// components.
type schemaGen struct {
	components map[string]any
}

var timeType = reflect.TypeFor[time.Time]()

func (g *schemaGen) schema(t reflect.Type) map[string]any {
	switch {
	case t == timeType:
		return map[string]any{"type": "string", "format": "date-time"}
	case t.Kind() == reflect.Pointer:
		inner := g.schema(t.Elem())
		if ref, ok := inner["$ref"]; ok {
			return map[string]any{"oneOf": []any{map[string]any{"$ref": ref}, map[string]any{"type": "null"}}}
		}
		if typ, ok := inner["type"].(string); ok {
			out := map[string]any{}
			for k, v := range inner {
				out[k] = v
			}
			out["type"] = []string{typ, "null"}
			return out
		}
		return inner
	}
	switch t.Kind() {
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return map[string]any{"type": "integer"}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer", "minimum": 0}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice, reflect.Array:
		return map[string]any{"type": "array", "items": g.schema(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": g.schema(t.Elem())}
	case reflect.Struct:
		name := componentName(t)
		if _, done := g.components[name]; !done {
			g.components[name] = nil // placeholder against recursion
			g.components[name] = g.object(t)
		}
		return map[string]any{"$ref": "#/components/schemas/" + name}
	}
	return map[string]any{}
}

func (g *schemaGen) object(t reflect.Type) map[string]any {
	props := map[string]any{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || f.Tag.Get("openapi") == "-" {
			continue // not part of the wire shape (openapi:"-" marks stored-only fields)
		}
		if name == "" {
			name = f.Name
		}
		props[name] = g.schema(f.Type)
	}
	return map[string]any{"type": "object", "properties": props, "additionalProperties": false}
}

func componentName(t reflect.Type) string {
	pkg := t.PkgPath()
	if i := strings.LastIndex(pkg, "/"); i >= 0 {
		pkg = pkg[i+1:]
	}
	if pkg == "" {
		return t.Name()
	}
	return pkg + "." + t.Name()
}

func (g *schemaGen) withError() map[string]any {
	g.components["Error"] = map[string]any{
		"type":     "object",
		"required": []string{"error_code", "status_code", "msg", "details"},
		"properties": map[string]any{
			"error_code":  map[string]any{"type": "string", "pattern": "^ERR_SERVICE_[0-9]+$"},
			"status_code": map[string]any{"type": "integer"},
			"msg":         map[string]any{"type": "string", "maxLength": MaxMessageBytes},
			"details": map[string]any{"type": "object", "properties": map[string]any{
				"operation_id": map[string]any{"type": "string"}}},
			"violations": map[string]any{"type": "array", "maxItems": MaxViolations,
				"description": "The broken field rules, the first " + strconv.Itoa(MaxViolations) + " in the order found.",
				"items": map[string]any{"type": "object", "properties": map[string]any{
					"field":  map[string]any{"type": "string", "maxLength": MaxEchoBytes},
					"reason": map[string]any{"type": "string", "maxLength": MaxMessageBytes}}}},
			"violations_omitted": map[string]any{"type": "integer", "minimum": 1,
				"description": "How many violations beyond the first " + strconv.Itoa(MaxViolations) + " are not listed; absent when none are."},
		},
	}
	return g.components
}
