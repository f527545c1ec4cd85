package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/netip"
	"reflect"
	"strings"
	"time"

	"github.com/edgeplane/edgeplane/apierr"
)

// ActionType is a kind of action, such as deny or rate-limit. The Engine's
// registry maps each type name to one; hosts add their own through
// [Options].Actions. Built-in actions are written against this same
// interface.
type ActionType interface {
	// Type returns the name documents use, for example "deny".
	Type() string
	// Compile validates an action's config (a JSON object, or nil when the
	// document has none) and returns the action that runs it. Problems are
	// returned as an InvalidArgument [*apierr.Error] whose violation fields
	// are relative to the action, for example "config.status_code"; any
	// other error becomes one violation of "config". Compile is also where
	// an action refuses a target or phase it does not support.
	Compile(c *CompileContext, config []byte) (Action, error)
}

// Action is a compiled action. Run is called each time its rule applies; it
// must be safe for concurrent use and must not keep r after returning.
type Action interface {
	Run(r *RunContext)
}

// Terminator may be implemented by an [Action] whose Run always ends
// evaluation (as deny and custom-response do). Compile then refuses
// actions after it in the same rule, since they could never run.
type Terminator interface {
	AlwaysTerminates() bool
}

// ResultDeclarer may be implemented by an [ActionType] whose actions set
// result variables, actions.service.<type>.<field> (see [ResultVariable]).
type ResultDeclarer interface {
	ResultFields() []ResultField
}

// ResultType is the CEL type of a result variable.
type ResultType uint8

// Result variable types.
const (
	ResultString ResultType = iota + 1
	ResultBool
	ResultInt
)

// ResultField declares one result variable of an action type. Its value
// before the action first runs is the type's zero value ("", false, 0).
type ResultField struct {
	// Name is the field, for example "limited" or "error.code".
	Name string
	// Type is the variable's CEL type.
	Type ResultType
	// HTTPOnly makes the variable unavailable to connection policies.
	HTTPOnly bool
}

// ResultSlot identifies a result variable for [RunContext.SetString] and
// friends. Get one from [CompileContext.Result].
type ResultSlot struct {
	slot int
	kind valueKind
	ok   bool
}

// CompileContext is what an [ActionType] sees while compiling one action.
type CompileContext struct {
	c      *compiler
	action string
	path   string // e.g. "inbound[0].actions[1]"
	rule   string
}

// Target returns the target the policy is compiled for.
func (c *CompileContext) Target() Target { return c.c.o.Target }

// Phase returns the phase of the action's rule.
func (c *CompileContext) Phase() Phase { return c.c.phase }

// Scope returns [CompileOptions].Scope.
func (c *CompileContext) Scope() string { return c.c.o.Scope }

// Location returns the action's place in the document, for example
// "on_http_request[2].actions[0]".
func (c *CompileContext) Location() string { return c.path }

// Result returns the slot of one of the action type's declared result
// fields.
func (c *CompileContext) Result(field string) (ResultSlot, error) {
	for _, d := range c.c.e.results {
		if d.action == c.action && d.field == field {
			return ResultSlot{slot: d.slot, kind: d.kind, ok: true}, nil
		}
	}
	return ResultSlot{}, errors.New("action type " + c.action + " declares no result field " + field)
}

// Template compiles s as a templated string: literal text with ${expr}
// parts, each a CEL expression evaluated against the same variables as the
// rule's expressions. field is the JSON path of s relative to the action
// (for example "config.headers[\"x-id\"]") and locates errors, which are
// returned as an InvalidArgument [*apierr.Error].
func (c *CompileContext) Template(field, s string) (*Template, error) {
	var vs apierr.Violations
	t := c.c.template(&vs, field, s, -1)
	return t, vs.Err()
}

// Regexp compiles a regular expression of a config field, refusing one
// whose program exceeds [limits.MaxRegexProgramSize].
func (c *CompileContext) Regexp(field, pattern string) (*Regexp, error) {
	re, err := c.c.compileRegexp(pattern)
	if err != nil {
		return nil, apierr.Invalidf(field, "%s", err.Error())
	}
	return re, nil
}

// DecodeConfig decodes config strictly into v, a pointer to a struct: every
// member of the config object must match a field's json tag exactly
// (unknown, duplicate and differently-cased keys are refused) and have the
// field's JSON type. A nil or empty config leaves v unchanged. Problems are
// returned as violations of "config.<key>".
func (c *CompileContext) DecodeConfig(config []byte, v any) error {
	return decodeStrict(config, v)
}

func decodeStrict(config []byte, v any) error {
	if len(bytes.TrimSpace(config)) == 0 || isNull(config) {
		return nil
	}
	var vs apierr.Violations
	fields, err := objectFields(config, true)
	if err != nil {
		vs.Add("config", "must be a JSON object: %s", jsonErrMsg(err))
		return vs.Err()
	}
	allowed := jsonKeys(reflect.TypeOf(v))
	for _, f := range fields {
		if _, ok := allowed[f.key]; !ok {
			vs.Add("config."+f.key, "unknown field; allowed: %s", strings.Join(sortedKeys(allowed), ", "))
		}
	}
	if err := vs.Err(); err != nil {
		return err
	}
	rv := reflect.ValueOf(v).Elem()
	for _, f := range fields {
		idx := allowed[f.key]
		fv := rv.Field(idx)
		if err := json.Unmarshal(f.val, fv.Addr().Interface()); err != nil {
			vs.Add("config."+f.key, "%s", typeErrMsg(err, fv.Type()))
		}
	}
	return vs.Err()
}

