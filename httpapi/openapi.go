package httpapi

//go:generate go run ./internal/godoc/gen

import (
	"fmt"
	"math"
	"net/http"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/filter"
	"github.com/edgeplane/edgeplane/internal/ids"
	"github.com/swaggest/jsonschema-go"
)

// The OpenAPI document (GET /openapi.json) is derived from the route
// table and the Go types of the request and response bodies; nothing in it
// is written twice:
//
//   - Schemas come from github.com/swaggest/jsonschema-go's reflector, by
//     the json tags, with this file's interceptors adding what the
//     server enforces: the rules of the `validate` tags (and of `openapi`
//     tags, which state rules a hand-written Validate method enforces, in
//     the same words), required fields, nullability, closed objects and
//     integer bounds.
//   - Descriptions are the Go doc comments of the types, their fields and
//     the Service methods the routes call, collected by go generate into
//     godoc_gen.go (package internal/godoc) in the wire's language: values,
//     JSON names and words, never Go names. A Service method a comment
//     names is written as the operation that calls it (POST /edges/tls),
//     from the route table.
//   - Paths, parameters, status codes, headers and tags come from the
//     route table.
//
// Rule tags (`validate:"..."` and `openapi:"..."`, comma-separated):
//
//	required          request: the field must be present (strings: not empty)
//	maxbytes=N        strings: at most N bytes; maxLength N (JSON Schema counts
//	                  characters, never more than bytes) and the byte limit in words
//	maxrunes=N        strings: maxLength N
//	oneof=a b c       enum
//	min=N, max=N      strings: minLength/maxLength; arrays and maps: minItems/maxItems
//	                  (minProperties/maxProperties); numbers: minimum/maximum
//	gte=N, lte=N      numbers: minimum/maximum
//	unique            arrays: uniqueItems
//	httpurl, httpsurl strings: format uri and the scheme as a pattern
//	id=p1|p2          strings: an identifier, one of the prefixes followed by
//	                  27 base62 characters (a pattern)
//	absent            never allowed (a field kept so that sending it is refused):
//	                  only null, the same as absent
//	omitempty         the zero value is allowed too ("" in an enum, an id)
//	dive              the rules after it apply to the elements
//
// An `openapi:"-"` tag leaves a stored-only field out of the document.

// Request and response sides of a schema: a request body's fields are
// optional unless a rule requires them, and every optional one takes null
// (which decodes as absent); a response's fields are all present (but
// those tagged omitempty), and only pointers are null.
type side int

const (
	responseSide side = iota
	requestSide
)

// docBuilder builds one OpenAPI document.
type docBuilder struct {
	reflector jsonschema.Reflector
	schemas   map[string]any
	// responseTypes are the struct types reachable from response bodies:
	// a request type among them is named with a "Request" suffix, since
	// its schema differs.
	responseTypes map[reflect.Type]bool
	tags          map[string]string // tag -> description
	// idPrefixes are the ID prefixes of the resource types the routes
	// address by {id}: the pattern of their id field.
	idPrefixes map[reflect.Type]string
	// operations are the operations that call the Service's methods
	// ("CreateTLSEdge": "POST /edges/tls"), as the descriptions name them.
	operations map[string]string
	// problems are what the document could not say (a rule it cannot
	// express, a missing doc comment): the document is served without it,
	// and the tests fail while there are any.
	problems []string
}

// openAPI builds the OpenAPI 3.1 document of the route table, and returns
// what it could not say.
func (h *Handler) openAPI() (map[string]any, []string) {
	b := &docBuilder{schemas: map[string]any{}, responseTypes: map[reflect.Type]bool{}, tags: map[string]string{}}
	b.idPrefixes = map[reflect.Type]string{}
	b.operations = map[string]string{}
	for _, rt := range h.routes {
		if name := methodName(rt.call); name != "" {
			if op, dup := b.operations[name]; dup {
				b.operations[name] = op + " or " + rt.method + " " + rt.pattern
			} else {
				b.operations[name] = rt.method + " " + rt.pattern
			}
		}
		if rt.resp != nil {
			structTypes(rt.resp, b.responseTypes)
		}
		if collection, ok := strings.CutSuffix(rt.pattern, "/{id}"); ok && rt.resp != nil {
			if prefix := edgeplane.IDPrefixForPath(collection); prefix != "" {
				b.idPrefixes[rt.resp] = prefix
			}
		}
	}
	paths := map[string]map[string]any{
		"/openapi.json": {"get": map[string]any{
			"operationId": "getOpenAPIDocument",
			"summary":     "Get this OpenAPI document",
			"description": "The OpenAPI 3.1 document of the API. It needs no API key and no " + HeaderVersion + " header.",
			"tags":        []string{"openapi"},
			"security":    []any{},
			"parameters":  []any{},
			"responses": map[string]any{"200": map[string]any{
				"description": "The document.",
				"headers":     map[string]any{HeaderOperationID: map[string]any{"$ref": "#/components/headers/OperationID"}},
				"content": map[string]any{"application/json": map[string]any{"schema": map[string]any{
					"type": "object", "description": "An OpenAPI 3.1 document."}}},
			}},
		}},
	}
	paths["/"] = map[string]any{"get": map[string]any{
		"operationId": "getRoot",
		"summary":     "Say what this is",
		"description": "What this server is and where it is described: a short object pointing at /openapi.json. It needs no API key and no " + HeaderVersion + " header.",
		"tags":        []string{"openapi"},
		"security":    []any{},
		"parameters":  []any{},
		"responses": map[string]any{"200": map[string]any{
			"description": "The pointer to this document.",
			"headers":     map[string]any{HeaderOperationID: map[string]any{"$ref": "#/components/headers/OperationID"}},
			"content": map[string]any{"application/json": map[string]any{"schema": map[string]any{
				"type": "object", "description": "What this server is, and where it is described.",
				"required": []string{"name", "openapi", "message"}, "additionalProperties": false,
				"properties": map[string]any{
					"name":    map[string]any{"type": "string", "description": "What this server is."},
					"openapi": map[string]any{"type": "string", "description": "The path of the OpenAPI document."},
					"message": map[string]any{"type": "string", "description": "The headers every request carries."},
				}}}},
		}},
	}}
	b.tags["openapi"] = "The document that describes this API."
	for _, rt := range h.routes {
		item := paths[rt.pattern]
		if item == nil {
			item = map[string]any{}
			paths[rt.pattern] = item
		}
		item[strings.ToLower(rt.method)] = b.operation(rt)
	}
	b.schema(reflect.TypeFor[errorBody](), responseSide)
	tags := make([]any, 0, len(b.tags))
	for _, name := range sortedKeys(b.tags) {
		tags = append(tags, map[string]any{"name": name, "description": b.tags[name]})
	}
	return map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{
			"title":   "edgeplane management API",
			"version": Version,
			"description": "The management API of an edgeplane service. Every request but GET /openapi.json carries " +
				"Authorization: Bearer <API key> and " + HeaderVersion + ": " + Version + ". Request bodies are JSON objects " +
				"(Content-Type: application/json, at most " + strconv.FormatInt(h.opts.MaxBodyBytes, 10) + " bytes), decoded strictly: " +
				"unknown fields, fields that match only in case and keys written twice are refused. An empty body is an empty object; " +
				"in an update, null is the same as an absent field. Every response carries " + HeaderOperationID + "; every error has " +
				"the Error schema. A method a path does not serve is answered 405 with an Allow header listing those it does, " +
				"and a path the API does not serve 404. Byte limits count the bytes of the UTF-8 encoding; where a schema says " +
				"maxLength for one, that is the same number of characters, an upper bound only.",
			"license": map[string]any{"name": "Apache-2.0", "identifier": "Apache-2.0"},
		},
		"servers": []any{map[string]any{"url": h.svc.BaseURL(), "description": "The service's base URL, as its uri fields show it."}},
		"tags":    tags,
		"paths":   paths,
		"components": map[string]any{
			"schemas":   b.withError(),
			"responses": errorResponses(),
			"headers": map[string]any{
				"OperationID": map[string]any{"description": "The identifier of this request (op_...): quote it when reporting a problem.",
					"required": true, "schema": map[string]any{"type": "string", "pattern": "^op_[0-9A-Za-z]{" + strconv.Itoa(ids.Len) + "}$"}},
				"RetryAfter": map[string]any{"description": "Whole seconds until the rate limit allows the account's next request.",
					"required": true, "schema": map[string]any{"type": "integer", "minimum": 0}},
			},
			"securitySchemes": map[string]any{
				"bearer": map[string]any{"type": "http", "scheme": "bearer",
					"description": "An API key of the account: Authorization: Bearer <API key>."},
			},
		},
	}, b.problems
}