// jsonKeys maps the json names of a struct pointer's fields to their index.
func jsonKeys(t reflect.Type) map[string]int {
	t = t.Elem()
	m := map[string]int{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		m[name] = i
	}
	return m
}

func typeErrMsg(err error, t reflect.Type) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		where := ""
		if te.Field != "" && strings.Contains(te.Field, ".") {
			where = " (at " + te.Field + ")"
		}
		return "must be " + describeType(te.Type) + where + ", got " + te.Value
	}
	return "must be " + describeType(t) + ": " + jsonErrMsg(err)
}

func describeType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative integer"
	case reflect.Slice:
		return "a list of " + strings.TrimPrefix(strings.TrimPrefix(describeType(t.Elem()), "a "), "an ") + "s"
	case reflect.Map:
		return "an object of " + strings.TrimPrefix(strings.TrimPrefix(describeType(t.Elem()), "a "), "an ") + "s"
	case reflect.Pointer:
		return describeType(t.Elem())
	default:
		return t.String()
	}
}

// RunContext is what an [Action] sees while it runs: the traffic, the
// result being built and the variables. It is valid only during Run.
type RunContext struct {
	st  *evalState
	cur *compiledAction
}

// Target returns the policy's target.
func (r *RunContext) Target() Target { return r.st.pol.target }

// Phase returns the phase being evaluated.
func (r *RunContext) Phase() Phase { return r.st.phase }

// Location returns the running action's place in the document.
func (r *RunContext) Location() string { return r.cur.loc }

// Time returns the evaluation time.
func (r *RunContext) Time() time.Time { return r.st.now }

// Request returns the HTTP request being evaluated, or nil in a connection
// policy. It must not be modified. It is the request as the host passed
// it: earlier header edits show through [RunContext.Header] and URL
// rewrites through [RunContext.URI].
func (r *RunContext) Request() *Request {
	if r.st.pol.target == TargetConnection {
		return nil
	}
	return &r.st.req
}

// Response returns the HTTP response in the outbound phase, or nil. It must
// not be modified; use AddHeader and RemoveHeader.
func (r *RunContext) Response() *Response {
	if r.st.phase != Outbound {
		return nil
	}
	return &r.st.res
}

// Conn returns the connection.
func (r *RunContext) Conn() *Conn { return &r.st.req.Conn }

// ClientIP returns the connection's client address (never one from
// X-Forwarded-For), unmapped and without zone. It is invalid when the host
// did not provide one.
func (r *RunContext) ClientIP() netip.Addr { return r.st.clientAddr() }

// Header returns the current values of a header (case-insensitive name),
// after earlier add-headers and remove-headers actions: of the request
// inbound, of the response outbound. The slice must not be modified.
func (r *RunContext) Header(name string) []string {
	return r.st.headerValues(r.st.phase == Outbound, name)
}

// URI returns the request's current path and query in request-URI form,
// after earlier url-rewrite actions.
func (r *RunContext) URI() string { return r.st.requestURI() }

// Render renders a template compiled by [CompileContext.Template]. A
// ${...} part that fails renders as the empty string and an output longer
// than [limits.MaxTemplateOutput] is truncated; both are reported to the Sink.
func (r *RunContext) Render(t *Template) string { return r.st.render(t, r.cur) }

// SetString sets a string result variable.
func (r *RunContext) SetString(s ResultSlot, v string) {
	if s.ok && s.kind == kString {
		r.st.setResult(s.slot, resultValue{s: v})
	}
}

// SetBool sets a boolean result variable.
func (r *RunContext) SetBool(s ResultSlot, v bool) {
	if s.ok && s.kind == kBool {
		r.st.setResult(s.slot, resultValue{b: v})
	}
}

// SetInt sets an integer result variable.
func (r *RunContext) SetInt(s ResultSlot, v int64) {
	if s.ok && s.kind == kInt {
		r.st.setResult(s.slot, resultValue{i: v})
	}
}

// Respond ends evaluation with an HTTP response that replaces the upstream
// (inbound) or the upstream's response (outbound). header may be nil. In a
// connection policy it ends evaluation with Close instead.
func (r *RunContext) Respond(status int, header http.Header, body string) {
	out := &r.st.out
	if r.st.pol.target == TargetConnection {
		out.Verdict = Close
		return
	}
	out.Verdict = Respond
	out.StatusCode = status
	out.Header = header
	out.Body = body
}

// Close ends evaluation asking the host to close the connection without a
// response.
func (r *RunContext) Close() { r.st.out.Verdict = Close }

// AddHeader appends a header value: to the request inbound, to the response
// outbound. Later expressions see it. Invalid characters in value (CR, LF,
// NUL) are replaced by spaces.
func (r *RunContext) AddHeader(name, value string) { r.st.addHeader(name, sanitizeHeaderValue(value)) }

// RemoveHeader removes a header: from the request inbound, from the
// response outbound. Later expressions see the change.
func (r *RunContext) RemoveHeader(name string) { r.st.removeHeader(name) }

// RewriteURI replaces the request's path and query; uri must be in
// request-URI form ("/path?query"). Later expressions see the new URL and
// the host forwards it. It fails, changing nothing, on an invalid uri.
func (r *RunContext) RewriteURI(uri string) error { return r.st.rewriteURI(uri) }

// Log sends a log entry with the given metadata to the Sink.
func (r *RunContext) Log(metadata map[string]string) {
	r.st.e.sink.Log(LogEntry{Time: r.st.now, Location: r.cur.loc, Rule: r.cur.rule, Metadata: metadata})
}

// ReportError sends a runtime error located at the running action to the
// Sink.
func (r *RunContext) ReportError(err error) { r.st.report(r.cur.loc, r.cur.rule, err) }