// operation returns the OpenAPI operation of rt.
func (b *docBuilder) operation(rt route) map[string]any {
	tag := tagOf(rt.pattern)
	op := map[string]any{
		"operationId": rt.op,
		"summary":     rt.summary,
		"description": b.operationDoc(rt),
		"tags":        []string{tag},
		"security":    []any{map[string]any{"bearer": []string{}}},
		"parameters":  parameters(rt),
		"responses":   b.responses(rt),
	}
	if rt.req != nil {
		op["requestBody"] = map[string]any{
			"description": "A JSON object; an empty body is the same as {}.",
			"required":    false,
			"content":     map[string]any{"application/json": map[string]any{"schema": b.schema(rt.req, requestSide)}},
		}
	}
	if _, ok := b.tags[tag]; !ok && rt.resp != nil && rt.resp.Kind() == reflect.Struct {
		b.tags[tag] = b.goDoc(typeKey(rt.resp))
	}
	return op
}

// operationDoc returns the doc comment of the Service method rt calls.
func (b *docBuilder) operationDoc(rt route) string {
	name := methodName(rt.call)
	doc := b.goDoc("github.com/edgeplane/edgeplane.Service." + name)
	if doc == "" {
		b.problem("%s %s: the Service method %q it calls has no doc comment (or godoc_gen.go is stale: run go generate)", rt.method, rt.pattern, name)
	}
	return doc
}

// serviceMethod matches a Service method a description names, as the
// doc collector writes it (Service.CreateTLSEdge), with the parenthesis
// around it if any ("(Service.EventTypes)", "(see Service.EventTypes)").
var serviceMethod = regexp.MustCompile(`( ?\((?:see )?)?\bService\.([A-Z]\w*)(\))?`)

// goDoc returns the description goDocs holds under key: the doc comment
// of a type, field or Service method, in the wire's language ([wire]).
func (b *docBuilder) goDoc(key string) string { return b.wire(key, goDocs[key]) }

// wire writes the Service methods the description of key names as the
// operations that call them (POST /edges/tls). A parenthesis naming only
// a method no operation calls is left out; such a method named elsewhere
// is a problem.
func (b *docBuilder) wire(key, doc string) string {
	return serviceMethod.ReplaceAllStringFunc(doc, func(m string) string {
		sub := serviceMethod.FindStringSubmatch(m)
		open, name, closing := sub[1], sub[2], sub[3]
		if op, ok := b.operations[name]; ok {
			return open + op + closing
		}
		if open != "" && closing != "" {
			return ""
		}
		b.problem("the description of %s names Service.%s, which no operation calls: reword the comment", key, name)
		return m
	})
}

// methodName returns the name of the method value f
// ("CreateCredential" for svc.CreateCredential), or "".
func methodName(f any) string {
	if f == nil {
		return ""
	}
	fn := runtime.FuncForPC(reflect.ValueOf(f).Pointer())
	if fn == nil {
		return ""
	}
	name := strings.TrimSuffix(fn.Name(), "-fm")
	return name[strings.LastIndex(name, ".")+1:]
}

// tagOf returns the tag of a path: its resource collection, the path up
// to its first parameter ("edges/https" for /edges/https/{id}/routes).
func tagOf(pattern string) string {
	before, _, _ := strings.Cut(pattern, "{")
	return strings.Trim(before, "/")
}

func (b *docBuilder) problem(format string, args ...any) {
	if p := fmt.Sprintf(format, args...); !slices.Contains(b.problems, p) {
		b.problems = append(b.problems, p) // a schema is reflected once per use
	}
}

var pathParam = regexp.MustCompile(`\{([a-z_]+)\}`)

func parameters(rt route) []any {
	params := []any{map[string]any{
		"name": HeaderVersion, "in": "header", "required": true,
		"description": "The API version; the only one is " + Version + ".",
		"schema":      map[string]any{"type": "string", "enum": []string{Version}},
	}}
	for _, m := range pathParam.FindAllStringSubmatchIndex(rt.pattern, -1) {
		name := rt.pattern[m[2]:m[3]]
		before := strings.TrimSuffix(rt.pattern[:m[0]], "/")
		schema := map[string]any{"type": "string"}
		desc := "The " + strings.ReplaceAll(name, "_", " ") + " of the " + singular(before[strings.LastIndex(before, "/")+1:]) + "."
		if prefix := edgeplane.IDPrefixForPath(before); prefix != "" {
			schema["pattern"] = "^" + regexp.QuoteMeta(prefix) + "[0-9A-Za-z]{" + strconv.Itoa(ids.Len) + "}$"
			desc = "The identifier of the " + singular(before[strings.LastIndex(before, "/")+1:]) + ": " + prefix +
				" followed by " + strconv.Itoa(ids.Len) + " base62 characters."
		}
		params = append(params, map[string]any{"name": name, "in": "path", "required": true, "description": desc, "schema": schema})
	}
	if rt.list != "" {
		params = append(params,
			map[string]any{"name": "limit", "in": "query", "description": "The most items the page holds.",
				"schema": map[string]any{"type": "integer", "minimum": 1, "maximum": edgeplane.MaxPageSize, "default": edgeplane.MaxPageSize}},
			map[string]any{"name": "before_id", "in": "query",
				"description": "Lists the items older than this one (the id of the last item of the previous page, as next_page_uri carries it).",
				"schema":      map[string]any{"type": "string"}})
	}
	if rt.filter {
		params = append(params, map[string]any{"name": "filter", "in": "query",
			"description": "A CEL expression over obj, the item as this operation shows it (obj.description.startsWith(\"ci\"), " +
				"obj.created_at > timestamp(\"2026-01-01T00:00:00Z\") && obj.metadata != \"\"): only the items it is true of are listed. " +
				"Checked against the item's fields and types when the request is read; a malformed, ill-typed or too costly filter is 400 naming filter with line:column. " +
				"At most " + strconv.Itoa(filter.MaxBytes) + " bytes. A page scans a bounded number of items: it may hold fewer than limit matches, even none, with a next_page_uri that goes on.",
			"schema": map[string]any{"type": "string", "maxLength": filter.MaxBytes}})
	}
	return params
}

// singular turns a collection's path segment into a noun:
// "ip_policies" -> "ip policy", "https" -> "https".
func singular(seg string) string {
	seg = strings.ReplaceAll(seg, "_", " ")
	switch {
	case strings.HasSuffix(seg, "ies"):
		return strings.TrimSuffix(seg, "ies") + "y"
	case strings.HasSuffix(seg, "s") && !strings.HasSuffix(seg, "ss") && seg != "https" && seg != "tls" && seg != "tcp":
		return strings.TrimSuffix(seg, "s")
	}
	return seg
}

// errorStatuses returns the error statuses an operation may answer
// besides 405 (which belongs to a path, not an operation, and is described
// in the document's info).
func errorStatuses(rt route) []int {
	// 403: every authenticated request may be refused by an IP
	// restriction of type api, besides the writes only admins may make.
	out := []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden}
	write := rt.method != http.MethodGet
	if strings.Contains(rt.pattern, "{") {
		out = append(out, http.StatusNotFound)
	}
	if write {
		out = append(out, http.StatusConflict)
	}
	if rt.req != nil {
		out = append(out, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType)
	}
	return append(out, http.StatusTooManyRequests, http.StatusInternalServerError)
}

// errorResponses are the components/responses of the errors, by status.
func errorResponses() map[string]any {
	out := map[string]any{}
	for status, desc := range errorDescriptions {
		resp := map[string]any{
			"description": desc,
			"headers":     map[string]any{HeaderOperationID: map[string]any{"$ref": "#/components/headers/OperationID"}},
			"content":     map[string]any{"application/json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/Error"}}},
		}
		switch status {
		case http.StatusTooManyRequests:
			resp["headers"].(map[string]any)["Retry-After"] = map[string]any{"$ref": "#/components/headers/RetryAfter"}
		case http.StatusMethodNotAllowed:
			resp["headers"].(map[string]any)["Allow"] = map[string]any{"description": "The methods the path serves, comma-separated.",
				"required": true, "schema": map[string]any{"type": "string"}}
		}
		out[errorResponseName(status)] = resp
	}
	return out
}

var errorDescriptions = map[int]string{
	http.StatusBadRequest: "Invalid argument: a header, parameter or field is missing or breaks a rule; violations name each field " +
		"by its JSON path and say the rule.",
	http.StatusUnauthorized: "Unauthenticated: the Authorization header is missing, malformed or names no valid API key.",
	http.StatusForbidden: "Permission denied: the caller may not do this (for example, only an admin may act for another owner), " +
		"or an enforced IP restriction of type api of the account refuses the address the request comes from (the message names it).",
	http.StatusNotFound:              "Not found: no such resource in the caller's account (another account's resources do not exist for it).",
	http.StatusMethodNotAllowed:      "Method not allowed on this path; the Allow header lists the methods it serves.",
	http.StatusConflict:              "Conflict or failed precondition: the resource already exists, or is in use, or the change would break a rule that spans resources.",
	http.StatusRequestEntityTooLarge: "The request body is larger than the server allows.",
	http.StatusUnsupportedMediaType:  "The request body is not Content-Type: application/json.",
	http.StatusTooManyRequests:       "Resource exhausted: the account's rate limit is spent; retry after Retry-After seconds.",
	http.StatusInternalServerError:   "Internal error: a generic message with the operation id; the cause is logged, never sent.",
}

func errorResponseName(status int) string {
	return strings.ReplaceAll(http.StatusText(status), " ", "")
}

func (b *docBuilder) responses(rt route) map[string]any {
	out := map[string]any{}
	for _, status := range errorStatuses(rt) {
		out[strconv.Itoa(status)] = map[string]any{"$ref": "#/components/responses/" + errorResponseName(status)}
	}
	headers := map[string]any{HeaderOperationID: map[string]any{"$ref": "#/components/headers/OperationID"}}
	code := strconv.Itoa(rt.status)
	switch {
	case rt.status == http.StatusNoContent:
		out[code] = map[string]any{"description": "Done; no body.", "headers": headers}
	case rt.list != "":
		item := b.schema(rt.resp, responseSide)
		out[code] = map[string]any{"description": "A page of the list, newest first.", "headers": headers,
			"content": map[string]any{"application/json": map[string]any{"schema": map[string]any{
				"type":                 "object",
				"description":          "One page of " + strings.ReplaceAll(rt.list, "_", " ") + ", newest first.",
				"required":             []string{rt.list, "uri", "next_page_uri"},
				"additionalProperties": false,
				"properties": map[string]any{
					rt.list: map[string]any{"type": "array", "items": item, "maxItems": edgeplane.MaxPageSize,
						"description": "The items of the page, at most limit of them."},
					"uri": map[string]any{"type": "string", "format": "uri", "description": "The absolute URI of the collection."},
					"next_page_uri": map[string]any{"type": []string{"string", "null"}, "format": "uri",
						"description": "The absolute URI of the next page; null on the last page."},
				},
			}}}}
	default:
		desc := "The resource."
		if rt.status == http.StatusCreated {
			desc = "The created resource."
		}
		out[code] = map[string]any{"description": desc, "headers": headers,
			"content": map[string]any{"application/json": map[string]any{"schema": b.schema(rt.resp, responseSide)}}}
	}
	return out
}

// schema returns the schema of t on side s (a $ref to a component for a
// struct type), adding the components it needs.
func (b *docBuilder) schema(t reflect.Type, s side) jsonschema.Schema {
	out, err := b.reflector.Reflect(reflect.New(t).Elem().Interface(),
		jsonschema.RootRef,
		jsonschema.DefinitionsPrefix("#/components/schemas/"),
		jsonschema.CollectDefinitions(func(name string, schema jsonschema.Schema) { b.schemas[name] = schema }),
		jsonschema.InterceptDefName(func(t reflect.Type, _ string) string { return b.componentName(t, s) }),
		jsonschema.InterceptSchema(func(p jsonschema.InterceptSchemaParams) (bool, error) { return false, b.typeSchema(p) }),
		jsonschema.InterceptNullability(func(p jsonschema.InterceptNullabilityParams) { nullability(p, s) }),
		jsonschema.InterceptProp(func(p jsonschema.InterceptPropParams) error { return b.property(p, s) }),
		func(rc *jsonschema.ReflectContext) { rc.EnvelopNullability = true },
	)
	if err != nil {
		b.problem("schema of %s: %v", t, err)
	}
	return out
}

// componentName names the component of a struct type: "<package>.<Type>"
// ("credentials.Credential"), with "Request" appended to a request-side
// type that responses use too; the error body is "Error" and its details
// "ErrorDetails".
func (b *docBuilder) componentName(t reflect.Type, s side) string {
	switch t {
	case reflect.TypeFor[errorBody]():
		return "Error"
	case reflect.TypeFor[errorDetails]():
		return "ErrorDetails"
	}
	pkg := t.PkgPath()
	pkg = pkg[strings.LastIndex(pkg, "/")+1:]
	name := pkg + "." + t.Name()
	if s == requestSide && b.responseTypes[t] {
		name += "Request"
	}
	return name
}

// typeSchema completes the schema of a type once reflected: its doc
// comment, closed objects, and the bounds of sized integers.
func (b *docBuilder) typeSchema(p jsonschema.InterceptSchemaParams) error {
	if !p.Processed || !p.Value.IsValid() {
		return nil
	}
	t := p.Value.Type()
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		if p.Schema.HasType(jsonschema.Object) {
			p.Schema.AdditionalProperties = (&jsonschema.SchemaOrBool{}).WithTypeBoolean(false)
			if doc := b.goDoc(typeKey(t)); doc != "" && p.Schema.Description == nil {
				p.Schema.WithDescription(doc)
			}
		}
	case reflect.Int8, reflect.Int16, reflect.Int32:
		p.Schema.WithMinimum(-math.Pow(2, float64(t.Bits()-1))).WithMaximum(math.Pow(2, float64(t.Bits()-1)) - 1)
	case reflect.Uint8, reflect.Uint16, reflect.Uint32:
		p.Schema.WithMinimum(0).WithMaximum(math.Pow(2, float64(t.Bits())) - 1)
	}
	return nil
}

// typeKey is the goDocs key of a named type.
func typeKey(t reflect.Type) string { return t.PkgPath() + "." + t.Name() }

// nullability decides which fields take null: pointers on both sides
// (an absent update field, a token shown once); slices and maps only in
// requests (a JSON null decodes to an empty one), never in responses,
// which always carry a list or an object.
func nullability(p jsonschema.InterceptNullabilityParams, s side) {
	if s == requestSide || p.Type.Kind() == reflect.Pointer {
		return
	}
	if p.Schema.Ref == nil && p.Schema.HasType(jsonschema.Null) {
		p.Schema.RemoveType(jsonschema.Null)
	}
}

// requestNullability makes an optional request field take null, since a
// JSON null decodes to Go's zero value, the same as an absent field, and a
// required one refuse it.
func requestNullability(ps *jsonschema.Schema, required bool) {
	switch {
	case required && ps.Type != nil:
		ps.RemoveType(jsonschema.Null)
	case required && len(ps.AnyOf) == 2 && ps.AnyOf[0].TypeObject != nil && ps.AnyOf[0].TypeObject.HasType(jsonschema.Null):
		ps.Ref, ps.AnyOf = ps.AnyOf[1].TypeObject.Ref, nil // a pointer to a struct, enveloped
	case required:
	case ps.Ref != nil:
		ref := jsonschema.Schema{Ref: ps.Ref}
		ps.Ref = nil
		ps.AnyOf = []jsonschema.SchemaOrBool{jsonschema.Null.ToSchemaOrBool(), ref.ToSchemaOrBool()}
	case ps.Type != nil:
		ps.AddType(jsonschema.Null)
	}
}

// property completes the schema of a struct field: skips stored-only
// fields, applies the rule tags, and sets required and the description.
func (b *docBuilder) property(p jsonschema.InterceptPropParams, s side) error {
	if p.Field.Tag.Get("openapi") == "-" {
		return jsonschema.ErrSkipProperty
	}
	if !p.Processed {
		return nil
	}
	parent := p.ParentSchema.ReflectType
	for parent != nil && parent.Kind() == reflect.Pointer {
		parent = parent.Elem()
	}
	key := typeKey(parent) + "." + p.Field.Name
	_, documented := goDocs[key]
	doc := b.goDoc(key)
	if !documented {
		b.problem("field %s is not in godoc_gen.go: run go generate ./httpapi", key)
	}
	ps := p.PropertySchema
	if len(ps.AnyOf) > 0 {
		// A nullable reference, enveloped: the types are the members'.
		ps.Type = nil
		for _, m := range ps.AnyOf {
			if m.TypeObject != nil && m.TypeObject.Ref != nil {
				m.TypeObject.Type = nil
			}
		}
	}
	rules := ruleList(p.Field.Tag.Get("validate"), p.Field.Tag.Get("openapi"))
	required, problems := applyRules(ps, rules, p.Field.Type)
	for _, pr := range problems {
		b.problem("%s: %s", key, pr)
	}
	if s == responseSide {
		// What every resource shows: its id, of its kind's pattern, and
		// absolute URIs.
		if prefix, ok := b.idPrefixes[parent]; ok && p.Name == "id" {
			ps.WithPattern("^" + regexp.QuoteMeta(prefix) + "[0-9A-Za-z]{" + strconv.Itoa(ids.Len) + "}$")
		}
		if (p.Name == "uri" || strings.HasSuffix(p.Name, "_uri")) && ps.HasType(jsonschema.String) {
			ps.WithFormat("uri")
		}
	}
	tag := p.Field.Tag.Get("json")
	omitEmpty := strings.Contains(tag, ",omitempty") || strings.Contains(tag, ",omitzero")
	if (s == requestSide && required) || (s == responseSide && !omitEmpty) {
		if !slices.Contains(p.ParentSchema.Required, p.Name) {
			p.ParentSchema.Required = append(p.ParentSchema.Required, p.Name)
		}
	}
	if s == requestSide {
		requestNullability(ps, required)
		if required && ps.HasType(jsonschema.String) && ps.MinLength == 0 {
			ps.MinLength = 1
		}
	}
	if ps.HasType(jsonschema.Null) && len(ps.Enum) > 0 && !slices.Contains(ps.Enum, nil) {
		ps.Enum = append(ps.Enum, nil)
	}
	if n, ok := maxBytes(rules); ok && !strings.Contains(doc, strconv.Itoa(n)+" bytes") {
		doc = strings.TrimSpace(doc + " At most " + strconv.Itoa(n) + " bytes (UTF-8).")
	}
	if doc != "" {
		ps.WithDescription(doc)
	}
	return nil
}

// ruleList joins the rules of the validate and openapi tags.
func ruleList(tags ...string) []string {
	var out []string
	for _, t := range tags {
		if t == "" || t == "-" {
			continue
		}
		out = append(out, strings.Split(t, ",")...)
	}
	return out
}

func maxBytes(rules []string) (int, bool) {
	for _, r := range rules {
		if r == "dive" {
			break
		}
		if v, ok := strings.CutPrefix(r, "maxbytes="); ok {
			n, err := strconv.Atoi(v)
			return n, err == nil
		}
	}
	return 0, false
}

// applyRules applies rules to the schema of a field of type t and reports
// whether they make the field required, and the rules it cannot express.
// The rules after "dive" apply to the elements of an array (of a struct
// type, whose schema states its own rules, they are ignored).
func applyRules(s *jsonschema.Schema, rules []string, t reflect.Type) (required bool, problems []string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	omitEmpty := false // the zero value is allowed whatever the other rules say
	for i, r := range rules {
		name, param, _ := strings.Cut(r, "=")
		num := func() (float64, error) { return strconv.ParseFloat(param, 64) }
		switch name {
		case "required":
			required = true
		case "omitempty":
			omitEmpty = true
		case "omitnil", "":
		case "absent":
			// Never allowed: only null, the same as absent, passes.
			*s = jsonschema.Schema{Description: s.Description}
			s.WithType(jsonschema.Null.Type())
			return required, problems
		case "id":
			id := "(?:" + param + ")[0-9A-Za-z]{" + strconv.Itoa(ids.Len) + "}"
			if omitEmpty {
				id = "(?:" + id + ")?"
			}
			s.WithPattern("^" + id + "$")
		case "dive":
			if s.Items == nil || s.Items.SchemaOrBool == nil || s.Items.SchemaOrBool.TypeObject == nil {
				return required, append(problems, "dive on a field without items")
			}
			if item := s.Items.SchemaOrBool.TypeObject; item.Ref == nil {
				_, more := applyRules(item, rules[i+1:], t.Elem())
				problems = append(problems, more...)
			}
			return required, problems
		case "maxbytes", "maxrunes":
			n, err := strconv.ParseInt(param, 10, 64)
			if err != nil {
				problems = append(problems, fmt.Sprintf("rule %q: %v", r, err))
				continue
			}
			s.WithMaxLength(n)
		case "oneof":
			if omitEmpty {
				s.Enum = append(s.Enum, "")
			}
			for _, v := range strings.Fields(param) {
				s.Enum = append(s.Enum, v)
			}
		case "min", "max", "gte", "lte":
			n, err := num()
			if err != nil {
				problems = append(problems, fmt.Sprintf("rule %q: %v", r, err))
				continue
			}
			lower := name == "min" || name == "gte"
			switch t.Kind() {
			case reflect.String:
				if lower {
					s.MinLength = int64(n)
				} else {
					s.WithMaxLength(int64(n))
				}
			case reflect.Slice, reflect.Array:
				if lower {
					s.MinItems = int64(n)
				} else {
					s.WithMaxItems(int64(n))
				}
			case reflect.Map:
				if lower {
					s.MinProperties = int64(n)
				} else {
					s.WithMaxProperties(int64(n))
				}
			default:
				if lower {
					s.WithMinimum(n)
				} else {
					s.WithMaximum(n)
				}
			}
		case "unique":
			s.WithUniqueItems(true)
		case "httpurl":
			s.WithFormat("uri").WithPattern("^https?://")
		case "httpsurl":
			s.WithFormat("uri").WithPattern("^https://")
		default:
			problems = append(problems, fmt.Sprintf("rule %q: the OpenAPI document cannot express it (see openapi.go)", r))
		}
	}
	return required, problems
}

// structTypes adds the struct types reachable from t to seen.
func structTypes(t reflect.Type, seen map[reflect.Type]bool) {
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
		structTypes(t.Elem(), seen)
	case reflect.Struct:
		if seen[t] {
			return
		}
		seen[t] = true
		for i := range t.NumField() {
			structTypes(t.Field(i).Type, seen)
		}
	}
}

// withError completes the components with the bounds of the error body
// (see the package doc, # Limits), which are constants of this package
// rather than rule tags.
func (b *docBuilder) withError() map[string]any {
	e, eok := b.schemas["Error"].(jsonschema.Schema)
	v, vok := b.schemas["apierr.Violation"].(jsonschema.Schema)
	if !eok || !vok {
		b.problem("no Error or apierr.Violation schema")
		return b.schemas
	}
	e.WithDescription("The body of every error response.")
	prop := func(s jsonschema.Schema, name string) *jsonschema.Schema { return s.Properties[name].TypeObject }
	prop(e, "error_code").WithPattern("^ERR_SERVICE_[0-9]+$")
	prop(e, "status_code").WithMinimum(400).WithMaximum(599)
	limit(prop(e, "msg"), MaxMessageBytes)
	prop(e, "violations").WithMaxItems(MaxViolations).WithMinItems(1)
	prop(e, "violations_omitted").WithMinimum(1)
	limit(prop(v, "field"), MaxEchoBytes)
	limit(prop(v, "reason"), MaxMessageBytes)
	b.schemas["Error"], b.schemas["apierr.Violation"] = e, v
	return b.schemas
}

// limit sets the byte limit n of a string schema: maxLength n (an upper
// bound: JSON Schema counts characters) and the limit in words.
func limit(s *jsonschema.Schema, n int) {
	s.WithMaxLength(int64(n))
	d := ""
	if s.Description != nil {
		d = *s.Description + " "
	}
	s.WithDescription(d + "At most " + strconv.Itoa(n) + " bytes (UTF-8).")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
